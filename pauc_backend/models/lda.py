"""Linear discriminant analysis as Kaldi's ivector-compute-lda computes it (numpy only).

Mirrors ``ComputeAndSubtractMean`` + ``ComputeLdaTransform`` of
``ivectorbin/ivector-compute-lda.cc``: the statistics and eigen-decompositions are in double, the
mean and the output matrix in float32. Kaldi holds every vector to subtract the mean (as float)
before accumulating; here the statistics are accumulated as the vectors stream in
(``ClassStats``, about a reference point, in double) and centred afterwards, so no table is
held: the scatter differs from Kaldi's by the float32 rounding of Kaldi's centred vectors.
Eigenvectors are only defined up to sign, so each row of ``components_`` may have the opposite sign
to Kaldi's (whose own QR picks it arbitrarily); projections then differ only in those signs.
"""

import numpy as np

from pauc_backend.models import blocked
from pauc_backend.models.class_stats import ClassStats
from pauc_backend.models.kaldi_math import apply_pow
from pauc_backend.models.preprocessing import apply_affine, vector_sum

# A covariance below this fraction of the total is rounding: every vector (of each speaker)
# is the same (a double difference of equal sums leaves ~1e-16 of them).
_ZERO_SCATTER = 1e-13


class LDA:
    """LDA to ``dim`` dimensions that whitens the (interpolated) within-class covariance.

    ``total_covariance_factor`` f normalises ``f T + (1-f) W`` (0: within-class W, 1: total T);
    eigenvalues of that matrix are floored at ``covariance_floor`` times the largest.
    Both are ``BaseFloat`` options in Kaldi, so they are rounded to float32 here too.
    """

    def __init__(self, dim=100, total_covariance_factor=0.0, covariance_floor=1e-6):
        self.dim = dim
        self.total_covariance_factor = total_covariance_factor
        self.covariance_floor = covariance_floor

    def fit(self, X, y, rows=None):
        """Learn the transform from vectors ``X`` (n, D) labelled by speaker ``y`` (n,).

        ``rows`` (optional): the rows of X to use, in this order (``y`` then labels those
        rows), so that a selection or reordering of a large table needs no copy of it. X is
        never copied whole when it is float32 (else it is rounded to a float32 copy, Kaldi's
        BaseFloat). Kaldi's order: the mean (in double, row after row), then the vectors
        centred in float and accumulated in double a block of rows at a time
        (``ClassStats.add_table``). ``fit_stats`` learns the same from statistics streamed
        in one pass.

        Sets ``mean_`` (float32, the utterance mean), ``components_`` (dim, D; float64, rows by
        decreasing between-class eigenvalue), ``affine_matrix_`` (float32 ``[A | -A m]``, Kaldi's
        transform.mat), ``eigenvalues_`` (all D, decreasing, as Kaldi logs them),
        ``num_floored_``/``floor_`` (eigenvalue flooring), ``num_speakers_``, ``num_utts_``.
        """
        stats, mean = self._statistics(X, y, rows)
        return self.fit_stats(stats, centre=mean)

    def _statistics(self, X, y, rows):
        """(ClassStats of the vectors centred on their float32 mean, that mean): ``fit``'s
        pass over the data (X an array, or a table of rows read in blocks, models.blocked)."""
        X = blocked.as_rows(X, "LDA.fit")  # Kaldi's float vectors (no copy if float32)
        if rows is not None:
            rows = np.asarray(rows, dtype=np.intp)
        y = np.asarray(y)
        num_utts = blocked.num_rows(X, rows)
        if y.shape != (num_utts,):
            raise ValueError("LDA.fit: y must have one label per row of X (%d), got shape %s"
                             % (num_utts, y.shape))
        if num_utts == 0:
            raise ValueError("Did not read any utterances.")
        self._check_params(X.shape[1])
        _, speaker_of = np.unique(y, return_inverse=True)
        mean = _mean(X, rows, num_utts)       # ValueError at a row with NaN or infinity
        return ClassStats().add_table(X, speaker_of.reshape(-1), rows, centre=mean), mean

    def _check_params(self, dim_in):
        if not 0 < self.dim <= dim_in:
            raise ValueError("LDA dimension --dim=%d must be in 1..%d (the vector dimension)"
                             % (self.dim, dim_in))
        if not self.covariance_floor >= 0.0:
            raise ValueError("--covariance-floor must be >= 0, got %g" % self.covariance_floor)

    def fit_stats(self, stats, centre=None):
        """Learn the transform from accumulated statistics (a ``ClassStats`` whose classes are
        the speakers), as ComputeLdaTransform does from CovarianceStats; returns self. The
        vectors themselves are not needed: stream them through ``ClassStats.add``.

        ``centre`` (float32, optional): the mean the vectors were centred on (in float, as
        Kaldi's ComputeAndSubtractMean does) before they were added, which makes a second pass
        over the data (``fit`` does this in memory, train-lda over a spool file). Without it
        (one pass), the statistics are centred in double afterwards: the result then differs
        from Kaldi's by the float rounding of Kaldi's centred vectors (~3e-8 of a row's
        largest element on the golden data).
        """
        if not stats.count_:
            raise ValueError("Did not read any utterances.")
        if centre is None:
            centre = stats.mean().astype(np.float32)
        return self._estimate(stats, np.asarray(centre, dtype=np.float32))

    def _estimate(self, stats, mean):
        """ComputeLdaTransform from ``stats``; ``mean`` (float32) is the utterance mean that
        goes into the affine offset."""
        return self._take(_Decomposition(self, stats, mean))

    def _take(self, path):
        """This LDA's rows of a ``_Decomposition`` (every dimension's are the leading rows
        of the same eigenvectors: ComputeLdaTransform keeps the top ``dim`` of them)."""
        if not 0 < self.dim <= path.dim_in:
            raise ValueError("LDA dimension --dim=%d must be in 1..%d (the vector dimension)"
                             % (self.dim, path.dim_in))
        self.num_speakers_, self.num_utts_ = path.num_speakers, path.num_utts
        self.mean_ = path.mean
        self.num_floored_, self.floor_ = path.num_floored, path.floor
        self.eigenvalues_ = path.eigenvalues
        self.components_ = path.vectors[:, :self.dim].T @ path.proj
        linear = self.components_.astype(np.float32)
        offset = -(np.matmul(linear, self.mean_))
        self.affine_matrix_ = np.hstack([linear, offset[:, None]]).astype(np.float32)
        return self

    @classmethod
    def fit_path(cls, X, y, rows=None, **params):
        """Every output dimension of ``fit(X, y, rows)`` at once: ``path.lda(dim)`` is the
        same object, to the bit, as ``LDA(dim, **params).fit(X, y, rows)``. The statistics
        and both eigendecompositions of ComputeLdaTransform do not depend on the output
        dimension (it keeps the leading ``dim`` rows of one set of eigenvectors), so they
        are made once here, and each dimension only multiplies its rows out (what the
        automatic back-end's screen of LDA dimensions needs per fold)."""
        first = cls(dim=1, **params)
        return LDAPath(cls, params, _Decomposition(first, *first._statistics(X, y, rows)))

    @classmethod
    def fit_dims(cls, X, y, dims, rows=None, **params):
        """{dim: the LDA of ``dim``} for every ``dims``, from one ``fit_path``."""
        path = cls.fit_path(X, y, rows, **params)
        return {int(dim): path.lda(dim) for dim in dims}

    def transform(self, X):
        """Project vectors with ``affine_matrix_`` exactly as transform-vec does (float32).
        The identity ``[I | 0]`` (the automatic back-end's "no LDA") gives finite vectors
        back as they are (a float32 copy): what its products give (x * 1 plus zeros), without
        a D x D product per vector."""
        if not hasattr(self, "affine_matrix_"):
            raise ValueError("LDA.transform: call fit first")
        X = np.asarray(X)
        if X.ndim == 2 and self._is_identity(X.shape[1]) and np.isfinite(X).all():
            return np.array(X, dtype=np.float32, order="C")
        return apply_affine(self.affine_matrix_, X)

    def _is_identity(self, dim):
        """Whether ``affine_matrix_`` is ``[I | 0]`` of ``dim`` (remembered per matrix)."""
        M = self.affine_matrix_
        known = self.__dict__.get("_identity")
        if known is None or known[0] is not M:
            M32 = np.asarray(M)
            flag = bool(M32.ndim == 2 and M32.shape == (M32.shape[0], M32.shape[0] + 1)
                        and np.array_equal(M32[:, :-1], np.eye(M32.shape[0]))
                        and not M32[:, -1].any())
            known = self._identity = (M, flag)
        return known[1] and M.shape[0] == dim


