"""Passes over a table of vectors held once (float32 as read), a bounded block at a time.

A table held in memory (train-pauc-metric's, the automatic back-end's) is never copied whole:
rows selected or reordered by spk2utt/utt2spk are named by an index array ``rows`` and gathered
a block at a time, and every float64 upcast is of one block (``BLOCK_BYTES`` of float64,
~8 MB). Upcasting float32 to float64 is exact, so a float64 block holds exactly what a float64
copy of the whole table would. The scatter matrices of LDA and PLDA are accumulated in such
blocks by ``class_stats.ClassStats``.
"""

import numpy as np

BLOCK_BYTES = 1 << 23


def block_rows(dim, block_bytes=None):
    """Rows per block: ``block_bytes`` of float64 (default BLOCK_BYTES), at least 64."""
    return max(64, (BLOCK_BYTES if block_bytes is None else block_bytes) // (8 * max(dim, 1)))


def is_table(X):
    """Whether X is a table of rows read on demand (models.row_table.RowTable: ``shape``,
    ``X[a:b]`` and ``X[index array]`` give float32 arrays) rather than an array."""
    return hasattr(X, "read_rows")


def as_rows(X, who):
    """X as the passes here read it: a table of rows as it is, else a C-contiguous float32
    array (no copy if it is one already); ValueError (``who``: the caller) unless 2-D."""
    if is_table(X):
        return X
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError("%s: X must be 2-D (one vector per row), got shape %s"
                         % (who, X.shape))
    return np.ascontiguousarray(X, dtype=np.float32)


def num_rows(X, rows=None):
    return X.shape[0] if rows is None else len(rows)


def iter_blocks(X, rows=None, size=None, bounds=None):
    """Yield ``(begin, end, block)``: rows ``begin:end`` of the selection (``X[rows]`` or
    ``X``) as a float64 array (a fresh copy, free to modify). ``bounds`` (increasing positions
    from 0 to the count) cut the blocks there instead of every ``size`` rows."""
    count = num_rows(X, rows)
    if bounds is None:
        size = block_rows(X.shape[1]) if size is None else size
        bounds = list(range(0, count, size)) + [count]
    for begin, end in zip(bounds[:-1], bounds[1:]):
        if end <= begin:
            continue
        part = X[begin:end] if rows is None else X[rows[begin:end]]
        yield begin, end, part.astype(np.float64)


def first_nonfinite(X, rows=None):
    """Position (in the selection) of the first row with a NaN or inf, or None; float32
    blocks, so no (n, D) boolean temporary."""
    size = max(64, block_rows(X.shape[1]) * 2)
    count = num_rows(X, rows)
    for begin in range(0, count, size):
        part = X[begin:begin + size] if rows is None else X[rows[begin:begin + size]]
        bad = ~np.isfinite(part).all(axis=1)
        if bad.any():
            return begin + int(np.flatnonzero(bad)[0])
    return None
