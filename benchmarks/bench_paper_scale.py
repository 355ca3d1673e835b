"""The seed paper's scale: Kaldi's sre16 back-end chain on 200,000 x 512 vectors, ours and Kaldi's.

Generates (streamed to disk, see paper_corpus.py) or reuses a corpus of the paper's shape:
7,363 training speakers, 200,000 raw 512-d vectors (13-40 per speaker), 250 single-utterance
enrollments x 2,900 test vectors = 725,000 trials. Then runs the back-end chain of Kaldi's
egs/sre16/v2 run.sh, each step piped as there (per-utterance tools inside ``ark:... |``):

    mean    compute-vector-mean scp:train.scp mean.vec
    lda     train-lda --total-covariance-factor=0.0 --dim=200 "ark:subtract-vector-mean ... |"
    plda    train-plda spk2utt "ark:subtract-vector-mean ... | transform-vectors ... |
            normalize-vector-length ... |"
    score   score-plda-trials --normalize-length=true "copy-plda --smoothing=0.0 plda - |" ...
    eer     compute-eer-pauc scores trials          (Kaldi: compute-eer on "score label")

and, beside each, real Kaldi's twin (ivector-mean, ivector-compute-lda, ivector-compute-plda,
ivector-plda-scoring, with ivector-subtract-global-mean / transform-vec /
ivector-normalize-length in the pipes) when --kaldi-root holds the kaldi-ref build.
Optionally ``--metric``: train-pauc-metric (defaults, 1,000 iterations) on the centred 512-d
vectors; ``--auto``: train-pauc-auto with every default (plus --auto-args), scored with
score-pauc-auto (--auto-bin: another checkout's bin/ for these two, e.g. a branch that
changes them).

Each step runs alone under /usr/bin/time: wall time, CPU time (user + system of every process
of the pipe) and two peak RSS figures: the step's main tool alone ("tool": its own
/usr/bin/time when it has no ``ark:... |`` children, else its VmHWM polled from /proc every
0.2 s, so a peak in its last 0.2 s could be missed) and the largest process
of the pipe ("pipe", /usr/bin/time's maximum RSS, which includes the per-utterance tools
inside ``ark:... |``: those stream in the io-stream branch). train-pauc-auto reads no
``ark:... |``, so its "tool" figure is GNU time's: the largest of the tool and of the worker
processes it forks and waits for (Linux wait4 reports a process's peak or that of the
largest child it reaped, whichever is larger; its pools are joined), i.e. the largest
process of the run, workers included. A watchdog kills a step whose
processes together exceed --max-rss-gb (default 6). The date and `uptime` load
are printed before and after; at load above the 2 cores, figures are upper bounds.

--scale=voxceleb: the training set of Kaldi's egs/voxceleb/v2 instead (1,277,503 x 512 vectors
of 7,351 speakers, 8-340 each; 2.6 GB; see paper_corpus.VOXCELEB_SHAPE), same evaluation part.

Usage: nice python benchmarks/bench_paper_scale.py [--scale paper|voxceleb] [--data DIR]
         [--workdir DIR] [--keep] [--kaldi-root DIR] [--metric] [--auto] [--auto-args "..."]
         [--auto-bin DIR] [--only lda,plda] [--max-rss-gb 6]
--data DIR: reuse the corpus there if DIR/READY names the same shape, else write it there
(default: a temporary folder, deleted unless --keep). --small: a corpus of a tenth of the
size (test run). E.g. the VoxCeleb shape, its corpus kept for later runs:
    nice python benchmarks/bench_paper_scale.py --scale=voxceleb --data=/work/bench-data/voxceleb
"""

import argparse
import datetime
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
from paper_corpus import VOXCELEB_SHAPE, write_paper_corpus  # noqa: E402

KALDI_DEFAULT = os.environ.get("PAUC_KALDI_ROOT") or "/root/.cache/pauc-backend/kaldi-ref"
TIME = "/usr/bin/time"
FORMAT = "%e %U %S %M"

