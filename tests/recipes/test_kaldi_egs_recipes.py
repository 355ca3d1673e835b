"""recipes/sre16 and recipes/sitw on miniature Kaldi egs directories built from ../shared/golden.

The golden vectors are laid out under the file names of egs/sre16/v2 and egs/sitw/v2 (scp paths
rewritten to absolute ones), the recipes run from the stage after x-vector extraction without
Kaldi (--use-kaldi=false), and their PLDA scores are checked against the scores Kaldi wrote
(sre16: golden scores/plda_numutts and plda_adapt_numutts, same centring) or against an
independent numpy implementation of Plda::TransformIvector/LogLikelihoodRatio on Kaldi's golden
model files (sitw, which centres on the training mean). --nj 3 must give byte-identical files.
"""

import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, tool_env
from pauc_backend.kaldi_io import read_matrix, read_plda, read_vector_table
from egs_helpers import (  # noqa: F401
    lay_out_sre16, RECIPES, LDA_DIM, TAGALOG, close, read_score_file, kaldi_eer, copy_set,
    write_trials, run_recipe, snapshot)


@pytest.fixture(scope="module")
def sre16(tmp_path_factory):
    from conftest import GOLDEN, need
    golden = need(GOLDEN)
    egs = tmp_path_factory.mktemp("sre16_v2")
    lay_out_sre16(golden, egs)
    stdout = run_recipe("sre16", egs, "--nj=1", "--losses=pauc")
    return golden, egs, stdout


def test_sre16_plda_scores_match_kaldi(sre16):
    golden, egs, _ = sre16
    for ours, theirs in (("sre16_eval_scores", "plda_numutts"),
                         ("sre16_eval_scores_adapt", "plda_adapt_numutts")):
        keys, values = read_score_file(egs / "exp/scores" / ours)
        gold_keys, gold_values = read_score_file(golden / "scores" / theirs)
        assert keys == gold_keys
        assert close(values, gold_values), ours


def test_sre16_echoes_kaldi_eer_and_mindcf_pooled_and_per_language(sre16):
    golden, egs, stdout = sre16
    for label, name in (("Using Out-of-Domain PLDA", "plda_numutts"),
                        ("Using Adapted PLDA", "plda_adapt_numutts")):
        keys, values = read_score_file(golden / "scores" / name)
        labels = np.array([l.split()[2] == "target"
                           for l in (golden / "data/trials").read_text().splitlines()])
        tgl = np.array([k[0] in TAGALOG for k in keys])
        expected = "%s, EER: Pooled %s%%, Tagalog %s%%, Cantonese %s%%" % (
            label, (golden / "eer" / (name + ".stdout")).read_text(),
            kaldi_eer(values[tgl], labels[tgl]), kaldi_eer(values[~tgl], labels[~tgl]))
        assert expected in stdout.splitlines()
        mindcf = (golden / "mindcf" / (name + "_p0.01.stdout")).read_text().strip()
        assert any(line.startswith("%s, minDCF(p-target=0.01): Pooled %s," % (label, mindcf))
                   for line in stdout.splitlines()), stdout


def _equalised_min_dcf(values, labels, part, prior):
    """Per-threshold brute force: miss / false-alarm rates of each partition, averaged.

    Every threshold (each distinct score) is compared with every score, in blocks of
    thresholds (a thresholds x scores comparison matrix; no sorting, no cumulative counts).
    """
    thresholds = np.unique(values)
    best = np.inf
    for start in range(0, thresholds.size, 2048):
        thr = thresholds[start:start + 2048, None]
        miss = np.mean([np.mean(values[(part == p) & labels] <= thr, axis=1)
                        for p in np.unique(part)], axis=0)
        fa = np.mean([np.mean(values[(part == p) & ~labels] > thr, axis=1)
                      for p in np.unique(part)], axis=0)
        best = min(best, np.min(prior * miss + (1 - prior) * fa))
    return best / prior


