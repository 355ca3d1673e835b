"""recipes/sre16 and recipes/sitw in miniature Kaldi egs directories that hold the REAL Kaldi
binaries (../shared/kaldi-ref) and Kaldi's own utils/ and sid/ scripts: Kaldi's figures echoed,
--nj 11 with unknown keys, the auto stage's folds as run.pl jobs. Split from
test_kaldi_egs_recipes.py so that pytest-xdist (--dist loadfile) can run the two halves on two
workers."""

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
    lay_out_sre16, RECIPES, LDA_DIM, TAGALOG, close, read_score_file, read_score_file_bytes,
    copy_set, write_trials, snapshot)

# ------------------------------------------------------------ with the real Kaldi in the egs dir
# The miniature egs directories below hold Kaldi's own utils/ (run.pl, parse_options.sh,
# filter_scp.pl, ...) and sid/ (compute_min_dcf.py), a path.sh that puts the real binaries on
# PATH as Kaldi's does, and a cmd.sh naming run.pl. Without the build they skip (fail under CI).
from interop.real_kaldi import find_kaldi_root, install_egs_scripts  # noqa: E402


def make_real_egs(egs, root):
    install_egs_scripts(egs, root)
    (egs / "path.sh").write_text("export KALDI_ROOT=%s\nexport PATH=$PWD/utils/:$KALDI_ROOT/bin:"
                                 "$PWD:$PATH\nexport LC_ALL=C\n" % root)
    (egs / "cmd.sh").write_text('export train_cmd="run.pl"\n')