# (step, ours, kaldi): {T} marks the main tool (wrapped in its own /usr/bin/time), {D} the data.
OURS_PREP = ("subtract-vector-mean mean.vec scp:{D}/%s.scp ark:- | transform-vectors "
             "transform.mat ark:- ark:- | normalize-vector-length ark:- ark:- |")
KALDI_PREP = ("{K}/ivector-subtract-global-mean mean.vec scp:{D}/%s.scp ark:- | {K}/transform-vec "
              "transform.mat ark:- ark:- | {K}/ivector-normalize-length ark:- ark:- |")
CHAIN = [
    ("mean",
     "{T} compute-vector-mean scp:{D}/train.scp mean.vec",
     "{T} {K}/ivector-mean scp:{D}/train.scp mean.vec"),
    ("lda",
     "{T} train-lda --total-covariance-factor=0.0 --dim=200 "
     "'ark:subtract-vector-mean scp:{D}/train.scp ark:- |' ark:{D}/utt2spk transform.mat",
     "{T} {K}/ivector-compute-lda --total-covariance-factor=0.0 --dim=200 "
     "'ark:{K}/ivector-subtract-global-mean scp:{D}/train.scp ark:- |' ark:{D}/utt2spk "
     "transform.mat"),
    ("plda",
     "{T} train-plda ark:{D}/spk2utt 'ark:subtract-vector-mean scp:{D}/train.scp ark:- | "
     "transform-vectors transform.mat ark:- ark:- | normalize-vector-length ark:- ark:- |' plda",
     "{T} {K}/ivector-compute-plda ark:{D}/spk2utt 'ark:{K}/ivector-subtract-global-mean "
     "scp:{D}/train.scp ark:- | {K}/transform-vec transform.mat ark:- ark:- | "
     "{K}/ivector-normalize-length ark:- ark:- |' plda"),
    ("score",
     "{T} score-plda-trials --normalize-length=true 'copy-plda --smoothing=0.0 plda - |' "
     "'ark:" + OURS_PREP % "enroll" + "' 'ark:" + OURS_PREP % "test" + "' "
     "\"cut -d' ' -f1,2 {D}/trials |\" scores",
     "{T} {K}/ivector-plda-scoring --normalize-length=true "
     "'{K}/ivector-copy-plda --smoothing=0.0 plda - |' 'ark:" + KALDI_PREP % "enroll" + "' "
     "'ark:" + KALDI_PREP % "test" + "' \"cut -d' ' -f1,2 {D}/trials |\" scores"),
    ("eer",
     "{T} compute-eer-pauc scores {D}/trials",
     "paste -d' ' <(cut -d' ' -f3 scores) <(cut -d' ' -f3 {D}/trials) | {T} {K}/compute-eer -"),
]
METRIC = ("metric",
          "{T} train-pauc-metric ark:{D}/spk2utt 'ark:subtract-vector-mean scp:{D}/train.scp "
          "ark:- |' metric", None)
AUTO = [("auto", "{T} train-pauc-auto {A} scp:{D}/train.scp ark:{D}/spk2utt auto", None),
        ("auto-score", "{T} score-pauc-auto auto scp:{D}/enroll.scp scp:{D}/test.scp "
         "{D}/trials auto_scores", None),
        ("auto-eer", "{T} compute-eer-pauc auto_scores {D}/trials", None)]


def load():
    return "%.2f %.2f %.2f" % os.getloadavg()


