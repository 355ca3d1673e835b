"""Probabilistic LDA exactly as Kaldi's ``src/ivector/plda.cc`` (Ioffe 2006, two-covariance EM).

The model maps a vector x to u = transform_ (x - mean_), a space where the within-class
covariance is I and the between-class covariance is diag(psi_). Everything is vectorised:
each EM iteration works in the basis that diagonalises the current W and B, where Kaldi's
per-speaker gain matrices (which depend only on the speaker's count n) are diagonal, so all
speakers are summed in a few matrix products; trial scoring is matrix arithmetic over the
enrollment and test vectors, never a loop over trials.
"""

import numpy as np

from pauc_backend.models import blocked
from pauc_backend.models.class_stats import ClassStats, NonFiniteRowError
from pauc_backend.models.kaldi_math import apply_pow

_LOG_2PI = np.log(2.0 * np.pi)
# A within-class scatter below this fraction of the total is rounding: each speaker's vectors
# are identical (a double difference of equal sums leaves ~1e-16 of them).
_ZERO_SCATTER = 1e-13


def _sym(matrix):
    return 0.5 * (matrix + matrix.T)


def _sorted_eigh(matrix):
    """Symmetric eigendecomposition, eigenvalues decreasing (Kaldi's Eig + SortSvd)."""
    values, vectors = np.linalg.eigh(_sym(matrix))
    order = np.argsort(-values, kind="stable")
    return values[order], vectors[:, order]


def _cholesky(matrix, what):
    try:
        return np.linalg.cholesky(_sym(matrix))
    except np.linalg.LinAlgError:
        raise ValueError("%s is not positive definite." % what) from None


def _normalizing_transform(covar, what):
    """C^-1 where covar = C C^T (Kaldi's ComputeNormalizingTransform)."""
    chol = _cholesky(covar, what)
    return np.linalg.solve(chol, np.eye(len(chol)))


def _check_finite(X, name, copy=False):
    X = np.array(X, dtype=np.float64, copy=True) if copy else np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError("%s must be a 2-D array, got shape %s" % (name, X.shape))
    if not np.all(np.isfinite(X)):
        row = int(np.flatnonzero(~np.all(np.isfinite(X), axis=1))[0])
        raise ValueError("%s row %d contains NaN or Inf" % (name, row))
    return X


def _em_step(within, between, offset_scatter, mean_offsets, counts):
    """One E-M iteration of PldaEstimator::EstimateOneIter, for all classes at once.

    For a class of size n with centred mean m, Kaldi adds mixed_n + w w^T to the between stats
    and n (mixed_n + (m-w)(m-w)^T) to the within stats, where mixed_n = (B^-1 + n W^-1)^-1 and
    w = mixed_n n W^-1 m. In the basis T that makes W = I and B = diag(lam), mixed_n and the gain
    w = g_n * m are diagonal, g_n = n lam / (1 + n lam): the sums become element-wise products.
    """
    chol = _cholesky(within, "Within-class covariance")
    chol_inv = np.linalg.solve(chol, np.eye(len(chol)))
    lam, vectors = np.linalg.eigh(_sym(chol_inv @ between @ chol_inv.T))
    lam = np.maximum(lam, 0.0)
    to_diag = vectors.T @ chol_inv           # T: T W T^T = I, T B T^T = diag(lam)
    from_diag = chol @ vectors               # T^-1
    sizes, size_index, size_counts = np.unique(counts, return_inverse=True, return_counts=True)
    n = sizes.astype(np.float64)[:, None]
    mixed = lam / (1.0 + n * lam)            # diag of T mixed_n T^T, per size
    gain = n * mixed                         # diag of the gain, per size
    mixed_between = size_counts @ mixed
    mixed_within = (size_counts * sizes) @ mixed
    offsets = mean_offsets @ to_diag.T
    between_t = (gain[size_index] * offsets).T @ (gain[size_index] * offsets)
    residual = np.sqrt(counts)[:, None] * (1.0 - gain[size_index]) * offsets
    within_t = residual.T @ residual
    between_t[np.diag_indices_from(between_t)] += mixed_between
    within_t[np.diag_indices_from(within_t)] += mixed_within
    num_examples, num_classes = counts.sum(), counts.shape[0]
    within_stats = offset_scatter + from_diag @ within_t @ from_diag.T
    between_stats = from_diag @ between_t @ from_diag.T
    within_count = (num_examples - num_classes) + num_classes
    return _sym(within_stats) / within_count, _sym(between_stats) / num_classes


