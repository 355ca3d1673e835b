"""Cluster bootstrap against a brute-force bootstrap that repeats trials explicitly."""

import numpy as np
import pytest

from pauc_backend.metrics import TrialScores
from pauc_backend.metrics.bootstrap import (ClusterBootstrap, bootstrap_columns,
                                            bootstrap_statistics, cluster_codes,
                                            confidence_summary, percentile_intervals,
                                            resample_multiplicities)
from pauc_backend.metrics.registry import Setting


def _trials(seed, num_enroll, num_test, decimals=None, num_speakers=None):
    rng = np.random.default_rng(seed)
    enroll = np.repeat(np.arange(num_enroll), num_test)
    test = np.tile(np.arange(num_test), num_enroll)
    keep = rng.random(enroll.size) < 0.8                  # not a full grid
    enroll, test = enroll[keep], test[keep]
    speakers = num_speakers or num_enroll
    test_speaker = rng.integers(0, speakers, num_test)
    is_target = test_speaker[test] == enroll % speakers
    scores = rng.normal(size=enroll.size) + 2.0 * is_target
    if decimals is not None:                              # many ties, across classes too
        scores = np.round(scores, decimals)
    return scores, is_target, enroll, test


def brute_force(scores, is_target, enroll, test, num_resamples, seed, p_targets, alpha, beta):
    """Repeat trial (e, t) a_e * b_t times and evaluate the repeated list with TrialScores;
    the bootstrap's columns (metric, prior) are looked up in each summary by name."""
    codes_e, num_e = cluster_codes(enroll)
    codes_t, num_t = cluster_codes(test)
    cols = bootstrap_columns(Setting(p_targets, alpha, beta))
    assert [c.metric.key for c in cols] == ["eer"] + ["min_dcf"] * len(p_targets) + [
        "pauc", "auc"]
    rows = []
    for a, b in resample_multiplicities(seed, num_resamples, num_e, num_t):
        weight = a[codes_e] * b[codes_t]
        s, y = np.repeat(scores, weight), np.repeat(is_target, weight)
        if y.all() or not y.any():
            rows.append([np.nan] * len(cols))
            continue
        summary = TrialScores.from_trials(s, y).summary(p_targets, alpha, beta)
        rows.append([np.nan if c.get(summary) is None else c.get(summary) for c in cols])
    return np.array(rows)


@pytest.mark.parametrize("seed,decimals,alpha,beta", [
    (1, None, 0.0, 0.01), (2, 1, 0.0, 0.2), (3, 0, 0.05, 0.3), (4, 2, 0.0, 1.0)])
def test_fast_bootstrap_equals_repeated_trials(seed, decimals, alpha, beta):
    scores, is_target, enroll, test = _trials(seed, 9, 40, decimals)
    p_targets = [0.01, 0.05, 0.3]
    boot = ClusterBootstrap(scores, is_target, enroll, test)
    fast = bootstrap_statistics(boot, 40, seed=seed,
                                setting=Setting(p_targets, alpha, beta), workers=2)
    slow = brute_force(scores, is_target, enroll, test, 40, seed, p_targets, alpha, beta)
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(slow))
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=0)


def test_speaker_clusters_and_degenerate_resamples():
    # 3 enrollment speakers only: some resamples lose every target, and are reported as NaN
    scores, is_target, enroll, test = _trials(5, 3, 30, 1, num_speakers=3)
    speaker_of_test = test % 7                           # clusters coarser than keys
    boot = ClusterBootstrap(scores, is_target, enroll, speaker_of_test)
    fast = bootstrap_statistics(boot, 60, seed=9, setting=Setting([0.1], 0, 0.5))
    slow = brute_force(scores, is_target, enroll, speaker_of_test, 60, 9, [0.1], 0, 0.5)
    np.testing.assert_allclose(fast, slow, rtol=1e-12)
    _, _, used = percentile_intervals(fast)
    assert used == int((~np.isnan(slow[:, 0])).sum())


def test_seeded_runs_identical_and_independent_of_threads():
    scores, is_target, enroll, test = _trials(6, 12, 50)
    boot = ClusterBootstrap(scores, is_target, enroll, test)
    one = bootstrap_statistics(boot, 30, seed=11, workers=1)
    two = bootstrap_statistics(boot, 30, seed=11, workers=2)
    np.testing.assert_array_equal(one, two)
    other = bootstrap_statistics(boot, 30, seed=12, workers=2)
    assert not np.array_equal(one, other)


def test_intervals_are_percentiles_and_cover_the_estimate():
    scores, is_target, enroll, test = _trials(7, 30, 60)
    boot = ClusterBootstrap(scores, is_target, enroll, test)
    setting = Setting([0.01, 0.005], beta=0.1)
    stats = bootstrap_statistics(boot, 200, seed=1, setting=setting)
    confidence, used = confidence_summary(stats, 0.9, setting)
    assert used == 200 and confidence["resamples"] == 200 and confidence["level"] == 0.9
    np.testing.assert_allclose(confidence["eer"], np.quantile(stats[:, 0], [0.05, 0.95]))
    np.testing.assert_allclose(confidence["min_dcf"][1], np.quantile(stats[:, 2], [0.05, 0.95]))
    np.testing.assert_allclose(confidence["auc"], np.quantile(stats[:, 4], [0.05, 0.95]))
    point = TrialScores.from_trials(scores, is_target)
    lo, hi = confidence["auc"]
    assert lo <= point.auc() <= hi
    lo, hi = confidence["eer"]
    assert lo <= point.eer()[0] <= hi


def test_clusters_widen_the_interval_of_correlated_trials():
    # Each test cluster shifts all its scores: trials are strongly correlated within clusters,
    # which the two-way bootstrap must see and a trial-level bootstrap would not.
    rng = np.random.default_rng(8)
    scores, is_target, enroll, test = _trials(8, 20, 200)
    scores = scores + 1.5 * rng.normal(size=200)[test]
    boot = ClusterBootstrap(scores, is_target, enroll, test)
    trial_level = ClusterBootstrap(scores, is_target, np.zeros(scores.size),
                                   np.arange(scores.size))
    width = np.diff(percentile_intervals(bootstrap_statistics(boot, 200, seed=2))[0:2], axis=0)
    narrow = np.diff(percentile_intervals(bootstrap_statistics(trial_level, 200, seed=2))[0:2],
                     axis=0)
    assert width[0, 0] > 1.5 * narrow[0, 0]             # EER
    assert width[0, 3] > 1.2 * narrow[0, 3]             # AUC (eer, minDCF, pAUC, AUC)


def test_cluster_codes_in_order_of_appearance():
    codes, n = cluster_codes(np.array(["b", "a", "b", "c", "a"]))
    assert n == 3
    np.testing.assert_array_equal(codes, [0, 1, 0, 2, 1])
