"""End-to-end speed of train-plda and score-plda-trials against Kaldi's figures.

Generates 200k training vectors of dim 150 from 7000 speakers and 1M trials (2000 enrolled
speakers x 20000 test utterances, trials drawn at random, so the sparse scoring path is used)
as Kaldi binary arks in a temp dir, then times our tools as subprocesses (reading and writing
files included), median of 3 (wall time, and the CPU time of the child, which a busy machine
inflates less). Kaldi's ivector-compute-plda and ivector-plda-scoring took 7.3 s
and 6.5 s on this machine for data of this size (figures from the issue).

Usage: python benchmarks/bench_plda.py [--repeats 3] [--keep DIR]
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KALDI_SECONDS = {"train-plda": 7.3, "score-plda-trials": 6.5}


def write_ark(path, keys, X):
    """Binary float-vector ark (``key \\0BFV \\x04<dim>`` + floats), vectorised: equal-length keys."""
    X = np.ascontiguousarray(X, dtype=np.float32)
    width = len(keys[0])
    assert all(len(k) == width for k in keys)
    dim = X.shape[1]
    record = np.dtype([("key", "S%d" % width), ("head", "S7"), ("dim", "<i4"),
                       ("data", "<f4", (dim,))])
    out = np.empty(len(keys), dtype=record)
    out["key"] = [k.encode() for k in keys]
    out["head"] = b" \0BFV \x04"
    out["dim"] = dim
    out["data"] = X
    out.tofile(path)


def make_data(folder, rng):
    num_spk, num_utt, dim = 7000, 200000, 150
    sizes = np.full(num_spk, num_utt // num_spk)
    sizes[: num_utt - sizes.sum()] += 1
    rng.shuffle(sizes)
    spk = ["spk%05d" % s for s in range(num_spk)]
    utt_spk = np.repeat(np.arange(num_spk), sizes)
    utts = ["spk%05d-u%03d" % (s, i) for s, n in zip(range(num_spk), sizes) for i in range(n)]
    between = rng.normal(size=(dim, dim)) / np.sqrt(dim)
    speakers = rng.normal(size=(num_spk, dim)) @ between
    X = speakers[utt_spk] + rng.normal(size=(num_utt, dim)) * 0.7
    write_ark(os.path.join(folder, "train.ark"), utts, X)
    with open(os.path.join(folder, "spk2utt"), "w") as f:
        start = 0
        for s, n in zip(spk, sizes):
            f.write(s + " " + " ".join(utts[start:start + n]) + "\n")
            start += n

    num_enroll, num_test, num_trials = 2000, 20000, 1000000
    enroll_keys = ["enr%05d" % i for i in range(num_enroll)]
    test_keys = ["tst%06d" % i for i in range(num_test)]
    enroll_spk = rng.normal(size=(num_enroll, dim)) @ between
    write_ark(os.path.join(folder, "enroll.ark"),
              enroll_keys, enroll_spk + rng.normal(size=(num_enroll, dim)) * 0.4)
    test_spk = rng.integers(0, num_enroll, size=num_test)
    write_ark(os.path.join(folder, "test.ark"), test_keys,
              enroll_spk[test_spk] + rng.normal(size=(num_test, dim)) * 0.7)
    with open(os.path.join(folder, "num_utts.ark"), "w") as f:
        f.writelines("%s %d \n" % (k, n) for k, n in zip(enroll_keys,
                                                        rng.integers(1, 6, num_enroll)))
    pairs = rng.choice(num_enroll * num_test, size=num_trials, replace=False)
    e, t = np.divmod(np.sort(pairs), num_test)
    labels = np.where(test_spk[t] == e, "target", "nontarget")
    ek, tk = np.array(enroll_keys), np.array(test_keys)
    with open(os.path.join(folder, "trials"), "w") as f:
        f.write("\n".join(np.char.add(np.char.add(np.char.add(ek[e], " "), tk[t]),
                                      np.char.add(" ", labels))) + "\n")


def time_command(argv, cwd, repeats):
    env = dict(os.environ)
    env["PATH"] = os.path.join(REPO, "bin") + os.pathsep + env.get("PATH", "")
    seconds, cpu = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
        seconds.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if proc.returncode != 0:
            sys.exit("%s failed:\n%s" % (argv[1], proc.stderr.decode()[-2000:]))
    return statistics.median(seconds), statistics.median(cpu)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", help="generate into this folder and keep it")
    args = parser.parse_args()
    folder = args.keep or tempfile.mkdtemp(prefix="bench_plda_")
    os.makedirs(folder, exist_ok=True)
    start = time.perf_counter()
    make_data(folder, np.random.default_rng(0))
    print("data generated in %.1f s in %s" % (time.perf_counter() - start, folder))
    bin_dir = os.path.join(REPO, "bin")
    commands = {
        "train-plda": [sys.executable, os.path.join(bin_dir, "train-plda"), "ark:spk2utt",
                       "ark:train.ark", "plda"],
        "score-plda-trials": [sys.executable, os.path.join(bin_dir, "score-plda-trials"),
                              "--num-utts=ark:num_utts.ark", "plda", "ark:enroll.ark",
                              "ark:test.ark", "trials", "scores"],
    }
    print("load average before: %.2f (on %d cores)" % (os.getloadavg()[0], os.cpu_count()))
    for name, argv in commands.items():
        ours, cpu = time_command(argv, folder, args.repeats)
        print("%-18s ours %6.2f s wall (%5.2f s CPU)   Kaldi %5.1f s   ours/Kaldi %.2f" % (
            name, ours, cpu, KALDI_SECONDS[name], ours / KALDI_SECONDS[name]))
    print("load average after: %.2f" % os.getloadavg()[0])
    if not args.keep:
        for name in os.listdir(folder):
            os.remove(os.path.join(folder, name))
        os.rmdir(folder)


if __name__ == "__main__":
    main()
