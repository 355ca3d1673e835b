"""CPU time and bytes of each step of the automatic back-end (AutoBackend, the estimator behind
train-pauc-auto) on a corpus written by paper_corpus.py, in one process (n_jobs=1, so the CPU
time of every fold task is this process's own), and optionally a cProfile of one step.

Steps: read (the training table, as train-pauc-auto reads it: cli/framework/training_table.py,
held up to --in-memory-mb, else spooled; --in-memory reads the whole table into an array
instead, as the first version of this script did), prepare (subset, folds, held-out
trials), stage 1 (the LDA screen: the cheap systems at every candidate dimension on every
fold), stage 2 (every candidate at the promoted dimension on the screening folds), stage 3
(the promoted ones on the other folds), finish (fusion weights, the final model on all
speakers). Per step: CPU seconds (time.process_time), wall seconds, the bytes the process
read and wrote (rchar/wchar of /proc/self/io: every read(2)/pread(2) and write(2), page
cache or disk alike) and the peak RSS within the step (VmHWM, reset before each step through
/proc/self/clear_refs).

Below the steps, the split of the work by function ("parts"): the inclusive CPU seconds,
calls and bytes read of the pieces the cost is made of (fold tasks, the LDA/PLDA statistics,
the metrics, the discriminative PLDA, the held-out scoring, the final training's passes),
measured by wrapping those functions in this process (no profiler overhead; nested parts
are counted in each of them, e.g. a fold task's LDA in both).

Usage: nice python benchmarks/profile_auto_stages.py --data=/work/bench-data/paper
          [--in-memory-mb=256 | --in-memory] [--profile=finish] [--top=30] [--stages=1]
          [--args "max_vectors=50000 ..."]
--stages=1 stops after stage 1 (the screen alone); --profile=S prints the cProfile of step S
(read, prepare, 1, 2, 3 or finish) by internal time. Prints date and load before and after:
CPU seconds and bytes are meaningful on a busy machine, wall seconds are not.
"""

import argparse
import cProfile
import collections
import datetime
import functools
import os
import pstats
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402

from pauc_backend.kaldi_io import read_token_vector_table, read_vector_table  # noqa: E402
from pauc_backend.models.auto import AutoBackend  # noqa: E402

# (module, attribute path) of the parts whose inclusive cost is reported (module doc)
PARTS = [
    ("pauc_backend.models.auto.folds", "fold_task"),
    ("pauc_backend.models.lda", "LDA.fit_path"),
    ("pauc_backend.models.lda", "LDA.fit"),
    ("pauc_backend.models.backend_pipeline", "BackendPipeline.fit"),
    ("pauc_backend.models.backend_pipeline", "BackendPipeline._plda_stats"),
    ("pauc_backend.models.backend_pipeline", "BackendPipeline._fit_dplda"),
    ("pauc_backend.models.backend_pipeline", "BackendPipeline.project"),
    ("pauc_backend.models.pipeline_metrics", "metric_rows"),
    ("pauc_backend.models.pipeline_metrics", "training_space"),
    ("pauc_backend.models.backend_pipeline", "BackendPipeline.features"),
    ("pauc_backend.models.backend_pipeline", "BackendPipeline.score"),
    ("pauc_backend.models.backend_pipeline", "cohort_vectors"),
    ("pauc_backend.models.backend_pipeline", "float32_mean"),
    ("pauc_backend.models.plda", "PLDA.fit_stats"),
    ("pauc_backend.models.metric_learning", "PaucMetric.fit"),
    ("pauc_backend.models.ppa", "pauc_batch"),
    ("pauc_backend.models.ppa", "ppa_step"),
    ("pauc_backend.models.score_norm", "blockwise_cohort_statistics"),
    ("pauc_backend.models.crossfit", "trial_figures"),
    ("pauc_backend.models.auto.crossfit", "_rate_all"),
    ("pauc_backend.models.auto.crossfit", "CrossFit.recompute"),
    ("pauc_backend.models.auto.final", "training_folds_data"),
    ("pauc_backend.models.auto.final", "calibrate"),
    ("pauc_backend.models.auto.qmf", "norm_median"),
    ("pauc_backend.models.auto.adapt", "domain_of"),
    ("pauc_backend.models.row_table", "SpooledRows.read_rows"),
    ("pauc_backend.models.row_table", "SpooledRows.write"),
]


def load():
    return "%.2f %.2f %.2f" % os.getloadavg()


def io_bytes():
    """(rchar, wchar) of this process so far (/proc/self/io)."""
    try:
        with open("/proc/self/io") as f:
            fields = dict(line.split(":") for line in f)
        return int(fields["rchar"]), int(fields["wchar"])
    except (OSError, KeyError, ValueError):
        return 0, 0


