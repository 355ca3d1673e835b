"""Calibration-sensitive metrics of log-likelihood-ratio scores (BOSARIS definitions).

Every function takes the target and non-target scores (natural-log LLRs, higher = more likely the
same speaker) as two 1-D arrays.

- ``cllr``: Cllr = 1/2 [ 1/N_tar sum_tar log2(1 + e^{-s}) + 1/N_non sum_non log2(1 + e^{s}) ]
  (Brummer & du Preez 2006; BOSARIS ``cllr.m``). 0 is perfect; 1 is the score-free system llr = 0.
- ``min_cllr``: Cllr after the optimal monotone calibration. PAV (isotonic regression) of the
  labels on the scores gives posteriors at the empirical prior P = N_tar / (N_tar + N_non); the
  LLRs are logit(posterior) - logit(P) (BOSARIS ``opt_loglr.m``). Tied scores are pooled into one
  PAV bin (a function of the score cannot split them; BOSARIS instead orders tied non-targets
  before targets, which is optimistic). A bin of only non-targets has llr = -inf and one of only
  targets llr = +inf; both contribute their limit 0 to the sum, as BOSARIS's ``neglogsigmoid``.
- ``act_dcf``: normalised actual DCF at the Bayes threshold theta = -logit(p_eff),
  p_eff = p c_miss / (p c_miss + (1 - p) c_fa). Pmiss = fraction of targets with llr < theta,
  Pfa = fraction of non-targets with llr >= theta (a score exactly at theta is accepted), and
  DCF = [p c_miss Pmiss + (1 - p) c_fa Pfa] / min(p c_miss, (1 - p) c_fa) (BOSARIS
  ``fast_actDCF.m``, normalised). 1 is the cost of the best decision made without the scores.
- ``bayes_error_curve``: the normalised Bayes error-rate (NBER) plot's curves, actual and
  minimum normalised DCF over a grid of prior log-odds (its docstring gives the definition).
"""

from collections import namedtuple

import numpy as np

__all__ = ["cllr", "min_cllr", "act_dcf", "pav", "optimal_llrs", "min_cllr_sorted",
           "act_dcf_sorted", "bayes_error_curve", "BayesErrorCurve", "NBER_LOG_ODDS",
           "NBER_HELP"]

# The NBER plot's grid: prior log-odds from -10 to 5 in steps of 0.1 (P_tar 4.5e-5 to 0.993),
# the speaker-detection range of BOSARIS's plots (NIST's 0.01, 0.005 and 0.001 lie at -4.6,
# -5.3 and -6.9) and the prior-0.5 point and beyond.
NBER_LOG_ODDS = np.round(np.linspace(-10.0, 5.0, 151), 10)

NBER_HELP = ("actual and minimum normalised DCF (c-miss = c-fa = 1) against the prior "
             "log-odds logit(P_tar) from -10 to 5 in steps of 0.1, y from 0 to 1.2, the "
             "default (prior-only) line at 1 and the --p-target prior marked "
             "(docs/tool-reference.md#plot-det-roc)")

BayesErrorCurve = namedtuple("BayesErrorCurve", "prior_log_odds act_dcf min_dcf")

_LOG2 = np.log(2.0)


def _check_scores(tar, non):
    tar = np.asarray(tar, dtype=np.float64).ravel()
    non = np.asarray(non, dtype=np.float64).ravel()
    if tar.size == 0 or non.size == 0:
        raise ValueError("need at least one target and one non-target score (got %d and %d)"
                         % (tar.size, non.size))
    if np.isnan(tar).any() or np.isnan(non).any():
        raise ValueError("scores contain NaN")
    return tar, non


_BLOCK = 1 << 18


def _mean_softplus(x, sign):
    """mean of log(1 + exp(sign * x)) in float64, over blocks (no n-sized temporary, and a
    float32 ``x`` is widened a block at a time: the same sum as from a float64 copy)."""
    total = 0.0
    for start in range(0, x.size, _BLOCK):
        part = np.multiply(x[start:start + _BLOCK], sign, dtype=np.float64)
        total += np.sum(np.logaddexp(0.0, part, out=part))
    return total / x.size


def _check_floats(tar, non):
    """``_check_scores`` keeping float32 as it is (what is only read block by block)."""
    if not all(isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype in (np.float32, np.float64)
               for x in (tar, non)):
        return _check_scores(tar, non)
    if tar.size == 0 or non.size == 0:
        raise ValueError("need at least one target and one non-target score (got %d and %d)"
                         % (tar.size, non.size))
    for x in (tar, non):
        for start in range(0, x.size, _BLOCK):
            if np.isnan(x[start:start + _BLOCK]).any():
                raise ValueError("scores contain NaN")
    return tar, non


def cllr(tar, non):
    """Cllr in bits (BOSARIS ``cllr.m``): the prior-0.5 cross-entropy of the LLRs. The sums
    run in the order of the input (what decides the last bits)."""
    tar, non = _check_floats(tar, non)
    c_tar, c_non = _mean_softplus(tar, -1.0), _mean_softplus(non, 1.0)
    return float(0.5 * (c_tar + c_non) / _LOG2)


