"""metrics.llr.bayes_error_curve: the curves of BOSARIS's normalised Bayes error-rate (NBER)
plot, checked against a brute-force reference of their definition, against what the metrics
report at a prior, and against the defining property of a perfect calibration."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pauc_backend.metrics import TrialScores, min_dcf_from_trials
from pauc_backend.metrics.llr import (NBER_LOG_ODDS, act_dcf, bayes_error_curve,
                                      optimal_llrs)


def brute_actual(scores, labels, x):
    """Normalised Bayes error rate at prior log-odds x: accept a trial when its LLR >= -x."""
    p = 1 / (1 + np.exp(-x))
    tar, non = scores[labels], scores[~labels]
    p_miss = np.mean(tar < -x)
    p_fa = np.mean(non >= -x)
    return (p * p_miss + (1 - p) * p_fa) / min(p, 1 - p)


def brute_minimum(scores, labels, x):
    """sid/compute_min_dcf.py, line by line: a stable sort of the trial list by score, the
    rates of rejecting each prefix, the least cost, normalised."""
    p = 1 / (1 + np.exp(-x))
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    num_tar, num_non = int(labels.sum()), int((~labels).sum())
    best, tar_seen, non_seen = float("inf"), 0, 0
    for i in order:
        tar_seen += labels[i]
        non_seen += not labels[i]
        fnr = tar_seen / float(num_tar)
        fpr = 1 - non_seen / float(num_non)
        best = min(best, fnr * p + fpr * (1 - p))
    return best / min(p, 1 - p)


@settings(max_examples=40)
@given(st.lists(st.tuples(st.integers(-30, 30), st.booleans()), min_size=4, max_size=60)
       .filter(lambda t: 0 < sum(l for _, l in t) < len(t)))
def test_the_curves_are_the_actual_and_minimum_normalised_dcf_by_definition(trials):
    """Scores on a 0.25 grid (ties between and within the classes); the minimum keeps the
    trial list's order in ties, as compute_min_dcf.py."""
    scores = np.array([s / 4 for s, _ in trials])
    labels = np.array([l for _, l in trials])
    grid = np.linspace(-8, 4, 25)
    curve = bayes_error_curve(TrialScores.from_trials(scores, labels), grid)
    np.testing.assert_array_equal(curve.prior_log_odds, grid)
    for k, x in enumerate(grid):
        assert curve.act_dcf[k] == pytest.approx(brute_actual(scores, labels, x), rel=1e-12)
        assert curve.min_dcf[k] == pytest.approx(brute_minimum(scores, labels, x), rel=1e-12)


def test_at_a_prior_the_curves_equal_the_reported_min_dcf_and_act_dcf():
    rng = np.random.default_rng(7)
    labels = rng.random(5000) < 0.1
    scores = np.round(np.where(labels, rng.normal(3, 2, 5000), rng.normal(-4, 2, 5000)), 2)
    priors = np.array([0.001, 0.005, 0.01, 0.1, 0.5])
    curve = bayes_error_curve(TrialScores.from_trials(scores, labels),
                              np.log(priors / (1 - priors)))
    reported = [r.min_dcf for r in min_dcf_from_trials(scores, labels, priors)]
    np.testing.assert_allclose(curve.min_dcf, reported, rtol=1e-12)
    np.testing.assert_allclose(curve.act_dcf, act_dcf(scores[labels], scores[~labels], priors),
                               rtol=1e-12)


def test_perfectly_calibrated_scores_have_no_calibration_loss():
    """PAV-calibrated LLRs (BOSARIS's opt_loglr) make the Bayes decision the best one at every
    prior: the actual curve lies on the minimum one (x < 0: below prior 0.5, where the
    reject-everything end is the only one either curve can reach)."""
    rng = np.random.default_rng(3)
    tar, non = optimal_llrs(rng.normal(2, 1.5, 400), rng.normal(-3, 1.5, 4000))
    curve = bayes_error_curve((tar, non))
    below = curve.prior_log_odds < 0
    np.testing.assert_allclose(curve.act_dcf[below], curve.min_dcf[below], rtol=1e-12)
    # the same scores stretched are miscalibrated: a loss wherever decisions change
    stretched = bayes_error_curve((3 * tar, 3 * non))
    assert np.all(stretched.act_dcf[below] >= curve.min_dcf[below] - 1e-12)
    assert np.any(stretched.act_dcf[below] > curve.min_dcf[below] + 0.05)
    np.testing.assert_allclose(stretched.min_dcf, curve.min_dcf, rtol=1e-12)  # rank only


def test_the_grid_is_the_stated_one_and_must_ascend():
    assert NBER_LOG_ODDS.size == 151 and NBER_LOG_ODDS[0] == -10 and NBER_LOG_ODDS[-1] == 5
    np.testing.assert_allclose(np.diff(NBER_LOG_ODDS), 0.1, atol=1e-9)
    for bad in ([], [0.0, 0.0], [1.0, -1.0], [np.inf]):
        with pytest.raises(ValueError, match="ascending"):
            bayes_error_curve(([1.0, 2.0], [0.0]), bad)
