"""recipes/timit/run.sh on the real TIMIT GE2E d-vectors (../shared/realdata/timit-ge2e).

To stay within CI time the run leaves out stage 5 (pAUCMetric (auto), minutes of cross-fitting;
its plumbing is tested in test_recipe_auto_stage.py) and the TripletMetric rows (--losses pauc;
the slowest metric at LDA 200, and test_etri_recipe.py runs it). Checked: the trial design
(both sides from the one eval table, no enrollment averaging) against a plain numpy cosine of
the raw vectors read by kaldi_native_io; the baselines against the EERs of the real Kaldi
binaries on the same data and pipeline (Cosine 5.257 %, PLDA 3.770 %, LDA 200; KALDI_EER
below); every system in the table; the committed RESULTS.md table (a regression pin of our own
earlier output, to rounding for the metric rows); the stage lines with elapsed times.
"""

import math
import re
import subprocess

import numpy as np
import pytest

from conftest import REPO, SHARED, need, need_module, tool_env

TIMIT = SHARED / "realdata" / "timit-ge2e"
RECIPE = REPO / "recipes" / "timit"
SYSTEMS = ["Cosine (raw vectors)", "Cosine (centred)", "pAUCMetric (length-norm)", "PLDA",
           "pAUCMetric (PLDA latent)"]
ALL_SYSTEMS = ["Cosine (raw vectors)", "Cosine (centred)", "TripletMetric (length-norm)",
               "pAUCMetric (length-norm)", "PLDA", "TripletMetric (PLDA latent)",
               "pAUCMetric (PLDA latent)"]


