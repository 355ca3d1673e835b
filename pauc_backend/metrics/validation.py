"""Argument checks shared by the metrics: score arrays, priors, costs and the pAUC band.

Scores keep float32 when they come as float32 (Kaldi's ``BaseFloat``; sorting them is also cheaper)
and become float64 otherwise. NaN is refused everywhere; +-inf is a valid score (an LLR may be
infinite) and sorts to the ends.
"""

from fractions import Fraction

import numpy as np

__all__ = ["check_scores", "check_labels", "check_p_targets", "check_costs", "check_band"]


def _as_scores(values, name):
    array = np.asarray(values)
    if array.dtype != np.float32:
        try:
            array = array.astype(np.float64, copy=False)
        except (TypeError, ValueError):
            raise ValueError("%s must be numbers (got dtype %s)" % (name, array.dtype)) from None
    array = array.ravel()
    if np.isnan(array).any():
        raise ValueError("%s contain NaN" % name)
    return array


def check_scores(target_scores, nontarget_scores):
    """``(tar, non)`` as 1-D float arrays; ValueError if either is empty or holds NaN."""
    tar = _as_scores(target_scores, "target scores")
    non = _as_scores(nontarget_scores, "non-target scores")
    if tar.dtype != non.dtype:
        tar, non = tar.astype(np.float64), non.astype(np.float64)
    if tar.size == 0 or non.size == 0:
        raise ValueError("need at least one target and one non-target score (got %d and %d)"
                         % (tar.size, non.size))
    return tar, non


def check_labels(scores, is_target):
    """``(scores, is_target)`` of a trial list in its own order; both classes must occur."""
    scores = _as_scores(scores, "scores")
    is_target = np.asarray(is_target).ravel()
    if is_target.dtype != bool:
        if not np.isin(is_target, (0, 1)).all():
            raise ValueError("is_target must be boolean or 0/1")
        is_target = is_target.astype(bool)
    if is_target.shape != scores.shape:
        raise ValueError("%d scores but %d labels" % (scores.size, is_target.size))
    num_tar = int(np.count_nonzero(is_target))
    if num_tar == 0 or num_tar == scores.size:
        raise ValueError("need at least one target and one non-target score (got %d and %d)"
                         % (num_tar, scores.size - num_tar))
    return scores, is_target


def check_p_targets(p_target):
    """``(array of priors, was_scalar)``; every prior must lie strictly between 0 and 1."""
    p = np.asarray(p_target, dtype=np.float64)
    scalar = p.ndim == 0
    p = p.ravel()
    if p.size == 0 or np.any(~((p > 0) & (p < 1))):
        raise ValueError("p_target must lie strictly between 0 and 1 (got %s)" % (p_target,))
    return p, scalar


def check_costs(c_miss, c_fa):
    if not (c_miss > 0 and c_fa > 0):
        raise ValueError("c_miss and c_fa must be positive (got %r and %r)" % (c_miss, c_fa))


def check_band(alpha, beta):
    """The FPR band as exact fractions of its shortest decimal form (0.07 means 7/100).

    So k_alpha = ceil(K alpha) and k_beta = floor(K beta) are exact integers, free of the binary
    rounding that would make ceil(300 * 0.07) = 22.
    """
    a, b = _decimal_fraction(alpha, "alpha"), _decimal_fraction(beta, "beta")
    if not (0 <= a < b <= 1):
        raise ValueError("need 0 <= alpha < beta <= 1 (got alpha=%r, beta=%r)" % (alpha, beta))
    return a, b


def _decimal_fraction(value, name):
    if isinstance(value, Fraction):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError("%s must be a number (got %r)" % (name, value)) from None
    if not np.isfinite(number):
        raise ValueError("%s must be finite (got %r)" % (name, value))
    return Fraction(repr(number))
