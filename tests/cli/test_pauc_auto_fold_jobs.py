"""train-pauc-auto beyond one machine (issue 17 item 5): the folds of the cross-fitting as
separate jobs (--fold-stage=1|2 --fold=J --fold-jobs=NJ) and --combine give the model of one
process byte for byte; outputs commit atomically; a missing fold, a stage run out of order
and outputs of other options or data are one clear ERROR each, with no model written."""

import json
import shutil

import pytest

from conftest import run_tool
from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import write_vector_table

# Two LDA dimensions, so stage 1 screens them with PLDA and stage 2 cross-fits the metrics and
# the discriminative PLDA (two lambdas) at the one it picks.
OPTS = ["--num-iters=40", "--batch-size=40", "--lda-dims=6,10", "--num-folds=3",
        "--candidates=plda,pauc_lnorm,plda+pauc_latent,dplda", "--dplda-lambdas=100,10",
        "--num-jobs=1", "--print-args=false"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("folds")
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=30, num_adapt_speakers=2,
                            num_eval_speakers=6, train_utts_range=(6, 12))
    write_vector_table("ark:%s" % (d / "train.ark"), c.train.keys, c.train.X)
    spk2utt = sorted(c.train.spk2utt().items())
    (d / "spk2utt").write_text("".join("%s %s\n" % (s, " ".join(u)) for s, u in spk2utt))
    (d / "spk2utt_fewer").write_text("".join("%s %s\n" % (s, " ".join(u))
                                             for s, u in spk2utt[:-1]))
    proc = train(d, d / "single")
    assert proc.returncode == 0, proc.stderr.decode()
    return d


@pytest.fixture(scope="module")
def three_jobs(data, tmp_path_factory):
    """Stages 1 and 2 of the default options as three fold jobs: the outputs the tests of
    --combine's refusals start from (each test works on its own copy: ``folds_of``)."""
    folds = tmp_path_factory.mktemp("three_jobs") / "folds"
    for stage in (1, 2):
        run_stage(data, folds, stage, 3)
    return folds


def folds_of(three_jobs, tmp_path):
    folds = tmp_path / "folds"
    shutil.copytree(three_jobs, folds)
    return folds


def train(d, out, *extra, spk2utt="spk2utt"):
    return run_tool("train-pauc-auto", *OPTS, *extra, "ark:%s" % (d / "train.ark"),
                    "ark:%s" % (d / spk2utt), out)


def reseal(path, info):
    """Write ``info`` with the sha256 a fold job would give it (the format of info.json:
    sha256 of its sorted-key JSON without that field)."""
    import hashlib
    body = {k: v for k, v in info.items() if k != "content_sha256"}
    info["content_sha256"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()
                                            ).hexdigest()
    path.write_text(json.dumps(info))


