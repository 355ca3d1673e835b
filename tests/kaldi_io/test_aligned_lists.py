"""read_same_order, compute-eer-pauc's keyed form when the scores follow the trials (issue 35):
the very arrays of the join by key (``keyed_score_labels``) whatever the two files' chunk
boundaries, None whenever the files do not list the same pairs in strictly ascending order (the
join then decides, with its own warnings and errors), and the tool's output the same either way."""

import json
import re

import numpy as np
import pytest
from conftest import run_tool
from test_keyed import Log

from pauc_backend.kaldi_io.aligned_lists import read_same_order
from pauc_backend.kaldi_io.keyed import KeySpace, keyed_score_labels, read_labelled_trials


def make_lists(num_enroll=30, num_test=40, seed=0):
    """Enroll-major pairs (ascending bytes), keys of 1 to 48 bytes, mixed label words and
    score spellings, about a fifth of the trials targets."""
    rng = np.random.default_rng(seed)
    enroll = sorted({"e%02d" % i + "x" * int(rng.integers(0, 46)) for i in range(num_enroll)})
    test = sorted({"t%03d-" % j + "y" * int(rng.integers(0, 43)) for j in range(num_test)})
    pairs = [(e, t) for e in enroll for t in test if rng.random() < 0.8]
    target = rng.random(len(pairs)) < 0.2
    words = [("1" if rng.random() < 0.3 else "target") if y else
             ("0" if rng.random() < 0.3 else "nontarget") for y in target]
    spellings = ["%.7g", "%.3f", "%.6e", "%g"]
    scores = [spellings[k % 4] % v for k, v in enumerate(rng.normal(0, 5, len(pairs)))]
    scores[3], scores[7] = "-0", "3.4e38"
    return pairs, words, scores


def write(folder, pairs, words, scores, name=""):
    trials, scored = folder / ("trials" + name), folder / ("scores" + name)
    trials.write_text("".join("%s %s %s\n" % (e, t, w) for (e, t), w in zip(pairs, words)))
    scored.write_text("".join("%s %s %s\n" % (e, t, s) for (e, t), s in zip(pairs, scores)))
    return str(scored), str(trials)


def joined(scores, trials):
    log = Log()
    result = keyed_score_labels(log, scores, read_labelled_trials(trials, KeySpace()))
    assert log.lines == []
    return result


@pytest.mark.parametrize("chunks", [(64, 64), (64, 333), (1000, 97), (1 << 20, 1 << 20)])
def test_same_order_gives_the_arrays_of_the_join(tmp_path, chunks):
    scores, trials = write(tmp_path, *make_lists())
    got = read_same_order(scores, trials, *chunks)
    assert got is not None
    expected = joined(scores, trials)
    assert got[0].dtype == np.float64 and got[1].dtype == bool
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    assert np.signbit(got[0][3]) and got[0][7] == 3.4e38


def _mutations():
    def swap(p, w, s):
        p = list(p)
        p[5], p[6] = p[6], p[5]
        return p, w, s, None

    def drop_last_score(p, w, s):
        return p, w, s[:-1], None

    def extra_score(p, w, s):
        return p, w, s, "zz zz 1.5\n"

    def listed_twice(p, w, s):       # the same pair twice, in both files alike
        return p[:9] + [p[8]] + p[9:], w[:9] + [w[8]] + w[9:], s[:9] + [s[8]] + s[9:], None

    def descending(p, w, s):         # the same order in both files, but not ascending
        return p[::-1], w[::-1], s[::-1], None

    def long_key(p, w, s):
        p = list(p)
        p[4] = (p[4][0] + "k" * 60, p[4][1])
        return p, w, s, None

    def bad_label(p, w, s):
        return p, w[:2] + ["tgt"] + w[3:], s, None

    def nan_score(p, w, s):          # the join names the line and the trial
        return p, w, s[:11] + ["nan"] + s[12:], None

    def inf_score(p, w, s):
        return p, w, s[:11] + ["-inf"] + s[12:], None

    return [swap, drop_last_score, extra_score, listed_twice, descending, long_key, bad_label,
            nan_score, inf_score]


