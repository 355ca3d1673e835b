"""Issue 42 item 2: errors that named neither the file nor the cause. Each is one ERROR line
naming the file (or variable) and why, checked through the tool: a path that is not a
directory where a model or fold directory goes, an unusable TMPDIR for a spooled table, and a
NumPy file where a Kaldi table goes."""

import contextlib
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import BIN, need_program, run_tool, tool_env

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import write_vector_table

FAST = ["--num-folds=2", "--lda-dims=none", "--candidates=cosine_raw,plda", "--num-iters=10",
        "--num-jobs=1"]


def errors(proc):
    return [line for line in proc.stderr.decode().splitlines() if line.startswith("ERROR")]


def one_error(proc):
    """The single ERROR line of a failed run without a traceback."""
    found = errors(proc)
    assert proc.returncode == 255 and len(found) == 1, proc.stderr.decode()
    assert b"Traceback" not in proc.stderr
    return found[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("named_errors")
    c = make_speaker_corpus(seed=3, dim=12, num_train_speakers=20, num_adapt_speakers=2,
                            num_eval_speakers=4)
    write_vector_table("ark:%s" % (d / "train.ark"), c.train.keys, c.train.X)
    with open(d / "spk2utt", "w") as f:
        for spk, utts in sorted(c.train.spk2utt().items()):
            f.write("%s %s\n" % (spk, " ".join(utts)))
    with open(d / "utt2spk", "w") as f:
        for spk, utts in sorted(c.train.spk2utt().items()):
            f.writelines("%s %s\n" % (u, spk) for u in utts)
    np.save(d / "vectors.npy", c.train.X[:5])
    np.savez(d / "vectors.npz", vectors=c.train.X[:5], keys=np.array(c.train.keys[:5]))
    (d / "trials").write_text("%s %s target\n" % (c.train.keys[0], c.train.keys[1]))
    return d


def training(d):
    return ["ark:%s" % (d / "train.ark"), "ark:%s" % (d / "spk2utt")]


def piped(d):
    """The training table through a pipe: beyond --in-memory-mb it is spooled (an archive
    file is read again where it is instead: nothing goes to TMPDIR)."""
    return "ark:cat %s |" % (d / "train.ark")


def not_a_directory(tmp_path, kind):
    """A path of ``kind`` where a directory is expected, and the phrase naming it."""
    path = tmp_path / kind
    if kind == "file":
        path.write_text("not a model\n")
        return path, "is a regular file, not a directory"
    if kind == "fifo":
        os.mkfifo(path)
        return path, "is a FIFO, not a directory"
    if kind == "dangling":
        path.symlink_to(tmp_path / "gone")
        return path, "is a dangling symbolic link (to %s)" % (tmp_path / "gone")
    return path, "does not exist"


# -- a path that is not a directory where a model or fold directory goes ----------------------

@pytest.mark.parametrize("kind", ["file", "fifo", "dangling", "missing"])
def test_score_pauc_auto_says_the_model_directory_is_not_a_directory(data, tmp_path, kind):
    path, phrase = not_a_directory(tmp_path, kind)
    out = tmp_path / "scores"
    proc = run_tool("score-pauc-auto", path, "ark:%s" % (data / "train.ark"),
                    "ark:%s" % (data / "train.ark"), data / "trials", out)
    assert one_error(proc).endswith("Model directory %s %s" % (path, phrase))
    assert not out.exists()


@pytest.mark.parametrize("kind", ["file", "dangling"])
def test_combine_says_the_fold_directory_is_not_a_directory(data, tmp_path, kind):
    path, phrase = not_a_directory(tmp_path, kind)
    proc = run_tool("train-pauc-auto", *FAST, "--combine=%s" % path, *training(data),
                    tmp_path / "model")
    assert one_error(proc).endswith("Fold directory %s %s" % (path, phrase))
    assert not (tmp_path / "model").exists()


@pytest.mark.parametrize("stage", ["--fold-stage=0", "--fold-stage=1"])
def test_an_output_directory_that_is_a_file_is_refused_before_any_input(data, tmp_path, stage):
    """Before issue 42 the whole training ran, then 'File exists' (a fold job) or 'a file of
    that name exists' (the model); now the check of the outputs says it first."""
    path, phrase = not_a_directory(tmp_path, "file")
    extra = [stage, "--fold=1"] if stage.endswith("1") else []
    proc = run_tool("train-pauc-auto", *FAST, *extra, *training(data), path)
    assert one_error(proc).endswith("Cannot write the directory '%s': it exists and %s"
                                    % (path, phrase))
    assert "Read " not in proc.stderr.decode()          # no input was read
    assert path.read_text() == "not a model\n"


# -- an unusable TMPDIR for a spooled table ----------------------------------------------------

@contextlib.contextmanager
def unwritable_directory(path):
    """A directory nobody may create files in: mode 555, or (root ignores modes) immutable."""
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o555)
        undo = [sys.executable, "-c", "import os; os.chmod(%r, 0o755)" % str(path)]
    else:
        chattr = need_program("chattr")
        if subprocess.run([chattr, "+i", str(path)]).returncode != 0:
            pytest.fail("chattr +i %s failed: no unwritable directory for root" % path)
        undo = [chattr, "-i", str(path)]
    try:
        probe = path / "probe"
        with pytest.raises(OSError):
            probe.write_text("x")
        yield path
    finally:
        subprocess.run(undo, check=True)


