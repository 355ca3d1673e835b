"""minDCF against sid/compute_min_dcf.py transcribed line for line, and the golden outputs."""

from operator import itemgetter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pauc_backend.kaldi_io import read_scores, read_trials
from pauc_backend.metrics import TrialScores, min_dcf, min_dcf_from_trials
from pauc_backend.metrics.dcf import min_dcf_sorted, target_positions

GOLDEN_NAMES = ["plda_numutts", "plda_adapt_numutts", "plda_nonumutts", "plda_adapt_nonumutts",
                "plda_numutts_simplelen", "plda_numutts_nolen"]


def compute_min_dcf_py(scores, labels, p_target, c_miss=1, c_fa=1):
    """ComputeErrorRates + ComputeMinDcf of egs/sre08/v1/sid/compute_min_dcf.py."""
    sorted_indexes, thresholds = zip(*sorted(
        [(index, threshold) for index, threshold in enumerate(scores)], key=itemgetter(1)))
    labels = [labels[i] for i in sorted_indexes]
    fnrs, fprs = [], []
    for i in range(0, len(labels)):
        if i == 0:
            fnrs.append(labels[i])
            fprs.append(1 - labels[i])
        else:
            fnrs.append(fnrs[i - 1] + labels[i])
            fprs.append(fprs[i - 1] + 1 - labels[i])
    fnrs_norm = sum(labels)
    fprs_norm = len(labels) - fnrs_norm
    fnrs = [x / float(fnrs_norm) for x in fnrs]
    fprs = [1 - x / float(fprs_norm) for x in fprs]
    min_c_det = float("inf")
    min_c_det_threshold = thresholds[0]
    for i in range(0, len(fnrs)):
        c_det = c_miss * fnrs[i] * p_target + c_fa * fprs[i] * (1 - p_target)
        if c_det < min_c_det:
            min_c_det = c_det
            min_c_det_threshold = thresholds[i]
    c_def = min(c_miss * p_target, c_fa * (1 - p_target))
    return min_c_det / c_def, min_c_det_threshold


@pytest.mark.parametrize("name", GOLDEN_NAMES)
@pytest.mark.parametrize("p", ["0.01", "0.005", "0.001"])
def test_min_dcf_reproduces_golden_compute_min_dcf(golden, name, p):
    _, _, labels = read_trials(str(golden / "data/trials"))
    _, _, scores = read_scores(str(golden / "scores" / name))
    result = min_dcf_from_trials(scores, labels == "target", float(p))
    stem = "mindcf/%s_p%s" % (name, p)
    assert "{0:.4f}\n".format(result.min_dcf) == (golden / (stem + ".stdout")).read_text()
    line = (golden / (stem + ".stderr")).read_text().splitlines()[1]
    assert line == "minDCF is {0:.4f} at threshold {1:.4f} (p-target={2}, c-miss=1,c-fa=1)" \
        .format(result.min_dcf, result.threshold, float(p))


scores_with_ties = st.lists(st.tuples(st.integers(-8, 8), st.booleans()), min_size=2,
                            max_size=60).filter(lambda rows: 0 < sum(t for _, t in rows)
                                                < len(rows))


@settings(max_examples=200, deadline=None)
@given(scores_with_ties, st.sampled_from([0.5, 0.1, 0.01, 0.001]),
       st.sampled_from([(1, 1), (1.0, 10.0), (3.0, 1.0)]))
def test_min_dcf_from_trials_is_compute_min_dcf_py_including_tie_order(rows, p, costs):
    scores = np.array([s / 2.0 for s, _ in rows])
    labels = np.array([t for _, t in rows])
    ours = min_dcf_from_trials(scores, labels, p, *costs)
    value, threshold = compute_min_dcf_py(scores.tolist(), labels.astype(int).tolist(), p,
                                          *costs)
    assert ours.min_dcf == value            # bit for bit: same operations in the same order
    assert ours.threshold == threshold


@settings(max_examples=100, deadline=None)
@given(scores_with_ties)
def test_two_class_min_dcf_puts_tied_targets_first(rows):
    scores = np.array([s for s, _ in rows], float)
    labels = np.array([t for _, t in rows])
    tar, non = scores[labels], scores[~labels]
    reordered = np.concatenate([tar, non])
    is_target = np.arange(reordered.size) < tar.size
    assert min_dcf(tar, non, 0.05) == min_dcf_from_trials(reordered, is_target, 0.05)


