"""score_trial_list: ivector-plda-scoring's trial loop (warnings, counts, output lines, stats)."""

import re

import numpy as np
import pytest

from pauc_backend.cli.framework.trial_scoring import index_keys, score_trial_list
from pauc_backend.errors import KaldiError


class RecordingLog:
    def __init__(self):
        self.lines = []

    def log(self, message):
        self.lines.append(("LOG", message))

    def warning(self, message):
        self.lines.append(("WARNING", message))


def kaldi_messages(log_path, program="ivector-plda-scoring"):
    """(level, message) of one program's LOG/WARNING lines in a golden Kaldi log."""
    pattern = re.compile(r"^(LOG|WARNING) \(%s\[\S*\) (.*)$" % re.escape(program))
    out = []
    for line in log_path.read_text().splitlines():
        match = pattern.match(line)
        if match:
            out.append((match.group(1), match.group(2)))
    return out


def golden_score_table(path):
    lines = [line.split() for line in path.read_text().splitlines()]
    return {(k1, k2): float(s) for k1, k2, s in lines}


def table_scorer(table, enroll_keys, test_keys, calls=None):
    """score_fn that looks Kaldi's own scores up, so only the loop itself is under test."""
    def score_fn(enroll_rows, test_rows):
        if calls is not None:
            calls.append(len(enroll_rows))
        return np.array([table[enroll_keys[e], test_keys[t]]
                         for e, t in zip(enroll_rows, test_rows)])
    return score_fn


def keys_of(trials_path):
    rows = [line.split() for line in trials_path.read_text().splitlines()]
    enroll = sorted({r[0] for r in rows})
    test = sorted({r[1] for r in rows})
    return enroll, test


def test_missing_keys_warn_and_drop_lines_like_kaldi(golden, tmp_path):
    table = golden_score_table(golden / "scores/plda_missing")
    enroll, test = keys_of(golden / "scores/plda_missing")
    log = RecordingLog()
    out = tmp_path / "scores"
    done = score_trial_list(log, str(golden / "data/trials_missing"), str(out), enroll, test,
                            table_scorer(table, enroll, test))
    assert done == 6
    assert out.read_bytes() == (golden / "scores/plda_missing").read_bytes()
    expected = kaldi_messages(golden / "logs/score_plda_missing.log")
    expected = [m for m in expected if m[0] == "WARNING" or m[1].startswith(("Mean", "Processed"))]
    assert log.lines == expected


def test_sixteen_thousand_trials_reproduce_kaldi_file_and_statistics(golden, tmp_path):
    table = golden_score_table(golden / "scores/plda_numutts")
    enroll, test = keys_of(golden / "scores/plda_numutts")
    log = RecordingLog()
    out = tmp_path / "scores"
    calls = []
    done = score_trial_list(log, str(golden / "data/trials"), str(out), enroll, test,
                            table_scorer(table, enroll, test, calls), chunk_size=5000)
    assert done == 16000
    assert calls == [5000, 5000, 5000, 1000]
    assert out.read_bytes() == (golden / "scores/plda_numutts").read_bytes()
    expected = [m for m in kaldi_messages(golden / "logs/score_plda_numutts.log")
                if m[1].startswith(("Mean", "Processed"))]
    assert log.lines == expected


def test_two_and_three_column_trials_give_the_same_scores(golden, tmp_path):
    three = golden / "data/trials"
    two = tmp_path / "trials2"
    two.write_text("".join(" ".join(line.split()[:2]) + "\n"
                           for line in three.read_text().splitlines()))
    enroll, test = keys_of(three)
    score_fn = lambda e, t: e * 1000.0 + t * 0.25  # noqa: E731
    score_trial_list(RecordingLog(), str(three), str(tmp_path / "s3"), enroll, test, score_fn)
    score_trial_list(RecordingLog(), str(two), str(tmp_path / "s2"), enroll, test, score_fn)
    assert (tmp_path / "s3").read_bytes() == (tmp_path / "s2").read_bytes()


def test_nothing_scored_returns_zero_and_writes_an_empty_file(tmp_path):
    trials = tmp_path / "trials"
    trials.write_text("a x\nzz y\n")
    log = RecordingLog()
    out = tmp_path / "scores"
    done = score_trial_list(log, str(trials), str(out), ["b"], ["x"], lambda e, t: e * 0.0)
    assert done == 0
    assert out.read_bytes() == b""
    assert log.lines == [("WARNING", "Key a not present in training iVectors."),
                         ("WARNING", "Key zz not present in training iVectors."),
                         ("LOG", "Processed 0 trials, 2 had errors.")]


def test_unknown_enrollment_key_is_reported_before_unknown_test_key(tmp_path):
    trials = tmp_path / "trials"
    trials.write_text("nobody nothing\nspk nothing\nspk utt\n")
    log = RecordingLog()
    done = score_trial_list(log, str(trials), str(tmp_path / "s"), ["spk"], ["utt"],
                            lambda e, t: np.ones(len(e)), enroll_name="enrollment")
    assert done == 1
    assert log.lines[:2] == [("WARNING", "Key nobody not present in enrollment iVectors."),
                             ("WARNING", "Key nothing not present in test iVectors.")]
    assert (tmp_path / "s").read_text() == "spk utt 1\n"


def test_duplicate_key_is_an_error_naming_it():
    assert index_keys(["a", "b"], "Duplicate test iVector found for utterance %s") == {
        "a": 0, "b": 1}
    with pytest.raises(KaldiError, match="Duplicate test iVector found for utterance b"):
        index_keys(["a", "b", "c", "b"], "Duplicate test iVector found for utterance %s")
