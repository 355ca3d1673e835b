"""Whether an unlabelled set of vectors (an adaptation set, train-pauc-auto --adapt) can be
trusted: for centring (its mean), for its covariance (PLDA adaptation, moving the held-out
folds into its domain), and for pseudo-speakers (clusters of its vectors taken as speakers).
numpy only, no files.

``examine(A, reference)`` returns a frozen ``AdaptCheck``; ``reference`` is a
``TrainingReference`` of the labelled training set, made once by the caller
(``TrainingReference.fit(X, y)``). The checks, in order (benchmarks/adapt_set_checks.py
measures each on real and degenerate sets; its output is benchmarks/RESULTS_adapt_set_checks.md):

1. Rows (all n of them, O(n D), no copy of the set): a row with NaN or Inf, an all-zero row
   (it has no direction to length-normalise), a row with an entry beyond
   sqrt(float32 max / (n D)) (above it a sum of products of the set's entries, a covariance
   or a squared norm accumulated in float32, can overflow: 1e30 does), and a row that
   repeats an earlier row bit for bit (two recordings never give the same floats; copies
   would make a perfect pseudo-speaker) are left out (``rows`` are the kept ones).
   Fewer than 2 left: nothing in the set can be used (level "error").
2. Rank: the numerical rank of the centred sample (eigenvalues of its covariance above
   (max(m, D) eps32)^2 x the largest: numpy's matrix_rank tolerance at float32 precision)
   against min(the training sample's rank, m - 1). Vectors of one extractor span the same
   space in every domain (the real sets measured reach 93-100 % of that expected rank), so a
   rank at most RANK_FRACTION (half) of it is a degenerate set (vectors on a line: 1; a
   rank-5 set: 5): not used at all.
3. Sphericity: John's test (Ledoit & Wolf 2002, valid when D is comparable to or above m):
   with the covariance eigenvalues l_i (all D, zeros included) of m vectors, n = m - 1 and
   U = (1/D) sum (l_i / mean(l) - 1)^2, isotropic Gaussian noise gives
   ``z`` = (n U - D - 1) / 2 ~ N(0, 1). A set whose z is not above Z_999 = 3.09 (the
   normal's 99.9 % quantile) cannot be told from isotropic noise: no speaker structure, or
   too few vectors to show one; not used at all. Embeddings are never isotropic: their
   speaker directions carry more variance than the rest. The largest-eigenvalue test
   (Johnstone 2001: the Marchenko-Pastur edge (1 + sqrt(D/n))^2 of l_1 / mean(l), Tracy-Widom
   fluctuations; ``ratio``, ``edge`` and ``z_edge`` in the figures) is reported, not used: it
   cannot see a spike below the BBP threshold 1 + sqrt(D/n) x the noise level, and raw
   i-vectors have none that strong (ETRI's largest eigenvalue is 2.9 x the mean; with one
   vector of each of its 50 female speakers, 200 dimensions, the threshold is 3; z_edge 2.7,
   John's z 6.2).
4. Speaker clusters (for pseudo-speakers only): in the training's LDA space (the between-
   speaker directions, k = min(speakers - 1, D // 2): the space of the pseudo-speaker
   stage's systems), the cosine of each sampled vector to its nearest neighbour (centred on
   the sample's mean), against the same for a Gaussian of the sample's own mean and
   covariance (seeded; it has no clusters): ``cluster_share`` = the share of vectors whose
   nearest neighbour is closer than 99 % of the Gaussian's. Structureless sets give about
   0.01. Clusters need ``cluster_share`` >= CLUSTER_SHARE (0.09) and at least
   ``min_clustered`` (the pseudo-speaker guard's 10 x 4 vectors) such vectors in the set.
   0.09 is calibrated (no distribution-free statistic exists for "holds several vectors of
   one speaker"): the geometric mean of the largest value of one-vector-per-speaker sets
   (0.071: halves of the training speakers of ETRI, TIMIT and the synthetic corpus, seeds
   0-4) and the smallest of a clustered unlabelled set of training data (0.113: ETRI's
   female training speakers), training and adaptation sets only. A set of many speakers with
   one vector each (the real set without clusters) is used for centring and covariance, not
   for pseudo-speakers. It misses weak clusters: a 16-dimensional synthetic set whose
   in-domain within-speaker variability swamps its speakers gives 0.011.

The domain shift (models.domain) is not a criterion: it does not separate noise from a real
set of another domain (ETRI: unit noise 0.54, the female training speakers 0.58).

Cost: the row checks O(n D) time and O(n) memory (blocks of BLOCK_ROWS rows); the rest on a
seeded sample of m <= ``max_rows`` (default 2,000) kept rows: one D x D (or m x m)
eigendecomposition, O(m D^2 + D^3), and two m x m cosine passes in the LDA space,
O(m^2 k), in blocks of BLOCK_ROWS x m. ``TrainingReference.fit`` reads a seeded sample of at
most ``max_rows`` training rows for the rank and at most 10 x that for the LDA (models.lda),
O(rows D^2 + D^3), once.
"""

