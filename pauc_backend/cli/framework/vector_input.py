"""The checks every tool makes of a vector table it reads: not empty, finite, of the model's
dimension. One place, so each mistake gets the same ERROR line from every tool."""

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import iter_vector_chunks, parse_rspecifier, read_vector_table
from pauc_backend.models.blocked import first_nonfinite
from pauc_backend.models.preprocessing import nonfinite_rows, vector_sum


def check_finite(keys, X, rspecifier, rows=None):
    """KaldiError naming the first vector that contains NaN or Inf, among the ``rows`` of the
    table ``X`` (keys ``keys``; None: all rows). Checked in blocks, so no (n, D) boolean
    temporary and no copy of the selection."""
    bad = first_nonfinite(X, rows)
    if bad is not None:
        key = keys[bad] if rows is None else keys[rows[bad]]
        raise KaldiError("Vector %s in %s contains NaN or Inf" % (key, rspecifier))


def check_unique_keys(keys, rspecifier, what):
    """KaldiError naming the first key (by its second appearance) that ``keys`` (a table's,
    in its order) list twice, with both places: lines of a script (one entry a line),
    entries of an archive. ``what`` names the table (e.g. "--adapt"). A sort, no dict."""
    keys = np.asarray(keys)
    if keys.size < 2:
        return
    order = np.argsort(keys, kind="stable")          # equal keys keep their order
    ordered = keys[order]
    again = np.flatnonzero(ordered[1:] == ordered[:-1]) + 1
    if not again.size:
        return
    first_of_run = np.maximum.accumulate(np.where(
        np.concatenate([[True], ordered[1:] != ordered[:-1]]), np.arange(keys.size), 0))
    second = again[np.argmin(order[again])]
    unit = "lines" if parse_rspecifier(rspecifier).kind == "scp" else "entries"
    raise KaldiError("Duplicate key %s in %s=%s (%s %d and %d): each vector must be listed "
                     "once" % (ordered[second], what, rspecifier, unit,
                               order[first_of_run[second]] + 1, order[second] + 1))


def check_dimension(X, rspecifier, dim, owner):
    """KaldiError when the vectors' dimension is not ``dim``, the dimension of ``owner``."""
    if len(X) and X.shape[1] != dim:
        raise KaldiError("Vectors in %s have dimension %d but %s has dimension %d"
                         % (rspecifier, X.shape[1], owner, dim))


def read_vectors(rspecifier, dim=None, owner="the model", empty="No vectors in %s"):
    """``read_vector_table`` and the three checks: ``empty`` (a message with one ``%s`` for
    the rspecifier; None allows an empty table), ``dim`` of ``owner``, finite values."""
    keys, X = read_vector_table(rspecifier)
    if not len(keys) and empty is not None:
        raise KaldiError(empty % rspecifier)
    if dim is not None:
        check_dimension(X, rspecifier, dim, owner)
    check_finite(keys, X, rspecifier)
    return keys, X


def streamed_sum(vector_rspecifier):
    """``(sum, count, dim)`` of a table read chunk by chunk: a running double sum, the same
    additions in the same order as ivector-mean's ``sum.AddVec(1.0, ivector)``; sum None when
    the table is empty. KaldiError naming the key of a NaN or infinity: a non-finite value
    makes the (finite until then) sum non-finite, since float32 values cannot overflow a
    double sum, so only then are the chunk's rows searched."""
    total, count, dim = None, 0, None
    for chunk in iter_vector_chunks(vector_rspecifier):
        total = vector_sum(chunk.X, initial=total)
        if not np.isfinite(total).all():
            bad = nonfinite_rows(chunk.X)
            raise KaldiError("Vector for key %s in %s contains NaN or infinity"
                             % (chunk.keys[bad[0]], vector_rspecifier))
        count += len(chunk)
        dim = chunk.dim
    return total, count, dim