def _sorted_eigh(matrix):
    """Eigen-decomposition of a symmetric matrix, eigenvalues decreasing (Kaldi's SortSvd)."""
    matrix = 0.5 * (matrix + matrix.T)
    values, vectors = np.linalg.eigh(matrix)
    return values[::-1].copy(), vectors[:, ::-1].copy()


class LDAPath:
    """The LDAs of one training set at every output dimension (``LDA.fit_path``):
    ``lda(dim)``; holds two D x D matrices whatever the number of dimensions asked for."""

    def __init__(self, cls, params, decomposition):
        self._cls, self._params, self._decomposition = cls, dict(params), decomposition

    @property
    def dim_in(self):
        return self._decomposition.dim_in

    def lda(self, dim):
        return self._cls(dim=int(dim), **self._params)._take(self._decomposition)


class _Decomposition:
    """What ComputeLdaTransform computes before it keeps ``dim`` rows: the normalising
    projection of the (interpolated) within-class covariance and the eigen-decomposition of
    the between-class covariance in its space, with the counts and the flooring (the body
    of ``LDA._estimate``, for ``lda``'s covariance factor and floor)."""

    def __init__(self, lda, stats, mean):
        num_utts = stats.count_
        if num_utts == 0:
            raise ValueError("Did not read any utterances.")
        dim_in = stats.dim_
        lda._check_params(dim_in)
        factor = float(np.float32(lda.total_covariance_factor))
        floor_rel = float(np.float32(lda.covariance_floor))
        num_spk = stats.num_classes
        if num_spk < 2:
            raise ValueError("Stats have %d speaker(s), %d utterances: LDA needs at least 2 "
                             "speakers (the between-class covariance of one speaker is zero)"
                             % (num_spk, num_utts))
        if num_utts - num_spk <= 0:
            raise ValueError("Stats have %d speakers, %d utterances: every speaker has one "
                             "utterance, so the within-class covariance is zero"
                             % (num_spk, num_utts))
        if num_utts < dim_in:
            raise ValueError("Too little data for iVector dimension: %d utterances but "
                             "dimension %d (need at least as many utterances as dimensions)"
                             % (num_utts, dim_in))
        self.dim_in, self.num_speakers, self.num_utts, self.mean = (dim_in, num_spk, num_utts,
                                                                     mean)
        tot, btw = stats.total_scatter(), stats.between_scatter()
        total_covar = tot * (1.0 / num_utts)
        within_covar = (tot - btw) * (1.0 / num_utts)
        to_normalize = factor * total_covar + (1.0 - factor) * within_covar

        # ComputeNormalizingTransform: proj * M * proj^T = I, eigenvalues floored.
        s, U = _sorted_eigh(to_normalize)
        if not s[0] > _ZERO_SCATTER * np.trace(total_covar):
            raise ValueError("Degenerate data: the %s covariance is zero (all vectors are "
                             "identical%s), so there is nothing to normalize"
                             % ("interpolated" if factor else "within-class",
                                "" if factor else " within each speaker"))
        floor = floor_rel * s[0]
        self.num_floored = int(np.count_nonzero(s < floor))
        self.floor = floor
        s = np.maximum(s, floor)
        if not s[-1] > 0.0:
            raise ValueError("The %s covariance is singular (%d of %d eigenvalues are zero) and "
                             "--covariance-floor=0 does not floor them; use a positive floor"
                             % ("interpolated" if factor else "within-class",
                                int(np.count_nonzero(s <= 0)), s.size))
        self.proj = apply_pow(s, -0.5)[:, None] * U.T  # Kaldi: s.ApplyPow(-0.5)
        between_proj = self.proj @ (total_covar - within_covar) @ self.proj.T
        self.eigenvalues, self.vectors = _sorted_eigh(between_proj)


