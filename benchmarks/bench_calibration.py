"""Speed of calibration training: the Newton solver and the key join, against in-run baselines.

- fit: ``LinearCalibration.fit`` (Newton, to a relative step of 1e-10) vs scipy's L-BFGS-B on the
  same objective and analytic gradient (``prior_weighted_cross_entropy``, gtol 1e-10).
- join: ``join_by_key`` (kaldi_io.keyed: key ids, sorted pair codes) vs a Python dict of pairs.
- tool: ``train-calibration`` end to end as a subprocess (reading, joining, fitting, writing).
Median of ``--repeats`` runs; ratio = baseline / ours.

    python benchmarks/bench_calibration.py [--trials 2000000] [--repeats 3]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.optimize import minimize

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from pauc_backend.kaldi_io import joined_scores as calibration_io  # noqa: E402
from pauc_backend.models.calibration import (LinearCalibration,  # noqa: E402
                                             prior_weighted_cross_entropy)


class _QuietLog:
    def warning(self, message):
        pass


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=2000000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.trials
    labels = rng.random(n) < 0.01
    scores = np.where(labels, rng.normal(2, 1, n), rng.normal(0, 1, n)).astype(np.float32)
    scores = scores.astype(np.float64)

    def scipy_fit():
        fun = lambda p: prior_weighted_cross_entropy(p[:1], p[1], scores, labels, 0.01)  # noqa
        return minimize(fun, np.zeros(2), jac=True, method="L-BFGS-B",
                        options={"gtol": 1e-10, "ftol": 0, "maxiter": 1000})

    ours = median_time(lambda: LinearCalibration(prior=0.01).fit(scores, labels), args.repeats)
    base = median_time(scipy_fit, args.repeats)
    model = LinearCalibration(prior=0.01).fit(scores, labels)
    ref = scipy_fit()
    print("fit   %d trials: Newton %.3f s (%d iterations), scipy L-BFGS-B %.3f s (%d "
          "iterations), ratio %.2f; |w - w_scipy| = %.2g"
          % (n, ours, model.n_iter_, base, ref.nit, base / ours,
             abs(model.weights_[0] - ref.x[0])))

    num_enroll = max(1, n // 10000)
    key1 = np.repeat(np.array(["spk%05d" % i for i in range(num_enroll)]), 10000)[:n]
    key2 = np.tile(np.array(["SNR084F2MIC1%06d_ch01" % i for i in range(10000)]), num_enroll)[:n]
    order = rng.permutation(n)
    table = [("scores", key1[order], key2[order], scores[order])]
    log = _QuietLog()
    ours = median_time(lambda: calibration_io.join_by_key(log, "trials", key1, key2, table),
                       args.repeats)

    def dict_join():      # compute_min_dcf.py's way: a dict of the pairs
        where = {pair: row for row, pair in enumerate(zip(key1.tolist(), key2.tolist()))}
        return [where.get(pair, -1) for pair in zip(table[0][1].tolist(), table[0][2].tolist())]

    base = median_time(dict_join, args.repeats)
    print("join  %d trials: kaldi_io.keyed %.3f s, Python dict %.3f s, ratio %.2f"
          % (n, ours, base, base / ours))

    with tempfile.TemporaryDirectory() as folder:
        trials = os.path.join(folder, "trials")
        score_file = os.path.join(folder, "scores")
        with open(trials, "w") as f:
            f.writelines("%s %s %s\n" % (a, b, "target" if t else "nontarget")
                         for a, b, t in zip(key1.tolist(), key2.tolist(), labels.tolist()))
        with open(score_file, "w") as f:
            f.writelines("%s %s %.7g\n" % (key1[i], key2[i], scores[i]) for i in order.tolist())
        command = [sys.executable, os.path.join(REPO, "bin", "train-calibration"),
                   "--prior=0.01", trials, score_file, os.path.join(folder, "cal.mdl")]
        seconds = median_time(lambda: subprocess.run(command, check=True,
                                                     stderr=subprocess.DEVNULL), args.repeats)
        print("tool  train-calibration on %d trials: %.3f s" % (n, seconds))


if __name__ == "__main__":
    main()
