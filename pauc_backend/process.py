"""What this process keeps to itself: environment variables its children must not inherit,
and memory its forked workers must not start with.

The console entry point (``pauc_backend.cli.framework.entry``) sets BLAS thread counts for the tool's own
process; a command the tool starts in a pipe must see the user's environment as it was, or a
Kaldi binary run inside our pipes computes with other BLAS settings than when run alone.
"""

import os

_PRIVATE_VARIABLES = set()
_TRIM = None           # glibc's malloc_trim, once looked up (False: there is none)


def mark_private(variable):
    """Record that ``variable`` was set for this process only (children get the user's value)."""
    _PRIVATE_VARIABLES.add(variable)


def child_environment():
    """The environment for a child command: ``None`` (inherit) unless something is private."""
    if not _PRIVATE_VARIABLES:
        return None
    return {key: value for key, value in os.environ.items() if key not in _PRIVATE_VARIABLES}


def release_free_memory():
    """Give the C heap's free memory back to the system (glibc's ``malloc_trim``; elsewhere
    nothing). A forked worker's resident set starts as its parent's: memory the parent freed
    but its allocator kept (the speaker table's keys once a table is read) counts again in
    every worker, and in the peak of each. Returns whether anything was called."""
    global _TRIM
    if _TRIM is None:
        try:
            import ctypes
            _TRIM = ctypes.CDLL(None).malloc_trim
            _TRIM.argtypes, _TRIM.restype = [ctypes.c_size_t], ctypes.c_int
        except (OSError, AttributeError):
            _TRIM = False
    if not _TRIM:
        return False
    _TRIM(0)
    return True

