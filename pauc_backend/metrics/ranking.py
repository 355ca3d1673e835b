"""Ranking metrics: pAUC (the paper's eq. 5), its McClish-standardised area, AUC and AP.

With J target scores t_j and K non-target scores s_k (higher = more likely the same speaker):

pAUC over the false-positive-rate band [alpha, beta] (paper, eq. 5), the default
    The paper ranks distances ascending; with scores that is the non-targets sorted
    *descending*. k_alpha = ceil(K alpha), k_beta = floor(K beta) (exact integers: alpha and beta
    are taken at their shortest decimal form, so 0.07 is 7/100), and N0 is the R = k_beta -
    k_alpha non-targets at descending ranks k_alpha + 1 .. k_beta. Then
        pAUC = 1/(J R) sum_j sum_{r in N0} ( [t_j > s_r] + 1/2 [t_j = s_r] ).
    1 is perfect, 1/2 is chance for a band at the top, and the value does not depend on which of
    several tied non-targets fall inside the band (they contribute equally). R = 0 (K beta < 1,
    or a band narrower than one non-target) is an error. For [0, 1] it is the AUC.

McClish-standardised partial area (``pauc_mcclish``; scikit-learn's ``roc_auc_score(max_fpr)``)
    A = the area under the ROC curve between FPR = alpha and beta, where the ROC has one point
    per distinct score (ties are diagonal steps) and is linearly interpolated at the band edges.
    Standardised as 1/2 (1 + (A - A_min) / (A_max - A_min)) with A_min = (beta^2 - alpha^2) / 2
    (the chance diagonal) and A_max = beta - alpha, so chance is 1/2 and perfect is 1. For
    alpha = 0 this is exactly scikit-learn's value. It differs from eq. 5 when alpha or beta
    cuts through a run of tied non-targets or is not a multiple of 1/K (eq. 5 rounds the band
    to whole non-targets, the area interpolates).

AUC
    1/(J K) sum_j sum_k ( [t_j > s_k] + 1/2 [t_j = s_k] ) (Mann-Whitney; eq. 5 with the whole
    band), computed from sorted arrays in exact integer arithmetic.

Average precision (scikit-learn's ``average_precision_score``)
    AP = sum_n (R_n - R_n-1) P_n over the distinct score thresholds in descending order, where
    a threshold accepts the scores >= it, P_n = precision and R_n = recall there; no
    interpolation. Tied scores form one threshold.
"""

import math

import numpy as np

from pauc_backend.metrics.validation import check_band, check_scores

__all__ = ["pauc", "pauc_mcclish", "partial_roc_area", "auc", "average_precision",
           "band_ranks", "pauc_sorted", "partial_roc_area_sorted", "mcclish", "auc_sorted",
           "average_precision_sorted"]


