"""In-domain trial sets of pAUCMetric (auto): their scores during the cross-fitting and their
rating (models.auto.evidence says what a source is, models.auto.selection how it chooses).

A trial set is labelled trials of the user's domain (a models.auto.dev.DevTrials): the
development trials (--dev-trials), or the trials among the pseudo-speakers of the adaptation
set (models.auto.pseudo). Every fold task scores each set with the models it trained
(models.auto.folds); ``add`` sums each system's scores over the folds (one float64 column per
system and LDA dimension, a fold added once), so a cross-fitted candidate's scores on a set
are its folds' scores averaged. A candidate trained outside the cross-fitting (the
pseudo-trained systems) gives its scores whole (``put``).

``rate`` gives a candidate's row on the set: its figures on the whole list
(models.crossfit.trial_figures) and, under "folds", its pAUC on each of ``resamples`` paired
two-way cluster-bootstrap resamples of the set's speakers (metrics.bootstrap; the
multiplicities are drawn once, so every candidate sees the same resamples and differences are
paired). A fusion's members are fused with weights cross-fitted over groups of the enrolled
speakers (DevTrials.groups): the trials of a group get the weights learned on the others'.
``scores`` gives those scores themselves (the final calibration is learned on them).
"""

import numpy as np

from pauc_backend.metrics.bootstrap import ClusterBootstrap, resample_multiplicities
from pauc_backend.metrics.registry import Setting, columns
from pauc_backend.models.auto.store import FREE
from pauc_backend.models.systems import dim_free
from pauc_backend.models.calibration import SeparableScoresError
from pauc_backend.models.crossfit import trial_figures

__all__ = ["TrialSetScores", "WHOLE"]

WHOLE = "whole"           # the dimension key of the scores given whole (``put``)


class TrialSetScores:
    """Fold sums of one trial set's scores and the rating on them (module doc). ``name``:
    the source's name (models.auto.evidence), ``trials``: a DevTrials."""

    def __init__(self, name, trials, alpha, beta, resamples, seed):
        self.name = name
        self.trials = trials
        self.alpha, self.beta = alpha, beta
        self.sums = {}            # (dim key, system) -> float64 sum over the folds added
        self.folds = {}           # (dim key, system) -> set of folds added
        self.setting = Setting(alpha=alpha, beta=beta)
        self.pauc_column = [c for c in columns(self.setting, weighted=True)
                            if c.metric.key == "pauc"]
        enroll, test = trials.clusters()
        self.codes = (enroll, test)
        self.draws = list(resample_multiplicities(int(seed) + 34, int(resamples),
                                                  int(enroll.max()) + 1, int(test.max()) + 1))
        self.groups = trials.groups(5, seed)

    @staticmethod
    def key(dim, system):
        if dim == WHOLE:
            return WHOLE
        return FREE if dim_free((system.split("@")[0],)) else dim

    @property
    def labels(self):
        return self.trials.is_target

    # -- filling -----------------------------------------------------------------------------
    def add(self, dim, fold, columns):
        """A fold task's scores of the set {system: scores} (each fold once)."""
        for name, col in columns.items():
            key = (self.key(dim, name), name)
            done = self.folds.setdefault(key, set())
            if fold in done:
                continue
            col = np.asarray(col, dtype=np.float64)
            if col.shape != (self.trials.num_trials,):
                raise ValueError("fold %d: %s has %d scores of the %s for %d trials"
                                 % (fold + 1, name, col.size, self.name,
                                    self.trials.num_trials))
            if key in self.sums:
                self.sums[key] += col
            else:
                self.sums[key] = col.copy()
            done.add(fold)

    def put(self, name, scores):
        """The scores of a system trained outside the cross-fitting, whole (dim WHOLE)."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != (self.trials.num_trials,):
            raise ValueError("%s has %d scores of the %s for %d trials"
                             % (name, scores.size, self.name, self.trials.num_trials))
        self.sums[WHOLE, name] = scores
        self.folds[WHOLE, name] = {0}

    def has(self, dim, members):
        return all((self.key(dim, m), m) in self.sums for m in members)

    def column(self, dim, system):
        """The fold-averaged scores of ``system`` at ``dim``."""
        key = (self.key(dim, system), system)
        return self.sums[key] / len(self.folds[key])

    def num_folds(self, dim, members):
        return min(len(self.folds[self.key(dim, m), m]) for m in members)

    def alias(self, dim, old, new):
        key_old, key_new = (self.key(dim, old), old), (self.key(dim, new), new)
        if key_old in self.sums:
            self.sums[key_new] = self.sums[key_old].copy()
            self.folds[key_new] = set(self.folds[key_old])

    def drop(self, dim, names):
        for name in names:
            self.sums.pop((self.key(dim, name), name), None)
            self.folds.pop((self.key(dim, name), name), None)

    def names_at(self, dim):
        return [name for (key, name) in self.sums if key == self.key(dim, name)
                and (key == dim or key == FREE)]

    def release(self, dim, keep=()):
        """Drop the sums of ``dim`` (and of dimension-free systems not in ``keep``)."""
        for key in [k for k in self.sums if k[0] == dim or (k[0] == FREE and k[1] not in keep)]:
            del self.sums[key]
            del self.folds[key]

    def clear(self):
        self.sums.clear()
        self.folds.clear()

    # -- rating ------------------------------------------------------------------------------
    def scores(self, dim, members, fusion):
        """The scores of a candidate on the set: its member's, or its members' fused with
        weights cross-fitted over the enrolled speakers' groups; None when the fusion cannot
        be trained (too few enrolled speakers, separable or degenerate scores)."""
        if len(members) == 1:
            return self.column(dim, members[0])
        if self.groups is None:
            return None
        X = np.column_stack([self.column(dim, m) for m in members])
        labels = self.labels
        out = np.empty(labels.size)
        for g in range(int(self.groups.max()) + 1):
            held = self.groups == g
            try:
                out[held] = fusion(X[~held], labels[~held]).transform(X[held])
            except (SeparableScoresError, ValueError):
                return None
        return out

    def rate(self, dim, members, fusion):
        """(point figures, [{"pauc": v} per bootstrap resample]) of a candidate, or None."""
        scores = self.scores(dim, members, fusion)
        if scores is None:
            return None
        labels = self.labels
        point = trial_figures(scores, labels, self.alpha, self.beta)
        boot = ClusterBootstrap(scores, labels, *self.codes)
        work = boot.workspace()
        resampled = []
        for a, b in self.draws:
            value = boot.statistics(a, b, self.setting, self.pauc_column, work)[0]
            resampled.append({"pauc": None if np.isnan(value) else float(value)})
        return point, resampled
