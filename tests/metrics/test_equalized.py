"""Equalised (NIST partition-averaged) metrics against per-threshold brute force."""

import numpy as np
import pytest

from pauc_backend.metrics import TrialScores
from pauc_backend.metrics.equalized import add_c_primary, equalized_summary


def _trials(seed, n=600, num_parts=4):
    rng = np.random.default_rng(seed)
    part = rng.integers(0, num_parts, n)
    is_target = rng.random(n) < 0.1 + 0.05 * part           # unequal class balance per part
    scores = rng.normal(size=n) * (1 + 0.3 * part) + (1.5 + 0.5 * part) * is_target
    return scores, is_target, np.array(["p%d" % p for p in part])


def brute_rates(scores, is_target, part):
    """Equalised FNR / FPR at every threshold 'reject scores <= thr' (thr = each score),
    one partition at a time, averaged over the partitions that hold the class."""
    thresholds = np.sort(scores)
    fnr, fpr = [], []
    for thr in thresholds:
        miss, fa = [], []
        for p in np.unique(part):
            tar = scores[(part == p) & is_target]
            non = scores[(part == p) & ~is_target]
            if tar.size:
                miss.append(np.mean(tar <= thr))
            if non.size:
                fa.append(np.mean(non > thr))
        fnr.append(np.mean(miss))
        fpr.append(np.mean(fa))
    return thresholds, np.array(fnr), np.array(fpr)


def brute_min_dcf(fnr, fpr, p):
    return np.min(fnr * p + fpr * (1 - p)) / min(p, 1 - p)


def brute_eer(fnr, fpr):
    """The NIST SRE scorer's compute_eer, transcribed."""
    diff = fnr - fpr
    x1 = np.flatnonzero(diff >= 0)[0]
    x2 = np.flatnonzero(diff < 0)[-1]
    a = (fnr[x1] - fpr[x1]) / (fpr[x2] - fpr[x1] - (fnr[x2] - fnr[x1]))
    return fnr[x1] + a * (fnr[x2] - fnr[x1])


def brute_pauc(scores, is_target, part, alpha, beta):
    """Mean equalised TPR over the FPR band [alpha, beta] of the step ROC, by integration:
    the non-targets in descending order each occupy FPR width = their equalised weight."""
    weight = np.zeros(scores.size)
    for p in np.unique(part):
        for cls in (True, False):
            members = (part == p) & (is_target == cls)
            weight[members] = 1.0 / members.sum()
    weight[is_target] /= weight[is_target].sum()
    weight[~is_target] /= weight[~is_target].sum()
    non = np.flatnonzero(~is_target)
    non = non[np.argsort(-scores[non], kind="stable")]
    area, start = 0.0, 0.0
    for k in non:
        end = start + weight[k]
        tpr = weight[is_target & (scores > scores[k])].sum() + 0.5 * weight[
            is_target & (scores == scores[k])].sum()
        area += tpr * max(0.0, min(end, beta) - max(start, alpha))
        start = end
    return area / (beta - alpha)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equalized_metrics_match_brute_force(seed):
    scores, is_target, part = _trials(seed)
    p_targets = [0.01, 0.005, 0.1]
    summary = equalized_summary(scores, is_target, part, p_targets, alpha=0.0, beta=0.1)
    _, fnr, fpr = brute_rates(scores, is_target, part)
    assert [item["p_target"] for item in summary["min_dcf"]] == p_targets
    for item, p in zip(summary["min_dcf"], p_targets):
        assert item["min_dcf"] == pytest.approx(brute_min_dcf(fnr, fpr, p), rel=1e-12)
    assert summary["eer"] == pytest.approx(brute_eer(fnr, fpr), rel=1e-12)
    assert summary["pauc"] == pytest.approx(brute_pauc(scores, is_target, part, 0.0, 0.1),
                                            rel=1e-10)
    assert summary["auc"] == pytest.approx(brute_pauc(scores, is_target, part, 0.0, 1.0),
                                           rel=1e-10)
    add_c_primary(summary)
    assert summary["c_primary"] == pytest.approx(
        (brute_min_dcf(fnr, fpr, 0.01) + brute_min_dcf(fnr, fpr, 0.005)) / 2, rel=1e-12)


def test_pauc_band_not_at_the_top():
    scores, is_target, part = _trials(3)
    summary = equalized_summary(scores, is_target, part, [0.01], alpha=0.05, beta=0.3)
    assert summary["pauc"] == pytest.approx(brute_pauc(scores, is_target, part, 0.05, 0.3),
                                            rel=1e-10)


def test_one_partition_is_plain_scoring():
    scores, is_target, _ = _trials(4)
    summary = equalized_summary(scores, is_target, np.zeros(scores.size), [0.01, 0.05],
                                alpha=0.0, beta=1.0)
    plain = TrialScores.from_trials(scores, is_target)
    assert summary["auc"] == pytest.approx(plain.auc(), rel=1e-12)
    assert summary["pauc"] == pytest.approx(plain.auc(), rel=1e-12)
    assert [item["p_target"] for item in summary["min_dcf"]] == [0.01, 0.05]
    for item, p in zip(summary["min_dcf"], [0.01, 0.05]):
        assert item["min_dcf"] == pytest.approx(plain.min_dcf(p).min_dcf, rel=1e-12)


def test_equalization_removes_the_weight_of_a_big_partition():
    # Partition "a" (easy) has 10x the trials of "b" (chance): pooled metrics are near
    # "a"'s, equalised ones are the average of the two.
    rng = np.random.default_rng(5)
    n_a, n_b = 5000, 500
    tar_a = rng.random(n_a) < 0.2
    tar_b = rng.random(n_b) < 0.2
    scores = np.concatenate([rng.normal(size=n_a) + 6 * tar_a, rng.normal(size=n_b)])
    is_target = np.concatenate([tar_a, tar_b])
    part = np.array(["a"] * n_a + ["b"] * n_b)
    summary = equalized_summary(scores, is_target, part, [0.01], beta=1.0)
    auc_a = TrialScores.from_trials(scores[:n_a], tar_a).auc()
    auc_b = TrialScores.from_trials(scores[n_a:], tar_b).auc()
    pooled = TrialScores.from_trials(scores, is_target).auc()
    assert abs(pooled - auc_a) < abs(summary["auc"] - auc_a)
    # equalised AUC: all cross-partition pairs count too, so between the two AUCs
    assert min(auc_a, auc_b) < summary["auc"] < max(auc_a, auc_b)


def test_act_dcf_is_the_mean_of_partition_rates():
    scores, is_target, part = _trials(6)
    summary = add_c_primary(equalized_summary(scores, is_target, part, [0.01, 0.005],
                                              llr=True))
    theta = {p: -np.log(p / (1 - p)) for p in (0.01, 0.005)}
    assert [item["p_target"] for item in summary["act_dcf"]] == [0.01, 0.005]
    for item in summary["act_dcf"]:
        p = item["p_target"]
        miss = np.mean([np.mean(scores[(part == q) & is_target] < theta[p])
                        for q in np.unique(part)])
        fa = np.mean([np.mean(scores[(part == q) & ~is_target] >= theta[p])
                      for q in np.unique(part)])
        assert item["act_dcf"] == pytest.approx((p * miss + (1 - p) * fa) / p, rel=1e-12)
    assert summary["act_c_primary"] == pytest.approx(
        np.mean([item["act_dcf"] for item in summary["act_dcf"]]), rel=1e-12)


def test_c_primary_only_with_both_priors():
    scores, is_target, part = _trials(7)
    assert "c_primary" not in add_c_primary(equalized_summary(scores, is_target, part, [0.01]))
