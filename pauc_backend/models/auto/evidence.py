"""Held-out evidence for the choice of pAUCMetric (auto): sources of one kind.

The choice (models.auto.selection.choose) reads a list of ``Evidence``, one per source. A source is
held-out trials and what was trained on what: for every candidate (a system or a fusion at an
LDA dimension), its figures on held-out trials that the models scoring them never saw the
speakers of, and a way to tell how much of a difference between two candidates is noise. There
are three sources, named here:

* ``TRAINING_FOLDS`` (``training_folds``): the cross-fitting of models.auto.crossfit, K
  speaker-disjoint folds of the training speakers, each scored by the whole back-end retrained
  on the other folds. Its figure is the mean over the folds; the standard error of a
  difference is that of the fold means, std(d_k, ddof=1) / sqrt(K) (``estimate="folds"``).
* ``DEV_TRIALS`` (``dev_trials``, models.auto.dev): labelled development trials of the user's
  domain, scored by every fold's models (a candidate's development scores are its folds'
  scores averaged). Its figure is the candidate's on the whole trial list; the standard error
  of a difference is the spread of that difference over paired two-way cluster-bootstrap
  resamples of the development speakers (metrics.bootstrap: the same resamples for every
  candidate; ``estimate="bootstrap"``).
* ``IN_DOMAIN_PSEUDO``: held-out trials among pseudo-speakers, clusters of the unlabelled
  in-domain set (``--adapt``) dealt into speaker-disjoint folds (issue 34 item 1; the source
  is built by the pseudo-speaker integration, models/pseudo_speakers.py). It is of the
  ``"folds"`` kind: ``pseudo_speaker_folds(rows, description)`` wraps its rows (per
  candidate, its figures on each pseudo-speaker fold). Where it plugs in: the rows are
  aligned to the training folds' full-budget rows in ``AutoBackend._evidence`` (as the
  development trials' are) and appended to the list the choice reads; ``prepare``'s
  ``in_domain`` flag (the do-no-harm baselines and LDA none among the candidates) turns on
  with it; models.auto.selection already has its rule (it vetoes, the training folds rank).
  Scoring its trials by every fold's models can reuse models.auto.devscores (a DevTrials
  of the pseudo-speakers' trials) with per-fold parts instead of bootstrap resamples.

A source provides

1. ``rows``: one dict per candidate, as cv_results_ rows: ``"candidate"``, ``"lda_dim"``,
   ``"folds"`` (one figures dict per held-out part with at least ``"pauc"``: a fold, or a
   bootstrap resample) and the figures under the same keys (the training folds give
   ``"pauc"``, ``"pauc_001"``, ``"eer"``, ``"min_dcf"``, models.crossfit.trial_figures): the
   means over the folds, or the point figures of the whole development list;
2. PAIRED figures: every candidate scored on the same parts with the same trials (the same
   folds, or the same resamples), so that the difference between two candidates part by part
   cancels the difficulty the parts share. ``check`` refuses rows that are not (unequal
   numbers of parts);
3. ``trials``: one sentence saying what was trained on what and which trials were scored (for
   the log and system.txt);
4. the same candidates as the other sources, in the same order (``selection.choose`` checks
   it). models.auto.selection says how the sources combine.
"""

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Evidence", "TRAINING_FOLDS", "DEV_TRIALS", "IN_DOMAIN_PSEUDO", "IN_DOMAIN",
           "SOURCES", "training_folds", "dev_trials", "pseudo_speaker_folds"]

TRAINING_FOLDS = "training folds"
DEV_TRIALS = "development trials"
IN_DOMAIN_PSEUDO = "in-domain pseudo-speakers"
IN_DOMAIN = (DEV_TRIALS, IN_DOMAIN_PSEUDO)          # evidence from the user's domain
SOURCES = (TRAINING_FOLDS, DEV_TRIALS, IN_DOMAIN_PSEUDO)
ESTIMATES = ("folds", "bootstrap")