def reset_peak():
    """Reset VmHWM (Linux: 5 to /proc/self/clear_refs); False where not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_mb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class Parts:
    """Inclusive CPU seconds, calls and bytes read/written of the wrapped functions."""

    def __init__(self):
        self.cpu = collections.Counter()
        self.calls = collections.Counter()
        self.read = collections.Counter()
        self.written = collections.Counter()
        self.depth = collections.Counter()
        self.tasks = []      # per fold task: (CPU s, CPU s of its pAUCMetrics)

    def wrap(self, module_name, path):
        module = __import__(module_name, fromlist=["_"])
        owner, name = module, path
        if "." in path:
            cls, name = path.split(".")
            owner = getattr(module, cls)
        original = getattr(owner, name)
        label = path
        parts = self

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            parts.depth[label] += 1
            outer = parts.depth[label] == 1     # recursion: count the outermost call
            if outer:
                cpu, (r, w) = time.process_time(), io_bytes()
                metric = parts.cpu["PaucMetric.fit"]
            try:
                return original(*args, **kwargs)
            finally:
                parts.depth[label] -= 1
                if outer:
                    r2, w2 = io_bytes()
                    if label == "fold_task":
                        parts.tasks.append((time.process_time() - cpu,
                                            parts.cpu["PaucMetric.fit"] - metric))
                    parts.cpu[label] += time.process_time() - cpu
                    parts.read[label] += r2 - r
                    parts.written[label] += w2 - w
                    parts.calls[label] += 1

        setattr(owner, name, wrapper)
        # modules that imported the function by name
        for other in list(sys.modules.values()):
            if other is None or other is module or not getattr(other, "__name__", "").startswith(
                    "pauc_backend"):
                continue
            if "." not in path and getattr(other, name, None) is original:
                setattr(other, name, wrapper)

    def snapshot(self):
        return (collections.Counter(self.cpu), collections.Counter(self.calls),
                collections.Counter(self.read), collections.Counter(self.written))

    def report(self, since, title):
        cpu0, calls0, read0, written0 = since
        print("  parts of %s (inclusive CPU s, calls, GB read, GB written):" % title)
        for _, path in PARTS:
            cpu = self.cpu[path] - cpu0[path]
            calls = self.calls[path] - calls0[path]
            if calls:
                print("    %-42s %8.1f s %7d  %6.2f GB  %6.2f GB" % (
                    path, cpu, calls, (self.read[path] - read0[path]) / 1e9,
                    (self.written[path] - written0[path]) / 1e9))


def makespan(tasks, jobs=2, cores=2, threads=True):
    """Seconds to run ``tasks`` ((CPU s, CPU s of its two pAUCMetrics) each) in ``jobs``
    workers taking them in order, on ``cores`` cores, each at the speed of one core per
    thread (fluid sharing when the threads outnumber the cores). With ``threads`` a task's
    metrics train in two threads (models.auto.folds): that part can use two cores."""
    pending = list(tasks)
    running = []         # [serial left, metric work left]
    clock = 0.0
    while pending or running:
        while pending and len(running) < jobs:
            cpu, metric = pending.pop(0)
            running.append([cpu - metric, metric])
        want = [1 if r[0] > 0 else (2 if threads else 1) for r in running]
        share = min(1.0, cores / float(sum(want)))
        rates = [w * share for w in want]
        step = min((r[0] if r[0] > 0 else r[1]) / rate for r, rate in zip(running, rates))
        clock += step
        for r, rate in zip(running, rates):
            if r[0] > 0:
                r[0] -= step * rate
            else:
                r[1] -= step * rate
        running = [r for r in running if r[0] > 1e-9 or r[1] > 1e-9]
    return clock


def estimate(parts, spans, cpus, finish_metrics):
    """Print an ESTIMATE (not a measurement) of train-pauc-auto --num-jobs=2's wall time on a
    quiet 2-core machine from the CPU seconds measured here: each stage's fold tasks
    list-scheduled on 2 workers (``makespan``; their metrics in 2 threads, or in sequence as
    before issue 43), the rest of a stage (the fusions' rating, in 2 processes) halved, the
    final training serial but its metrics (2 forked processes when there are 2)."""
    stages = ["1", "2", "3"]
    bounds = [spans[k] for k in stages] + [len(parts.tasks)]
    metric_cpu, metric_calls = finish_metrics
    rest = (cpus["read"] + cpus["prepare"] + cpus["finish"]
            - (metric_cpu / 2.0 if metric_calls >= 2 else 0.0))
    for threads in (False, True):
        spent = []
        for name, a, b in zip(stages, bounds[:-1], bounds[1:]):
            tasks = parts.tasks[a:b]
            other = cpus[name] - sum(cpu for cpu, _ in tasks)
            spent.append(makespan(tasks, threads=threads) + other / 2.0)
        print("estimate (2 jobs on 2 idle cores; a task's metrics in %s): stages %s s, "
              "%.0f s in all" % ("threads" if threads else "sequence",
                                 " / ".join("%.0f" % v for v in spent), sum(spent) + rest))


def read_corpus(data):
    """The whole table in an array, in spk2utt order (the first version's --in-memory)."""
    keys, X = read_vector_table("scp:%s/train.scp" % data)
    position = {k: i for i, k in enumerate(keys)}
    spk2utt = read_token_vector_table("ark:%s/spk2utt" % data)
    rows, labels = [], []
    for s, utts in enumerate(spk2utt.values()):
        rows.extend(position[u] for u in utts)
        labels.extend([s] * len(utts))
    rows = np.asarray(rows)
    if not np.array_equal(rows, np.arange(len(keys))):
        X = X[rows]
    return X, np.asarray(labels)


class _Log:
    def log(self, message, depth=1):
        print("LOG %s" % message, flush=True)

    def warning(self, message, depth=1):
        print("WARNING %s" % message, flush=True)


def read_table(data, model, in_memory_mb):
    """The TrainingTable as train-pauc-auto reads it (held or spooled)."""
    from pauc_backend.cli.framework.training_table import read_training_table
    return read_training_table(_Log(), "scp:%s/train.scp" % data, "ark:%s/spk2utt" % data,
                               (model.max_speakers, model.max_vectors, model.random_state),
                               in_memory_mb)


def parse_args(text):
    out = {}
    for item in text.split():
        name, value = item.split("=", 1)
        try:
            out[name] = int(value)
        except ValueError:
            out[name] = float(value) if value.replace(".", "", 1).isdigit() else value
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--profile", default="")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--stages", type=int, default=3)
    parser.add_argument("--in-memory-mb", type=float, default=256.0)
    parser.add_argument("--in-memory", action="store_true")
    parser.add_argument("--args", default="", help="estimator parameters, name=value ...")
    args = parser.parse_args()
    print("start %s UTC; uptime load %s" % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), load()), flush=True)
    parts = Parts()
    for module, path in PARTS:
        parts.wrap(module, path)
    model = AutoBackend(n_jobs=1, log=lambda line: print("LOG %s" % line, flush=True),
                        **parse_args(args.args))
    model.check_params()
    profiler = None
    totals = [0.0, 0.0, 0, 0, 0.0]
    rows = []

    spans, cpus, finish_metrics = {}, {}, []

    def step(name, fn):
        nonlocal profiler
        spans[name] = len(parts.tasks)
        if args.profile == name:
            profiler = cProfile.Profile()
            profiler.enable()
        reset_peak()
        since = parts.snapshot()
        cpu, wall, (r, w) = time.process_time(), time.time(), io_bytes()
        out = fn()
        cpu, wall = time.process_time() - cpu, time.time() - wall
        r2, w2 = io_bytes()
        if args.profile == name:
            profiler.disable()
        peak = peak_mb()
        line = ("%-8s cpu %7.1f s  wall %7.1f s  read %6.2f GB  written %6.2f GB  peak %6.0f "
                "MB  load %s" % (name, cpu, wall, (r2 - r) / 1e9, (w2 - w) / 1e9, peak, load()))
        print(line, flush=True)
        rows.append(line)
        parts.report(since, name)
        cpus[name] = cpu
        if name == "finish":
            finish_metrics.extend([parts.cpu["PaucMetric.fit"] - since[0]["PaucMetric.fit"],
                                   parts.calls["PaucMetric.fit"] - since[1]["PaucMetric.fit"]])
        for i, v in enumerate((cpu, wall, r2 - r, w2 - w)):
            totals[i] += v
        totals[4] = max(totals[4], peak)
        return out

    if args.in_memory:
        X, y = step("read", lambda: read_corpus(args.data))
        table = None
    else:
        table = step("read", lambda: read_table(args.data, model, args.in_memory_mb))
        X, y = table, None
    print("read %d x %d, %d speakers (%s)" % (
        X.shape + (np.unique(table.y if table is not None else y).size,
                   "held" if table is None or table.in_memory else "spooled")), flush=True)
    plan = step("prepare", lambda: model.prepare(X, y))
    for stage in range(1, args.stages + 1):
        step(str(stage), lambda: model.add_fold_results(
            plan, stage, model.cross_fit_stage(plan, stage)))
    if args.stages == 3:
        step("finish", lambda: model.finish(plan))
        print("chose %s, LDA %s" % ("+".join(model.members_), model.lda_dim_))
    print("\n".join(rows))
    print("total    cpu %7.1f s  wall %7.1f s  read %6.2f GB  written %6.2f GB  peak %6.0f MB"
          % (totals[0], totals[1], totals[2] / 1e9, totals[3] / 1e9, totals[4]))
    parts.report((collections.Counter(),) * 4, "the whole run")
    if args.stages == 3:
        estimate(parts, spans, cpus, finish_metrics)
    for line in model.crossfit_:
        print(line)
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.top)
    print("end %s UTC; uptime load %s" % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), load()))


if __name__ == "__main__":
    main()
