"""recipes/demo/run.sh end to end (the README's first command): every system and metric, plots."""

import math
import re
import subprocess

import pytest

from conftest import REPO, tool_env

SYSTEMS = ["Cosine (centred)", "TripletMetric (length-norm)", "pAUCMetric (length-norm)",
           "PLDA", "TripletMetric (PLDA latent)", "pAUCMetric (PLDA latent)",
           "PLDA-adp", "TripletMetric (PLDA-adp latent)", "pAUCMetric (PLDA-adp latent)",
           "pAUCMetric (auto)"]
METRICS = ["EER(%)", "minDCF(0.01)", "pAUC[0,0.01]", "AUC", "AP(%)", "actDCF(0.01)", "Cllr"]


def table_rows(text):
    """The results table as {system: {metric: value}} (Markdown pipes table)."""
    lines = [l for l in text.splitlines() if l.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(header[1:], cells[1:]))
    return header, rows


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    # From an unrelated working directory, writing under --dir.
    # pAUCMetric (auto) in a quick setting (the plumbing; the README's row is the default's)
    proc = subprocess.run(["bash", str(REPO / "recipes/demo/run.sh"), "--dir", "work",
                           "--auto-opts", "--num-folds=3 --lda-dims=none --num-iters=60"],
                          cwd=out, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=tool_env(), timeout=900)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    return out / "work", proc.stdout.decode()


def test_demo_table_has_every_system_and_metric_with_finite_values(demo):
    _, stdout = demo
    header, rows = table_rows(stdout)
    assert header[1:] == METRICS
    assert list(rows) == SYSTEMS
    for system, values in rows.items():
        for metric in METRICS:
            value = float(values[metric])
            assert math.isfinite(value), (system, metric)
        assert 0 <= float(values["EER(%)"]) <= 50
        assert 0 <= float(values["pAUC[0,0.01]"]) <= 1 and 0.5 <= float(values["AUC"]) <= 1


def test_demo_writes_det_and_roc_plots_and_kaldi_style_outputs(demo):
    work, _ = demo
    for plot in ("det.png", "roc.png"):
        data = (work / "exp" / plot).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 10000
    trials = (work / "data/trials").read_text().splitlines()
    for system in ("cosine", "plda", "plda_adapt", "pauc_plda", "triplet_lnorm", "pauc_auto"):
        scores = (work / "exp/scores" / system).read_text().splitlines()
        assert [s.split()[:2] for s in scores] == [t.split()[:2] for t in trials]
        calibrated = (work / "exp/calibrated" / system).read_text().splitlines()
        assert [s.split()[:2] for s in calibrated] == [t.split()[:2] for t in trials]


def test_demo_prints_every_stage_with_its_elapsed_time_and_where_logs_go(demo):
    """Issue 10: the demo was silent for minutes; now each stage shows its elapsed time."""
    work, stdout = demo
    assert "logs in %s" % (work / "exp/log") in stdout
    for stage in range(7):
        assert re.search(r"run\.sh: stage %d: \S" % stage, stdout), stage
        assert re.search(r"run\.sh: stage %d done in (\d+ s|\d+:\d\d) \(total (\d+ s|\d+:\d\d)\)"
                         % stage, stdout), stage


def test_demo_auto_row_is_trained_with_the_adapt_set(demo):
    """Issue 28: the pAUCMetric (auto) row is trained with --adapt=<the demo's adapt/ set>;
    its system.txt says what the adaptation set changed, and its scoring finds the test
    vectors in its (adapted) domain: no WARNING."""
    work, _ = demo
    card = (work / "exp/pauc_auto/system.txt").read_text()
    num_adapt = len((work / "data/adapt/xvector.scp").read_text().splitlines())
    assert "adapt_vectors all_%d_vectors\n" % num_adapt in card
    log = (work / "exp/log/score_pauc_auto.log").read_text()
    assert "WARNING" not in log and "Domain check: their mean lies " in log
