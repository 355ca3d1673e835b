"""Equal error rate: Kaldi's ``compute-eer`` exactly, or the ROCCH-EER of BOSARIS.

Kaldi (``ComputeEer`` in ivectorbin/compute-eer.cc), the default
    Scores are float32 (``BaseFloat``). With targets ``t`` (T of them) and non-targets ``n``
    (N) sorted ascending, walk the target positions p = 0, 1, ..., T-2 and stop at the first p
    with ``n[max(N - 1 - trunc(N p / T), 0)] < t[p]`` (no stop: p = T - 1). Then
    ``EER = p / T`` (a double rounded to float32, as Kaldi stores it) and the threshold is
    ``t[p]``. The EER is a *discrete* target position, not an interpolated crossing: it moves
    in steps of 1/T, and ties are whatever the sorted order gives. Exactness is bit for bit,
    including the truncation of ``N p * 1.0 / T`` and the float32 comparisons.

ROCCH-EER (BOSARIS ``rocch2eer``)
    The EER of the ROC convex hull (``curves.rocch``): for each hull segment between
    (Pfa_i, Pmiss_i) and (Pfa_i+1, Pmiss_i+1) take the line a Pfa + b Pmiss = 1 through both
    ends, and the candidate 1 / (a + b) where it meets Pfa = Pmiss (0 for a horizontal or
    vertical segment); the EER is the largest candidate. Tied scores are pooled, so this EER is
    independent of the order of ties and is what an optimally calibrated, possibly randomised,
    decision achieves. It is never above Kaldi's EER by more than about 1/T.
"""

import numpy as np

from pauc_backend.metrics import curves
from pauc_backend.metrics.validation import check_scores

__all__ = ["eer", "kaldi_eer_sorted", "rocch_eer_from_hull"]


def kaldi_eer_sorted(tar_sorted, non_sorted):
    """``(eer, threshold)`` of ``ComputeEer`` for ascending float32 target/non-target arrays."""
    num_tar, num_non = tar_sorted.size, non_sorted.size
    position = num_tar - 1
    if num_tar > 1:
        p = np.arange(num_tar - 1, dtype=np.int64)
        # (ssize_t)(N * p * 1.0 / T): an exact integer product, one rounding to double, one
        # correctly rounded division, then truncation towards zero.
        nn = ((num_non * p).astype(np.float64) / float(num_tar)).astype(np.int64)
        # float32 of the few elements compared, not copies of the whole arrays (rounding is
        # monotone, so they stay sorted)
        hit = (np.asarray(non_sorted[np.maximum(num_non - 1 - nn, 0)], dtype=np.float32)
               < np.asarray(tar_sorted[:-1], dtype=np.float32))
        if hit.any():
            position = int(np.argmax(hit))
    rate = np.float32(position * 1.0 / num_tar)
    return float(rate), float(np.float32(tar_sorted[position]))


def rocch_eer_from_hull(pmiss, pfa):
    """BOSARIS ``rocch2eer``: the EER of a ROC convex hull given as (Pmiss, Pfa) vertices."""
    x1, x2 = pfa[:-1], pfa[1:]
    y1, y2 = pmiss[:-1], pmiss[1:]
    flat = (x1 == x2) | (y1 == y2)
    with np.errstate(divide="ignore", invalid="ignore"):
        # a x + b y = 1 through both ends: a + b = (y2 - y1 + x1 - x2) / (x1 y2 - x2 y1).
        candidate = (x1 * y2 - x2 * y1) / (y2 - y1 + x1 - x2)
    candidate = np.where(flat, 0.0, candidate)
    return float(max(0.0, np.max(candidate))) if candidate.size else 0.0


def eer(target_scores, nontarget_scores, method="kaldi", return_threshold=False):
    """Equal error rate in [0, 1] (``method`` ``"kaldi"`` or ``"rocch"``; see the module doc).

    With ``return_threshold`` the Kaldi method returns ``(eer, threshold)``; the ROCCH-EER has
    no single threshold and returns ``(eer, None)``.
    """
    tar, non = check_scores(target_scores, nontarget_scores)
    if method == "kaldi":
        rate, threshold = kaldi_eer_sorted(np.sort(tar.astype(np.float32)),
                                           np.sort(non.astype(np.float32)))
    elif method == "rocch":
        pmiss, pfa = curves.rocch_sorted(np.sort(tar), np.sort(non))
        rate, threshold = rocch_eer_from_hull(pmiss, pfa), None
    else:
        raise ValueError("method must be 'kaldi' or 'rocch' (got %r)" % (method,))
    return (rate, threshold) if return_threshold else rate
