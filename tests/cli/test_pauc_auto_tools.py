"""train-pauc-auto / score-pauc-auto: the positional contract, Kaldi conventions, one ERROR on
bad input with no half-written model, the stored model scoring as the library does, and a
small end-to-end run on the real ETRI i-vectors."""

import os

import numpy as np
import pytest

from conftest import run_shell, run_tool
from pauc_backend import metrics
from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import read_vector, read_vector_table, write_vector_table
from pauc_backend.models.auto import AutoBackend

FAST = ["--num-iters=60", "--batch-size=50", "--lda-dims=8", "--num-folds=3",
        "--candidates=plda,pauc_lnorm,plda+pauc_latent"]


def errors(proc):
    return [line for line in proc.stderr.decode().splitlines() if line.startswith("ERROR")]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("auto")
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=30, num_adapt_speakers=2,
                            num_eval_speakers=6, train_utts_range=(6, 12))
    write_vector_table("ark:%s" % (d / "train.ark"), c.train.keys, c.train.X)
    with open(d / "spk2utt", "w") as f:
        for spk, utts in sorted(c.train.spk2utt().items()):
            f.write("%s %s\n" % (spk, " ".join(utts)))
    write_vector_table("ark:%s" % (d / "test.ark"), c.test.keys, c.test.X)
    with open(d / "trials", "w") as f:
        for a in c.test.keys[:8]:
            for b in c.test.keys[8:30]:
                f.write("%s %s\n" % (a, b))
    return d, c


def train(d, out, *extra):
    return run_tool("train-pauc-auto", *FAST, *extra, "ark:%s" % (d / "train.ark"),
                    "ark:%s" % (d / "spk2utt"), out)


def test_train_and_score_match_the_library(data, tmp_path):
    d, c = data
    proc = train(d, tmp_path / "model")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "Chose " in proc.stderr.decode()
    names = sorted(os.listdir(tmp_path / "model"))
    assert {"system.txt", "mean.vec", "transform.mat", "fusion"} <= set(names)
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp")]
    card = dict(line.split(None, 1) for line in open(tmp_path / "model" / "system.txt"))
    # mean.vec is the float32 mean of the raw training vectors (ivector-mean's file)
    np.testing.assert_allclose(read_vector(str(tmp_path / "model" / "mean.vec")),
                               np.asarray(c.train.X, np.float64).mean(axis=0), rtol=1e-5,
                               atol=1e-6)
    proc = run_tool("score-pauc-auto", tmp_path / "model", "ark:%s" % (d / "test.ark"),
                    "ark:%s" % (d / "test.ark"), d / "trials", tmp_path / "scores")
    assert proc.returncode == 0, proc.stderr.decode()
    lines = [line.split() for line in open(tmp_path / "scores")]
    assert [(a, b) for a, b, _ in lines] == [tuple(t.split()) for t in open(d / "trials")]
    # The same choice from Python, labels numbered in spk2utt order as the tool does.
    spk2utt = sorted(c.train.spk2utt().items())
    pos = {k: i for i, k in enumerate(c.train.keys)}
    rows = [pos[u] for _, utts in spk2utt for u in utts]
    labels = np.repeat(np.arange(len(spk2utt)), [len(u) for _, u in spk2utt])
    model = AutoBackend(lda_dims=(8,), num_folds=3, metric_params={
        "delta": 1.5, "gamma": 0.5, "mu": 1e-3, "eta": 1.0, "batch_size": 50, "num_iters": 60},
        candidates=("plda", "pauc_lnorm", "plda+pauc_latent")).fit(c.train.X[rows], labels)
    assert card["system"].strip() == model.chosen_["candidate"]
    keys, T = read_vector_table("ark:%s" % (d / "test.ark"))
    er = np.repeat(np.arange(8), 22)
    tr = np.tile(np.arange(8, 30), 8)
    expected = model.score(T, T, er, tr)
    np.testing.assert_allclose([float(s) for _, _, s in lines], expected, rtol=2e-6, atol=1e-5)


def test_usage_and_help(data, tmp_path):
    proc = run_tool("train-pauc-auto", "only-one-arg")
    assert proc.returncode == 1 and b"Usage: train-pauc-auto" in proc.stderr
    proc = run_tool("score-pauc-auto", "--help")
    assert proc.returncode == 0 and b"--num-utts" in proc.stdout
    proc = run_tool("train-pauc-auto", "--no-such-option=1", "a", "b", "c")
    assert proc.returncode != 0 and len(errors(proc)) == 1


