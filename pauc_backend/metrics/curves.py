"""ROC and DET curve points: the raw steps and the ROC convex hull (ROCCH).

Decision rule: a trial is accepted when its score is >= the threshold (Kaldi's and
scikit-learn's convention). With J target and K non-target scores:

- ``det_curve``: one point per distinct score value v, ascending, plus a last point at +inf:
  Pmiss(v) = #{targets < v} / J, Pfa(v) = #{non-targets >= v} / K. It runs from (Pmiss, Pfa) =
  (0, 1) to (1, 0). Tied scores are one threshold, so a tie between the classes is a diagonal
  step (the ROC-curve convention behind "ties count 1/2").
- ``roc_curve``: the same points in scikit-learn's order (thresholds descending, starting at
  +inf with FPR = TPR = 0): FPR = Pfa, TPR = 1 - Pmiss (counted, not subtracted).
- ``rocch``: the vertices of the ROC convex hull as BOSARIS ``rocch.m`` returns them, from
  (Pmiss, Pfa) = (0, 1) to (1, 0): pool-adjacent-violators on the target/non-target indicator
  sorted by score, with each set of tied scores pooled into one bin; every PAV block ends at a
  hull vertex. No three consecutive vertices are collinear.
"""

from collections import namedtuple

import numpy as np

from pauc_backend.metrics.validation import check_scores

__all__ = ["DetCurve", "RocCurve", "det_curve", "roc_curve", "rocch", "score_groups",
           "det_curve_sorted", "rocch_sorted"]

DetCurve = namedtuple("DetCurve", "pmiss pfa thresholds")
RocCurve = namedtuple("RocCurve", "fpr tpr thresholds")


def _distinct(sorted_values):
    keep = np.ones(sorted_values.size, dtype=bool)
    keep[1:] = sorted_values[1:] != sorted_values[:-1]
    return sorted_values[keep]


def score_groups(tar_sorted, non_sorted):
    """Distinct score values ascending, with the number of targets and non-targets <= each.

    Returns ``(values, tar_le, non_le)``: cumulative counts, so the counts at value i are
    ``tar_le[i] - tar_le[i-1]``. O(n) plus two sorted-array searches; no re-sort.
    """
    tar_values, non_values = _distinct(tar_sorted), _distinct(non_sorted)
    merged = np.insert(non_values, np.searchsorted(non_values, tar_values), tar_values)
    values = _distinct(merged)
    return (values, np.searchsorted(tar_sorted, values, side="right"),
            np.searchsorted(non_sorted, values, side="right"))


def det_curve_sorted(tar_sorted, non_sorted):
    values, tar_le, non_le = score_groups(tar_sorted, non_sorted)
    num_tar, num_non = tar_sorted.size, non_sorted.size
    pmiss = np.concatenate([[0], tar_le]) / num_tar
    pfa = (num_non - np.concatenate([[0], non_le])) / num_non
    thresholds = np.concatenate([values.astype(np.float64), [np.inf]])
    return DetCurve(pmiss, pfa, thresholds)


def det_curve(target_scores, nontarget_scores):
    """Raw DET points ``(pmiss, pfa, thresholds)``, thresholds ascending (see the module doc)."""
    tar, non = check_scores(target_scores, nontarget_scores)
    return det_curve_sorted(np.sort(tar), np.sort(non))


def roc_curve(target_scores, nontarget_scores):
    """Raw ROC points ``(fpr, tpr, thresholds)``, thresholds descending from +inf."""
    tar, non = check_scores(target_scores, nontarget_scores)
    tar, non = np.sort(tar), np.sort(non)
    values, tar_le, non_le = score_groups(tar, non)
    tar_lt = np.concatenate([[0], tar_le])[::-1]
    non_lt = np.concatenate([[0], non_le])[::-1]
    fpr = (non.size - non_lt) / non.size
    tpr = (tar.size - tar_lt) / tar.size
    thresholds = np.concatenate([values.astype(np.float64), [np.inf]])[::-1]
    return RocCurve(fpr, tpr, thresholds)


def rocch_sorted(tar_sorted, non_sorted):
    """``(pmiss, pfa)`` hull vertices from ascending target and non-target arrays."""
    from scipy.optimize import isotonic_regression   # slow to import; only the hull needs it
    _, tar_le, non_le = score_groups(tar_sorted, non_sorted)
    n_tar = np.diff(tar_le, prepend=0).astype(np.float64)
    n_non = np.diff(non_le, prepend=0).astype(np.float64)
    weight = n_tar + n_non
    blocks = isotonic_regression(n_tar / weight, weights=weight).blocks
    ends = blocks[1:] - 1
    pmiss = np.concatenate([[0], tar_le[ends]]) / tar_sorted.size
    pfa = (non_sorted.size - np.concatenate([[0], non_le[ends]])) / non_sorted.size
    return pmiss, pfa


def rocch(target_scores, nontarget_scores):
    """ROC convex hull vertices ``(pmiss, pfa)`` in BOSARIS ``rocch`` order."""
    tar, non = check_scores(target_scores, nontarget_scores)
    return rocch_sorted(np.sort(tar), np.sort(non))
