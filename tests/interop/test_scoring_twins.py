"""The scoring and evaluation tools against their real Kaldi twins, on the same inputs.

score-plda-trials vs ivector-plda-scoring: byte for byte. Kaldi maps each vector in double
(dgemv, library summation order) and then stores it as float32, and casts each double LLR to
float32 before printing %.7g; a last-bit double difference changes a float32 only when it sits
on a rounding boundary (about 2^-29 of the time), so the files are deterministic in practice.
score-cosine-trials vs ivector-compute-dot-products: values, |a - b| <= 1e-5: Kaldi sums the
float32 dot product in BLAS sdot's order (SIMD partial sums), so the last float32 bits, and
with them the 6th printed digit, may differ. compute-eer-pauc vs compute-eer (stdout, bytes)
and vs sid/compute_min_dcf.py (the %.4f strings).
"""

import json

import numpy as np
import pytest

from real_kaldi import Runner, corpus, find_kaldi_root, kaldi_env, kaldi_pipeline

CORPORA = ("golden", "etri", "timit")


@pytest.fixture(scope="module")
def kaldi_root():
    return find_kaldi_root()


@pytest.fixture(params=CORPORA)
def setup(request, kaldi_root, tmp_path_factory, tmp_path):
    c = corpus(request.param, tmp_path_factory)
    kaldi_pipeline(c, kaldi_root)
    return c, Runner(kaldi_root, c.dir, kaldi_env(kaldi_root, blas_threads=1)), tmp_path


def read_scores(path):
    keys, values = [], []
    for line in path.read_text().splitlines():
        k1, k2, v = line.split()
        keys.append((k1, k2))
        values.append(float(v))
    return keys, np.array(values)


def test_score_plda_trials(setup):
    c, r, tmp = setup
    k = c.kaldi
    num_utts = ["--num-utts=ark:%s/num_utts.ark" % k] if c.has_enroll else []
    variants = [num_utts]
    if c.name == "golden":
        variants += [[], num_utts + ["--normalize-length=false"],
                     num_utts + ["--simple-length-normalization=true"]]
    for model in ("plda", "plda_adapt"):
        for i, opts in enumerate(variants if model == "plda" else [num_utts]):
            args = opts + ["%s/%s" % (k, model), "ark:%s/%s_norm.ark" % (k, c.enroll),
                           "ark:%s/test_norm.ark" % k, "trials2"]
            if opts is num_utts:
                kaldi_out = k / ("scores_" + model)  # made by the pipeline, same command
            else:
                kaldi_out = tmp / ("kaldi_%s_%d" % (model, i))
                r.run("ivector-plda-scoring", *args, kaldi_out)
            r.run("score-plda-trials", *args, tmp / "ours")
            theirs = kaldi_out.read_bytes()
            assert theirs.count(b"\n") == len((c.dir / "trials2").read_text().splitlines())
            assert (tmp / "ours").read_bytes() == theirs, (model, opts)


def test_score_cosine_trials(setup):
    c, r, tmp = setup
    k = c.kaldi
    r.run("score-cosine-trials", "trials2", "ark:%s/%s_unit.ark" % (k, c.enroll),
          "ark:%s/test_unit.ark" % k, tmp / "ours")
    keys, values = read_scores(tmp / "ours")
    k_keys, k_values = read_scores(k / "scores_dot")
    assert keys == k_keys and len(keys) == len((c.dir / "trials2").read_text().splitlines())
    assert np.abs(values - k_values).max() <= 1e-5
    # --normalize=true on the unnormalised LDA vectors is the same cosine.
    r.run("score-cosine-trials", "--normalize=true", "trials2",
          "ark:%s/%s_lda.ark" % (k, c.enroll), "ark:%s/test_lda.ark" % k, tmp / "ours_n")
    keys, values = read_scores(tmp / "ours_n")
    assert keys == k_keys and np.abs(values - k_values).max() <= 1e-5


def test_compute_eer_pauc_against_compute_eer_and_compute_min_dcf(setup, kaldi_root):
    c, r, tmp = setup
    k = c.kaldi
    for model in ("plda", "scores_dot"):
        scores = k / (model if model.startswith("scores") else "scores_" + model)
        # compute-eer's own input, as the recipes make it; our drop-in prints the same bytes.
        pipe = "paste trials %s | awk '{print $6, $3}' | " % scores
        kaldi_eer = r.sh(pipe + "compute-eer -").stdout
        ours_eer = r.sh(pipe + "compute-eer-pauc -").stdout
        assert kaldi_eer and ours_eer == kaldi_eer and not kaldi_eer.endswith(b"\n")
        # The two-file form joins by key: the same EER.
        assert r.run("compute-eer-pauc", scores, "trials").stdout == kaldi_eer
        report = json.loads(r.run("compute-eer-pauc", "--report=json",
                                  "--p-target=0.01,0.001", scores, "trials").stdout)
        assert "%.4g" % (100 * report["eer"]) == kaldi_eer.decode()
        dcf = {d["p_target"]: d["min_dcf"] for d in report["min_dcf"]}
        for p in (0.01, 0.001):
            theirs = r.run(str(kaldi_root / "sid/compute_min_dcf.py"), "--p-target", str(p),
                           scores, "trials").stdout.decode().strip()
            assert "%.4f" % dcf[p] == theirs, (model, p)
            assert abs(dcf[p] - float(theirs)) <= 5e-5
