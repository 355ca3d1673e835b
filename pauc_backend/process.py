"""What this process keeps to itself: environment variables its children must not inherit.

The console entry point (``pauc_backend.cli.framework.entry``) sets BLAS thread counts for the tool's own
process; a command the tool starts in a pipe must see the user's environment as it was, or a
Kaldi binary run inside our pipes computes with other BLAS settings than when run alone.
"""

import os

_PRIVATE_VARIABLES = set()


def mark_private(variable):
    """Record that ``variable`` was set for this process only (children get the user's value)."""
    _PRIVATE_VARIABLES.add(variable)


def child_environment():
    """The environment for a child command: ``None`` (inherit) unless something is private."""
    if not _PRIVATE_VARIABLES:
        return None
    return {key: value for key, value in os.environ.items() if key not in _PRIVATE_VARIABLES}
