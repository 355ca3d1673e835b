"""Trials and scores files: the vectorised parser agrees with a line-by-line reference."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pauc_backend.kaldi_io import format_scores, read_scores, read_trials, trials, write_scores

TOKEN = st.text(st.characters(min_codepoint=33, max_codepoint=0x3ff,
                              blacklist_categories=("Cc", "Zs", "Cs", "Zl", "Zp")),
                min_size=1, max_size=9).filter(lambda t: len(t.split()) == 1)
ASCII_TOKEN = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1,
                      max_size=9)
SEP = st.sampled_from([" ", "  ", "\t", " \t "])
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def trial_files(draw, token=ASCII_TOKEN):
    columns = draw(st.sampled_from([2, 3]))
    rows = draw(st.lists(st.lists(token, min_size=columns, max_size=columns), min_size=1,
                         max_size=30))
    lines = []
    for row in rows:
        lead = draw(st.sampled_from(["", " ", "\t"]))
        trail = draw(st.sampled_from(["", " ", "\r"]))
        lines.append(lead + draw(SEP).join(row) + trail)
    text = "\n".join(lines) + draw(st.sampled_from(["\n", ""]))
    return rows, columns, text


def reference_columns(text):
    rows = [line.split() for line in text.splitlines()]
    return [list(column) for column in zip(*rows)]


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(trials, "_CHUNK_BYTES", 16)


@SETTINGS
@given(st.one_of(trial_files(), trial_files(TOKEN)))
def test_trials_parse_like_a_line_by_line_split(tmp_path, small_chunks, case):
    rows, columns, text = case
    (tmp_path / "trials").write_bytes(text.encode())
    key1, key2, labels = read_trials(tmp_path / "trials")
    expected = reference_columns(text)
    assert key1.tolist() == expected[0] and key2.tolist() == expected[1]
    assert key1.dtype.kind == "U" and key2.dtype.kind == "U"
    if columns == 3:
        assert labels.tolist() == expected[2]
    else:
        assert labels is None


@SETTINGS
@given(st.lists(st.tuples(TOKEN, TOKEN, st.floats(width=32, allow_nan=False)), max_size=20))
def test_scores_write_and_read_back(tmp_path, rows):
    key1 = [r[0] for r in rows]
    key2 = [r[1] for r in rows]
    scores = np.array([r[2] for r in rows], dtype=np.float64)
    write_scores(tmp_path / "s", np.array(key1, dtype=np.str_), key2, scores)
    text = (tmp_path / "s").read_text(encoding="utf-8")
    assert text == "".join("%s %s %.7g\n" % (a, b, float(np.float32(c))) for a, b, c in rows)
    got1, got2, got = read_scores(tmp_path / "s")
    assert got1.tolist() == key1 and got2.tolist() == key2
    assert got.tolist() == [float("%.7g" % np.float32(c)) for c in scores]


def test_scores_are_the_float32_value_printed_with_7_digits():
    line = format_scores(["a"], ["b"], [0.1 + 1e-12])
    assert line == b"a b 0.1\n"
    assert format_scores(["a"], ["b"], [1 / 3]) == b"a b 0.3333333\n"
    assert format_scores(["a"], ["b"], [-7.62909e-08]) == b"a b -7.62909e-08\n"
    assert format_scores([], [], []) == b""


def test_empty_trials_file(tmp_path):
    (tmp_path / "t").write_bytes(b"")
    key1, key2, labels = read_trials(tmp_path / "t")
    assert key1.size == 0 and key2.size == 0 and labels is None


def test_trials_from_a_pipe_and_stdin_like_rxfilenames(tmp_path):
    (tmp_path / "t").write_text("a b target\nc d nontarget\n")
    key1, key2, labels = read_trials("cat %s |" % (tmp_path / "t"))
    assert key1.tolist() == ["a", "c"] and labels.tolist() == ["target", "nontarget"]
