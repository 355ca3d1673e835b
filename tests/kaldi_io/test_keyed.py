"""The streaming trial/score layer: the join against a compute_min_dcf.py-style dictionary
reference, streamed scoring against an in-memory reference, at tiny chunk sizes."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pauc_backend.cli.framework.trial_scoring import score_trial_list
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import key_index, keyed, numbers, trials
from pauc_backend.kaldi_io.keyed import KeySpace, PairTable, join_columns, keyed_score_labels
from pauc_backend.metrics.moments import Float32Moments

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
KEY = st.sampled_from(["a", "b", "c", "dd", "e\u00e9", "f1", "g-2", "h"])


class Log:
    def __init__(self):
        self.lines = []

    def log(self, message):
        self.lines.append(("LOG", message))

    def warning(self, message):
        self.lines.append(("WARNING", message))


@pytest.fixture(params=[16, 64, 1 << 22])
def chunk_bytes(request, monkeypatch):
    monkeypatch.setattr(trials, "_CHUNK_BYTES", request.param)
    monkeypatch.setattr(numbers, "_CHUNK_BYTES", request.param)
    return request.param


@st.composite
def trials_and_scores(draw):
    pairs = draw(st.lists(st.tuples(KEY, KEY), min_size=1, max_size=40, unique=True))
    labels = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    scored = draw(st.lists(st.sampled_from(range(len(pairs))), unique=True))
    strays = draw(st.lists(st.tuples(KEY, st.sampled_from(["x", "y"])), unique=True,
                           max_size=5))
    values = st.sampled_from([0.5, -1.25, 3.0, 1e-3, 0.1, 2.0])          # ties on purpose
    rows = [(pairs[i], draw(values)) for i in scored] + [(p, draw(values)) for p in strays]
    rows = draw(st.permutations(rows))
    return pairs, labels, rows


def reference_join(pairs, labels, rows):
    """compute_min_dcf.py: a dict of trials; scores kept in the scores file's order."""
    table = {"%s %s" % p: lab for p, lab in zip(pairs, labels)}
    kept = [(s, table["%s %s" % p]) for p, s in rows if "%s %s" % p in table]
    return [s for s, _ in kept], [lab for _, lab in kept]


@SETTINGS
@given(case=trials_and_scores())
def test_join_equals_the_compute_min_dcf_reference_at_any_chunk_size(tmp_path, chunk_bytes,
                                                                     case):
    pairs, labels, rows = case
    (tmp_path / "t").write_text("".join("%s %s %s\n" % (a, b, "target" if lab else "nontarget")
                                        for (a, b), lab in zip(pairs, labels)))
    (tmp_path / "s").write_text("".join("%s %s %r\n" % (a, b, s) for (a, b), s in rows))
    table = keyed.read_labelled_trials(str(tmp_path / "t"), KeySpace())
    expected_scores, expected_labels = reference_join(pairs, labels, rows)
    log = Log()
    if not expected_scores:
        with pytest.raises(KaldiError, match="No score in"):
            keyed_score_labels(log, str(tmp_path / "s"), table)
        return
    scores, is_target = keyed_score_labels(log, str(tmp_path / "s"), table)
    assert scores.tolist() == expected_scores
    assert is_target.tolist() == expected_labels
    strays = len(rows) - len(expected_scores)
    unscored = len(pairs) - len(expected_scores)
    warned = [m for level, m in log.lines if level == "WARNING"]
    assert len(warned) == (strays > 0) + (unscored > 0)
    if strays:
        assert any(m.startswith("%d scores in" % strays) for m in warned)
    if unscored:
        assert any(m.startswith("%d of %d trials in" % (unscored, len(pairs))) for m in warned)


