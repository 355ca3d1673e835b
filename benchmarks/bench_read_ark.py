#!/usr/bin/env python3
"""Bulk-read speed of read_vector_table against the numpy bound (issue 2 §2).

Writes a binary ark (+scp) of N float vectors of dim D into a temporary folder, then times, as
the median of --repeats runs:
  * bound:  reading the same bytes and wrapping them with np.frombuffer (file, and stdin);
  * ours:   read_vector_table from ark:file, scp:file.scp and ark:- (stdin fed by `cat`).
Stdin runs are timed inside a child process fed by `cat file |`, excluding interpreter start.
Also times the variable-length-key case. Prints median seconds and the ratio to the bound.

    python benchmarks/bench_read_ark.py [--num 200000] [--dim 512] [--repeats 5]
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


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bound_file(path):
    with open(path, "rb") as handle:
        return np.frombuffer(handle.read(), dtype=np.uint8)


def stdin_time(path, mode, repeats):
    times = []
    for _ in range(repeats):
        out = subprocess.run("cat %s | %s -c %s %s" % (path, sys.executable,
                                                          _quote(CHILD), mode),
                             shell=True, check=True, stdout=subprocess.PIPE).stdout
        times.append(float(out))
    return statistics.median(times)


def _quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def report(label, seconds, bound):
    print("%-38s %8.3f s   ratio %.2f" % (label, seconds, seconds / bound))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num", type=int, default=200000)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.num, args.dim), dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("fixed-length keys", ["spk%05d-utt%07d" % (i // 50, i)
                                        for i in range(args.num)]),
                 ("variable-length keys", ["s%d-u%d" % (i // 50, i) for i in range(args.num)])]
        for title, keys in cases:
            ark, scp = os.path.join(tmp, "x.ark"), os.path.join(tmp, "x.scp")
            start = time.perf_counter()
            write_vector_table("ark,scp:%s,%s" % (ark, scp), keys, X)
            write_seconds = time.perf_counter() - start
            size = os.path.getsize(ark)
            print("\n%s: %d x %d float32, ark %.1f MB (written in %.2f s)" % (
                title, args.num, args.dim, size / 1e6, write_seconds))
            got_keys, got = read_vector_table("ark:" + ark)
            assert got_keys == keys and np.array_equal(got, X)
            bound = median_time(lambda: bound_file(ark), args.repeats)
            print("%-38s %8.3f s" % ("bound: file read + np.frombuffer", bound))
            report("read_vector_table ark:file", median_time(
                lambda: read_vector_table("ark:" + ark), args.repeats), bound)
            report("read_vector_table scp:file.scp", median_time(
                lambda: read_vector_table("scp:" + scp), args.repeats), bound)
            stdin_bound = stdin_time(ark, "bound", args.repeats)
            print("%-38s %8.3f s" % ("bound: stdin read + np.frombuffer", stdin_bound))
            report("read_vector_table ark:- (cat |)", stdin_time(ark, "ours", args.repeats),
                   stdin_bound)


if __name__ == "__main__":
    main()
