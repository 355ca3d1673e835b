"""Held-out evidence for the choice of pAUCMetric (auto): its sources, and whether each can be
trusted.

The choice (models.auto.selection.choose) reads a list of ``Evidence``, one per source. A
source is held-out trials and what was trained on what: for every candidate it can rate (a
system or a fusion at an LDA dimension), its figures on trials whose speakers the models
scoring them never saw (as labelled speakers), and a way to tell how much of a difference
between two candidates is noise. Three sources, from the least to the most in-domain:

* ``TRAINING_FOLDS``: the cross-fitting of models.auto.crossfit, K speaker-disjoint folds of
  the training speakers, each scored by the whole back-end retrained on the other folds.
  Its figure is the mean over the folds; the standard error of a difference is that of the
  fold means, std(d_k, ddof=1) / sqrt(K) (``estimate="folds"``). It rates the cross-fitted
  candidates only (a pseudo-trained one has no training-fold figure).
* ``PSEUDO_TRIALS``: trials among the pseudo-speakers of the unlabelled adaptation set
  (models.auto.pseudo): the cross-fitted candidates score them with every fold's models
  averaged, the pseudo-trained candidates with the models of the other pseudo-speaker fold
  (speaker-disjoint). ``DEV_TRIALS``: labelled development trials of the user's domain
  (models.auto.dev), scored the same way. For both, the figure is the candidate's on the
  whole list, and the standard error of a difference is the spread of that difference over
  paired two-way cluster-bootstrap resamples of the set's speakers (metrics.bootstrap; the
  same resamples for every candidate; ``estimate="bootstrap"``).

Every source is PAIRED: each candidate it rates is scored on the same parts with the same
trials, so the difference between two candidates part by part cancels the difficulty the parts
share (``check`` refuses rows that are not). Its ``rows`` follow the list of candidates; a
candidate the source cannot rate has ``None``.

Trust (``trust``): before a source rates anything, it must separate speakers. A source is
not used to choose when EVERY candidate it rates, its cosine baselines (raw cosine; the cosine
of centred vectors at LDA none) included, has an EER of ``NEAR_CHANCE_EER`` (0.40) or more
there: such a source rates every candidate near chance (0.5), so its differences say nothing.
The baselines' figure alone does not decide: on data where a nuisance direction swamps both
cosines a PLDA can still separate the speakers, and the source is sound
(tests/models/test_auto_backend_reference.py). Measured, for the record: the best candidate
on the training folds of the synthetic demo corpus, ETRI and TIMIT is at 0.02-0.06; raw /
centred cosine there 0.28-0.31 / 0.07-0.13 (synthetic), 0.16 (ETRI's male speakers, raw),
0.03-0.05 (TIMIT); on a hard synthetic corpus (tests/models/test_auto_backend_budget.py's, 18
speakers cross-fitted) raw cosine and PLDA are at 0.33-0.36 and still rank honestly, so the
bound sits above them; the held-out folds of the previous design's covariance move (models.
auto.adapt says why it went) put EVERY candidate at 0.38-0.45.
"""

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Evidence", "TRAINING_FOLDS", "DEV_TRIALS", "PSEUDO_TRIALS", "IN_DOMAIN",
           "SOURCES", "NEAR_CHANCE_EER", "PREFIX"]

TRAINING_FOLDS = "training folds"
PSEUDO_TRIALS = "pseudo-speaker trials"
DEV_TRIALS = "development trials"
IN_DOMAIN = (DEV_TRIALS, PSEUDO_TRIALS)      # the user's domain, most trusted first
SOURCES = (DEV_TRIALS, PSEUDO_TRIALS, TRAINING_FOLDS)     # in the order they rate
PREFIX = {TRAINING_FOLDS: "heldout", PSEUDO_TRIALS: "pseudo", DEV_TRIALS: "dev"}
ESTIMATES = ("folds", "bootstrap")
NEAR_CHANCE_EER = 0.40


