"""One curve from 50,000 to 1.28 M training vectors: time and peak memory of train-pauc-auto
(every default) and of the Kaldi back-end chain (mean, LDA, PLDA: real Kaldi's binaries and
our twins), per size, written to benchmarks/RESULTS_scale_curve.md (issue 35).

Every point is drawn from ONE corpus, bench_paper_scale.py's VoxCeleb one (Kaldi
egs/voxceleb/v2's shape: 1,277,503 x 512 of 7,351 speakers, 8-340 vectors each; written by
``bench_paper_scale.py --scale=voxceleb --data=/work/bench-data/voxceleb``): at n vectors,
every speaker keeps a seeded subset of its vectors, its count scaled by n / 1,277,503 (largest
remainders, at least 2), so every point has all 7,351 speakers and VoxCeleb's spread of
per-speaker counts, and the last point is the corpus itself. A point is a train.scp, spk2utt
and utt2spk in a temporary folder pointing into the corpus' train.ark (no vector is copied).
The 200,000 point is not the paper's corpus (7,363 speakers, 13-40 each:
bench_paper_scale.py --scale=paper), only the same size.

Each step runs alone, as bench_paper_scale.py runs it (its run_step: GNU time and a /proc
watchdog): the chain piped as egs/sre16/v2 run.sh (ours: compute-vector-mean, train-lda,
train-plda; Kaldi: ivector-mean, ivector-compute-lda, ivector-compute-plda), then
train-pauc-auto scp:train.scp ark:spk2utt. Figures per size: wall and CPU seconds (every
process of the step), the peak RSS of the step's largest process (GNU time's maximum RSS:
for train-pauc-auto the largest of the tool and its forked workers, which it waits for; for
a piped chain step the largest process of the pipe) summed over the chain's steps for time
and maximised for memory. Date, `uptime` load and the machine are written with the table:
figures taken at a load above the 2 cores are upper bounds.

Usage (one command; about 30-40 minutes alone on a 2-core machine at the default sizes, an
estimate from issue 35's single runs, not measured):
    nice python benchmarks/bench_scale_curve.py
Options: --sizes 50000,200000,600000,1277503  --voxceleb-data DIR (default
/work/bench-data/voxceleb)  --kaldi-root DIR  --auto-args "..."  --auto-bin DIR
--out benchmarks/RESULTS_scale_curve.md (- : print only)  --max-rss-gb 6  --seed 35.
Smoke run (the driver end to end; about 11 minutes at load 13, figures meaningless; every
speaker keeps at least 2 vectors, so a small size draws more: --sizes=20000 draws 22,449):
    nice -n 10 python benchmarks/bench_scale_curve.py --sizes=20000 --out=- \
        --auto-args="--num-iters=20 --lda-dims=0,100 --num-jobs=1"
"""

import argparse
import datetime
import os
import platform
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_paper_scale import AUTO, CHAIN, KALDI_DEFAULT, load, run_step  # noqa: E402

SIZES = (50000, 200000, 600000, 1277503)
VOXCELEB = "/work/bench-data/voxceleb"


def read_corpus(folder):
    """(speakers, [their utterances], {utterance: its train.scp line}) of the corpus."""
    speakers, utts = [], []
    with open(os.path.join(folder, "spk2utt")) as f:
        for line in f:
            fields = line.split()
            speakers.append(fields[0])
            utts.append(fields[1:])
    lines = {}
    with open(os.path.join(folder, "train.scp")) as f:
        for line in f:
            lines[line.split(None, 1)[0]] = line
    return speakers, utts, lines


def quotas(counts, n):
    """Per-speaker counts scaled to sum to ``n`` (largest remainders), at least min(2, count)."""
    counts = np.asarray(counts, dtype=np.int64)
    share = counts * (n / float(counts.sum()))
    out = np.floor(share).astype(np.int64)
    rest = int(n - out.sum())
    if rest > 0:
        out[np.argsort(-(share - out), kind="stable")[:rest]] += 1
    return np.minimum(counts, np.maximum(out, 2))


def subset(corpus, n, folder, seed):
    """Write the point of ``n`` vectors drawn from ``corpus`` (module doc) to ``folder``;
    returns (vectors, speakers, smallest and largest count)."""
    speakers, utts, lines = corpus
    keep = quotas([len(u) for u in utts], n)
    rng = np.random.RandomState(seed)
    os.makedirs(folder)
    with open(os.path.join(folder, "spk2utt"), "w") as s2u, \
            open(os.path.join(folder, "utt2spk"), "w") as u2s, \
            open(os.path.join(folder, "train.scp"), "w") as scp:
        for spk, mine, k in zip(speakers, utts, keep):
            chosen = [mine[i] for i in np.sort(rng.choice(len(mine), int(k), replace=False))]
            s2u.write("%s %s\n" % (spk, " ".join(chosen)))
            for utt in chosen:
                u2s.write("%s %s\n" % (utt, spk))
                scp.write(lines[utt])
    return int(keep.sum()), len(speakers), int(keep.min()), int(keep.max())


