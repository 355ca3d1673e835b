"""QMF from the command line: train-calibration/apply-calibration with quality tables,
compute-vector-norms, make-calibration-trials, compare-systems --llr (issue 29)."""

import numpy as np
import pytest

from conftest import run_shell, run_tool
from pauc_backend.kaldi_io import read_float_table, write_vector_table
from pauc_backend.metrics.llr import act_dcf, cllr
from pauc_backend.models.quality import DURATION, QualityFusion, QualityMeasure


def errors(proc):
    return [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]


@pytest.fixture
def qmf_setup(tmp_path):
    """Enrollment models x test utterances whose scores depend on the shorter side's duration;
    files written in shuffled orders, durations as utt2dur text tables."""
    rng = np.random.default_rng(0)
    models = ["spk%02d" % i for i in range(30)]
    utts = ["utt%03d" % j for j in range(80)]
    owner = rng.integers(0, 30, 80)
    enroll_dur = dict(zip(models, np.round(np.exp(rng.uniform(1.5, 4.0, 30)), 2).tolist()))
    test_dur = dict(zip(utts, np.round(np.exp(rng.uniform(0.0, 4.0, 80)), 2).tolist()))
    key1 = np.repeat(models, 80)
    key2 = np.tile(utts, 30)
    labels = owner[np.tile(np.arange(80), 30)] == np.repeat(np.arange(30), 80)
    d = np.log(np.minimum([enroll_dur[k] for k in key1], [test_dur[k] for k in key2]))
    scores = np.where(labels, rng.normal(0.8 * d, 1.0), rng.normal(0.0, 1.0, d.size))
    scores = np.array([float("%.7g" % np.float32(s)) for s in scores])
    (tmp_path / "trials").write_text("".join(
        "%s %s %s\n" % (a, b, "target" if t else "nontarget")
        for a, b, t in zip(key1, key2, labels)))
    order = rng.permutation(key1.size)
    (tmp_path / "scores").write_text("".join("%s %s %.7g\n" % (key1[i], key2[i], scores[i])
                                             for i in order))
    (tmp_path / "enroll_dur").write_text("".join("%s %s\n" % kv for kv in
                                                 reversed(list(enroll_dur.items()))))
    (tmp_path / "utt2dur").write_text("".join("%s %s\n" % kv for kv in test_dur.items()))
    d_e = np.array([enroll_dur[k] for k in key1])
    d_t = np.array([test_dur[k] for k in key2])
    return tmp_path, key1, key2, labels, scores, d_e, d_t


DUR = ["--enroll-duration=ark:enroll_dur", "--test-duration=ark:utt2dur"]


@pytest.mark.parametrize("binary", ["true", "false"])
def test_qmf_model_is_the_library_fit_and_apply_uses_it(qmf_setup, binary):
    tmp, key1, key2, labels, scores, d_e, d_t = qmf_setup
    proc = run_tool("train-calibration", "--prior=0.05", "--max-duration=40",
                    "--quality-interactions", "--binary=" + binary, *DUR, "trials", "scores",
                    "qmf.mdl", cwd=tmp)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "min(log duration), max(log duration)" in proc.stderr.decode()
    measure = QualityMeasure("duration", True, 0.1, 40.0)
    expected = QualityFusion((measure,), interactions=True, prior=0.05).fit(
        scores, labels, d_e, d_t)
    from pauc_backend.persist.calibration import read_calibration
    model = read_calibration(str(tmp / "qmf.mdl"))
    assert model.measures == (measure,) and model.interactions
    rel = 1e-12 if binary == "true" else 1e-6
    assert model.fusion_.weights_ == pytest.approx(expected.fusion_.weights_, rel=rel)
    assert model.offset_ == pytest.approx(expected.offset_, rel=rel)
    proc = run_tool("apply-calibration", *DUR, "qmf.mdl", "scores", "llr", cwd=tmp)
    assert proc.returncode == 0, proc.stderr.decode()
    rows = [l.split() for l in (tmp / "llr").read_text().splitlines()]
    index = {(a, b): i for i, (a, b) in enumerate(zip(key1, key2))}
    order = [index[(r[0], r[1])] for r in rows]
    got = np.array([float(r[2]) for r in rows])
    want = model.transform(scores[order], d_e[order], d_t[order])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_qmf_lowers_cllr_against_score_only_calibration_here(qmf_setup):
    tmp, _, _, labels, _, _, _ = qmf_setup
    for name, extra in (("plain", []), ("qmf", DUR)):
        run_tool("train-calibration", "--prior=0.5", *extra, "trials", "scores", name,
                 cwd=tmp, check=True)
        run_tool("apply-calibration", *extra, name, "scores", name + ".llr", cwd=tmp,
                 check=True)
    trials = {tuple(l.split()[:2]): l.split()[2] == "target"
              for l in (tmp / "trials").read_text().splitlines()}

    def c(path):
        rows = [l.split() for l in path.read_text().splitlines()]
        llr = np.array([float(r[2]) for r in rows])
        y = np.array([trials[(r[0], r[1])] for r in rows])
        return cllr(llr[y], llr[~y])
    assert c(tmp / "qmf.llr") < c(tmp / "plain.llr") - 0.02


