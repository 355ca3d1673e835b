"""train-pauc-metric and score-pauc-trials: file formats, agreement with the library and a
brute-force scorer, determinism, warnings and errors."""

import re
import struct

import numpy as np
import pytest
from conftest import run_tool

from pauc_backend.kaldi_io import read_matrix, write_vector_table
from pauc_backend.models.metric_learning import PaucMetric

FAST = ["--num-iters=30", "--batch-size=20", "--eval-every=5"]


def make_speakers(rng, num_spk, per_spk, d=6, prefix="s"):
    noise = np.r_[np.full(d // 2, 2.0), np.full(d - d // 2, 0.3)]
    means = rng.normal(size=(num_spk, d))
    y = np.repeat(np.arange(num_spk), per_spk)
    X = (means[y] + rng.normal(size=(y.size, d)) * noise).astype(np.float32)
    spk = ["%s%03d" % (prefix, i) for i in range(num_spk)]
    utts = ["%s-u%02d" % (spk[s], k % per_spk) for k, s in enumerate(y)]
    return X, y, spk, utts


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    X, y, spk, utts = make_speakers(rng, 30, 5)
    write_vector_table("ark:%s" % (tmp_path / "train.ark"), utts, X)
    with open(tmp_path / "spk2utt", "w") as f:
        for s, name in enumerate(spk):
            f.write(name + " " + " ".join(u for u, ys in zip(utts, y) if ys == s) + "\n")
    Xe, ye, espk, eutts = make_speakers(rng, 5, 4, prefix="e")
    enroll = np.stack([Xe[ye == s].mean(axis=0) for s in range(5)])
    write_vector_table("ark:%s" % (tmp_path / "enroll.ark"), espk, enroll)
    write_vector_table("ark:%s" % (tmp_path / "test.ark"), eutts, Xe)
    with open(tmp_path / "trials", "w") as f:
        for s in espk:
            for u, ys in zip(eutts, ye):
                f.write("%s %s %s\n" % (s, u, "target" if espk[ys] == s else "nontarget"))
    return tmp_path, X, y


def train(tmp, *options, out="metric"):
    return run_tool("train-pauc-metric", *FAST, *options, "ark:spk2utt", "ark:train.ark", out,
                    cwd=tmp)


def test_metric_is_a_kaldi_double_matrix_equal_to_the_library_fit(data):
    tmp, X, y = data
    proc = train(tmp, "--seed=5", "--log-every=10")
    assert proc.returncode == 0, proc.stderr.decode()
    raw = (tmp / "metric").read_bytes()
    assert raw[:5] == b"\0BDM " and struct.unpack("<bibi", raw[5:15]) == (4, 6, 4, 6)
    M = read_matrix(str(tmp / "metric"))
    assert M.dtype == np.float64
    ref = PaucMetric(num_iters=30, batch_size=20, eval_every=5, random_state=5).fit(X, y)
    np.testing.assert_array_equal(M, ref.get_mahalanobis_matrix())
    assert np.linalg.eigvalsh(M).min() >= 0
    log = proc.stderr.decode()
    assert log.count("mean objective (eq. 7)") == 3 and "Iterations 21-30 (train)" in log
    assert "WARNING" not in log


def test_same_seed_gives_byte_identical_files(data):
    tmp = data[0]
    for out in ("m1", "m2"):
        assert train(tmp, "--loss=triplet", "--seed=3", out=out).returncode == 0
    assert (tmp / "m1").read_bytes() == (tmp / "m2").read_bytes()


def test_transform_factorises_the_metric(data):
    tmp = data[0]
    assert train(tmp, "--write-transform=A.mat").returncode == 0
    A = read_matrix(str(tmp / "A.mat"))
    M = read_matrix(str(tmp / "metric"))
    assert A.dtype == np.float32 and (tmp / "A.mat").read_bytes()[2:4] == b"FM"
    np.testing.assert_allclose(A.astype(np.float64).T @ A, M, rtol=1e-5,
                               atol=1e-6 * np.abs(M).max())


def test_scores_are_minus_the_squared_distance(data):
    tmp = data[0]
    assert train(tmp).returncode == 0
    with open(tmp / "trials") as f:
        lines = f.read().splitlines()
    (tmp / "trials2").write_text("\n".join(" ".join(l.split()[:2]) for l in lines[:40]) +
                                 "\nnobody e000-u00\ne001 nothing\n")
    proc = run_tool("score-pauc-trials", "--num-utts=ark:whatever", "metric", "ark:enroll.ark",
                    "ark:test.ark", "trials2", "scores", cwd=tmp)
    assert proc.returncode == 0, proc.stderr.decode()
    log = proc.stderr.decode()
    assert "Key nobody not present in training iVectors." in log
    assert "Key nothing not present in test iVectors." in log
    assert "Processed 40 trials, 2 had errors." in log
    M = read_matrix(str(tmp / "metric"))
    from pauc_backend.kaldi_io import read_vector_table
    ek, E = read_vector_table("ark:%s" % (tmp / "enroll.ark"))
    tk, T = read_vector_table("ark:%s" % (tmp / "test.ark"))
    rows = [l.split() for l in (tmp / "scores").read_text().splitlines()]
    assert [r[:2] for r in rows] == [l.split()[:2] for l in lines[:40]]
    for k1, k2, score in rows:
        z = E[ek.index(k1)].astype(np.float64) - T[tk.index(k2)]
        assert float(score) == pytest.approx(-(z @ M @ z), rel=1e-6, abs=1e-6)
    # a 3-column trials file gives the same scores
    proc = run_tool("score-pauc-trials", "metric", "ark:enroll.ark", "ark:test.ark", "trials",
                    "scores3", cwd=tmp)
    assert proc.returncode == 0
    assert (tmp / "scores3").read_text().splitlines()[:40] == (tmp / "scores").read_text(
        ).splitlines()


def test_help_says_num_utts_is_ignored():
    proc = run_tool("score-pauc-trials", "--help")
    assert proc.returncode == 0 and b"ignored" in proc.stdout


def test_one_utterance_speakers_and_small_corpora_warn(data):
    tmp = data[0]
    with open(tmp / "spk2utt", "a") as f:
        f.write("lonely s000-u00\n")
    proc = train(tmp, "--batch-size=100")
    log = proc.stderr.decode()
    assert proc.returncode == 0, log
    assert "WARNING" in log and "Skipping speaker lonely: only one utterance" in log
    assert "batch size reduced from 100 to 30" in log
    assert "(1 skipped with one utterance)" in log


@pytest.mark.parametrize("option,text", [
    ("--pauc-alpha=0.2", "alpha"), ("--margin=-1", "--margin"), ("--gamma=-0.5", "gamma"),
    ("--mu=-1", "mu"), ("--eta=-2", "eta"), ("--loss=hinge", "--loss"), ("--scale=big", "--scale"),
])
def test_bad_options_are_one_error_line(data, option, text):
    tmp = data[0]
    proc = train(tmp, option, "--pauc-beta=0.1")
    log = proc.stderr.decode()
    assert proc.returncode == 255
    errors = [l for l in log.splitlines() if l.startswith("ERROR")]
    assert len(errors) == 1 and text in errors[0] and "Traceback" not in log
    assert not (tmp / "metric").exists()


def test_zero_iterations_are_refused_by_the_option_before_any_input(tmp_path):
    """Issue 34: --num-iters=0 passed the option's bound (>= 0) and was refused by the model
    in other words ("num_iters must be >= 1"); the declared bound is the model's, so the
    option itself is the error, named as given, and --help states it."""
    proc = run_tool("train-pauc-metric", "--num-iters=0", "ark:%s" % (tmp_path / "missing"),
                    "ark:%s" % (tmp_path / "missing.ark"), tmp_path / "metric")
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode == 255 and len(errors) == 1, proc.stderr.decode()
    assert "Invalid value --num-iters=0: must be >= 1" in errors[0]
    assert "missing" not in errors[0] and not (tmp_path / "metric").exists()
    text = run_tool("train-pauc-metric", "--help").stdout.decode()
    assert re.search(r"--num-iters .*default = 1000; >= 1\)", text)


def test_no_usable_speaker_is_an_error(data):
    tmp = data[0]
    (tmp / "spk2utt").write_text("a s000-u00\nb s001-u00\n")
    proc = train(tmp)
    assert proc.returncode == 255
    assert b"Need at least 2 speakers with 2 or more utterances" in proc.stderr
    assert not (tmp / "metric").exists()


def test_bad_metric_and_dimension_mismatch_are_errors(data):
    tmp = data[0]
    from pauc_backend.kaldi_io import write_matrix
    write_matrix(str(tmp / "bad"), np.arange(36.0).reshape(6, 6))
    proc = run_tool("score-pauc-trials", "bad", "ark:enroll.ark", "ark:test.ark", "trials", "s",
                    cwd=tmp)
    assert proc.returncode == 255 and b"not a finite symmetric matrix" in proc.stderr
    write_matrix(str(tmp / "small"), np.eye(4))
    proc = run_tool("score-pauc-trials", "small", "ark:enroll.ark", "ark:test.ark", "trials",
                    "s", cwd=tmp)
    assert proc.returncode == 255 and b"dimension 6 but the metric has dimension 4" in proc.stderr
    assert not (tmp / "s").exists()


def test_auto_tune_searches_and_chooses_the_best_logged_trial(data):
    tmp = data[0]
    proc = train(tmp, "--auto-tune", "--auto-tune-trials=5")
    log = proc.stderr.decode()
    assert proc.returncode == 0, log
    trials = re.findall(r"Auto-tune trial (\d+)/5: (delta=\S+ gamma=\S+ mu=\S+ eta=\S+) -> "
                        r"held-out pauc (\S+) at iteration", log)
    assert [int(t[0]) for t in trials] == [1, 2, 3, 4, 5], log
    chosen = re.findall(r"Auto-tune chose (delta=\S+ gamma=\S+ mu=\S+ eta=\S+)$", log, re.M)
    assert len(chosen) == 1, log
    # the best held-out figure, the earliest trial among equals (the defaults come first)
    values = [float(t[2]) for t in trials]
    best = values.index(max(values))
    assert chosen[0] == trials[best][1], log
    # this data's search is informative: the best is neither the first (defaults) nor the last
    assert 0 < best < 4 and values.count(values[best]) == 1, values


def test_transform_vectors_with_the_transform_reproduces_the_scores(data):
    tmp = data[0]
    assert train(tmp, "--write-transform=A.mat").returncode == 0
    for name in ("enroll", "test"):
        proc = run_tool("transform-vectors", "A.mat", "ark:%s.ark" % name,
                        "ark:%s_proj.ark" % name, cwd=tmp)
        assert proc.returncode == 0, proc.stderr.decode()
    assert run_tool("score-pauc-trials", "metric", "ark:enroll.ark", "ark:test.ark", "trials",
                    "scores", cwd=tmp).returncode == 0
    from pauc_backend.kaldi_io import read_vector_table
    ek, E = read_vector_table("ark:%s" % (tmp / "enroll_proj.ark"))
    tk, T = read_vector_table("ark:%s" % (tmp / "test_proj.ark"))
    lines = (tmp / "scores").read_text().splitlines()
    assert len(lines) == len((tmp / "trials").read_text().splitlines()) == 100
    for line in lines:
        k1, k2, score = line.split()
        z = E[ek.index(k1)].astype(np.float64) - T[tk.index(k2)]
        assert float(score) == pytest.approx(-(z @ z), rel=1e-4, abs=1e-4)


def test_sparse_and_dense_scoring_paths_agree(data, monkeypatch):
    from pauc_backend.cli.tools import score_pauc_trials
    tmp = data[0]
    monkeypatch.chdir(tmp)
    assert train(tmp).returncode == 0
    args = ["metric", "ark:enroll.ark", "ark:test.ark", "trials"]
    assert score_pauc_trials.main(args + ["dense"]) == 0
    monkeypatch.setattr(score_pauc_trials, "DENSE_FACTOR", 0)
    assert score_pauc_trials.main(args + ["sparse"]) == 0
    dense = [l.split() for l in (tmp / "dense").read_text().splitlines()]
    sparse = [l.split() for l in (tmp / "sparse").read_text().splitlines()]
    assert [r[:2] for r in dense] == [r[:2] for r in sparse] and len(dense) == 100
    np.testing.assert_allclose([float(r[2]) for r in sparse], [float(r[2]) for r in dense],
                               rtol=2e-6, atol=1e-6)