def test_duplicates_name_both_lines_in_either_file(tmp_path, chunk_bytes):
    (tmp_path / "t").write_text("a x target\nb x nontarget\na y nontarget\nb x target\n")
    with pytest.raises(KaldiError, match=r"Duplicate key pair 'b x' .* \(lines 2 and 4, once "
                       r"as target and once as nontarget: contradictory labels\)"):
        keyed.read_labelled_trials(str(tmp_path / "t"), KeySpace())
    (tmp_path / "t").write_text("a x target\nb x nontarget\na y nontarget\nb x 0\n")
    with pytest.raises(KaldiError, match=r"Duplicate key pair 'b x' .* \(lines 2 and 4\)$"):
        keyed.read_labelled_trials(str(tmp_path / "t"), KeySpace())
    (tmp_path / "t").write_text("a x target\nb x nontarget\na y nontarget\n")
    (tmp_path / "s").write_text("a y 1\nb x 2\nzz q 3\na y 4\n")
    table = keyed.read_labelled_trials(str(tmp_path / "t"), KeySpace())
    with pytest.raises(KaldiError, match=r"Duplicate key pair 'a y' .* \(lines 1 and 4\)"):
        keyed_score_labels(Log(), str(tmp_path / "s"), table)
    with pytest.raises(KaldiError, match=r"'a y' .* \(line 4 and an earlier line\)"):
        keyed_score_labels(Log(), "cat %s |" % (tmp_path / "s"), table)


def test_a_third_table_of_tokens_joins_with_the_same_code(tmp_path):
    (tmp_path / "t").write_text("a x target\nb x nontarget\na y nontarget\n")
    (tmp_path / "p").write_text("a y male\na x female\nb x female\n")
    (tmp_path / "s").write_text("b x 2\na y 1\na x 3\n")
    keys = KeySpace()
    table = keyed.read_labelled_trials(str(tmp_path / "t"), keys)
    parts = PairTable.read(str(tmp_path / "p"), keys, "token", noun="partition entries",
                           what="partitions file")
    scores, (labels, part) = join_columns(Log(), str(tmp_path / "s"), keys, [table, parts])
    assert scores.tolist() == [2.0, 1.0, 3.0] and labels.tolist() == [False, False, True]
    assert [parts.value_index.keys[i] for i in part] == [b"female", b"male", b"female"]


def test_streamed_scoring_equals_the_in_memory_reference(tmp_path, chunk_bytes):
    rng = np.random.default_rng(5)
    enroll = ["spk%d" % i for i in range(7)]
    test = ["u%02d" % j for j in range(30)]
    lines = []
    table = rng.normal(size=(7, 30)) * 10.0 ** rng.integers(-3, 4, size=(7, 30))
    for _ in range(300):
        i, j = rng.integers(0, 8), rng.integers(0, 31)    # index 7 / 30: unknown keys
        k1 = enroll[i] if i < 7 else "nobody"
        k2 = test[j] if j < 30 else "nothing"
        lines.append("%s %s %s\n" % (k1, k2, "target" if rng.random() < 0.3 else "nontarget"))
    lines = lines[:150] + [lines[3]] * 3 + lines[150:]               # duplicate trials
    (tmp_path / "trials").write_text("".join(lines))
    log = Log()
    done = score_trial_list(log, str(tmp_path / "trials"), str(tmp_path / "out"), enroll, test,
                            lambda e, t: table[e, t], chunk_size=7)
    want = []
    for line in lines:
        k1, k2 = line.split()[:2]
        if k1 in enroll and k2 in test:
            want.append(np.float32(table[enroll.index(k1), test.index(k2)]))
    got = (tmp_path / "out").read_text().splitlines()
    assert done == len(want) == len(got)
    assert [float(g.split()[2]) for g in got] == [float("%.7g" % w) for w in want]
    exact = sum(Fraction(float(w)) for w in want)
    squares = sum(Fraction(float(w)) ** 2 for w in want)
    mean = np.float32(float(exact) / len(want))
    std = np.sqrt(np.float32(np.float32(float(squares) / len(want)) - mean * mean))
    assert ("LOG", "Mean score was %.6g, standard deviation was %.6g" % (mean, std)) in log.lines
    errors = len(lines) - len(want)
    assert log.lines[-1] == ("LOG", "Processed %d trials, %d had errors." % (done, errors))
    warnings = [m for level, m in log.lines if level == "WARNING"]
    assert len(warnings) == min(errors, 20) + (errors > 20)


