"""Speed of pAUCMetric: one PPA iteration against the paper's O(J R) formulation, the growth
exponent in s, a whole training run on 200k x 150 vectors and scoring 1M trials.

1. Per iteration, d = 150, s in {125, 250, 500, 1000, 2000}: ours (partial selection for N0,
   searchsorted weights, sparse Laplacian) against a plain numpy version of the paper's
   steps (full sort of the K non-targets, the J x R index matrix Pi, outer products over the
   R chosen negatives). Median of repeats; the exponent is the log-log slope over s.
2. train-pauc-metric with default options on bench_plda's 200k x 150 corpus (7000 speakers).
3. score-pauc-trials on bench_plda's 1M trials (2000 x 20000, random pairs), against Kaldi's
   ivector-plda-scoring on the same size (6.5 s, figure from the issue).

Usage: python benchmarks/bench_pauc_metric.py [--repeats 5] [--skip-tools] [--skip-iterations]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_plda import make_data  # noqa: E402

from pauc_backend.models import ppa  # noqa: E402

KALDI_SCORING_SECONDS = 6.5
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def paper_iteration(X, M, alpha, beta, delta, gamma, eta, mu):
    """Alg. 1 as written: explicit z vectors, full sort, J x R index matrix."""
    n, d = X.shape
    a, b = np.triu_indices(n, k=1)
    target = (a // 2) == (b // 2)
    Z = X[a] - X[b]
    S = np.einsum("ij,jk,ik->i", Z, M, Z)
    zp, sp = Z[target], S[target]
    zn, sn = Z[~target], S[~target]
    K = sn.size
    order = np.argsort(sn, kind="stable")[int(np.ceil(K * alpha)):int(np.floor(K * beta))]
    zr, sr = zn[order], sn[order]
    Pi = (delta + sp[:, None]) > sr[None, :]
    J, R = Pi.shape
    p_j, p_r = Pi.mean(axis=1), Pi.mean(axis=0)
    P = (zp.T * p_j) @ zp / J - (zr.T * p_r) @ zr / R + gamma * zp.T @ zp / J
    return ppa.ppa_step(M, P, eta, mu)[0]


def our_iteration(X, M, alpha, beta, delta, gamma, eta, mu, factor=None):
    """One iteration as PaucMetric runs it: the eigenvectors of M come from the previous PPA
    step (``factor``), so no extra decomposition."""
    w, U = factor if factor is not None else np.linalg.eigh(M)
    Y = X @ (U * np.sqrt(np.maximum(w, 0)))
    stats = ppa.pauc_batch(X, Y, alpha, beta, delta, gamma)
    return ppa.ppa_step(M, stats.gradient, eta, mu)[0]


def time_command(argv, cwd, repeats):
    """Median wall-clock seconds of a tool run as a subprocess (bin/ first on PATH)."""
    env = dict(os.environ)
    env["PATH"] = os.path.join(REPO, "bin") + os.pathsep + env.get("PATH", "")
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
        seconds.append(time.perf_counter() - start)
        if proc.returncode != 0:
            sys.exit("%s failed:\n%s" % (argv[1], proc.stderr.decode()[-2000:]))
    return statistics.median(seconds)


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def per_iteration(repeats, d=150):
    rng = np.random.default_rng(0)
    B = rng.normal(size=(d, d)) / np.sqrt(d)
    M = np.eye(d) + 0.1 * B @ B.T
    sizes = [125, 250, 500, 1000, 2000]
    ours, paper = [], []
    print("per iteration, d = %d (median of %d)" % (d, repeats))
    for s in sizes:
        X = rng.normal(size=(2 * s, d))
        args = (X, M, 0.0, 0.01, 1.5, 0.5, 1.0, 1e-3)
        factor = np.linalg.eigh(M)
        our_iteration(*args, factor=factor)           # warm the pair-index cache
        t_ours = median_time(lambda: our_iteration(*args, factor=factor), repeats)
        t_paper = median_time(lambda: paper_iteration(*args), max(1, repeats // 2)) \
            if s <= 1000 else float("nan")
        ours.append(t_ours)
        paper.append(t_paper)
        print("  s = %4d  ours %8.4f s   paper-style %8.4f s   paper/ours %6.1f"
              % (s, t_ours, t_paper, t_paper / t_ours))
    slope = np.polyfit(np.log(sizes), np.log(ours), 1)[0]
    known = [i for i, t in enumerate(paper) if np.isfinite(t)]
    slope_paper = np.polyfit(np.log(np.take(sizes, known)), np.log(np.take(paper, known)), 1)[0]
    print("  growth exponent in s: ours %.2f, paper-style %.2f (paper's analysis: 3)"
          % (slope, slope_paper))


def tools(repeats):
    folder = tempfile.mkdtemp(prefix="bench_pauc_")
    start = time.perf_counter()
    make_data(folder, np.random.default_rng(0))
    print("data (200k x 150 train, 1M trials) generated in %.1f s in %s"
          % (time.perf_counter() - start, folder))
    bin_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bin")
    train = [sys.executable, os.path.join(bin_dir, "train-pauc-metric"), "ark:spk2utt",
             "ark:train.ark", "metric"]
    seconds = time_command(train, folder, 1)
    print("train-pauc-metric (defaults) on 200k x 150: %.1f s" % seconds)
    score = [sys.executable, os.path.join(bin_dir, "score-pauc-trials"), "metric",
             "ark:enroll.ark", "ark:test.ark", "trials", "scores"]
    seconds = time_command(score, folder, repeats)
    print("score-pauc-trials, 1M trials: ours %.2f s   Kaldi ivector-plda-scoring %.1f s   "
          "Kaldi/ours %.1f" % (seconds, KALDI_SCORING_SECONDS, KALDI_SCORING_SECONDS / seconds))
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    os.rmdir(folder)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-tools", action="store_true")
    parser.add_argument("--skip-iterations", action="store_true")
    args = parser.parse_args()
    if not args.skip_iterations:
        per_iteration(args.repeats)
    if not args.skip_tools:
        tools(3)


if __name__ == "__main__":
    main()
