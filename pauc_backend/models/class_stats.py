"""Statistics of labelled vectors accumulated as they stream in, for LDA and PLDA (numpy only).

Kaldi's ivector-compute-lda holds every vector in memory before ``ComputeAndSubtractMean`` and
``CovarianceStats::AccStats``; ivector-compute-plda reads them by key and feeds
``PldaStats::AddSamples`` one speaker at a time. Both estimators only need, in double: the number
of vectors and their sum, the sum and count of each class, and the scatter ``sum x x^T``.
``ClassStats.add(X_block, labels_block)`` accumulates these a block at a time, in any order of
classes (a class may be spread over many blocks), so a table of any size is used in memory
bounded by D x D and (classes x D) doubles; ``LDA.fit_stats`` and ``PLDA.fit_stats`` turn them
into the models, ``merge`` adds the statistics of another part of the data (e.g. of other
folds: the statistics of a training fold are the merge of the others').

Numerics: ``sum x x^T - N m m^T`` in one pass loses about ``log10(|m|^2 / variance)`` of the
16 digits of a double when the mean m is far from zero. Every sum here is of ``x - r``, where the
reference r (``reference_``) is the float64 mean of the first block added: the scatter about r
differs from the scatter about the mean by ``N d d^T`` with ``d = mean - r``, which is of the
order of the data's spread, not of its offset, so nothing large cancels (tested against a
two-pass reference on vectors offset by 1e4 times their spread). Float32 input is upcast a
block of ``blocked.block_rows`` rows at a time (exact), never as a whole.
"""

import numpy as np

from pauc_backend.models import blocked


class NonFiniteRowError(ValueError):
    """A row of a block given to ``ClassStats.add`` contains NaN or infinity; ``row`` is its
    position in that block (nothing of the block was added)."""

    def __init__(self, row):
        super().__init__("row %d of the block contains NaN or infinity" % row)
        self.row = row


