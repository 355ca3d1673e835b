"""compute-eer-pauc: byte-for-byte compute-eer on the golden files, compute_min_dcf.py's line,
Kaldi's errors for bad input, the keyed join, the reports, and the parser against strtof."""

import ctypes
import ctypes.util
import json
import re

import numpy as np
import pytest
from conftest import run_shell, run_tool

from pauc_backend.kaldi_io.numbers import (_parse_lines_exactly, kaldi_string_to_float,
                                                parse_score_labels)

GOLDEN_NAMES = ["plda_numutts", "plda_adapt_numutts", "plda_nonumutts", "plda_adapt_nonumutts",
                "plda_numutts_simplelen", "plda_numutts_nolen"]
HEADER = re.compile(r"^(LOG|WARNING|ERROR) \(([^\[\s]+)\[[^\]]*\]:\S*\) (.*)$")


def log_messages(stderr, level="LOG"):
    lines = stderr.decode().splitlines()
    return [m.group(3) for m in map(HEADER.match, lines) if m and m.group(1) == level]


def kaldi_message(line):
    return HEADER.match(line).group(3)


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_drop_in_mode_prints_what_compute_eer_prints(golden, name):
    proc = run_shell("paste data/trials scores/%s | awk '{print $6, $3}' | compute-eer-pauc -"
                     % name, cwd=golden)
    ref_err = (golden / "eer" / (name + ".stderr")).read_text().splitlines()
    assert proc.stdout == (golden / "eer" / (name + ".stdout")).read_bytes()
    assert proc.returncode == int((golden / "eer" / (name + ".rc")).read_text())
    ours = proc.stderr.decode().splitlines()
    assert ours[0] == ref_err[0].replace("compute-eer", "compute-eer-pauc", 1)
    assert HEADER.match(ours[1]).group(3) == kaldi_message(ref_err[1])


def test_recipe_capture_works_unchanged(golden):
    proc = run_shell('eer=$(paste data/trials scores/plda_numutts | awk \'{print $6, $3}\' | '
                     'compute-eer-pauc - 2>/dev/null); echo "EER: $eer%"', cwd=golden)
    assert proc.stdout == b"EER: 5.5%\n"


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_keyed_mode_logs_compute_min_dcf_lines(golden, name):
    proc = run_tool("compute-eer-pauc", "--p-target=0.01,0.005,0.001", "scores/" + name,
                    "data/trials", cwd=golden)
    assert proc.returncode == 0
    for p in ("0.01", "0.005", "0.001"):
        ref = (golden / "mindcf" / ("%s_p%s.stderr" % (name, p))).read_text().splitlines()[1]
        assert ref in log_messages(proc.stderr)
    assert proc.stdout == (golden / "eer" / (name + ".stdout")).read_bytes()


def test_keyed_json_min_dcf_prints_as_compute_min_dcf_stdout(golden):
    proc = run_tool("compute-eer-pauc", "--report=json", "--p-target=0.01,0.005,0.001",
                    "scores/plda_adapt_numutts", "data/trials", cwd=golden)
    summary = json.loads(proc.stdout)
    assert [item["p_target"] for item in summary["min_dcf"]] == [0.01, 0.005, 0.001]
    for item in summary["min_dcf"]:
        ref = golden / "mindcf" / ("plda_adapt_numutts_p%s.stdout" % item["p_target"])
        assert "{0:.4f}\n".format(item["min_dcf"]) == ref.read_text()


# -- bad input: Kaldi's messages, exit 255 -------------------------------------------------

