"""Fold outputs of train-pauc-auto that a job did not write (issue 26 item 6): each crafted,
damaged, changed or swapped file read by --combine (or by the next stage) is one ERROR naming
the file and the problem, exit 255, no model written; never an internal error. The sha256
recorded in info.json cover the scores and the figures: negated PLDA scores in a fold file
(which changed the chosen system, exit 0, before) are refused."""

import hashlib
import json
import shutil

import numpy as np
import pytest

from conftest import run_tool
from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import write_vector_table

OPTS = ["--num-iters=40", "--batch-size=40", "--lda-dims=6,10", "--num-folds=3",
        "--candidates=plda,pauc_lnorm,plda+pauc_latent", "--num-jobs=1",
        "--print-args=false"]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Training data and complete fold outputs of stages 1 and 2 (stage 3 has nothing to do
    at 40 iterations: no screening budget)."""
    d = tmp_path_factory.mktemp("fold_outputs")
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=30, num_adapt_speakers=2,
                            num_eval_speakers=6, train_utts_range=(6, 12))
    write_vector_table("ark:%s" % (d / "train.ark"), c.train.keys, c.train.X)
    (d / "spk2utt").write_text("".join("%s %s\n" % (s, " ".join(u))
                                       for s, u in sorted(c.train.spk2utt().items())))
    for stage in (1, 2):
        for job in (1, 2, 3):
            proc = train(d, d / "folds", "--fold-stage=%d" % stage, "--fold=%d" % job)
            assert proc.returncode == 0, proc.stderr.decode()
    proc = train(d, d / "single")
    assert proc.returncode == 0, proc.stderr.decode()
    return d


def train(d, out, *extra):
    return run_tool("train-pauc-auto", *OPTS, *extra, "ark:%s" % (d / "train.ark"),
                    "ark:%s" % (d / "spk2utt"), out)


def copy(made, tmp_path):
    folds = tmp_path / "folds"
    shutil.copytree(made / "folds", folds)
    return folds


def combine_error(made, tmp_path, folds):
    """--combine on ``folds``: exactly one ERROR line (returned), exit 255, no model."""
    proc = train(made, tmp_path / "model", "--combine=%s" % folds)
    err = proc.stderr.decode()
    lines = [l for l in err.splitlines() if l.startswith("ERROR")]
    assert proc.returncode == 255, err
    assert len(lines) == 1 and "internal error" not in err and "Traceback" not in err, err
    assert not (tmp_path / "model").exists()
    return lines[0]


def scores_file(folds):
    (path,) = (folds / "stage2.fold2").glob("scores.*")
    return path


def reseal(path, info):
    """info.json with the sha256 a fold job would give it (what a forger would do)."""
    body = {k: v for k, v in info.items() if k != "content_sha256"}
    info["content_sha256"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()
                                            ).hexdigest()
    path.write_text(json.dumps(info))


def test_the_untouched_outputs_combine_to_the_single_process_model(made, tmp_path):
    folds = copy(made, tmp_path)
    proc = train(made, tmp_path / "model", "--combine=%s" % folds)
    assert proc.returncode == 0, proc.stderr.decode()
    assert {p.name: p.read_bytes() for p in (tmp_path / "model").iterdir()} == \
        {p.name: p.read_bytes() for p in (made / "single").iterdir()}


def test_negated_plda_scores_are_refused(made, tmp_path):
    """The doctored file of issue 26: PLDA's held-out scores negated, the rest as written."""
    folds = copy(made, tmp_path)
    path = scores_file(folds)
    info = json.loads((path.parent / "info.json").read_text())
    (task,) = info["tasks"]
    row = task["columns"].index("plda")
    data = bytearray(path.read_bytes())
    header = 2 + 3 + 1 + 4 + 1 + 4                     # \0B, "FM ", int32 rows, int32 cols
    cols = int(np.frombuffer(bytes(data[header - 4:header]), "<i4")[0])
    M = np.frombuffer(bytes(data[header:]), "<f4").reshape(-1, cols).copy()
    M[row] = -M[row]
    data[header:] = M.tobytes()
    path.write_bytes(bytes(data))
    line = combine_error(made, tmp_path, folds)
    assert str(path.name) in line and "stage2.fold2" in line
    assert "does not match the sha256 recorded in info.json" in line


def test_doctored_figures_are_refused(made, tmp_path):
    folds = copy(made, tmp_path)
    info_path = folds / "stage1.fold1/info.json"
    info = json.loads(info_path.read_text())
    info["tasks"][0]["figures"]["plda"]["pauc"] = 0.999
    info_path.write_text(json.dumps(info))
    line = combine_error(made, tmp_path, folds)
    assert "stage1.fold1/info.json does not match its own sha256" in line


@pytest.mark.parametrize("stage", [1, 2])
def test_swapped_fold_directories_say_so_without_contradiction(made, tmp_path, stage):
    folds = copy(made, tmp_path)
    a, b = folds / ("stage%d.fold1" % stage), folds / ("stage%d.fold2" % stage)
    a.rename(folds / "tmp")
    b.rename(a)
    (folds / "tmp").rename(b)
    line = combine_error(made, tmp_path, folds)
    assert "stage%d.fold1 holds stage %d of fold 2, not stage %d of fold 1" % (
        stage, stage, stage) in line
    assert "swapped" in line