def table_rows(text):
    """{system: [values...]} of the first Markdown table in text, and its header."""
    lines = text.splitlines()
    first = next(i for i, l in enumerate(lines) if l.startswith("|"))
    block = []
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        block.append(line)
    header = [c.strip() for c in block[0].strip("|").split("|")]
    rows = {}
    for line in block[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = [float(c) for c in cells[1:]]
    return header, rows


@pytest.fixture(scope="module")
def timit_run(tmp_path_factory):
    need(TIMIT / "eval" / "trials")
    work = tmp_path_factory.mktemp("timit")
    proc = subprocess.run(["bash", str(RECIPE / "run.sh"), "--auto", "false", "--losses", "pauc",
                           "--dir", str(work), str(TIMIT)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(),
                          timeout=1800)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    return work, proc.stdout.decode()


def evaluate(work, system):
    proc = subprocess.run(["bash", str(REPO / "recipes/common/utils/evaluate.sh"),
                           str(work / "exp/scores" / system), str(work / "data/trials")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env())
    assert proc.returncode == 0, proc.stderr.decode()
    return {line.split()[0]: float(line.split()[1]) for line in proc.stdout.decode().splitlines()}


def test_timit_cosine_is_utterance_against_utterance_of_the_one_eval_table(timit_run):
    """exp/scores/cosine equals a numpy cosine of the single eval vectors (centred on the train
    mean, LDA): no speaker averaging on either side, every trial in the trial list's order."""
    knio = need_module("kaldi_native_io")
    work, _ = timit_run
    # The recipe's data/ scp files (absolute paths: the shared ones are relative to their folder).
    def read(name):
        reader = knio.SequentialFloatVectorReader("scp:%s" % (work / "data" / name / "xvector.scp"))
        return {key: np.array(value, dtype=np.float64) for key, value in reader}
    vectors = read("eval")
    train = np.array(list(read("train").values()))
    assert len(vectors) == 936 and train.shape == (7430, 256)
    lda = knio.FloatMatrix.read(str(work / "exp/transform.mat")).numpy().astype(np.float64)
    keys = sorted(vectors)
    raw = np.array([vectors[k] for k in keys]) - train.mean(axis=0)
    projected = raw @ lda[:, :raw.shape[1]].T
    if lda.shape[1] == raw.shape[1] + 1:
        projected += lda[:, -1]
    unit = projected / np.linalg.norm(projected, axis=1, keepdims=True)
    index = {k: i for i, k in enumerate(keys)}
    trials = [line.split() for line in (TIMIT / "eval/trials").read_text().splitlines()]
    scores = [line.split() for line in (work / "exp/scores/cosine").read_text().splitlines()]
    assert [s[:2] for s in scores] == [t[:2] for t in trials]
    first = np.array([index[t[0]] for t in trials])
    second = np.array([index[t[1]] for t in trials])
    expected = np.einsum("ij,ij->i", unit[first], unit[second])
    np.testing.assert_allclose(np.array([float(s[2]) for s in scores]), expected, atol=2e-5)


# EERs of the real Kaldi binaries on this data, recipe stages 1-4 (2026-11-26, kaldi-ref
# 5.5.1181, single-threaded BLAS), computed independently of our tools:
#   ivector-mean ark:train/xvector.ark mean.vec
#   ivector-subtract-global-mean ark:train/xvector.ark ark:train_sub.ark
#   ivector-compute-lda --total-covariance-factor=0.0 --dim=200 ark:train_sub.ark \
#     ark:train/utt2spk transform.mat
#   transform-vec transform.mat ark:train_sub.ark ark:- | ivector-normalize-length ark:- ark:tn.ark
#   ivector-compute-plda ark:train/spk2utt ark:tn.ark plda
#   ivector-subtract-global-mean mean.vec ark:eval/xvector.ark ark:- |
#     transform-vec transform.mat ark:- ark:eval_lda.ark
#   ivector-normalize-length [--scaleup=false] ark:eval_lda.ark ark:eval_norm.ark [eval_unit.ark]
#   ivector-plda-scoring "ivector-copy-plda --smoothing=0.0 plda - |" ark:eval_norm.ark \
#     ark:eval_norm.ark trials2 scores_plda
#   ivector-compute-dot-products trials2 ark:eval_unit.ark ark:eval_unit.ark scores_cosine
#   paste eval/trials scores_X | awk '{print $6, $3}' | compute-eer -
KALDI_EER = {"cosine": 5.257, "plda": 3.770}


def test_timit_baselines_reproduce_kaldi_reference_eers(timit_run):
    work, _ = timit_run
    for system, eer in KALDI_EER.items():
        assert evaluate(work, system)["EER"] == pytest.approx(eer, abs=0.001), system


def test_timit_table_has_every_system_with_finite_figures(timit_run):
    _, stdout = timit_run
    header, rows = table_rows(stdout)
    assert header == ["System", "EER(%)", "minDCF(0.01)", "pAUC[0,0.01]", "AUC", "AP(%)",
                      "actDCF(0.01)", "Cllr"]
    assert list(rows) == SYSTEMS
    for values in rows.values():
        assert all(math.isfinite(v) for v in values)
        eer, min_dcf, pauc, auc, ap, act_dcf, cllr = values
        assert 0 < eer < 50 and 0 < min_dcf <= 1 and 0 < pauc <= 1 and 0.5 < auc <= 1
        assert act_dcf >= min_dcf - 0.01 and cllr > 0


def test_timit_prints_every_stage_with_its_elapsed_time_and_where_logs_go(timit_run):
    work, stdout = timit_run
    assert "logs in %s" % (work / "exp/log") in stdout
    for stage in (0, 1, 2, 3, 4, 6, 7):
        assert re.search(r"run\.sh: stage %d: \S" % stage, stdout), stage
        assert re.search(r"run\.sh: stage %d done in (\d+ s|\d+:\d\d) \(total (\d+ s|\d+:\d\d)\)"
                         % stage, stdout), stage
    assert "stage 5" not in stdout       # --auto false
    assert (work / "exp/log/train_metric_pauc_plda.log").is_file()


def test_committed_results_md_holds_the_table_the_recipe_produces(timit_run):
    """Regression pin: RESULTS.md's main table (our own earlier output) is what run.sh prints
    (baselines exactly; the metric rows to rounding, as BLAS may differ between machines); the
    committed table has every system of the full run, the TripletMetric rows and the
    pAUCMetric (auto) row of stage 5 besides these. The independent checks are the numpy
    cosine and Kaldi's EERs above."""
    _, stdout = timit_run
    _, produced = table_rows(stdout)
    _, committed = table_rows((RECIPE / "RESULTS.md").read_text())
    assert [s for s in committed if s != "pAUCMetric (auto)"] == ALL_SYSTEMS
    assert [s for s in committed if s in produced] == list(produced)
    for system, values in produced.items():
        tolerance = 0.0 if system in ("Cosine (centred)", "PLDA") else 0.02
        assert len(values) == len(committed[system]) == 7, system
        for ours, theirs in zip(values, committed[system]):
            assert abs(ours - theirs) <= tolerance + 1e-9, (system, values, committed[system])
