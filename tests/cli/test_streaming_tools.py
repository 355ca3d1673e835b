"""The vector tools stream (issue 18): memory does not grow with the table, a pipe of them
emits its first vector before its input ends, and streaming writes what reading the whole
table wrote (bytes checked against the library's whole-table functions)."""

import os
import select
import struct
import subprocess
import time

import numpy as np
import pytest
from conftest import run_tool, tool_env
from test_training_memory import peak_rss_bytes

from pauc_backend.kaldi_io import read_vector_table, write_matrix, write_vector, write_vector_table
from pauc_backend.models.preprocessing import (apply_affine, global_mean, normalize_length,
                                               subtract_mean)

def make_archive(path, num, dim, seed=0):
    """A binary float-vector archive of num x dim, written a block at a time."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as out:
        for begin in range(0, num, 5000):
            count = min(5000, num - begin)
            X = rng.standard_normal((count, dim)).astype("<f4") + np.float32(0.25)
            head = b"\0BFV \x04" + struct.pack("<i", dim)
            out.write(b"".join(b"u%07d " % (begin + i) + head + X[i].tobytes()
                               for i in range(count)))


@pytest.mark.parametrize("tool,extra", [("normalize-vector-length", []),
                                        ("copy-vectors", []),
                                        ("subtract-vector-mean", []),
                                        ("compute-vector-mean", None),
                                        ("transform-vectors", ["T"])])
def test_peak_memory_does_not_grow_with_the_table(tmp_path, tool, extra):
    """A table 12x larger (5 MB -> 63 MB of float32 vectors) adds at most a quarter of the
    added table to the tool's own peak RSS (os.wait4, test_training_memory's launcher).

    A tool that held the table would add at least the whole 58 MB (the vectors alone); one that
    streams adds what the allocator keeps: measured 2026-11-26 (load 4.5, 2 cores) -0.1 to
    5.1 MB, so the bound (14.5 MB) leaves about 3x headroom on the worst tool and fails a
    whole-table reader by 4x."""
    dim = 64
    write_matrix(tmp_path / "T", np.eye(dim, dtype=np.float32))
    peaks, sizes = [], []
    for num in (20000, 240000):
        make_archive(tmp_path / "in.ark", num, dim)
        sizes.append((tmp_path / "in.ark").stat().st_size)
        if extra is None:
            args = ["ark:%s" % (tmp_path / "in.ark"), str(tmp_path / "mean.vec")]
        else:
            args = [str(tmp_path / e) for e in extra] + [
                "ark:%s" % (tmp_path / "in.ark"), "ark:%s" % (tmp_path / "out.ark")]
        peaks.append(peak_rss_bytes([tool] + args, os.devnull, tmp_path))
    assert peaks[1] - peaks[0] <= 0.25 * (sizes[1] - sizes[0]), (
        "peak RSS %s MB for tables of %s MB" % ([round(p / 2 ** 20, 1) for p in peaks],
                                                [round(n / 2 ** 20, 1) for n in sizes]))


def read_available(stream, size, timeout):
    """Up to ``size`` bytes of a pipe, waiting at most ``timeout`` seconds for them."""
    got = b""
    end = time.monotonic() + timeout
    while len(got) < size and time.monotonic() < end:
        ready, _, _ = select.select([stream], [], [], max(0.0, end - time.monotonic()))
        if not ready:
            break
        data = os.read(stream.fileno(), size - len(got))
        if not data:
            break
        got += data
    return got


@pytest.mark.parametrize("pipeline", [
    "normalize-vector-length ark:- ark:-",
    "copy-vectors ark:- ark:- | subtract-vector-mean {mean} ark:- ark:- "
    "| normalize-vector-length ark:- ark,t:-",
])
def test_a_pipe_emits_its_first_vector_before_its_input_ends(tmp_path, pipeline):
    write_vector(tmp_path / "mean.vec", np.zeros(4, np.float32), binary=True)
    command = pipeline.format(mean=tmp_path / "mean.vec")
    proc = subprocess.Popen(["bash", "-c", command], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env())
    try:
        head = b"\0BFV \x04" + struct.pack("<i", 4)
        proc.stdin.write(b"".join(b"a%d " % i + head + np.full(4, i + 1, "<f4").tobytes()
                                  for i in range(3)))
        proc.stdin.flush()  # and keep stdin open: the writer has not finished
        first = read_available(proc.stdout, 1, timeout=60)
        assert first, "no output while the input was still open"
        assert proc.poll() is None
        proc.stdin.write(b"a9 " + head + np.full(4, 2, "<f4").tobytes())
        proc.stdin.close()
        rest = proc.stdout.read()
        assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = first + rest
    if b"ark,t" in command.encode():
        assert out.decode().count("[") == 4 and out.decode().startswith("a0  [ ")
    else:
        assert out.count(b"\0BFV") == 4 and out.startswith(b"a0 ")


@pytest.fixture
def table(tmp_path):
    """5,000 vectors with keys of several lengths and a few odd records (text, tab, DV)."""
    rng = np.random.default_rng(7)
    keys = ["s%d-u%d" % (i % 13, i) for i in range(5000)]
    X = rng.standard_normal((5000, 24)).astype(np.float32) + np.float32(0.5)
    write_vector_table("ark:%s" % (tmp_path / "a.ark"), keys[:2500], X[:2500])
    write_vector_table("ark,t:%s" % (tmp_path / "b.ark"), keys[2500:2510], X[2500:2510])
    write_vector_table("ark:%s" % (tmp_path / "c.ark"), keys[2510:], X[2510:])
    with open(tmp_path / "in.ark", "wb") as out:
        for name in "abc":
            out.write((tmp_path / ("%s.ark" % name)).read_bytes())
    keys, X = read_vector_table("ark:%s" % (tmp_path / "in.ark"))
    return tmp_path, keys, X


def test_streamed_tools_write_what_the_whole_table_functions_write(table):
    tmp_path, keys, X = table
    src = "ark:%s" % (tmp_path / "in.ark")
    M = np.random.default_rng(8).standard_normal((10, 25)).astype(np.float32)
    write_matrix(tmp_path / "M", M)
    mean = np.random.default_rng(9).standard_normal(24).astype(np.float32)
    write_vector(tmp_path / "mean.vec", mean)
    cases = [
        (["normalize-vector-length"], normalize_length(X)[0]),
        (["transform-vectors", tmp_path / "M"], apply_affine(M, X)),
        (["subtract-vector-mean", tmp_path / "mean.vec"], subtract_mean(X, mean)[0]),
        (["copy-vectors", "--scale=0.5"], X * np.float32(0.5)),
        (["copy-vectors", "--change-dim=30"], np.pad(X, ((0, 0), (0, 6)))),
    ]
    for argv, expected in cases:
        for out in ("ark,scp:%s,%s" % (tmp_path / "o.ark", tmp_path / "o.scp"), "ark,t:-"):
            proc = run_tool(argv[0], *argv[1:], src, out, check=True)
            ref = "ark,scp:%s,%s" % (tmp_path / "r.ark", tmp_path / "r.scp") \
                if out.startswith("ark,scp") else "ark,t:%s" % (tmp_path / "r.txt")
            write_vector_table(ref, keys, expected)
            if out == "ark,t:-":
                assert proc.stdout == (tmp_path / "r.txt").read_bytes(), argv
            else:
                assert (tmp_path / "o.ark").read_bytes() == (tmp_path / "r.ark").read_bytes()
                assert (tmp_path / "o.scp").read_text() == \
                    (tmp_path / "r.scp").read_text().replace("r.ark", "o.ark")
    run_tool("compute-vector-mean", "--binary=true", src, tmp_path / "m.vec", check=True)
    write_vector(tmp_path / "r.vec", global_mean(X), binary=True)
    assert (tmp_path / "m.vec").read_bytes() == (tmp_path / "r.vec").read_bytes()


def test_copy_keeps_the_input_bytes_of_canonical_records(table):
    tmp_path = table[0]
    run_tool("copy-vectors", "ark:%s" % (tmp_path / "a.ark"), "ark:%s" % (tmp_path / "o.ark"),
             check=True)
    assert (tmp_path / "o.ark").read_bytes() == (tmp_path / "a.ark").read_bytes()


def test_transform_plda_latent_refuses_a_key_repeated_across_chunks(tmp_path):
    from pauc_backend.kaldi_io import write_plda
    dim = 8
    write_plda(tmp_path / "plda", np.zeros(dim), np.eye(dim), np.ones(dim))
    make_archive(tmp_path / "a.ark", 20000, dim)
    with open(tmp_path / "a.ark", "ab") as out:  # u0000007 again, far past the first chunk
        out.write(b"u0000007 \0BFV \x04" + struct.pack("<i", dim) + np.ones(dim, "<f4").tobytes())
    proc = run_tool("transform-plda-latent", tmp_path / "plda", "ark:%s" % (tmp_path / "a.ark"),
                    "ark:%s" % (tmp_path / "o.ark"))
    assert proc.returncode != 0
    assert b"Duplicate vector found for key u0000007" in proc.stderr
    assert not (tmp_path / "o.ark").exists()


def test_subtracting_the_own_mean_reads_a_file_twice_with_the_bytes_of_holding_it(table):
    """Without a mean file: a plain-file input is read twice (streamed), stdin is held; both
    write what the whole-table function writes."""
    tmp_path, keys, X = table
    write_vector_table("ark:%s" % (tmp_path / "r.ark"), keys, subtract_mean(X)[0])
    run_tool("subtract-vector-mean", "ark:%s" % (tmp_path / "in.ark"),
             "ark:%s" % (tmp_path / "o.ark"), check=True)
    assert (tmp_path / "o.ark").read_bytes() == (tmp_path / "r.ark").read_bytes()
    proc = run_tool("subtract-vector-mean", "ark:-", "ark:-",
                    input=(tmp_path / "in.ark").read_bytes(), check=True)
    assert proc.stdout == (tmp_path / "r.ark").read_bytes()