def test_several_priors_in_one_pass_equal_separate_calls():
    rng = np.random.default_rng(5)
    tar, non = np.round(rng.normal(2, 1, 200), 2), np.round(rng.normal(0, 1, 4000), 2)
    together = min_dcf(tar, non, [0.01, 0.005, 0.001])
    assert together == [min_dcf(tar, non, p) for p in (0.01, 0.005, 0.001)]
    trials = TrialScores(tar, non)
    assert trials.min_dcf([0.01, 0.005, 0.001]) == together


def test_reported_rates_are_those_at_the_threshold():
    rng = np.random.default_rng(6)
    tar, non = rng.normal(2, 1, 300), rng.normal(0, 1, 3000)
    result = min_dcf(tar, non, 0.01)
    assert result.pmiss == np.mean(tar <= result.threshold)
    assert result.pfa == pytest.approx(np.mean(non > result.threshold), abs=1e-15)
    cost = 0.01 * result.pmiss + 0.99 * result.pfa
    assert result.min_dcf == pytest.approx(cost / 0.01)


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1, [0.01, 1.5]])
def test_priors_outside_zero_one_are_refused(p):
    with pytest.raises(ValueError, match="p_target"):
        min_dcf([1.0], [0.0], p)


def test_nonpositive_costs_are_refused():
    with pytest.raises(ValueError, match="c_miss"):
        min_dcf([1.0], [0.0], 0.01, c_miss=0)


def test_a_single_class_is_refused():
    with pytest.raises(ValueError):
        min_dcf_from_trials([1.0, 2.0], [True, True])


@pytest.mark.parametrize("order", [[0, 1, 2], [1, 0, 2]])
def test_trial_list_order_of_a_shared_tie_decides_min_dcf_as_in_compute_min_dcf(order):
    # A non-target listed before a tied target lets a threshold split the tie optimistically.
    scores = np.array([1.0, 1.0, 2.0])[order]
    labels = np.array([False, True, True])[order]
    ours = min_dcf_from_trials(scores, labels, 0.5)
    assert (ours.min_dcf, ours.threshold) == compute_min_dcf_py(
        scores.tolist(), labels.astype(int).tolist(), 0.5)
    assert ours.min_dcf == (0.0 if order[0] == 0 else 0.5)
    trials = TrialScores.from_trials(scores, labels)
    assert trials.min_dcf(0.5) == ours


def _separated_lists():
    """Trial lists whose best threshold ends a run of nearly every non-target: one target below
    them all (or none), the rest above; and the same inverted."""
    rng = np.random.default_rng(12)
    non = rng.normal(0, 1, 300)
    lists = []
    for low_targets in (0, 1):
        tar = np.concatenate([rng.normal(8, 1, 6), np.full(low_targets, -9.0)])
        lists += [(tar, non), (-tar, -non)]
    return lists


@pytest.mark.parametrize("step", [1, 2, 7, 1 << 16])
@pytest.mark.parametrize("p", [0.01, 0.5, 1 - 2.0 ** -50])
def test_min_dcf_walks_a_long_run_back_in_blocks_as_compute_min_dcf_py(step, p):
    # p = 1 - 2^-50: the false-alarm term moves the cost by less than its last bit, so many
    # positions at the end of the run cost the same and the first of them is the threshold.
    for tar, non in _separated_lists():
        tar, non = np.sort(tar), np.sort(non)
        scores = np.concatenate([tar, non])
        labels = np.arange(scores.size) < tar.size
        [ours] = min_dcf_sorted(tar, non, target_positions(tar, non), [p], step=step)
        value, threshold = compute_min_dcf_py(scores.tolist(), labels.astype(int).tolist(), p)
        assert (ours.min_dcf, ours.threshold) == (value, threshold)


def test_equal_costs_at_the_end_of_a_run_take_its_first_position():
    # The case the block walk exists for: not the run's last non-target but an earlier one.
    tar, non = np.array([-9.0, 8.0, 9.0]), np.arange(300.0) / 100
    [ours] = min_dcf_sorted(tar, non, target_positions(tar, non), [1 - 2.0 ** -50], step=7)
    assert ours.threshold < non[-8]
    scores = np.concatenate([tar, non])
    assert (ours.min_dcf, ours.threshold) == compute_min_dcf_py(
        scores.tolist(), (np.arange(scores.size) < 3).astype(int).tolist(), 1 - 2.0 ** -50)