@pytest.mark.parametrize("text, message", [
    (b"1.5\n", "Invalid input line (must have two fields): 1.5 (line 1 of standard input)"),
    (b"1.5 target extra\n", "Invalid input line (must have two fields): 1.5 target extra "
     "(line 1 of standard input)"),
    (b"0.5 nontarget\n\n", "Invalid input line (must have two fields):  (line 2 of standard "
     "input)"),
    (b"abc target\n", "Invalid input line (first field must be float): abc target (line 1 of "
     "standard input)"),
    (b"1.5x target\n", "Invalid input line (first field must be float): 1.5x target (line 1 of "
     "standard input)"),
    (b"1e999 target\n", "Invalid input line (first field must be float): 1e999 target (line 1 of "
     "standard input)"),
    (b"1.5 targets\n", "Invalid input line (second field must be 'target' or 'nontarget') "
     "(line 1 of standard input)"),
    (b"1.5 target\r\n", "Invalid input line (second field must be 'target' or 'nontarget') "
     "(line 1 of standard input)"),
    (b"1.5 target\n2.5 target\n", "No non-target scores seen."),
    (b"1.5 nontarget\n", "No target scores seen."),
    (b"", "Empty input."),
    (b"nan target\n1 nontarget\n", "Invalid input line (score is NaN): nan target (line 1 of "
     "standard input)"),
    (b"1 nontarget\ninf target\n", "Invalid input line (score is infinite): inf target (line 2 "
     "of standard input)"),
    (b"-Infinity nontarget\n1 target\n", "Invalid input line (score is infinite): -Infinity "
     "nontarget (line 1 of standard input)"),
    (b"1 nontarget\n1e400 target\n", "Invalid input line (first field must be float): 1e400 "
     "target (line 2 of standard input)"),
])
def test_bad_input_gives_kaldis_error_and_exit_255(text, message):
    proc = run_tool("compute-eer-pauc", "-", input=text)
    assert proc.returncode == 255
    assert proc.stdout == b""
    assert log_messages(proc.stderr, "ERROR") == [message]


def test_a_score_too_large_for_a_double_is_an_error_naming_the_line(tmp_path):
    # 1e400 is an error in both forms (Kaldi's compute-eer refuses it), never a silent +inf
    scores, trials = tmp_path / "scores", tmp_path / "trials"
    scores.write_text("a b 2\nc d 1e400\ne f inf\n")
    trials.write_text("a b target\nc d nontarget\ne f nontarget\n")
    proc = run_tool("compute-eer-pauc", scores, trials)
    assert proc.returncode == 255
    assert log_messages(proc.stderr, "ERROR") == [
        "Bad score '1e400' on line 2 of %s: out of range" % scores]


NON_FINITE_TRIALS = ["a x target", "a y nontarget", "b x nontarget", "b y target",
                     "c x nontarget", "c y target"]


@pytest.mark.parametrize("token", ["nan", "NaN", "inf", "-inf", "Infinity"])
@pytest.mark.parametrize("form", ["piped, stdin", "piped, file", "keyed, trials' order",
                                  "keyed, another order", "keyed, scores through a pipe"])
def test_a_nan_or_infinite_score_is_one_error_naming_file_line_and_trial(tmp_path, token,
                                                                          form):
    # line 3 holds the first non-finite score, line 5 another: the first is the one named
    values = ["1.5", "0.5", token, "2.5", "-inf", "3"]
    trials = write(tmp_path / "trials", NON_FINITE_TRIALS)
    if form.startswith("piped"):
        lines = ["%s %s" % (v, t.split()[2]) for v, t in zip(values, NON_FINITE_TRIALS)]
        piped = write(tmp_path / "piped", lines)
        stdin = form == "piped, stdin"
        proc = run_tool("compute-eer-pauc", "-" if stdin else piped,
                        input=(tmp_path / "piped").read_bytes() if stdin else None)
        kind = "NaN" if token.lower() == "nan" else "infinite"
        expected = "Invalid input line (score is %s): %s nontarget (line 3 of %s)" % (
            kind, token, "standard input" if stdin else piped)
    else:
        lines = ["%s %s" % (" ".join(t.split()[:2]), v) for v, t in zip(values, NON_FINITE_TRIALS)]
        order = lines[::-1] if form == "keyed, another order" else lines
        scores = write(tmp_path / "scores", order)
        line = order.index(lines[2]) + 1
        if form == "keyed, another order":        # then line 2 (c x -inf) comes first
            line, token = 2, "-inf"
        name = "cat %s |" % scores if form.endswith("pipe") else scores
        proc = run_tool("compute-eer-pauc", "--report=json", name, trials)
        pair = "c x" if form == "keyed, another order" else "b x"
        expected = "Bad score '%s' on line %d of %s (trial '%s'): not a finite number" % (
            token, line, name, pair)
    assert proc.returncode == 255
    assert proc.stdout == b""
    assert log_messages(proc.stderr, "ERROR") == [expected]
    assert b"Traceback" not in proc.stderr and b"Warning" not in proc.stderr


