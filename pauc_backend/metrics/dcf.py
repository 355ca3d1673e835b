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

__all__ = ["DcfResult", "min_dcf", "min_dcf_from_trials", "target_positions", "min_dcf_sorted",
           "shared_ties_that_matter", "members", "TieRanks", "tie_ranks"]

DcfResult = namedtuple("DcfResult", "min_dcf threshold pmiss pfa")


def members(values, sorted_set):
    """Which ``values`` occur in the ascending unique array ``sorted_set``."""
    at = np.minimum(np.searchsorted(sorted_set, values), sorted_set.size - 1)
    return sorted_set[at] == values


def target_positions(tar_sorted, non_sorted, ranks=None, shared=None):
    """Positions (ascending) of the targets in the stably sorted trial list.

    Without ``ranks`` tied targets come before tied non-targets; with them (``tie_ranks`` of
    the trial list: each sorted target's rank among the trials holding its score) the runs of
    the values ``shared`` by both classes (default: all such values) keep the trial order.
    """
    positions = np.searchsorted(non_sorted, tar_sorted, side="left") + np.arange(tar_sorted.size)
    if ranks is None:
        return positions
    if shared is None:
        high = np.searchsorted(non_sorted, tar_sorted, side="right")
        shared = np.unique(tar_sorted[high > positions - np.arange(tar_sorted.size)])
    if shared.size:
        take = members(tar_sorted, shared)
        values = tar_sorted[take]
        positions[take] = (np.searchsorted(tar_sorted, values, side="left")
                           + np.searchsorted(non_sorted, values, side="left") + ranks[take])
    return positions


class TieRanks:
    """Each target's rank among the trials holding its score (how many of them come before
    it in the trial list), counted over the list read block by block: compute_min_dcf.py's
    stable sort keeps that order inside a tie. Memory: a rank per target and a count per
    distinct target score, whatever the number of tied trials; ``values``: the ascending
    distinct target scores."""

    def __init__(self, values):
        self.values = values
        self._seen = np.zeros(values.size, dtype=np.int64)
        self._ranks = []

    def add(self, block, labels):
        """Count the next ``block`` of trial scores (``labels``: which are targets)."""
        if not self.values.size:
            return
        hit = np.flatnonzero(members(block, self.values))
        if not hit.size:
            return
        ids = np.searchsorted(self.values, block[hit])
        order = np.argsort(ids, kind="stable")
        grouped = ids[order]
        within = np.empty_like(ids)
        within[order] = np.arange(ids.size) - np.searchsorted(grouped, grouped, side="left")
        ranks = self._seen[ids] + within
        heads = np.flatnonzero(np.concatenate(([True], grouped[1:] != grouped[:-1])))
        self._seen[grouped[heads]] += np.diff(np.append(heads, grouped.size))
        self._ranks.append(ranks[labels[hit]])

    def sorted_ranks(self, targets):
        """The ranks in the order of the sorted targets (``targets``: the target scores in
        trial order; equal scores keep that order, so their ranks ascend)."""
        ranks = np.concatenate(self._ranks) if self._ranks else np.zeros(0, dtype=np.int64)
        return ranks[np.argsort(targets, kind="stable")]


def tie_ranks(scores, is_target, step=1 << 22):
    """``TieRanks`` of a whole trial list, aligned with its sorted target scores."""
    targets = scores[is_target]
    ranks = TieRanks(np.unique(targets))
    for start in range(0, scores.size, step):
        ranks.add(scores[start:start + step], is_target[start:start + step])
    return ranks.sorted_ranks(targets)


