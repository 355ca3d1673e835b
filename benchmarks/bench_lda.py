"""Speed of train-lda and the vector tools, end to end (subprocess, file reading and writing).

Generates 200k vectors of dimension 150 from 7000 speakers as a binary Kaldi ark in a temporary
folder, then times each tool as a subprocess (median of 3 runs) and prints the wall-clock and CPU
(user + system) seconds and, for train-lda, the ratio to Kaldi's ivector-compute-lda on the same
data (2.1 s, measured when the Kaldi binaries were built; they are not installed here). The CPU
figure is the fairer one on a shared machine: our tools run single-threaded.

    python benchmarks/bench_lda.py [--utts 200000] [--dim 150] [--speakers 7000] [--repeats 3]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from pauc_backend.kaldi_io import read_vector_table, write_vector_table  # noqa: E402

KALDI_LDA_SECONDS = 2.1


def make_data(folder, num_utts, dim, num_spk, seed=0):
    rng = np.random.default_rng(seed)
    speaker_of = np.sort(rng.integers(0, num_spk, num_utts))
    centres = rng.normal(size=(num_spk, dim)) * np.linspace(3.0, 0.3, dim)
    X = (centres[speaker_of] + rng.normal(size=(num_utts, dim)) + 1.0).astype(np.float32)
    spk = ["spk%05d" % s for s in speaker_of]
    utts = ["%s-u%06d" % (s, i) for i, s in enumerate(spk)]
    write_vector_table("ark:" + os.path.join(folder, "x.ark"), utts, X)
    with open(os.path.join(folder, "utt2spk"), "w") as f:
        f.writelines("%s %s\n" % pair for pair in zip(utts, spk))
    spk2utt = {}
    for utt, s in zip(utts, spk):
        spk2utt.setdefault(s, []).append(utt)
    with open(os.path.join(folder, "spk2utt"), "w") as f:
        f.writelines("%s %s\n" % (s, " ".join(u)) for s, u in spk2utt.items())
    # 1M trials: every speaker against ~143 random utterances.
    trials_rng = np.random.default_rng(seed + 1)
    speakers = sorted(spk2utt)
    k1 = trials_rng.integers(0, len(speakers), 1_000_000)
    k2 = trials_rng.integers(0, num_utts, 1_000_000)
    with open(os.path.join(folder, "trials"), "w") as f:
        f.writelines("%s %s\n" % (speakers[a], utts[b]) for a, b in zip(k1, k2))
    return os.path.getsize(os.path.join(folder, "x.ark"))


def run_tool(folder, name, *args):
    """Wall-clock and CPU (user + system) seconds of one run of bin/<name> as a subprocess."""
    command = [sys.executable, os.path.join(REPO, "bin", name), *args]
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit("%s failed:\n%s" % (" ".join(command), stderr.decode()))
    return elapsed, usage.ru_utime + usage.ru_stime


def median_time(repeats, folder, name, *args):
    """Median wall-clock and CPU seconds over ``repeats`` runs."""
    runs = [run_tool(folder, name, *args) for _ in range(repeats)]
    return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--utts", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=150)
    parser.add_argument("--speakers", type=int, default=7000)
    parser.add_argument("--lda-dim", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        size = make_data(folder, opts.utts, opts.dim, opts.speakers)
        print("data: %d vectors of dim %d, %d speakers, ark %.1f MB, 1M trials"
              % (opts.utts, opts.dim, opts.speakers, size / 1e6))
        if hasattr(os, "getloadavg"):
            print("load average before timing: %.1f (on %d cores)"
                  % (os.getloadavg()[0], os.cpu_count()))
        start = time.perf_counter()
        read_vector_table("ark:" + os.path.join(folder, "x.ark"))
        print("  (in-process read_vector_table of the ark: %.3f s)" % (time.perf_counter() - start))
        print("%-58s %9s %9s" % ("(median of %d runs)" % opts.repeats, "wall", "CPU"))
        wall, cpu = median_time(opts.repeats, folder, "train-lda", "--help")
        print("%-58s %7.3f s %7.3f s" % ("python start-up + imports (train-lda --help)", wall,
                                         cpu))
        wall, cpu = median_time(opts.repeats, folder, "train-lda", "--dim=%d" % opts.lda_dim,
                                "ark:x.ark", "ark:utt2spk", "lda.mat")
        ratio = ""
        if (opts.utts, opts.dim, opts.speakers, opts.lda_dim) == (200_000, 150, 7000, 100):
            ratio = "   Kaldi %.1f s: ratio ours/Kaldi %.2f (wall), %.2f (CPU)" % (
                KALDI_LDA_SECONDS, wall / KALDI_LDA_SECONDS, cpu / KALDI_LDA_SECONDS)
        print("%-58s %7.3f s %7.3f s%s" % ("train-lda --dim=%d (ivector-compute-lda)"
                                           % opts.lda_dim, wall, cpu, ratio))
        steps = [
            ("compute-vector-mean ark:x.ark mean.vec",
             ["compute-vector-mean", "ark:x.ark", "mean.vec"]),
            ("compute-vector-mean (spk2utt form, + num_utts)",
             ["compute-vector-mean", "ark:spk2utt", "ark:x.ark", "ark:spk.ark",
              "ark,t:num_utts.ark"]),
            ("subtract-vector-mean ark:x.ark ark:sub.ark",
             ["subtract-vector-mean", "ark:x.ark", "ark:sub.ark"]),
            ("subtract-vector-mean mean.vec ark:x.ark ark:sub2.ark",
             ["subtract-vector-mean", "mean.vec", "ark:x.ark", "ark:sub2.ark"]),
            ("transform-vectors lda.mat ark:x.ark ark:lda.ark",
             ["transform-vectors", "lda.mat", "ark:x.ark", "ark:lda.ark"]),
            ("normalize-vector-length ark:lda.ark ark:norm.ark",
             ["normalize-vector-length", "ark:lda.ark", "ark:norm.ark"]),
            ("score-cosine-trials (1M trials, spk.ark vs x.ark)",
             ["score-cosine-trials", "--normalize=true", "trials", "ark:spk.ark", "ark:x.ark",
              "scores"]),
        ]
        for label, command in steps:
            wall, cpu = median_time(opts.repeats, folder, *command)
            print("%-58s %7.3f s %7.3f s" % (label, wall, cpu))
        if hasattr(os, "getloadavg"):
            print("load average after timing: %.1f" % os.getloadavg()[0])


if __name__ == "__main__":
    main()
