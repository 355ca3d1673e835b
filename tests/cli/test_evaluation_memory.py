"""Keyed evaluation and calibration hold a few bytes per trial (issue 18, item 3; issue 35).

``compute-eer-pauc <scores> <trials>``, ``compute-eer-pauc -`` (compute-eer's ``score label``
lines) and ``train-calibration <trials> <scores> <model>`` run as child processes on two trial
lists of different lengths (enroll x test grids); the growth of their own peak RSS
(``os.wait4``'s ``ru_maxrss``, via the launcher of test_training_memory) per added trial is
bounded. Constant costs (interpreter, imports, chunk buffers) cancel in the difference; the
bounds leave room for a few MB of allocator and huge-page rounding.

compute-eer-pauc holds what the computation needs (issue 35): piped, a float32 score and a
label a trial, sorted where they lie (5 bytes); keyed with the scores in the trials' order, the
float64 score (compute_min_dcf.py reads doubles) and the label (9 bytes); keyed in another
order, the join by key (8-byte pair codes, the matched flags, then the scores: about 18).
Measured here (2026-11-27, busy machine): 5.2, 10.2 and 21.4 bytes a trial; before issue 35,
7.8 piped and 21.2 keyed in the trials' order. train-calibration: 112-118 before issue 18.
"""

import os

import numpy as np
import pytest
from test_training_memory import peak_rss_bytes

SIZES = (400_000, 2_000_000)
TESTS = 2000


def _block(num, enroll):
    rng = np.random.default_rng([num, enroll])
    is_target = rng.random(TESTS) < 0.01
    values = np.where(is_target, rng.normal(3, 2, TESTS), rng.normal(-3, 2, TESTS))
    return is_target.tolist(), ["%.7g" % v for v in values.tolist()]


def write_lists(folder, num):
    """trials, scores (the trials' order), piped (``score label``) and scores_reversed (the
    enrollments' blocks in reverse: neither the trials' order nor ascending)."""
    tests = ["test%05d" % t for t in range(TESTS)]
    names = [os.path.join(folder, "%s%d" % (kind, num))
             for kind in ("trials", "scores", "piped", "scores_reversed")]
    with open(names[0], "w") as trials, open(names[1], "w") as scores, \
            open(names[2], "w") as piped:
        for enroll in range(num // TESTS):
            is_target, values = _block(num, enroll)
            name = "enroll%05d " % enroll
            labels = ["target" if y else "nontarget" for y in is_target]
            trials.write("".join("%s%s %s\n" % (name, t, y) for t, y in zip(tests, labels)))
            scores.write("".join("%s%s %s\n" % (name, t, v) for t, v in zip(tests, values)))
            piped.write("".join("%s %s\n" % (v, y) for v, y in zip(values, labels)))
    with open(names[3], "w") as scores:
        for enroll in reversed(range(num // TESTS)):
            values = _block(num, enroll)[1]
            name = "enroll%05d " % enroll
            scores.write("".join("%s%s %s\n" % (name, t, v) for t, v in zip(tests, values)))


@pytest.fixture(scope="module")
def lists(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("evaluation_memory"))
    for num in SIZES:
        write_lists(folder, num)
    return folder


CASES = {   # (command, stdin, bound in bytes a trial)
    "compute-eer-pauc piped": (lambda n: ["compute-eer-pauc", "-"], "piped%d", 8),
    "compute-eer-pauc keyed": (lambda n: ["compute-eer-pauc", "scores%d" % n, "trials%d" % n],
                               None, 14),
    "compute-eer-pauc keyed, another order": (
        lambda n: ["compute-eer-pauc", "scores_reversed%d" % n, "trials%d" % n], None, 30),
    "train-calibration": (lambda n: ["train-calibration", "trials%d" % n, "scores%d" % n,
                                     "cal%d.mdl" % n], None, 90),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_evaluation_holds_a_few_bytes_per_trial(case, lists):
    command, stdin, bound = CASES[case]
    peaks = [peak_rss_bytes(command(n), os.path.join(lists, stdin % n) if stdin else os.devnull,
                            lists) for n in SIZES]
    per_trial = (peaks[1] - peaks[0]) / (SIZES[1] - SIZES[0])
    assert per_trial <= bound, "%s: %.1f bytes of peak RSS per trial (bound %d; peaks %s MB)" % (
        case, per_trial, bound, [round(p / 2 ** 20) for p in peaks])
