"""pAUCMetric (auto) with in-domain evidence and quality measures (issue 34 items 2-4), measured.

* demo: the demo's corpus (make-synthetic-vectors --seed=777 --dim=80 --durations=true
  --num-dev-speakers=80, as recipes/demo/run.sh makes it); auto --adapt (enroll-utts 3) and
  auto --adapt with the development speakers' trials (and their durations) as development
  trials, against PLDA-adp (the demo's LDA 50, centred on and adapted to adapt/) and the
  do-no-harm baselines, on the evaluation trials;
* etri, timit: in-domain (no --adapt, no development trials: the choice is the training
  folds' as before issue 34); what changes is only the final calibration's quality measures
  (--quality-measures=auto: the embedding norm is kept when the held-out evidence shows it
  helps; these corpora have no durations).

For each auto fit, the calibration data it learned its final fusion on (the pooled held-out
trials, or the development trials scored by the final model) are captured, and a fusion with
each quality set the data allow (none, norm, duration, duration+norm) is learned on them and
applied to the evaluation trials: the evaluation shows what the held-out decision
("auto kept") gained or lost against each. Figures: EER, minDCF(0.01), pAUC[0,0.01], and the
calibration metrics actDCF(0.01) and Cllr of the LLRs. Nothing is tuned on the evaluation
trials.

Usage (the lead's rerun, on a quiet machine):
    nice python benchmarks/auto_in_domain.py [demo] [etri] [timit] [--num-jobs=2]
    [--out=benchmarks/RESULTS_auto_in_domain.md]
"""

import argparse
import datetime
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir))
sys.path.insert(0, HERE)

from pauc_backend.datasets import make_speaker_corpus  # noqa: E402
from pauc_backend.metrics.llr import act_dcf, cllr  # noqa: E402
from pauc_backend.models.auto import AutoBackend, final, qmf  # noqa: E402
from pauc_backend.models.auto.dev import DevTrials  # noqa: E402
from pauc_backend.models.backend_pipeline import BackendPipeline  # noqa: E402
from pauc_backend.models.crossfit import trial_figures  # noqa: E402

SETS = [(), ("norm",), ("duration",), ("duration", "norm")]


class Eval:
    """Evaluation trials: enrollment models (raw means, counts, durations) x test vectors."""

    def __init__(self, E, counts, T, er, tr, target, e_dur=None, t_dur=None):
        self.E, self.counts, self.T = np.asarray(E, np.float32), counts, np.asarray(T,
                                                                                  np.float32)
        self.er, self.tr, self.target = er, tr, np.asarray(target, bool)
        self.e_dur, self.t_dur = e_dur, t_dur

    def figures(self, scores, llr=True):
        f = trial_figures(np.asarray(scores, np.float64), self.target, 0.0, 0.01)
        if llr:
            tar, non = np.sort(scores[self.target]), np.sort(scores[~self.target])
            f.update(act_dcf=act_dcf(tar, non, 0.01), cllr=cllr(tar, non))
        return f


def demo_data():
    c = make_speaker_corpus(seed=777, dim=80, durations=True, num_dev_speakers=80)
    X, y = np.asarray(c.train.X, np.float32), np.asarray(c.train.labels)

    def evaluation(enroll, test, te, tt, tgt):
        spk = sorted(set(enroll.labels))
        lab = np.asarray(enroll.labels)
        E = np.stack([np.asarray(enroll.X, np.float64)[lab == s].mean(axis=0) for s in spk])
        counts = np.array([int((lab == s).sum()) for s in spk])
        e_dur = np.array([enroll.durations[lab == s].sum() for s in spk])
        mi = {s: i for i, s in enumerate(spk)}
        ti = {k: i for i, k in enumerate(test.keys)}
        return Eval(E, counts, test.X, np.array([mi[e] for e in te]),
                    np.array([ti[t] for t in tt]), tgt, e_dur, np.asarray(test.durations))

    ev = evaluation(c.enroll, c.test, c.trial_enroll, c.trial_test, c.trial_target)
    enroll, test, te, tt, tgt = c.dev
    lab = np.asarray(enroll.labels)
    spk = sorted(set(enroll.labels))
    mi = {s: i for i, s in enumerate(spk)}
    ti = {k: i for i, k in enumerate(test.keys)}
    dev = DevTrials(np.vstack([enroll.X, test.X]).astype(np.float32),
                    [np.flatnonzero(lab == s) for s in spk],
                    len(enroll.keys) + np.arange(len(test.keys)),
                    np.array([mi[e] for e in te]), np.array([ti[t] for t in tt]), tgt,
                    np.array(spk), np.asarray(test.labels),
                    np.concatenate([enroll.durations, test.durations]))
    return X, y, np.asarray(c.train.durations), np.asarray(c.adapt.X, np.float32), dev, ev


def real_data(corpus):
    import bench_auto_backend as bab
    X, y, E, num_utts, T, er, tr, lab, enroll_utts = bab.load(corpus)
    counts = np.full(E.shape[0], int(num_utts)) if np.isscalar(num_utts) else num_utts
    return X, y, Eval(E, counts, T, er, tr, lab), enroll_utts


def captured_fit(model, *args, **kwargs):
    """model.fit, keeping the data its final calibration was learned on."""
    seen = {}
    original = final.calibrate

    def spy(inputs, data, reporter):
        seen["data"], seen["X"] = data, inputs.table.X
        seen["settings"] = inputs.settings
        return original(inputs, data, reporter)

    final.calibrate = spy
    try:
        model.fit(*args, **kwargs)
    finally:
        final.calibrate = original
    return seen


