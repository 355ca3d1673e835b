"""Where the test suite's time goes: CPU seconds per test module and per tool, tool starts.

Runs ``python -m pytest <pytest args>`` from the checkout (default: the whole suite, as
``.ci/run`` does, on its two xdist workers) with two probes, and prints Markdown for
benchmarks/RESULTS_speed.md:

- a pytest plugin (``-p``) that records, for each test phase (setup, call, teardown), the
  CPU seconds of the pytest process and of the children it waited for (getrusage: every tool,
  recipe and Kaldi program the test started) and its wall seconds; summed per module. A
  module-scoped fixture counts in the first test that uses it;
- a ``sitecustomize`` on PYTHONPATH that makes every Python process the tests start (our
  tools, recipe steps, forked pool workers) append its name, the test and its own CPU
  seconds at exit to a log: how many tool starts each module makes and what they cost. Its
  CPU stops at ``atexit`` (the interpreter's teardown after it, ~15 ms a numpy tool, is not
  in it: the per-module figures are).

With ``--compare A B`` it prints the per-module CPU of two earlier runs side by side
(``--out`` directories of this script): run both in the same hour, or better at the same
time, since CPU seconds also grow with the machine's load (cache and core sharing).

    python benchmarks/bench_suite.py --out /tmp/suite_after [-- -n 0 tests/cli]
    python benchmarks/bench_suite.py --compare /tmp/suite_before /tmp/suite_after
"""

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PLUGIN = '''
import json, os, resource, time
import pytest

def _cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime

def _phase(item, phase):
    (own, kids), wall = _cpu(), time.monotonic()
    yield
    (own2, kids2), wall2 = _cpu(), time.monotonic()
    with open(os.environ["BENCH_SUITE_TESTS"], "a") as f:
        f.write(json.dumps({"id": item.nodeid, "phase": phase, "cpu": own2 - own + kids2 - kids,
                            "wall": wall2 - wall, "end": time.time(),
                            "worker": os.environ.get("PYTEST_XDIST_WORKER", "-")}) + "\\n")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _phase(item, "setup")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _phase(item, "call")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield from _phase(item, "teardown")
'''

SITECUSTOMIZE = '''
import os, sys
_log = os.environ.get("BENCH_SUITE_TOOLS")
if _log:
    def _record(kind):
        try:
            t = os.times()
            name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "-"
            if name == "hooked_tool.py" and len(sys.argv) > 1:
                name = sys.argv[1]
            elif name == "-c":
                name = "python -c (xdist workers, Python examples)"
            elif name == "__main__.py":
                name = "python -m pytest (the controller; every test with -n 0)"
            test = os.environ.get("PYTEST_CURRENT_TEST", "-").rsplit(" (", 1)[0]
            line = "%s%s\\t%s\\t%.3f\\n" % (kind, name, test, t.user + t.system)
            fd = os.open(_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(fd, line.encode())
            os.close(fd)
        except Exception:
            pass
    import atexit
    atexit.register(_record, "")
    _os_exit = os._exit
    def _exit_recorded(code):      # forked pool workers end by os._exit, past atexit
        _record("fork:")
        _os_exit(code)
    os._exit = _exit_recorded
'''