def test_missing_quality_of_a_trial_side_is_one_error_naming_the_key(qmf_setup):
    tmp = qmf_setup[0]
    lines = (tmp / "utt2dur").read_text().splitlines()
    (tmp / "short").write_text("\n".join(l for l in lines if not l.startswith("utt007 ")) + "\n")
    for tool, args in (("train-calibration", ["trials", "scores", "m"]),):
        proc = run_tool(tool, "--enroll-duration=ark:enroll_dur", "--test-duration=ark:short",
                        *args, cwd=tmp)
        assert proc.returncode == 255 and len(errors(proc)) == 1
        assert "utt007" in errors(proc)[0] and "short" in errors(proc)[0]
        assert not (tmp / "m").exists()
    run_tool("train-calibration", *DUR, "trials", "scores", "m", cwd=tmp, check=True)
    proc = run_tool("apply-calibration", "--enroll-duration=ark:enroll_dur",
                    "--test-duration=ark:short", "m", "scores", "llr", cwd=tmp)
    assert proc.returncode == 255 and len(errors(proc)) == 1 and "utt007" in errors(proc)[0]
    assert not (tmp / "llr").exists()


@pytest.mark.parametrize("content, line, what", [
    ("utt000 3.5\nutt001 x\n", 2, "x, not a number"),
    ("utt000 3.5\nutt001\n", 2, "end of the line"),
    ("utt000 3.5 7\n", 1, "got more"),
])
def test_malformed_table_is_one_error_naming_file_and_line(qmf_setup, content, line, what):
    tmp = qmf_setup[0]
    (tmp / "bad").write_text(content)
    proc = run_tool("train-calibration", "--enroll-duration=ark:enroll_dur",
                    "--test-duration=ark:bad", "trials", "scores", "m", cwd=tmp)
    assert proc.returncode == 255 and len(errors(proc)) == 1, proc.stderr.decode()
    assert "line %d of bad" % line in errors(proc)[0] and what in errors(proc)[0]
    assert "Traceback" not in proc.stderr.decode() and not (tmp / "m").exists()


@pytest.mark.parametrize("value, message", [("-2", "positive"), ("nan", "positive"),
                                            ("inf", "positive")])
def test_bad_duration_values_are_one_error_naming_the_key(qmf_setup, value, message):
    tmp = qmf_setup[0]
    text = (tmp / "utt2dur").read_text().replace("utt005 ", "utt005 %s\nold " % value, 1)
    (tmp / "bad").write_text(text)
    proc = run_tool("train-calibration", "--enroll-duration=ark:enroll_dur",
                    "--test-duration=ark:bad", "trials", "scores", "m", cwd=tmp)
    assert proc.returncode == 255 and len(errors(proc)) == 1
    assert "utt005" in errors(proc)[0] and message in errors(proc)[0]


