"""Issue 36 items 3-4: every file a tool reads from a directory it was given (a model directory
of train-pauc-auto, a fold directory, a folder of .npy vectors) is a regular file under a cap,
or one ERROR naming it: a FIFO there hung score-pauc-auto for ever, /dev/zero behind a name was
read until the memory ran out, a non-UTF-8 system.txt gave a codec error naming no file, NaN or
infinity in mean.vec or transform.mat surfaced only as a non-finite score (with a raw numpy
RuntimeWarning). Every tool runs under a 2 GiB address space and a timeout, so a read without
bound or a wait for ever fails the test instead of filling or stalling the machine.
"""

import os
import resource
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import BIN, tool_env

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import read_matrix, read_vector, write_matrix, write_vector
from pauc_backend.kaldi_io import write_vector_table

LIMIT = 2 << 30
FAST = ["--num-iters=60", "--batch-size=50", "--lda-dims=8", "--num-folds=3",
        "--candidates=plda,pauc_lnorm,plda+pauc_latent", "--print-args=false"]


def run(name, *args, cwd):
    """bin/<name> under a 2 GiB address space; (exit code, stderr); a timeout is a failure."""
    proc = subprocess.run([sys.executable, str(BIN / name), *map(str, args)], cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(),
                          timeout=120, preexec_fn=lambda: resource.setrlimit(
                              resource.RLIMIT_AS, (LIMIT, LIMIT)))
    return proc.returncode, proc.stderr.decode(errors="replace")


def one_error(code, stderr):
    errors = [line for line in stderr.splitlines() if line.startswith("ERROR")]
    assert code == 255 and len(errors) == 1, stderr[-3000:]
    for noise in ("Traceback", "internal error", "Warning:", "RuntimeWarning", "Out of memory"):
        assert noise not in stderr, stderr[-3000:]
    return errors[0]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("directory_inputs")
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=30, num_adapt_speakers=2,
                            num_eval_speakers=6, train_utts_range=(6, 12))
    write_vector_table("ark:%s" % (d / "train.ark"), c.train.keys, c.train.X)
    (d / "spk2utt").write_text("".join("%s %s\n" % (s, " ".join(u))
                                       for s, u in sorted(c.train.spk2utt().items())))
    write_vector_table("ark:%s" % (d / "test.ark"), c.test.keys, c.test.X)
    (d / "trials").write_text("".join("%s %s\n" % (a, b) for a in c.test.keys[:4]
                                      for b in c.test.keys[8:20]))
    code, stderr = run("train-pauc-auto", *FAST, "ark:train.ark", "ark:spk2utt", "model",
                       cwd=d)
    assert code == 0, stderr
    assert (d / "model" / "metric_pauc_lnorm").exists() or (d / "model" / "plda").exists()
    return d


def _non_finite_in(kind):
    def damage(path):
        read, write = (read_vector, write_vector) if kind == "vector" else \
            (read_matrix, write_matrix)
        values = np.array(read(str(path)))
        values.flat[1] = np.nan if kind == "vector" else np.inf
        write(str(path), values)
    return damage


def _fifo(path):
    path.unlink()
    os.mkfifo(path)


def _dev_zero(path):
    path.unlink()
    os.symlink("/dev/zero", path)


def _huge(path):
    with open(path, "ab") as f:
        f.truncate(1 << 32)           # 4 GiB, sparse: read whole it would not fit


def _directory(path):
    path.unlink()
    path.mkdir()


MODEL_CASES = {   # file, damage, what the ERROR says about it
    "FIFO system.txt": ("system.txt", _fifo, "it is a FIFO, not a regular file"),
    "/dev/zero as system.txt": ("system.txt", _dev_zero, "it is a character device, not a "
                                                          "regular file"),
    "huge system.txt": ("system.txt", _huge, "more than the 1 MiB such a file may have"),
    "non-UTF-8 system.txt": ("system.txt", lambda p: p.write_bytes(
        p.read_bytes() + b"note caf\xe9\n"), "is not UTF-8 text (byte 0xe9"),
    "FIFO mean.vec": ("mean.vec", _fifo, "it is a FIFO, not a regular file"),
    "/dev/zero as mean.vec": ("mean.vec", _dev_zero, "it is a character device"),
    "directory as mean.vec": ("mean.vec", _directory, "it is a directory"),
    "huge transform.mat": ("transform.mat", _huge, "such a file may have"),
    "FIFO fusion": ("fusion", _fifo, "it is a FIFO, not a regular file"),
    "NaN in mean.vec": ("mean.vec", _non_finite_in("vector"),
                        "mean.vec holds NaN or infinite values"),
    "Inf in transform.mat": ("transform.mat", _non_finite_in("matrix"),
                             "transform.mat holds NaN or infinite values"),
    "Inf in domain_whitener.mat": ("domain_whitener.mat", _non_finite_in("matrix"),
                                   "domain_whitener.mat holds NaN or infinite values"),
}


