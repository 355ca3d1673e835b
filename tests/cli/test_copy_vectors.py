"""copy-vectors against Kaldi's copy-vector: golden bytes, log wording, modes and failures."""

import os
import re

import numpy as np
import pytest
from conftest import run_shell, run_tool

from pauc_backend.kaldi_io import (TableWriter, read_vector, read_vector_table, write_vector,
                                   write_vector_table)

LOG = re.compile(r"^(LOG|WARNING|ERROR) \(copy-vectors\[pauc-backend [^\]]+\]:\S+\) (.*)$")


def log_messages(stderr):
    return [m.group(1) + " " + m.group(2)
            for m in map(LOG.match, stderr.decode().splitlines()) if m]


def kaldi_messages(path):
    return [re.sub(r"^(\w+) \(\S+\) ", r"\1 ", line)
            for line in path.read_text().splitlines()[1:]]


def test_text_subset_from_a_script_pipe_matches_copy_vector(golden, tmp_path):
    out = tmp_path / "subset.txt.ark"
    proc = run_tool("copy-vectors", "scp:head -n 10 data/train/xvector.scp |", "ark,t:%s" % out,
                    cwd=golden)
    assert proc.returncode == 0
    assert out.read_bytes() == (golden / "data/train/xvector_subset10.txt.ark").read_bytes()
    assert log_messages(proc.stderr) == kaldi_messages(
        golden / "logs/copy_vector_text_subset.log")
    assert proc.stderr.decode().splitlines()[0] == (
        "copy-vectors 'scp:head -n 10 data/train/xvector.scp |' ark,t:%s " % out)


def test_ark_to_ark_and_scp_is_byte_identical_with_kaldi_offsets(golden, tmp_path):
    proc = run_tool("copy-vectors", "scp:data/enroll/xvector.scp",
                    "ark,scp:%s,%s" % (tmp_path / "x.ark", tmp_path / "x.scp"), cwd=golden)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "x.ark").read_bytes() == (golden / "data/enroll/xvector.ark").read_bytes()
    scp = (tmp_path / "x.scp").read_text().replace(str(tmp_path / "x.ark"),
                                                   "data/enroll/xvector.ark")
    assert scp == (golden / "data/enroll/xvector.scp").read_text()
    assert log_messages(proc.stderr) == ["LOG Copied 119 vectors."]


def test_stdin_to_stdout_through_a_shell_pipeline(golden):
    proc = run_shell("cat exp/test_final.ark | copy-vectors ark:- ark:- | "
                     "copy-vectors ark:- ark,t:-", cwd=golden)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (golden / "exp/test_final.txt.ark").read_bytes()


def test_output_pipe_in_a_wspecifier(golden, tmp_path):
    out = tmp_path / "x.ark.gz"
    proc = run_tool("copy-vectors", "ark:exp/enroll_final.ark", "ark:| gzip -c > %s" % out,
                    cwd=golden)
    assert proc.returncode == 0, proc.stderr
    back = run_shell("gunzip -c %s" % out).stdout
    assert back == (golden / "exp/enroll_final.ark").read_bytes()


def test_mixing_a_table_and_a_file_is_an_error(golden, tmp_path):
    for args in (("ark:exp/enroll_final.ark", tmp_path / "v"),
                 ("exp/mean.vec", "ark:%s" % (tmp_path / "a.ark"))):
        proc = run_tool("copy-vectors", *args, cwd=golden)
        assert proc.returncode == 255
        assert log_messages(proc.stderr) == [
            "ERROR Cannot mix archives with regular files (copying vectors)"]
        assert os.listdir(tmp_path) == []