def min_dcf_sorted(tar_sorted, non_sorted, positions, p_targets, c_miss=1, c_fa=1,
                   step=1 << 16):
    """``DcfResult`` per prior from ascending scores and the targets' sorted positions.

    C_i only rises at a target and only falls along a run of non-targets, so the first minimum
    is position 0, or the end of a run of non-targets, or an earlier position of that run with
    the very same (rounded) cost; only those are evaluated, with compute_min_dcf.py's
    arithmetic. Along a run every operation of the cost is monotone in i (IEEE rounding is),
    so the positions of equal cost are the run's last ones: they are found by walking back
    from its end ``step`` positions at a time (a run can hold nearly every trial, when no
    target lies below the best threshold; no run-sized array is made).
    """
    num_tar, num_non = tar_sorted.size, non_sorted.size
    size = num_tar + num_non

    def costs(index, p):
        cum_tar = np.searchsorted(positions, index, side="right")
        fnr = cum_tar / float(num_tar)
        fpr = 1 - (index + 1 - cum_tar) / float(num_non)
        return c_miss * fnr * p + c_fa * fpr * (1 - p), fnr, fpr, cum_tar

    # np.unique's values, by a sort of the (already ascending) positions and one comparison:
    # numpy 2's hashing np.unique took 0.4 s of a 1.5 M-trial fold's 0.47 s of figures
    candidates = np.sort(np.concatenate([[0, size - 1], positions - 1]))
    candidates = candidates[np.concatenate([[True], candidates[1:] != candidates[:-1]])]
    candidates = candidates[candidates >= 0]
    results = []
    for p in p_targets:
        p = float(p)
        cost = costs(candidates, p)[0]
        best = int(candidates[np.argmin(cost)])
        before = np.searchsorted(positions, best, side="right")
        last_target = int(positions[before - 1]) if before else -1
        run_start = best if last_target == best else last_target + 1
        end = best + 1                   # run[lo:end] all cost what ``best`` costs
        lowest = costs(np.array([best]), p)[0][0]
        while end > run_start:
            lo = max(run_start, end - step)
            block_cost = costs(np.arange(lo, end), p)[0]
            higher = np.flatnonzero(block_cost != lowest)
            if higher.size:
                end = lo + int(higher[-1]) + 1
                break
            end = lo
        first = max(end, run_start)
        run_cost, fnr, fpr, cum_tar = costs(np.array([first]), p)
        best = first
        if cum_tar[0] and positions[cum_tar[0] - 1] == best:
            threshold = tar_sorted[cum_tar[0] - 1]
        else:
            threshold = non_sorted[best - cum_tar[0]]
        norm = min(c_miss * p, c_fa * (1 - p))
        results.append(DcfResult(float(run_cost[0] / norm), float(threshold),
                                 float(fnr[0]), float(fpr[0])))
    return results


def shared_ties_that_matter(tar_sorted, non_sorted, results, p_targets, c_miss=1, c_fa=1):
    """The values shared by both classes whose trial-list order could change ``results``.

    ``results`` were found with tied targets first. Inside a run shared by both classes no
    order can cost less than rejecting the run's non-targets before any of its targets; runs
    where even that is above every minimum found cannot matter, and are left alone.
    """
    low = np.searchsorted(non_sorted, tar_sorted, side="left")
    high = np.searchsorted(non_sorted, tar_sorted, side="right")
    values = tar_sorted[high > low]
    before = np.searchsorted(tar_sorted, values, side="left")
    fnr = before / float(tar_sorted.size)
    fpr = 1 - high[high > low] / float(non_sorted.size)
    matter = np.zeros(values.size, dtype=bool)
    for p, result in zip(p_targets, results):
        p = float(p)
        best = c_miss * result.pmiss * p + c_fa * result.pfa * (1 - p)
        matter |= c_miss * fnr * p + c_fa * fpr * (1 - p) <= best
    return np.unique(values[matter])


def min_dcf(target_scores, nontarget_scores, p_target=0.01, c_miss=1, c_fa=1):
    """``DcfResult(min_dcf, threshold, pmiss, pfa)``, or a list of them if ``p_target`` is a
    sequence. Tied targets are placed before tied non-targets (see the module doc)."""
    tar, non = check_scores(target_scores, nontarget_scores)
    p, scalar = check_p_targets(p_target)
    check_costs(c_miss, c_fa)
    tar, non = np.sort(tar), np.sort(non)
    results = min_dcf_sorted(tar, non, target_positions(tar, non), p, c_miss, c_fa)
    return results[0] if scalar else results


def min_dcf_from_trials(scores, is_target, p_target=0.01, c_miss=1, c_fa=1):
    """compute_min_dcf.py on a trial list in its own order (ties keep that order)."""
    scores, is_target = check_labels(scores, is_target)
    p, scalar = check_p_targets(p_target)
    check_costs(c_miss, c_fa)
    tar, non = np.sort(scores[is_target]), np.sort(scores[~is_target])
    results = min_dcf_sorted(tar, non, target_positions(tar, non), p, c_miss, c_fa)
    shared = shared_ties_that_matter(tar, non, results, p, c_miss, c_fa)
    if shared.size:
        positions = target_positions(tar, non, tie_ranks(scores, is_target), shared)
        results = min_dcf_sorted(tar, non, positions, p, c_miss, c_fa)
    return results[0] if scalar else results
