"""Metrics of a trial list whose trials carry weights, from one sort (numpy only).

Two uses share this code, with the same definitions as the unweighted metrics of the package:

* integer weights = multiplicities (``integer=True``): the metrics equal those of the trial list
  in which trial k is repeated w_k times (in its own place: repeats stay together in a stable
  sort). This is the cluster bootstrap of ``metrics.bootstrap``: EER is Kaldi's ``compute-eer``
  (discrete, float32), minDCF is ``sid/compute_min_dcf.py``, pAUC is the paper's eq. 5 with
  k_alpha = ceil(K alpha), k_beta = floor(K beta) counted in repeated non-targets, AUC the
  Mann-Whitney statistic, all of the repeated list, exactly.
* real weights (``integer=False``): NIST's equalised scoring (``metrics.equalized``): a trial of
  partition p weighs 1 / (number of trials of its class in p), so the miss and false-alarm rates
  at every threshold are the unweighted means over partitions. Each trial is one operating
  point: FNR_i = (target weight at sorted positions <= i) / (target weight), FPR_i = 1 -
  (non-target weight at positions <= i) / (non-target weight), as ``compute_pmiss_pfa_rbst``
  of the NIST SRE scorer; minDCF is the minimum of the costs at those points
  (``compute_c_norm``), EER is the scorer's ``compute_eer`` (linear interpolation between the
  last point with FNR < FPR and the first with FNR >= FPR), pAUC is eq. 5 with the band
  [alpha, beta] of weighted non-targets taken exactly (fractional non-targets at its ends), and
  AUC the weighted Mann-Whitney statistic.

The sort is done once (``SortedTrials``), stable, so tied trials keep the trial-list order (as
``TrialScores.from_trials``); each evaluation then costs one cumulative sum over the
non-targets and O(number of targets) work, never a new sort.
"""

import numpy as np

from pauc_backend.metrics.registry import WeightedView, weighted_values
from pauc_backend.metrics.validation import check_band, check_labels

__all__ = ["SortedTrials"]


