"""Vector pre-processing with Kaldi's exact float32/float64 arithmetic (numpy only, no files).

Each function mirrors one ``ivectorbin`` main so that our arks are byte-identical to Kaldi's:

* ``global_mean``          ivector-mean (2 arguments): double sum, ``sum * (1.0/N)``.
* ``subtract_mean``        ivector-subtract-global-mean (2 and 3 arguments).
* ``speaker_means``        ivector-mean (3/4 arguments): float32 ``x1 + x2 + ...``,
                           then ``*= (float)(1/n)``.
* ``apply_affine``         transform-vec / ivector-transform: one BLAS ``sgemv`` per vector.
* ``normalize_length``     ivector-normalize-length: sequential float32 norm.

Summation order matters for the last bit, so sums over vectors are sequential (numpy reduces a
C-contiguous array along axis 0 row after row, with no pairwise splitting).
"""

import numpy as np


def _as_matrix(X, dtype=np.float32):
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError("expected a 2-D array of vectors (one per row), got shape %s"
                         % (X.shape,))
    # Contiguous and aligned: the layout BLAS (sgemv/sdot) is called on.
    return np.require(X, dtype=dtype, requirements=["C_CONTIGUOUS", "ALIGNED"])


def nonfinite_rows(X):
    """Indices of the rows of ``X`` holding a NaN or an infinity (for error messages)."""
    X = np.asarray(X)
    if X.size == 0:
        return np.zeros(0, dtype=np.intp)
    return np.flatnonzero(~np.isfinite(X).all(axis=1))


