#!/usr/bin/env python3
"""Peak memory and wall time of keyed evaluation (issue 18 item 3), run by hand.

Synthetic normal draws; the reviewers' fixture of real PLDA scores (issue 35), with Kaldi's
compute-eer beside ours, is bench_eval_fixture.py's.

For each size and list layout, makes (once, in --dir, default /root/bench_eval) a trials file,
the matching scores file (%.7g of float32, trial order), a second system's scores (the same
trials, other values, for a fusion) and the piped form ``score label``; then runs, under
/usr/bin/time -v, ``compute-eer-pauc - < piped``, ``compute-eer-pauc scores trials``,
``train-calibration trials scores model`` and the fusion ``train-calibration trials scores
scores2 model``, and prints wall seconds, peak RSS, peak RSS per trial and the keyed/piped wall
ratio (target: <= 2x and ~40 B a trial or less of RSS above start-up, whatever the layout).

Layouts (--layouts):
  grid          ``enrollE testT`` keys, 10,000 tests per enrollment, 1% random targets
  enroll-major  issue 26's list: ``e0000 t00000`` keys, 2,000 enrollments x n/2,000 test keys
                (15,000 at 3x10^7), enroll-major, test t the target of enrollment t mod 2,000
  random-keys   n/20 enrollment and n/20 test keys (``spk000123-enroll utt000456-x6uYqmx31kE``),
                n distinct random pairs in random order, 1% random targets: ten trials a key,
                the layout where the keys themselves weigh most

--reports (default table,json) adds a keyed ``compute-eer-pauc --report=R scores trials`` row
for each R; --bin measures the tools of another checkout (e.g. /work/main/bin) on the same files.

    python benchmarks/bench_eval_memory.py [--trials 10000000,30000000] [--dir /root/bench_eval]
        [--layouts grid,enroll-major,random-keys] [--reports table,json] [--bin DIR]
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS_PER_ENROLL = 10000


ENROLL_MAJOR_ENROLLMENTS = 2000


def _layout(name, trials, rng):
    """(enrollment names, test names, is_target rows) of one list layout, row by row."""
    if name == "grid":
        tests = ["test%05d" % t for t in range(TESTS_PER_ENROLL)]
        for enroll in range(trials // TESTS_PER_ENROLL):
            yield "enroll%05d " % enroll, tests, rng.random(TESTS_PER_ENROLL) < 0.01
    elif name == "enroll-major":
        num_tests = trials // ENROLL_MAJOR_ENROLLMENTS
        tests = ["t%05d" % t for t in range(num_tests)]
        owner = np.arange(num_tests) % ENROLL_MAJOR_ENROLLMENTS
        for enroll in range(ENROLL_MAJOR_ENROLLMENTS):
            yield "e%04d " % enroll, tests, owner == enroll
    elif name == "random-keys":
        side = trials // 20
        codes = np.unique(rng.integers(0, side * side, size=int(trials * 1.01)))[:trials]
        rng.shuffle(codes)
        for start in range(0, trials, TESTS_PER_ENROLL):
            block = codes[start:start + TESTS_PER_ENROLL]
            enroll = np.char.add(np.char.add("spk", np.char.zfill((block // side).astype(str), 6)),
                                 "-enroll ")
            tests = np.char.add(np.char.add("utt", np.char.zfill((block % side).astype(str), 6)),
                                "-x6uYqmx31kE")
            for_each = rng.random(block.size) < 0.01
            yield enroll.tolist(), tests.tolist(), for_each
    else:
        raise SystemExit("unknown layout %s (grid, enroll-major, random-keys)" % name)


def make_files(directory, trials, layout="grid"):
    """trials/scores/scores2/piped files for ``trials`` lines (reused if present)."""
    base = os.path.join(directory, "n%d" % trials + ("" if layout == "grid" else "." + layout))
    paths = tuple(base + suffix for suffix in (".trials", ".scores", ".piped", ".scores2"))
    if all(os.path.exists(p) for p in paths):
        return paths
    rng = np.random.default_rng(trials)
    outs = [open(p + ".tmp", "w") for p in paths]
    for name, tests, is_target in _layout(layout, trials, rng):
        scores = np.where(is_target, rng.normal(3, 2, is_target.size),
                          rng.normal(-3, 2, is_target.size))
        values = scores.astype(np.float32).astype(np.float64).tolist()
        second = (scores + rng.normal(0, 1, scores.size)).astype(np.float32).astype(np.float64)
        labels = np.where(is_target, "target", "nontarget").tolist()
        names = name if isinstance(name, list) else [name] * len(tests)
        outs[0].write("".join(n + t + " " + l + "\n" for n, t, l in zip(names, tests, labels)))
        outs[1].write("".join("%s%s %.7g\n" % triple for triple in zip(names, tests, values)))
        outs[2].write("".join("%.7g %s\n" % pair for pair in zip(values, labels)))
        outs[3].write("".join("%s%s %.7g\n" % triple
                              for triple in zip(names, tests, second.tolist())))
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
    parser.add_argument("--layouts", default="grid,enroll-major")
    parser.add_argument("--reports", default="table,json")
    parser.add_argument("--bin", default=os.path.join(ROOT, "bin"))
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    tool = lambda name: [sys.executable, os.path.join(args.bin, name)]  # noqa: E731
    print("tools of %s" % args.bin)
    print("load average %.1f, %d CPUs" % (os.getloadavg()[0], os.cpu_count()))
    for n, layout in [(int(x), name) for x in args.trials.split(",")
                      for name in args.layouts.split(",")]:
        trials, scores, piped, scores2 = make_files(args.dir, n, layout)
        if args.make_only:
            continue
        start_rss = measured(tool("compute-eer-pauc") + ["--help"])[1]
        t_pipe, rss_pipe, out_pipe = measured(tool("compute-eer-pauc") + ["-"], piped)
        t_key, rss_key, out_key = measured(tool("compute-eer-pauc") + [scores, trials])
        assert out_key == out_pipe, (out_key, out_pipe)
        rows = [("compute-eer-pauc - (piped)", t_pipe, rss_pipe),
                ("compute-eer-pauc scores trials", t_key, rss_key)]
        for report in filter(None, args.reports.split(",")):
            t_rep, rss_rep, _ = measured(tool("compute-eer-pauc") + ["--report=" + report,
                                                                   scores, trials])
            rows.append(("  the same, --report=" + report, t_rep, rss_rep))
        if not args.skip_calibration:
            model = os.path.join(args.dir, "n%d.%d.mdl" % (n, os.getpid()))
            t_cal, rss_cal, _ = measured(tool("train-calibration") + [trials, scores, model])
            rows.append(("train-calibration trials scores", t_cal, rss_cal))
            t_fus, rss_fus, _ = measured(tool("train-calibration") + [trials, scores, scores2,
                                                                     model])
            rows.append(("  the same, fusion with scores2", t_fus, rss_fus))
            os.unlink(model)
        print("%d trials, layout %s (start-up RSS %.0f MB, load average %.1f)" % (
            n, layout, start_rss / 1e6, os.getloadavg()[0]))
        for name, wall, rss in rows:
            print("  %-34s %7.1f s  peak %6.0f MB  %5.1f B/trial (above start-up %5.1f)" % (
                name, wall, rss / 1e6, rss / n, (rss - start_rss) / n))
        print("  keyed/piped wall ratio %.2fx" % (t_key / t_pipe))


if __name__ == "__main__":
    main()