def _processes():
    """{pid: (ppid, cmdline)} of every process (from /proc)."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                with open("/proc/%s/cmdline" % entry, "rb") as f:
                    cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
                table[int(entry)] = (ppid, cmdline)
            except (OSError, ValueError, IndexError):
                pass
    return table


def _status_kb(pid, field, name="status"):
    try:
        with open("/proc/%d/%s" % (pid, name)) as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class Watch:
    """Polls the step's process tree every 0.2 s: kills it above ``max_rss_kb`` in total (PSS,
    so copy-on-write pages shared by forked workers count once), and
    keeps the VmHWM (peak RSS) of the main tool process alone (the child of the /usr/bin/time
    writing ``tool_time``), which /usr/bin/time cannot give: its figure includes the tool's own
    children, i.e. the per-utterance tools of an ``ark:... |`` rspecifier."""

    def __init__(self, root, tool_time, max_rss_kb):
        self.root, self.tool_time, self.max_rss_kb = root, tool_time, max_rss_kb
        self.tool_kb, self.killed = 0, False

    def poll(self, proc):
        while proc.poll() is None:
            table = _processes()
            children = {}
            for pid, (ppid, _) in table.items():
                children.setdefault(ppid, []).append(pid)
            tree, todo = [], [self.root]
            while todo:
                pid = todo.pop()
                tree.append(pid)
                todo.extend(children.get(pid, []))
            for pid in tree:
                if self.tool_time in table.get(pid, (0, ""))[1]:
                    for child in children.get(pid, []):
                        self.tool_kb = max(self.tool_kb, _status_kb(child, "VmHWM:"))
            # proportional set size: pages shared by forked workers are counted once
            if sum(_status_kb(pid, "Pss:", "smaps_rollup") or _status_kb(pid, "VmRSS:")
                   for pid in tree) > self.max_rss_kb:
                self.killed = True
                os.killpg(self.root, signal.SIGKILL)
                return
            time.sleep(0.2)


def run_step(name, template, work, data, kaldi, auto_args, max_rss_kb, log, bin_dir=None):
    """Run one step; returns dict(ok, killed, pipe=(wall, cpu, MB), tool_mb, stdout, stderr)."""
    tool_time = os.path.join(work, "%s.tool.time" % name)
    command = template.format(T="%s -f '%s' -o %s" % (TIME, FORMAT, tool_time), D=data,
                              K=kaldi or "", A=auto_args)
    pipe_time = os.path.join(work, "%s.pipe.time" % name)
    env = dict(os.environ, PATH=(bin_dir or os.path.join(REPO, "bin")) + os.pathsep
               + os.environ["PATH"],
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.Popen([TIME, "-f", FORMAT, "-o", pipe_time, "bash", "-o", "pipefail",
                             "-c", command], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    watch = Watch(proc.pid, tool_time, max_rss_kb)
    thread = threading.Thread(target=watch.poll, args=(proc,), daemon=True)
    thread.start()
    out, err = proc.communicate()
    thread.join()
    log.write("== %s\n$ %s\n%s\n" % (name, command, err.decode(errors="replace")[-4000:]))
    result = dict(ok=proc.returncode == 0 and not watch.killed, killed=watch.killed,
                  stdout=out.decode(errors="replace"), stderr=err.decode(errors="replace"),
                  tool_mb=watch.tool_kb / 1024.0, pipe=None)
    for key, path in (("pipe", pipe_time), ("tool", tool_time)):
        try:
            with open(path) as f:
                wall, user, system, rss = f.read().split()[-4:]
            result[key] = (float(wall), float(user) + float(system), int(rss) / 1024.0)
        except (OSError, ValueError):
            result[key] = None
    if result["tool"] and "|'" not in command and '|"' not in command:
        # no ``ark:... |`` child: /usr/bin/time's figure is the tool's own, and exact
        result["tool_mb"] = result["tool"][2]
    return result


def eer_of(result):
    """The EER (%) printed by compute-eer-pauc / compute-eer on stdout."""
    text = result["stdout"].strip().split()
    return text[0] if text else "?"


def fmt(res):
    if res is None:
        return "%32s" % "-"
    if not res["ok"]:
        return "%32s" % ("KILLED (> --max-rss-gb)" if res["killed"] else "FAILED")
    wall, cpu, pipe_mb = res["pipe"]
    return "%7.1f s %7.1f s cpu %6.0f / %6.0f MB" % (wall, cpu, res["tool_mb"], pipe_mb)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--scale", choices=("paper", "voxceleb"), default="paper")
    parser.add_argument("--kaldi-root", default=KALDI_DEFAULT)
    parser.add_argument("--metric", action="store_true")
    parser.add_argument("--auto", action="store_true")
    parser.add_argument("--auto-args", default="")
    parser.add_argument("--auto-bin", default=None, help="bin/ of the checkout whose "
                        "train-pauc-auto and score-pauc-auto to run (default: this one's)")
    parser.add_argument("--only", default="", help="comma-separated step names")
    parser.add_argument("--max-rss-gb", type=float, default=6.0)
    args = parser.parse_args()
    if not os.path.exists(TIME):
        sys.exit("needs %s (GNU time)" % TIME)
    kaldi = os.path.join(args.kaldi_root, "bin")
    kaldi = kaldi if os.path.exists(os.path.join(kaldi, "ivector-compute-plda")) else None
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="bench_paper_scale.", dir=args.workdir)
    data = os.path.abspath(args.data) if args.data else os.path.join(work, "data")
    print("start %s UTC; uptime load %s; %d cores" % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), load(), os.cpu_count()))
    try:
        shape = dict(VOXCELEB_SHAPE) if args.scale == "voxceleb" else {}
        if args.small:
            shape.update(num_speakers=shape.get("num_speakers", 7363) // 10,
                         num_vectors=shape.get("num_vectors", 200000) // 10)
        ready = os.path.join(data, "READY")
        wanted = "%s %s\n" % (args.scale, sorted(shape.items()))
        # an empty READY: a paper-shaped corpus written before the shape was recorded
        accepted = (wanted, "") if args.scale == "paper" and not args.small else (wanted,)
        if not os.path.exists(ready) or open(ready).read() not in accepted:
            if os.path.exists(ready):
                os.remove(ready)
            start = time.time()
            sizes = write_paper_corpus(data, **shape)
            with open(ready, "w") as out:
                out.write(wanted)
            print("generated %s in %.0f s in %s" % (sizes, time.time() - start, data))
        else:
            print("reusing the %s corpus in %s" % (args.scale, data))
        steps = [(n, o, k) for n, o, k in CHAIN]
        if args.metric:
            steps.append(METRIC)
        if args.auto:
            steps += AUTO
        only = set(filter(None, args.only.split(",")))
        print("%-10s %-32s %-32s %s" % ("step", "ours: wall, cpu, RSS tool / pipe",
                                         "Kaldi: wall, cpu, RSS tool / pipe",
                                         "ours/Kaldi wall, tool RSS; load"))
        max_rss_kb = int(args.max_rss_gb * 2 ** 20)
        failed_auto = set()
        with open(os.path.join(work, "bench.log"), "w") as log:
            for name, ours_cmd, kaldi_cmd in steps:
                if only and name not in only:
                    continue
                k_res = None
                if kaldi_cmd and kaldi:
                    kdir = os.path.join(work, "kaldi")
                    os.makedirs(kdir, exist_ok=True)
                    k_res = run_step(name, kaldi_cmd, kdir, data, kaldi, args.auto_args,
                                     max_rss_kb, log)
                odir = os.path.join(work, "ours")
                os.makedirs(odir, exist_ok=True)
                if name in failed_auto:
                    print("%-10s skipped (an earlier train-pauc-auto step failed)" % name)
                    continue
                o_res = run_step(name, ours_cmd, odir, data, kaldi, args.auto_args,
                                 max_rss_kb, log,
                                 args.auto_bin if name.startswith("auto") else None)
                if name.startswith("auto") and not o_res["ok"]:
                    failed_auto.update(step[0] for step in AUTO)
                ratio = ""
                if o_res["ok"] and k_res and k_res["ok"]:
                    ratio = "%5.2f x, %5.2f x" % (o_res["pipe"][0] / max(k_res["pipe"][0], 1e-3),
                                                  o_res["tool_mb"] / max(k_res["tool_mb"], 1e-3))
                if name.endswith("eer"):
                    ratio += " EER %s%%%s" % (eer_of(o_res), " (Kaldi %s%%)" % eer_of(k_res)
                                              if k_res and k_res["ok"] else "")
                print("%-10s %s %s  %s; load %s" % (name, fmt(o_res), fmt(k_res), ratio, load()),
                      flush=True)
                if not o_res["ok"]:
                    print(o_res["stderr"][-1500:], file=sys.stderr)
        print("end %s UTC; uptime load %s; log %s" % (
            datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), load(),
            os.path.join(work, "bench.log") if args.keep else "(deleted; --keep keeps it)"))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
