"""CPU time of each step of the automatic back-end (AutoBackend, the estimator behind
train-pauc-auto) on a corpus written by paper_corpus.py, in one process (n_jobs=1, so the CPU
time of every fold task is this process's own), and optionally a cProfile of one step.

Steps: prepare (subset, folds, held-out trials), stage 1 (the LDA screen: the cheap systems
at every candidate dimension on every fold), stage 2 (every candidate at the promoted
dimension on the screening folds), stage 3 (the promoted ones on the other folds), finish
(fusion weights, the final model on all speakers).

Usage: nice python benchmarks/profile_auto_stages.py --data=/work/bench-data/paper
          [--profile=1] [--top=30] [--stages=1] [--args "max_vectors=50000 ..."]
--stages=1 stops after stage 1 (the screen alone); --profile=S prints the cProfile of step S
(prepare, 1, 2, 3 or finish) by internal time. Prints date and load before and after: CPU
seconds are meaningful on a busy machine, wall seconds are not.
"""

import argparse
import cProfile
import datetime
import os
import pstats
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402

from pauc_backend.kaldi_io import read_token_vector_table, read_vector_table  # noqa: E402
from pauc_backend.models.auto import AutoBackend  # noqa: E402


def load():
    return "%.2f %.2f %.2f" % os.getloadavg()


def read_corpus(data):
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
    parser.add_argument("--args", default="", help="estimator parameters, name=value ...")
    args = parser.parse_args()
    print("start %s UTC; uptime load %s" % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), load()), flush=True)
    X, y = read_corpus(args.data)
    print("read %d x %d, %d speakers" % (X.shape + (np.unique(y).size,)), flush=True)
    model = AutoBackend(n_jobs=1, **parse_args(args.args))
    profiler = None

    def step(name, fn):
        nonlocal profiler
        if args.profile == name:
            profiler = cProfile.Profile()
            profiler.enable()
        cpu, wall = time.process_time(), time.time()
        out = fn()
        cpu, wall = time.process_time() - cpu, time.time() - wall
        if args.profile == name:
            profiler.disable()
        print("%-8s cpu %7.1f s  wall %7.1f s  load %s" % (name, cpu, wall, load()),
              flush=True)
        return out

    plan = step("prepare", lambda: model.prepare(X, y))
    for stage in range(1, args.stages + 1):
        step(str(stage), lambda: model.add_fold_results(
            plan, stage, model.cross_fit_stage(plan, stage)))
    if args.stages == 3:
        step("finish", lambda: model.finish(plan))
        print("chose %s, LDA %s" % ("+".join(model.members_), model.lda_dim_))
    for line in model.crossfit_:
        print(line)
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.top)
    print("end %s UTC; uptime load %s" % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), load()))


if __name__ == "__main__":
    main()
