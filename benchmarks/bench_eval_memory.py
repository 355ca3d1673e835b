#!/usr/bin/env python3
"""Peak memory and wall time of keyed evaluation (issue 18 item 3), run by hand.

For each size, makes (once, in --dir, default /root/bench_eval) a trials file
``enrollE testT target|nontarget`` (enroll x test grid, 1% targets), the matching scores file
``enrollE testT score`` (%.7g of float32, trial order) and the piped form ``score label``; then
runs, under /usr/bin/time -v, ``compute-eer-pauc - < piped``, ``compute-eer-pauc scores trials``
and ``train-calibration trials scores model``, and prints wall seconds, peak RSS, peak RSS per
trial and the keyed/piped wall ratio (target: <= 2x and < 40 B a trial of RSS above start-up).

    python benchmarks/bench_eval_memory.py [--trials 10000000,30000000] [--dir /root/bench_eval]
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS_PER_ENROLL = 10000


def make_files(directory, trials):
    """trials/scores/piped files for ``trials`` lines (reused if present)."""
    base = os.path.join(directory, "n%d" % trials)
    paths = tuple(base + suffix for suffix in (".trials", ".scores", ".piped"))
    if all(os.path.exists(p) for p in paths):
        return paths
    rng = np.random.default_rng(trials)
    tests = ["test%05d" % t for t in range(TESTS_PER_ENROLL)]
    outs = [open(p + ".tmp", "w") for p in paths]
    for enroll in range(trials // TESTS_PER_ENROLL):
        is_target = rng.random(TESTS_PER_ENROLL) < 0.01
        scores = np.where(is_target, rng.normal(3, 2, is_target.size),
                          rng.normal(-3, 2, is_target.size))
        values = scores.astype(np.float32).astype(np.float64).tolist()
        labels = np.where(is_target, "target", "nontarget").tolist()
        name = "enroll%05d " % enroll
        outs[0].write("".join(name + t + " " + l + "\n" for t, l in zip(tests, labels)))
        outs[1].write("".join("%s%s %.7g\n" % (name, t, v) for t, v in zip(tests, values)))
        outs[2].write("".join("%.7g %s\n" % pair for pair in zip(values, labels)))
    for out, path in zip(outs, paths):
        out.close()
        os.rename(path + ".tmp", path)
    return paths


def measured(command, stdin=None):
    """(wall seconds, peak RSS bytes, stdout) of one run under /usr/bin/time -v."""
    with open(stdin or os.devnull, "rb") as source:
        done = subprocess.run(["/usr/bin/time", "-v"] + command, stdin=source,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    err = done.stderr.decode()
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1)) * 1024
    clock = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", err)
    wall = (int(clock.group(1) or 0) * 3600 + int(clock.group(2)) * 60 + float(clock.group(3)))
    return wall, rss, done.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", default="10000000,30000000")
    parser.add_argument("--dir", default="/root/bench_eval")
    parser.add_argument("--make-only", action="store_true")
    parser.add_argument("--skip-calibration", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    tool = lambda name: [sys.executable, os.path.join(ROOT, "bin", name)]  # noqa: E731
    print("load average %.1f, %d CPUs" % (os.getloadavg()[0], os.cpu_count()))
    for n in [int(x) for x in args.trials.split(",")]:
        trials, scores, piped = make_files(args.dir, n)
        if args.make_only:
            continue
        start_rss = measured(tool("compute-eer-pauc") + ["--help"])[1]
        t_pipe, rss_pipe, out_pipe = measured(tool("compute-eer-pauc") + ["-"], piped)
        t_key, rss_key, out_key = measured(tool("compute-eer-pauc") + [scores, trials])
        assert out_key == out_pipe, (out_key, out_pipe)
        rows = [("compute-eer-pauc - (piped)", t_pipe, rss_pipe),
                ("compute-eer-pauc scores trials", t_key, rss_key)]
        if not args.skip_calibration:
            model = os.path.join(args.dir, "n%d.mdl" % n)
            t_cal, rss_cal, _ = measured(tool("train-calibration") + [trials, scores, model])
            rows.append(("train-calibration trials scores", t_cal, rss_cal))
        print("%d trials (start-up RSS %.0f MB)" % (n, start_rss / 1e6))
        for name, wall, rss in rows:
            print("  %-34s %7.1f s  peak %6.0f MB  %5.1f B/trial (above start-up %5.1f)" % (
                name, wall, rss / 1e6, rss / n, (rss - start_rss) / n))
        print("  keyed/piped wall ratio %.2fx" % (t_key / t_pipe))


if __name__ == "__main__":
    main()