@pytest.mark.parametrize("mutate", _mutations(), ids=lambda f: f.__name__)
def test_anything_else_is_left_to_the_join(tmp_path, mutate):
    pairs, words, scores = make_lists(seed=1)
    t_pairs, t_words, s_scores, extra = mutate(pairs, words, scores)
    if mutate.__name__ in ("swap", "drop_last_score", "extra_score"):
        # the scores file alone is changed: the trials stay as they were
        scored, trials = write(tmp_path, pairs, words, scores)
        with open(scored, "w") as out:
            out.write("".join("%s %s %s\n" % (e, t, v) for (e, t), v in zip(t_pairs, s_scores)))
            out.write(extra or "")
    else:
        scored, trials = write(tmp_path, t_pairs, t_words, s_scores)
    assert read_same_order(scored, trials, 100, 77) is None


def test_a_pipe_or_stdin_is_left_to_the_join(tmp_path):
    scores, trials = write(tmp_path, *make_lists())
    assert read_same_order("cat %s |" % scores, trials) is None
    assert read_same_order(scores, "-") is None
    assert read_same_order(scores, trials) is not None


def _messages(stderr):
    """(level, message) of each LOG/WARNING/ERROR line, without the code position."""
    found = re.findall(r"^(LOG|WARNING|ERROR) \([^\[\s]+\[[^\]]*\]:\S*\) (.*)$",
                       stderr.decode(), re.M)
    return found


@pytest.mark.parametrize("report", ["kaldi", "table", "json"])
def test_the_tool_says_the_same_through_either_path(tmp_path, report):
    scores, trials = write(tmp_path, *make_lists(seed=2))
    args = ["--report=" + report, "--llr=true", "--p-target=0.01,0.3"]
    fast = run_tool("compute-eer-pauc", *args, scores, trials)
    joined_ = run_tool("compute-eer-pauc", *args, "cat %s |" % scores, trials)  # a pipe: the join
    assert fast.returncode == joined_.returncode == 0
    assert fast.stdout == joined_.stdout
    assert _messages(fast.stderr) == _messages(joined_.stderr)
    if report == "json":
        assert json.loads(fast.stdout)["num_target"] > 0


def test_a_mismatch_deep_in_a_long_list_is_the_joins_error(tmp_path):
    # 60,000 lines: the mismatch lies past the first chunks the side-by-side reading takes
    pairs, words, scores = make_lists(num_enroll=300, num_test=250, seed=3)
    scored, trials = write(tmp_path, pairs, words, scores)
    lines = open(scored).read().splitlines(True)
    row = len(lines) - 50
    e, t, v = lines[row].split()
    lines[row] = "%s %s %s\n" % (e, "unknown-test", v)
    open(scored, "w").write("".join(lines))
    proc = run_tool("compute-eer-pauc", scored, trials)
    assert proc.returncode == 255 and proc.stdout == b""
    messages = _messages(proc.stderr)
    assert [level for level, _ in messages] == ["WARNING", "WARNING", "ERROR"]
    assert "'%s unknown-test'" % e in messages[0][1] + messages[1][1]
    assert scored in messages[2][1] and trials in messages[2][1]
    assert "%d of the %d trials" % (len(pairs) - 1, len(pairs)) in messages[2][1]


def test_a_pair_listed_twice_in_both_files_is_one_error_naming_file_and_lines(tmp_path):
    pairs, words, scores = make_lists(seed=4)
    pairs, words, scores = (x[:9] + [x[8]] + x[9:] for x in (pairs, words, scores))
    scored, trials = write(tmp_path, pairs, words, scores)
    proc = run_tool("compute-eer-pauc", scored, trials)
    assert proc.returncode == 255
    messages = _messages(proc.stderr)
    assert messages == [("ERROR", "Duplicate key pair '%s %s' in %s: Trial '%s %s' appears "
                         "twice in trials file %s (lines 9 and 10)" % (
                             *pairs[8], trials, *pairs[8], trials))]