@dataclass(frozen=True)
class Evidence:
    """Held-out evidence from one source (see the module doc): ``source`` (its name, one of
    SOURCES), ``rows`` (per candidate: its figures on each held-out part, paired across
    candidates), ``trials`` (what was trained on what, one sentence), ``estimate`` ("folds":
    the figure is the mean over the parts, a standard error that of a mean of K parts;
    "bootstrap": the figure is the row's own, on the whole list, the parts are paired
    resamples and a standard error is their spread)."""
    source: str
    rows: tuple
    trials: str = ""
    estimate: str = "folds"

    def __post_init__(self):
        object.__setattr__(self, "rows", tuple(self.rows))
        if self.estimate not in ESTIMATES:
            raise ValueError("estimate must be one of %s (got %r)" % (ESTIMATES, self.estimate))

    def check(self):
        """ValueError unless every row has figures on the same number of parts (>= 1; >= 2
        for a bootstrap); returns self."""
        parts = {len(r["folds"]) for r in self.rows}
        if len(parts) > 1 or 0 in parts or (self.estimate == "bootstrap" and 1 in parts):
            raise ValueError("evidence from %s is not paired: its candidates have figures on "
                             "%s held-out parts" % (self.source, sorted(parts)))
        return self

    def fold_matrix(self, figure="pauc"):
        """(candidates, parts) array of ``figure`` (NaN where a part has none)."""
        return np.array([[np.nan if part.get(figure) is None else part[figure]
                          for part in r["folds"]] for r in self.rows], dtype=np.float64)

    def means(self, figure="pauc"):
        """The figure of each candidate: the mean over the folds, or the point figure."""
        if self.estimate == "bootstrap":
            return np.array([r[figure] for r in self.rows], dtype=np.float64)
        return self.fold_matrix(figure).mean(axis=1)

    def spread(self, values):
        """The standard error of a figure (or difference) whose value on each part is
        ``values`` (see ``estimate``); parts where it is undefined (NaN) are left out."""
        values = np.asarray(values, dtype=np.float64)
        values = values[np.isfinite(values)]
        if values.size < 2:
            return 0.0
        sd = float(np.std(values, ddof=1))
        return sd if self.estimate == "bootstrap" else sd / math.sqrt(values.size)

    def standard_errors(self, figure="pauc"):
        return np.array([self.spread(p) for p in self.fold_matrix(figure)])

    def paired(self, a, b, figure="pauc"):
        """(figure(a) - figure(b), its paired standard error) of rows ``a`` and ``b``."""
        P = self.fold_matrix(figure)
        means = self.means(figure)
        return float(means[a] - means[b]), self.spread(P[a] - P[b])

    def labels(self):
        """(candidate, lda_dim) of each row, in order."""
        return [(r["candidate"], r["lda_dim"]) for r in self.rows]

    def subset(self, indices):
        """The same evidence for the rows ``indices`` only, in that order."""
        return Evidence(self.source, [self.rows[i] for i in indices], self.trials,
                        self.estimate)


def training_folds(rows, num_folds, subset, enroll_utts):
    """The evidence of the cross-fitting on the training folds: ``rows`` rated on all
    ``num_folds`` folds of ``subset`` (the cross-fitting subset's sentence)."""
    design = ("single vectors against single vectors" if not enroll_utts else
              "speakers enrolled by the mean of %d vectors against single vectors"
              % int(enroll_utts))
    return Evidence(TRAINING_FOLDS, rows, "%d speaker-disjoint folds of the training "
                    "speakers (%s); each fold's trials (%s) scored by the back-end retrained "
                    "on the other folds" % (int(num_folds), subset, design)).check()


def dev_trials(rows, description):
    """The evidence of labelled development trials (models.auto.dev): ``rows`` with the point
    figures of the whole list and, under "folds", the paired bootstrap resamples."""
    return Evidence(DEV_TRIALS, rows, description, "bootstrap").check()


def pseudo_speaker_folds(rows, description):
    """The evidence of held-out trials among pseudo-speakers of the unlabelled in-domain set
    (speaker-disjoint folds of its clusters; issue 34 item 1): ``rows`` as the training
    folds' (per fold figures and their means)."""
    return Evidence(IN_DOMAIN_PSEUDO, rows, description, "folds").check()
