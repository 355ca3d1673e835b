"""TrialScores.sort_in_place (compute-eer-pauc's evaluation without a copy of the scores, issue
35): every metric bit for bit as ``from_trials`` gives it, the tie-sensitive ones against
brute-force references (compute_min_dcf.py transcribed, compute-eer's loop, the Mann-Whitney
double sum), across its block boundaries, for float32 and float64 scores; and the pieces that
avoid n-sized temporaries (numpy's mean of d' block by block, actDCF on float32, Cllr in trial
order) against what they replace."""

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from test_dcf import compute_min_dcf_py
from test_eer import kaldi_compute_eer

from pauc_backend.metrics import dcf, llr
from pauc_backend.metrics.moments import mean_of
from pauc_backend.metrics.registry import Setting
from pauc_backend.metrics.trial_scores import TrialScores

SETTING = Setting(p_targets=(0.5, 0.05, 0.01, 0.001), llr=True)


def summary_json(trials, setting=SETTING):
    return json.dumps(trials.summary(setting.p_targets, setting.alpha, setting.beta,
                                     setting.c_miss, setting.c_fa, setting.eer_method,
                                     setting.llr), sort_keys=True)


def both(scores, is_target, step=5, setting=SETTING):
    """(from_trials summary, sort_in_place summary, the in-place TrialScores)."""
    copied = summary_json(TrialScores.from_trials(scores.copy(), is_target.copy()), setting)
    trials = TrialScores.sort_in_place(scores.copy(), is_target.copy(), cllr=setting.llr,
                                       step=step)
    return copied, summary_json(trials, setting), trials


def lists(kind, size, fraction, dtype, seed):
    rng = np.random.default_rng(seed)
    is_target = rng.random(size) < fraction
    is_target[:2] = True, False
    rng.shuffle(is_target)
    if kind == "distinct":
        scores = np.where(is_target, rng.normal(2, 1, size), rng.normal(0, 1, size))
    elif kind == "integers":             # ties everywhere, shared by both classes
        scores = np.where(is_target, rng.integers(-3, 6, size), rng.integers(-6, 3, size))
    else:                                # %.7g text of float32 scores, as the scorers write
        scores = np.array(["%.7g" % v for v in rng.normal(0, 5, size).astype(np.float32)],
                          dtype=float) + 2.0 * is_target
    return scores.astype(dtype), is_target


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["distinct", "integers", "decimals"])
@pytest.mark.parametrize("fraction", [0.01, 0.5])
@pytest.mark.parametrize("step", [1, 7, 64, 1 << 18])
def test_every_metric_is_what_from_trials_gives_bit_for_bit(dtype, kind, fraction, step):
    scores, is_target = lists(kind, 3000, fraction, dtype, seed=len(kind) + step)
    copied, in_place, trials = both(scores, is_target, step)
    assert in_place == copied
    assert trials.tar.dtype == dtype and trials.non.dtype == dtype


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-6, 6), st.booleans()), min_size=2, max_size=80)
       .filter(lambda rows: 0 < sum(t for _, t in rows) < len(rows)),
       st.sampled_from([0.5, 0.1, 0.01]), st.integers(1, 9),
       st.sampled_from([np.float32, np.float64]))
def test_tie_sensitive_metrics_against_brute_force_references(rows, p, step, dtype):
    scores = np.array([s / 4.0 for s, _ in rows], dtype=dtype)
    labels = np.array([t for _, t in rows])
    tar, non = scores[labels].tolist(), scores[~labels].tolist()
    trials = TrialScores.sort_in_place(scores.copy(), labels.copy(), cllr=True, step=step)
    dcf = trials.min_dcf(p)
    # compute_min_dcf.py keeps the trial-list order of tied trials: so must the subsequence
    assert (dcf.min_dcf, dcf.threshold) == compute_min_dcf_py(scores.tolist(),
                                                              labels.astype(int).tolist(), p)
    assert trials.eer() == kaldi_compute_eer(tar, non)
    mann_whitney = sum((t > n) + 0.5 * (t == n) for t in tar for n in non) / len(tar) / len(non)
    assert trials.auc() == pytest.approx(mann_whitney, abs=1e-15)
    assert summary_json(trials) == summary_json(TrialScores.from_trials(scores, labels))


