"""QMF training trials drawn from labelled utterances (WeSpeaker's duration mixes)."""

import numpy as np
import pytest

from pauc_backend.models.calibration_trials import calibration_trials, duration_groups


def corpus(seed=0, num_speakers=60):
    rng = np.random.default_rng(seed)
    speakers = np.repeat(["s%03d" % i for i in range(num_speakers)],
                         rng.integers(2, 14, num_speakers))
    return speakers, np.exp(rng.uniform(0.0, 3.5, speakers.size))


def test_every_trial_is_labelled_by_speaker_in_its_mix_and_listed_once():
    speakers, durations = corpus()
    rows1, rows2, target, mix = calibration_trials(speakers, durations, num_pairs=200, seed=1)
    assert (rows1 != rows2).all()
    np.testing.assert_array_equal(speakers[rows1] == speakers[rows2], target)
    groups = duration_groups(durations)
    assert all("%s-%s" % (groups[a], groups[b]) == m for a, b, m in zip(rows1, rows2, mix))
    pairs = set(zip(np.minimum(rows1, rows2).tolist(), np.maximum(rows1, rows2).tolist()))
    assert len(pairs) == rows1.size
    # WeSpeaker's groups: 2 < d < 6 short, d >= 6 long; others never used
    used = np.unique(np.r_[rows1, rows2])
    assert (durations[used] > 2).all()
    for name in ("short-short", "short-long", "long-long"):
        for label in (True, False):
            count = np.count_nonzero((mix == name) & (target == label))
            assert count <= 200 and (count == 200 or name == "short-short")


def test_draws_are_seeded_and_stop_at_what_the_data_can_give():
    speakers, durations = corpus(seed=2, num_speakers=8)
    a = calibration_trials(speakers, durations, num_pairs=10000, seed=3)
    b = calibration_trials(speakers, durations, num_pairs=10000, seed=3)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    c = calibration_trials(speakers, durations, num_pairs=10000, seed=4)
    assert not np.array_equal(a[0], c[0])
    # fewer distinct target pairs exist than asked for: all of them are drawn at most once
    rows1, rows2, target, _ = calibration_trials(speakers, None, num_pairs=10000, seed=0)
    counts = np.unique(speakers, return_counts=True)[1]
    assert target.sum() <= np.sum(counts * (counts - 1) // 2)
    assert target.sum() > 0.9 * np.sum(counts * (counts - 1) // 2)


def test_without_durations_one_mix_of_all_utterances():
    speakers, _ = corpus(seed=5)
    rows1, rows2, target, mix = calibration_trials(speakers, None, num_pairs=300, seed=0)
    assert set(mix) == {"all"} and target.sum() == 300 and (~target).sum() == 300


def test_one_speaker_gives_no_non_target_and_two_utterances_needed_for_targets():
    rows1, rows2, target, _ = calibration_trials(np.array(["a", "a", "a"]), None, num_pairs=5)
    assert target.all() and target.size == 3
    rows1, rows2, target, _ = calibration_trials(np.array(["a", "b"]), None, num_pairs=5)
    assert not target.any() and target.size == 1


def test_mismatched_durations_are_an_error():
    with pytest.raises(ValueError):
        calibration_trials(np.array(["a", "b"]), np.array([1.0, 2.0, 3.0]))