def test_measures_must_match_the_model_with_one_error(qmf_setup):
    tmp = qmf_setup[0]
    run_tool("train-calibration", *DUR, "trials", "scores", "qmf", cwd=tmp, check=True)
    run_tool("train-calibration", "trials", "scores", "plain", cwd=tmp, check=True)
    cases = [([], "qmf", "--enroll-duration/--test-duration"),
             (["--enroll-quality=ark:enroll_dur", "--test-quality=ark:utt2dur"], "qmf",
              "not --enroll-quality/--test-quality"),
             (DUR, "plain", "no quality measures")]
    for extra, model, message in cases:
        proc = run_tool("apply-calibration", *extra, model, "scores", "llr", cwd=tmp)
        assert proc.returncode == 255 and len(errors(proc)) == 1, proc.stderr.decode()
        assert message in errors(proc)[0] and not (tmp / "llr").exists()


def test_one_side_of_a_measure_is_an_error_before_any_input_is_read(tmp_path):
    for tool, args in (("train-calibration", ["no_trials", "no_scores", "m"]),
                       ("apply-calibration", ["no_model", "no_scores", "llr"])):
        proc = run_tool(tool, "--test-duration=ark:nothing", *args, cwd=tmp_path)
        assert proc.returncode == 255 and len(errors(proc)) == 1
        assert "--test-duration needs --enroll-duration" in errors(proc)[0]
    proc = run_tool("train-calibration", "--min-duration=5", "--max-duration=2", "a", "b", "c",
                    cwd=tmp_path)
    assert proc.returncode == 255 and "--min-duration=5 exceeds" in errors(proc)[0]


def test_constant_durations_are_one_error_saying_so(qmf_setup):
    """TIMIT's 1.8 s segments: duration cannot calibrate anything."""
    tmp, key1, key2 = qmf_setup[:3]
    (tmp / "flat_e").write_text("".join("%s 1.8\n" % k for k in sorted(set(key1))))
    (tmp / "flat_t").write_text("".join("%s 1.8\n" % k for k in sorted(set(key2))))
    proc = run_tool("train-calibration", "--enroll-duration=ark:flat_e",
                    "--test-duration=ark:flat_t", "trials", "scores", "m", cwd=tmp)
    assert proc.returncode == 255 and len(errors(proc)) == 1
    assert "is constant" in errors(proc)[0] and "duration" in errors(proc)[0]


def test_generic_quality_and_fusion_of_two_systems(qmf_setup):
    tmp, key1, key2, labels, scores, d_e, d_t = qmf_setup
    rng = np.random.default_rng(1)
    second = scores + rng.normal(0, 1, scores.size)
    (tmp / "scores2").write_text("".join("%s %s %.7g\n" % row
                                         for row in zip(key1, key2, second)))
    second = np.array([float("%.7g" % v) for v in second])
    proc = run_tool("train-calibration", "--prior=0.1", *DUR,
                    "--enroll-quality=ark:enroll_dur", "--test-quality=ark:utt2dur",
                    "trials", "scores", "scores2", "m", cwd=tmp)
    assert proc.returncode == 0, proc.stderr.decode()
    expected = QualityFusion((DURATION, QualityMeasure("quality")), prior=0.1).fit(
        np.c_[scores, second], labels, np.c_[d_e, d_e], np.c_[d_t, d_t])
    from pauc_backend.persist.calibration import read_calibration
    model = read_calibration(str(tmp / "m"))
    assert model.fusion_.weights_ == pytest.approx(expected.fusion_.weights_, rel=1e-9)