def test_a_nan_deep_in_a_long_scores_file_is_named_by_its_line(tmp_path):
    # past the first chunks of both keyed readers (1 MB side by side, 4 MB joining)
    num = 300000
    keys = ["e%03d t%04d" % (i // 1000, i % 1000) for i in range(num)]
    values = ["%.5f" % (i % 977 / 100.0) for i in range(num)]
    values[254321] = "nan"
    trials = write(tmp_path / "trials", ["%s %s" % (k, "target" if i % 100 == 0 else
                                                    "nontarget") for i, k in enumerate(keys)])
    scores = write(tmp_path / "scores", ["%s %s" % kv for kv in zip(keys, values)])
    proc = run_tool("compute-eer-pauc", scores, trials)
    assert proc.returncode == 255
    assert log_messages(proc.stderr, "ERROR") == [
        "Bad score 'nan' on line 254322 of %s (trial '%s'): not a finite number"
        % (scores, keys[254321])]


def test_first_bad_line_deep_in_a_large_input_is_the_one_reported():
    rng = np.random.default_rng(0)
    lines = ["%.7g %s" % (s, "target" if t else "nontarget")
             for s, t in zip(rng.normal(size=200000), rng.random(200000) < 0.1)]
    lines[150000] = "0.25 tar get"
    lines[170000] = "oops target"
    proc = run_tool("compute-eer-pauc", "-", input=("\n".join(lines) + "\n").encode())
    assert proc.returncode == 255
    assert log_messages(proc.stderr, "ERROR") == [
        "Invalid input line (must have two fields): 0.25 tar get (line 150001 of standard "
        "input)"]


def test_missing_input_file_is_an_error(tmp_path):
    proc = run_tool("compute-eer-pauc", tmp_path / "nothing")
    assert proc.returncode == 255 and len(log_messages(proc.stderr, "ERROR")) == 1


# -- the parser: fast path = exact path = strtof -------------------------------------------

def test_fast_and_exact_paths_agree_on_every_layout_compute_eer_accepts():
    rng = np.random.default_rng(1)
    formats = ["%.7g", "%.6f", "%+.3f", "%.9g", "%.4e", "%g", "%.0f", "%r", "%.12g"]
    blanks = [" ", "\t", "  ", " \t "]
    rows = []
    for i in range(30000):
        value = float(rng.normal() * 10.0 ** rng.integers(-6, 8))
        text = formats[i % len(formats)] % value
        text = {0: text, 1: "." + "5" * (i % 5 + 1), 2: "5.", 3: "-0", 4: "+5e-1",
                5: "-.0", 6: "1234567890123456789012345678.5e-20",
                7: "0.000000000000000000000000000012345"}.get(i % 97, text)
        lead = " " if i % 13 == 0 else ""
        trail = "\t" if i % 17 == 0 else ""
        label = "target" if rng.random() < 0.2 else "nontarget"
        rows.append(lead + text + blanks[i % 4 if i % 7 == 0 else 0] + label + trail)
    data = ("\n".join(rows)).encode()          # the last line has no newline: still a line
    scores, labels = parse_score_labels(data)
    ref_scores, ref_labels = _parse_lines_exactly(data + b"\n")
    assert scores.size == 30000
    np.testing.assert_array_equal(scores.view(np.uint32), ref_scores.view(np.uint32))
    np.testing.assert_array_equal(labels, ref_labels)


def test_canonical_numbers_decode_to_libc_strtof_bit_for_bit():
    strtof = ctypes.CDLL(ctypes.util.find_library("c")).strtof
    strtof.restype, strtof.argtypes = ctypes.c_float, [ctypes.c_char_p, ctypes.c_void_p]
    rng = np.random.default_rng(2)
    tokens = []
    for _ in range(20000):
        f = np.float32(rng.normal() * 10.0 ** rng.integers(-5, 7))
        mid = (float(f) + float(np.nextafter(f, np.float32(np.inf)))) / 2    # a tie
        tokens += [b"%.7g" % f, b"%.9g" % mid, b"%.8f" % mid, b"%.3f" % f]
    data = b"".join(t + b" nontarget\n" for t in tokens) + b"0 target\n"
    scores, _ = parse_score_labels(data)
    expected = np.array([strtof(t, None) for t in tokens], dtype=np.float32)
    np.testing.assert_array_equal(scores[:-1].view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("token, value", [
    (b"1.5\r", 1.5), (b"\x0b2", 2.0), (b"INF", np.inf), (b"-1.#INF", -np.inf),
    (b"1e-60", 0.0), (b"-1e-60", -0.0), (b"3.4028235e38", 3.4028234663852886e38),
    (b"1e39", None), (b"0x10", None), (b"1_0", None), (b"1e", None), (b".", None),
    (b"+.5", 0.5), (b"1e99999999999", None), (b"-0e99999999999", -0.0),
])
def test_kaldi_conversion_of_single_fields(token, value):
    result = kaldi_string_to_float(token)
    if value is None:
        assert result is None
    else:
        assert result == value and np.signbit(result) == np.signbit(value)


# -- keyed mode: join by key, not by line ------------------------------------------------

def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def test_keyed_join_ignores_line_order_and_reports_missing_scores(golden, tmp_path):
    scores = (golden / "scores/plda_numutts").read_text().splitlines()
    shuffled = scores[::-1]
    del shuffled[100]                                   # one trial loses its score
    shuffled.append("ev999 ev001-tst01 3.5")            # a score with no trial
    proc = run_tool("compute-eer-pauc", "--report=json", "--allow-partial",
                    write(tmp_path / "s", shuffled), golden / "data/trials")
    assert proc.returncode == 0
    warnings = log_messages(proc.stderr, "WARNING")
    assert any(w.startswith("1 scores in") and "ev999 ev001-tst01" in w for w in warnings)
    assert any(w.startswith("1 of 16000 trials in") for w in warnings)
    summary = json.loads(proc.stdout)
    assert summary["num_target"] + summary["num_nontarget"] == 15999
    assert summary["num_trials_listed"] == 16000


def test_duplicate_trial_is_an_error(golden, tmp_path):
    trials = (golden / "data/trials").read_text().splitlines()
    trials.append(trials[5])
    proc = run_tool("compute-eer-pauc", golden / "scores/plda_numutts",
                    write(tmp_path / "t", trials))
    assert proc.returncode == 255
    assert re.search(r"Trial '\S+ \S+' appears twice in trials file .* \(lines 6 and 16001\)",
                     log_messages(proc.stderr, "ERROR")[0])


def test_one_and_zero_labels_mean_target_and_nontarget(golden, tmp_path):
    """VoxCeleb-style 1|0 labels (issue 19 item 4c), alone or mixed with words: the same
    figures as target|nontarget, in every report and in the tools that read labelled trials."""
    words = (golden / "data/trials").read_text().splitlines()
    ones = [l.replace(" nontarget", " 0").replace(" target", " 1") for l in words]
    mixed = [o if i % 2 else w for i, (w, o) in enumerate(zip(words, ones))]
    scores = golden / "scores/plda_numutts"
    reference = run_tool("compute-eer-pauc", "--report=json", scores, golden / "data/trials")
    assert reference.returncode == 0
    for name, lines in (("ones", ones), ("mixed", mixed)):
        proc = run_tool("compute-eer-pauc", "--report=json", scores, write(tmp_path / name, lines))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == reference.stdout
    calibration = [run_tool("train-calibration", trials, scores, tmp_path / ("cal_" + name))
                   for name, trials in (("words", golden / "data/trials"),
                                        ("ones", tmp_path / "ones"))]
    assert all(p.returncode == 0 for p in calibration)
    assert (tmp_path / "cal_words").read_bytes() == (tmp_path / "cal_ones").read_bytes()


def test_a_label_other_than_the_four_is_an_error_naming_them(tmp_path):
    proc = run_tool("compute-eer-pauc", write(tmp_path / "s", ["a b 1", "a c 2"]),
                    write(tmp_path / "t", ["a b 1", "a c 2"]))
    assert proc.returncode == 255
    assert ("Bad label '2' on line 2" in log_messages(proc.stderr, "ERROR")[0]
            and "neither target nor nontarget, nor 1 or 0" in log_messages(proc.stderr, "ERROR")[0])


def test_unknown_label_in_trials_is_an_error(tmp_path):
    proc = run_tool("compute-eer-pauc", write(tmp_path / "s", ["a b 1", "a c 2"]),
                    write(tmp_path / "t", ["a b target", "a c impostor"]))
    assert proc.returncode == 255
    assert "Bad label 'impostor' on line 2" in log_messages(proc.stderr, "ERROR")[0]


# -- reports, options, plots ---------------------------------------------------------------

def test_table_report_has_one_aligned_row(golden):
    proc = run_tool("compute-eer-pauc", "--report=table", "--p-target=0.01,0.005",
                    "scores/plda_numutts", "data/trials", cwd=golden)
    header, row = proc.stdout.decode().splitlines()
    assert header.split() == ["EER(%)", "minDCF(0.01)", "minDCF(0.005)", "pAUC[0,0.01]",
                              "AUC", "AP(%)", "d'"]
    assert row.split()[:3] == ["5.50", "0.5840", "0.6598"]


def test_llr_option_adds_calibration_metrics(golden):
    proc = run_tool("compute-eer-pauc", "--llr", "scores/plda_numutts", "data/trials",
                    cwd=golden)
    logged = " ".join(log_messages(proc.stderr))
    assert proc.returncode == 0 and "actDCF is" in logged and "minCllr is" in logged


def test_pauc_band_too_narrow_for_the_non_targets_is_a_warning_not_a_failure():
    proc = run_tool("compute-eer-pauc", "-", input=b"1 target\n0 nontarget\n0.5 nontarget\n")
    assert proc.returncode == 0 and proc.stdout == b"0"
    assert any("pAUC[0,0.01] is undefined" in w for w in log_messages(proc.stderr, "WARNING"))


@pytest.mark.parametrize("option", ["--p-target=0", "--p-target=0.01,x", "--det-plot=a.svg"])
def test_bad_options_are_errors_before_any_output(golden, option):
    proc = run_tool("compute-eer-pauc", option, "scores/plda_numutts", "data/trials",
                    cwd=golden)
    assert proc.returncode == 255 and proc.stdout == b""


def test_plots_are_written_as_png_and_pdf(golden, tmp_path):
    det, roc = tmp_path / "det.png", tmp_path / "roc.pdf"
    proc = run_tool("compute-eer-pauc", "--det-plot=%s" % det, "--roc-plot=%s" % roc,
                    "scores/plda_numutts", "data/trials", cwd=golden)
    assert proc.returncode == 0
    assert det.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert roc.read_bytes()[:5] == b"%PDF-" and b"%%EOF" in roc.read_bytes()[-32:]


def test_tools_that_do_not_plot_do_not_import_matplotlib(golden):
    proc = run_shell("python -c \"import sys; from pauc_backend.cli.tools import compute_eer_pauc as m; "
                     "m.main(['scores/plda_numutts', 'data/trials']); "
                     "print('matplotlib' in sys.modules)\"", cwd=golden)
    assert proc.stdout.endswith(b"False\n")


def test_scores_of_part_of_the_trials_are_refused_unless_allowed_and_then_reported(tmp_path):
    """Issue 20: 100 scores for a 1,000-trial list is one ERROR (compute_min_dcf.py would
    silently evaluate the 100); with --allow-partial the result itself says 100/1000."""
    rng = np.random.default_rng(0)
    lines, scores = [], []
    for i in range(1000):
        label = "target" if i % 10 == 0 else "nontarget"
        lines.append("e%d t%d %s" % (i % 37, i, label))
        scores.append("e%d t%d %.4f" % (i % 37, i, rng.normal() + (2 if i % 10 == 0 else 0)))
    (tmp_path / "trials").write_text("\n".join(lines) + "\n")
    (tmp_path / "all").write_text("\n".join(scores) + "\n")
    (tmp_path / "part").write_text("\n".join(scores[:100]) + "\n")
    proc = run_tool("compute-eer-pauc", tmp_path / "part", tmp_path / "trials")
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode == 255 and proc.stdout == b"", proc.stderr
    assert len(errors) == 1 and "scores 100 of the 1000 trials" in errors[0]
    assert "--allow-partial=true" in errors[0]
    table = run_tool("compute-eer-pauc", "--allow-partial", "--report=table", tmp_path / "part",
                     tmp_path / "trials", check=True)
    header, values = table.stdout.decode().splitlines()
    assert header.split()[-1] == "Trials" and values.split()[-1] == "100/1000"
    assert b"Evaluating part of the trial list" in table.stderr
    # the figures are those of the 100 scored trials
    alone = run_tool("compute-eer-pauc", "--report=table",
                     "-", input=b"".join(
                         ("%s %s\n" % (s.split()[2], l.split()[2])).encode()
                         for s, l in zip(scores[:100], lines[:100])), check=True)
    assert values.split()[:-1] == alone.stdout.decode().splitlines()[1].split()
    report = json.loads(run_tool("compute-eer-pauc", "--allow-partial", "--report=json",
                                 tmp_path / "part", tmp_path / "trials", check=True).stdout)
    assert report["num_trials_listed"] == 1000 and report["num_target"] == 10
    # a full list has no such column or key
    full = run_tool("compute-eer-pauc", "--report=json", tmp_path / "all", tmp_path / "trials",
                    check=True)
    assert "num_trials_listed" not in json.loads(full.stdout)
