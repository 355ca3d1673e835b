"""``TrialScores``: the scores of one trial list sorted once and shared by every metric.

Each metric function (``eer``, ``min_dcf``, ``pauc``, ...) sorts its input; for ten million
trials the sort is most of the cost, so tools that report several metrics build one
``TrialScores`` and call its methods, which give the same numbers as the functions. ``summary``
returns every metric of ``metrics.registry`` in one dict (JSON-ready).

Memory: ``from_trials`` copies the two classes (the caller keeps its trial list);
``sort_in_place`` reuses the caller's score array for the two sorted classes and keeps of the
trial order only what a metric needs from it (each target's rank among the trials tied with
its score, for minDCF's ties, and Cllr's sums), so an evaluation holds the scores and labels
it was given and little more, however the scores tie (compute-eer-pauc: 5 bytes a trial
piped, 9 keyed).
"""

import numpy as np

from pauc_backend.metrics import curves, dcf, error_rates, llr, ranking
from pauc_backend.metrics.registry import Setting, summarize
from pauc_backend.metrics.validation import (check_costs, check_labels, check_p_targets,
                                             check_scores)

__all__ = ["TrialScores"]

_STEP = 1 << 18          # trials per block of sort_in_place's pass (~30 bytes each in temporaries)


class TrialScores:
    """Sorted target (``tar``) and non-target (``non``) scores of one trial list."""

    def __init__(self, target_scores, nontarget_scores):
        tar, non = check_scores(target_scores, nontarget_scores)
        self._raw = (tar, non)
        self.tar, self.non = np.sort(tar), np.sort(non)
        self._trials = self._tie_ranks = None
        self._positions = None
        self._cllr, self._in_place = None, False

    @classmethod
    def from_trials(cls, scores, is_target):
        """From a trial list in its own order; minDCF then breaks ties in that order.

        Memory: the two classes are copied once and sorted in place (8 bytes a trial for
        float64 scores besides the caller's arrays); the unsorted classes (``llr`` metrics)
        are taken from the trial list again when needed."""
        scores, is_target = check_labels(scores, is_target)
        self = cls.__new__(cls)
        self.tar, self.non = scores[is_target], scores[~is_target]
        self.tar.sort()
        self.non.sort()
        self._raw = None
        self._trials = (scores, is_target)
        self._tie_ranks = None
        self._positions = None
        self._cllr, self._in_place = None, False
        return self

    @classmethod
    def sort_in_place(cls, scores, is_target, cllr=False, step=_STEP):
        """``from_trials`` without a copy of the scores, for a caller that gives its arrays
        up: ``scores`` (1-D float32 or float64) becomes the non-targets then the targets, each
        class sorted (``non`` and ``tar`` are views of it); ``is_target`` is only read. In one
        pass over blocks the non-targets move forward in their order (the targets were
        copied first) and each target's rank among the trials holding its score is counted
        (``dcf.TieRanks``): every minDCF tie between the classes is a run of such trials, so
        minDCF breaks ties exactly as ``from_trials``. With ``cllr`` Cllr is summed in trial
        order before the sort (the only metric whose last bits depend on the order);
        otherwise ``raw`` is gone.
        Other inputs (lists, other dtypes, views) go through ``from_trials``; ``step``: the
        trials of one block (for tests)."""
        if not (isinstance(scores, np.ndarray) and scores.dtype in (np.float32, np.float64)
                and scores.ndim == 1 and scores.flags.c_contiguous and scores.flags.writeable
                and isinstance(is_target, np.ndarray) and is_target.dtype == bool
                and is_target.shape == scores.shape):
            return cls.from_trials(scores, is_target)
        for start in range(0, scores.size, step):
            if np.isnan(scores[start:start + step]).any():
                raise ValueError("scores contain NaN")
        num_tar = int(np.count_nonzero(is_target))
        if num_tar == 0 or num_tar == scores.size:
            raise ValueError("need at least one target and one non-target score (got %d and "
                             "%d)" % (num_tar, scores.size - num_tar))
        targets = scores[is_target]                       # trial order
        ties = dcf.TieRanks(np.unique(targets))
        write = 0
        for start in range(0, scores.size, step):
            block, labels = scores[start:start + step], is_target[start:start + step]
            ties.add(block, labels)
            kept = block[~labels]
            scores[write:write + kept.size] = kept        # write <= start: nothing unread
            write += kept.size
        self = cls.__new__(cls)
        self.non, self.tar = scores[:write], scores[write:]
        self.tar[:] = targets
        self._cllr = llr.cllr(targets, self.non) if cllr else None
        self._trials = None
        self._tie_ranks = ties.sorted_ranks(targets)
        del targets, ties
        self.non.sort()
        self.tar.sort()
        self._raw = None
        self._positions = None
        self._in_place = True
        return self

    @property
    def raw(self):
        """The target and non-target scores in their input order (not after
        ``sort_in_place``)."""
        if self._in_place:
            raise ValueError("the trial order was given up (TrialScores.sort_in_place)")
        if self._raw is None:
            scores, is_target = self._trials
            return scores[is_target], scores[~is_target]
        return self._raw

    @property
    def num_tar(self):
        return self.tar.size

    @property
    def num_non(self):
        return self.non.size

    def eer(self, method="kaldi"):
        """``(eer, threshold)``; the threshold is None for ``method="rocch"``."""
        if method == "kaldi":
            return error_rates.kaldi_eer_sorted(self.tar, self.non)
        if method == "rocch":
            return error_rates.rocch_eer_from_hull(*self.rocch()), None
        raise ValueError("method must be 'kaldi' or 'rocch' (got %r)" % (method,))

    def min_dcf(self, p_target=0.01, c_miss=1, c_fa=1):
        """``DcfResult`` (a list for a sequence of priors), as ``dcf.min_dcf_from_trials``."""
        p, scalar = check_p_targets(p_target)
        check_costs(c_miss, c_fa)
        if self._positions is None:
            self._positions = dcf.target_positions(self.tar, self.non)
        results = dcf.min_dcf_sorted(self.tar, self.non, self._positions, p, c_miss, c_fa)
        if self._trials is not None or self._tie_ranks is not None:
            shared = dcf.shared_ties_that_matter(self.tar, self.non, results, p, c_miss, c_fa)
            if shared.size:
                if self._tie_ranks is None:
                    self._tie_ranks = dcf.tie_ranks(*self._trials)
                positions = dcf.target_positions(self.tar, self.non, self._tie_ranks, shared)
                results = dcf.min_dcf_sorted(self.tar, self.non, positions, p, c_miss, c_fa)
        return results[0] if scalar else results

    def pauc(self, alpha=0.0, beta=0.01):
        """``(pauc, R)``: eq. 5 and the number of non-targets in the band."""
        return ranking.pauc_sorted(self.tar, self.non, alpha, beta)

    def pauc_mcclish(self, alpha=0.0, beta=0.01):
        area = ranking.partial_roc_area_sorted(self.tar, self.non, alpha, beta)
        return ranking.mcclish(area, alpha, beta)

    def auc(self):
        return ranking.auc_sorted(self.tar, self.non)

    def average_precision(self):
        return ranking.average_precision_sorted(self.tar, self.non)

    def act_dcf(self, p_target=0.01, c_miss=1, c_fa=1):
        """``llr.act_dcf`` (the sorted classes give what the input order gives)."""
        return llr.act_dcf_sorted(self.tar, self.non, p_target, c_miss, c_fa)

    def cllr(self):
        """``llr.cllr`` of the classes in input order."""
        return self._cllr if self._cllr is not None else llr.cllr(*self.raw)

    def min_cllr(self):
        return llr.min_cllr_sorted(self.tar, self.non)

    def det_curve(self):
        return curves.det_curve_sorted(self.tar, self.non)

    def rocch(self):
        """``(pmiss, pfa)`` vertices of the ROC convex hull."""
        return curves.rocch_sorted(self.tar, self.non)

    def summary(self, p_targets=(0.01,), alpha=0.0, beta=0.01, c_miss=1, c_fa=1,
                eer_method="kaldi", llr=False):
        """Every registered metric (``metrics.registry``) as a JSON-ready dict of plain numbers;
        pAUC is None when the band is empty."""
        return summarize(self, Setting(p_targets, alpha, beta, c_miss, c_fa, eer_method, llr))
