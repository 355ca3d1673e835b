"""The held-out scores of pAUCMetric (auto)'s cross-fitting, reduced to what the rating needs.

A fold task (one LDA dimension, one fold; models.auto.folds) returns, for each system it
cross-fitted, its held-out FIGURES on that fold (pAUC, EER, minDCF: a few numbers) and, only
for the systems that a fusion candidate still has to be rated with, its held-out SCORES, as
float32 (the ranking permits it: float32 keeps 7 significant digits, so a figure moves only
where a target and a non-target score agree to 6e-8 relative; the paired differences the
selection relies on are 1e-3 and more). The store keeps

* per (dimension, system): the figures of every fold (candidates out of the running are
  known by these alone);
* per (dimension, fold): the score columns still needed, dimension-free systems (raw cosine)
  once, under ``FREE``;

rates a candidate as soon as every fold of what it needs is in (``rate``), and releases the
columns of a dimension once nothing left to rate needs them (``release``); ``clear`` releases
everything when the model is fitted. What stays after the fit is the table of figures
(``AutoBackend.cv_results_``).

Memory: at most the columns of one stage at one dimension (the stages of the metrics: their
systems x folds x held-out trials x 4 bytes; 13 columns (9 systems, 4 lambdas of the
discriminative PLDA until one is chosen) x 5 folds x 1.5 M trials = 390 MB at the default
``max_trials``, less with fewer held-out speakers), plus the figures.
"""

import numpy as np

from pauc_backend.models.systems import dim_free
from pauc_backend.models.calibration import LinearFusion, SeparableScoresError
from pauc_backend.models.crossfit import trial_figures

__all__ = ["FREE", "HeldOutStore", "fit_fusion"]

FREE = "free"            # the dimension key of dimension-free systems' columns and figures


def fusion_rows(labels, limit, seed):
    """The trials a fusion is trained on: all (None) up to ``limit`` (0: no limit), else every
    target and a seeded uniform subsample of the non-targets (sorted indices). The objective
    weights each class by 1/count, so a uniform subsample of one class leaves it unbiased."""
    if not limit or labels.size <= limit:
        return None
    non = np.flatnonzero(~labels)
    keep_non = max(1, int(limit) - int(labels.sum()))
    if keep_non >= non.size:
        return None
    rng = np.random.default_rng(seed)
    return np.sort(np.concatenate([np.flatnonzero(labels),
                                   rng.choice(non, keep_non, replace=False)]))


def fit_fusion(scores, labels, prior, regularization, limit, seed):
    """LinearFusion on held-out scores, on the trials of ``fusion_rows``."""
    rows = fusion_rows(labels, limit, seed)
    if rows is not None:
        scores, labels = scores[rows], labels[rows]
    return LinearFusion(prior=prior, regularization=regularization).fit(
        np.asarray(scores, dtype=np.float64), labels)


