"""How far the vectors being scored lie from a back-end's training data (a domain check).

Cross-fitting on the training speakers cannot see a domain mismatch; the vectors being scored
can. The measure is the shift of their mean from the training mean in units of the training
within-speaker spread, per dimension:

    z = W (x - m),   shift = sqrt( max(0, |mean(z)|^2 - tr(cov(z)) / n) / d )

where m is the training mean and W whitens the training within-class covariance (W S_w W^T =
I; for a Kaldi PLDA, m = mean_ and W = transform_, Plda::TransformIvector before its length
normalisation). |mean(z)|^2 / d is the squared Mahalanobis distance under the within-class
covariance, per dimension; tr(cov(z)) / n removes its expected value when the scored vectors
are independent draws around the training mean (the sampling noise of n vectors). It is one
pass of sums (``ShiftAccumulator``: count, sum and sum of squares per dimension), O(d) memory.

Threshold: OUT_OF_DOMAIN_SHIFT = 0.4, from benchmarks/domain_shift.py (2026-11-26, load 8-11 on
2 cores): each data set's own back-end is trained on its training speakers (training mean, LDA,
length norm, Kaldi PLDA, as recipes/common/steps/train_backend.sh) and the evaluation vectors
are prepared as the recipes feed score-plda-trials (centred on the training mean; enrollment
and test vectors pooled, as the tool measures them). Raw space: ``TrainingDomain.fit`` on the
raw training vectors.

=============================================  ==========  =========
evaluation vectors (back-end's training set)   PLDA space  raw space
=============================================  ==========  =========
demo test + enroll, seed 777 (out of domain)   0.787       0.973
demo, PLDA adapted to adapt/ (adapt-plda)      0.080       -
ETRI test + enroll (118 training speakers)     0.089       0.060
TIMIT GE2E eval (504 training speakers)        0.146       0.144
=============================================  ==========  =========

0.4 lies between the two groups with a margin of about 2x on each side (0.787 / 0.4 and
0.4 / 0.146). The in-domain value is mostly the spread of the evaluation speakers' own mean
(it falls as 1/sqrt(speakers)): on the test vectors of random subsets of the evaluation
speakers (200 draws) TIMIT gave at most 0.359 with 20 speakers and 0.467 with 10 (95th
percentile 0.387), ETRI at most 0.292 and 0.470 (0.344); the demo's test speakers stayed above
0.72 in every subset of 5 or more. So a scored set of fewer than ~20 speakers can be warned
about in error. The spread of the scored vectors (trace of their whitened covariance against
the training's, an exploratory run on the test vectors alone) was measured too and not used: it
does not separate the demo from ETRI and TIMIT once the mean is removed (0.995 against 0.998
and 0.966), and it flags the adapted PLDA (0.63), which is the remedy.

What the measure cannot see: vectors already centred on an in-domain mean (egs/sre16/v2's
mean.vec, the demo recipe's) have no mean shift left (0.111 on the demo, below TIMIT's 0.146);
what remains is a covariance mismatch, which only an in-domain set (adapt-plda,
train-pauc-auto --adapt) corrects.

numpy only; ``TrainingDomain`` follows scikit-learn's conventions (``fit`` returns self,
learned attributes ``mean_`` and ``whitener_``).
"""

import numpy as np

OUT_OF_DOMAIN_SHIFT = 0.4
BLOCK_ROWS = 1 << 16    # rows whitened at once by TrainingDomain.add (BLOCK_ROWS x d float64)
FIT_ROWS = 1 << 13      # rows of a block of TrainingDomain.fit (33 MB of float64 at d = 512)


class ShiftAccumulator:
    """Count, sum and sum of squares per dimension of whitened rows z = W (x - m): one pass,
    O(d) memory; ``value()`` is the module's shift."""

    def __init__(self, dim):
        self.count = 0
        self.total = np.zeros(dim)
        self.total_sq = np.zeros(dim)

    def add(self, Z, row_scale=None):
        """Add rows already whitened (e.g. PLDA-space vectors before length normalisation);
        with ``row_scale`` each row is first divided by its entry (e.g. the factors of
        Plda::TransformIvector's length normalisation, to undo it), in blocks of BLOCK_ROWS."""
        Z = np.asarray(Z)
        if Z.ndim != 2 or Z.shape[1] != self.total.size:
            raise ValueError("expected rows of dimension %d, got shape %s"
                             % (self.total.size, Z.shape))
        for start in range(0, Z.shape[0], BLOCK_ROWS):
            block = Z[start:start + BLOCK_ROWS]
            if row_scale is not None:
                block = block / np.asarray(row_scale[start:start + BLOCK_ROWS])[:, None]
            self.count += block.shape[0]
            self.total += block.sum(axis=0, dtype=np.float64)
            self.total_sq += np.einsum("ij,ij->j", block, block, dtype=np.float64)
        return self

    def value(self):
        """sqrt(max(0, |mean|^2 - tr(cov) / n) / d); nan for fewer than 2 rows."""
        n, d = self.count, self.total.size
        if n < 2 or d == 0:
            return float("nan")
        mean = self.total / n
        squared = float(mean @ mean)
        trace = float((self.total_sq - n * mean * mean).sum()) / (n - 1)
        return float(np.sqrt(max(0.0, squared - trace / n) / d))