def pav(y, weights=None):
    """Pool-adjacent-violators: the weighted least-squares non-decreasing fit to ``y``."""
    from scipy.optimize import isotonic_regression   # slow to import (0.35 s): only PAV needs it

    y = np.asarray(y, dtype=np.float64)
    if weights is None:
        return isotonic_regression(y).x
    return isotonic_regression(y, weights=np.asarray(weights, dtype=np.float64)).x


def _pav_bins(tar, non):
    """PAV of the labels on the pooled scores, by tied-score bin: (bin of each score, posterior,
    target count, non-target count) with bins in increasing score order."""
    scores = np.concatenate([tar, non])
    values, inverse = np.unique(scores, return_inverse=True)
    n_tar = np.bincount(inverse[:tar.size], minlength=values.size).astype(np.float64)
    n_non = np.bincount(inverse[tar.size:], minlength=values.size).astype(np.float64)
    posterior = pav(n_tar / (n_tar + n_non), n_tar + n_non)
    return inverse, posterior, n_tar, n_non


def _ascending(scores):
    """``scores`` itself when already non-decreasing (no copy; checked a block at a time),
    else a sorted copy."""
    for start in range(0, scores.size - 1, _BLOCK):
        piece = scores[start:start + _BLOCK + 1]
        if (piece[1:] < piece[:-1]).any():
            return np.sort(scores)
    return scores


def _pav_posteriors(tar, non):
    """``_pav_bins`` without the bin of each score (what ``min_cllr`` needs), on runs of bins
    instead of bins: the non-targets strictly between two consecutive distinct target scores
    are pooled into one bin of posterior 0. Adjacent observations with equal values have
    equal fits in the (unique) weighted isotonic regression, so PAV gives the same posteriors
    there; the bins are at most 2 * (distinct target scores) + 1, and nothing n-sized is
    made but sorted copies of unsorted inputs."""
    tar, non = _ascending(tar), _ascending(non)
    first = np.ones(tar.size, dtype=bool)
    np.not_equal(tar[1:], tar[:-1], out=first[1:])
    values = tar[first]                                   # distinct target scores
    starts = np.flatnonzero(first)
    n_at = np.diff(np.append(starts, tar.size)).astype(np.float64)
    below = np.searchsorted(non, values, side="left")     # non-targets < each value
    upto = np.searchsorted(non, values, side="right")     # non-targets <= each value
    between = np.diff(np.concatenate([[0], upto]))[:values.size] - (upto - below)
    between = np.append(between, non.size - upto[-1])     # gaps before each value, and after
    # bins in score order: gap 0, value 0, gap 1, value 1, ..., gap V
    n_tar = np.zeros(2 * values.size + 1)
    n_non = np.empty(2 * values.size + 1)
    n_tar[1::2] = n_at
    n_non[1::2] = upto - below
    n_non[0::2] = between
    keep = (n_tar + n_non) > 0
    n_tar, n_non = n_tar[keep], n_non[keep]
    posterior = pav(n_tar / (n_tar + n_non), n_tar + n_non)
    return posterior, n_tar, n_non


def optimal_llrs(tar, non):
    """LLRs after the optimal monotone (PAV) calibration (BOSARIS ``opt_loglr``); may hold +-inf."""
    tar, non = _check_scores(tar, non)
    inverse, posterior, _, _ = _pav_bins(tar, non)
    with np.errstate(divide="ignore"):
        log_odds = np.log(posterior) - np.log1p(-posterior)
    llr = (log_odds - np.log(tar.size / non.size))[inverse]
    return llr[:tar.size], llr[tar.size:]


def min_cllr(tar, non):
    """Cllr of the PAV-calibrated scores: the best Cllr any monotone calibration can reach."""
    return min_cllr_sorted(*_check_floats(tar, non))


def min_cllr_sorted(tar, non):
    """``min_cllr`` of checked float arrays; no copy of one already ascending. Only counts of
    scores are used, so float32 scores give what their float64 copies give."""
    posterior, n_tar, n_non = _pav_posteriors(tar, non)
    # PAV blocks pool whole bins, so counts per distinct posterior give the exact Cllr; in a
    # block with posterior p, log(1 + e^{-llr}) = log(1 + (1 - p) N_tar / (p N_non)).
    _, block = np.unique(posterior, return_inverse=True)
    t = np.bincount(block, weights=n_tar)
    n = np.bincount(block, weights=n_non)
    has_t, has_n = t > 0, n > 0
    odds_ratio = tar.size / non.size
    c_tar = np.sum(t[has_t] * np.log1p((n[has_t] / t[has_t]) * odds_ratio))
    c_non = np.sum(n[has_n] * np.log1p((t[has_n] / n[has_n]) / odds_ratio))
    return float(0.5 * (c_tar / tar.size + c_non / non.size) / _LOG2)