def band_ranks(num_non, alpha, beta):
    """``(k_alpha, k_beta)`` = (ceil(K alpha), floor(K beta)) in exact arithmetic."""
    a, b = check_band(alpha, beta)
    k_alpha = -((-num_non * a.numerator) // a.denominator)
    k_beta = (num_non * b.numerator) // b.denominator
    return int(k_alpha), int(k_beta)


def pauc_sorted(tar_sorted, non_sorted, alpha=0.0, beta=0.01):
    """Eq. 5 from ascending target and non-target arrays; also returns R = |N0|."""
    num_tar, num_non = tar_sorted.size, non_sorted.size
    k_alpha, k_beta = band_ranks(num_non, alpha, beta)
    size = k_beta - k_alpha
    if size <= 0:
        raise ValueError("the FPR band [%s, %s] holds no non-target: with K = %d non-targets "
                         "ceil(K alpha) = %d >= floor(K beta) = %d" % (
                             alpha, beta, num_non, k_alpha, k_beta))
    band = non_sorted[num_non - k_beta:num_non - k_alpha]
    above = np.searchsorted(tar_sorted, band, side="right")
    below = np.searchsorted(tar_sorted, band, side="left")
    # 2 [t > s] + [t = s] = (J - above) + (J - below), summed in exact integers.
    twice = 2 * num_tar * size - int(above.sum()) - int(below.sum())
    return twice / (2 * num_tar * size), size


def auc_sorted(tar_sorted, non_sorted):
    """Mann-Whitney AUC from ascending arrays, querying with the smaller class."""
    num_tar, num_non = tar_sorted.size, non_sorted.size
    if num_tar <= num_non:
        twice = int(np.searchsorted(non_sorted, tar_sorted, side="left").sum()
                    + np.searchsorted(non_sorted, tar_sorted, side="right").sum())
    else:
        twice = 2 * num_tar * num_non - int(
            np.searchsorted(tar_sorted, non_sorted, side="right").sum()
            + np.searchsorted(tar_sorted, non_sorted, side="left").sum())
    return twice / (2 * num_tar * num_non)


def partial_roc_area_sorted(tar_sorted, non_sorted, alpha=0.0, beta=0.01):
    """Area under the interpolated ROC curve for FPR in [alpha, beta] (unstandardised)."""
    check_band(alpha, beta)
    num_tar, num_non = tar_sorted.size, non_sorted.size
    lo, hi = float(alpha) * num_non, float(beta) * num_non
    count = min(num_non, int(math.ceil(hi)) + 1)
    top = non_sorted[num_non - count:]
    keep = np.ones(top.size, dtype=bool)
    keep[1:] = top[1:] != top[:-1]
    values = top[keep]
    # Each run of tied non-targets is one ROC segment from (fp_gt, tp_gt) to (fp_ge, tp_ge).
    fp_gt = num_non - np.searchsorted(non_sorted, values, side="right")
    fp_ge = num_non - np.searchsorted(non_sorted, values, side="left")
    tp_gt = num_tar - np.searchsorted(tar_sorted, values, side="right")
    tp_ge = num_tar - np.searchsorted(tar_sorted, values, side="left")
    x0 = np.clip(fp_gt, lo, hi)
    x1 = np.clip(fp_ge, lo, hi)
    slope = (tp_ge - tp_gt) / (fp_ge - fp_gt)
    y0 = tp_gt + slope * (x0 - fp_gt)
    y1 = tp_gt + slope * (x1 - fp_gt)
    return float(np.sum((x1 - x0) * (y0 + y1)) / (2.0 * num_tar * num_non))


def mcclish(area, alpha, beta):
    """McClish's standardisation of a partial ROC area over [alpha, beta]."""
    alpha, beta = float(alpha), float(beta)
    min_area = 0.5 * (beta ** 2 - alpha ** 2)
    max_area = beta - alpha
    return 0.5 * (1 + (area - min_area) / (max_area - min_area))


def average_precision_sorted(tar_sorted, non_sorted):
    """scikit-learn's average precision from ascending arrays."""
    num_tar, num_non = tar_sorted.size, non_sorted.size
    keep = np.ones(num_tar, dtype=bool)
    keep[1:] = tar_sorted[1:] != tar_sorted[:-1]
    values = tar_sorted[keep]
    first = np.flatnonzero(keep)
    count = np.diff(np.append(first, num_tar))
    tp = num_tar - first
    fp = num_non - np.searchsorted(non_sorted, values, side="left")
    return float(np.sum(count / num_tar * (tp / (tp + fp))))


def pauc(target_scores, nontarget_scores, alpha=0.0, beta=0.01):
    """pAUC over the FPR band [alpha, beta], the paper's eq. 5 (see the module doc)."""
    tar, non = check_scores(target_scores, nontarget_scores)
    return pauc_sorted(np.sort(tar), np.sort(non), alpha, beta)[0]


def partial_roc_area(target_scores, nontarget_scores, alpha=0.0, beta=0.01):
    """Unstandardised area under the ROC curve for FPR in [alpha, beta]."""
    tar, non = check_scores(target_scores, nontarget_scores)
    return partial_roc_area_sorted(np.sort(tar), np.sort(non), alpha, beta)


def pauc_mcclish(target_scores, nontarget_scores, alpha=0.0, beta=0.01):
    """McClish-standardised partial ROC area; equals ``roc_auc_score(max_fpr=beta)`` at alpha 0."""
    return mcclish(partial_roc_area(target_scores, nontarget_scores, alpha, beta), alpha, beta)


def auc(target_scores, nontarget_scores):
    """Area under the ROC curve, ties counting 1/2."""
    tar, non = check_scores(target_scores, nontarget_scores)
    return auc_sorted(np.sort(tar), np.sort(non))


def average_precision(target_scores, nontarget_scores):
    """Average precision with targets as the positive class (scikit-learn's definition)."""
    tar, non = check_scores(target_scores, nontarget_scores)
    return average_precision_sorted(np.sort(tar), np.sort(non))