@dataclass(frozen=True)
class Evidence:
    """Held-out evidence from one source (see the module doc): ``source`` (its name, one of
    SOURCES), ``rows`` (per candidate: None, or its figures with "folds", its figures on
    each held-out part, paired across candidates), ``trials`` (what was trained on what,
    one sentence), ``estimate`` ("folds": the figure is the mean over the parts, a standard
    error that of a mean of K parts; "bootstrap": the figure is the row's own, on the whole
    list, the parts are paired resamples and a standard error is their spread)."""
    source: str
    rows: tuple
    trials: str = ""
    estimate: str = "folds"

    def __post_init__(self):
        object.__setattr__(self, "rows", tuple(self.rows))
        if self.source not in SOURCES:
            raise ValueError("unknown source of evidence %r (known: %s)"
                             % (self.source, ", ".join(SOURCES)))
        if self.estimate not in ESTIMATES:
            raise ValueError("estimate must be one of %s (got %r)" % (ESTIMATES, self.estimate))

    def check(self):
        """ValueError unless every rated row has figures on the same number of parts (>= 1;
        >= 2 for a bootstrap); returns self."""
        parts = {len(r["folds"]) for r in self.rows if r is not None}
        if len(parts) > 1 or 0 in parts or (self.estimate == "bootstrap" and 1 in parts):
            raise ValueError("evidence from %s is not paired: its candidates have figures on "
                             "%s held-out parts" % (self.source, sorted(parts)))
        return self

    @property
    def rated(self):
        """Mask of the candidates this source rates."""
        return np.array([r is not None for r in self.rows], dtype=bool)

    def fold_matrix(self, figure="pauc"):
        """(candidates, parts) array of ``figure`` (NaN where a part has none, and for the
        candidates not rated)."""
        width = max((len(r["folds"]) for r in self.rows if r is not None), default=0)
        out = np.full((len(self.rows), width), np.nan)
        for i, r in enumerate(self.rows):
            if r is not None:
                out[i] = [np.nan if part.get(figure) is None else part[figure]
                          for part in r["folds"]]
        return out

    def means(self, figure="pauc"):
        """The figure of each candidate: the mean over the folds, or the point figure (NaN
        for a candidate not rated)."""
        if self.estimate == "bootstrap":
            return np.array([np.nan if r is None else r[figure] for r in self.rows],
                            dtype=np.float64)
        with np.errstate(invalid="ignore"):
            return self.fold_matrix(figure).mean(axis=1)

    def figure(self, index, name):
        """A figure of candidate ``index`` (the fold mean, or the point figure), NaN when it
        has none."""
        r = self.rows[index]
        if r is None or r.get(name) is None:
            return float("nan")
        return float(r[name])

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
        """(figure(a) - figure(b), its paired standard error) of candidates ``a`` and
        ``b``."""
        P = self.fold_matrix(figure)
        means = self.means(figure)
        return float(means[a] - means[b]), self.spread(P[a] - P[b])

    def trust(self, cosine_baselines):
        """(True, "") unless every candidate this source rates has an EER of NEAR_CHANCE_EER
        or more here; else (False, the reason in one sentence, naming the EER of the better of
        ``cosine_baselines``, the indices of raw cosine and of the centred cosine at LDA none,
        and the best candidate's)."""
        eers = [self.figure(i, "eer") for i, r in enumerate(self.rows) if r is not None]
        eers = [e for e in eers if np.isfinite(e)]
        if not eers or min(eers) < NEAR_CHANCE_EER:
            return True, ""
        cosine = [self.figure(i, "eer") for i in cosine_baselines if self.rows[i] is not None]
        return False, ("on the %s every candidate is near chance (best EER %.1f %%%s, at or "
                       "above %.0f %%): they cannot tell the candidates apart"
                       % (self.source, 100 * min(eers), "; cosine %.1f %%" % (100 * min(cosine))
                          if cosine else "", 100 * NEAR_CHANCE_EER))
