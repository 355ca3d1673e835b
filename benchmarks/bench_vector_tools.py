#!/usr/bin/env python3
"""Our streaming vector tools against their real Kaldi twins (issue 18 items 1-2).

Writes (or takes, --archive) a binary float-vector archive of N x D (default 200,000 x 512,
the paper-scale training table, keys of one length as Kaldi recipes make them), then for each
tool runs ours (``bin/<tool>``) and the Kaldi twin on the same file, one after the other,
--repeats times, each writing a binary archive in the work folder. Per run: wall time,
CPU (user+sys) and peak RSS of the child (``/usr/bin/time``). Prints the median of each,
the ratio ours/Kaldi of the median walls, whether the outputs are byte-identical, and the load
average (``uptime``) before and after; figures taken at a load above the core count are upper
bounds.

    PAUC_KALDI_ROOT=/root/.cache/pauc-backend/kaldi-ref \\
        python benchmarks/bench_vector_tools.py [--num 200000] [--dim 512] [--repeats 3]

transform-plda-latent has no Kaldi twin (ivector-plda-scoring transforms inside scoring): it
is timed alone, for memory.
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

from pauc_backend.kaldi_io import write_matrix, write_plda, write_vector_table  # noqa: E402


def kaldi_root():
    root = os.environ.get("PAUC_KALDI_ROOT") or os.path.join(
        os.path.expanduser("~"), ".cache", "pauc-backend", "kaldi-ref")
    return os.path.join(root, "bin")


def make_inputs(work, num, dim, archive):
    rng = np.random.default_rng(0)
    if archive is None:
        archive = os.path.join(work, "in.ark")
        keys = ["utt%07d" % i for i in range(num)]
        block = 20000
        with open(archive, "wb") as out:
            for begin in range(0, num, block):
                part = os.path.join(work, "part.ark")
                X = rng.standard_normal((min(block, num - begin), dim)).astype(np.float32)
                write_vector_table("ark:" + part, keys[begin:begin + len(X)], X + 0.5)
                with open(part, "rb") as handle:
                    out.write(handle.read())
        os.unlink(part)
    subprocess.run([os.path.join(REPO, "bin", "compute-vector-mean"), "--binary=true",
                    "ark:" + archive, os.path.join(work, "mean.vec")], check=True,
                   stderr=subprocess.DEVNULL)
    M = rng.standard_normal((dim, dim + 1)).astype(np.float32) / np.sqrt(dim)
    write_matrix(os.path.join(work, "transform.mat"), M)
    A = rng.standard_normal((dim, dim)) / np.sqrt(dim)
    write_plda(os.path.join(work, "plda"), np.zeros(dim), A, np.abs(rng.standard_normal(dim)))
    return archive


def tools(work, archive):
    """(name, our argv, Kaldi argv or None, our output, Kaldi output)."""
    ours = lambda tool: os.path.join(REPO, "bin", tool)  # noqa: E731
    kaldi = lambda tool: os.path.join(kaldi_root(), tool)  # noqa: E731
    src = "ark:" + archive
    out_o, out_k = os.path.join(work, "ours.ark"), os.path.join(work, "kaldi.ark")
    mean = os.path.join(work, "mean.vec")
    mat = os.path.join(work, "transform.mat")
    return [
        ("copy-vectors / copy-vector", [ours("copy-vectors"), src, "ark:" + out_o],
         [kaldi("copy-vector"), src, "ark:" + out_k], out_o, out_k),
        ("normalize-vector-length / ivector-normalize-length",
         [ours("normalize-vector-length"), src, "ark:" + out_o],
         [kaldi("ivector-normalize-length"), src, "ark:" + out_k], out_o, out_k),
        ("compute-vector-mean / ivector-mean",
         [ours("compute-vector-mean"), src, out_o + ".vec"],
         [kaldi("ivector-mean"), src, out_k + ".vec"], out_o + ".vec", out_k + ".vec"),
        ("subtract-vector-mean mean.vec / ivector-subtract-global-mean mean.vec",
         [ours("subtract-vector-mean"), mean, src, "ark:" + out_o],
         [kaldi("ivector-subtract-global-mean"), mean, src, "ark:" + out_k], out_o, out_k),
        ("transform-vectors / transform-vec",
         [ours("transform-vectors"), mat, src, "ark:" + out_o],
         [kaldi("transform-vec"), mat, src, "ark:" + out_k], out_o, out_k),
        ("transform-plda-latent (no twin)",
         [ours("transform-plda-latent"), os.path.join(work, "plda"), src, "ark:" + out_o],
         None, out_o, None),
    ]


def run(argv, work):
    """(wall, CPU, peak RSS MB) of one run. RSS and CPU come from /usr/bin/time (a small C
    parent: a child forked from this Python would inherit its RSS high-water mark)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    report = os.path.join(work, "time.txt")
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", report] + argv,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit("%s failed (%d): %s" % (" ".join(argv), proc.returncode,
                                                   proc.stderr.decode(errors="replace")[-500:]))
    with open(report) as handle:
        user, system, rss_kb = handle.read().split()[-3:]
    return wall, float(user) + float(system), int(rss_kb) / 1024.0


def uptime():
    return subprocess.run(["uptime"], stdout=subprocess.PIPE, text=True).stdout.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num", type=int, default=200000)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--archive", help="an existing binary float-vector archive to use")
    parser.add_argument("--only", help="run only tools whose name contains this")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_vector_tools.") as work:
        archive = make_inputs(work, args.num, args.dim, args.archive)
        size = os.path.getsize(archive)
        print("archive: %s (%.0f MB); load before: %s" % (
            args.archive or "%d x %d generated" % (args.num, args.dim), size / 1e6, uptime()))
        rows = []
        for name, ours, kaldi, out_o, out_k in tools(work, archive):
            if args.only and args.only not in name:
                continue
            runs_o, runs_k = [], []
            for _ in range(args.repeats):
                runs_o.append(run(ours, work))
                if kaldi is not None:
                    runs_k.append(run(kaldi, work))
            same = ""
            if kaldi is not None:
                with open(out_o, "rb") as a, open(out_k, "rb") as b:
                    same = "yes" if a.read() == b.read() else "NO"
            med = lambda runs, i: statistics.median(r[i] for r in runs)  # noqa: E731
            row = [name, med(runs_o, 2), med(runs_o, 0), med(runs_o, 1)]
            if runs_k:
                row += [med(runs_k, 2), med(runs_k, 0), med(runs_k, 1),
                        med(runs_o, 0) / med(runs_k, 0), same]
            rows.append(row)
        print("load after: %s" % uptime())
        print()
        print("| ours / Kaldi twin | peak RSS (MB) | wall (s) | CPU (s) | wall ratio "
              "| same bytes |")
        print("|---|---|---|---|---|---|")
        for row in rows:
            if len(row) > 4:
                print("| `%s` | %.0f / %.0f | %.2f / %.2f | %.2f / %.2f | %.2fx | %s |" % (
                    row[0], row[1], row[4], row[2], row[5], row[3], row[6], row[7], row[8]))
            else:
                print("| `%s` | %.0f | %.2f | %.2f | | |" % tuple(row))


if __name__ == "__main__":
    main()
