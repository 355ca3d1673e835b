"""Evaluation metrics (numpy only): EER, minDCF, pAUC, AUC, AP, DET/ROC points.

Every function takes the target and the non-target scores as two arrays (higher = more likely
the same speaker) and is O(n log n) with no per-trial Python loop. Each module's docstring gives
the exact definition, including ties and normalisation:

- ``error_rates``: EER as Kaldi's ``compute-eer`` bit for bit (float32, discrete target
  position) or BOSARIS's ROCCH-EER (``method="rocch"``).
- ``dcf``: minDCF exactly as ``sid/compute_min_dcf.py`` (stable sort, first minimum), for several
  priors at once, with its threshold.
- ``ranking``: pAUC of the paper's eq. 5, the McClish-standardised partial area of
  scikit-learn's ``roc_auc_score(max_fpr)``, AUC (ties 1/2), average precision.
- ``curves``: raw DET/ROC steps and the ROC convex hull.
- ``llr``: calibration-sensitive metrics of LLR scores (actDCF, Cllr, minCllr).
- ``trial_scores.TrialScores``: one sort shared by all of the above (what the tools use).
- ``registry``: each reported metric defined once (key, title, direction, formula, plain and
  weighted computation); summaries, tables, JSON, logs, bootstrap and equalised scoring
  iterate it, so a new metric is one ``Metric(...)`` plus its test.
- ``evaluation.evaluate``: which summary to compute (plain, equalised over partitions, with
  bootstrap intervals), as compute-eer-pauc reports it.
"""

from pauc_backend.metrics.curves import DetCurve, RocCurve, det_curve, roc_curve, rocch
from pauc_backend.metrics.dcf import DcfResult, min_dcf, min_dcf_from_trials
from pauc_backend.metrics.error_rates import eer
from pauc_backend.metrics.ranking import (auc, average_precision, partial_roc_area, pauc,
                                          pauc_mcclish)
from pauc_backend.metrics.trial_scores import TrialScores

__all__ = ["eer", "min_dcf", "min_dcf_from_trials", "DcfResult", "pauc", "pauc_mcclish",
           "partial_roc_area", "auc", "average_precision", "det_curve", "roc_curve", "rocch",
           "DetCurve", "RocCurve", "TrialScores"]
