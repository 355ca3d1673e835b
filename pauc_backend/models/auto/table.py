"""The training table of pAUCMetric (auto): every training vector with its speaker, and the
cross-fitting subset (models.crossfit.crossfit_rows) as the cross-fitting reads it.

``TrainingTable.of(X, y, groups)`` wraps arrays given from Python (checked as AutoBackend.fit
always checked them; the subset is drawn from ``y`` when the cross-fitting asks for it, and
named by rows of X: no copy). train-pauc-auto builds one while it reads its input in one
pass (cli/framework/training_table.py): the subset is decided from the speaker table before
any vector is read, its vectors are gathered into their own array as they pass, and the
whole table is either held (an array) or, beyond the in-memory bound, spooled to an
unlinked temporary file (models.row_table.SpooledRows) that the final training reads a block
at a time. The cross-fitting only ever sees the subset; the final model (mean, LDA, PLDA
statistics, the discriminative PLDA's trials, the AS-norm cohort, the pAUCMetrics' bounded
sample, the domain statistics; models.backend_pipeline, models.domain) reads the whole
table in blocks, held or spooled alike, so both give the same bits.
"""

import numpy as np

from pauc_backend.models import blocked
from pauc_backend.models.crossfit import crossfit_rows

__all__ = ["TrainingTable", "as_table"]


class TrainingTable:
    """Training vectors ``X`` ((n, D) float32: an array, or rows read on demand,
    models.row_table), their speaker labels ``y`` (n,), optional ``groups`` (n,) (e.g. the
    recording stretch of each vector; models.crossfit), and, when the cross-fitting subset
    was decided and gathered while reading, ``subset = (rows, text, drawn)`` (rows of X, the
    sentence of crossfit_rows, the (max_speakers, max_vectors, seed) it was drawn with) with
    ``subset_X`` (the vectors X[rows], an array). ``durations``: seconds of each vector
    (utt2dur) when the reader was given them, else None."""

    durations = None

    def __init__(self, X, y, groups=None, subset=None, subset_X=None):
        self.X, self.y, self.groups = X, np.asarray(y), groups
        self.subset, self.subset_X = subset, subset_X

    @classmethod
    def of(cls, X, y, groups=None):
        """A table of arrays (or of a table of rows and labels), checked: ValueError naming
        the problem (the shape, the labels, the first row with NaN or Inf, the groups)."""
        if not blocked.is_table(X):
            X = np.asarray(X)
            if X.dtype != np.float32:
                X = X.astype(np.float32)
        y = np.asarray(y)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError("expected a non-empty 2-D array of vectors, got shape %s"
                             % (X.shape,))
        if y.shape != (X.shape[0],):
            raise ValueError("%d vectors but %d speaker labels" % (X.shape[0], y.size))
        bad = blocked.first_nonfinite(X)
        if bad is not None:
            raise ValueError("vector %d contains NaN or Inf" % bad)
        if groups is not None and np.asarray(groups).shape != y.shape:
            raise ValueError("groups must have one entry per vector")
        return cls(X, y, groups)

    @property
    def shape(self):
        return self.X.shape

    @property
    def num_speakers(self):
        return int(np.unique(self.y).size)

    @property
    def in_memory(self):
        return not blocked.is_table(self.X)

    def crossfit(self, max_speakers, max_vectors, seed):
        """The cross-fitting's data: ``(X, y, groups, rows, text)``, where ``rows`` are the
        subset's rows of these X, y and groups (crossfit_rows' rule), ``text`` says what was
        kept. Arrays given from Python: the whole table with the subset's rows (no copy).
        A subset gathered while reading: that array, all its rows. Otherwise (a spooled
        table with a subset drawn here) its rows are read into an array."""
        drawn = (int(max_speakers), int(max_vectors), int(seed))
        if self.subset is None or self.subset[2] != drawn:
            rows, text = crossfit_rows(self.y, *drawn)
            self.subset, self.subset_X = (rows, text, drawn), None
        rows, text, _ = self.subset
        if self.subset_X is None and self.in_memory:
            return self.X, self.y, self.groups, rows, text
        if self.subset_X is None:
            self.subset_X = self.X[rows]
        groups = None if self.groups is None else np.asarray(self.groups)[rows]
        return self.subset_X, self.y[rows], groups, np.arange(rows.size), text

    def release_subset(self):
        """Drop the gathered subset of a spooled table once the cross-fitting is over (it is
        read again from the spool if asked for); a table held in memory keeps none."""
        if not self.in_memory:
            self.subset_X = None

    def of_crossfit(self, values, crossfit_X):
        """``values`` (one per vector of the table) of the rows of ``crossfit_X`` (what
        ``crossfit`` returned)."""
        if crossfit_X is self.X:
            return values
        return np.asarray(values)[self.subset[0]]

    def fold_of_vector(self, fold_of_row, crossfit_X):
        """The fold of every vector of the table (-1 outside the subset) from the fold of
        every row of ``crossfit_X`` (what ``crossfit`` returned)."""
        if crossfit_X is self.X:
            return fold_of_row
        out = np.full(self.X.shape[0], -1, dtype=np.intp)
        out[self.subset[0]] = fold_of_row
        return out


def as_table(X, y=None, groups=None):
    """``X`` itself when it is a TrainingTable, else ``TrainingTable.of(X, y, groups)``."""
    if isinstance(X, TrainingTable):
        return X
    return TrainingTable.of(X, y, groups)