# ------------------------------------------------------------------- compute-vector-norms
def test_vector_norms_are_kaldi_float_norms_in_a_float_table(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.normal(0, 3, (50, 7)).astype(np.float32)
    keys = ["k%02d" % i for i in range(50)]
    write_vector_table("ark:" + str(tmp_path / "x.ark"), keys, X)
    proc = run_tool("compute-vector-norms", "ark:x.ark", "ark,t:norms.txt", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = (tmp_path / "norms.txt").read_text().splitlines()
    expected = np.sqrt(np.add.accumulate(X * X, axis=1, dtype=np.float32)[:, -1])
    assert lines == ["%s %g " % (k, float(v)) for k, v in zip(keys, expected)]
    # binary, to a file and through a pipe (the reader reads it all: no race with its exit)
    proc = run_shell("compute-vector-norms ark:x.ark ark:- | cat > piped.ark"
                     " && compute-vector-norms ark:x.ark ark:norms.ark", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert (tmp_path / "piped.ark").read_bytes() == (tmp_path / "norms.ark").read_bytes()
    table = read_float_table("ark:" + str(tmp_path / "norms.ark"))
    assert list(table) == keys
    np.testing.assert_array_equal(np.float32(list(table.values())), expected)


def test_vector_norms_of_bad_or_empty_input_are_one_error(tmp_path):
    X = np.ones((3, 4), dtype=np.float32)
    X[1, 2] = np.nan
    write_vector_table("ark:" + str(tmp_path / "x.ark"), ["a", "b", "c"], X)
    proc = run_tool("compute-vector-norms", "ark:x.ark", "ark,t:n", cwd=tmp_path)
    assert proc.returncode == 255 and len(errors(proc)) == 1 and " b " in errors(proc)[0]
    (tmp_path / "empty.ark").write_bytes(b"")
    proc = run_tool("compute-vector-norms", "ark:empty.ark", "ark,t:n", cwd=tmp_path)
    assert proc.returncode == 255 and "empty" in errors(proc)[0]
    assert not (tmp_path / "n").exists()


# ---------------------------------------------------------------- make-calibration-trials
def write_data(tmp_path, rng, num_speakers=40):
    speakers = np.repeat(["s%03d" % i for i in range(num_speakers)],
                         rng.integers(3, 12, num_speakers))
    utts = ["%s-u%02d" % (s, i) for i, s in enumerate(speakers)]
    (tmp_path / "utt2spk").write_text("".join("%s %s\n" % p for p in zip(utts, speakers)))
    durations = np.round(np.exp(rng.uniform(0.5, 3.5, len(utts))), 2)
    (tmp_path / "utt2dur").write_text("".join("%s %s\n" % p for p in zip(utts, durations)))
    return dict(zip(utts, speakers)), dict(zip(utts, durations))


def test_calibration_trials_are_valid_seeded_and_scored_by_train_calibration(tmp_path):
    utt2spk, utt2dur = write_data(tmp_path, np.random.default_rng(3))
    args = ["--num-pairs=150", "--utt2dur=ark:utt2dur", "ark:utt2spk"]
    proc = run_tool("make-calibration-trials", *args, "trials", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    run_tool("make-calibration-trials", *args, "again", cwd=tmp_path, check=True)
    assert (tmp_path / "trials").read_bytes() == (tmp_path / "again").read_bytes()
    rows = [l.split() for l in (tmp_path / "trials").read_text().splitlines()]
    assert rows == sorted(rows, key=lambda r: (r[0], r[1]))
    for a, b, label in rows:
        assert a != b and (utt2spk[a] == utt2spk[b]) == (label == "target")
        assert utt2dur[a] > 2 and utt2dur[b] > 2
    assert len({frozenset(r[:2]) for r in rows}) == len(rows)
    log = proc.stderr.decode()
    for mix in ("short-short", "short-long", "long-long"):
        assert mix + ": " in log
    # the trials feed a QMF
    noise = np.random.default_rng(5).normal(0, 1, len(rows))
    (tmp_path / "scores").write_text("".join(
        "%s %s %.4f\n" % (a, b, (2.0 if label == "target" else 0.0) + e)
        for (a, b, label), e in zip(rows, noise)))
    proc = run_tool("train-calibration", "--enroll-duration=ark:utt2dur",
                    "--test-duration=ark:utt2dur", "trials", "scores", "qmf", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()


def test_calibration_trials_errors(tmp_path):
    write_data(tmp_path, np.random.default_rng(4))
    (tmp_path / "part").write_text("".join((tmp_path / "utt2dur").read_text().splitlines(True)[2:]))
    proc = run_tool("make-calibration-trials", "--utt2dur=ark:part", "ark:utt2spk", "t",
                    cwd=tmp_path)
    assert proc.returncode == 255 and len(errors(proc)) == 1 and "no duration" in errors(proc)[0]
    (tmp_path / "one").write_text("a x\nb x\n")
    proc = run_tool("make-calibration-trials", "ark:one", "t", cwd=tmp_path)
    assert proc.returncode == 255 and "non-target" in errors(proc)[0]
    assert not (tmp_path / "t").exists()
    proc = run_tool("make-calibration-trials", "--num-pairs=0", "ark:one", "t", cwd=tmp_path)
    assert proc.returncode == 255 and "--num-pairs" in errors(proc)[0]


# ------------------------------------------------------------------ compare-systems --llr
def test_compare_systems_llr_adds_act_dcf_and_cllr_rows_with_their_point_values(qmf_setup):
    tmp, _, _, labels, scores, _, _ = qmf_setup
    for name, extra in (("plain", []), ("qmf", DUR)):
        run_tool("train-calibration", "--prior=0.01", *extra, "trials", "scores", name,
                 cwd=tmp, check=True)
        run_tool("apply-calibration", *extra, name, "scores", name + ".llr", cwd=tmp,
                 check=True)
    proc = run_tool("compare-systems", "--llr", "--bootstrap=50", "--report=json",
                    "plain.llr", "qmf.llr", "trials", cwd=tmp)
    assert proc.returncode == 0, proc.stderr.decode()
    import json
    rows = {(r["metric"], r.get("p_target")): r for r in json.loads(proc.stdout)["metrics"]}
    assert ("act_dcf", 0.01) in rows and ("cllr", None) in rows
    trials = {tuple(l.split()[:2]): l.split()[2] == "target"
              for l in (tmp / "trials").read_text().splitlines()}
    for side, path in (("a", "plain.llr"), ("b", "qmf.llr")):
        data = [l.split() for l in (tmp / path).read_text().splitlines()]
        llr = np.array([float(r[2]) for r in data])
        y = np.array([trials[(r[0], r[1])] for r in data])
        tar, non = np.sort(llr[y]), np.sort(llr[~y])
        assert rows[("cllr", None)][side] == pytest.approx(cllr(tar, non), rel=1e-9)
        assert rows[("act_dcf", 0.01)][side] == pytest.approx(act_dcf(tar, non, 0.01),
                                                              rel=1e-9)
    lo, hi = rows[("cllr", None)]["interval"]
    assert lo <= rows[("cllr", None)]["relative"] <= hi
    plain = run_tool("compare-systems", "--bootstrap=50", "plain.llr", "qmf.llr", "trials",
                     cwd=tmp).stdout.decode()
    assert "Cllr" not in plain and "actDCF" not in plain


def test_relative_norms_are_divided_by_the_median_norm_of_the_table(tmp_path):
    rng = np.random.default_rng(6)
    X = rng.normal(0, 2, (41, 5)).astype(np.float32)
    keys = ["k%02d" % i for i in range(41)]
    write_vector_table("ark:" + str(tmp_path / "x.ark"), keys, X)
    run_tool("compute-vector-norms", "--relative", "ark:x.ark", "ark:rel.ark", cwd=tmp_path,
             check=True)
    norms = np.sqrt(np.add.accumulate(X * X, axis=1, dtype=np.float32)[:, -1]).astype(np.float64)
    table = read_float_table("ark:" + str(tmp_path / "rel.ark"))
    assert list(table) == keys
    np.testing.assert_allclose(list(table.values()), norms / np.median(norms), rtol=1e-6)
    # a whole set scaled by 2 gives the same relative norms
    write_vector_table("ark:" + str(tmp_path / "y.ark"), keys, 2 * X)
    run_tool("compute-vector-norms", "--relative", "ark:y.ark", "ark:rel2.ark", cwd=tmp_path,
             check=True)
    np.testing.assert_allclose(list(read_float_table("ark:" + str(tmp_path / "rel2.ark"))
                                    .values()), list(table.values()), rtol=1e-6)
