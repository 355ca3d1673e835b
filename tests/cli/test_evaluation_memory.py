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

Whatever the score text and the score distribution (issue 43, item 1): scores of 8, 9, 10 and
12 characters, exponent forms and mixed widths, every target above every non-target (minDCF's
best threshold then ends a run of every non-target), and quantised scores tied across the
classes. Measured (2026-11-28, load 17-20 on 2 cores): 4.2-5.8 piped, 6.2-11.5 in the trials'
order, 20.6-23.6 joined by key; before, 53-59 piped and 54-67 in the trials' order on the
separated lists (minDCF's run as five n-sized arrays), 29 and 23 on the quantised ones (every
tied trial kept and sorted for minDCF's tie order).
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


# -- the score text and the score distribution (issue 43, item 1) ----------------------------
#
# The score text reaches two number parsers: compute-eer's (piped) and the keyed files' (the same
# for the side-by-side reading and the join by key, which differ only after it); the
# distribution reaches the metrics. Every text form is measured piped and side by side; the
# join by key, whose cost is the join's, with two forms that take both paths of its parser.

TEXT_TESTS = 1500


def _separated(rng, is_target, low, high):
    """Every target above every non-target, the non-targets in [low, (low + high) / 2), the
    targets in [(low + high) / 2, high): minDCF's best threshold then ends a run of every
    non-target (the shape of good PLDA scores, which once cost 45 bytes a trial there)."""
    middle = (low + high) / 2.0
    return np.where(is_target, rng.uniform(middle, high, is_target.size),
                    rng.uniform(low, middle, is_target.size))


MIXED = ("%.5f", "%.9g", "%.3e", "%.17g", "%g")
TEXTS = {   # name: (score text of an array of values, the values' range)
    "8 characters (-d.ddddd)": (lambda v: ["%.5f" % x for x in v.tolist()], (-9.9, -1.1)),
    "9 characters (-dd.ddddd)": (lambda v: ["%.5f" % x for x in v.tolist()], (-99.0, -11.0)),
    "10 characters (-ddd.ddddd)": (lambda v: ["%.5f" % x for x in v.tolist()], (-990, -110)),
    "12 characters (-dd.dddddddd)": (lambda v: ["%.8f" % x for x in v.tolist()], (-99, -11)),
    "exponent form (%.6e)": (lambda v: ["%.6e" % x for x in v.tolist()], (-99.0, -11.0)),
    "mixed widths": (lambda v: [MIXED[i % len(MIXED)] % x for i, x in enumerate(v.tolist())],
                     (-99.0, -0.5)),
    "quantised, ties across the classes (%.1f)": (
        lambda v: ["%.1f" % x for x in v.tolist()], (-30.0, 30.0)),
}
JOINED_TEXTS = ("9 characters (-dd.ddddd)", "mixed widths")


def write_text_lists(folder):
    """For each of TEXT_SIZES (the shorter list is the start of the longer): a trials file
    ``trials<n>`` and, per entry of TEXTS, the scores (the trials' order) and the piped form
    written as it says. Returns {name: [stem of each size]} (``<stem>.scores``, ``.piped``,
    and ``<stem>.trials``, the shared trials file)."""
    num = TEXT_SIZES[-1]
    rng = np.random.default_rng(43)
    is_target = rng.random(num) < 0.002
    labels = np.where(is_target, "target", "nontarget").tolist()
    tests = [" t%05d " % t for t in range(TEXT_TESTS)]
    keys = ["e%04d%s" % (i // TEXT_TESTS, tests[i % TEXT_TESTS]) for i in range(num)]
    _write_prefixes(os.path.join(folder, "trials%d"), ["%s%s\n" % p for p in zip(keys, labels)])
    stems = {}
    for number, (name, (text, (low, high))) in enumerate(TEXTS.items()):
        if name.startswith("quantised"):     # overlapping classes, ~240 values held by both
            values = np.where(is_target, rng.normal(2, 3, num), rng.normal(-2, 3, num))
        else:
            values = _separated(rng, is_target, low, high)
        scores = text(values)
        stem = os.path.join(folder, "text%d-%%d" % number)
        _write_prefixes(stem + ".piped", ["%s %s\n" % p for p in zip(scores, labels)])
        _write_prefixes(stem + ".scores", ["%s%s\n" % p for p in zip(keys, scores)])
        for size in TEXT_SIZES:
            os.symlink("trials%d" % size, stem % size + ".trials")
        stems[name] = [stem % size for size in TEXT_SIZES]
    return stems


def _write_prefixes(pattern, lines):
    for size in TEXT_SIZES:
        with open(pattern % size, "w") as out:
            out.write("".join(lines[:size]))


# Both sizes hold at least two chunks of every reader (1 MB piped and side by side, 4 MB
# joining) and two blocks of the metrics (2^18 trials), so their temporaries cancel.
TEXT_SIZES = (600_000, 1_500_000)
FORMS = {   # (arguments for a list's stem, stdin, bound in bytes a trial)
    "piped": (lambda stem: ["-"], ".piped", 8),
    "keyed in the trials' order": (lambda stem: [stem + ".scores", stem + ".trials"], None, 14),
    "keyed, joined by key": (lambda stem: ["cat %s.scores |" % stem, stem + ".trials"], None,
                             30),
}
TEXT_CASES = [(text, form) for text in TEXTS for form in FORMS
              if form != "keyed, joined by key" or text in JOINED_TEXTS]


@pytest.fixture(scope="module")
def text_lists(tmp_path_factory):
    return write_text_lists(str(tmp_path_factory.mktemp("score_texts")))


@pytest.mark.parametrize("text, form", TEXT_CASES)
def test_evaluation_memory_does_not_depend_on_the_score_text(text, form, text_lists):
    arguments, stdin, bound = FORMS[form]
    peaks = [peak_rss_bytes(["compute-eer-pauc"] + arguments(stem),
                            stem + stdin if stdin else os.devnull, os.path.dirname(stem))
             for stem in text_lists[text]]
    per_trial = (peaks[1] - peaks[0]) / (TEXT_SIZES[1] - TEXT_SIZES[0])
    assert per_trial <= bound, "%s, %s: %.1f bytes of peak RSS per trial (bound %d; peaks %s " \
        "MB)" % (text, form, per_trial, bound, [round(p / 2 ** 20) for p in peaks])