@SETTINGS
@given(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1,
                max_size=50), st.integers(1, 7))
def test_float32_moments_are_exact_whatever_the_chunks(values, pieces):
    values = np.array(values, dtype=np.float32)
    moments = Float32Moments()
    for part in np.array_split(values, pieces):
        moments.add(part)
    assert moments.sum() == float(sum(Fraction(float(v)) for v in values))
    assert moments.sum_of_squares() == float(sum(Fraction(float(v)) ** 2 for v in values))


def test_compute_eer_input_streams_to_the_same_values(tmp_path, chunk_bytes):
    rng = np.random.default_rng(2)
    formats = rng.choice(["%.7g", "%r", "%.25f", "%.3e"], 500)
    text = "".join("%s %s\n" % (fmt % float(v), "target" if t else "nontarget") for fmt, v, t
                   in zip(formats, rng.normal(size=500), rng.random(500) < 0.3)).encode()
    (tmp_path / "in").write_bytes(text)
    scores, labels = numbers.read_score_labels(str(tmp_path / "in"))
    ref_scores, ref_labels = numbers._parse_lines_exactly(text)
    assert scores.view(np.uint32).tolist() == ref_scores.view(np.uint32).tolist()
    assert labels.tolist() == ref_labels.tolist()
    assert math.isfinite(float(scores.sum()))


@pytest.mark.parametrize("hash_fn", ["zeros", "low byte"])
def test_key_ids_stay_exact_when_hashes_collide(tmp_path, monkeypatch, hash_fn):
    fake = {"zeros": lambda words: np.zeros(words.shape[0], dtype=np.uint64),
            "low byte": lambda words: words[:, 0] & np.uint64(0xFF)}[hash_fn]
    monkeypatch.setattr(key_index, "_hash_words", fake)
    pairs = [("spk%d" % i, "utt-%03d-with-a-long-name" % j) for i in range(4) for j in range(9)]
    (tmp_path / "t").write_text("".join("%s %s %s\n" % (a, b, "target" if a[-1] == b[-1]
                                                         else "nontarget") for a, b in pairs))
    rows = pairs[::-1][:30] + [("spk9", "utt-000-with-a-long-name")]
    (tmp_path / "s").write_text("".join("%s %s %d\n" % (a, b, i) for i, (a, b) in
                                        enumerate(rows)))
    table = keyed.read_labelled_trials(str(tmp_path / "t"), KeySpace())
    scores, labels = keyed_score_labels(Log(), str(tmp_path / "s"), table)
    assert scores.tolist() == list(range(30))
    assert labels.tolist() == [a[-1] == b[-1] for a, b in rows[:30]]


def test_long_number_formats_decode_to_libc_strtof_bit_for_bit():
    import ctypes
    import ctypes.util
    strtof = ctypes.CDLL(ctypes.util.find_library("c")).strtof
    strtof.restype, strtof.argtypes = ctypes.c_float, [ctypes.c_char_p, ctypes.c_void_p]
    rng = np.random.default_rng(7)
    tokens = []
    for _ in range(3000):
        f = np.float32(rng.normal() * 10.0 ** rng.integers(-8, 9))
        mid = (float(f) + float(np.nextafter(f, np.float32(np.inf)))) / 2    # a float32 tie
        tokens += [b"%r" % float(rng.normal()), b"%.25f" % float(f), b"%.40f" % mid,
                   b"%.30e" % mid, b"%.17g" % (mid * (1 + 2e-16)), b"-%.30f" % abs(mid)]
    data = b"".join(t + b" nontarget\n" for t in tokens) + b"0 target\n"
    scores, _ = numbers.parse_score_labels(data)
    expected = np.array([strtof(t, None) for t in tokens], dtype=np.float32)
    np.testing.assert_array_equal(scores[:-1].view(np.uint32), expected.view(np.uint32))