class HeldOutStore:
    """Figures and the score columns still needed, per fold; see the module doc.

    labels: the is_target array of each fold's held-out trials. alpha, beta: the pAUC band.
    """

    def __init__(self, labels, alpha, beta):
        self.labels = list(labels)
        self.num_folds = len(self.labels)
        self.alpha, self.beta = alpha, beta
        self.figures = {}          # (dim key, system) -> {fold: figures}
        self.columns = {}          # (dim key, fold) -> {system: float32 scores}

    @staticmethod
    def key(dim, system):
        return FREE if dim_free((system.split("@")[0],)) else dim

    # -- filling -----------------------------------------------------------------------------
    def add(self, dim, fold, figures, columns):
        """A fold task's figures {system: figures} and kept columns {system: scores}."""
        for name, fig in figures.items():
            self.figures.setdefault((self.key(dim, name), name), {})[fold] = fig
        for name, col in columns.items():
            col = np.asarray(col, dtype=np.float32)
            if col.shape != self.labels[fold].shape:
                raise ValueError("fold %d: %s has %d held-out scores for %d trials"
                                 % (fold + 1, name, col.size, self.labels[fold].size))
            self.columns.setdefault((self.key(dim, name), fold), {})[name] = col

    def _folds(self, folds):
        return range(self.num_folds) if folds is None else folds

    def has_figures(self, dim, system, folds=None):
        got = self.figures.get((self.key(dim, system), system), {})
        return all(k in got for k in self._folds(folds))

    def has_columns(self, dim, systems, folds=None):
        return all(name in self.columns.get((self.key(dim, name), k), {})
                   for name in systems for k in self._folds(folds))

    def fold_figures(self, dim, system, folds=None):
        got = self.figures[self.key(dim, system), system]
        return [got[k] for k in self._folds(folds)]

    def column(self, fold, dim, system):
        return self.columns[self.key(dim, system), fold][system]

    def stack(self, fold, dim, systems):
        """(trials, len(systems)) float64 scores of ``systems`` on ``fold``'s trials."""
        return np.stack([self.column(fold, dim, s) for s in systems], axis=1).astype(np.float64)

    def alias(self, dim, old, new):
        """Store ``old``'s figures and columns (its folds) under the name ``new`` too."""
        self.figures.setdefault((self.key(dim, new), new), {}).update(
            self.figures[self.key(dim, old), old])
        for k in range(self.num_folds):
            cols = self.columns.get((self.key(dim, old), k), {})
            if old in cols:
                self.columns.setdefault((self.key(dim, new), k), {})[new] = cols[old]

    def drop(self, dim, names):
        for name in names:
            self.figures.pop((self.key(dim, name), name), None)
            for k in range(self.num_folds):
                self.columns.get((self.key(dim, name), k), {}).pop(name, None)

    # -- rating ------------------------------------------------------------------------------
    def can_rate(self, dim, members, folds=None):
        if len(members) == 1:
            return self.has_figures(dim, members[0], folds)
        return self.has_columns(dim, members, folds)

    def rate(self, dim, members, fusion, limit, seed, folds=None):
        """Held-out figures of the candidate ``members`` at ``dim`` on each of ``folds``
        (None: all): a single system's from the store; a fusion's cross-fitted among them
        (the fusion scoring fold k trained on at most ``limit`` held-out trials of the other
        folds, ``fusion_rows``: ``fusion(scores, labels)``). None when a fusion cannot be
        trained (separable or degenerate scores)."""
        folds = list(self._folds(folds))
        if len(members) == 1:
            return self.fold_figures(dim, members[0], folds)
        out = []
        for k in folds:
            others = [j for j in folds if j != k]
            train, labels = self.gathered(others, dim, members, limit, seed)
            try:
                fused = fusion(train, labels).transform(self.stack(k, dim, members))
            except (SeparableScoresError, ValueError):
                return None
            out.append(trial_figures(fused, self.labels[k], self.alpha, self.beta))
        return out

    def gathered(self, folds, dim, members, limit, seed):
        """(scores of ``members`` at ``dim``, labels) of the trials of ``folds`` pooled, only
        the ``fusion_rows`` of them: the same rows as subsampling the pooled array, without
        building it (at the paper's scale 5 folds x 1.5 M trials x 6 members x 8 bytes)."""
        folds = tuple(folds)
        labels = np.concatenate([self.labels[j] for j in folds])
        cache = self.__dict__.setdefault("_fusion_rows", {})
        if (folds, limit, seed) not in cache:      # the same for every candidate
            cache[folds, limit, seed] = fusion_rows(labels, limit, seed)
        rows = cache[folds, limit, seed]
        if rows is None:
            return np.concatenate([self.stack(j, dim, members) for j in folds]), labels
        sizes = np.cumsum([0] + [self.labels[j].size for j in folds])
        parts = []
        for i, j in enumerate(folds):
            mine = rows[(rows >= sizes[i]) & (rows < sizes[i + 1])] - sizes[i]
            parts.append(np.stack([self.column(j, dim, s)[mine] for s in members], axis=1))
        return np.concatenate(parts).astype(np.float64), labels[rows]

    def pooled(self, dim, members, limit=0, seed=0):
        """(held-out scores of ``members`` at ``dim`` of every fold, their labels), only the
        ``fusion_rows`` of them at most ``limit``."""
        return self.gathered(range(self.num_folds), dim, members, limit, seed)

    def pooled_trials(self, limit=0, seed=0):
        """(fold, trial index within it) of each trial ``pooled(dim, members, limit, seed)``
        returns, in its order (for the quality measures of those trials)."""
        folds = tuple(range(self.num_folds))
        labels = np.concatenate([self.labels[j] for j in folds])
        cache = self.__dict__.setdefault("_fusion_rows", {})
        if (folds, limit, seed) not in cache:
            cache[folds, limit, seed] = fusion_rows(labels, limit, seed)
        rows = cache[folds, limit, seed]
        rows = np.arange(labels.size) if rows is None else rows
        sizes = np.cumsum([0] + [self.labels[j].size for j in folds])
        fold = np.searchsorted(sizes, rows, side="right") - 1
        return fold, rows - sizes[fold]

    # -- releasing ---------------------------------------------------------------------------
    def release(self, dim, keep=()):
        """Drop the columns of ``dim`` (and of the dimension-free systems not in ``keep``)."""
        for k in range(self.num_folds):
            self.columns.pop((dim, k), None)
            free = self.columns.get((FREE, k))
            if free:
                for name in [n for n in free if n not in keep]:
                    del free[name]

    def clear(self):
        """Release every column (the figures stay in cv_results_)."""
        self.columns.clear()

    def nbytes(self):
        return sum(c.nbytes for cols in self.columns.values() for c in cols.values())