def _row_sum(X, rows=4096):
    """``X.sum(axis=0, dtype=float64)`` of an array or a table of rows, the same bits: row
    after row (numpy reduces a C-contiguous (N, D) array along axis 0 so), the running total
    carried as the first row of each block's reduction."""
    total = np.zeros(X.shape[1])
    buffer = np.empty((rows + 1, X.shape[1]))
    for start in range(0, X.shape[0], rows):
        block = X[start:start + rows]
        part = buffer[:block.shape[0] + 1]
        part[0] = total
        part[1:] = block
        total = np.add.reduce(part, axis=0)
    return total


def is_out_of_domain(shift):
    """Whether a shift (``ShiftAccumulator.value``) is above OUT_OF_DOMAIN_SHIFT (nan: no)."""
    return bool(shift > OUT_OF_DOMAIN_SHIFT)


class TrainingDomain:
    """A back-end's training mean ``mean_`` and within-class whitening ``whitener_`` (rows:
    W with W S_w W^T = I), and the domain shift of vectors against them.

    ``floor``: eigenvalues of the within-class covariance below ``floor`` x their mean are
    raised to it, so that directions the training data never varies in (unit-length GE2E
    d-vectors have such) do not divide by ~0. TIMIT's raw-space shift was 0.14 for every floor
    from 1e-4 to 1e-1.
    """

    def __init__(self, floor=1e-3):
        self.floor = floor

    @classmethod
    def from_params(cls, mean, whitener):
        """From stored statistics, e.g. ``from_params(plda.mean_, plda.transform_)``."""
        model = cls()
        model.mean_ = np.asarray(mean, dtype=np.float64).ravel()
        model.whitener_ = np.asarray(whitener, dtype=np.float64)
        if model.whitener_.ndim != 2 or model.whitener_.shape[1] != model.mean_.size:
            raise ValueError("whitener of shape %s does not fit a mean of dimension %d"
                             % (model.whitener_.shape, model.mean_.size))
        return model

    @classmethod
    def from_plda(cls, plda):
        """The statistics a Kaldi PLDA holds (Plda mean_, transform_)."""
        return cls.from_params(plda.mean_, plda.transform_)

    def fit(self, X, y):
        """Training mean and within-class whitening from vectors X (N x D, an array or a
        table of rows read on demand, models.row_table) with speaker labels y, a block of
        rows at a time; classes of one vector add nothing to the within-class scatter."""
        X = X if hasattr(X, "read_rows") else np.asarray(X)   # or rows read on demand
        _, codes, counts = np.unique(np.asarray(y), return_inverse=True, return_counts=True)
        codes = codes.ravel()
        if X.ndim != 2 or X.shape[0] != codes.size:
            raise ValueError("X must be N x D with one label per row")
        if X.shape[0] <= counts.size:
            raise ValueError("no within-class variation: %d vectors of %d speakers"
                             % (X.shape[0], counts.size))
        dim = X.shape[1]
        mean = _row_sum(X) / X.shape[0]
        scatter = np.zeros((dim, dim))
        class_sums = np.zeros((counts.size, dim))
        for start in range(0, X.shape[0], FIT_ROWS):
            block = X[start:start + FIT_ROWS].astype(np.float64)
            block -= mean
            scatter += block.T @ block
            np.add.at(class_sums, codes[start:start + FIT_ROWS], block)
        between = (class_sums / counts[:, None]).T @ class_sums
        within = (scatter - between) / (X.shape[0] - counts.size)
        values, vectors = np.linalg.eigh(0.5 * (within + within.T))
        values = np.maximum(values, self.floor * max(values.mean(), np.finfo(float).tiny))
        self.mean_ = mean
        self.whitener_ = (vectors / np.sqrt(values)).T
        return self

    def accumulator(self):
        return ShiftAccumulator(self.whitener_.shape[0])

    def add(self, accumulator, X):
        """Whiten rows of X (raw vectors) in blocks of BLOCK_ROWS into ``accumulator``."""
        X = np.asarray(X)
        for start in range(0, X.shape[0], BLOCK_ROWS):
            block = X[start:start + BLOCK_ROWS].astype(np.float64) - self.mean_
            accumulator.add(block @ self.whitener_.T)
        return accumulator

    def shift(self, *tables):
        """The shift of the rows of all ``tables`` together (see the module docstring)."""
        accumulator = self.accumulator()
        for X in tables:
            self.add(accumulator, X)
        return accumulator.value()