def run_real(name, egs, *options, ok=True):
    proc = subprocess.run(["bash", str(RECIPES / name / "run.sh"), "--lda-dim=%d" % LDA_DIM,
                           "--metric-opts=--num-iters=30", "--losses=pauc", *options, str(egs)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(),
                          timeout=900)
    output = proc.stdout.decode() + proc.stderr.decode()
    if ok:
        assert proc.returncode == 0, output
    return proc


@pytest.fixture(scope="module")
def kaldi_root():
    return find_kaldi_root()


@pytest.fixture(scope="module")
def sre16_real(kaldi_root, tmp_path_factory):
    """egs/sre16/v2 in miniature with the real Kaldi, run whole with --use-kaldi=true --nj 1."""
    from conftest import GOLDEN, need
    golden = need(GOLDEN)
    egs = tmp_path_factory.mktemp("sre16_v2_kaldi")
    lay_out_sre16(golden, egs)
    make_real_egs(egs, kaldi_root)
    proc = run_real("sre16", egs, "--use-kaldi=true", "--nj=1")
    return golden, egs, proc.stdout.decode()


def test_sre16_real_kaldi_reproduces_kaldi_and_its_evaluation(sre16_real, kaldi_root):
    """Kaldi's binaries through the recipe give Kaldi's golden scores byte for byte, and every
    echoed figure comes from Kaldi's compute-eer and sid/compute_min_dcf.py on the language's
    own scores (regression: stage 9 gave compute_min_dcf.py the pooled scores with the
    Tagalog trial list and stopped)."""
    golden, egs, stdout = sre16_real
    assert "baseline binaries: Kaldi" in stdout
    for ours, theirs in (("sre16_eval_scores", "plda_numutts"),
                         ("sre16_eval_scores_adapt", "plda_adapt_numutts")):
        assert (egs / "exp/scores" / ours).read_bytes() == \
            (golden / "scores" / theirs).read_bytes()
    env = dict(tool_env(), PATH=str(kaldi_root / "bin") + ":" + tool_env()["PATH"])
    for label, scores in (("Using Out-of-Domain PLDA", "sre16_eval_scores"),
                          ("Using Adapted PLDA", "sre16_eval_scores_adapt"),
                          ("Using Cosine (centred)", "sre16_eval_scores_cosine")):
        eers, dcfs = [], []
        for lang, trials in (("Pooled", "trials"), ("Tagalog", "trials_tgl"),
                             ("Cantonese", "trials_yue")):
            trials = egs / "data/sre16_eval_test" / trials
            subset = egs / "exp/scores" / scores
            if lang != "Pooled":  # as egs/sre16/v2: utils/filter_scp.pl <trials> <scores>
                subset = egs / "exp/scores/subset"
                subset.write_bytes(subprocess.run(
                    [str(kaldi_root / "utils/filter_scp.pl"), str(trials),
                     str(egs / "exp/scores" / scores)], stdout=subprocess.PIPE,
                    check=True).stdout)
            eer = subprocess.run("paste %s %s | awk '{print $6, $3}' | compute-eer -"
                                 % (trials, subset), shell=True, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
            dcf = subprocess.run([str(kaldi_root / "sid/compute_min_dcf.py"), "--p-target",
                                  "0.01", str(subset), str(trials)], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, check=True).stdout
            eers.append("%s %s%%" % (lang, eer.decode()))
            dcfs.append("%s %s" % (lang, dcf.decode().strip()))
        assert "%s, EER: %s" % (label, ", ".join(eers)) in stdout.splitlines(), stdout
        assert "%s, minDCF(p-target=0.01): %s" % (label, ", ".join(dcfs)) in \
            stdout.splitlines(), stdout
    for language in ("tgl", "yue"):  # Kaldi's file names for the per-language scores
        assert (egs / "exp/scores" / ("sre16_eval_%s_scores" % language)).is_file()


def test_sre16_real_kaldi_nj3_and_our_twins(sre16_real):
    """--nj 3 through Kaldi's run.pl gives the --nj 1 files; --use-kaldi=false in the same egs
    directory (Kaldi's utils/ and sid/ present) gives the same scores within 1e-4 max(1, |s|)
    (the models differ in the last bits of their doubles: tests/interop/test_model_twins.py),
    and its --nj 1 and --nj 3 files are identical."""
    _, egs, _ = sre16_real
    before = snapshot(egs / "exp/scores", "sre16_eval_scores*")
    assert len(before) == 6  # PLDA, adapted PLDA, cosine, pAUC on 3 preprocessings
    run_real("sre16", egs, "--use-kaldi=true", "--nj=3", "--stage=9", "--stop-stage=10")
    assert snapshot(egs / "exp/scores", "sre16_eval_scores*") == before
    logs = list((egs / "exp/scores/log").glob("sre16_eval_scoring.*.log"))
    assert len(logs) >= 3 and all("# Accounting:" in p.read_text() for p in logs)  # run.pl's
    proc = run_real("sre16", egs, "--use-kaldi=false", "--nj=3", "--stage=8", "--stop-stage=10")
    assert "baseline binaries: pauc-backend" in proc.stdout.decode()
    twins = snapshot(egs / "exp/scores", "sre16_eval_scores*")
    for name in ("sre16_eval_scores", "sre16_eval_scores_adapt"):
        keys, values = read_score_file_bytes(twins[name])
        gold_keys, gold_values = read_score_file_bytes(before[name])
        assert keys == gold_keys and close(values, gold_values), name
    run_real("sre16", egs, "--use-kaldi=false", "--nj=1", "--stage=9", "--stop-stage=10")
    assert snapshot(egs / "exp/scores", "sre16_eval_scores*") == twins


UNKNOWN_TRIALS = 1600  # appended to sitw's trial lists: an enrollment key with no vector


@pytest.fixture(scope="module")
def sitw_real(kaldi_root, tmp_path_factory):
    """egs/sitw/v2 in miniature with the real Kaldi; its trial lists end with 1600 trials of an
    unknown speaker, so that with --nj 11 the last part holds only unknown keys."""
    from conftest import GOLDEN, need
    golden = need(GOLDEN)
    egs = tmp_path_factory.mktemp("sitw_v2_kaldi")
    nnet = "exp/xvector_nnet_1a"
    copy_set(golden, "train", egs, nnet + "/xvectors_train_combined_200k",
             "data/train_combined_200k")
    unknown = "".join("nosuchspk%d ev%03d-tst%02d nontarget\n" % (i // 400, 1 + i % 400 // 10,
                                                                  1 + i % 10)
                      for i in range(UNKNOWN_TRIALS))
    for task in ("dev", "eval"):
        copy_set(golden, "enroll", egs, "%s/xvectors_sitw_%s_enroll" % (nnet, task),
                 "data/sitw_%s_enroll" % task)
        copy_set(golden, "test", egs, "%s/xvectors_sitw_%s_test" % (nnet, task))
        trials = egs / ("data/sitw_%s_test/trials/core-core.lst" % task)
        write_trials(golden, trials)
        with open(trials, "a") as f:
            f.write(unknown)
    # an unlabelled in-domain set for the auto stage's --adapt (issue 28)
    copy_set(golden, "adapt", egs, nnet + "/xvectors_sitw_adapt")
    make_real_egs(egs, kaldi_root)
    proc = run_real("sitw", egs, "--use-kaldi=true", "--nj=1", "--stop-stage=11")
    return golden, egs, egs / nnet, proc.stdout.decode()


def test_sitw_real_kaldi_echoes_kaldi_figures(sitw_real, kaldi_root):
    golden, egs, nnet, stdout = sitw_real
    assert "baseline binaries: Kaldi" in stdout
    scores = nnet / "scores/sitw_dev_core_scores"
    trials = egs / "data/sitw_dev_test/trials/core-core.lst"
    keys, _ = read_score_file(scores)
    assert keys == [tuple(l.split()[:2]) for l in (golden / "data/trials").read_text().splitlines()]
    lines = stdout.splitlines()
    block = lines.index("PLDA, sitw_dev Core:")
    env = dict(tool_env(), PATH=str(kaldi_root / "bin") + ":" + tool_env()["PATH"])
    # Kaldi's run.sh pastes trials and scores; the unknown trials are last, so paste aligns.
    eer = subprocess.run("paste %s %s | awk 'NF == 6 {print $6, $3}' | compute-eer -"
                         % (trials, scores), shell=True, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL).stdout.decode()
    assert lines[block + 1] == "EER: %s%%" % eer
    for i, p in enumerate(("0.01", "0.001")):
        dcf = subprocess.run([str(kaldi_root / "sid/compute_min_dcf.py"), "--p-target", p,
                              str(scores), str(trials)], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, check=True).stdout.decode().strip()
        assert lines[block + 2 + i] == "minDCF(p-target=%s): %s" % (p, dcf)


def test_nj_11_with_a_part_of_unknown_keys(sitw_real):
    """Regression: with --nj 11 the last part of the trial list held only trials with an
    unknown key; its scorer (Kaldi's or ours) scored nothing and failed the whole run while
    --nj 1 succeeded. Unknown-key trials are now left out before splitting: --nj 11 gives the
    --nj 1 file with Kaldi's binaries, and with ours the same scores (within 1e-4)."""
    _, egs, nnet, _ = sitw_real
    scores = nnet / "scores/sitw_dev_core_scores"
    nj1 = scores.read_bytes()
    proc = run_real("sitw", egs, "--use-kaldi=true", "--nj=11", "--stage=11", "--stop-stage=11")
    assert "1600 of the 17600 trials" in proc.stderr.decode()
    assert scores.read_bytes() == nj1
    run_real("sitw", egs, "--use-kaldi=false", "--nj=11", "--stage=11", "--stop-stage=11")
    keys, values = read_score_file(scores)
    scores.write_bytes(nj1)
    gold_keys, gold_values = read_score_file(scores)
    assert keys == gold_keys and close(values, gold_values)


@pytest.mark.parametrize("recipe", ["sre16", "sitw"])
def test_recipe_without_egs_dir_prints_usage(recipe, tmp_path):
    """Regression: without an egs directory the recipe ran in the current directory and
    created exp/ there; now it prints its usage and exits 1, leaving the directory empty."""
    for args in ([], ["--nj=2"], ["a", "b"]):
        proc = subprocess.run(["bash", str(RECIPES / recipe / "run.sh"), *args], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(),
                              timeout=60)
        assert proc.returncode == 1
        assert "Usage: " in proc.stderr.decode() and "<egs-dir>" in proc.stderr.decode()
        assert list(tmp_path.iterdir()) == []


# ------------------------------------------------ steps/pauc_auto.sh: the folds as run.pl jobs
AUTO_OPTS = ("--num-folds=3 --lda-dims=16,32 --candidates=plda,pauc_lnorm,plda+pauc_latent,dplda "
             "--dplda-lambdas=100,10 --num-iters=30 --batch-size=50 --num-jobs=2 "
             "--progress-interval=0")


def run_pauc_auto_step(golden, root, exp, *options):
    """steps/pauc_auto.sh on the golden training set, scoring the golden trials."""
    trials = root / "trials"
    if not trials.exists():
        copy_set(golden, "train", root, "data/train", "data/train")
        trials.write_text("".join(" ".join(line.split()[:2]) + "\n" for line in
                                  (golden / "data/trials").read_text().splitlines()))
    proc = subprocess.run(
        ["bash", str(RECIPES / "common/steps/pauc_auto.sh"), "--progress-interval", "1",
         "--auto-opts", AUTO_OPTS, *options, str(root / "data/train"),
         "ark:%s" % (golden / "exp/enroll_spk_xvector.ark"),
         "ark:%s" % (golden / "data/test/xvector.ark"), str(trials), str(exp)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(), timeout=900)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    return proc.stdout.decode()


def test_pauc_auto_folds_as_run_pl_jobs_give_the_single_process_model(kaldi_root, golden,
                                                                      tmp_path):
    """steps/pauc_auto.sh --nj 3 through Kaldi's own utils/run.pl (stage 1 and 2 of the folds
    as JOB=1:3 jobs, then --combine) writes the model files of --nj 1 byte for byte, and the
    same scores."""
    install_egs_scripts(tmp_path, kaldi_root)           # Kaldi's utils/run.pl, executable
    single = tmp_path / "exp1"
    run_pauc_auto_step(golden, tmp_path, single)
    stdout = run_pauc_auto_step(golden, tmp_path, tmp_path / "exp3", "--nj", "3", "--cmd",
                                str(tmp_path / "utils/run.pl"))
    assert "--fold-stage=2, 3 jobs" in stdout
    jobs = tmp_path / "exp3"
    logs = sorted(p.name for p in (jobs / "log").glob("fold*.log"))
    assert logs == ["fold.%d.log" % j for j in (1, 2, 3)] + \
        ["fold_promoted.%d.log" % j for j in (1, 2, 3)] + \
        ["fold_screen.%d.log" % j for j in (1, 2, 3)]
    assert all("# Accounting:" in (jobs / "log" / name).read_text() for name in logs)  # run.pl's
    assert "--fold=2 " in (jobs / "log/fold.2.log").read_text().splitlines()[0]
    # whole lines only, from the jobs and their worker processes (--num-jobs=2); every job
    # that cross-fits something says where it is (3 folds: no candidate screening, so the
    # third stage has nothing to do, and says so)
    for name in logs:
        lines = (jobs / "log" / name).read_text().splitlines()
        assert all(re.match(r"(#( |$)|train-pauc-auto |LOG \(train-pauc-auto\[)", l)
                   for l in lines), name
        if name.startswith("fold_promoted"):
            assert any("nothing to cross-fit" in l for l in lines), name
        else:
            assert any(") Progress: fold " in l for l in lines), name
    assert "--combine=" in (jobs / "log/train_pauc_auto.log").read_text()
    assert snapshot(single / "pauc_auto", "*") == snapshot(jobs / "pauc_auto", "*")
    assert sorted(p.name for p in (jobs / "pauc_auto_folds").iterdir()) == \
        ["stage%d.fold%d" % (s, k) for s in (1, 2, 3) for k in (1, 2, 3)]
    assert (single / "scores/pauc_auto").read_bytes() == (jobs / "scores/pauc_auto").read_bytes()


def test_sitw_auto_stage_folds_as_run_pl_jobs_give_the_nj1_model(sitw_real):
    """recipes/sitw stage 16 (--auto true, with an adaptation set: --adapt; without Dev.Core
    as development trials, which run in one process) through the egs directory's cmd.sh
    (Kaldi's own run.pl): --nj 3 runs the folds as JOB=1:3 jobs and writes the --nj 1 model
    and scores; system.txt says what the adaptation set changed."""
    golden, egs, nnet, _ = sitw_real
    auto = nnet / "pauc_auto"
    outputs = {}
    adapt = "--adapt=scp:%s" % (nnet / "xvectors_sitw_adapt/xvector.scp")
    for nj in (1, 3):
        proc = run_real("sitw", egs, "--use-kaldi=true", "--nj=%d" % nj, "--stage=16",
                        "--auto=true", "--auto-dev=false", "--auto-opts=%s" % AUTO_OPTS,
                        adapt)
        stdout = proc.stdout.decode()
        assert "adapt_vectors all_" in stdout
        card = (auto / "pauc_auto/system.txt").read_text()
        assert re.search(r"^adapt_shift_raw_before \d", card, re.M), card
        for task in ("dev", "eval"):
            assert "pAUCMetric (auto), sitw_%s Core:\nEER: " % task in stdout
        outputs[nj] = (snapshot(auto / "pauc_auto", "*"),
                       snapshot(nnet / "scores", "sitw_*_core_scores_pauc_auto"))
    assert sorted(p.name for p in (auto / "log").glob("fold*.log")) == \
        ["fold.%d.log" % j for j in (1, 2, 3)] + ["fold_promoted.%d.log" % j for j in (1, 2, 3)] \
        + ["fold_screen.%d.log" % j for j in (1, 2, 3)]
    assert "# Accounting:" in (auto / "log/fold.3.log").read_text()       # run.pl's
    assert len(outputs[1][1]) == 2 and outputs[1] == outputs[3]


def test_sitw_auto_stage_rates_on_dev_core(sitw_real):
    """recipes/sitw stage 16 by default passes Dev.Core as the development trials (issue 34):
    the enrollment utterances and test segments, each model the mean of its utterances; they
    rate the choice (system.txt), and --nj 3 (worker processes, not fold jobs) writes the
    --nj 1 model and scores."""
    golden, egs, nnet, _ = sitw_real
    auto = nnet / "pauc_auto"
    outputs = {}
    for nj in (1, 3):
        proc = run_real("sitw", egs, "--use-kaldi=true", "--nj=%d" % nj, "--stage=16",
                        "--auto=true", "--auto-opts=%s" % AUTO_OPTS)
        stdout = proc.stdout.decode()
        card = (auto / "pauc_auto/system.txt").read_text()
        assert "selection_rated_by dev\n" in card and "\ndev_pauc " in card, card
        log = (auto / "log/train_pauc_auto.log").read_text().splitlines()[0]
        assert "--dev-trials=%s" % "exp/xvector_nnet_1a/pauc_auto/dev_trials" in log
        assert "--dev-enroll=ark:data/sitw_dev_enroll/spk2utt" in log
        assert "sitw_dev Core (its development set: not an evaluation):" in stdout
        outputs[nj] = (snapshot(auto / "pauc_auto", "*"),
                       snapshot(nnet / "scores", "sitw_*_core_scores_pauc_auto"))
    assert outputs[1] == outputs[3]


def test_sre16_auto_stage_folds_as_run_pl_jobs_give_the_nj1_model(sre16_real):
    """recipes/sre16 stage 13 (--auto true) through Kaldi's run.pl (the egs cmd.sh): --nj 3
    writes the --nj 1 model and scores, reported pooled and per language."""
    golden, egs, _ = sre16_real
    auto = egs / "exp/pauc_auto"
    outputs = {}
    for nj in (1, 3):
        proc = run_real("sre16", egs, "--use-kaldi=true", "--nj=%d" % nj, "--stage=13",
                        "--auto=true", "--auto-opts=%s" % AUTO_OPTS)
        stdout = proc.stdout.decode()
        assert "Using pAUCMetric (auto), EER: Pooled " in stdout and "Cantonese" in stdout
        # SRE16 major is its adaptation set (issue 28): its size and shift in system.txt
        card = (auto / "pauc_auto/system.txt").read_text()
        major = len((egs / "exp/xvectors_sre16_major/xvector.scp").read_text().splitlines())
        assert "adapt_vectors all_%d_vectors\n" % major in card, card
        assert re.search(r"^adapt_shift_raw_before \d", card, re.M), card
        outputs[nj] = (snapshot(auto / "pauc_auto", "*"),
                       (egs / "exp/scores/sre16_eval_scores_pauc_auto").read_bytes())
    assert "# Accounting:" in (auto / "log/fold_screen.2.log").read_text()   # run.pl's
    assert outputs[1] == outputs[3]
