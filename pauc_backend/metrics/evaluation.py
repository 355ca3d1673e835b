"""Which summary of a scored trial list to compute, decided in one place (what compute-eer-pauc
reports, usable from Python without files).

``evaluate(scores, is_target, setting)`` gives ``TrialScores.summary`` (every metric of
``metrics.registry``); with ``partitions`` NIST's equalised summary instead
(``metrics.equalized``); Cprimary is added whenever both of its priors were evaluated; with a
``Bootstrap`` (cluster labels per trial and a number of resamples) the summary gets the
``"confidence"`` intervals of the two-way cluster bootstrap (``metrics.bootstrap``).
"""

from dataclasses import dataclass
from typing import Optional

import numpy as np

from pauc_backend.metrics.bootstrap import (ClusterBootstrap, bootstrap_statistics,
                                            confidence_summary)
from pauc_backend.metrics.equalized import add_c_primary, equalized_summary
from pauc_backend.metrics.registry import Setting
from pauc_backend.metrics.trial_scores import TrialScores

__all__ = ["Bootstrap", "Evaluation", "evaluate"]


@dataclass(frozen=True)
class Bootstrap:
    """Resampling of ``metrics.bootstrap``: the enrollment and test cluster of each trial
    (keys, or their speakers), ``resamples`` draws from ``seed``, intervals at ``level``."""
    enroll: np.ndarray
    test: np.ndarray
    resamples: int
    seed: int = 0
    level: float = 0.95


@dataclass
class Evaluation:
    """``summary``: the JSON-ready dict; ``trials``: the sorted scores (for DET/ROC plots);
    ``resamples_used``: bootstrap resamples in which both classes remained (None without
    one); ``clusters``: (enrollment, test) cluster counts of the bootstrap."""
    summary: dict
    trials: TrialScores
    resamples_used: Optional[int] = None
    clusters: Optional[tuple] = None


def evaluate(scores, is_target, setting=Setting(), partitions=None, bootstrap=None,
             in_place=False):
    """The summary of one scored trial list (see the module doc). With ``in_place`` (and
    neither partitions nor a bootstrap, which need the trial order) the caller gives its
    arrays up: ``TrialScores.sort_in_place`` sorts the scores where they are."""
    if in_place and partitions is None and bootstrap is None:
        trials = TrialScores.sort_in_place(scores, is_target, cllr=setting.llr)
    else:
        trials = TrialScores.from_trials(scores, is_target)
    if partitions is not None:
        summary = equalized_summary(scores, is_target, partitions, setting.p_targets,
                                    setting.alpha, setting.beta, setting.c_miss, setting.c_fa,
                                    setting.llr)
    else:
        summary = trials.summary(setting.p_targets, setting.alpha, setting.beta,
                                 setting.c_miss, setting.c_fa, setting.eer_method, setting.llr)
    add_c_primary(summary)
    result = Evaluation(summary, trials)
    if bootstrap is not None:
        boot = ClusterBootstrap(scores, is_target, bootstrap.enroll, bootstrap.test)
        stats = bootstrap_statistics(boot, bootstrap.resamples, bootstrap.seed, setting)
        summary["confidence"], result.resamples_used = confidence_summary(
            stats, bootstrap.level, setting)
        result.clusters = (boot.num_enroll, boot.num_test)
    return result