def _count_below(ascending, theta):
    """``np.searchsorted(ascending, theta, side="left")`` (how many scores are < each float64
    ``theta``) without widening a float32 array to float64 (numpy would copy it): for float32
    x, x < theta exactly when x < the least float32 >= theta."""
    if ascending.dtype != np.float32:
        return np.searchsorted(ascending, theta, side="left")
    with np.errstate(over="ignore"):
        bound = theta.astype(np.float32)
        low = bound.astype(np.float64) < theta
        bound[low] = np.nextafter(bound[low], np.float32(np.inf))
    return np.searchsorted(ascending, bound, side="left")


def act_dcf(tar, non, p_target=0.01, c_miss=1.0, c_fa=1.0):
    """Normalised actual DCF at the Bayes threshold of each ``p_target`` (scalar or array)."""
    tar, non = _check_floats(tar, non)
    return act_dcf_sorted(_ascending(tar), _ascending(non), p_target, c_miss, c_fa)


def act_dcf_sorted(tar, non, p_target=0.01, c_miss=1.0, c_fa=1.0):
    """``act_dcf`` of ascending float arrays (no copy)."""
    p = np.asarray(p_target, dtype=np.float64)
    if np.any((p <= 0) | (p >= 1)):
        raise ValueError("p_target must lie strictly between 0 and 1 (got %s)" % (p_target,))
    if c_miss <= 0 or c_fa <= 0:
        raise ValueError("c_miss and c_fa must be positive")
    theta = np.atleast_1d(np.log1p(-p) - np.log(p) + np.log(c_fa) - np.log(c_miss))
    p_miss = _count_below(tar, theta) / tar.size
    p_fa = 1.0 - _count_below(non, theta) / non.size
    if p.ndim == 0:
        p_miss, p_fa = p_miss[0], p_fa[0]
    dcf = p * c_miss * p_miss + (1.0 - p) * c_fa * p_fa
    result = dcf / np.minimum(p * c_miss, (1.0 - p) * c_fa)
    return float(result) if result.ndim == 0 else result


def bayes_error_curve(trials, prior_log_odds=NBER_LOG_ODDS):
    """The curves of the normalised Bayes error-rate plot of LLR scores: ``BayesErrorCurve``
    (prior_log_odds, act_dcf, min_dcf), arrays over ``prior_log_odds`` (ascending, finite).

    Definition (Brümmer & de Villiers, "The BOSARIS Toolkit: Theory, Algorithms and Code for
    Surviving the New DCF", NIST SRE'11 Analysis Workshop, 2011, arXiv:1304.2865: the
    "normalized Bayes error-rate plot"; Brümmer's thesis calls its unnormalised form the APE
    plot, PYLLR's ``BayesErrorPlot`` draws that). At prior log-odds x = logit(P_tar), the
    effective prior of unit costs, the Bayes decision accepts a trial when its LLR >= -x, and

        E(x) = P_tar Pmiss(-x) + (1 - P_tar) Pfa(-x),  normalised by min(P_tar, 1 - P_tar),

    the error-rate of deciding by the prior alone (the plot's default line, 1). ``act_dcf`` is
    that normalised rate (``act_dcf`` at p_target = P_tar, c_miss = c_fa = 1, with the
    threshold -x itself). ``min_dcf`` is the least normalised DCF over thresholds, what a
    perfect calibration of the same scores would give: here the minDCF the toolkit reports
    (``dcf`` module, Kaldi's compute_min_dcf.py; with ``TrialScores.from_trials`` tied scores
    keep the trial order). BOSARIS takes the minimum on the ROC convex hull, which has the
    accept-everything point and pools ties, so the two differ where accepting every trial
    would be best (x > 0; this minimum can then exceed 1) and where a tie of target and
    non-target scores straddles the best threshold. ``trials``: a ``TrialScores``, or
    ``(target_scores, nontarget_scores)``."""
    if not hasattr(trials, "min_dcf"):
        from pauc_backend.metrics.trial_scores import TrialScores
        trials = TrialScores(*trials)
    x = np.asarray(prior_log_odds, dtype=np.float64).ravel()
    if x.size == 0 or not np.all(np.isfinite(x)) or np.any(np.diff(x) <= 0):
        raise ValueError("prior_log_odds must be finite and strictly ascending")
    p = 1.0 / (1.0 + np.exp(-x))
    # act_dcf_sorted's formula at the threshold -x itself (not -logit(p): a score exactly on
    # a grid point's threshold is accepted, as the definition says)
    p_miss = _count_below(trials.tar, -x) / trials.num_tar
    p_fa = 1.0 - _count_below(trials.non, -x) / trials.num_non
    act = (p * p_miss + (1.0 - p) * p_fa) / np.minimum(p, 1.0 - p)
    low = np.array([r.min_dcf for r in trials.min_dcf(p)])
    return BayesErrorCurve(x, act, low)