class ClassStats:
    """Sufficient statistics of vectors with integer class labels (Kaldi's CovarianceStats and
    PldaStats, streamed).

    ``add(X, labels)``: X (n, D) float32 or float64, labels (n,) integers >= 0 (class
    indices; the arrays grow to the largest label seen). ``reference``: the point the sums
    are taken about (default: the mean of the first block added; zero suits vectors that are
    already centred, as Kaldi's CovarianceStats takes them); ``num_classes``: the number of
    classes when known (the per-class arrays are then allocated once, at that size).
    Attributes after the first ``add``: ``dim_``, ``count_`` (N), ``reference_`` (r,
    float64), ``sum_`` (``sum (x - r)``), ``scatter_`` (``sum (x - r)(x - r)^T``),
    ``class_sums_`` ((K, D), ``sum (x - r)`` per class) and ``class_counts_`` (K,). A class
    whose count is 0 (a label never seen) takes no part in any estimate. Not thread-safe: one
    object per thread, then ``merge``.
    """

    def __init__(self, reference=None, num_classes=0):
        self.dim_ = None
        self.count_ = 0
        self.sum_ = self.scatter_ = None
        self.reference_ = None if reference is None else np.array(reference, dtype=np.float64)
        self.class_sums_ = np.zeros((0, 0))
        self.class_counts_ = np.zeros(0, dtype=np.int64)
        self._work = None
        self._num_classes = int(num_classes)  # the arrays' size at the first add

    # -- accumulation --------------------------------------------------------------------------
    def add(self, X, labels):
        """Add the rows of X with their class labels; returns self.

        Atomic: a block with a NaN or infinity (``NonFiniteRowError``, naming its row), a
        wrong shape or bad labels (``ValueError``) leaves the statistics as they were.
        """
        X = np.asarray(X)
        labels = np.asarray(labels)
        if X.ndim != 2:
            raise ValueError("ClassStats.add: X must be 2-D (one vector per row), got shape %s"
                             % (X.shape,))
        if not np.issubdtype(X.dtype, np.floating):
            X = X.astype(np.float64)
        if labels.shape != (X.shape[0],):
            raise ValueError("ClassStats.add: %d vectors but labels of shape %s"
                             % (X.shape[0], labels.shape))
        if self.dim_ is not None and X.shape[1] != self.dim_:
            raise ValueError("ClassStats.add: vectors of dimension %d after %d"
                             % (X.shape[1], self.dim_))
        if X.shape[0] == 0:
            return self
        if not np.issubdtype(labels.dtype, np.integer) or labels.min() < 0:
            raise ValueError("ClassStats.add: labels must be integers >= 0")
        if X.shape[1] == 0:
            raise ValueError("ClassStats.add: vectors of dimension 0")
        parts = self._block_stats(X, labels)
        self._commit(X.shape[1], *parts)
        return self

    def _block_stats(self, X, labels):
        """(reference, count, sum, scatter, classes, class sums, class counts) of a block,
        about the reference (the existing one, or this block's first rows' mean)."""
        dim = X.shape[1]
        size = blocked.block_rows(dim)
        reference = self.reference_
        if reference is None:
            first = X[:size].astype(np.float64)
            reference = first.mean(axis=0)
            if not np.isfinite(reference).all():
                raise NonFiniteRowError(int(np.flatnonzero(~np.isfinite(first).all(axis=1))[0]))
        classes, inverse = np.unique(labels, return_inverse=True)
        inverse = inverse.reshape(-1)
        class_counts = np.bincount(inverse, minlength=classes.size)
        class_sums = np.zeros((classes.size, dim))
        total = np.zeros(dim)
        scatter = np.zeros((dim, dim))
        work = self._work
        if work is None or work.shape != (size, dim):
            work = self._work = np.empty((size, dim))  # reused: no allocation per block
        for begin in range(0, X.shape[0], size):
            block = np.subtract(X[begin:begin + size], reference,
                                out=work[:min(size, X.shape[0] - begin)], dtype=np.float64)
            index, order = inverse[begin:begin + size], None
            if index.size > 1 and not (index[1:] >= index[:-1]).all():
                order = np.argsort(index, kind="stable")
                index, block = index[order], block[order]
            # each class's rows summed in order (np.add.reduce along axis 0: row after row);
            # a loop over the block's classes, as np.add.reduceat(axis=0) is ~10x slower
            cuts = np.flatnonzero(index[1:] != index[:-1]) + 1
            bounds = [0] + cuts.tolist() + [index.size]
            parts = np.empty((len(bounds) - 1, dim))
            for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
                np.add.reduce(block[a:b], axis=0, out=parts[i])
            block_sum = parts.sum(axis=0)
            if not np.isfinite(block_sum).all():
                bad = ~np.isfinite(block).all(axis=1)
                row = int(np.flatnonzero(bad)[0])
                raise NonFiniteRowError(begin + (row if order is None else int(order[row])))
            class_sums[index[bounds[:-1]]] += parts
            total += block_sum
            scatter += block.T @ block  # numpy's syrk: one triangle, exactly symmetric
        return reference, X.shape[0], total, scatter, classes, class_sums, class_counts

    def _commit(self, dim, reference, count, total, scatter, classes, class_sums,
                class_counts):
        if self.dim_ is None and self.reference_ is not None \
                and self.reference_.shape != (dim,):
            raise ValueError("ClassStats.add: vectors of dimension %d, reference of %d"
                             % (dim, self.reference_.size))
        if self.dim_ is None:
            self.dim_, self.reference_ = dim, reference
            self.sum_, self.scatter_ = np.zeros(dim), np.zeros((dim, dim))
            self.class_sums_ = np.zeros((0, dim))
            self._grow(self._num_classes, exact=True)
        self._grow(int(classes[-1]) + 1)
        self.count_ += count
        self.sum_ += total
        self.scatter_ += scatter
        self.class_sums_[classes] += class_sums
        self.class_counts_[classes] += class_counts

    def _grow(self, num_classes, exact=False):
        have = self.class_counts_.shape[0]
        if num_classes <= have:
            return
        size = num_classes if exact else max(num_classes, 2 * have)  # amortised: doubling
        sums = np.zeros((size, self.dim_))
        sums[:have] = self.class_sums_[:have]
        counts = np.zeros(size, dtype=np.int64)
        counts[:have] = self.class_counts_[:have]
        self.class_sums_, self.class_counts_ = sums, counts

    def add_table(self, X, labels, rows=None, dtype=None, centre=None):
        """Add a table held in memory or read on demand (``rows``: the rows of X to use, in
        this order, labelled by ``labels``), a bounded block at a time, with no copy of X. ``dtype``: round each
        block to it first (float32: as Kaldi's BaseFloat tables hold them); ``centre``: then
        subtract it in that precision (``x - centre`` rounded as Kaldi's ``AddVec(-1.0,
        mean)`` on float vectors), so the statistics are of the centred vectors. Returns self.
        """
        table = blocked.is_table(X)    # rows read on demand (models.row_table)
        X = X if table else np.asarray(X)
        labels = np.asarray(labels)
        if X.ndim != 2:
            return self.add(X, labels)  # its error
        if (rows is None and (dtype is None or X.dtype == dtype) and centre is None
                and not table):
            return self.add(X, labels)
        count = X.shape[0] if rows is None else len(rows)
        if labels.shape != (count,):
            raise ValueError("ClassStats.add_table: %d rows but labels of shape %s"
                             % (count, labels.shape))
        if rows is not None:
            rows = np.asarray(rows, dtype=np.intp)
        size = blocked.block_rows(X.shape[1])
        for begin in range(0, count, size):
            part = X[begin:begin + size] if rows is None else X[rows[begin:begin + size]]
            if dtype is not None:
                part = part.astype(dtype)
            if centre is not None:
                part = part - centre.astype(part.dtype)
            try:
                self.add(part, labels[begin:begin + size])
            except NonFiniteRowError as err:
                raise NonFiniteRowError(begin + err.row) from None
        return self

    def merge(self, other):
        """Add the statistics of ``other`` (another ClassStats, e.g. of another part of the
        data), moved to this object's reference; returns self. ``other`` is unchanged."""
        if other.dim_ is None:
            return self
        if self.dim_ is None:
            if self.reference_ is None:
                self.reference_ = other.reference_.copy()
            self.dim_ = other.dim_
            self.sum_, self.scatter_ = np.zeros(self.dim_), np.zeros((self.dim_, self.dim_))
            self.class_sums_ = np.zeros((0, self.dim_))
            self._grow(max(self._num_classes, other.class_counts_.shape[0]), exact=True)
        if other.dim_ != self.dim_:
            raise ValueError("ClassStats.merge: dimension %d and %d" % (self.dim_, other.dim_))
        num = other.class_counts_.shape[0]
        self._grow(num)
        self.count_ += other.count_
        self.sum_ += other.sum_
        self.scatter_ += other.scatter_
        self.class_sums_[:num] += other.class_sums_
        self.class_counts_[:num] += other.class_counts_
        # sum (x - r)(x - r)^T = S' + s' e^T + e s'^T + n e e^T, e = r' - r, s' = sum (x - r')
        shift = other.reference_ - self.reference_
        if shift.any():
            cross = np.outer(other.sum_, shift)
            self.scatter_ += cross + cross.T + other.count_ * np.outer(shift, shift)
            self.sum_ += other.count_ * shift
            for begin in range(0, num, 4096):  # bounded temporaries
                end = min(num, begin + 4096)
                self.class_sums_[begin:end] += other.class_counts_[begin:end, None] * shift
        return self

    # -- what the estimators use ---------------------------------------------------------------
    @property
    def num_classes(self):
        """Classes with at least one vector."""
        return int(np.count_nonzero(self.class_counts_))

    def counts(self):
        """Counts of the classes with at least one vector, in label order."""
        return self.class_counts_[self.class_counts_ > 0]

    def _check(self):
        if not self.count_:
            raise ValueError("No vectors accumulated")

    def mean(self):
        """The mean of all vectors (float64)."""
        self._check()
        return self.reference_ + self.sum_ / self.count_

    def class_means(self):
        """(K', D) means of the classes with at least one vector, in label order."""
        self._check()
        keep = self.class_counts_ > 0
        return self.reference_ + self.class_sums_[keep] / self.class_counts_[keep, None]

    def total_scatter(self):
        """``sum_i (x_i - mean)(x_i - mean)^T``."""
        self._check()
        return self.scatter_ - np.outer(self.sum_, self.sum_ / self.count_)

    def between_scatter(self):
        """``sum_c n_c (m_c - mean)(m_c - mean)^T`` (CovarianceStats' between_covar_ about
        the mean)."""
        self._check()
        keep = self.class_counts_ > 0
        sums = self.class_sums_[keep]
        return ((sums / self.class_counts_[keep, None]).T @ sums
                - np.outer(self.sum_, self.sum_ / self.count_))

    def within_scatter(self):
        """``sum_c sum_{i in c} (x_i - m_c)(x_i - m_c)^T`` (PldaStats' offset_scatter_)."""
        self._check()
        keep = self.class_counts_ > 0
        sums = self.class_sums_[keep]
        return self.scatter_ - (sums / self.class_counts_[keep, None]).T @ sums