def quality_rows(model, seen, ev):
    """Eval figures of a calibration with each quality set the captured data allow."""
    data, s = seen["data"], seen["settings"]
    median = qmf.norm_median(seen["X"])
    pipe = model.pipeline_
    raw = pipe.score(pipe.features(ev.E, ev.counts), pipe.features(ev.T, 1), ev.er, ev.tr,
                     ev.counts)
    norms = (qmf.side_norms(ev.E)[ev.er], qmf.side_norms(ev.T)[ev.tr])
    durations = None if ev.e_dur is None else (ev.e_dur[ev.er], ev.t_dur[ev.tr])
    out = []
    for names in SETS:
        if "duration" in names and (data["durations"] is None or durations is None):
            continue
        eq, tq = qmf.quality_values(names, data["durations"], data["norms"], median)
        try:
            fusion = qmf.fit_calibration(names, data["scores"], data["labels"], eq, tq,
                                         s.fusion_prior, s.fusion_regularization)
        except ValueError as err:      # e.g. a feature constant over the calibration trials
            out.append(("+".join(names), {"error": str(err).split(":")[0]}))
            continue
        if names:
            llr = fusion.transform(raw, *qmf.quality_values(names, durations, norms, median))
        else:
            llr = fusion.transform(raw)
        out.append(("+".join(names) or "none", ev.figures(llr)))
    return out


def load():
    return subprocess.run(["uptime"], stdout=subprocess.PIPE).stdout.decode().strip()


def row(name, f, note=""):
    if "error" in f:
        return "| %s | - | - | - | - | - | not learnable on the calibration trials (%s) |" % (
            name, f["error"])
    cal = ("%.4f | %.4f" % (f["act_dcf"], f["cllr"])) if "cllr" in f else "- | -"
    return "| %s | %.2f | %.4f | %.4f | %s | %s |" % (name, 100 * f["eer"], f["min_dcf"],
                                                     f["pauc_001"], cal, note)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("corpora", nargs="*", default=["demo", "etri", "timit"])
    ap.add_argument("--num-jobs", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS_auto_in_domain.md"))
    args = ap.parse_args(argv)
    started, before = time.time(), load()
    header = ("| System | EER(%) | minDCF(0.01) | pAUC[0,0.01] | actDCF(0.01) | Cllr | note |\n"
              "|---|---|---|---|---|---|---|")
    out = ["# pAUCMetric (auto): in-domain evidence and quality measures", "",
           "Written by `benchmarks/auto_in_domain.py` (its docstring says what is trained on "
           "what). Started %s; load before: `%s`." % (
               datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), before), ""]
    for corpus in args.corpora:
        print("==", corpus, flush=True)
        lines = [header]
        if corpus == "demo":
            X, y, durations, A, dev, ev = demo_data()
            adp = BackendPipeline(lda_dim=50, systems=("plda_adapt",), enroll_utts=3).fit(
                X, y, adapt=A)
            for name, pipe in (("PLDA-adp (LDA 50)", adp), (
                    "raw cosine", BackendPipeline(lda_dim=0, systems=("cosine_raw",)).fit(
                        X, y)), ("cosine centred on adapt/", BackendPipeline(
                            lda_dim=0, systems=("cosine_centred",)).fit(X, y, adapt=A))):
                s = pipe.score(pipe.features(ev.E, ev.counts), pipe.features(ev.T, 1),
                               ev.er, ev.tr, ev.counts)[:, 0]
                lines.append(row(name, ev.figures(s, llr=False), "uncalibrated"))
            runs = [("auto --adapt", dict(X_adapt=A, durations=durations)),
                    ("auto --adapt --dev", dict(X_adapt=A, dev=dev))]
            enroll_utts = 3
        else:
            X, y, ev, enroll_utts = real_data(corpus)
            runs = [("auto", {})]
        for name, kwargs in runs:
            t0 = time.time()
            model = AutoBackend(enroll_utts=enroll_utts, n_jobs=args.num_jobs)
            seen = captured_fit(model, X, y, **kwargs)
            seconds = time.time() - t0
            chosen = "%s, LDA %s" % ("+".join(model.members_), model.lda_dim_ or "none")
            kept = "+".join(model.quality_) or "none"
            for measures, f in quality_rows(model, seen, ev):
                lines.append(row("%s, QMF %s" % (name, measures), f, "%s; %s%s" % (
                    chosen, "auto kept it" if measures == kept else "",
                    "; fit %.0f s" % seconds if measures == "none" else "")))
            out_line = "; ".join(line.split(" ", 1)[1] for line in model.card_
                                 if line.startswith("quality_choice "))
            lines.append("")
            lines.append("%s: %s; calibration on %s; %s" % (name, chosen,
                                                           seen["data"]["what"], out_line))
            lines.append("")
            lines.append(header)
            print("\n".join(lines[-8:]), flush=True)
        while lines and lines[-1] in (header, ""):
            lines.pop()
        out += ["## %s" % corpus, ""] + lines + [""]
    out.append("Finished after %.0f s; load after: `%s`. Figures taken on a shared machine: "
               "the lead reruns them alone." % (time.time() - started, load()))
    text = "\n".join(out) + "\n"
    print(text)
    with open(args.out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