def test_the_scores_become_the_sorted_classes_and_the_trial_order_is_given_up():
    scores, is_target = lists("distinct", 1000, 0.2, np.float32, seed=1)
    given_up = scores.copy()
    trials = TrialScores.sort_in_place(given_up, is_target, step=3)
    assert np.shares_memory(trials.non, given_up) and np.shares_memory(trials.tar, given_up)
    assert np.array_equal(given_up, np.concatenate([np.sort(scores[~is_target]),
                                                    np.sort(scores[is_target])]))
    with pytest.raises(ValueError, match="trial order"):
        trials.raw
    # what is kept for minDCF's ties: each target's rank among the trials of its score in
    # trial order (counted here one trial at a time), in the order of the sorted targets
    ranks = [int(np.count_nonzero(scores[:i] == scores[i])) for i in np.flatnonzero(is_target)]
    order = np.argsort(scores[is_target], kind="stable")
    assert trials._tie_ranks.tolist() == np.array(ranks)[order].tolist()


def test_tie_ranks_count_every_tied_trial_across_blocks():
    rng = np.random.default_rng(4)
    scores = rng.integers(0, 5, 400).astype(np.float64)      # ties everywhere
    is_target = rng.random(400) < 0.3
    expected = [int(np.count_nonzero(scores[:i] == scores[i])) for i in np.flatnonzero(is_target)]
    expected = np.array(expected)[np.argsort(scores[is_target], kind="stable")].tolist()
    for step in (1, 3, 64, 1000):
        assert dcf.tie_ranks(scores, is_target, step).tolist() == expected
        trials = TrialScores.sort_in_place(scores.copy(), is_target, step=step)
        assert trials._tie_ranks.tolist() == expected


def test_cllr_keeps_the_sums_of_the_trial_order():
    rng = np.random.default_rng(2)          # more than one of llr's blocks of 2^18
    is_target = rng.random(600000) < 0.3
    scores = np.where(is_target, rng.normal(3, 4, is_target.size),
                      rng.normal(-3, 4, is_target.size)) * rng.choice([1, 50], is_target.size)
    expected = llr.cllr(scores[is_target], scores[~is_target])
    trials = TrialScores.sort_in_place(scores.copy(), is_target, cllr=True, step=1000)
    assert trials.cllr() == expected
    assert llr.cllr(np.sort(scores[is_target]), np.sort(scores[~is_target])) != expected, \
        "sorted sums should differ in the last bits here (else this test shows nothing)"


@pytest.mark.parametrize("bad", ["nan", "one class"])
def test_bad_lists_are_refused_with_from_trials_words(bad):
    scores, is_target = np.array([1.0, 2.0, 3.0]), np.array([True, False, False])
    if bad == "nan":
        scores[2] = np.nan
        message = "scores contain NaN"
    else:
        is_target[:] = False
        message = "need at least one target"
    with pytest.raises(ValueError, match=message):
        TrialScores.from_trials(scores.copy(), is_target)
    with pytest.raises(ValueError, match=message):
        TrialScores.sort_in_place(scores.copy(), is_target, step=2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [1, 127, 128, 129, 1000, 4096, 65537, 300007])
@pytest.mark.parametrize("block", [128, 1000, 1 << 16])
def test_mean_of_is_numpys_mean_bit_for_bit(dtype, size, block):
    x = (np.random.default_rng(size).standard_normal(size) * 7 + 3).astype(dtype)
    mean = np.average(x)
    spread = lambda b: np.square(np.subtract(b, mean))      # noqa: E731 (d''s variance)
    expected = np.average(np.square(np.subtract(x, mean)))
    got = mean_of(x, spread, block)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("offset", [-2, -1, 0, 1, 2])
def test_act_dcf_on_float32_counts_as_on_float64(offset):
    # scores on and around the Bayes threshold of p = 0.01 (theta = log 99), as float32
    theta = np.log(99.0)
    near = np.float32(theta)
    for _ in range(abs(offset)):
        near = np.nextafter(near, np.float32(np.inf if offset > 0 else -np.inf))
    tar = np.sort(np.array([near, near, 5.0, -1.0], dtype=np.float32))
    non = np.sort(np.array([near, 4.0, 4.6, -2.0, 0.0], dtype=np.float32))
    for p in (0.01, [0.01, 0.5]):
        expected = llr.act_dcf(tar.astype(np.float64), non.astype(np.float64), p)
        assert np.array_equal(llr.act_dcf_sorted(tar, non, p), expected)


def test_min_cllr_of_sorted_float32_is_that_of_the_float64_copies():
    rng = np.random.default_rng(8)
    tar = np.round(rng.normal(2, 2, 500), 1).astype(np.float32)
    non = np.round(rng.normal(-1, 2, 5000), 1).astype(np.float32)
    expected = llr.min_cllr(tar.astype(np.float64), non.astype(np.float64))
    assert llr.min_cllr_sorted(np.sort(tar), np.sort(non)) == expected
