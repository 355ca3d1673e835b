"""How long the README's quick start takes (issue 37 item 1: "with the expected run time").

Runs the README's quick-start block exactly as tests/test_readme.py does, on the same
synthetic corpus exported to .npy (tests/doc_blocks.py), once as written (its quick setting)
and, with --defaults, once more with ``quick=`` emptied (every train-pauc-auto default), and
prints wall and CPU seconds (this process's children: every tool of the block) with the load
average before and after, as Markdown lines for benchmarks/RESULTS_speed.md.

    nice python benchmarks/bench_quickstart.py [--defaults] [--keep DIR]
"""

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from doc_blocks import README, fenced_blocks, make_quickstart_corpus, tool_env  # noqa: E402


def run(body, cwd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    start = time.monotonic()
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", body], cwd=cwd,
                          env=tool_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(proc.stderr.decode()[-2000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, load, os.getloadavg()[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--defaults", action="store_true",
                        help="also run it with quick= (train-pauc-auto's defaults)")
    parser.add_argument("--keep", help="work in this directory (kept) instead of a temp one")
    args = parser.parse_args()
    block = next(b.body for b in fenced_blocks(README) if b.info == "sh")
    settings = [("the README's quick setting", block)]
    if args.defaults:
        settings.append(("train-pauc-auto's defaults (quick= emptied)",
                         re.sub(r'^quick="[^"]*"', "quick=", block, count=1, flags=re.M)))
    base = args.keep or tempfile.mkdtemp(prefix="bench_quickstart.")
    print("uname: %s; %d CPUs; %s" % (" ".join(os.uname()[::2]), os.cpu_count(),
                                      time.strftime("%Y-%m-%d %H:%M")))
    for name, body in settings:
        work = os.path.join(base, re.sub(r"\W+", "_", name))
        os.makedirs(work, exist_ok=True)
        trials = make_quickstart_corpus(work)
        wall, cpu, load0, load1 = run(body, work)
        print("- %s (%d trials): %.0f s wall, %.0f s CPU (all processes), load %.1f -> %.1f"
              % (name, trials, wall, cpu, load0, load1))


if __name__ == "__main__":
    main()
