"""Speed of compute-eer-pauc --bootstrap: 1,000 two-way cluster resamples of 10^6 trials.

Synthetic trials: --enroll x --test keys (default 1000 x 1000 = 10^6 trials, ~1 % targets).
- library: ``bootstrap_statistics`` (sorted once; a resample = gathers, a cumulative sum and
  O(#targets) work, 2 worker threads), wall and process CPU, against one plain evaluation of
  all metrics (``TrialScores.summary``) as the in-run baseline: a naive bootstrap that re-sorts
  and re-evaluates per resample costs about that much per resample.
- tool: compute-eer-pauc --bootstrap=N --report=json end to end (reading, join, sort,
  resamples), and without --bootstrap, as subprocesses.
Record the load (printed) with the figures; the issue asks for < 10 s on 2 cores.

    python benchmarks/bench_bootstrap.py [--enroll 1000] [--test 1000] [--resamples 1000]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from pauc_backend.metrics import TrialScores  # noqa: E402
from pauc_backend.metrics.bootstrap import ClusterBootstrap, bootstrap_statistics  # noqa: E402
from pauc_backend.metrics.registry import Setting  # noqa: E402


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--enroll", type=int, default=1000)
    parser.add_argument("--test", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--skip-tool", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    enroll = np.repeat(np.arange(args.enroll), args.test)
    test = np.tile(np.arange(args.test), args.enroll)
    speaker_e = rng.integers(0, 100, args.enroll)
    speaker_t = rng.integers(0, 100, args.test)
    is_target = speaker_e[enroll] == speaker_t[test]
    scores = np.round(rng.normal(size=enroll.size) + 3.0 * is_target, 6)
    print("%d trials (%d targets), %d resamples; load before: %s" % (
        scores.size, is_target.sum(), args.resamples,
        " ".join("%.2f" % x for x in os.getloadavg())))
    _, wall, cpu = timed(lambda: TrialScores.from_trials(scores, is_target).summary(
        [0.01, 0.005]))
    print("baseline  one plain evaluation (sort + all metrics): %.2f s wall, %.2f s cpu" % (
        wall, cpu))
    boot, wall, cpu = timed(lambda: ClusterBootstrap(scores, is_target, enroll, test))
    print("library   setup (one sort, cluster codes): %.2f s wall, %.2f s cpu" % (wall, cpu))
    _, wall, cpu = timed(lambda: bootstrap_statistics(boot, args.resamples, 1,
                                                       Setting([0.01, 0.005])))
    print("library   %d resamples: %.2f s wall, %.2f s cpu (%.1f ms cpu per resample)" % (
        args.resamples, wall, cpu, 1e3 * cpu / args.resamples))
    if not args.skip_tool:
        with tempfile.TemporaryDirectory() as folder:
            trials, score_file = os.path.join(folder, "trials"), os.path.join(folder, "scores")
            with open(trials, "w") as f:
                f.writelines("e%d t%d %s\n" % (e, t, "target" if y else "nontarget")
                             for e, t, y in zip(enroll.tolist(), test.tolist(),
                                                is_target.tolist()))
            with open(score_file, "w") as f:
                f.writelines("e%d t%d %.6f\n" % (e, t, s) for e, t, s in
                             zip(enroll.tolist(), test.tolist(), scores.tolist()))
            tool = [sys.executable, os.path.join(REPO, "bin", "compute-eer-pauc"),
                    "--report=json", "--p-target=0.01,0.005"]
            for extra in ([], ["--bootstrap=%d" % args.resamples, "--seed=1"]):
                start = time.perf_counter()
                subprocess.run(tool + extra + [score_file, trials], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                print("tool      compute-eer-pauc %s: %.2f s wall" % (
                    " ".join(extra) or "(no bootstrap)", time.perf_counter() - start))
    print("load after: %s" % " ".join("%.2f" % x for x in os.getloadavg()))


if __name__ == "__main__":
    main()