class SortedTrials:
    """A trial list sorted once; ``evaluate(w_tar, w_non, setting)`` gives its weighted metrics
    (each registered metric's ``weighted`` definition calls the pieces below).

    ``order_tar`` / ``order_non`` are the trial indices of the targets / non-targets in
    ascending score order: weights are passed in that order.
    """

    def __init__(self, scores, is_target):
        scores, is_target = check_labels(scores, is_target)
        order = np.argsort(scores, kind="stable")
        sorted_is_tar = is_target[order]
        self.order_tar = order[sorted_is_tar]
        self.order_non = order[~sorted_is_tar]
        self.tar = scores[self.order_tar]
        self.non = scores[self.order_non]
        self.tar32 = self.tar.astype(np.float32)
        self.non32 = self.non.astype(np.float32)
        num_tar = self.tar.size
        tar_position = np.flatnonzero(sorted_is_tar)
        # non-targets before target j in the combined (stable) order, and the total at the end
        self.non_before_gap = np.append(tar_position - np.arange(num_tar), self.non.size)
        self.tar_position = tar_position
        self.non_position = np.flatnonzero(~sorted_is_tar)
        # Mann-Whitney / eq. 5 counts: non-targets < and <= each target, targets < and <= each
        # non-target
        self.non_lt = np.searchsorted(self.non, self.tar, side="left")
        self.non_le = np.searchsorted(self.non, self.tar, side="right")
        self.tar_lt = np.searchsorted(self.tar, self.non, side="left")
        self.tar_le = np.searchsorted(self.tar, self.non, side="right")
        self._band = None

    # -- pieces ---------------------------------------------------------------------------
    def min_dcf(self, w_tar, cum_tar, cum_non, total_tar, total_non, p_targets, c_miss,
                 c_fa, integer):
        """Minimum over the ends of runs of non-targets (where C_i can be minimal) and the
        first point (which may be a target); see ``metrics.dcf``."""
        gap_tar = cum_tar                            # target weight before gap g, g = 0..T
        gap_non = cum_non[self.non_before_gap]      # non-target weight up to the gap's end
        valid = (gap_tar + gap_non) > 0              # the empty prefix is not an operating point
        gap_tar, gap_non = gap_tar[valid], gap_non[valid]
        # the first trial of positive weight of each class (totals are positive)
        first_tar = int(np.searchsorted(cum_tar[1:], 0, side="right"))
        first_non = int(np.searchsorted(cum_non[1:], 0, side="right"))
        extra = None
        if self.tar_position[first_tar] < self.non_position[first_non]:
            extra = 1 if integer else w_tar[first_tar]    # the first point is a target
        results = []
        for p in p_targets:
            p = float(p)
            fnr = gap_tar / total_tar
            fpr = 1 - gap_non / total_non
            cost = (c_miss * fnr * p + c_fa * fpr * (1 - p)).min()
            if extra is not None:
                cost = min(cost, c_miss * (extra / total_tar) * p + c_fa * 1.0 * (1 - p))
            results.append(float(cost / min(c_miss * p, c_fa * (1 - p))))
        return results

    def kaldi_eer(self, cum_tar, cum_non, total_tar, total_non):
        """compute-eer on the repeated list. Its stopping test at target position p,
        non[max(N - 1 - trunc(N p / T), 0)] < tar[p], is monotone in p (the non-target side
        only falls, the target side only rises), so the first p passing it is found by
        bisection over the repeated positions: O(log T) look-ups into the cumulative weights."""
        total_tar, total_non = int(total_tar), int(total_non)
        tar_ends, non_ends = cum_tar[1:], cum_non[1:]

        def hit(p):
            tar_at = self.tar32[np.searchsorted(tar_ends, p, side="right")]
            nn = int(float(total_non * p) / float(total_tar))
            q = max(total_non - 1 - nn, 0)
            return self.non32[np.searchsorted(non_ends, q, side="right")] < tar_at

        low, high = 0, total_tar - 1          # answer in [low, high]; high = no stop
        while low < high:
            mid = (low + high) // 2
            if hit(mid):
                high = mid
            else:
                low = mid + 1
        return float(np.float32(low * 1.0 / total_tar))

    def nist_eer(self, w_tar, w_non, total_tar, total_non):
        """The SRE scorer's compute_eer on the weighted FNR/FPR of every sorted trial."""
        size = self.tar.size + self.non.size
        w_tar_all = np.zeros(size)
        w_tar_all[self.tar_position] = w_tar
        w_non_all = np.zeros(size)
        w_non_all[self.non_position] = w_non
        fnr = np.cumsum(w_tar_all) / total_tar
        fpr = 1 - np.cumsum(w_non_all) / total_non
        diff = fnr - fpr
        x1 = int(np.flatnonzero(diff >= 0)[0])
        below = np.flatnonzero(diff < 0)
        if not below.size:
            return float(fnr[x1])
        x2 = int(below[-1])
        a = (fnr[x1] - fpr[x1]) / (fpr[x2] - fpr[x1] - (fnr[x2] - fnr[x1]))
        return float(fnr[x1] + a * (fnr[x2] - fnr[x1]))

    def pauc(self, cum_tar, cum_non, total_tar, total_non, alpha, beta, integer):
        if integer:       # ranking.band_ranks with the band's fractions parsed once
            if self._band is None or self._band[0] != (alpha, beta):
                self._band = ((alpha, beta), check_band(alpha, beta))
            a, b = self._band[1]
            num_non = int(total_non)
            k_alpha = -((-num_non * a.numerator) // a.denominator)
            k_beta = (num_non * b.numerator) // b.denominator
            size = k_beta - k_alpha
            if size <= 0:
                return None
            lo, hi = int(total_non) - k_beta, int(total_non) - k_alpha
        else:
            lo, hi = total_non - total_non * float(beta), total_non - total_non * float(alpha)
            size = hi - lo
            if size <= 0:
                return None
        ends = cum_non[1:]
        first = int(np.searchsorted(ends, lo, side="right"))
        last = min(int(np.searchsorted(ends, hi, side="left")), ends.size - 1)
        k = np.arange(first, last + 1)
        overlap = np.minimum(hi, ends[k]) - np.maximum(lo, cum_non[k])
        overlap = np.maximum(overlap, 0)
        tied = cum_tar[self.tar_le[k]] + cum_tar[self.tar_lt[k]]
        twice = 2 * total_tar * size - (overlap * tied).sum()
        return float(twice / (2 * total_tar * size))

    def auc(self, w_tar, cum_non, total_tar, total_non):
        """Weighted Mann-Whitney statistic (ties 1/2)."""
        twice = (w_tar * (cum_non[self.non_lt] + cum_non[self.non_le])).sum()
        return float(twice / (2 * total_tar * total_non))

    # -- all at once ----------------------------------------------------------------------
    def evaluate(self, w_tar, w_non, setting, integer=True, metrics=None):
        """The weighted values of the registered metrics (``registry.weighted_values``: EER,
        minDCF per prior, pAUC (None if its band is empty), AUC, ...) for ``setting``.

        ``w_tar`` / ``w_non``: weights in ``order_tar`` / ``order_non`` order (integers when
        ``integer``). Returns None when either class has zero total weight.
        """
        dtype = np.int64 if integer else np.float64
        w_tar = np.asarray(w_tar, dtype=dtype)
        w_non = np.asarray(w_non)           # summed in ``dtype`` without a converted copy
        if w_tar.shape != self.tar.shape or w_non.shape != self.non.shape:
            raise ValueError("need one weight per target and per non-target")
        cum_tar = np.zeros(w_tar.size + 1, dtype=dtype)
        np.cumsum(w_tar, out=cum_tar[1:])
        cum_non = np.zeros(w_non.size + 1, dtype=dtype)
        np.cumsum(w_non, dtype=dtype, out=cum_non[1:])
        return self.evaluate_cumulative(w_tar, w_non, cum_tar, cum_non, setting, integer,
                                        metrics)

    def evaluate_cumulative(self, w_tar, w_non, cum_tar, cum_non, setting, integer=True,
                            metrics=None):
        """``evaluate`` given the cumulative weights (a leading 0, then the running sums); the
        bootstrap fills them in preallocated buffers."""
        if not cum_tar[-1] > 0 or not cum_non[-1] > 0:
            return None
        view = WeightedView(self, w_tar, w_non, cum_tar, cum_non, integer)
        return weighted_values(view, setting, metrics)

    def cllr(self, w_tar, w_non):
        """Weighted Cllr of LLR scores (``metrics.llr.cllr`` with weighted class means of
        log2(1 + e^-llr) over targets and log2(1 + e^llr) over non-targets); the per-trial
        terms are computed once."""
        if getattr(self, "_cllr_terms", None) is None:
            self._cllr_terms = (np.logaddexp(0.0, -self.tar) / np.log(2.0),
                                np.logaddexp(0.0, self.non) / np.log(2.0))
        tar_terms, non_terms = self._cllr_terms
        w_tar = np.asarray(w_tar, dtype=np.float64)
        w_non = np.asarray(w_non, dtype=np.float64)
        return float(0.5 * (w_tar @ tar_terms / w_tar.sum() + w_non @ non_terms / w_non.sum()))

    def act_dcf(self, w_tar, w_non, p_targets, c_miss=1.0, c_fa=1.0):
        """Weighted actual DCF of LLR scores (``metrics.llr.act_dcf`` with weighted rates:
        Pmiss = weight of targets with llr < theta, Pfa = weight of non-targets >= theta)."""
        w_tar = np.asarray(w_tar, dtype=np.float64)
        w_non = np.asarray(w_non, dtype=np.float64)
        cum_tar = np.concatenate([[0.0], np.cumsum(w_tar)])
        cum_non = np.concatenate([[0.0], np.cumsum(w_non)])
        out = []
        for p in p_targets:
            p = float(p)
            p_eff = p * c_miss / (p * c_miss + (1 - p) * c_fa)
            theta = -np.log(p_eff / (1 - p_eff))
            pmiss = cum_tar[np.searchsorted(self.tar, theta, side="left")] / cum_tar[-1]
            pfa = 1 - cum_non[np.searchsorted(self.non, theta, side="left")] / cum_non[-1]
            dcf = (p * c_miss * pmiss + (1 - p) * c_fa * pfa) / min(p * c_miss, (1 - p) * c_fa)
            out.append(float(dcf))
        return out