class PLDA:
    """PLDA model (Kaldi ``Plda``); ``fit`` mirrors PldaStats + PldaEstimator.

    Fitted attributes: ``mean_`` (mean of the class means), ``transform_`` (D x D, rows of
    arbitrary sign), ``psi_`` (between-class variances, decreasing), ``offset_`` (-transform_ mean_).
    After ``fit`` also ``within_var_trace_``/``between_var_trace_`` (one entry per EM iteration),
    ``num_classes_`` and ``num_examples_``.
    """

    def __init__(self, num_em_iters=10):
        self.num_em_iters = num_em_iters

    @classmethod
    def from_params(cls, mean, transform, psi):
        """A model from stored parameters (e.g. a Kaldi ``<Plda>`` file)."""
        mean = np.array(mean, dtype=np.float64).ravel()
        transform = np.array(transform, dtype=np.float64)
        psi = np.array(psi, dtype=np.float64).ravel()
        dim = mean.shape[0]
        if dim == 0 or transform.shape != (dim, dim) or psi.shape != (dim,):
            raise ValueError("Inconsistent PLDA parameters: mean dim %d, transform %s, psi dim %d"
                             % (dim, transform.shape, psi.shape[0]))
        model = cls()
        model.mean_, model.transform_, model.psi_ = mean, transform, psi
        model._compute_derived()
        return model

    @property
    def dim(self):
        return self.mean_.shape[0]

    def _compute_derived(self):
        self.offset_ = -self.transform_ @ self.mean_

    # -- estimation ---------------------------------------------------------------------------
    def fit(self, X, y, rows=None):
        """Estimate by EM from vectors X (N x D) with class labels y (PldaEstimator::Estimate).

        Classes with one example are used (they inform the between-class covariance).
        ``rows`` (optional): the rows of X to use, in this order (y then labels those rows),
        so that a selection of a large table needs no copy of it. X is used as it is (float32
        as read, or float64) and never copied whole: the class sums and the scatter are
        accumulated in float64 a block of rows at a time (``ClassStats.add_table``), as
        PldaStats accumulates them in double, then ``fit_stats``.
        """
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError("X must be a 2-D array, got shape %s" % (X.shape,))
        if rows is not None:
            rows = np.asarray(rows, dtype=np.intp)
        num_examples = blocked.num_rows(X, rows)
        y = np.asarray(y)
        if y.shape != (num_examples,):
            raise ValueError("X has %d rows but y has %d labels" % (num_examples, y.size))
        self._check_params()
        _, label_index = np.unique(y, return_inverse=True)
        try:
            stats = ClassStats().add_table(X, label_index.reshape(-1), rows)
        except NonFiniteRowError as err:
            raise ValueError("X row %d contains NaN or Inf"
                             % (err.row if rows is None else rows[err.row])) from None
        if stats.dim_ is None:
            raise ValueError("No stats accumulated, unable to estimate PLDA.")
        return self.fit_stats(stats)

    def _check_params(self):
        if not (isinstance(self.num_em_iters, (int, np.integer)) and self.num_em_iters >= 0):
            raise ValueError("--num-em-iters must be a non-negative integer, got %r"
                             % (self.num_em_iters,))

    def fit_stats(self, stats):
        """Estimate by EM from accumulated statistics (a ``ClassStats`` whose classes are the
        speakers; PldaStats + PldaEstimator::Estimate); returns self. Classes with no vector
        take no part. The vectors themselves are not needed: stream them through
        ``ClassStats.add``."""
        num_examples, dim = stats.count_, stats.dim_
        if num_examples == 0:
            raise ValueError("No stats accumulated, unable to estimate PLDA.")
        if num_examples <= dim:
            raise ValueError("Number of training iVectors is not greater than their dimension, "
                             "unable to estimate PLDA.")
        self._check_params()
        counts = stats.counts()
        if counts.size < 2:
            raise ValueError("Only one speaker (%d utterances): PLDA needs at least 2 speakers "
                             "to estimate the between-class variance" % num_examples)
        if np.all(counts == 1):
            raise ValueError("No speakers with multiple utterances, unable to estimate PLDA.")

        num_classes = counts.shape[0]
        class_means = stats.class_means()
        global_mean = class_means.sum(axis=0) / num_classes
        mean_offsets = class_means - global_mean
        offset_scatter = stats.within_scatter()  # Kaldi's offset_scatter_
        if not np.trace(offset_scatter) > _ZERO_SCATTER * np.trace(stats.total_scatter()):
            raise ValueError("Degenerate data: the within-class scatter is zero (every "
                             "speaker's vectors are identical), so PLDA cannot be estimated")

        within, between = np.eye(dim), np.eye(dim)
        self.within_var_trace_, self.between_var_trace_ = [], []
        for _ in range(self.num_em_iters):
            within, between = _em_step(within, between, offset_scatter, mean_offsets, counts)
            self.within_var_trace_.append(float(np.trace(within)))
            self.between_var_trace_.append(float(np.trace(between)))

        self.mean_ = global_mean
        transform1 = _normalizing_transform(within, "Within-class covariance")
        psi, vectors = _sorted_eigh(transform1 @ between @ transform1.T)
        self.psi_ = np.maximum(psi, 0.0)
        self.transform_ = vectors.T @ transform1
        self.num_classes_, self.num_examples_ = num_classes, num_examples
        self._compute_derived()
        return self

    # -- adaptation and smoothing -------------------------------------------------------------
    def adapt(self, X, mean_diff_scale=1.0, within_covar_scale=0.3, between_covar_scale=0.7):
        """Unsupervised adaptation to unlabelled in-domain X (PldaUnsupervisedAdaptor::UpdatePlda).

        Afterwards ``adapt_eigenvalues_`` (s), ``adapt_within_``/``adapt_between_`` (the
        projected within/between variances per eigen-direction, before adding the excess) hold
        what Kaldi logs. ``offset_`` is recomputed (Kaldi does it when the model is re-read).
        """
        X = _check_finite(X, "X")
        if X.shape[0] == 0:
            raise ValueError("No adaptation vectors, unable to adapt PLDA.")
        if X.shape[1] != self.dim:
            raise ValueError("Adaptation vectors have dimension %d but the PLDA has %d"
                             % (X.shape[1], self.dim))
        if mean_diff_scale < 0:
            raise ValueError("--mean-diff-scale must be >= 0, got %g" % mean_diff_scale)
        mean = X.mean(axis=0)
        centred = X - mean
        variance = centred.T @ centred / X.shape[0]
        mean_diff = mean - self.mean_
        variance += mean_diff_scale * np.outer(mean_diff, mean_diff)

        transform_mod = self.transform_ / np.sqrt(1.0 + self.psi_)[:, None]
        s, P = _sorted_eigh(transform_mod @ variance @ transform_mod.T)
        within_proj = (P.T * (1.0 / (1.0 + self.psi_))) @ P
        between_proj = (P.T * (self.psi_ / (1.0 + self.psi_))) @ P
        self.adapt_eigenvalues_ = s
        self.adapt_within_ = np.diag(within_proj).copy()
        self.adapt_between_ = np.diag(between_proj).copy()
        excess = np.where(s > 1.0, s - 1.0, 0.0)
        within_proj[np.diag_indices(self.dim)] += excess * within_covar_scale
        between_proj[np.diag_indices(self.dim)] += excess * between_covar_scale

        combined_inv = np.linalg.inv(P.T @ transform_mod)
        within_mod = combined_inv @ within_proj @ combined_inv.T
        between_mod = combined_inv @ between_proj @ combined_inv.T
        chol_inv = _normalizing_transform(within_mod, "Adapted within-class covariance")
        psi, Q = _sorted_eigh(chol_inv @ between_mod @ chol_inv.T)
        self.mean_ = mean
        self.transform_ = Q.T @ chol_inv
        self.psi_ = psi
        self._compute_derived()
        return self

    def smooth_within(self, smoothing_factor):
        """Add smoothing_factor x between-class to within-class covariance
        (Plda::SmoothWithinClassCovariance)."""
        if not 0.0 <= smoothing_factor <= 1.0:
            raise ValueError("Smoothing factor must be in [0, 1], got %g" % smoothing_factor)
        within = 1.0 + smoothing_factor * self.psi_
        self.psi_ = self.psi_ / within
        self.transform_ = self.transform_ * apply_pow(within, -0.5)[:, None]
        self._compute_derived()
        return self

    # -- application --------------------------------------------------------------------------
    def _check_dim(self, X, name):
        X = _check_finite(X, name)
        if X.shape[1] != self.dim:
            raise ValueError("%s have dimension %d but the PLDA model has dimension %d"
                             % (name, X.shape[1], self.dim))
        return X

    def transform(self, X, num_utts=1, normalize_length=True, simple_length_norm=False):
        """Map rows of X into the PLDA space (Plda::TransformIvector); returns (U, factors).

        factors = sqrt(D / sum_i u_i^2 / (psi_i + 1/n)), or sqrt(D)/|u| with
        simple_length_norm; applied only if normalize_length, returned either way.
        """
        X = self._check_dim(X, "Vectors")
        U = X @ self.transform_.T
        U += self.offset_
        num_utts = np.broadcast_to(np.asarray(num_utts, dtype=np.float64), (X.shape[0],))
        if np.any(num_utts < 1):
            raise ValueError("Number of utterances must be >= 1")
        if simple_length_norm:
            factors = np.sqrt(self.dim) / np.linalg.norm(U, axis=1)
        else:      # a block of rows at a time: the same row sums, no n x dim temporaries
            factors = np.empty(U.shape[0])
            rows = max(64, (1 << 20) // max(1, self.dim))
            for a in range(0, U.shape[0], rows):
                inv_covar = 1.0 / (self.psi_[None, :] + 1.0 / num_utts[a:a + rows, None])
                block = U[a:a + rows]
                factors[a:a + rows] = np.sqrt(self.dim / np.einsum("ij,ij->i", block * block,
                                                                   inv_covar))
        if normalize_length:
            U *= factors[:, None]
        return U, factors

    def log_likelihood_ratio(self, U_enroll, U_test, num_utts=1):
        """LLR of paired rows of transformed vectors (Plda::LogLikelihoodRatio); n = num_utts."""
        U_enroll = np.asarray(U_enroll, dtype=np.float64)
        U_test = np.asarray(U_test, dtype=np.float64)
        n = np.broadcast_to(np.asarray(num_utts, dtype=np.float64),
                            (U_enroll.shape[0],))[:, None]
        psi = self.psi_[None, :]
        mean = n * psi / (n * psi + 1.0) * U_enroll
        variance = 1.0 + psi / (n * psi + 1.0)
        given = -0.5 * (np.log(variance).sum(axis=1) + _LOG_2PI * self.dim
                        + ((U_test - mean) ** 2 / variance).sum(axis=1))
        total = 1.0 + self.psi_
        without = -0.5 * (np.log(total).sum() + _LOG_2PI * self.dim
                          + (U_test ** 2 / total).sum(axis=1))
        return given - without

    def score_pairs(self, U_enroll, U_test, enroll_index, test_index, num_utts=1,
                    block_size=None, dense_limit=None):
        """LLRs for trials (U_enroll[enroll_index[k]], U_test[test_index[k]]).

        Same value as ``log_likelihood_ratio`` on gathered rows, written as
        LLR = c_e + <p_e, v_t> + q_t(n_e), where q_t(n) = <g(n), v_t^2> is tabulated per distinct
        n. A dense product over the distinct enrollment and test vectors when that grid has at
        most ``dense_limit`` cells (default: 4 per trial + 65536), otherwise row-wise dot
        products in blocks of ``block_size`` trials (blocked.row_dots); never a loop over
        trials.
        """
        U_enroll = np.asarray(U_enroll, dtype=np.float64)
        U_test = np.asarray(U_test)
        if U_test.dtype != np.float32:  # float32 rows are gathered as such (half the traffic)
            U_test = np.asarray(U_test, dtype=np.float64)
        enroll_index = np.asarray(enroll_index, dtype=np.intp)
        test_index = np.asarray(test_index, dtype=np.intp)
        n = np.broadcast_to(np.asarray(num_utts, dtype=np.float64), (U_enroll.shape[0],))
        n_values, n_of_enroll = np.unique(n, return_inverse=True)
        psi = self.psi_[None, :]
        # per enrollment row, a block of rows at a time (the same element-wise arithmetic and
        # row sums: the same bits; no temporaries of n x dim beyond enroll_lin itself)
        enroll_const = np.empty(U_enroll.shape[0])
        enroll_lin = np.empty_like(U_enroll)
        rows = max(64, (1 << 20) // max(1, self.dim))
        for a in range(0, U_enroll.shape[0], rows):
            nb = n[a:a + rows, None]
            gain = nb * psi / (nb * psi + 1.0)
            inv_var = 1.0 / (1.0 + psi / (nb * psi + 1.0))
            enroll_const[a:a + rows] = 0.5 * (
                np.log(inv_var).sum(axis=1) + np.log(1.0 + self.psi_).sum()
                - ((gain * U_enroll[a:a + rows]) ** 2 * inv_var).sum(axis=1))
            enroll_lin[a:a + rows] = gain * inv_var * U_enroll[a:a + rows]
        nv = n_values[:, None]
        quad_coef = 0.5 * (1.0 / (1.0 + psi) - 1.0 / (1.0 + psi / (nv * psi + 1.0)))
        test_sq = np.square(U_test, dtype=np.float64)
        test_quad = test_sq @ quad_coef.T                # q_t(n), one column per distinct n
        del test_sq

        num_trials = enroll_index.shape[0]
        limit = 4 * num_trials + 65536 if dense_limit is None else dense_limit
        lin = blocked.row_dots(enroll_lin, U_test, enroll_index, test_index, limit, block_size)
        return enroll_const[enroll_index] + lin + test_quad[test_index,
                                                            n_of_enroll[enroll_index]]
