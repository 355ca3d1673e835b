"""Passes over a table of vectors held once (float32 as read), a bounded block at a time.

The training tools read the table once into a float32 (n, D) array (what Kaldi's own
ivector-compute-lda / ivector-compute-plda hold, as float) and never copy it whole again: rows
selected or reordered by spk2utt/utt2spk are named by an index array ``rows`` and gathered a
block at a time, every float64 upcast is of one block (``BLOCK_BYTES`` of float64, ~8 MB), and
scatter matrices are accumulated block by block in float64 (``X_b^T X_b``), as Kaldi
accumulates them in double. Upcasting float32 to float64 is exact, so a float64 block holds
exactly what a float64 copy of the whole table would; only the order in which BLAS adds the
block products differs (relative rounding ~1e-16 of the scatter).
"""

import numpy as np

BLOCK_BYTES = 1 << 23


def block_rows(dim, block_bytes=None):
    """Rows per block: ``block_bytes`` of float64 (default BLOCK_BYTES), at least 64."""
    return max(64, (BLOCK_BYTES if block_bytes is None else block_bytes) // (8 * max(dim, 1)))


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


def speaker_bounds(counts, size):
    """Block cuts at speaker boundaries for rows sorted by speaker (``counts`` per speaker),
    about ``size`` rows each (a speaker larger than ``size`` is one block)."""
    starts = np.concatenate([[0], np.cumsum(counts)])
    wanted = np.arange(0, starts[-1], size)
    cuts = starts[np.searchsorted(starts, wanted, side="left")]
    return np.unique(np.concatenate([cuts, [starts[-1]]])).tolist()


def class_sums(X, rows, label_index, num_classes, size=None):
    """``(sums, counts, order)``: per-class float64 sums of the selected rows, each summed
    row after row in selection order (as a sparse membership product or a loop of
    ``AddVec`` sums them), blocks cut at class boundaries. ``order`` (stable sort of the
    selection by class) is returned for later passes."""
    order = np.argsort(label_index, kind="stable")
    counts = np.bincount(label_index, minlength=num_classes)
    sorted_rows = order if rows is None else np.asarray(rows)[order]
    size = block_rows(X.shape[1]) if size is None else size
    bounds = speaker_bounds(counts, size)
    starts = np.concatenate([[0], np.cumsum(counts)])
    sums = np.zeros((num_classes, X.shape[1]))
    nonempty = np.flatnonzero(counts)
    first = 0
    for begin, end, block in iter_blocks(X, sorted_rows, bounds=bounds):
        last = int(np.searchsorted(starts, end, side="left"))  # classes end before `end`
        classes = nonempty[(nonempty >= first) & (nonempty < last)]
        if classes.size:
            sums[classes] = np.add.reduceat(block, starts[classes] - begin, axis=0)
        first = last
    return sums, counts, sorted_rows


def centred_scatter(X, rows, centre, size=None):
    """``sum_i (x_i - centre)(x_i - centre)^T`` over the selected rows, in float64 blocks."""
    dim = X.shape[1]
    scatter = np.zeros((dim, dim))
    for _, _, block in iter_blocks(X, rows, size):
        block -= centre
        scatter += block.T @ block
    return scatter