def test_bad_input_one_error_no_model(data, tmp_path):
    d, c = data
    # too few speakers for the folds
    few = tmp_path / "few_spk2utt"
    few.write_text("".join(line for line in list(open(d / "spk2utt"))[:4]))
    proc = run_tool("train-pauc-auto", *FAST, "ark:%s" % (d / "train.ark"), "ark:%s" % few,
                    tmp_path / "model")
    assert proc.returncode != 0 and len(errors(proc)) == 1, proc.stderr.decode()
    assert b"too few" in proc.stderr and b"Traceback" not in proc.stderr
    assert not (tmp_path / "model").exists()
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp")]
    # NaN in a training vector, with an existing model left untouched
    X = np.array(c.train.X, dtype=np.float32)
    X[3, 2] = np.nan
    write_vector_table("ark:%s" % (tmp_path / "nan.ark"), c.train.keys, X)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "system.txt").write_text("system plda\n")
    proc = run_tool("train-pauc-auto", *FAST, "ark:%s" % (tmp_path / "nan.ark"),
                    "ark:%s" % (d / "spk2utt"), tmp_path / "model")
    assert proc.returncode != 0 and len(errors(proc)) == 1
    assert b"NaN" in proc.stderr and c.train.keys[3].encode() in proc.stderr
    assert (tmp_path / "model" / "system.txt").read_text() == "system plda\n"
    # missing model directory / unknown candidate / test vectors of the wrong dimension
    proc = run_tool("score-pauc-auto", tmp_path / "nowhere", "ark:%s" % (d / "test.ark"),
                    "ark:%s" % (d / "test.ark"), d / "trials", tmp_path / "scores")
    assert proc.returncode != 0 and len(errors(proc)) == 1
    assert not (tmp_path / "scores").exists()
    proc = run_tool("train-pauc-auto", "--candidates=plda+svm", "ark:%s" % (d / "train.ark"),
                    "ark:%s" % (d / "spk2utt"), tmp_path / "m2")
    assert proc.returncode != 0 and len(errors(proc)) == 1 and b"svm" in proc.stderr
    assert train(d, tmp_path / "good").returncode == 0
    write_vector_table("ark:%s" % (tmp_path / "short.ark"), c.test.keys, c.test.X[:, :10])
    proc = run_tool("score-pauc-auto", tmp_path / "good", "ark:%s" % (tmp_path / "short.ark"),
                    "ark:%s" % (d / "test.ark"), d / "trials", tmp_path / "scores")
    assert proc.returncode != 0 and len(errors(proc)) == 1 and b"dimension" in proc.stderr
    assert not (tmp_path / "scores").exists()


def test_etri_end_to_end_small(etri, tmp_path):
    """60 training speakers x 15 vectors, ETRI's design (enrollment = mean of 3 raw vectors):
    the tools run on real data and the chosen back-end verifies the real evaluation trials."""
    spk2utt = [line.split() for line in open(etri / "train" / "spk2utt")][:60]
    (tmp_path / "spk2utt").write_text("".join(" ".join(s[:16]) + "\n" for s in spk2utt))
    proc = run_shell(
        "train-pauc-auto --enroll-utts=3 --num-folds=3 --lda-dims=30 --num-iters=100 "
        "--candidates=plda,pauc_latent,plda+pauc_latent scp:train/xvector.scp "
        "ark:%s %s" % (tmp_path / "spk2utt", tmp_path / "model"), cwd=etri)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    proc = run_shell(
        "compute-vector-mean ark:enroll/spk2utt scp:enroll/xvector.scp ark:%s ark,t:%s && "
        "score-pauc-auto --num-utts=ark,t:%s %s ark:%s scp:test/xvector.scp trials %s"
        % (tmp_path / "enroll.ark", tmp_path / "num_utts", tmp_path / "num_utts",
           tmp_path / "model", tmp_path / "enroll.ark", tmp_path / "scores"), cwd=etri)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    truth = {tuple(t.split()[:2]): t.split()[2] == "target" for t in open(etri / "trials")}
    lines = [line.split() for line in open(tmp_path / "scores")]
    assert len(lines) == len(truth)
    scores = np.array([float(s) for _, _, s in lines])
    is_target = np.array([truth[a, b] for a, b, _ in lines])
    eer = metrics.eer(scores[is_target], scores[~is_target])
    # Kaldi's PLDA with all 118 speakers and LDA 100 reaches 3.72 %; cosine 5.92 %.
    assert eer < 0.08, eer