def files(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def errors(proc):
    return [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]


def run_stage(d, folds, stage, num_jobs, *extra):
    for job in range(1, num_jobs + 1):
        proc = train(d, folds, "--fold-stage=%d" % stage, "--fold=%d" % job,
                     "--fold-jobs=%d" % num_jobs, *extra)
        assert proc.returncode == 0, proc.stderr.decode()
    return proc


@pytest.mark.parametrize("num_jobs", [1, 2, 3, 4])
def test_fold_jobs_and_combine_write_the_single_process_model_byte_for_byte(data, tmp_path,
                                                                           num_jobs):
    folds = tmp_path / "folds"
    for stage in (1, 2):
        last = run_stage(data, folds, stage, num_jobs)
    if num_jobs == 4:        # more jobs than folds: the last has nothing to do, and says so
        assert "Job 4 of 4 has no fold" in last.stderr.decode()
    assert sorted(p.name for p in folds.iterdir()) == [
        "stage%d.fold%d" % (s, k) for s in (1, 2) for k in (1, 2, 3)]   # no temporary left
    proc = train(data, tmp_path / "model", "--combine=%s" % folds)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "Chose " in proc.stderr.decode()
    assert files(tmp_path / "model") == files(data / "single")


@pytest.mark.parametrize("num_jobs", [2, 5])
def test_with_candidate_screening_the_three_stages_give_the_single_process_model(
        data, tmp_path, num_jobs):
    """5 folds: the candidates are screened on folds 1-2 (stage 2) and the promoted ones
    cross-fitted on folds 3-5 (stage 3); jobs without a fold of a stage write an output that
    says so. The same model files as one process, byte for byte."""
    extra = ["--num-folds=5", "--screen-factor=4"]
    single = train(data, tmp_path / "single", *extra)
    assert single.returncode == 0, single.stderr.decode()
    assert "Screening: " in single.stderr.decode()
    folds = tmp_path / "folds"
    for stage in (1, 2, 3):
        run_stage(data, folds, stage, num_jobs, *extra)
    info = json.loads((folds / "stage2.fold4/info.json").read_text())
    assert info["work"]["folds"] == [1, 2] and info["tasks"] == []
    info = json.loads((folds / "stage3.fold1/info.json").read_text())
    assert info["work"]["folds"] == [3, 4, 5] and info["tasks"] == []
    proc = train(data, tmp_path / "model", "--combine=%s" % folds, *extra)
    assert proc.returncode == 0, proc.stderr.decode()
    assert files(tmp_path / "model") == files(tmp_path / "single")


@pytest.mark.parametrize("variant", [["--lda-dims=10"], ["--lda-selection=all"]])
def test_without_the_lda_screening_stage_one_does_everything(data, tmp_path, variant):
    """One LDA dimension, or every candidate at every dimension: stage 2 has nothing to do
    (its outputs say so) and --combine reads stage 1 alone."""
    single = train(data, tmp_path / "single", *variant)
    assert single.returncode == 0, single.stderr.decode()
    folds = tmp_path / "folds"
    run_stage(data, folds, 1, 3, *variant)
    last = run_stage(data, folds, 2, 3, *variant)
    assert "nothing to cross-fit" in last.stderr.decode()
    assert json.loads((folds / "stage2.fold3/info.json").read_text())["tasks"] == []
    shutil.rmtree(folds / "stage2.fold3")          # not needed by --combine
    proc = train(data, tmp_path / "model", "--combine=%s" % folds, *variant)
    assert proc.returncode == 0, proc.stderr.decode()
    assert files(tmp_path / "model") == files(tmp_path / "single")


def test_each_job_does_its_folds_and_stage_two_cross_fits_at_the_screened_dimension(data,
                                                                                   tmp_path):
    folds = tmp_path / "folds"
    run_stage(data, folds, 1, 2)
    info = json.loads((folds / "stage1.fold3/info.json").read_text())
    work = info["work"]
    assert info["fold"] == 3 and work["dims"] == [6, 10] and work["systems"] == ["plda"]
    # stage 1 keeps the held-out figures of each dimension; no fusion needs its scores
    assert [sorted(t["figures"]) for t in info["tasks"]] == [["plda"], ["plda"]]
    assert sorted(p.name for p in (folds / "stage1.fold3").iterdir()) == ["info.json"]
    proc = run_stage(data, folds, 2, 2)
    assert "Wrote stage 2 of fold 2 of 3" in proc.stderr.decode()
    info = json.loads((folds / "stage2.fold1/info.json").read_text())
    work = info["work"]
    assert len(work["dims"]) == 1 and work["dims"][0] in (6, 10)
    # every system at the promoted dimension (PLDA again, for the fusion plda+pauc_latent)
    assert work["systems"] == ["plda", "pauc_lnorm", "pauc_latent", "dplda"]
    # the discriminative PLDA's whole lambda path is kept for the combine step to choose
    (task,) = info["tasks"]
    assert set(task["figures"]) == set(task["columns"]) == {
        "plda", "pauc_lnorm", "pauc_latent", "dplda@100.0", "dplda@10.0"}
    assert (folds / "stage2.fold1" / ("scores.%d" % work["dims"][0])).is_file()


def test_a_missing_fold_is_one_error_naming_it_and_no_model_is_written(data, three_jobs,
                                                                        tmp_path):
    folds = folds_of(three_jobs, tmp_path)
    shutil.rmtree(folds / "stage2.fold2")
    proc = train(data, tmp_path / "model", "--combine=%s" % folds)
    assert proc.returncode == 255
    (line,) = errors(proc)
    assert "Missing output of stage 2 of fold 2" in line and "--fold-stage=2" in line
    assert not (tmp_path / "model").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["folds"]


def test_stage_two_before_every_fold_of_stage_one_is_an_error(data, tmp_path):
    folds = tmp_path / "folds"
    proc = train(data, folds, "--fold-stage=1", "--fold=1")
    assert proc.returncode == 0, proc.stderr.decode()
    proc = train(data, folds, "--fold-stage=2", "--fold=1")
    assert proc.returncode == 255
    (line,) = errors(proc)
    assert "Missing output of stage 1 of folds 2,3" in line
    assert not (folds / "stage2.fold1").exists()


def test_outputs_of_other_options_or_data_are_refused(data, three_jobs, tmp_path):
    folds = folds_of(three_jobs, tmp_path)
    proc = train(data, tmp_path / "model", "--combine=%s" % folds, "--seed=1")
    assert proc.returncode == 255
    (line,) = errors(proc)
    assert "stage1.fold1 was made with different options: random_state=0 (this run: 1)" in line
    proc = train(data, tmp_path / "model", "--combine=%s" % folds, spk2utt="spk2utt_fewer")
    assert proc.returncode == 255
    (line,) = errors(proc)
    assert "was made from different training data" in line
    # --num-jobs only says how to run, not what is computed: accepted
    proc = train(data, tmp_path / "model", "--combine=%s" % folds, "--num-jobs=2")
    assert proc.returncode == 0, proc.stderr.decode()
    assert files(tmp_path / "model") == files(data / "single")


def test_a_stage_two_output_from_other_stage_one_outputs_is_refused(data, three_jobs,
                                                                      tmp_path):
    folds = folds_of(three_jobs, tmp_path)
    info_path = folds / "stage2.fold3/info.json"
    info = json.loads(info_path.read_text())
    other = 6 if info["work"]["dims"] == [10] else 10
    info["work"]["dims"] = [other]
    for task in info["tasks"]:
        task["dim"] = other
    reseal(info_path, info)          # a consistent output of other work, not a damaged one
    proc = train(data, tmp_path / "model", "--combine=%s" % folds)
    assert proc.returncode == 255
    (line,) = errors(proc)
    assert "stage2.fold3 cross-fitted other work" in line and "rerun the fold jobs" in line
    assert "dims [%d] there" % other in line


@pytest.mark.parametrize("options,message", [
    (["--fold=1"], "--fold=1 needs --fold-stage=1 or 2"),
    (["--fold-stage=1"], "--fold-stage=1 needs --fold=J"),
    (["--fold-stage=1", "--fold=1", "--combine=x"], "exclude each other"),
    (["--fold-stage=1", "--fold=3", "--fold-jobs=2"], "--fold=3 is not a job number"),
    (["--fold-stage=1", "--fold=4"], "--fold=4 is not a job number between 1 and 3"),
])
def test_fold_job_options_are_checked(data, tmp_path, options, message):
    proc = train(data, tmp_path / "out", *options)
    assert proc.returncode == 255
    (line,) = errors(proc)
    assert message in line
    assert list(tmp_path.iterdir()) == []


def test_fold_outputs_are_exact_floats_whatever_binary_says(data, tmp_path):
    """--binary=false writes text model pieces; the held-out scores stay binary float32 (text
    would round them and change the choice or the fusion)."""
    folds = tmp_path / "folds"
    for stage in (1, 2):
        run_stage(data, folds, stage, 3, "--binary=false")
    (scores,) = (folds / "stage2.fold1").glob("scores.*")
    assert scores.read_bytes().startswith(b"\0BFM ")
    proc = train(data, tmp_path / "model", "--combine=%s" % folds)
    assert proc.returncode == 0, proc.stderr.decode()
    assert files(tmp_path / "model") == files(data / "single")


def test_help_shows_the_fold_job_forms_and_its_docs_page_documents_them():
    """--help gives the fold jobs' two Usage forms and names docs/auto-backend.md, whose fold
    jobs section gives the commands, the same result as one process and the digest check."""
    from conftest import REPO
    text = run_tool("train-pauc-auto", "--help").stdout.decode()
    usage = [line for line in text.splitlines()[:15] if "Usage:" in line or "or:" in line]
    assert any("--fold-stage=1|2|3 --fold=J --fold-jobs=NJ" in line for line in usage), usage
    assert any("--combine=<fold-dir>" in line for line in usage), usage
    assert "More: docs/auto-backend.md" in text
    page = (REPO / "docs" / "auto-backend.md").read_text()
    section = page.split("## Fold jobs: beyond one machine", 1)[1].split("\n## ", 1)[0]
    for words in ("--fold-stage=1 --fold=JOB \\\n", "--combine=", "--fold-jobs",
                  "the same model files byte for byte", "digest"):
        assert words in section, words


def test_a_killed_fold_job_leaves_no_output(data, tmp_path):
    """Killed while it cross-fits (after its first progress line): no stage directory and no
    temporary one, so --combine can only see complete folds."""
    import signal
    import subprocess
    import sys

    from conftest import BIN, tool_env
    folds = tmp_path / "folds"
    folds.mkdir()
    proc = subprocess.Popen([sys.executable, str(BIN / "train-pauc-auto"), *OPTS,
                             "--progress-interval=0", "--fold-stage=1", "--fold=1",
                             "ark:%s" % (data / "train.ark"), "ark:%s" % (data / "spk2utt"),
                             str(folds)], stderr=subprocess.PIPE, env=tool_env())
    try:
        for raw in proc.stderr:
            if b"Progress: fold 1 of 3" in raw:
                break
        proc.send_signal(signal.SIGTERM)
        proc.stderr.read()
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == -signal.SIGTERM
    assert list(folds.iterdir()) == []
