"""Held-out evidence for the choice of pAUCMetric (auto): sources of one kind.

The choice (models.selection.choose) reads a list of ``Evidence``, one per source. A source is
held-out trials and what was trained on what: for every candidate (a system or a fusion at an
LDA dimension), its figures on each of K held-out parts of the source, where the models that
score part k never saw part k's speakers. Today there is one source, the TRAINING FOLDS
(``training_folds``: the cross-fitting of models.auto.crossfit, K speaker-disjoint folds of
the training speakers, each scored by the whole back-end retrained on the other folds).

Issue 34 adds two more of the same kind: pseudo-labelled folds of the unlabelled in-domain set
(its clusters as speakers, dealt into speaker-disjoint folds) and labelled development trials
(their parts: speakers of a cluster bootstrap). A new source plugs in by providing:

1. ``rows``: one dict per candidate, as cv_results_ rows: ``"candidate"``, ``"lda_dim"``,
   ``"folds"`` (one figures dict per held-out part, with at least ``"pauc"``; the training
   folds give ``"pauc"``, ``"pauc_001"``, ``"eer"``, ``"min_dcf"``, models.crossfit.
   trial_figures) and the means over the parts under the same keys;
2. PAIRED figures: every candidate of a source scored on the same parts with the same trials,
   in the same order, so that the difference between two candidates part by part, and its
   standard error over the parts (selection.paired), cancel the difficulty the parts share.
   ``Evidence.check`` refuses rows that are not (unequal numbers of parts);
3. ``trials``: one sentence saying what was trained on what and which trials were scored
   (for the log and system.txt);
4. the same candidates as the other sources, in the same order (``selection.choose`` checks
   it), and a rule there for what to do with several sources (today: one).
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["Evidence", "TRAINING_FOLDS", "training_folds"]

TRAINING_FOLDS = "training folds"


@dataclass(frozen=True)
class Evidence:
    """Held-out evidence from one source (see the module doc): ``source`` (its name, e.g.
    TRAINING_FOLDS), ``rows`` (per candidate: its figures on each held-out part, paired
    across candidates), ``trials`` (what was trained on what, one sentence)."""
    source: str
    rows: tuple
    trials: str = ""

    def __post_init__(self):
        object.__setattr__(self, "rows", tuple(self.rows))

    def check(self):
        """ValueError unless every row has figures on the same number (>= 1) of parts;
        returns self."""
        parts = {len(r["folds"]) for r in self.rows}
        if len(parts) > 1 or 0 in parts:
            raise ValueError("evidence from %s is not paired: its candidates have figures on "
                             "%s held-out parts" % (self.source, sorted(parts)))
        return self

    def fold_matrix(self, figure="pauc"):
        """(candidates, parts) array of ``figure``."""
        return np.array([[part[figure] for part in r["folds"]] for r in self.rows])

    def labels(self):
        """(candidate, lda_dim) of each row, in order."""
        return [(r["candidate"], r["lda_dim"]) for r in self.rows]


def training_folds(rows, num_folds, subset, enroll_utts):
    """The evidence of the cross-fitting on the training folds: ``rows`` rated on all
    ``num_folds`` folds of ``subset`` (the cross-fitting subset's sentence)."""
    design = ("single vectors against single vectors" if not enroll_utts else
              "speakers enrolled by the mean of %d vectors against single vectors"
              % int(enroll_utts))
    return Evidence(TRAINING_FOLDS, rows, "%d speaker-disjoint folds of the training "
                    "speakers (%s); each fold's trials (%s) scored by the back-end retrained "
                    "on the other folds" % (int(num_folds), subset, design)).check()
