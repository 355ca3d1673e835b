#!/usr/bin/env python3
"""Peak memory of compute-eer-pauc on the reviewers' fixture (issue 35), beside Kaldi's compute-eer.

Makes (once, in --dir) the fixture of ../shared/bench/README.md with its very commands:
make_scale.py (enroll.ark 2,000 x 150, test.ark 15,000 x 150, trials_10M, trials_30M),
make-synthetic-vectors --dim=150 and train-plda for a PLDA, score-plda-trials on each trial list
(real PLDA log-likelihood ratios, written in the trials' order) and the piped ``score label``
form; about 3 GB on disk, 10-15 minutes. Then runs each command alone and prints its wall time
and its own peak RSS (``os.wait4``'s ru_maxrss, as /usr/bin/time's %M), per form:

  kaldi compute-eer - < piped            Kaldi's, when its build is found (--kaldi-root, else
                                          $PAUC_KALDI_ROOT, else ~/.cache/pauc-backend/kaldi-ref)
  compute-eer-pauc - < piped             the piped form
  compute-eer-pauc --report=R scores trials
                                          the keyed form (R in --reports; table is the
                                          reviewers' command): scores in the trials' order
  compute-eer-pauc --report=json "cat scores |" trials
                                          the keyed form joined by key (a pipe cannot be read
                                          twice, so the side-by-side reading is not tried)

With --old-bin DIR the same rows are measured for another checkout's tools (e.g. main's) and
their stdout compared with ours (benchmarks/compare_eval_outputs.py compares every report).
Each row gives the wall time, the CPU time (user + system) and the peak RSS.

--variants adds the same rows on scores derived from the fixture's (made once beside it with
awk, as issue 43 made them): ``inverted`` is -(score + 10) with five decimals (negative
9-character scores such as -32.80135, every target ranked low: minDCF's best threshold ends
a run of nearly every trial), ``quantised`` the score with one decimal (ties across the
classes everywhere). Issue 35's bars at 3x10^7: piped <= 600 MB, keyed <= 1.2 GB; issue 43's,
whatever the score text: piped <= 300 MB, keyed <= 450 MB. Figures are only evidence when
the machine is otherwise idle: the load average is printed before and after each size.

    python benchmarks/bench_eval_fixture.py [--dir ../bench-fixture] [--sizes 10M,30M]
        [--reports table,json,kaldi] [--bin DIR] [--old-bin DIR] [--kaldi-root DIR]
        [--no-kaldi] [--variants fixture,inverted,quantised]
"""

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAKE_SCALE = os.path.join(ROOT, os.pardir, "shared", "bench", "make_scale.py")
TRIALS = {"10M": 10_000_000, "30M": 30_000_000}


def _run(command, **kwargs):
    print("  $ " + (command if isinstance(command, str) else " ".join(command)), flush=True)
    subprocess.run(command, check=True, **kwargs)


def make_fixture(directory, bin_dir, sizes):
    """The README's files in ``directory`` (each made once, under a temporary name first):
    scale/{enroll.ark,test.ark,trials_10M,trials_30M,plda} and, per size, scores_<size> and
    piped_<size>. Returns {size: (scores, trials, piped)}."""
    scale = os.path.join(directory, "scale")
    tool = lambda name: [sys.executable, os.path.join(bin_dir, name)]  # noqa: E731
    if not os.path.exists(os.path.join(scale, "trials_30M")):
        print("making %s (make_scale.py)" % scale)
        _run([sys.executable, MAKE_SCALE, scale])
    plda = os.path.join(scale, "plda")
    if not os.path.exists(plda):
        syn = os.path.join(directory, "syn")
        if not os.path.exists(os.path.join(syn, "train", "xvector.scp")):
            _run(tool("make-synthetic-vectors") + ["--dim=150", syn])
        _run(tool("train-plda") + ["ark:%s/train/spk2utt" % syn,
                                   "scp:%s/train/xvector.scp" % syn, plda + ".tmp"])
        os.rename(plda + ".tmp", plda)
    files = {}
    for size in sizes:
        trials = os.path.join(scale, "trials_" + size)
        scores = os.path.join(directory, "scores_" + size)
        piped = os.path.join(directory, "piped_" + size)
        if not os.path.exists(scores):
            keys = scores + ".keys"
            _run("cut -d' ' -f1,2 '%s' > '%s'" % (trials, keys), shell=True)
            _run(tool("score-plda-trials") + [plda, "ark:%s/enroll.ark" % scale,
                                              "ark:%s/test.ark" % scale, keys, scores + ".tmp"])
            os.rename(scores + ".tmp", scores)
            os.unlink(keys)
        if not os.path.exists(piped):
            _run("paste -d' ' <(cut -d' ' -f3 '%s') <(cut -d' ' -f3 '%s') > '%s.tmp' && "
                 "mv '%s.tmp' '%s'" % (scores, trials, piped, piped, piped),
                 shell=True, executable="/bin/bash")
        files[size] = (scores, trials, piped)
    return files


VARIANTS = {   # name: (awk expression of a scores file's third field, its printf format)
    "inverted": ("-($3 + 10)", "%.5f"),
    "quantised": ("$3", "%.1f"),
}


