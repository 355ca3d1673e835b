"""Trial lists of 10^7 and 10^8 trials: wall time and peak memory of every trial tool, with Kaldi.

Generates (streamed to disk, never held in memory) an enrollment x test grid of trials over
synthetic vectors of dim 150 (N_ENROLL enrolled speakers x N trials / N_ENROLL test
utterances; one target per test utterance's speaker), a PLDA trained by train-plda on a
small synthetic training set, and a metric for score-pauc-trials. Then runs, each alone under
``/usr/bin/time`` (wall seconds and peak RSS of the process):

    score-plda-trials, score-cosine-trials, score-pauc-trials, compute-eer-pauc (keyed: scores
    trials; piped form: a ``score label`` file), train-calibration, apply-calibration,
    and Kaldi's ivector-plda-scoring, ivector-compute-dot-products and compute-eer from
    --kaldi-bin where present.

Usage: nice python benchmarks/bench_scale.py [--trials 1e7] [--workdir DIR] [--keep]
         [--kaldi-bin /work/kaldi-build/bin] [--only job,job] [--skip job,job]
(job names as printed, e.g. --skip "KALDI ivector-plda-scoring,score-pauc-trials")
The generated files are deleted afterwards unless --keep (10^8 trials take about 20 GB).
"""

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_plda import write_ark  # noqa: E402

N_ENROLL = 2000
DIM = 150


def write_trials(path, num_test):
    """spkNNNN uttNNNNNNN target|nontarget, grid order; test utterance j belongs to speaker
    j % N_ENROLL. Written one speaker at a time."""
    tests = ["utt%07d" % j for j in range(num_test)]
    owner = np.arange(num_test) % N_ENROLL
    with open(path, "wb", buffering=1 << 22) as out:
        for i in range(N_ENROLL):
            prefix = "spk%04d " % i
            labels = np.where(owner == i, " target\n", " nontarget\n")
            out.write("".join(map(str.__add__, map(prefix.__add__, tests), labels)).encode())


def make_data(work, num_trials, rng):
    num_test = int(round(num_trials / N_ENROLL))
    between = rng.normal(size=(N_ENROLL, DIM)).astype(np.float32)
    write_ark(os.path.join(work, "enroll.ark"), ["spk%04d" % i for i in range(N_ENROLL)],
              between + 0.3 * rng.normal(size=(N_ENROLL, DIM)).astype(np.float32))
    test = between[np.arange(num_test) % N_ENROLL]
    test += 4.0 * rng.normal(size=test.shape).astype(np.float32)
    write_ark(os.path.join(work, "test.ark"), ["utt%07d" % j for j in range(num_test)], test)
    del test
    num_spk, per = 300, 8
    train = np.repeat(rng.normal(size=(num_spk, DIM)), per, axis=0) + rng.normal(
        size=(num_spk * per, DIM))
    utts = ["tr%03d-%02d" % (s, u) for s in range(num_spk) for u in range(per)]
    write_ark(os.path.join(work, "train.ark"), utts, train)
    with open(os.path.join(work, "spk2utt"), "w") as out:
        for s in range(num_spk):
            out.write("tr%03d %s\n" % (s, " ".join(utts[s * per:(s + 1) * per])))
    from pauc_backend.kaldi_io import write_matrix
    A = rng.normal(size=(DIM, DIM)) / np.sqrt(DIM)
    write_matrix(os.path.join(work, "metric"), A @ A.T, binary=True)
    write_trials(os.path.join(work, "trials"), num_test)
    return num_test * N_ENROLL