@st.composite
def two_systems(draw):
    pairs, labels, rows = draw(trials_and_scores())
    second = draw(st.lists(st.sampled_from(range(len(pairs))), unique=True))
    strays = draw(st.lists(st.tuples(KEY, st.sampled_from(["x", "z"])), unique=True,
                           max_size=3))
    other = draw(st.permutations([(pairs[i], float(i)) for i in second]
                                 + [(p, -1.0) for p in strays]))
    return pairs, labels, rows, other


@SETTINGS
@given(case=two_systems())
def test_fusion_join_equals_the_dictionary_reference_at_any_chunk_size(tmp_path, chunk_bytes,
                                                                       case):
    """read_joined_scores with two files (the second held as a column of the trials table,
    issue 26 item 9): the rows of the first file whose pair is a trial scored by both, in the
    first file's order, against plain dictionaries; one WARNING per side that has leftovers."""
    from pauc_backend.kaldi_io.joined_scores import read_joined_scores
    pairs, labels, rows, other = case
    (tmp_path / "t").write_text("".join("%s %s %s\n" % (a, b, "target" if lab else "nontarget")
                                        for (a, b), lab in zip(pairs, labels)))
    (tmp_path / "a").write_text("".join("%s %s %r\n" % (a, b, s) for (a, b), s in rows))
    (tmp_path / "b").write_text("".join("%s %s %r\n" % (a, b, s) for (a, b), s in other))
    trial = dict(zip(pairs, labels))
    second = dict(other)
    kept = [(p, s) for p, s in rows if p in trial and p in second]
    log = Log()
    scores, is_target, num_trials = read_joined_scores(
        log, [str(tmp_path / "a"), str(tmp_path / "b")], str(tmp_path / "t"))
    assert num_trials == len(pairs)
    assert scores.tolist() == [[s, second[p]] for p, s in kept]
    assert is_target.tolist() == [trial[p] for p, _ in kept]
    leftover_b = len(other) - len(kept)
    warned = [m for level, m in log.lines if level == "WARNING"]
    assert any(m.startswith("%d scores in %s" % (leftover_b, tmp_path / "b")) for m in warned) \
        == (leftover_b > 0), warned


def test_a_pair_twice_in_the_second_file_names_both_lines(tmp_path):
    from pauc_backend.kaldi_io.joined_scores import read_joined_scores
    (tmp_path / "t").write_text("a x target\nb x nontarget\na y nontarget\n")
    (tmp_path / "a").write_text("a x 1\nb x 2\na y 3\n")
    (tmp_path / "b").write_text("a y 1\nzz q 3\nb x 2\na y 4\n")
    with pytest.raises(KaldiError, match=r"Duplicate key pair 'a y' .* \(lines 1 and 4\)"):
        read_joined_scores(Log(), [str(tmp_path / "a"), str(tmp_path / "b")],
                           str(tmp_path / "t"))


@pytest.mark.parametrize("labels,suffix", [
    ([True, False, True, False], ")"),
    ([True, False, True, True], ", once as target and once as nontarget: contradictory "
                                "labels)"),
])
def test_a_label_table_from_arrays_refuses_a_pair_twice_as_read_does(labels, suffix):
    """A trials list already read (train-pauc-auto's development trials): the same ERROR as
    PairTable.read's, its lines counted from 1, a contradiction named."""
    key1 = np.array(["a", "b", "a", "b"])
    key2 = np.array(["x", "x", "y", "x"])
    with pytest.raises(KaldiError) as err:
        PairTable.from_arrays("dev", KeySpace(), key1, key2, labels, noun="trials",
                              what="development trials file", kind="label")
    assert str(err.value) == ("Duplicate key pair 'b x' in dev: Trial 'b x' appears twice in "
                              "development trials file dev (lines 2 and 4" + suffix)
    table = PairTable.from_arrays("dev", KeySpace(), key1[:3], key2[:3], labels[:3],
                                  kind="label")
    rows = table.find(table.keys.codes(np.array([0, 0, 1]), np.array([0, 1, 0])))
    assert len(table) == 3                 # rows of the pairs a x, a y, b x: their labels
    assert table.values(rows).tolist() == [labels[0], labels[2], labels[1]]