from dataclasses import dataclass, field

import numpy as np

from pauc_backend.models.lda import LDA

__all__ = ["TrainingReference", "AdaptCheck", "examine", "screen_rows", "sphericity",
           "cluster_share", "numerical_rank", "covariance_spectrum", "sample_rows",
           "CLUSTER_SHARE", "Z_999", "RANK_FRACTION", "MAX_ROWS"]

MAX_ROWS = 2000
BLOCK_ROWS = 1024
Z_999 = 3.09            # 99.9 % quantile of the standard normal
RANK_FRACTION = 0.5     # a rank at most this share of the training's: degenerate
NULL_QUANTILE = 0.99
CLUSTER_SHARE = 0.09
_EPS32 = float(np.finfo(np.float32).eps)
_MAX32 = float(np.finfo(np.float32).max)


def sample_rows(count, limit, seed):
    """Sorted seeded rows 0..count-1, at most ``limit`` of them."""
    if count <= limit:
        return np.arange(count)
    return np.sort(np.random.default_rng([int(seed), 41]).choice(count, limit, replace=False))


def covariance_spectrum(S):
    """Eigenvalues (decreasing, float64) of the covariance of the rows of S (m x D, float64),
    through the smaller of the D x D and m x m Gram matrices; padded with zeros to D."""
    C = S - S.mean(axis=0)
    m, dim = C.shape
    gram = C.T @ C if dim <= m else C @ C.T
    values = np.linalg.eigvalsh(gram)[::-1] / max(m - 1, 1)
    out = np.zeros(dim)
    out[:min(dim, values.size)] = np.maximum(values[:dim], 0.0)
    return out


def numerical_rank(values, shape):
    """The eigenvalues of ``values`` (a covariance's, decreasing) above numpy's matrix_rank
    tolerance at float32 precision: singular value > max(shape) eps32 x the largest."""
    if values.size == 0 or values[0] <= 0:
        return 0
    return int(np.count_nonzero(values > values[0] * (max(shape) * _EPS32) ** 2))


def sphericity(values, m):
    """(z, ratio, edge, z_edge) of the covariance eigenvalues ``values`` (all D, decreasing)
    of m vectors: John's statistic (module doc, 3), the largest eigenvalue over the mean, the
    Marchenko-Pastur edge (1 + sqrt(D / (m - 1)))^2 and Johnstone's standardised largest
    eigenvalue (centre (sqrt(n - 1) + sqrt(D))^2 / n, scale (sqrt(n - 1) + sqrt(D)) / n
    (1/sqrt(n - 1) + 1/sqrt(D))^(1/3), n = m - 1)."""
    dim = values.size
    n = m - 1
    mean = values.sum() / dim
    if not mean > 0:
        return float("-inf"), float("nan"), float("nan"), float("nan")
    spread = float(np.sum((values / mean - 1.0) ** 2)) / dim
    ratio = float(values[0] / mean)
    root = np.sqrt(n - 1) + np.sqrt(dim)
    centre = root ** 2 / n
    scale = root / n * (1 / np.sqrt(n - 1) + 1 / np.sqrt(dim)) ** (1 / 3)
    return ((n * spread - dim - 1) / 2.0, ratio, float((1 + np.sqrt(dim / n)) ** 2),
            float((ratio - centre) / scale))


def _nearest_cosines(Z):
    """Each row's largest cosine to another row, the rows centred on their mean."""
    C = Z - Z.mean(axis=0)
    norms = np.sqrt(np.einsum("ij,ij->i", C, C))
    C = C / np.where(norms > 0, norms, 1.0)[:, None]
    best = np.empty(C.shape[0])
    for start in range(0, C.shape[0], BLOCK_ROWS):
        G = C[start:start + BLOCK_ROWS] @ C.T
        G[np.arange(G.shape[0]), start + np.arange(G.shape[0])] = -np.inf
        best[start:start + BLOCK_ROWS] = G.max(axis=1)
    return best


def cluster_share(Z, seed):
    """(share, the Gaussian's 99 % quantile): module doc, 4, on the rows Z (m x k)."""
    C = Z - Z.mean(axis=0)
    values, vectors = np.linalg.eigh(C.T @ C / max(Z.shape[0] - 1, 1))
    rng = np.random.default_rng([int(seed), 42])
    G = (rng.standard_normal(Z.shape) * np.sqrt(np.maximum(values, 0.0))) @ vectors.T
    limit = float(np.quantile(_nearest_cosines(G), NULL_QUANTILE))
    return float(np.mean(_nearest_cosines(Z) > limit)), limit