def _block_rows(dim):
    """Rows per block so that a float64 block (~2 MB) stays in cache."""
    return max(256, (1 << 18) // max(dim, 1))


def vector_sum(X, scale=1.0, initial=None):
    """``sum_i scale * x_i`` in double, accumulated row after row, like
    ``Vector<double>::AddVec(scale, x)`` once per vector (ivector-mean, ComputeAndSubtractMean).

    ``initial``: a running total to continue from (a table summed chunk by chunk gives the same
    bits as summed at once: the order of the additions is the same)."""
    X = np.asarray(X)
    if X.ndim != 2:
        X = _as_matrix(X)  # raises the usual error
    if X.dtype != np.float32:
        X = X.astype(np.float32)  # the float vectors Kaldi sums (a strided view is fine)
    num, dim = X.shape
    start = np.zeros(dim) if initial is None else np.asarray(initial, dtype=np.float64)
    if dim == 1:  # a single column would be reduced pairwise, not in order
        column = np.concatenate([start, X[:, 0].astype(np.float64) * scale])
        return np.cumsum(column)[-1:]
    block = _block_rows(dim)
    buffer = np.zeros((min(block, num) + 1, dim))
    buffer[0] = start
    for begin in range(0, num, block):
        chunk = X[begin:begin + block]
        rows = buffer[1:chunk.shape[0] + 1]
        if scale == 1.0:
            rows[...] = chunk  # exact: float32 -> float64
        else:
            np.multiply(chunk, scale, out=rows, dtype=np.float64)
        # Row 0 carries the running total, so the reduction stays strictly sequential.
        buffer[0] = np.add.reduce(buffer[:chunk.shape[0] + 1], axis=0)
    return buffer[0].copy()


def global_mean(X):
    """Mean of the rows as ivector-mean writes it: double sum scaled by ``1.0/N`` (float64)."""
    X = _as_matrix(X)
    if X.shape[0] == 0:
        raise ValueError("No iVectors read")
    return vector_sum(X) * (1.0 / X.shape[0])


def subtract_mean(X, mean=None):
    """Centre ``X`` (float32), as ivector-subtract-global-mean.

    ``mean=None``: subtract the set's own mean, ``x + (float)(-1/N) * sum`` in double, rounded to
    float. Otherwise ``mean`` (a DV/FV read as float) is rounded to float32 and subtracted in
    float32. Returns ``(Y, sum)``; ``sum`` (float64) is None when ``mean`` is given.
    """
    X = _as_matrix(X)
    if mean is not None:
        mean = np.asarray(mean, dtype=np.float32)
        if mean.ndim != 1 or mean.shape[0] != X.shape[1]:
            raise ValueError("Dimension mismatch: vectors have dimension %d but the mean has "
                             "dimension %d" % (X.shape[1], np.asarray(mean).size))
        return X - mean, None
    if X.shape[0] == 0:
        return X.copy(), np.zeros(X.shape[1])
    total = vector_sum(X)
    return add_shift(X, mean_shift(total, X.shape[0])), total


def mean_shift(total, count):
    """``(float)(-1/N) * sum`` in double: what ComputeAndSubtractMean adds to every vector."""
    return float(np.float32(-1.0 / count)) * np.asarray(total, dtype=np.float64)


def add_shift(X, shift):
    """``x + shift`` in double, rounded to float32, row by row (``AddVec`` of a double vector
    to a float one): the second half of ivector-subtract-global-mean without a mean file."""
    X = _as_matrix(X)
    out = np.empty_like(X)
    block = _block_rows(X.shape[1])
    buffer = np.empty((min(block, X.shape[0]), X.shape[1]))
    for start in range(0, X.shape[0], block):
        chunk = X[start:start + block]
        np.add(chunk, shift, out=buffer[:chunk.shape[0]], dtype=np.float64)
        out[start:start + chunk.shape[0]] = buffer[:chunk.shape[0]]
    return out


def speaker_means(X, utt_lists):
    """Per-speaker float32 means as ivector-mean computes them (``mean = x1; mean += xk``).

    ``utt_lists`` holds, per speaker, the row indices of its utterances in spk2utt order (each
    non-empty). Returns ``(means float32 (S, D), num_utts int32 (S,))``. Vectorised over
    speakers: step k adds the k-th utterance of every speaker that has one.
    """
    X = _as_matrix(X)
    counts = np.array([len(u) for u in utt_lists], dtype=np.int64)
    if np.any(counts == 0):
        raise ValueError("Speaker with no utterances.")
    num_spk, dim = len(utt_lists), X.shape[1]
    means = np.zeros((num_spk, dim), dtype=np.float32)
    if num_spk == 0:
        return means, counts.astype(np.int32)
    order = np.argsort(-counts, kind="stable")  # speakers with most utterances first
    sorted_counts = counts[order]
    flat = np.concatenate([np.asarray(utt_lists[spk], dtype=np.int64) for spk in order])
    starts = np.cumsum(sorted_counts) - sorted_counts
    rows = np.repeat(np.arange(num_spk), sorted_counts)
    padded = np.zeros((num_spk, sorted_counts[0]), dtype=np.int64)
    padded[rows, np.arange(flat.shape[0]) - starts[rows]] = flat
    acc = X[padded[:, 0]]
    for k in range(1, padded.shape[1]):
        active = int(np.searchsorted(-sorted_counts, -k, side="left"))
        acc[:active] += X[padded[:active, k]]
    scale = (1.0 / sorted_counts).astype(np.float32)
    means[order] = acc * scale[:, None]
    return means, counts.astype(np.int32)


def apply_affine(M, X):
    """transform-vec maths: ``y = M x`` (M is R x D) or ``y = M[:, :D] x + M[:, D]`` (R x (D+1)).

    Float32 throughout. Kaldi calls BLAS ``sgemv`` once per vector; numpy's batched
    ``matmul(M, x[:, :, None])`` also dispatches to ``sgemv`` per vector, so the summation order
    (hence every bit) is the same, unlike one ``sgemm`` (``X @ M.T``) whose blocking differs.
    """
    M = np.asarray(M)
    if M.ndim != 2:
        raise ValueError("the transform must be a matrix")
    M = _as_matrix(M)
    X = _as_matrix(X)
    rows, cols = M.shape
    dim = X.shape[1]
    if cols == dim:
        linear, offset = M, None
    elif cols == dim + 1:
        linear, offset = _as_matrix(M[:, :dim]), M[:, dim].copy()
    else:
        raise ValueError("Dimension mismatch: input vector has dimension %d and transform "
                         "has %d columns." % (dim, cols))
    if X.shape[0] == 0:
        return np.zeros((0, rows), dtype=np.float32)
    Y = np.matmul(linear, X[:, :, None])[:, :, 0]
    if offset is not None:
        Y = offset + Y
    return np.ascontiguousarray(Y, dtype=np.float32)


def vector_norms(X):
    """Float32 2-norms accumulated sequentially over dimensions (``VectorBase<float>::Norm(2)``:
    ``sum += x_i * x_i`` in float, i = 0, 1, ...): ``np.add.accumulate`` along a row is that
    running sum by definition."""
    X = _as_matrix(X)
    norms = np.empty(X.shape[0], dtype=np.float32)
    if X.shape[1] == 0:
        norms[:] = 0
        return norms
    block = _block_rows(X.shape[1])
    squares = np.empty((min(block, X.shape[0]), X.shape[1]), dtype=np.float32)
    for start in range(0, X.shape[0], block):
        rows = X[start:start + block]
        sq = squares[:rows.shape[0]]
        np.multiply(rows, rows, out=sq)
        np.add.accumulate(sq, axis=1, out=sq)
        np.sqrt(sq[:, -1], out=norms[start:start + rows.shape[0]])
    return norms


def norm_variation(X):
    """Coefficient of variation (std / mean) of the 2-norms of the rows of ``X``, in double;
    0 for no rows or all-zero rows. Length-normalised vectors give ~1e-7."""
    if len(X) == 0:
        return 0.0
    norms = np.linalg.norm(np.asarray(X, dtype=np.float64), axis=1)
    mean = norms.mean()
    return float(norms.std() / mean) if mean > 0 else 0.0


def normalize_length(X, scaleup=True, normalize=True):
    """ivector-normalize-length, float32-exact. Returns ``(Y, ratios)``.

    ``ratio = (float)(norm / sqrt(dim))`` (``norm`` if not ``scaleup``) and
    ``x *= (float)(1.0 / ratio)``; zero vectors (ratio 0) are left unchanged, as are all
    vectors when ``normalize`` is false (the ratios are still returned, for the log).
    """
    X = _as_matrix(X)
    norms = vector_norms(X)
    if scaleup:
        ratios = (norms.astype(np.float64) / np.sqrt(float(X.shape[1]))).astype(np.float32)
    else:
        ratios = norms
    if not normalize:
        return X.copy(), ratios
    nonzero = ratios != 0
    scale = np.ones(X.shape[0], dtype=np.float32)
    scale[nonzero] = (1.0 / ratios[nonzero].astype(np.float64)).astype(np.float32)
    return X * scale[:, None], ratios


def ratio_sums(ratios, sums=(0.0, 0.0)):
    """Running ``(sum ratio, sum ratio*ratio)`` as ivector-normalize-length accumulates them:
    in double, one vector after the other, the square taken in float (``ratio * ratio``)."""
    ratios = np.asarray(ratios, dtype=np.float32)
    total = np.cumsum(np.concatenate([[sums[0]], ratios.astype(np.float64)]))[-1]
    total2 = np.cumsum(np.concatenate([[sums[1]], (ratios * ratios).astype(np.float64)]))[-1]
    return float(total), float(total2)


def ratio_stats(ratios=None, sums=None, num=None):
    """``(mean, stddev)`` of the length ratios as ivector-normalize-length logs them, from the
    ratios or from ``ratio_sums`` of ``num`` of them."""
    if sums is None:
        sums, num = ratio_sums(ratios), len(ratios)
    total, total2 = sums
    avg = np.float32(total / num)
    variance = total2 / num - float(avg * avg)
    return float(avg), float(np.float32(np.sqrt(max(variance, 0.0))))


def speaker_mean_stats(means):
    """ivector-mean's log figures: norm of the mean speaker vector, and the root-mean-square
    speaker-vector length divided by sqrt(dim)."""
    means = _as_matrix(means)
    sumsq = float(np.add.reduce(np.einsum("ij,ij->i", means, means).astype(np.float64)))
    mean_length = float(np.linalg.norm(vector_sum(means) * (1.0 / means.shape[0])))
    return mean_length, np.sqrt(sumsq / means.shape[0]) / np.sqrt(means.shape[1])


def mean_norm(total, count):
    """``|sum| / N``, the norm of the mean that ivector-subtract-global-mean logs."""
    return float(np.linalg.norm(np.asarray(total, dtype=np.float64))) / count
