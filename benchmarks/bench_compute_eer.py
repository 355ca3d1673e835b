#!/usr/bin/env python3
"""compute-eer-pauc on ten million 'score target|nontarget' lines (run by hand).

Prints the median wall time of the whole tool (``compute-eer-pauc - < file``: start-up, parsing,
EER, minDCF, pAUC, AUC and AP) and of its two stages in-process, next to a baseline measured in
the same run: the obvious numpy reader (``bytes.split`` + ``astype(float32)`` + label compare)
followed by the EER alone. For scale, Kaldi's compute-eer needs about 5.5 s for the EER of such
a file on this class of machine.

    python benchmarks/bench_compute_eer.py [--lines 10000000] [--repeat 3]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from pauc_backend.cli.score_label_input import parse_score_labels  # noqa: E402
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


def timed(function, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.input or os.path.join(tmp, "scores.txt")
        if not args.input:
            make_input(path, args.lines)
        size = os.path.getsize(path)
        with open(path, "rb") as stream:
            data = stream.read()
        lines = data.count(b"\n")
        print("input: %d lines, %.0f MB; %d CPUs, load average %.1f" % (
            lines, size / 1e6, os.cpu_count(), os.getloadavg()[0]))

        def tool():
            with open(path, "rb") as stream:
                command = [sys.executable, os.path.join(ROOT, "bin", "compute-eer-pauc"), "-"]
                proc = subprocess.run(command, stdin=stream, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, check=True)
            return proc.stdout

        t_tool, eer_text = timed(tool, args.repeat)
        t_base, (base_eer, _) = timed(lambda: baseline(data), args.repeat)
        t_parse, (scores, is_target) = timed(lambda: ours_in_process(data), args.repeat)
        t_metrics, summary = timed(lambda: all_metrics(scores, is_target), args.repeat)
        assert eer_text.decode() == "%.4g" % (100 * base_eer), "EER differs from the baseline"
        print("compute-eer-pauc - (whole tool, all metrics): %6.2f s   EER %s%%" % (
            t_tool, eer_text.decode()))
        print("  in-process parse (numpy fast path):          %6.2f s" % t_parse)
        print("  in-process all metrics (one shared sort):    %6.2f s" % t_metrics)
        print("baseline: bytes.split + astype + EER only:     %6.2f s" % t_base)
        print("ratio baseline / whole tool:                   %6.2f x" % (t_base / t_tool))


if __name__ == "__main__":
    main()