def test_sre16_echoes_equalised_cprimary_pooled_and_per_language(sre16):
    golden, _, stdout = sre16
    keys, values = read_score_file(golden / "scores" / "plda_numutts")
    labels = np.array([l.split()[2] == "target"
                       for l in (golden / "data/trials").read_text().splitlines()])
    part = np.array(["tgl" if k[0] in TAGALOG else "yue" for k in keys])
    expected = []
    for name, keep in (("Pooled", part == part), ("Tagalog", part == "tgl"),
                       ("Cantonese", part == "yue")):
        c_primary = np.mean([_equalised_min_dcf(values[keep], labels[keep], part[keep], p)
                             for p in (0.01, 0.005)])
        expected.append("%s %.4f" % (name, c_primary))
    assert "Using Out-of-Domain PLDA, equalised Cprimary: " + ", ".join(expected) \
        in stdout.splitlines(), stdout


def test_sre16_new_back_ends_report_every_system(sre16):
    _, egs, stdout = sre16
    for label in ("Cosine (centred)", "pAUCMetric (length-norm)", "pAUCMetric (PLDA latent)",
                  "pAUCMetric (PLDA-adp latent)"):
        for metric in ("EER", "minDCF(p-target=0.01)", "pAUC[0,0.01]"):
            prefix = "Using %s, %s: " % (label, metric)
            lines = [l for l in stdout.splitlines() if l.startswith(prefix)]
            assert len(lines) == 1, (label, metric, stdout)
            values = [float(part.split()[1].rstrip("%"))
                      for part in lines[0][len(prefix):].split(", ")]
            assert len(values) == 3 and all(math.isfinite(v) for v in values)
    gold_keys, _ = read_score_file(egs / "exp/scores/sre16_eval_scores")
    for system in ("cosine", "pauc_lnorm", "pauc_plda", "pauc_plda_adapt"):
        keys, values = read_score_file(egs / "exp/scores" / ("sre16_eval_scores_" + system))
        assert keys == gold_keys and np.all(np.isfinite(values))


def test_sre16_nj3_scores_are_byte_identical_to_nj1(sre16):
    _, egs, _ = sre16
    before = snapshot(egs / "exp/scores", "sre16_eval_scores*")
    assert len(before) == 6
    run_recipe("sre16", egs, "--nj=3", "--stage=9", "--stop-stage=10")
    run_recipe("sre16", egs, "--nj=3", "--stage=12", "--losses=pauc")
    assert snapshot(egs / "exp/scores", "sre16_eval_scores*") == before
    assert len(list((egs / "exp/scores/log").glob("sre16_eval_scoring.*.log"))) >= 3


def test_sre16_calibrates_2fold_with_durations_when_the_data_has_them(sre16):
    """Issue 29: no durations, stage 14 says so; with utt2num_frames in data/sre16_eval_test
    and utt2dur in data/sre16_eval_enroll, score-only and QMF 2-fold calibrations."""
    golden, egs, stdout = sre16
    assert "stage 14: no utt2dur or utt2num_frames" in stdout
    for part, directory, table in (("enroll", "sre16_eval_enroll", "utt2dur"),
                                   ("test", "sre16_eval_test", "utt2num_frames")):
        keys = [l.split()[0] for l in (golden / "data" / part / "xvector.scp")
                .read_text().splitlines()]
        (egs / "data" / directory / table).write_text("".join(
            "%s %s\n" % (k, ("%.2f" % (3.0 + (11 * i) % 37)) if table == "utt2dur" else
                         "%d" % (150 + (900 * i) % 5000)) for i, k in enumerate(keys)))
    try:
        out = run_recipe("sre16", egs, "--stage=14", "--qmf-systems=plda")
    finally:
        for directory, table in (("sre16_eval_enroll", "utt2dur"),
                                 ("sre16_eval_test", "utt2num_frames")):
            (egs / "data" / directory / table).unlink()
    lines = [l for l in out.splitlines() if l.startswith("Using Out-of-Domain PLDA, calibrated")]
    assert len(lines) == 1, out
    numbers = re.findall(r"actDCF\(p-target=0\.01\): (\S+), Cllr: ([^;\s]+)", lines[0])
    assert len(numbers) == 2 and all(math.isfinite(float(v)) for pair in numbers for v in pair)
    model = (egs / "exp/scores/qmf_2fold/qmf/fold1/sre16_eval_scores.calibration").read_bytes()
    assert b"<Measure> duration " in model