_CHUNK_ROWS = 4096


def _nonfinite(position):
    return ValueError("LDA.fit: row %d of X contains NaN or infinity" % position)


def _mean(X, rows, num_utts):
    """``sum_i (1/N) x_i`` in double, row after row in selection order (vector_sum's
    arithmetic: ComputeAndSubtractMean's AddVec), as float32; rows gathered a block at a time.
    ValueError naming the first row (of X) with a NaN or infinity, found in the same pass: a
    float32 value is below 2^128 and N >= 1, so the double total stays finite unless a row
    is not; a chunk whose total turns non-finite is searched for that row."""
    if rows is None or X.shape[1] == 1:  # one column: vector_sum's own sequential path
        bad = blocked.first_nonfinite(X, rows)
        if bad is not None:
            raise _nonfinite(bad if rows is None else rows[bad])
        return vector_sum(X if rows is None else X[rows], 1.0 / num_utts).astype(np.float32)
    total = np.zeros(X.shape[1])
    for begin in range(0, len(rows), _CHUNK_ROWS):
        chunk = X[rows[begin:begin + _CHUNK_ROWS]]
        buffer = np.empty((chunk.shape[0] + 1, chunk.shape[1]))
        buffer[0] = total  # the running total rides along: the sum stays strictly sequential
        np.multiply(chunk, 1.0 / num_utts, out=buffer[1:], dtype=np.float64)
        total = np.add.reduce(buffer, axis=0)
        if not np.isfinite(total).all():
            bad = int(np.argmin(np.isfinite(chunk).all(axis=1)))
            raise _nonfinite(rows[begin + bad])
    return total.astype(np.float32)