def run_with_tmpdir(tmpdir, name, *args):
    env = dict(tool_env(), TMPDIR=str(tmpdir))
    return subprocess.run([sys.executable, str(BIN / name), *map(str, args)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("kind", ["missing", "file", "dangling", "read-only"])
@pytest.mark.parametrize("tool", ["train-pauc-auto", "train-lda"])
def test_an_unusable_tmpdir_is_one_error_naming_it_and_why(data, tmp_path, kind, tool):
    """No silent fallback to /tmp (kaldi_io/temp_dir.py says why): one ERROR naming TMPDIR,
    its value and the cause, and no output."""
    out = tmp_path / "out"
    with contextlib.ExitStack() as stack:
        if kind == "read-only":
            tmpdir = stack.enter_context(unwritable_directory(tmp_path / "ro"))
            phrase = "is not writable ("
        else:
            tmpdir, phrase = not_a_directory(tmp_path, {"missing": "missing"}.get(kind, kind))
        if tool == "train-pauc-auto":
            table = piped(data)
            proc = run_with_tmpdir(tmpdir, tool, *FAST, "--in-memory-mb=0", table,
                                   "ark:%s" % (data / "spk2utt"), out)
        else:
            table = "ark:%s" % (data / "train.ark")
            proc = run_with_tmpdir(tmpdir, tool, "--dim=4", table,
                                   "ark:%s" % (data / "utt2spk"), out)
    line = one_error(proc)
    assert "TMPDIR=%s %s" % (tmpdir, phrase) in line, line
    assert "vectors of %s" % table in line and "unset it" in line
    assert not out.exists()


def test_a_usable_tmpdir_holds_the_spooled_table(data, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = run_with_tmpdir(scratch, "train-pauc-auto", *FAST, "--in-memory-mb=0",
                           piped(data), "ark:%s" % (data / "spk2utt"), tmp_path / "model")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "spooled to an unlinked temporary file in %s " % scratch in proc.stderr.decode()
    assert list(scratch.iterdir()) == []                 # unlinked: nothing left behind


def test_a_table_read_again_from_its_archive_needs_no_tmpdir(data, tmp_path):
    """An archive file is read again where it is: TMPDIR is not looked at (unusable here)."""
    tmpdir, _ = not_a_directory(tmp_path, "missing")
    proc = run_with_tmpdir(tmpdir, "train-pauc-auto", *FAST, "--in-memory-mb=0",
                           *training(data), tmp_path / "model")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "read again from the archives they are in" in proc.stderr.decode()


# -- a NumPy file where a Kaldi table goes ----------------------------------------------------

def numpy_error(line, path, what):
    assert "%s is a NumPy %s" % (path, what) in line, line
    assert "import-vectors" in line, line


@pytest.mark.parametrize("prefix,expected", [("", "Kaldi table"), ("ark:", "Kaldi archive"),
                                             ("scp:", "Kaldi script file")])
@pytest.mark.parametrize("tool", ["train-plda", "train-lda", "compute-vector-mean",
                                  "score-cosine-trials", "train-pauc-auto", "copy-vectors"])
def test_a_numpy_file_given_as_a_vector_table_says_so(data, tmp_path, prefix, expected, tool):
    npy = data / "vectors.npy"
    table = prefix + str(npy)
    spk2utt = "ark:%s" % (data / "spk2utt")
    args = {"train-plda": [spk2utt, table, tmp_path / "plda"],
            "train-lda": [table, "ark:%s" % (data / "utt2spk"), tmp_path / "lda"],
            "compute-vector-mean": [spk2utt, table, "ark:%s" % (tmp_path / "spk.ark")],
            "score-cosine-trials": [data / "trials", table, table, tmp_path / "scores"],
            "train-pauc-auto": [*FAST, table, spk2utt, tmp_path / "model"],
            "copy-vectors": [table, "ark:%s" % (tmp_path / "x.ark")]}[tool]
    line = one_error(run_tool(tool, *args))
    numpy_error(line, npy, ".npy file")
    if tool != "copy-vectors" or prefix:           # copy-vectors takes x.npy for a vector file
        assert "not a %s" % expected in line, line
    assert "--keys=" in line
    assert not any(p.exists() for p in args if str(p).startswith(str(tmp_path)))


def test_an_npz_archive_and_an_npy_mean_or_script_entry_say_so_too(data, tmp_path):
    npz, npy = data / "vectors.npz", data / "vectors.npy"
    numpy_error(one_error(run_tool("copy-vectors", "ark:%s" % npz, "ark:%s" % (tmp_path / "o"))),
                npz, ".npz file (a zip archive)")
    line = one_error(run_tool("subtract-vector-mean", npy, "ark:%s" % (data / "train.ark"),
                              "ark:%s" % (tmp_path / "o")))
    numpy_error(line, npy, ".npy file")
    assert "not a Kaldi object" in line
    scp = tmp_path / "npy.scp"
    scp.write_text("utt1 %s\n" % npy)
    line = one_error(run_tool("copy-vectors", "scp:%s" % scp, "ark:%s" % (tmp_path / "o")))
    assert "Failed to read key 'utt1' from script %s" % scp in line
    numpy_error(line, npy, ".npy file")
    proc = subprocess.run([sys.executable, str(BIN / "copy-vectors"), "ark:-",
                           "ark:%s" % (tmp_path / "o")], stdin=open(npy, "rb"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env())
    numpy_error(one_error(proc), "standard input", ".npy file")
    assert not (tmp_path / "o").exists()
