#!/usr/bin/env python3
"""Bulk-read speed of read_vector_table against the numpy bound (issue 2 §2).

Writes a binary ark (+scp) of N float vectors of dim D into a temporary folder, then, for each
of --repeats rounds, times back to back (so machine load hits both alike):
  * bound:  reading the same bytes and wrapping them with np.frombuffer;
  * ours:   read_vector_table from ark:file, scp:file.scp, and ark:- (stdin fed by `cat`).
Stdin runs are timed inside a child process fed by `cat file |` (interpreter start and imports
excluded), against the same child reading sys.stdin.buffer + np.frombuffer. Done for keys of
one length (the fixed-stride path) and of varying length. Prints the median seconds and the
median of the per-round ratios ours / bound.

    python benchmarks/bench_read_ark.py [--num 200000] [--dim 512] [--repeats 7]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from pauc_backend.kaldi_io import read_vector_table, write_vector_table  # noqa: E402

CHILD = """
import sys, time
sys.path.insert(0, %r)
import numpy as np
from pauc_backend.kaldi_io import read_vector_table
start = time.perf_counter()
if sys.argv[1] == "bound":
    data = np.frombuffer(sys.stdin.buffer.read(), dtype=np.uint8)
else:
    keys, X = read_vector_table("ark:-")
print(time.perf_counter() - start)
""" % REPO


def timed(fn):
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    del result
    return seconds


def bound_file(path):
    with open(path, "rb") as handle:
        return np.frombuffer(handle.read(), dtype=np.uint8)


def stdin_run(path, mode):
    command = "cat %s | %s -c %s %s" % (path, sys.executable, _quote(CHILD), mode)
    return float(subprocess.run(command, shell=True, check=True,
                                stdout=subprocess.PIPE).stdout)


def _quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def summary(label, ours, bound):
    ratios = [o / b for o, b in zip(ours, bound)]
    print("  %-34s %7.3f s   ratio %.2f  (per-round ratios %s)" % (
        label, statistics.median(ours), statistics.median(ratios),
        " ".join("%.2f" % r for r in ratios)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num", type=int, default=200000)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.num, args.dim), dtype=np.float32)
    cases = [("keys of one length", ["spk%05d-utt%07d" % (i // 50, i) for i in range(args.num)]),
             ("keys of varying length", ["s%d-u%d" % (i // 50, i) for i in range(args.num)])]
    with tempfile.TemporaryDirectory() as tmp:
        for title, keys in cases:
            ark, scp = os.path.join(tmp, "x.ark"), os.path.join(tmp, "x.scp")
            write_seconds = timed(lambda: write_vector_table("ark,scp:%s,%s" % (ark, scp),
                                                             keys, X))
            print("\n%s: %d x %d float32, ark %.1f MB (written in %.2f s)" % (
                title, args.num, args.dim, os.path.getsize(ark) / 1e6, write_seconds))
            got_keys, got = read_vector_table("ark:" + ark)
            assert got_keys == keys and np.array_equal(got, X)
            del got
            times = {name: [] for name in ("bound", "ark", "scp", "stdin bound", "stdin")}
            for _ in range(args.repeats):
                times["bound"].append(timed(lambda: bound_file(ark)))
                times["ark"].append(timed(lambda: read_vector_table("ark:" + ark)))
                times["scp"].append(timed(lambda: read_vector_table("scp:" + scp)))
                times["stdin bound"].append(stdin_run(ark, "bound"))
                times["stdin"].append(stdin_run(ark, "ours"))
            print("  %-34s %7.3f s" % ("bound: file read + np.frombuffer",
                                       statistics.median(times["bound"])))
            summary("read_vector_table ark:file", times["ark"], times["bound"])
            summary("read_vector_table scp:file.scp", times["scp"], times["bound"])
            print("  %-34s %7.3f s" % ("bound: stdin read + np.frombuffer",
                                       statistics.median(times["stdin bound"])))
            summary("read_vector_table ark:- (cat |)", times["stdin"], times["stdin bound"])


if __name__ == "__main__":
    main()
