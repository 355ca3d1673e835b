"""Cost of --score-norm in the scoring tools: normalised vs plain scoring, end to end.

Synthetic vectors (dimension --dim): --enroll enrollment x --test test vectors, every pair a
trial (default 1000 x 1000 = 10^6 trials), a cohort of --cohort vectors (default 5,000).
Each tool (score-cosine-trials, score-plda-trials, score-pauc-trials) runs as a subprocess,
plain and with --score-norm=as --top-n=300; median wall and CPU (user + sys of the child) of
--repeats runs, ratio = normalised / plain (the issue asks for <= 1.5 at 10^6 trials with a
5,000-vector cohort). Record the load (printed) with the figures.

    python benchmarks/bench_score_norm.py [--enroll 1000] [--test 1000] [--cohort 5000]
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from pauc_backend.kaldi_io import write_matrix, write_plda, write_vector_table  # noqa: E402
from pauc_backend.models.plda import PLDA  # noqa: E402


def run(command, repeats):
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--enroll", type=int, default=1000)
    parser.add_argument("--test", type=int, default=1000)
    parser.add_argument("--cohort", type=int, default=5000)
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--top-n", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    speakers = rng.normal(size=(200, args.dim))

    def vectors(n):
        return speakers[rng.integers(0, 200, n)] + 0.7 * rng.normal(size=(n, args.dim))

    with tempfile.TemporaryDirectory() as folder:
        def path(name):
            return os.path.join(folder, name)

        ekeys = ["e%05d" % i for i in range(args.enroll)]
        tkeys = ["t%05d" % i for i in range(args.test)]
        write_vector_table("ark:" + path("enroll.ark"), ekeys, vectors(args.enroll))
        write_vector_table("ark:" + path("test.ark"), tkeys, vectors(args.test))
        write_vector_table("ark:" + path("cohort.ark"), ["c%05d" % i for i in range(args.cohort)],
                           vectors(args.cohort))
        labels = rng.integers(0, 200, 4000)
        plda = PLDA(num_em_iters=2).fit(speakers[labels] + 0.7 * rng.normal(
            size=(4000, args.dim)), labels)
        write_plda(path("plda"), plda.mean_, plda.transform_, plda.psi_)
        B = rng.normal(size=(args.dim, args.dim // 2))
        write_matrix(path("metric"), B @ B.T / args.dim)
        with open(path("trials"), "w") as f:
            f.writelines("%s %s\n" % (e, t) for e in ekeys for t in tkeys)
        inputs = ["ark:" + path("enroll.ark"), "ark:" + path("test.ark")]
        tools = {
            "score-cosine-trials": [path("trials")] + inputs + [path("out")],
            "score-plda-trials": [path("plda")] + inputs + [path("trials"), path("out")],
            "score-pauc-trials": [path("metric")] + inputs + [path("trials"), path("out")],
        }
        norm = ["--score-norm=as", "--cohort=ark:" + path("cohort.ark"),
                "--top-n=%d" % args.top_n]
        print("%d x %d = %d trials, cohort %d, dim %d, top-n %d; load before: %s" % (
            args.enroll, args.test, args.enroll * args.test, args.cohort, args.dim,
            args.top_n, " ".join("%.2f" % x for x in os.getloadavg())))
        for tool, rest in tools.items():
            command = [sys.executable, os.path.join(REPO, "bin", tool)]
            plain = run(command + rest, args.repeats)
            normed = run(command + norm + rest, args.repeats)
            print("%-20s plain %.2f s wall %.2f s cpu | as-norm %.2f s wall %.2f s cpu | "
                  "ratio wall %.2f cpu %.2f" % (tool, plain[0], plain[1], normed[0], normed[1],
                                                normed[0] / plain[0], normed[1] / plain[1]))
        print("load after: %s" % " ".join("%.2f" % x for x in os.getloadavg()))


if __name__ == "__main__":
    main()