# ----------------------------------------------------------------------------------- sitw
def reference_plda_scores(golden, mean, trials):
    """Kaldi's scoring pipeline in float64 numpy on the golden transform.mat and plda."""
    lda = read_matrix(str(golden / "exp/transform.mat")).astype(np.float64)
    plda_mean, plda_transform, psi = read_plda(str(golden / "exp/plda"))

    def lda_norm(X):
        Y = (X - mean) @ lda[:, :-1].T + lda[:, -1]
        return Y * (np.sqrt(Y.shape[1]) / np.linalg.norm(Y, axis=1))[:, None]

    def latent(Y, n):
        U = (Y - plda_mean) @ plda_transform.T
        factor = np.sqrt(U.shape[1] / np.sum(U ** 2 / (psi + 1.0 / n[:, None]), axis=1))
        return U * factor[:, None]

    enroll_keys, enroll_X = read_vector_table("scp:" + str(golden / "data/enroll/xvector.scp"))
    spk2utt = [l.split() for l in (golden / "data/enroll/spk2utt").read_text().splitlines()]
    index = {k: i for i, k in enumerate(enroll_keys)}
    speakers = [row[0] for row in spk2utt]
    n = np.array([len(row) - 1 for row in spk2utt], dtype=np.float64)
    E = np.array([enroll_X[[index[u] for u in row[1:]]].astype(np.float64).mean(0)
                  for row in spk2utt])
    test_keys, test_X = read_vector_table("scp:" + str(golden / "data/test/xvector.scp"))
    U_e = latent(lda_norm(E), n)
    U_t = latent(lda_norm(test_X.astype(np.float64)), np.ones(len(test_keys)))
    e_of = {s: i for i, s in enumerate(speakers)}
    t_of = {k: i for i, k in enumerate(test_keys)}
    e = np.array([e_of[k1] for k1, _ in trials])
    t = np.array([t_of[k2] for _, k2 in trials])
    nn = n[e][:, None]
    mean_given = nn * psi / (nn * psi + 1.0) * U_e[e]
    var_given = 1.0 + psi / (nn * psi + 1.0)
    given = -0.5 * np.sum(np.log(var_given) + (U_t[t] - mean_given) ** 2 / var_given, axis=1)
    without = -0.5 * np.sum(np.log(1.0 + psi) + U_t[t] ** 2 / (1.0 + psi), axis=1)
    return given - without


@pytest.fixture(scope="module")
def sitw(tmp_path_factory):
    from conftest import GOLDEN, need
    golden = need(GOLDEN)
    egs = tmp_path_factory.mktemp("sitw_v2")
    nnet = "exp/xvector_nnet_1a"
    copy_set(golden, "train", egs, nnet + "/xvectors_train_combined_200k",
             "data/train_combined_200k")
    for task in ("dev", "eval"):
        copy_set(golden, "enroll", egs, "%s/xvectors_sitw_%s_enroll" % (nnet, task),
                 "data/sitw_%s_enroll" % task)
        copy_set(golden, "test", egs, "%s/xvectors_sitw_%s_test" % (nnet, task))
        write_trials(golden, egs / ("data/sitw_%s_test/trials/core-core.lst" % task))
        # durations (issue 29): the enroll data directory has utt2dur, the test one
        # utt2num_frames (Kaldi's make_mfcc.sh --write-utt2num-frames), both varied
        for part, table in (("enroll", "utt2dur"), ("test", "utt2num_frames")):
            keys = [l.split()[0] for l in (golden / "data" / part / "xvector.scp")
                    .read_text().splitlines()]
            values = ["%.2f" % (2.0 + (7 * i) % 41) if table == "utt2dur" else
                      "%d" % (200 + (1300 * i) % 4100) for i in range(len(keys))]
            (egs / ("data/sitw_%s_%s" % (task, part))).mkdir(parents=True, exist_ok=True)
            (egs / ("data/sitw_%s_%s/%s" % (task, part, table))).write_text(
                "".join("%s %s\n" % kv for kv in zip(keys, values)))
    stdout = run_recipe("sitw", egs, "--nj=1", "--losses=pauc")
    return golden, egs, egs / nnet, stdout


