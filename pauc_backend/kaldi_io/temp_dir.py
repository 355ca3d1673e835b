"""Where a tool's unlinked temporary files go: ``$TMPDIR`` when it is set, checked first.

A tool spools a table it cannot hold (train-lda always, train-pauc-auto beyond --in-memory-mb)
to an unlinked temporary file of 4 bytes a dimension a vector. Python's ``tempfile`` takes
``$TMPDIR`` when it can create a file there and otherwise, silently, the next of /tmp,
/var/tmp, /usr/tmp and the working directory. Here an unusable ``$TMPDIR`` (missing, a file,
a dangling link, read-only or otherwise not writable) is one ERROR naming it, its value and
why, with no fallback, as GNU ``sort`` and ``mktemp`` refuse one: whoever set ``TMPDIR`` (the
user, or a cluster's job script pointing at a node's scratch disk) said where large scratch
files belong, and the fallback is often a small or memory-backed (tmpfs) /tmp, where a spool
of gigabytes would fill a disk other jobs share, or land in the memory it exists to spare,
and fail, if it fails, only after the reading. Unset or empty, ``tempfile``'s choice stands.
"""

import os
import tempfile

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io.regular_files import directory_problem

__all__ = ["temp_dir"]


def temp_dir(what):
    """The directory for the temporary file of ``what`` (e.g. "the training vectors of
    scp:x.scp"): ``$TMPDIR`` if set and non-empty, once a file could be created there;
    else ``tempfile.gettempdir()``. KaldiError (module doc) when ``$TMPDIR`` cannot hold it."""
    value = os.environ.get("TMPDIR", "")
    if not value:
        return tempfile.gettempdir()
    problem = directory_problem(value)
    if problem is None:
        try:
            with tempfile.TemporaryFile(prefix="pauc-backend-probe.", dir=value):
                pass
        except OSError as err:
            problem = "is not writable (%s)" % (err.strerror or err)
    if problem is not None:
        raise KaldiError(
            "TMPDIR=%s %s, so the temporary file of %s cannot go there: set TMPDIR to a "
            "writable directory with room for it (4 bytes a dimension a vector), or unset it "
            "to use /tmp" % (value, problem, what))
    return value
