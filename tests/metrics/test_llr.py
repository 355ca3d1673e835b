"""LLR metrics against brute-force references written from the BOSARIS definitions."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pauc_backend.metrics.llr import act_dcf, cllr, min_cllr, optimal_llrs, pav


def brute_cllr(tar, non):
    c_tar = sum(math.log2(1 + math.exp(-s)) for s in tar) / len(tar)
    c_non = sum(math.log2(1 + math.exp(s)) for s in non) / len(non)
    return 0.5 * (c_tar + c_non)


def brute_min_cllr(tar, non):
    """Textbook PAV (pool tied scores first, then merge violating neighbours) and the limits
    log2(1 + e^{-inf}) = 0 for the pure bins."""
    blocks = []  # [n_tar, n_non] per distinct score, increasing
    for value in sorted(set(tar) | set(non)):
        blocks.append([tar.count(value), non.count(value), [value]])
    merged = []
    for block in blocks:
        merged.append(block)
        while len(merged) > 1:
            (t1, n1, v1), (t2, n2, v2) = merged[-2], merged[-1]
            if t1 / (t1 + n1) >= t2 / (t2 + n2):
                merged[-2:] = [[t1 + t2, n1 + n2, v1 + v2]]
            else:
                break
    prior_log_odds = math.log(len(tar) / len(non))
    total_tar = total_non = 0.0
    for t, n, _ in merged:
        if t and n:
            llr = math.log(t / n) - prior_log_odds
            total_tar += t * math.log2(1 + math.exp(-llr))
            total_non += n * math.log2(1 + math.exp(llr))
    return 0.5 * (total_tar / len(tar) + total_non / len(non))


def brute_act_dcf(tar, non, p, c_miss=1.0, c_fa=1.0):
    p_eff = p * c_miss / (p * c_miss + (1 - p) * c_fa)
    theta = -math.log(p_eff / (1 - p_eff))
    p_miss = sum(s < theta for s in tar) / len(tar)
    p_fa = sum(s >= theta for s in non) / len(non)
    return (p * c_miss * p_miss + (1 - p) * c_fa * p_fa) / min(p * c_miss, (1 - p) * c_fa)


score_lists = st.lists(st.integers(-6, 6).map(lambda i: i * 0.75), min_size=1, max_size=25)


@settings(max_examples=200, deadline=None)
@given(score_lists, score_lists)
def test_min_cllr_matches_textbook_pav_with_tied_scores(tar, non):
    assert min_cllr(tar, non) == pytest.approx(brute_min_cllr(tar, non), rel=1e-9, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(score_lists, score_lists)
def test_cllr_matches_the_definition(tar, non):
    assert cllr(tar, non) == pytest.approx(brute_cllr(tar, non), rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(score_lists, score_lists, st.sampled_from([0.001, 0.01, 0.1, 0.5, 0.9]),
       st.sampled_from([1.0, 10.0]))
def test_act_dcf_matches_the_definition(tar, non, p, c_miss):
    assert act_dcf(tar, non, p, c_miss=c_miss) == pytest.approx(
        brute_act_dcf(tar, non, p, c_miss=c_miss), rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(score_lists, score_lists, st.floats(0.05, 20), st.floats(-5, 5))
def test_min_cllr_is_below_cllr_of_every_affine_calibration_and_below_one(tar, non, a, b):
    lower = min_cllr(tar, non)
    assert 0.0 <= lower <= 1.0 + 1e-12
    assert lower <= cllr(a * np.array(tar) + b, a * np.array(non) + b) + 1e-12


def test_min_cllr_is_invariant_under_monotone_transforms():
    rng = np.random.default_rng(1)
    tar, non = rng.normal(1.5, 1, 300), rng.normal(-1, 1.3, 3000)
    expected = min_cllr(tar, non)
    assert min_cllr(np.exp(tar), np.exp(non)) == pytest.approx(expected, rel=1e-12)
    assert min_cllr(tar ** 3 - 7, non ** 3 - 7) == pytest.approx(expected, rel=1e-12)


def test_separated_scores_have_zero_min_cllr_and_infinite_optimal_llrs():
    tar, non = [3.0, 4.0, 5.0], [-1.0, 0.0, 2.9]
    assert min_cllr(tar, non) == 0.0
    opt_tar, opt_non = optimal_llrs(tar, non)
    assert np.all(opt_tar == np.inf) and np.all(opt_non == -np.inf)


def test_optimal_llrs_are_pav_posteriors_minus_the_empirical_prior_log_odds():
    tar, non = [1.0, 3.0, 4.0], [0.0, 2.0, 3.5, 5.0, -1.0]
    # Sorted labels: -1 n, 0 n, 1 t, 2 n, 3 t, 3.5 n, 4 t, 5 n -> PAV blocks
    # {-1, 0}: 0, {1, 2}: 1/2, {3, 3.5, 4, 5}: 1/2 (pooled with the previous one)
    opt_tar, opt_non = optimal_llrs(tar, non)
    prior = math.log(3 / 5)
    assert opt_tar == pytest.approx([-prior] * 3)
    assert opt_non[1:4] == pytest.approx([-prior] * 3)
    assert np.all(opt_non[[0, 4]] == -np.inf)


def test_score_free_system_costs_one():
    zeros = np.zeros(10)
    assert cllr(zeros, zeros) == pytest.approx(1.0)
    assert min_cllr(zeros, zeros) == pytest.approx(1.0)
    assert act_dcf(zeros, zeros, [0.01, 0.5, 0.9]) == pytest.approx([1.0, 1.0, 1.0])


def test_score_exactly_at_the_bayes_threshold_is_accepted():
    # p = 0.5: theta = 0; the target at 0 is no miss, the non-target at 0 is a false alarm.
    assert act_dcf([0.0, 1.0], [0.0, -1.0], 0.5) == pytest.approx(0.5)


def test_act_dcf_is_never_below_the_minimum_over_thresholds():
    rng = np.random.default_rng(2)
    tar, non = rng.normal(2, 1, 200), rng.normal(0, 1, 2000)
    for p in (0.01, 0.1, 0.5):
        thresholds = np.concatenate([tar, non, [np.inf]])
        costs = [(p * np.mean(tar < t) + (1 - p) * np.mean(non >= t)) / min(p, 1 - p)
                 for t in thresholds]
        assert act_dcf(tar, non, p) >= min(costs) - 1e-12


def test_perfectly_calibrated_gaussian_llrs_have_the_closed_form_cllr():
    # llr ~ N(mu, 2 mu) for targets and N(-mu, 2 mu) for non-targets is calibrated; then
    # Cllr = E[log2(1 + e^{-llr})] over targets = minCllr in the limit of many trials.
    rng = np.random.default_rng(3)
    mu = 4.0
    tar = rng.normal(mu, math.sqrt(2 * mu), 200000)
    non = rng.normal(-mu, math.sqrt(2 * mu), 200000)
    x, w = np.polynomial.hermite_e.hermegauss(80)
    expected = np.sum(w * np.logaddexp(0, -(mu + math.sqrt(2 * mu) * x))) / math.sqrt(
        2 * math.pi) / math.log(2)
    assert cllr(tar, non) == pytest.approx(expected, rel=0.01)
    assert min_cllr(tar, non) == pytest.approx(expected, rel=0.02)


def test_pav_is_the_least_squares_monotone_fit():
    assert pav([1.0, 3.0, 2.0, 4.0]) == pytest.approx([1.0, 2.5, 2.5, 4.0])
    assert pav([1.0, 0.0], weights=[3.0, 1.0]) == pytest.approx([0.75, 0.75])


@pytest.mark.parametrize("tar, non", [([], [1.0]), ([1.0], []), ([np.nan], [0.0])])
def test_empty_or_nan_scores_are_an_error(tar, non):
    for metric in (cllr, min_cllr, act_dcf):
        with pytest.raises(ValueError):
            metric(tar, non)


def test_p_target_outside_the_open_unit_interval_is_an_error():
    with pytest.raises(ValueError):
        act_dcf([1.0], [0.0], 1.0)
