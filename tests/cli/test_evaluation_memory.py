"""Keyed evaluation and calibration hold a few bytes per trial (issue 18, item 3).

``compute-eer-pauc <scores> <trials>`` and ``train-calibration <trials> <scores> <model>`` run as
child processes on two trial lists of different lengths (enroll x test grids, scores in the
trials' order); the growth of their own peak RSS (``os.wait4``'s ``ru_maxrss``, via the
launcher of test_training_memory) per added trial is bounded. Constant costs (interpreter,
imports, chunk buffers) cancel in the difference. Measured (2026-11-25, 1e7 and 3e7 trials,
benchmarks/bench_eval_memory.py): compute-eer-pauc 28-35 bytes a trial before and 20-25 after
this change (float64 scores and the sorted classes, 1 byte labels, 8 byte pair codes of the
trials table while joining); train-calibration 112-118 before.
"""

import os

import numpy as np
import pytest
from test_training_memory import peak_rss_bytes

SIZES = (400_000, 2_000_000)
TESTS = 2000
BOUNDS = {"compute-eer-pauc": 40, "train-calibration": 90}


def write_lists(folder, num):
    rng = np.random.default_rng(num)
    tests = ["test%05d" % t for t in range(TESTS)]
    with open(os.path.join(folder, "trials%d" % num), "w") as trials, \
            open(os.path.join(folder, "scores%d" % num), "w") as scores:
        for enroll in range(num // TESTS):
            is_target = rng.random(TESTS) < 0.01
            values = np.where(is_target, rng.normal(3, 2, TESTS), rng.normal(-3, 2, TESTS))
            name = "enroll%05d " % enroll
            trials.write("".join("%s%s %s\n" % (name, t, "target" if y else "nontarget")
                                 for t, y in zip(tests, is_target.tolist())))
            scores.write("".join("%s%s %.7g\n" % (name, t, v)
                                 for t, v in zip(tests, values.tolist())))


@pytest.fixture(scope="module")
def lists(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("evaluation_memory"))
    for num in SIZES:
        write_lists(folder, num)
    return folder


TOOLS = {
    "compute-eer-pauc": lambda n: ["compute-eer-pauc", "scores%d" % n, "trials%d" % n],
    "train-calibration": lambda n: ["train-calibration", "trials%d" % n, "scores%d" % n,
                                    "cal%d.mdl" % n],
}


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_keyed_evaluation_holds_a_few_bytes_per_trial(tool, lists):
    peaks = [peak_rss_bytes(TOOLS[tool](n), os.devnull, lists) for n in SIZES]
    per_trial = (peaks[1] - peaks[0]) / (SIZES[1] - SIZES[0])
    assert per_trial <= BOUNDS[tool], "%s: %.1f bytes of peak RSS per trial (bound %d; peaks " \
        "%s MB)" % (tool, per_trial, BOUNDS[tool], [round(p / 2 ** 20) for p in peaks])