def test_file_mode_reads_a_double_vector_and_writes_float(golden, tmp_path):
    proc = run_tool("copy-vectors", "exp/mean_bin.vec", tmp_path / "m.vec", cwd=golden)
    assert proc.returncode == 0
    assert log_messages(proc.stderr) == ["LOG Copied vector to %s" % (tmp_path / "m.vec")]
    copied = read_vector(tmp_path / "m.vec")
    assert copied.dtype == np.float32
    assert np.array_equal(copied, read_vector(golden / "exp/mean_bin.vec").astype(np.float32))
    text = run_tool("copy-vectors", "--binary=false", tmp_path / "m.vec", "-").stdout
    assert text == b" [ " + b"".join(b"%.7g " % v for v in copied.tolist()) + b"]\n"


def test_file_mode_ignores_scale_like_kaldi_but_warns(golden, tmp_path):
    proc = run_tool("copy-vectors", "--scale=2", "exp/mean_bin.vec", tmp_path / "m.vec",
                    cwd=golden)
    assert proc.returncode == 0
    messages = log_messages(proc.stderr)
    assert messages[0].startswith("WARNING --scale=2 is ignored")
    assert np.array_equal(read_vector(tmp_path / "m.vec"),
                          read_vector(golden / "exp/mean_bin.vec").astype(np.float32))


@pytest.mark.parametrize("dim", [10, 64, 70])
def test_change_dim_truncates_or_zero_pads_tables_and_files(golden, tmp_path, dim):
    proc = run_tool("copy-vectors", "--change-dim=%d" % dim, "scp:data/enroll/xvector.scp",
                    "ark:%s" % (tmp_path / "x.ark"), cwd=golden)
    assert proc.returncode == 0
    assert log_messages(proc.stderr) == [
        "LOG Copied 119 vectors, setting dim to %d scaled by 1" % dim]
    keys, X = read_vector_table("ark:%s" % (tmp_path / "x.ark"))
    ref_keys, ref = read_vector_table("ark:%s" % (golden / "data/enroll/xvector.ark"))
    assert keys == ref_keys and X.shape == (119, dim)
    keep = min(dim, 64)
    assert np.array_equal(X[:, :keep], ref[:, :keep]) and not X[:, keep:].any()
    run_tool("copy-vectors", "--change_dim=%d" % dim, "exp/mean.vec", tmp_path / "m.vec",
             cwd=golden, check=True)
    assert read_vector(tmp_path / "m.vec").shape == (dim,)


def test_scale_multiplies_table_vectors_in_float32(golden, tmp_path):
    proc = run_tool("copy-vectors", "--scale=0.5", "ark:exp/enroll_final.ark",
                    "ark:%s" % (tmp_path / "x.ark"), cwd=golden)
    assert log_messages(proc.stderr) == [
        "LOG Copied 40 vectors, setting dim to -1 scaled by 0.5"]
    _, X = read_vector_table("ark:%s" % (tmp_path / "x.ark"))
    _, ref = read_vector_table("ark:%s" % (golden / "exp/enroll_final.ark"))
    assert np.array_equal(X, ref * np.float32(0.5))


def test_double_vector_table_is_converted_to_float(tmp_path):
    keys = ["a", "bb", "ccc"]
    values = np.random.default_rng(0).standard_normal((3, 5))
    with TableWriter("ark:%s" % (tmp_path / "d.ark"), "double_vector") as writer:
        for key, row in zip(keys, values):
            writer.write(key, row)
    assert b"DV" in (tmp_path / "d.ark").read_bytes()
    run_tool("copy-vectors", "ark:%s" % (tmp_path / "d.ark"), "ark:%s" % (tmp_path / "f.ark"),
             check=True)
    raw = (tmp_path / "f.ark").read_bytes()
    assert raw.count(b"FV ") == 3 and b"DV" not in raw
    got_keys, X = read_vector_table("ark:%s" % (tmp_path / "f.ark"))
    assert got_keys == keys and np.array_equal(X, values.astype(np.float32))


def test_vectors_of_different_dims_are_copied_one_by_one(tmp_path):
    with TableWriter("ark:%s" % (tmp_path / "r.ark")) as writer:
        writer.write("short", np.arange(2, dtype=np.float32))
        writer.write("long", np.arange(7, dtype=np.float32))
    run_tool("copy-vectors", "ark:%s" % (tmp_path / "r.ark"), "ark:%s" % (tmp_path / "c.ark"),
             check=True)
    assert (tmp_path / "c.ark").read_bytes() == (tmp_path / "r.ark").read_bytes()