def chain(results):
    """(wall, cpu, peak MB) of the chain's steps, or None if one failed."""
    if not results or not all(r and r["ok"] and r["pipe"] for r in results):
        return None
    return (sum(r["pipe"][0] for r in results), sum(r["pipe"][1] for r in results),
            max(r["pipe"][2] for r in results))


def cells(figures):
    return ["-"] * 3 if figures is None else ["%.1f" % figures[0], "%.1f" % figures[1],
                                               "%.0f" % figures[2]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--voxceleb-data", default=VOXCELEB)
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--kaldi-root", default=KALDI_DEFAULT)
    parser.add_argument("--auto-args", default="")
    parser.add_argument("--auto-bin", default=None)
    parser.add_argument("--out", default=os.path.join(HERE, "RESULTS_scale_curve.md"))
    parser.add_argument("--max-rss-gb", type=float, default=6.0)
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.voxceleb_data, "READY")):
        sys.exit("no corpus in %s: write it with python benchmarks/bench_paper_scale.py "
                 "--scale=voxceleb --data=%s" % (args.voxceleb_data, args.voxceleb_data))
    kaldi = os.path.join(args.kaldi_root, "bin")
    kaldi = kaldi if os.path.exists(os.path.join(kaldi, "ivector-compute-plda")) else None
    sizes = [int(s) for s in args.sizes.split(",")]
    start = (datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), load())
    print("start %s UTC; uptime load %s; %d cores" % (start + (os.cpu_count(),)), flush=True)
    rows = []
    full = read_corpus(args.voxceleb_data)
    total = len(full[2])
    max_rss_kb = int(args.max_rss_gb * 2 ** 20)
    work = tempfile.mkdtemp(prefix="bench_scale_curve.")
    try:
        with open(os.path.join(work, "bench.log"), "w") as log:
            for n in sizes:
                if n >= total:
                    data = args.voxceleb_data
                    counts = [len(u) for u in full[1]]
                    drawn = (total, len(counts), min(counts), max(counts))
                else:
                    data = os.path.join(work, "%d-data" % n)
                    drawn = subset(full, n, data, args.seed)
                figures = {}
                for who, index in (("kaldi", 2), ("ours", 1)):
                    if who == "kaldi" and not kaldi:
                        figures[who] = None
                        continue
                    step_dir = os.path.join(work, "%d-%s" % (n, who))
                    os.makedirs(step_dir)
                    figures[who] = chain([run_step(step[0], step[index], step_dir, data, kaldi,
                                                   "", max_rss_kb, log) for step in CHAIN[:3]])
                auto_dir = os.path.join(work, "%d-auto" % n)
                os.makedirs(auto_dir)
                auto = run_step(AUTO[0][0], AUTO[0][1], auto_dir, data, kaldi, args.auto_args,
                                max_rss_kb, log, args.auto_bin)
                figures["auto"] = (auto["tool"] if auto["ok"] and auto["tool"] else None)
                ratio = ("%.1f" % (figures["auto"][0] / figures["kaldi"][0])
                         if figures["auto"] and figures["kaldi"] else "-")
                row = ([str(drawn[0]), str(drawn[1]), "%d-%d" % drawn[2:]]
                       + cells(figures["kaldi"]) + cells(figures["ours"])
                       + cells(figures["auto"]) + [ratio, load().split()[0]])
                rows.append(row)
                print(" | ".join(row), flush=True)
                if not auto["ok"]:
                    print(auto["stderr"][-1500:], file=sys.stderr)
                shutil.rmtree(auto_dir, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    end = (datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), load())
    text = report(rows, start, end, args)
    if args.out == "-":
        print(text)
    else:
        with open(args.out, "w") as out:
            out.write(text)
        print("wrote %s" % args.out)


def report(rows, start, end, args):
    head = ["vectors", "speakers", "per speaker", "Kaldi chain wall s", "CPU s", "peak MB",
            "our chain wall s", "CPU s", "peak MB", "auto wall s", "CPU s", "peak MB",
            "auto / Kaldi chain", "load after"]
    lines = ["# train-pauc-auto and the Kaldi chain from 50,000 to 1.28 M vectors", "",
             "Written by `benchmarks/bench_scale_curve.py` (its docstring says what each "
             "figure is); rerun it alone with:", "", "```sh",
             "nice python benchmarks/bench_scale_curve.py --voxceleb-data=%s --sizes=%s"
             % (args.voxceleb_data, args.sizes)
             + (" --auto-args='%s'" % args.auto_args if args.auto_args else ""),
             "```", "",
             "Run %s to %s UTC on %s (%d cores); `uptime` load %s before, %s after. The chain "
             "is mean + LDA + PLDA (wall and CPU summed over the steps, peak the largest "
             "process of any step); auto is train-pauc-auto with every default (peak: the "
             "largest of the tool and its forked workers)%s. Each point: every speaker of "
             "the VoxCeleb-shaped corpus %s with a seeded subset of its vectors (seed %d), "
             "its count scaled to the point's size (at least 2)." % (
                 start[0], end[0], platform.node(), os.cpu_count(), start[1], end[1],
                 " but %s" % args.auto_args if args.auto_args else "", args.voxceleb_data,
                 args.seed), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