def test_sitw_lda_and_plda_match_kaldi(sitw):
    golden, _, nnet, _ = sitw
    train = nnet / "xvectors_train_combined_200k"
    ours = read_matrix(str(train / "transform.mat"))
    theirs = read_matrix(str(golden / "exp/transform.mat"))
    signs = np.sign(np.sum(ours * theirs, axis=1))[:, None]
    assert np.allclose(ours * signs, theirs, atol=1e-4)
    # The PLDA lives in the LDA space, whose axes may have the opposite signs.
    mean, transform, psi = read_plda(str(train / "plda"))
    g_mean, g_transform, g_psi = read_plda(str(golden / "exp/plda"))
    axis_signs = signs.ravel()
    assert np.allclose(mean * axis_signs, g_mean, atol=1e-6)
    assert np.allclose(psi, g_psi, rtol=1e-5)
    transform = transform * axis_signs[None, :]
    row_signs = np.sign(np.sum(transform * g_transform, axis=1))[:, None]
    assert np.allclose(transform * row_signs, g_transform, atol=1e-4)


def test_sitw_plda_scores_match_an_independent_reference(sitw, monkeypatch):
    golden, _, nnet, _ = sitw
    monkeypatch.chdir(golden)  # the golden scp files hold paths relative to it
    train_keys, train_X = read_vector_table("scp:" + str(golden / "data/train/xvector.scp"))
    mean = train_X.astype(np.float64).mean(0)
    for task in ("dev", "eval"):
        keys, values = read_score_file(nnet / "scores" / ("sitw_%s_core_scores" % task))
        trials = [tuple(l.split()[:2]) for l in (golden / "data/trials").read_text().splitlines()]
        assert keys == trials
        assert close(values, reference_plda_scores(golden, mean, trials))


def test_sitw_echoes_eer_mindcf_pauc_and_calibration_of_every_system(sitw):
    golden, _, nnet, stdout = sitw
    lines = stdout.splitlines()
    keys, values = read_score_file(nnet / "scores/sitw_dev_core_scores")
    labels = np.array([l.split()[2] == "target"
                       for l in (golden / "data/trials").read_text().splitlines()])
    block = lines.index("PLDA, sitw_dev Core:")
    assert lines[block + 1] == "EER: %s%%" % kaldi_eer(values, labels)
    assert lines[block + 2].startswith("minDCF(p-target=0.01): ")
    assert lines[block + 3].startswith("minDCF(p-target=0.001): ")
    assert lines[block + 4].startswith("pAUC[0,0.01]: ")
    for label in ("PLDA", "Cosine (centred)", "pAUCMetric (length-norm)",
                  "pAUCMetric (PLDA latent)"):
        for task in ("dev", "eval"):
            assert "%s, sitw_%s Core:" % (label, task) in lines
        calibrated = [l for l in lines if l.startswith(
            "%s, sitw_eval Core calibrated on sitw_dev Core: " % label)]
        assert len(calibrated) == 1, stdout
        act_dcf = float(calibrated[0].split("actDCF(p-target=0.01): ")[1].split(",")[0])
        cllr = float(calibrated[0].split("Cllr: ")[1])
        assert 0 <= act_dcf and 0 <= cllr and math.isfinite(act_dcf + cllr)


def test_sitw_calibrates_with_the_durations_of_the_data_directories(sitw):
    """Issue 29: with utt2dur (enroll) and utt2num_frames (test) in the data directories,
    stage 15 also trains a QMF on Dev.Core and applies it to Eval.Core."""
    _, egs, nnet, stdout = sitw
    for label in ("PLDA", "Cosine (centred)", "pAUCMetric (length-norm)", "pAUCMetric (PLDA latent)"):
        lines = [l for l in stdout.splitlines() if l.startswith(
            "%s, sitw_eval Core QMF-calibrated (durations) on sitw_dev Core: " % label)]
        assert len(lines) == 1, stdout
        assert "actDCF(p-target=0.01): " in lines[0] and ", Cllr: " in lines[0]
    model = (nnet / "scores/qmf").read_bytes()
    assert b"<Measure> duration " in model
    # an enrollment model's duration is the sum of its utterances'; frames are 10 ms
    durations = dict(l.split() for l in (egs / "data/sitw_dev_enroll/utt2dur").read_text()
                     .splitlines())
    spk2utt = [l.split() for l in (egs / "data/sitw_dev_enroll/spk2utt").read_text()
               .splitlines()]
    written = dict(l.split() for l in (nnet / "scores/sitw_dev_enroll_durations").read_text()
                   .splitlines())
    for row in spk2utt:
        assert float(written[row[0]]) == pytest.approx(sum(float(durations[u])
                                                           for u in row[1:]))
    frames = dict(l.split() for l in (egs / "data/sitw_eval_test/utt2num_frames").read_text()
                  .splitlines())
    written = dict(l.split() for l in (nnet / "scores/sitw_eval_test_durations").read_text()
                   .splitlines())
    assert written == {k: "%g" % (int(v) * 0.01) for k, v in frames.items()}