def test_empty_table_is_one_error_and_writes_nothing(tmp_path):
    # issue 10: Kaldi exits 1 silently with an empty output; we say why and write nothing
    (tmp_path / "empty.ark").write_bytes(b"")
    proc = run_tool("copy-vectors", "ark:%s" % (tmp_path / "empty.ark"),
                    "ark:%s" % (tmp_path / "out.ark"))
    assert proc.returncode == 255
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert len(errors) == 1 and "No vectors read from ark:" in errors[0]
    assert [m for m in log_messages(proc.stderr) if m.startswith("LOG")] == []
    assert not (tmp_path / "out.ark").exists()


def test_truncated_archive_fails_without_leaving_an_output(golden, tmp_path):
    raw = (golden / "exp/enroll_final.ark").read_bytes()
    (tmp_path / "cut.ark").write_bytes(raw[:-7])
    proc = run_tool("copy-vectors", "ark:%s" % (tmp_path / "cut.ark"),
                    "ark,scp:%s,%s" % (tmp_path / "o.ark", tmp_path / "o.scp"))
    assert proc.returncode == 255
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 2 and lines[1].startswith("ERROR (copy-vectors[")
    assert "ev040" in lines[1] and "truncated" in lines[1] and "cut.ark" in lines[1]
    assert sorted(os.listdir(tmp_path)) == ["cut.ark"]


@pytest.mark.parametrize("source,expected", [
    ("ark:no/such.ark", "no/such.ark"),
    ("scp:no/such.scp", "no/such.scp"),
    ("ark:false |", "false"),
    ("ark:cat no-such-file |", "cat no-such-file"),
])
def test_missing_inputs_and_failing_pipes_are_one_error_line(tmp_path, source, expected):
    proc = run_tool("copy-vectors", source, "ark:%s" % (tmp_path / "o.ark"))
    assert proc.returncode == 255
    errors = [m for m in log_messages(proc.stderr) if m.startswith("ERROR")]
    assert len(errors) == 1 and expected in errors[0]
    assert "Traceback" not in proc.stderr.decode()
    assert not (tmp_path / "o.ark").exists()


def test_missing_scp_target_names_the_key(tmp_path):
    (tmp_path / "x.scp").write_text("utt1 %s:0\n" % (tmp_path / "gone.ark"))
    proc = run_tool("copy-vectors", "scp:%s" % (tmp_path / "x.scp"), "ark:/dev/null")
    assert proc.returncode == 255
    error = log_messages(proc.stderr)[-1]
    assert "utt1" in error and "gone.ark" in error


def test_failing_output_pipe_is_an_error(golden):
    proc = run_tool("copy-vectors", "ark:exp/enroll_final.ark", "ark:| cat > /dev/null; exit 3",
                    cwd=golden)
    assert proc.returncode == 255
    assert "exit status 3" in log_messages(proc.stderr)[-1]


def test_written_files_are_readable_by_the_library_round_trip(tmp_path):
    X = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    write_vector_table("ark:%s" % (tmp_path / "a.ark"), ["k1", "k2", "k3", "k4"], X)
    run_tool("copy-vectors", "ark:%s" % (tmp_path / "a.ark"),
             "ark,t:%s" % (tmp_path / "t.ark"), check=True)
    _, back = read_vector_table("ark:%s" % (tmp_path / "t.ark"))
    np.testing.assert_allclose(back, X, rtol=1e-6)
    write_vector(tmp_path / "v", X[0])
    run_tool("copy-vectors", "--binary=false", tmp_path / "v", tmp_path / "v.txt", check=True)
    np.testing.assert_allclose(read_vector(tmp_path / "v.txt"), X[0], rtol=1e-6)
