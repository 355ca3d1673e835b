#!/usr/bin/env python3
"""compute-eer-pauc on ten million 'score target|nontarget' lines (run by hand).

Prints the median wall and CPU (user + system) time of the whole tool (``compute-eer-pauc - <
file``: start-up, parsing, EER, minDCF, pAUC, AUC and AP) and of its two stages in-process, next
to baselines measured in the same run: the obvious numpy reader (``bytes.split`` +
``astype(float32)`` + label compare) followed by the EER alone, and Kaldi's ``compute-eer`` if it
is on PATH (or given with --compute-eer). For scale, Kaldi's compute-eer needs about 5.5 s for
the EER of such a file on this class of machine. CPU times are the fairer figures on a shared
machine: wall times grow with other processes' load.

    python benchmarks/bench_compute_eer.py [--lines 10000000] [--repeat 3] [--compute-eer PATH]
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from pauc_backend.kaldi_io.numbers import parse_score_labels  # noqa: E402
from pauc_backend.metrics import TrialScores  # noqa: E402
from pauc_backend.metrics.error_rates import kaldi_eer_sorted  # noqa: E402


def make_input(path, lines, seed=0):
    """Scores as ivector-plda-scoring prints them (%.7g of float32), 1% targets."""
    rng = np.random.default_rng(seed)
    step = 1_000_000
    with open(path, "w") as out:
        for begin in range(0, lines, step):
            n = min(step, lines - begin)
            is_target = rng.random(n) < 0.01
            scores = np.where(is_target, rng.normal(3, 2, n), rng.normal(-3, 2, n))
            values = scores.astype(np.float32).astype(np.float64).tolist()
            labels = np.where(is_target, "target", "nontarget").tolist()
            out.write("".join("%.7g %s\n" % pair for pair in zip(values, labels)))


def cpu_seconds():
    """CPU time of this process and its finished children (user + system)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(function, repeat):
    """Median (wall seconds, CPU seconds) over ``repeat`` runs, and the last result."""
    walls, cpus = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), cpu_seconds()
        result = function()
        walls.append(time.perf_counter() - start)
        cpus.append(cpu_seconds() - start_cpu)
    return (statistics.median(walls), statistics.median(cpus)), result


def baseline(data):
    tokens = data.split()
    scores = np.array(tokens[0::2]).astype(np.float32)
    is_target = np.array(tokens[1::2]) == b"target"
    return kaldi_eer_sorted(np.sort(scores[is_target]), np.sort(scores[~is_target]))


def ours_in_process(data):
    scores, is_target = parse_score_labels(data)
    return scores, is_target


def all_metrics(scores, is_target):
    return TrialScores.from_trials(scores, is_target).summary([0.01, 0.005])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--input", help="reuse this score file instead of making one")
    parser.add_argument("--compute-eer", default=shutil.which("compute-eer"),
                        help="Kaldi's compute-eer binary to time as well (default: from PATH)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.input or os.path.join(tmp, "scores.txt")
        if not args.input:
            make_input(path, args.lines)
        with open(path, "rb") as stream:
            data = stream.read()
        print("input: %d lines, %.0f MB; %d CPUs, load average %.1f" % (
            data.count(b"\n"), len(data) / 1e6, os.cpu_count(), os.getloadavg()[0]))

        def run(command):
            with open(path, "rb") as stream:
                return subprocess.run(command, stdin=stream, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, check=True).stdout

        rows = []
        tool = [sys.executable, os.path.join(ROOT, "bin", "compute-eer-pauc"), "-"]
        t_tool, eer_text = timed(lambda: run(tool), args.repeat)
        rows.append(("compute-eer-pauc - (whole tool, all metrics)", t_tool))
        t_parse, (scores, is_target) = timed(lambda: ours_in_process(data), args.repeat)
        rows.append(("  in-process parse (numpy fast path)", t_parse))
        t_metrics, _ = timed(lambda: all_metrics(scores, is_target), args.repeat)
        rows.append(("  in-process all metrics (one shared sort)", t_metrics))
        t_base, (base_eer, _) = timed(lambda: baseline(data), args.repeat)
        rows.append(("baseline: bytes.split + astype + EER only", t_base))
        assert eer_text.decode() == "%.4g" % (100 * base_eer), "EER differs from the baseline"
        if args.compute_eer:
            t_kaldi, kaldi_text = timed(lambda: run([args.compute_eer, "-"]), args.repeat)
            assert kaldi_text == eer_text, "EER differs from %s" % args.compute_eer
            rows.append(("%s - (EER only)" % args.compute_eer, t_kaldi))
        print("%-48s %8s %8s" % ("EER %s%%; median of %d runs" % (eer_text.decode(), args.repeat),
                                  "wall s", "CPU s"))
        for name, (wall, cpu) in rows:
            print("%-48s %8.2f %8.2f" % (name, wall, cpu))
        for name, (wall, cpu) in rows[3:]:
            print("ratio %s / compute-eer-pauc: wall %.2fx, CPU %.2fx" % (
                name.split(":")[0].split(" -")[0], wall / t_tool[0], cpu / t_tool[1]))


if __name__ == "__main__":
    main()