@dataclass(frozen=True)
class TrainingReference:
    """What ``examine`` compares an unlabelled set with, from the labelled training set:
    ``dim``, ``rank`` (numerical rank of a centred sample of ``rows`` training vectors),
    ``directions`` (k x D: the rows of the training's LDA, models.lda, to k = min(speakers -
    1, D // 2) between-speaker directions; None with one speaker)."""
    dim: int
    rank: int
    rows: int
    directions: np.ndarray = field(repr=False)

    @classmethod
    def fit(cls, X, y, max_rows=MAX_ROWS, seed=0):
        """From training vectors X (N x D: an array or a table of rows, models.row_table)
        and their speaker labels y, read on seeded samples (module doc, Cost)."""
        y = np.asarray(y)
        count, dim = X.shape
        rows = sample_rows(count, max_rows, seed)
        S = np.asarray(X[rows], dtype=np.float64)
        rank = numerical_rank(covariance_spectrum(S), S.shape)
        lda_rows = sample_rows(count, 10 * max_rows, seed + 1)
        speakers = np.unique(y[lda_rows]).size
        k = min(speakers - 1, dim // 2)
        directions = (LDA(dim=k).fit(X, y[lda_rows], rows=lda_rows).components_
                      if k >= 1 else None)
        return cls(int(dim), rank, int(rows.size), directions)


@dataclass(frozen=True)
class AdaptCheck:
    """The verdict on an unlabelled set (module doc). ``rows``: the rows kept (use
    ``A[rows]``); ``centring``, ``covariance``, ``pseudo_speakers``: what they may be used
    for; ``level``: "log" (usable; ``cause`` says what was found), "warning" (rows left out
    or the set not used: one WARNING) or "error" (nothing in it can be used: one ERROR);
    ``cause``: one sentence; ``token``: a word for system.txt (ok, no_clusters, rank_deficient,
    isotropic, too_few, identical, no_usable_rows); ``left_out``: {reason: count of the rows
    left out}; ``figures``: the statistics measured."""
    rows: np.ndarray = field(repr=False)
    centring: bool
    covariance: bool
    pseudo_speakers: bool
    level: str
    cause: str
    token: str
    left_out: dict
    figures: dict

    @property
    def usable(self):
        return self.centring or self.covariance or self.pseudo_speakers


def screen_rows(A):
    """{reason: bool mask of the rows left out for it} (module doc, 1), each row counted
    under its first reason, in blocks."""
    n, dim = A.shape
    limit = np.sqrt(_MAX32 / max(n * dim, 1))
    masks = {key: np.zeros(n, dtype=bool) for key in ("nonfinite", "zero", "too_large",
                                                      "repeated")}
    for start in range(0, n, BLOCK_ROWS):
        block = np.asarray(A[start:start + BLOCK_ROWS])
        finite = np.isfinite(block).all(axis=1)
        big = np.abs(np.where(np.isfinite(block), block, 0)).max(axis=1) if dim else 0
        masks["nonfinite"][start:start + block.shape[0]] = ~finite
        masks["zero"][start:start + block.shape[0]] = finite & ~block.any(axis=1)
        masks["too_large"][start:start + block.shape[0]] = finite & (big > limit)
    rest = ~(masks["nonfinite"] | masks["zero"] | masks["too_large"])
    masks["repeated"] = _repeats(A, rest)
    return masks, float(limit)


def _repeats(A, candidates):
    """Rows among ``candidates`` equal, bit for bit, to an earlier candidate row: an exact
    integer hash of each row's bits (wrapping sums of the bits times seeded odd words), then
    rows of equal hash compared with the first of their run."""
    rows = np.flatnonzero(candidates)
    out = np.zeros(candidates.size, dtype=bool)
    if rows.size < 2:
        return out
    A = np.asarray(A)
    width = {4: np.uint32, 8: np.uint64, 2: np.uint16}[A.dtype.itemsize]
    words = np.random.default_rng(41).integers(1, 1 << 62, A.shape[1], dtype=np.uint64) | 1
    codes = np.empty(rows.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for start in range(0, rows.size, BLOCK_ROWS):
            bits = np.ascontiguousarray(A[rows[start:start + BLOCK_ROWS]]).view(width)
            codes[start:start + BLOCK_ROWS] = (bits.astype(np.uint64) * words).sum(
                axis=1, dtype=np.uint64)
    order = np.argsort(codes, kind="stable")            # equal codes keep the row order
    sorted_codes = codes[order]
    first = np.ones(rows.size, dtype=bool)
    first[1:] = sorted_codes[1:] != sorted_codes[:-1]
    run_start = np.maximum.accumulate(np.where(first, np.arange(rows.size), 0))
    later = np.flatnonzero(~first)
    for start in range(0, later.size, BLOCK_ROWS):
        part = later[start:start + BLOCK_ROWS]
        same = (A[rows[order[part]]] == A[rows[order[run_start[part]]]]).all(axis=1)
        out[rows[order[part[same]]]] = True
    return out


_REASONS = {"nonfinite": "%d with NaN or Inf", "zero": "%d all zero",
            "too_large": "%d with an entry above %.3g (float32 sums of their products "
                         "would overflow)",
            "repeated": "%d repeating an earlier vector bit for bit"}


def examine(A, reference, max_rows=MAX_ROWS, seed=0, min_clustered=40):
    """The AdaptCheck of the unlabelled vectors A (n x D) against ``reference`` (a
    TrainingReference of the training set): module doc. ``min_clustered``: the vectors with
    a close neighbour the pseudo-speakers need at least (their guard's 10 x 4)."""
    A = np.asarray(A)
    if A.ndim != 2 or A.shape[1] != reference.dim:
        raise ValueError("the unlabelled set must be (n, %d), got shape %s"
                         % (reference.dim, A.shape))
    n = A.shape[0]
    masks, limit = screen_rows(A)
    kept = ~np.logical_or.reduce(list(masks.values())) if n else np.zeros(0, bool)
    rows = np.flatnonzero(kept)
    left_out = {key: int(mask.sum()) for key, mask in masks.items() if mask.any()}
    rows_text = ""
    if left_out:
        rows_text = "%d of its %d vectors are left out (%s)" % (
            n - rows.size, n, ", ".join(
                (_REASONS[key] % ((count, limit) if key == "too_large" else (count,)))
                for key, count in left_out.items()))
    figures = {"vectors": n, "kept": int(rows.size)}

    def verdict(use, pseudo, level, cause, token):
        if rows_text:
            cause = rows_text + ("; " + cause if cause else "")
            if level == "log":
                level = "warning"
        return AdaptCheck(rows, use, use, pseudo, level, cause, token, left_out, figures)

    if rows.size < 2:
        if rows.size == 1 and masks["repeated"].any():
            if len(left_out) == 1:
                rows_text = ""
                cause = "its %d vectors are one vector repeated bit for bit" % n
            else:
                cause = "the rest is one vector repeated"
            return verdict(False, False, "warning", cause + ": no speaker structure, not "
                           "used", "identical")
        return verdict(False, False, "error", "%s usable vector: nothing in it can be used"
                       % ("only one" if rows.size else "no"), "no_usable_rows")
    sample = rows[sample_rows(rows.size, max_rows, seed)]
    S = np.asarray(A[sample], dtype=np.float64)
    m = S.shape[0]
    values = covariance_spectrum(S)
    rank = numerical_rank(values, S.shape)
    expected = min(reference.rank, m - 1)
    figures.update(sample=m, rank=rank, expected_rank=expected)
    if rank <= RANK_FRACTION * expected:
        return verdict(False, False, "warning", "its vectors span only %d dimension%s (the "
                       "numerical rank of %d of them, centred; the training vectors' is %d): "
                       "a degenerate set, not used" % (rank, "" if rank == 1 else "s", m,
                                                       reference.rank), "rank_deficient")
    if m < 3:
        return verdict(False, False, "warning", "only %d distinct vectors: too few to tell "
                       "them from noise, not used" % m, "too_few")
    z, ratio, edge, z_edge = sphericity(values, m)
    figures.update(z=z, ratio=ratio, edge=edge, z_edge=z_edge)
    if not z > Z_999:
        return verdict(False, False, "warning", "its vectors are spread like isotropic "
                       "noise (John's sphericity statistic of %d of them in %d dimensions "
                       "is z = %.2f, not above %.2f, the 99.9 %% quantile of noise's): no "
                       "speaker structure, or too few vectors to show one; not used"
                       % (m, A.shape[1], z, Z_999), "isotropic")
    if reference.directions is None:
        return verdict(True, False, "log", "no training LDA to look for speaker clusters "
                       "with: used for centring and covariance, not for pseudo-speakers",
                       "no_clusters")
    share, null = cluster_share(S @ reference.directions.T, seed)
    figures.update(cluster_share=share, null_cosine=null)
    found = share >= CLUSTER_SHARE and share * rows.size >= min_clustered
    text = ("%.1f %% of %d sampled vectors have a nearest neighbour closer than 99 %% of a "
            "structureless Gaussian's (speaker clusters need %g %% and %d such vectors)"
            % (100 * share, m, 100 * CLUSTER_SHARE, min_clustered))
    if found:
        return verdict(True, True, "log", "speaker clusters found: " + text, "ok")
    return verdict(True, False, "log", "no speaker clusters found (" + text + "): used for "
                   "centring and covariance, not for pseudo-speakers", "no_clusters")