def derived(files, name):
    """(scores, trials, piped) of variant ``name`` of the fixture's ``files`` (made once, beside
    the fixture's scores; "fixture": the files themselves)."""
    if name == "fixture":
        return files
    scores, trials, _ = files
    expression, spec = VARIANTS[name]
    new_scores, new_piped = scores + "." + name, scores + "." + name + ".piped"
    if not os.path.exists(new_piped):
        _run("awk '{printf \"%%s %%s %s\\n\", $1, $2, %s}' '%s' > '%s.tmp' && mv '%s.tmp' '%s'"
             % (spec, expression, scores, new_scores, new_scores, new_scores), shell=True)
        _run("paste -d' ' <(cut -d' ' -f3 '%s') <(cut -d' ' -f3 '%s') > '%s.tmp' && "
             "mv '%s.tmp' '%s'" % (new_scores, trials, new_piped, new_piped, new_piped),
             shell=True, executable="/bin/bash")
    return new_scores, trials, new_piped


def measured(command, stdin=None):
    """(wall seconds, peak RSS bytes, exit status, stdout, stderr, CPU seconds) of one run; the
    peak and the CPU time (user + system) are the child's own from os.wait4 (with its reaped
    children's: a pipe's command)."""
    with open(stdin or os.devnull, "rb") as source, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(command, stdin=source, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return (wall, usage.ru_maxrss * 1024, proc.returncode, out.read(), err.read(),
                usage.ru_utime + usage.ru_stime)


def kaldi_compute_eer(kaldi_root):
    for root in filter(None, [kaldi_root, os.environ.get("PAUC_KALDI_ROOT"),
                              os.path.join(os.environ.get("XDG_CACHE_HOME") or
                                           os.path.expanduser("~/.cache"),
                                           "pauc-backend", "kaldi-ref")]):
        program = os.path.join(root, "bin", "compute-eer")
        if os.access(program, os.X_OK):
            return program
    return None


def _revision(bin_dir):
    try:
        return subprocess.run(["git", "-C", bin_dir, "describe", "--always", "--dirty"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              check=True).stdout.decode().strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def rows_for(label, bin_dir, files, reports):
    """(name, command, stdin) of our rows for one checkout."""
    scores, trials, piped = files
    ours = [sys.executable, os.path.join(bin_dir, "compute-eer-pauc")]
    rows = [("%s piped" % label, ours + ["-"], piped)]
    rows += [("%s keyed --report=%s" % (label, r), ours + ["--report=" + r, scores, trials],
              None) for r in reports]
    rows.append(("%s keyed, joined by key (pipe)" % label,
                 ours + ["--report=json", "cat '%s' |" % scores, trials], None))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=os.path.join(ROOT, os.pardir, "bench-fixture"))
    parser.add_argument("--sizes", default="10M,30M")
    parser.add_argument("--reports", default="table,json,kaldi")
    parser.add_argument("--bin", default=os.path.join(ROOT, "bin"))
    parser.add_argument("--old-bin", default="")
    parser.add_argument("--kaldi-root", default="")
    parser.add_argument("--no-kaldi", action="store_true")
    parser.add_argument("--variants", default="fixture")
    parser.add_argument("--make-only", action="store_true")
    args = parser.parse_args()
    sizes = [s for s in args.sizes.split(",") if s]
    for size in sizes:
        if size not in TRIALS:
            raise SystemExit("unknown size %s (10M, 30M)" % size)
    variants = [v for v in args.variants.split(",") if v]
    for variant in variants:
        if variant != "fixture" and variant not in VARIANTS:
            raise SystemExit("unknown variant %s (fixture, %s)" % (variant, ", ".join(VARIANTS)))
    os.makedirs(args.dir, exist_ok=True)
    fixture = make_fixture(os.path.abspath(args.dir), args.bin, sizes)
    files = {(size, variant): derived(fixture[size], variant)
             for size in sizes for variant in variants}
    if args.make_only:
        return
    kaldi = None if args.no_kaldi else kaldi_compute_eer(args.kaldi_root)
    reports = [r for r in args.reports.split(",") if r]
    print("%s  %d CPUs; ours: %s (%s)%s; Kaldi: %s" % (
        datetime.datetime.now().isoformat(timespec="minutes"), os.cpu_count(), args.bin,
        _revision(args.bin), "; old: %s (%s)" % (args.old_bin, _revision(args.old_bin))
        if args.old_bin else "", kaldi or "not run"))
    for size, variant in files:
        n = TRIALS[size]
        these = files[size, variant]
        rows = [("kaldi compute-eer piped", [kaldi, "-"], these[2])] if kaldi else []
        rows += rows_for("ours", args.bin, these, reports)
        if args.old_bin:
            rows += rows_for("old", args.old_bin, these, reports)
        print("\n%s trials, %s scores (load average before: %.2f)" % (
            size, variant, os.getloadavg()[0]))
        outputs, cpu = {}, {}
        for name, command, stdin in rows:
            wall, rss, status, out, err, seconds = measured(command, stdin)
            outputs[name], cpu[name] = out, seconds
            print("  %-42s %7.1f s  %6.1f s CPU  peak %6.0f MB  %5.1f B/trial%s" % (
                name, wall, seconds, rss / 1e6, rss / n, "" if status == 0 else
                "  EXIT %d: %s" % (status, err.decode(errors="replace").strip()[-300:])),
                flush=True)
        if kaldi:
            same = outputs["kaldi compute-eer piped"] == outputs["ours piped"]
            print("  Kaldi's EER on stdout %s ours (%s)" % (
                "equals" if same else "DIFFERS FROM", outputs["ours piped"].decode()))
        if args.old_bin:
            for name, _, _ in rows_for("ours", args.bin, these, reports):
                old = name.replace("ours", "old", 1)
                print("  %-42s stdout %s, CPU time %.2fx old's" % (
                    name, "same as old" if outputs[name] == outputs[old] else
                    "DIFFERS from old", cpu[name] / cpu[old]))
        print("  (load average after: %.2f)" % os.getloadavg()[0])


if __name__ == "__main__":
    main()
