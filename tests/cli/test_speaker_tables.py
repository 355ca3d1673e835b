"""gather_speakers: spk2utt -> rows, with Kaldi's warnings, shared by compute-vector-mean,
train-plda and train-pauc-metric; is_utt2spk / as_spk2utt: utt2spk where spk2utt is expected."""

import numpy as np
import pytest

from pauc_backend.cli.framework.speaker_tables import as_spk2utt, gather_speakers, is_utt2spk
from pauc_backend.errors import KaldiError


class _Log:
    def __init__(self):
        self.warnings = []
        self.lines = []

    def warning(self, message):
        self.warnings.append(message)

    def log(self, message):
        self.lines.append(message)


def test_kept_speakers_stay_aligned_with_labels_when_a_speaker_is_dropped():
    spk2utt = {"a": ["a1", "a2"], "gone": ["g1"], "b": ["b1", "x", "b2"]}
    keys = ["b2", "a1", "b1", "a2"]
    log = _Log()
    got = gather_speakers(log, spk2utt, keys)
    assert got.speakers == ["a", "b"]
    assert [keys[r] for r in got.rows] == ["a1", "a2", "b1", "b2"]
    assert got.labels.tolist() == [0, 0, 1, 1]
    assert got.sizes.tolist() == [2, 2]
    assert (got.num_spk_err, got.num_utt_err) == (1, 2)
    assert log.warnings == [
        "No iVector present in input for utterance g1",
        "Not producing output for speaker gone since no utterances had iVectors",
        "No iVector present in input for utterance x"]


def test_a_speaker_with_an_empty_list_is_an_error_naming_the_table():
    with pytest.raises(KaldiError, match="Speaker with no utterances: s in ark:spk2utt"):
        gather_speakers(_Log(), {"s": []}, {}, "ark:spk2utt")


def test_no_speakers_gives_empty_arrays():
    got = gather_speakers(_Log(), {}, [])
    assert got.speakers == [] and got.rows.size == 0 and got.labels.size == 0
    assert got.rows.dtype == np.intp


def test_train_pauc_metric_names_the_one_utterance_speaker_after_a_dropped_one(tmp_path):
    from conftest import run_tool
    rng = np.random.default_rng(0)
    lines, spk2utt = [], ["gone g1"]
    for s in range(4):
        utts = ["s%d-u%d" % (s, u) for u in range(3)]
        spk2utt.append("s%d %s" % (s, " ".join(utts)))
        lines += ["%s  [ %s ]" % (u, " ".join("%.4f" % v for v in rng.normal(size=3)))
                  for u in utts]
    spk2utt.append("single single-u1")
    lines.append("single-u1  [ 1 2 3 ]")
    (tmp_path / "vecs.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "spk2utt").write_text("\n".join(spk2utt) + "\n")
    proc = run_tool("train-pauc-metric", "--num-iters=3", "ark:%s" % (tmp_path / "spk2utt"),
                    "ark,t:%s" % (tmp_path / "vecs.txt"), tmp_path / "metric")
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr
    assert "Skipping speaker single: only one utterance" in stderr


def test_the_rule_on_tables_in_memory():
    """Issue 37: which tables read as spk2utt are utt2spk (tests/cli/test_speaker_table_forms.py
    runs the tools on real ones)."""
    keys = {"a1", "a2", "b1", "b2"}
    utt2spk = {"a1": ["A"], "a2": ["A"], "b1": ["B"], "b2": ["B"]}
    spk2utt = {"A": ["a1", "a2"], "B": ["b1", "b2"]}
    singles = {"A": ["a1"], "B": ["b1"]}           # spk2utt, one utterance per speaker
    assert is_utt2spk(utt2spk, keys) and is_utt2spk(utt2spk)      # keys, or a repeated speaker
    assert not is_utt2spk(spk2utt, keys) and not is_utt2spk(spk2utt)
    assert not is_utt2spk(singles, keys) and not is_utt2spk(singles)
    assert not is_utt2spk({}, keys)
    # first tokens are keys while no speaker repeats: utt2spk only when the keys are known
    assert is_utt2spk({"a1": ["A"], "b1": ["B"]}, keys) and not is_utt2spk({"a1": ["A"],
                                                                            "b1": ["B"]})
    log = _Log()
    table, name = as_spk2utt(log, {"b1": ["B"], "a1": ["A"], "b2": ["B"]}, "ark:u", keys)
    # Kaldi's utt2spk_to_spk2utt.pl order: speakers as they first appear, utterances in order
    assert list(table.items()) == [("B", ["b1", "b2"]), ("A", ["a1"])]
    assert name == "ark:u (read as utt2spk)" and len(log.lines) == 1
    log = _Log()
    assert as_spk2utt(log, spk2utt, "ark:s", keys) == (spk2utt, "ark:s") and not log.lines