def test_sitw_nj3_scores_are_byte_identical_to_nj1(sitw):
    _, egs, nnet, _ = sitw
    before = snapshot(nnet / "scores", "sitw_*_core_scores*")
    assert len(before) == 2 * 4
    run_recipe("sitw", egs, "--nj=3", "--stage=11", "--stop-stage=12")
    run_recipe("sitw", egs, "--nj=3", "--stage=14", "--stop-stage=14", "--losses=pauc")
    assert snapshot(nnet / "scores", "sitw_*_core_scores*") == before


def test_recipe_uses_the_egs_directory_run_pl_when_it_has_one(sitw, tmp_path):
    """A cmd.sh naming run.pl is honoured through utils/run.pl (here a logging stand-in)."""
    _, egs, nnet, _ = sitw
    utils = egs / "utils"
    utils.mkdir(exist_ok=True)
    log = tmp_path / "calls"
    runner = utils / "run.pl"
    runner.write_text("#!/usr/bin/env bash\necho \"$*\" >> %s\nexec bash %s \"$@\"\n" % (
        log, RECIPES / "common/utils/local_run.sh"))
    runner.chmod(0o755)
    (egs / "cmd.sh").write_text('export train_cmd="run.pl --mem 4G"\n')
    try:
        before = snapshot(nnet / "scores", "sitw_dev_core_scores")
        run_recipe("sitw", egs, "--nj=2", "--stage=11", "--stop-stage=11")
        assert snapshot(nnet / "scores", "sitw_dev_core_scores") == before
        calls = log.read_text().splitlines()
        assert calls and calls[0].startswith("--mem 4G JOB=1:2 ")
    finally:
        (egs / "cmd.sh").unlink()
        shutil.rmtree(utils)


KALDI_TWINS = {"ivector-mean": "compute-vector-mean",
               "ivector-subtract-global-mean": "subtract-vector-mean",
               "transform-vec": "transform-vectors",
               "ivector-normalize-length": "normalize-vector-length",
               "ivector-compute-lda": "train-lda", "ivector-compute-plda": "train-plda",
               "ivector-adapt-plda": "adapt-plda", "ivector-copy-plda": "copy-plda",
               "ivector-plda-scoring": "score-plda-trials", "compute-eer": "compute-eer-pauc"}


def test_sre16_runs_kaldi_binaries_when_they_are_on_path(sre16, tmp_path):
    """--use-kaldi=auto with Kaldi's binary names on PATH (here shims that log and run our
    twins): the baseline stages call them with Kaldi's own command lines."""
    golden, egs, _ = sre16
    shims = tmp_path / "kaldi_bin"
    shims.mkdir()
    calls = tmp_path / "calls"
    for kaldi, twin in KALDI_TWINS.items():
        shim = shims / kaldi
        shim.write_text('#!/usr/bin/env bash\necho "%s $*" >> %s\nexec %s "$@"\n'
                        % (kaldi, calls, twin))
        shim.chmod(0o755)
    env = tool_env()
    env["PATH"] = str(shims) + ":" + env["PATH"]
    proc = subprocess.run(["bash", str(RECIPES / "sre16/run.sh"), "--lda-dim=%d" % LDA_DIM,
                           "--stage=8", "--stop-stage=10", str(egs)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    assert "baseline binaries: Kaldi" in proc.stdout.decode()
    used = {line.split()[0] for line in calls.read_text().splitlines()}
    assert used == set(KALDI_TWINS)
    for ours, theirs in (("sre16_eval_scores", "plda_numutts"),
                         ("sre16_eval_scores_adapt", "plda_adapt_numutts")):
        keys, values = read_score_file(egs / "exp/scores" / ours)
        gold_keys, gold_values = read_score_file(golden / "scores" / theirs)
        assert keys == gold_keys and close(values, gold_values)
    eer = (golden / "eer/plda_numutts.stdout").read_text()
    assert "Using Out-of-Domain PLDA, EER: Pooled %s%%," % eer in proc.stdout.decode()