def timed(name, command, work, log):
    """Run ``command`` (a shell string) in ``work`` under /usr/bin/time: (wall s, peak MB)."""
    full = "/usr/bin/time -f '%%e %%U %%S %%M' -o time.out bash -o pipefail -c %s" % _quote(
        command)
    env = dict(os.environ, PATH=os.path.join(REPO, "bin") + os.pathsep + os.environ["PATH"])
    start = time.time()
    proc = subprocess.run(full, shell=True, cwd=work, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    elapsed = time.time() - start
    with open(os.path.join(work, "time.out")) as f:
        wall, user, system, rss = f.read().split()[-4:]
    status = "ok" if proc.returncode == 0 else "FAILED (%d)" % proc.returncode
    print("%-34s %8.1f s wall %8.1f s cpu %9.0f MB peak RSS  %s  (load %.1f)" % (
        name, float(wall), float(user) + float(system), int(rss) / 1024.0, status,
        os.getloadavg()[0]), flush=True)
    if proc.returncode:
        print(proc.stderr.decode(errors="replace")[-2000:], file=sys.stderr)
    log.write("== %s (%.1f s)\n%s\n" % (name, elapsed, proc.stderr.decode(errors="replace")
                                         [-3000:]))
    return float(wall), int(rss) / 1024.0


def _quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


JOBS = [
    ("train-plda (setup)", "train-plda ark:spk2utt ark:train.ark plda", False),
    ("score-plda-trials", "score-plda-trials plda ark:enroll.ark ark:test.ark trials "
     "scores_plda", False),
    ("KALDI ivector-plda-scoring", "{kaldi}/ivector-plda-scoring plda ark:enroll.ark "
     "ark:test.ark \"cut -d' ' -f1,2 trials |\" scores_kaldi", True),
    ("score-cosine-trials", "score-cosine-trials trials ark:enroll.ark ark:test.ark "
     "scores_cos", False),
    ("KALDI ivector-compute-dot-products", "{kaldi}/ivector-compute-dot-products "
     "\"cut -d' ' -f1,2 trials |\" ark:enroll.ark ark:test.ark scores_kaldi_dot", True),
    ("score-pauc-trials", "score-pauc-trials metric ark:enroll.ark ark:test.ark trials "
     "scores_pauc", False),
    ("compute-eer-pauc scores trials", "compute-eer-pauc scores_plda trials", False),
    ("(setup: score label file)", "paste -d' ' <(cut -d' ' -f3 scores_plda) "
     "<(cut -d' ' -f3 trials) > score_label", False),
    ("compute-eer-pauc score_label", "compute-eer-pauc score_label", False),
    ("compute-eer-pauc - (pipe)", "cat score_label | compute-eer-pauc -", False),
    ("KALDI compute-eer", "{kaldi}/compute-eer score_label", True),
    ("train-calibration", "train-calibration trials scores_plda cal.mdl", False),
    ("apply-calibration", "apply-calibration cal.mdl scores_plda llr", False),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=float, default=1e7)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--kaldi-bin", default="/work/kaldi-build/bin")
    parser.add_argument("--only", default="", help="comma-separated job names to run")
    parser.add_argument("--skip", default="", help="comma-separated job names to skip")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench_scale.", dir=args.workdir)
    print("date %s, load %s" % (datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
                                os.getloadavg()), flush=True)
    try:
        start = time.time()
        num = make_data(work, args.trials, np.random.default_rng(0))
        print("generated %d trials (%d x %d) in %.0f s, trials file %.2f GB" % (
            num, N_ENROLL, num // N_ENROLL, time.time() - start,
            os.path.getsize(os.path.join(work, "trials")) / 1e9), flush=True)
        kaldi = args.kaldi_bin if os.path.isdir(args.kaldi_bin) else None
        only = set(filter(None, args.only.split(",")))
        skip = set(filter(None, args.skip.split(",")))
        with open(os.path.join(work, "bench.log"), "w") as log:
            for name, command, is_kaldi in JOBS:
                if is_kaldi and kaldi is None:
                    continue
                if (only and name not in only and "setup" not in name) or name in skip:
                    continue
                timed(name, command.format(kaldi=kaldi), work, log)
        print("load after: %s" % (os.getloadavg(),))
        if args.keep:
            print("files kept in", work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