@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_a_special_huge_or_non_finite_model_file_is_one_error_naming_it(made, tmp_path, case):
    name, damage, said = MODEL_CASES[case]
    model = tmp_path / "model"
    shutil.copytree(made / "model", model)
    damage(model / name)
    code, stderr = run("score-pauc-auto", model, "ark:%s" % (made / "test.ark"),
                       "ark:%s" % (made / "test.ark"), made / "trials", tmp_path / "scores",
                       cwd=tmp_path)
    line = one_error(code, stderr)
    assert "%s/%s" % (model, name) in line and said in line, line
    assert not (tmp_path / "scores").exists()


def test_model_pieces_behind_symbolic_links_are_read_as_their_targets(made, tmp_path):
    """Kaldi users link model pieces (ln -s ../exp/plda): a link to a regular file is read
    (only the opened file's type and size decide); scores equal the unlinked model's."""
    model = tmp_path / "model"
    shutil.copytree(made / "model", model)
    elsewhere = tmp_path / "pieces"
    elsewhere.mkdir()
    for name in ("mean.vec", "transform.mat", "system.txt"):
        (model / name).rename(elsewhere / name)
        os.symlink(elsewhere / name, model / name)
    outputs = []
    for directory in (made / "model", model):
        out = tmp_path / ("scores.%s" % directory.name)
        code, stderr = run("score-pauc-auto", directory, "ark:%s" % (made / "test.ark"),
                           "ark:%s" % (made / "test.ark"), made / "trials", out, cwd=tmp_path)
        assert code == 0, stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


FOLD_OPTS = ["--lda-dims=6,10", "--num-folds=3", "--candidates=plda,cosine", "--num-jobs=1",
             "--print-args=false"]


@pytest.fixture(scope="module")
def folds(made):
    for job in (1, 2, 3):
        code, stderr = run("train-pauc-auto", *FOLD_OPTS, "--fold-stage=1", "--fold=%d" % job,
                           "ark:train.ark", "ark:spk2utt", "folds", cwd=made)
        assert code == 0, stderr
    return made / "folds"


def _scores(folder):
    return sorted(folder.glob("scores.*"))[0]


FOLD_CASES = {
    "FIFO info.json": ("info.json", _fifo, "it is a FIFO, not a regular file"),
    "/dev/zero as info.json": ("info.json", _dev_zero, "it is a character device"),
    "FIFO scores": (_scores, _fifo, "it is a FIFO, not a regular file"),
    "/dev/zero as scores": (_scores, _dev_zero, "it is a character device"),
    "huge scores": (_scores, _huge, "such a file may have"),
}


@pytest.mark.parametrize("case", sorted(FOLD_CASES))
def test_a_special_or_huge_fold_output_is_one_error_naming_it(made, folds, tmp_path, case):
    """A fold directory read by --combine: a FIFO info.json is named as such (it was a
    "missing output"), a FIFO scores.<dim> no longer hangs, /dev/zero or a huge file behind
    scores.<dim> is not read without bound."""
    name, damage, said = FOLD_CASES[case]
    copy = tmp_path / "folds"
    shutil.copytree(folds, copy)
    path = name(copy / "stage1.fold2") if callable(name) else copy / "stage1.fold2" / name
    damage(path)
    code, stderr = run("train-pauc-auto", *FOLD_OPTS, "--combine=%s" % copy, "ark:train.ark",
                       "ark:spk2utt", tmp_path / "model", cwd=made)
    line = one_error(code, stderr)
    assert str(path) in line and said in line, line
    assert "Missing output" not in line
    assert not (tmp_path / "model").exists()


@pytest.mark.parametrize("damage,said", [(_fifo, "it is a FIFO"),
                                         (_dev_zero, "it is a character device")])
def test_a_special_file_in_a_folder_of_npy_vectors_is_one_error_naming_it(tmp_path, damage,
                                                                          said):
    folder = tmp_path / "vectors"
    folder.mkdir()
    for key in ("a", "b", "c"):
        np.save(folder / ("%s.npy" % key), np.ones(4, dtype=np.float32))
    damage(folder / "b.npy")
    code, stderr = run("import-vectors", "--format=npy-dir", folder, "ark:%s" % (
        tmp_path / "out.ark"), cwd=tmp_path)
    line = one_error(code, stderr)
    assert str(folder / "b.npy") in line and said in line, line
    assert not (tmp_path / "out.ark").exists()
