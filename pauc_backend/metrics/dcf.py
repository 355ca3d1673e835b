"""Minimum detection cost (minDCF), exactly as Kaldi's ``sid/compute_min_dcf.py``.

Definition (NIST SRE 2016 plan, eqs. 2-4, in compute_min_dcf.py's discrete form)
    Sort the n = J + K scored trials ascending by score with a *stable* sort. Position i
    (0-based) rejects the trials at positions <= i:
        FNR_i = (#targets at positions <= i) / J
        FPR_i = 1 - (#non-targets at positions <= i) / K
        C_i   = c_miss FNR_i p + c_fa FPR_i (1 - p)      (evaluated in this order, in float64)
    minDCF = min_i C_i / min(c_miss p, c_fa (1 - p)); its threshold is the score at the first
    position reaching the minimum (strict ``<``). There is no "accept everything" point: the
    first candidate already rejects the lowest score.

Ties
    Positions inside a run of tied scores are candidates too, so the order of tied trials matters
    when targets and non-targets share a score. ``min_dcf_from_trials`` keeps the trial list's
    own order (compute_min_dcf.py keeps the scores-file order); ``min_dcf``, which only sees the two
    classes, puts tied targets before tied non-targets. That order can only add candidates that
    are worse than the position before the tie, so it gives the tie-free (pooled) minimum.

Several priors are evaluated in one pass over one sort. ``DcfResult`` also carries the miss and
false-alarm rates at the minimum (the operating point to mark on a DET plot).
"""

from collections import namedtuple

import numpy as np

from pauc_backend.metrics.validation import (check_costs, check_labels, check_p_targets,
                                             check_scores)

__all__ = ["DcfResult", "min_dcf", "min_dcf_from_trials", "sorted_labels", "min_dcf_sorted"]

DcfResult = namedtuple("DcfResult", "min_dcf threshold pmiss pfa")


def sorted_labels(tar_sorted, non_sorted, scores=None, is_target=None):
    """Target indicator of the trials in stably sorted order (see Ties in the module doc).

    Without ``scores``/``is_target`` tied targets come first; with them (the trial list in its
    own order) ties between the classes keep that order.
    """
    num_tar = tar_sorted.size
    low = np.searchsorted(non_sorted, tar_sorted, side="left")
    labels = np.zeros(num_tar + non_sorted.size, dtype=bool)
    labels[low + np.arange(num_tar)] = True
    if scores is None:
        return labels
    high = np.searchsorted(non_sorted, tar_sorted, side="right")
    mixed = np.unique(tar_sorted[high > low])
    if mixed.size:
        chosen = np.flatnonzero(np.isin(scores, mixed))
        order = np.argsort(scores[chosen], kind="stable")
        values = scores[chosen][order]
        start = (np.searchsorted(tar_sorted, values, side="left")
                 + np.searchsorted(non_sorted, values, side="left"))
        rank = np.arange(values.size) - np.searchsorted(values, values, side="left")
        labels[start + rank] = is_target[chosen][order]
    return labels


def min_dcf_sorted(tar_sorted, non_sorted, labels, p_targets, c_miss=1, c_fa=1):
    """``DcfResult`` per prior from ascending scores and the stably sorted target indicator."""
    num_tar, num_non = tar_sorted.size, non_sorted.size
    cum_tar = np.cumsum(labels)
    fnr = cum_tar / float(num_tar)
    fpr = 1 - (np.arange(1, labels.size + 1) - cum_tar) / float(num_non)
    results = []
    for p in p_targets:
        p = float(p)
        cost = c_miss * fnr * p + c_fa * fpr * (1 - p)
        best = int(np.argmin(cost))
        if labels[best]:
            threshold = tar_sorted[cum_tar[best] - 1]
        else:
            threshold = non_sorted[best - cum_tar[best]]
        norm = min(c_miss * p, c_fa * (1 - p))
        results.append(DcfResult(float(cost[best] / norm), float(threshold),
                                 float(fnr[best]), float(fpr[best])))
    return results


def min_dcf(target_scores, nontarget_scores, p_target=0.01, c_miss=1, c_fa=1):
    """``DcfResult(min_dcf, threshold, pmiss, pfa)``, or a list of them if ``p_target`` is a
    sequence. Tied targets are placed before tied non-targets (see the module doc)."""
    tar, non = check_scores(target_scores, nontarget_scores)
    p, scalar = check_p_targets(p_target)
    check_costs(c_miss, c_fa)
    tar, non = np.sort(tar), np.sort(non)
    results = min_dcf_sorted(tar, non, sorted_labels(tar, non), p, c_miss, c_fa)
    return results[0] if scalar else results


def min_dcf_from_trials(scores, is_target, p_target=0.01, c_miss=1, c_fa=1):
    """compute_min_dcf.py on a trial list in its own order (ties keep that order)."""
    scores, is_target = check_labels(scores, is_target)
    p, scalar = check_p_targets(p_target)
    check_costs(c_miss, c_fa)
    tar, non = np.sort(scores[is_target]), np.sort(scores[~is_target])
    labels = sorted_labels(tar, non, scores, is_target)
    results = min_dcf_sorted(tar, non, labels, p, c_miss, c_fa)
    return results[0] if scalar else results
