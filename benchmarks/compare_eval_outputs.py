#!/usr/bin/env python3
"""compute-eer-pauc of two checkouts on the reviewers' fixture: the same bytes out (issue 35).

Runs the tools of --old-bin (e.g. main's, before a change) and --bin (this checkout's) on the
fixture of bench_eval_fixture.py (made there if missing) and compares, case by case, stdout
byte for byte, the exit status and stderr with each message's code position ``(tool[version]:
function():file:line)`` left out (the lines of the code move, the messages must not). Cases:
the piped form and the keyed form in the trials' order, each with --report=kaldi, table and
json, with and without --llr; three priors; --eer-method=rocch; the keyed form joined by key
(scores through a pipe). Exit status 1 if any case differs.

--variants adds the same cases on bench_eval_fixture.py's variants of the scores (``inverted``:
negative 9-character scores ranked upside down, minDCF's longest run; ``quantised``: one
decimal, ties across the classes everywhere, minDCF's tie order). Each case line also gives
both sides' CPU time (user + system of the child) and peak RSS; each variant ends with the
new/old ratio of the summed CPU times.

    python benchmarks/compare_eval_outputs.py --old-bin /work/main/bin [--dir ../bench-fixture]
        [--size 10M] [--bin DIR] [--variants fixture,inverted,quantised]
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_eval_fixture import ROOT, derived, make_fixture, measured  # noqa: E402

POSITION = re.compile(rb"^(LOG|WARNING|ERROR) \(([^\[\s]+)\[[^\]]*\]:\S*\) ", re.M)


def cases(scores, trials, piped):
    """(name, arguments, stdin) of each comparison."""
    out = []
    for report in ("kaldi", "table", "json"):
        for llr in ("false", "true"):
            options = ["--report=" + report, "--llr=" + llr]
            out.append(("piped %s" % " ".join(options), options + ["-"], piped))
            out.append(("keyed %s" % " ".join(options), options + [scores, trials], None))
    priors = ["--report=json", "--p-target=0.01,0.005,0.001", "--llr=true"]
    out.append(("keyed three priors", priors + [scores, trials], None))
    out.append(("piped three priors", priors + ["-"], piped))
    out.append(("keyed rocch", ["--report=json", "--eer-method=rocch", scores, trials], None))
    out.append(("keyed joined by key", ["--report=json", "--llr=true", "cat '%s' |" % scores,
                                        trials], None))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-bin", required=True)
    parser.add_argument("--bin", default=os.path.join(ROOT, "bin"))
    parser.add_argument("--dir", default=os.path.join(ROOT, os.pardir, "bench-fixture"))
    parser.add_argument("--size", default="10M")
    parser.add_argument("--variants", default="fixture")
    args = parser.parse_args()
    fixture = make_fixture(os.path.abspath(args.dir), args.bin, [args.size])[args.size]
    differ = total = 0
    print("load average %.2f, %d CPUs" % (os.getloadavg()[0], os.cpu_count()))
    for variant in args.variants.split(","):
        files = derived(fixture, variant)
        cpu = [0.0, 0.0]
        for name, arguments, stdin in cases(*files):
            results = []
            for side, bin_dir in enumerate((args.old_bin, args.bin)):
                _, rss, status, out, err, seconds = measured(
                    [sys.executable, os.path.join(bin_dir, "compute-eer-pauc")] + arguments,
                    stdin)
                cpu[side] += seconds
                results.append((status, out, POSITION.sub(rb"\1 (\2) ", err), seconds, rss))
            same = results[0][:3] == results[1][:3]
            differ += not same
            total += 1
            print("%-10s %-46s %s  (old %5.1f s CPU %5.0f MB, new %5.1f s CPU %5.0f MB)" % (
                variant, name, "same" if same else "DIFFERENT", results[0][3],
                results[0][4] / 1e6, results[1][3], results[1][4] / 1e6), flush=True)
            if not same:
                for label, (status, out, err, _, _) in zip(("old", "new"), results):
                    print("  %s: exit %d\n  stdout %r\n  stderr %r" % (
                        label, status, out[-400:], err[-800:]))
        print("%-10s CPU time: old %.1f s, new %.1f s, new/old %.2f (load average %.2f)" % (
            variant, cpu[0], cpu[1], cpu[1] / cpu[0], os.getloadavg()[0]), flush=True)
    print("%d of %d cases differ" % (differ, total))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