def test_asnorm_model_round_trip(data, tmp_path):
    d, c = data
    proc = run_tool("train-pauc-auto", "--num-folds=2", "--lda-dims=8", "--candidates=plda:as",
                    "ark:%s" % (d / "train.ark"), "ark:%s" % (d / "spk2utt"), tmp_path / "m")
    assert proc.returncode == 0, proc.stderr.decode()
    assert (tmp_path / "m" / "cohort.ark").exists()
    proc = run_tool("score-pauc-auto", tmp_path / "m", "ark:%s" % (d / "test.ark"),
                    "ark:%s" % (d / "test.ark"), d / "trials", tmp_path / "scores")
    assert proc.returncode == 0, proc.stderr.decode()
    spk2utt = sorted(c.train.spk2utt().items())
    pos = {k: i for i, k in enumerate(c.train.keys)}
    rows = [pos[u] for _, utts in spk2utt for u in utts]
    labels = np.repeat(np.arange(len(spk2utt)), [len(u) for _, u in spk2utt])
    model = AutoBackend(lda_dims=(8,), num_folds=2, candidates=("plda:as",)).fit(
        c.train.X[rows], labels)
    er, tr = np.repeat(np.arange(8), 22), np.tile(np.arange(8, 30), 8)
    got = [float(line.split()[2]) for line in open(tmp_path / "scores")]
    np.testing.assert_allclose(got, model.score(c.test.X, c.test.X, er, tr), rtol=2e-6,
                               atol=1e-5)


@pytest.mark.parametrize("candidate,dims", [("cosine_raw+dplda", "none"), ("dplda", "8"),
                                             ("cosine_raw", "none,8")])
def test_dplda_and_no_lda_model_round_trip(data, tmp_path, candidate, dims):
    d, c = data
    proc = run_tool("train-pauc-auto", "--num-folds=2", "--lda-dims=%s" % dims,
                    "--dplda-lambdas=100,10", "--candidates=%s" % candidate,
                    "ark:%s" % (d / "train.ark"), "ark:%s" % (d / "spk2utt"), tmp_path / "m")
    assert proc.returncode == 0, proc.stderr.decode()
    card = dict(line.rstrip("\n").split(" ", 1) for line in open(tmp_path / "m" / "system.txt"))
    assert card["system"] == candidate
    assert card["lda_dim"] == ("8" if dims == "8" else "none")
    assert card["reason"] and card["selection"] == "one-standard-error"
    assert (tmp_path / "m" / "dplda").exists() == ("dplda" in candidate)
    proc = run_tool("score-pauc-auto", tmp_path / "m", "ark:%s" % (d / "test.ark"),
                    "ark:%s" % (d / "test.ark"), d / "trials", tmp_path / "scores")
    assert proc.returncode == 0, proc.stderr.decode()
    spk2utt = sorted(c.train.spk2utt().items())
    pos = {k: i for i, k in enumerate(c.train.keys)}
    rows = [pos[u] for _, utts in spk2utt for u in utts]
    labels = np.repeat(np.arange(len(spk2utt)), [len(u) for _, u in spk2utt])
    model = AutoBackend(lda_dims=[0 if v == "none" else int(v) for v in dims.split(",")],
                        num_folds=2, candidates=(candidate,), dplda_lambdas=(100, 10)).fit(
        c.train.X[rows], labels)
    if "dplda" in candidate:
        assert float(card["dplda_lambda"]) == model.dplda_lambda_
    er, tr = np.repeat(np.arange(8), 22), np.tile(np.arange(8, 30), 8)
    got = [float(line.split()[2]) for line in open(tmp_path / "scores")]
    np.testing.assert_allclose(got, model.score(c.test.X, c.test.X, er, tr), rtol=2e-6,
                               atol=1e-5)


def test_utt2group_reaches_the_held_out_trials(data, tmp_path):
    d, c = data
    # one group per speaker: no held-out target pair is left, a clear error
    (tmp_path / "u2g").write_text("".join("%s %s\n" % (k, s)
                                          for k, s in zip(c.train.keys, c.train.labels)))
    proc = run_tool("train-pauc-auto", *FAST, "--utt2group=ark:%s" % (tmp_path / "u2g"),
                    "ark:%s" % (d / "train.ark"), "ark:%s" % (d / "spk2utt"), tmp_path / "m")
    assert proc.returncode != 0 and len(errors(proc)) == 1 and b"0 target" in proc.stderr
    assert not (tmp_path / "m").exists()
    (tmp_path / "u2g").write_text("".join("%s g\n" % k for k in c.train.keys[1:]))
    proc = run_tool("train-pauc-auto", *FAST, "--utt2group=ark:%s" % (tmp_path / "u2g"),
                    "ark:%s" % (d / "train.ark"), "ark:%s" % (d / "spk2utt"), tmp_path / "m")
    assert proc.returncode != 0 and len(errors(proc)) == 1
    assert c.train.keys[0].encode() in proc.stderr