def run(out, pytest_args):
    os.makedirs(out, exist_ok=True)
    probes = tempfile.mkdtemp(prefix="bench_suite.")
    with open(os.path.join(probes, "bench_suite_plugin.py"), "w") as f:
        f.write(PLUGIN)
    with open(os.path.join(probes, "sitecustomize.py"), "w") as f:
        f.write(textwrap.dedent(SITECUSTOMIZE))
    tests, tools = os.path.join(out, "tests.jsonl"), os.path.join(out, "tools.tsv")
    for path in (tests, tools):
        if os.path.exists(path):
            os.remove(path)
    env = dict(os.environ, BENCH_SUITE_TESTS=tests, BENCH_SUITE_TOOLS=tools,
               PYTHONPATH=os.pathsep.join(filter(None, [probes, os.environ.get("PYTHONPATH")])))
    load = os.getloadavg()
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "bench_suite_plugin", "-q",
                           *pytest_args], cwd=REPO, env=env)
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = {"pytest_args": pytest_args, "exit": proc.returncode, "wall": wall,
               "user": usage.ru_utime, "sys": usage.ru_stime, "load_before": load,
               "load_after": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M")}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f)
    report(out)
    return proc.returncode


def modules(out):
    cpu, wall, count = (collections.Counter() for _ in range(3))
    for line in open(os.path.join(out, "tests.jsonl")):
        row = json.loads(line)
        module = row["id"].split("::")[0]
        cpu[module] += row["cpu"]
        wall[module] += row["wall"]
        count[module] += row["phase"] == "call"
    return cpu, wall, count


def tool_starts(out):
    starts, cpu = collections.Counter(), collections.Counter()
    path = os.path.join(out, "tools.tsv")
    if os.path.exists(path):
        for line in open(path):
            name, test, seconds = line.rstrip("\n").split("\t")
            starts[name, test.split("::")[0]] += 1
            cpu[name, test.split("::")[0]] += float(seconds)
    return starts, cpu


def report(out, top=25):
    s = json.load(open(os.path.join(out, "summary.json")))
    cpu, wall, count = modules(out)
    starts, tool_cpu = tool_starts(out)
    print("\n%s, pytest %s: exit %d, %.0f s wall, %.0f s user + %.0f s system (every process); "
          "load %.1f before, %.1f after" % (s["date"], " ".join(s["pytest_args"]) or "(all)",
                                            s["exit"], s["wall"], s["user"], s["sys"],
                                            s["load_before"][0], s["load_after"][0]))
    per_module = collections.Counter()
    for (name, module), n in starts.items():
        if not name.startswith("fork:"):
            per_module[module] += n
    print("%d tests in %d modules: %.0f CPU seconds in the tests; %d Python processes started "
          "(%.0f CPU seconds up to their exit)\n" % (sum(count.values()), len(cpu),
                                                     sum(cpu.values()), sum(per_module.values()),
                                                     sum(tool_cpu.values())))
    print("| Module | tests | CPU s | wall s | Python starts |")
    print("|---|---:|---:|---:|---:|")
    for module, seconds in cpu.most_common(top):
        print("| `%s` | %d | %.1f | %.1f | %d |" % (module, count[module], seconds, wall[module],
                                                  per_module[module]))
    by_tool, by_tool_cpu = collections.Counter(), collections.Counter()
    for (name, _), n in starts.items():
        by_tool[name] += n
    for (name, _), seconds in tool_cpu.items():
        by_tool_cpu[name] += seconds
    print("\n| Process | starts | CPU s | CPU s a start |")
    print("|---|---:|---:|---:|")
    for name, seconds in by_tool_cpu.most_common(top):
        print("| %s | %d | %.1f | %.3f |" % (name, by_tool[name], seconds,
                                             seconds / by_tool[name]))
    ends = collections.defaultdict(float)
    for line in open(os.path.join(out, "tests.jsonl")):
        row = json.loads(line)
        ends[row["worker"]] = max(ends[row["worker"]], row["end"])
    if len(ends) > 1:
        first = min(ends.values())
        print("\nWorkers end: " + ", ".join("%s +%.0f s" % (w, e - first)
                                           for w, e in sorted(ends.items())))


def compare(a, b, top=40):
    cpu_a, _, _ = modules(a)
    cpu_b, _, _ = modules(b)
    names = [os.path.basename(d.rstrip("/")) for d in (a, b)]
    print("| Module | %s | %s |" % tuple(names))
    print("|---|---:|---:|")
    for module in sorted(set(cpu_a) | set(cpu_b),
                         key=lambda m: -max(cpu_a.get(m, 0), cpu_b.get(m, 0)))[:top]:
        print("| `%s` | %.1f | %.1f |" % (module, cpu_a.get(module, 0), cpu_b.get(module, 0)))
    print("| all %d modules | %.0f | %.0f |" % (len(set(cpu_a) | set(cpu_b)),
                                                sum(cpu_a.values()), sum(cpu_b.values())))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="directory for the run's logs")
    parser.add_argument("--compare", nargs=2, metavar="DIR", help="two earlier --out dirs")
    parser.add_argument("--report", metavar="DIR", help="print an earlier run's tables")
    parser.add_argument("pytest_args", nargs="*", help="after --: arguments for pytest")
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
        return 0
    if args.report:
        report(args.report)
        return 0
    return run(args.out or tempfile.mkdtemp(prefix="bench_suite_out."), args.pytest_args)


if __name__ == "__main__":
    sys.exit(main())
