"""EER: Kaldi's ComputeEer transcribed loop for loop, the golden compute-eer outputs, and the
ROCCH-EER against an O(n^2) definition (best randomised pair of operating points)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pauc_backend.kaldi_io import read_scores, read_trials
from pauc_backend.metrics import TrialScores, eer

GOLDEN_NAMES = ["plda_numutts", "plda_adapt_numutts", "plda_nonumutts", "plda_adapt_nonumutts",
                "plda_numutts_simplelen", "plda_numutts_nolen"]


def kaldi_compute_eer(target, nontarget):
    """ivectorbin/compute-eer.cc ComputeEer, statement by statement (float32 throughout)."""
    target = sorted(np.float32(x) for x in target)
    nontarget = sorted(np.float32(x) for x in nontarget)
    target_size, nontarget_size = len(target), len(nontarget)
    position = 0
    while position + 1 < target_size:
        nontarget_n = int(nontarget_size * position * 1.0 / target_size)
        nontarget_position = max(nontarget_size - 1 - nontarget_n, 0)
        if nontarget[nontarget_position] < target[position]:
            break
        position += 1
    return float(np.float32(position * 1.0 / target_size)), float(target[position])


def rocch_eer_brute(tar, non):
    """min over all pairs of ROC points (and every mix of the two) of max(Pfa, Pmiss)."""
    thresholds = np.concatenate([np.unique(np.concatenate([tar, non])), [np.inf]])
    pmiss = np.array([(tar < t).mean() for t in thresholds])
    pfa = np.array([(non >= t).mean() for t in thresholds])
    best = np.minimum(np.maximum(pmiss, pfa), 1.0).min()
    for i in range(len(thresholds)):
        for j in range(i + 1, len(thresholds)):
            dx, dy = pfa[j] - pfa[i], pmiss[j] - pmiss[i]
            # point on the segment where Pfa = Pmiss: pfa_i + l dx = pmiss_i + l dy
            if dx != dy:
                lam = (pmiss[i] - pfa[i]) / (dx - dy)
                if 0 <= lam <= 1:
                    best = min(best, pfa[i] + lam * dx)
    return best


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_kaldi_eer_reproduces_golden_compute_eer(golden, name):
    key1, key2, labels = read_trials(str(golden / "data/trials"))
    _, _, scores = read_scores(str(golden / "scores" / name))
    is_target = labels == "target"
    rate, threshold = eer(scores[is_target], scores[~is_target], return_threshold=True)
    stdout = (golden / "eer" / (name + ".stdout")).read_text()
    stderr = (golden / "eer" / (name + ".stderr")).read_text()
    assert "%.4g" % (100.0 * rate) == stdout
    assert stderr.splitlines()[1].endswith(
        "Equal error rate is %.6g%%, at threshold %.6g" % (100.0 * rate, threshold))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-30, 30), min_size=1, max_size=40),
       st.lists(st.integers(-30, 30), min_size=1, max_size=80),
       st.integers(0, 3))
def test_kaldi_eer_matches_the_compute_eer_loop_with_ties(tar, non, shift):
    tar = np.array(tar) / 4.0 + shift
    non = np.array(non) / 4.0
    assert eer(tar, non, return_threshold=True) == kaldi_compute_eer(tar, non)


def test_kaldi_eer_rounds_scores_to_float32_like_basefloat():
    # 1 + 2^-30 and 1 differ in float64 but are one float32: Kaldi sees a tie.
    tar = np.array([1.0 + 2.0 ** -30, 3.0])
    non = np.array([1.0, 0.0])
    assert eer(tar, non, return_threshold=True) == kaldi_compute_eer(tar, non)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-12, 12), min_size=1, max_size=15),
       st.lists(st.integers(-12, 12), min_size=1, max_size=20))
def test_rocch_eer_is_the_best_mixed_operating_point(tar, non):
    tar, non = np.array(tar, float), np.array(non, float)
    assert eer(tar, non, method="rocch") == pytest.approx(rocch_eer_brute(tar, non), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=30),
       st.lists(st.integers(-50, 50), min_size=1, max_size=60))
def test_eer_lies_in_unit_interval_and_ignores_monotone_rescaling(tar, non):
    tar, non = np.array(tar, float), np.array(non, float)
    for method in ("kaldi", "rocch"):
        rate = eer(tar, non, method=method)
        assert 0.0 <= rate <= 1.0
        # 3x - 7 maps these integers to exactly representable, equally ordered float32 values.
        assert eer(3 * tar - 7, 3 * non - 7, method=method) == rate


def test_perfect_and_reversed_separation():
    assert eer([2.0, 3.0], [0.0, 1.0], method="rocch") == 0.0
    # The hull of a reversed system is the chance diagonal (a coin flip does better).
    assert eer([0.0, 1.0], [2.0, 3.0], method="rocch") == pytest.approx(0.5)
    # Kaldi's walk stops at the last target position: (T - 1) / T.
    assert eer([0.0, 1.0], [2.0, 3.0]) == 0.5
    assert eer([2.0, 3.0], [0.0, 1.0]) == 0.0


def test_trial_scores_eer_equals_the_function():
    rng = np.random.default_rng(3)
    tar, non = rng.normal(1, 1, 300), rng.normal(0, 1, 5000)
    trials = TrialScores(tar, non)
    assert trials.eer("kaldi") == eer(tar, non, return_threshold=True)
    assert trials.eer("rocch")[0] == eer(tar, non, method="rocch")


@pytest.mark.parametrize("bad", [([], [1.0]), ([1.0], []), ([np.nan], [1.0])])
def test_empty_or_nan_scores_are_refused(bad):
    with pytest.raises(ValueError):
        eer(*bad)


def test_unknown_method_is_refused():
    with pytest.raises(ValueError, match="method"):
        eer([1.0], [0.0], method="bosaris")
