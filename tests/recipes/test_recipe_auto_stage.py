"""Stage 5 of recipes/etri and recipes/timit: pAUCMetric (auto) through steps/pauc_auto.sh.

The shipped defaults take minutes per corpus, so this runs the stage with a small candidate set
(--auto-opts) and checks the plumbing on the real data: each recipe builds the held-out trials
like its evaluation (ETRI: --enroll-utts=3 and speaker means scored with --num-utts; TIMIT:
--enroll-utts=0, single vectors on both sides), the scores follow the trial list, the stage is
printed with its elapsed time and the choice, and the system works (EER far below chance and
near the classical back-ends' 3.7-5.9 %).
"""

import re
import subprocess

import pytest

from conftest import ETRI, REPO, SHARED, need, tool_env

TIMIT = SHARED / "realdata" / "timit-ge2e"
CHEAP = ("--num-folds=2 --lda-dims=50 --candidates=plda,pauc_lnorm --num-iters=100 "
         "--num-jobs=1")


def run(recipe, *args):
    return subprocess.run(["bash", str(REPO / "recipes" / recipe / "run.sh"), *map(str, args)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(),
                          timeout=1800)


def eer(scores, trials):
    proc = subprocess.run(["bash", str(REPO / "recipes/common/utils/evaluate.sh"), str(scores),
                           str(trials)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=tool_env())
    assert proc.returncode == 0, proc.stderr.decode()
    return float(re.search(r"^EER (\S+)$", proc.stdout.decode(), re.M).group(1))


@pytest.mark.parametrize("recipe,data,enroll_utts", [("etri", ETRI, 3), ("timit", TIMIT, 0)])
def test_auto_stage_builds_held_out_trials_like_the_evaluation(tmp_path, recipe, data,
                                                              enroll_utts):
    need(data)
    proc = run(recipe, "--stop-stage", 1, "--dir", tmp_path, data)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    proc = run(recipe, "--stage", 5, "--stop-stage", 5, "--auto-opts", CHEAP, "--dir", tmp_path,
               data)
    stdout = proc.stdout.decode()
    assert proc.returncode == 0, stdout + proc.stderr.decode()
    assert re.search(r"run\.sh: stage 5: pAUCMetric \(auto\)", stdout)
    assert re.search(r"run\.sh: stage 5 done in (\d+ s|\d+:\d\d)", stdout)
    assert "chosen: " in stdout

    exp = tmp_path / "exp"
    train_log = (exp / "log/train_pauc_auto.log").read_text()
    assert "--enroll-utts=%d" % enroll_utts in train_log.splitlines()[0]
    score_log = (exp / "log/score_pauc_auto.log").read_text().splitlines()[0]
    if enroll_utts:
        assert "--num-utts=ark:%s" % (exp / "enroll_num_utts.ark") in score_log
        assert "enroll_spk_xvector.scp" in score_log
    else:
        assert "--num-utts" not in score_log
        assert score_log.count("data/eval/xvector.scp") == 2
    assert (exp / "pauc_auto/system.txt").is_file()

    trials = [line.split()[:2] for line in (tmp_path / "data/trials").read_text().splitlines()]
    scores = [line.split() for line in (exp / "scores/pauc_auto").read_text().splitlines()]
    assert [s[:2] for s in scores] == trials
    assert eer(exp / "scores/pauc_auto", tmp_path / "data/trials") < 8.0
