"""Cosine / dot-product scoring of paired vectors (ivector-compute-dot-products; numpy only).

Kaldi scores a trial with ``VecVec(e, t)``, i.e. BLAS ``sdot`` in float32. numpy's batched
``matmul`` of (n, 1, D) by (n, D, 1) calls the same ``sdot`` once per pair, so scores keep
Kaldi's float32 summation order. Recipes length-normalise the vectors first, which turns the dot
product into a (scaled) cosine similarity.
"""

import numpy as np

from pauc_backend.models.preprocessing import normalize_length


def dot_scores(E, T):
    """Float32 dot product of each row of ``E`` with the same row of ``T`` (``VecVec``)."""
    E = np.ascontiguousarray(E, dtype=np.float32)
    T = np.ascontiguousarray(T, dtype=np.float32)
    if E.ndim != 2 or E.shape != T.shape:
        raise ValueError("paired scoring needs two 2-D arrays of the same shape, got %s and %s"
                         % (E.shape, T.shape))
    if E.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    return np.matmul(E[:, None, :], T[:, :, None])[:, 0, 0]


def indexed_dot_scores(E, T, e_rows, t_rows, block=1 << 16):
    """``dot_scores(E[e_rows], T[t_rows])`` without the full (n, D) gathers: works in blocks of
    ``block`` trials, which keeps memory small and the gathers in cache."""
    e_rows, t_rows = np.asarray(e_rows), np.asarray(t_rows)
    scores = np.empty(e_rows.shape[0], dtype=np.float32)
    for start in range(0, e_rows.shape[0], block):
        stop = start + block
        scores[start:stop] = dot_scores(E[e_rows[start:stop]], T[t_rows[start:stop]])
    return scores


def cosine_scores(E, T, normalize=False):
    """Scores of paired rows: dot products, or cosine similarities if ``normalize``.

    With ``normalize`` each vector is first divided by its norm exactly as
    ``ivector-normalize-length --scaleup=false`` does (zero vectors stay zero), so the result
    equals Kaldi's normalise-then-dot-product pipeline bit for bit.
    """
    if normalize:
        E = normalize_length(E, scaleup=False)[0]
        T = normalize_length(T, scaleup=False)[0]
    return dot_scores(E, T)
