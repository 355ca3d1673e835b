"""pAUC (eq. 5) against a brute-force double sum, AUC/AP/McClish against scikit-learn."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import average_precision_score, roc_auc_score

from pauc_backend.metrics import (TrialScores, auc, average_precision, partial_roc_area, pauc,
                                  pauc_mcclish)
from pauc_backend.metrics.ranking import band_ranks


def pauc_brute(tar, non, alpha, beta):
    """Eq. 5 literally: N0 = non-targets ranked k_a+1..k_b in descending order, O(J R)."""
    K = len(non)
    k_alpha = math.ceil(round(K * alpha, 9))
    k_beta = math.floor(round(K * beta, 9))
    band = sorted(non, reverse=True)[k_alpha:k_beta]
    total = sum((t > s) + 0.5 * (t == s) for t in tar for s in band)
    return total / (len(tar) * len(band))


def sklearn_inputs(tar, non):
    return np.r_[np.ones(len(tar)), np.zeros(len(non))], np.r_[tar, non]


def tied_scores(rng, size, loc):
    return np.round(rng.normal(loc, 1.0, size), 1)   # 0.1 steps: many ties, across classes


@pytest.mark.parametrize("seed", range(6))
def test_auc_and_average_precision_match_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    tar, non = tied_scores(rng, 80, 1.0), tied_scores(rng, 900, 0.0)
    y, s = sklearn_inputs(tar, non)
    assert auc(tar, non) == pytest.approx(roc_auc_score(y, s), abs=1e-13)
    assert average_precision(tar, non) == pytest.approx(average_precision_score(y, s),
                                                        abs=1e-13)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_fpr", [0.001, 0.01, 0.05, 0.3, 0.5])
def test_mcclish_value_is_scikit_learns_max_fpr_auc(seed, max_fpr):
    rng = np.random.default_rng(100 + seed)
    tar, non = tied_scores(rng, 60, 1.5), tied_scores(rng, 1500, 0.0)
    y, s = sklearn_inputs(tar, non)
    assert pauc_mcclish(tar, non, 0.0, max_fpr) == pytest.approx(
        roc_auc_score(y, s, max_fpr=max_fpr), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-6, 6), min_size=1, max_size=25),
       st.lists(st.integers(-6, 6), min_size=1, max_size=60),
       st.sampled_from([(0.0, 0.01), (0.0, 0.1), (0.05, 0.2), (0.1, 0.5), (0.3, 0.7),
                        (0.0, 1.0), (0.25, 1.0), (0.02, 0.07)]))
def test_pauc_is_the_eq5_double_sum_with_ties_at_the_band_edges(tar, non, band):
    alpha, beta = band
    k_alpha, k_beta = band_ranks(len(non), alpha, beta)
    if k_beta <= k_alpha:
        with pytest.raises(ValueError, match="no non-target"):
            pauc(tar, non, alpha, beta)
        return
    value = pauc(tar, non, alpha, beta)
    assert value == pytest.approx(pauc_brute(tar, non, alpha, beta), abs=1e-14)
    assert 0.0 <= value <= 1.0


def test_band_edges_are_exact_decimal_fractions():
    # 300 * 0.07 is 21.000000000000004 in binary floating point; the band is still ranks 1..21.
    assert band_ranks(300, 0.07, 0.07 + 0.1) == (21, 51)
    assert band_ranks(15600, 0.0, 0.01) == (0, 156)
    assert band_ranks(99, 0.0, 0.01) == (0, 0)


def test_pauc_over_the_whole_band_is_the_auc():
    rng = np.random.default_rng(7)
    tar, non = tied_scores(rng, 50, 1.0), tied_scores(rng, 400, 0.0)
    assert pauc(tar, non, 0.0, 1.0) == auc(tar, non)


def test_tied_nontargets_straddling_the_band_edge_all_count_alike():
    # Four non-targets tied at 1.0, the band takes two of them: eq. 5 does not care which.
    tar = np.array([0.5, 1.0, 2.0])
    non = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    assert pauc(tar, non, 0.0, 0.25) == pytest.approx((1 + 0.5 + 0) / 3)
    # ... whereas the area follows the tied run's diagonal step from TPR 1/3 (FPR 0) to 2/3
    # (FPR 1/2), so at the band edge FPR 1/4 the TPR is 1/2: a trapezoid.
    assert partial_roc_area(tar, non, 0.0, 0.25) == pytest.approx(0.25 * (1 / 3 + 1 / 2) / 2)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-40, 40), min_size=1, max_size=30),
       st.lists(st.integers(-40, 40), min_size=100, max_size=200))
def test_ranking_metrics_ignore_strictly_increasing_transforms(tar, non):
    tar, non = np.array(tar, float), np.array(non, float)
    warp = lambda x: np.exp(x / 10.0) * 5 - 3    # strictly increasing, keeps ties and order
    for metric in (auc, average_precision, lambda t, n: pauc(t, n, 0.0, 0.01),
                   lambda t, n: pauc_mcclish(t, n, 0.0, 0.1)):
        assert metric(warp(tar), warp(non)) == pytest.approx(metric(tar, non), abs=1e-12)


def test_perfect_system_scores_one_everywhere():
    tar, non = np.arange(10.0) + 100, np.arange(1000.0) / 100
    assert pauc(tar, non) == 1.0
    assert pauc_mcclish(tar, non, 0.0, 0.01) == pytest.approx(1.0)
    assert auc(tar, non) == 1.0
    assert average_precision(tar, non) == 1.0


def test_trial_scores_methods_equal_the_functions():
    rng = np.random.default_rng(8)
    tar, non = tied_scores(rng, 100, 1.0), tied_scores(rng, 3000, 0.0)
    trials = TrialScores(tar, non)
    assert trials.pauc(0.01, 0.05)[0] == pauc(tar, non, 0.01, 0.05)
    assert trials.pauc(0.01, 0.05)[1] == 120
    assert trials.pauc_mcclish(0.0, 0.02) == pauc_mcclish(tar, non, 0.0, 0.02)
    assert trials.auc() == auc(tar, non)
    assert trials.average_precision() == average_precision(tar, non)


@pytest.mark.parametrize("band", [(0.1, 0.1), (0.5, 0.2), (-0.1, 0.2), (0.0, 1.5)])
def test_bad_bands_are_refused(band):
    with pytest.raises(ValueError, match="alpha"):
        pauc([1.0], [0.0] * 100, *band)