CRAFTED_INFO = {
    "not json": b"{\"stage\": ",
    "deep nesting": b"[" * 100000 + b"]" * 100000,
    "a list": b"[1, 2, 3]",
    "a number": b"42",
    "not utf-8": b"\xff\xfe{}",
}


@pytest.mark.parametrize("name", sorted(CRAFTED_INFO))
def test_crafted_info_json_is_one_error(made, tmp_path, name):
    folds = copy(made, tmp_path)
    (folds / "stage1.fold3/info.json").write_bytes(CRAFTED_INFO[name])
    line = combine_error(made, tmp_path, folds)
    assert "stage1.fold3/info.json" in line


def _edit_tasks(info, how):
    task = info["tasks"][0]
    if how == "tasks not a list":
        info["tasks"] = {"a": 1}
    elif how == "task not an object":
        info["tasks"] = [7]
    elif how == "dimension not of the stage":
        task["dim"] = 12345
    elif how == "figures missing":
        del task["figures"]
    elif how == "figures of an unknown system":
        task["figures"]["svm"] = dict(task["figures"]["plda"])
    elif how == "a figure out of range":
        task["figures"]["plda"]["eer"] = 7.5
    elif how == "a figure not a number":
        task["figures"]["plda"]["pauc"] = "high"
    elif how == "a figure missing":
        del task["figures"]["plda"]["min_dcf"]
    elif how == "columns not a list":
        task["columns"] = "plda"
    elif how == "errors malformed":
        task["errors"] = [[1, 2, 3]]
    elif how == "the same dimension twice":
        info["tasks"].append(dict(task))
    return info


EDITS = ["tasks not a list", "task not an object", "dimension not of the stage",
         "figures missing", "figures of an unknown system", "a figure out of range",
         "a figure not a number", "a figure missing", "columns not a list",
         "errors malformed", "the same dimension twice"]


@pytest.mark.parametrize("how", EDITS)
def test_resealed_info_json_of_the_wrong_shape_is_one_error(made, tmp_path, how):
    """Structurally wrong content with a matching sha256 (recomputed, as a forger would):
    still one ERROR naming the file and what is wrong, never a KeyError or TypeError."""
    folds = copy(made, tmp_path)
    path = folds / "stage1.fold2/info.json"
    reseal(path, _edit_tasks(json.loads(path.read_text()), how))
    line = combine_error(made, tmp_path, folds)
    assert "stage1.fold2/info.json" in line and "rerun the fold job" in line


@pytest.mark.parametrize("how", ["truncated", "transposed", "text", "nan", "missing"])
def test_damaged_scores_are_one_error(made, tmp_path, how):
    """A scores file of the wrong shape, form or values, its sha256 recorded anew (so the
    check of its content is what refuses it)."""
    folds = copy(made, tmp_path)
    path = scores_file(folds)
    info_path = path.parent / "info.json"
    info = json.loads(info_path.read_text())
    data = path.read_bytes()
    header = 15
    rows, cols = (int(np.frombuffer(data[6:10], "<i4")[0]),
                  int(np.frombuffer(data[11:15], "<i4")[0]))
    M = np.frombuffer(data[header:], "<f4").reshape(rows, cols)
    if how == "truncated":
        data = data[:len(data) // 2]
    elif how == "transposed":
        data = data[:6] + np.int32(cols).tobytes() + b"\x04" + np.int32(rows).tobytes() + \
            M.T.copy().tobytes()
    elif how == "text":
        data = b"[ 1 2 3 ]\n"
    elif how == "nan":
        bad = M.copy()
        bad[0, 5] = np.nan
        data = data[:header] + bad.tobytes()
    if how == "missing":
        path.unlink()
    else:
        path.write_bytes(data)
        info["tasks"][0]["scores_sha256"] = hashlib.sha256(data).hexdigest()
        reseal(info_path, info)
    line = combine_error(made, tmp_path, folds)
    assert "stage2.fold2" in line and path.name in line


def test_an_enormous_info_json_is_refused_before_it_is_read_whole(made, tmp_path):
    folds = copy(made, tmp_path)
    with open(folds / "stage1.fold1/info.json", "wb") as f:
        f.truncate(1 << 25)                          # 32 MB of NULs, sparse
    line = combine_error(made, tmp_path, folds)
    assert "stage1.fold1/info.json (a fold output of train-pauc-auto): it is 32 MiB, more " \
        "than the 16 MiB such a file may have" in line


def test_a_stage_two_job_refuses_a_doctored_stage_one(made, tmp_path):
    """The next stage reads the previous one with the same checks (stage 2 job here)."""
    folds = copy(made, tmp_path)
    path = folds / "stage1.fold1/info.json"
    reseal(path, _edit_tasks(json.loads(path.read_text()), "a figure out of range"))
    shutil.rmtree(folds / "stage2.fold1")
    proc = train(made, folds, "--fold-stage=2", "--fold=1")
    assert proc.returncode == 255
    (line,) = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert "stage1.fold1/info.json" in line and "out of range" in line
    assert not (folds / "stage2.fold1").exists()
