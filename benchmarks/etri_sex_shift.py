"""ETRI's speaker-sex shift (issue 34): a back-end trained on male speakers, scored on female
ones, with and without in-domain evidence, against Kaldi's sre16-style answers.

Data: ../shared/realdata/etri (real i-vectors; the 4th character of a speaker id is its sex).
Training: the 68 male speakers of train/ (6,800 vectors). In-domain, unlabelled: the 50 female
speakers of train/ (5,000 vectors; --adapt). Evaluation: the PUBLIC evaluation set's female
speakers, enrolled by the mean of their 3 enrollment vectors (num_utts 3) against the female
test utterances. Those 27 speakers are split, sorted by id, into a first half (13: the
labelled development trials of "auto --adapt --dev": their models against their test
utterances) and the other half (14: where every system is scored, "eval half"); the systems
that use no development trials are also scored on all 27 ("all 27", the issue's 70,713
trials). Chosen on nothing: no setting of the back-ends is tuned here.

Systems (every one of the issue's list; the PLDAs without LDA (--lda-dim=0: with it the
issue's PLDA (male) EER 10.12 % is reproduced exactly; LDA 100, recipes/etri's, exceeds the 67
directions 68 male speakers span), on raw vectors, enrollment = speaker mean of raw vectors
with num_utts 3):

* PLDA (male): training mean, LDA, length norm, Kaldi PLDA on the male speakers;
* PLDA-adp: the same, scored vectors centred on the female set's mean and the PLDA adapted to
  it (adapt-plda 0.75/0.25: Kaldi's egs/sre16/v2 stage 8);
* oracle PLDA: trained with the female training speakers' labels too (118 speakers);
* raw cosine, and cosine centred on the female set's mean (the do-no-harm baselines);
* auto: train-pauc-auto's AutoBackend (--enroll-utts=3) on the male speakers; auto --adapt
  (the female set as X_adapt); auto --adapt --dev (and the development trials);
* auto --adapt: the female set's pseudo-speakers (models/auto/pseudo.py) rate every
  candidate and give pseudo-trained candidates (docs/auto-backend.md, "In-domain evidence");
  with --dev the development trials rate instead (and the pseudo-speaker trials are
  reported); actDCF(0.01) is of the back-ends' scores read as LLRs (the auto rows are
  calibrated; the PLDA rows are Kaldi's LLRs).
* --systems=a,b: only the systems so named (the table's names; PLDA-adp and the oracle are
  always run: the gap needs them), e.g. --systems="auto --adapt" for a quick look.

Output: a Markdown table (EER, minDCF(0.01), pAUC[0,0.01] on the eval half and on all 27;
the share of the PLDA-adp -> oracle EER gap each system closes) printed and written to
benchmarks/RESULTS_etri_sex_shift.md with the date, the machine load (uptime) and the commit.

Usage (the lead's rerun, on a quiet machine):
    nice python benchmarks/etri_sex_shift.py [--num-jobs=2] [--quick]
    [--out=benchmarks/RESULTS_etri_sex_shift.md]
--quick: the auto variants with fewer candidate LDA dimensions and metric iterations (a
plumbing check, not the figures to report).
"""

import argparse
import datetime
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir))

from pauc_backend.kaldi_io import read_token_table, read_vector_table  # noqa: E402
from pauc_backend.models.auto import AutoBackend  # noqa: E402
from pauc_backend.models.auto.dev import DevTrials  # noqa: E402
from pauc_backend.models.backend_pipeline import BackendPipeline  # noqa: E402
from pauc_backend.models.crossfit import trial_figures  # noqa: E402
from pauc_backend.metrics.llr import act_dcf  # noqa: E402
from run_info import commit, load  # noqa: E402

ETRI = os.path.join(HERE, os.pardir, os.pardir, "shared", "realdata", "etri")


def read_set(name):
    keys, X = read_vector_table("ark:%s" % os.path.join(ETRI, name, "xvector.ark"))
    utt2spk = read_token_table("ark:%s" % os.path.join(ETRI, name, "utt2spk"))
    return np.asarray(keys), X.astype(np.float32), np.array([utt2spk[k] for k in keys])


def female(speakers):
    return np.array([s[3] == "F" for s in speakers])


class Evaluation:
    """Enrolled speakers (means of their raw enrollment vectors) against test utterances,
    every pair (the ETRI trials' design) among ``speakers``."""

    def __init__(self, enroll, test, speakers):
        ek, E, es = enroll
        tk, T, ts = test
        self.speakers = sorted(speakers)
        self.models = np.stack([E[es == s].astype(np.float64).mean(axis=0)
                                for s in self.speakers]).astype(np.float32)
        self.counts = np.array([int((es == s).sum()) for s in self.speakers])
        keep = np.isin(ts, self.speakers)
        self.test, self.test_speaker = T[keep], ts[keep]
        e, t = np.meshgrid(np.arange(len(self.speakers)), np.arange(self.test.shape[0]),
                           indexing="ij")
        self.e, self.t = e.ravel(), t.ravel()
        self.target = np.array(self.speakers)[self.e] == self.test_speaker[self.t]

    def dev_trials(self, enroll):
        """These trials as models.auto.dev.DevTrials (the enrollment vectors themselves)."""
        ek, E, es = enroll
        rows = [np.flatnonzero(es == s) for s in self.speakers]
        V = np.vstack([E, self.test])
        return DevTrials(V, rows, E.shape[0] + np.arange(self.test.shape[0]), self.e, self.t,
                         self.target, np.array(self.speakers), self.test_speaker)

    def figures(self, score):
        """score(models, counts, test, e, t) -> scores; the trial figures and actDCF(0.01)
        (the scores read as LLRs)."""
        s = np.asarray(score(self.models, self.counts, self.test, self.e, self.t),
                       dtype=np.float64)
        out = trial_figures(s, self.target, 0.0, 0.01)
        out["act_dcf"] = act_dcf(s[self.target], s[~self.target], 0.01)
        return out


def pipeline_scorer(pipe):
    def score(models, counts, test, e, t):
        return pipe.score(pipe.features(models, counts), pipe.features(test, 1), e, t,
                          counts)[:, 0]
    return score


def auto_scorer(model):
    def score(models, counts, test, e, t):
        return model.score(models, test, e, t, counts)
    return score


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num-jobs", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--lda-dim", type=int, default=0, help="LDA of the PLDA systems (0: none)")
    ap.add_argument("--systems", default="", help="only these systems (names, "
                    "comma-separated; PLDA-adp and the oracle always)")
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS_etri_sex_shift.md"))
    args = ap.parse_args(argv)
    started = time.time()
    load_before = load()
    train, enroll, test = read_set("train"), read_set("enroll"), read_set("test")
    _, X, y = train
    male, fem = ~female(y), female(y)
    Xm, ym, Xf = X[male], y[male], X[fem]
    speakers = sorted(set(enroll[2][female(enroll[2])]))
    half = len(speakers) // 2
    dev_half, eval_half = speakers[:half], speakers[half:]
    sets = {"eval half": Evaluation(enroll, test, eval_half),
            "all 27": Evaluation(enroll, test, speakers)}
    dev = Evaluation(enroll, test, dev_half).dev_trials(enroll)
    print("training: %d male speakers, %d vectors; adaptation: %d female vectors; female "
          "evaluation speakers %d (development half %d: %d trials; eval half %d: %d trials; "
          "all: %d trials)" % (np.unique(ym).size, ym.size, Xf.shape[0], len(speakers),
                               len(dev_half), dev.num_trials, len(eval_half),
                               sets["eval half"].target.size, sets["all 27"].target.size),
          flush=True)

    auto_params = dict(enroll_utts=3, n_jobs=args.num_jobs)
    if args.quick:
        auto_params.update(lda_dims=(0, 50), metric_params={"num_iters": 100})
    systems = [
        ("PLDA (male)", lambda: pipeline_scorer(BackendPipeline(
            lda_dim=args.lda_dim, systems=("plda",), enroll_utts=3).fit(Xm, ym)), False),
        ("PLDA-adp", lambda: pipeline_scorer(BackendPipeline(
            lda_dim=args.lda_dim, systems=("plda_adapt",), enroll_utts=3).fit(Xm, ym, adapt=Xf)),
         False),
        ("oracle PLDA (female labels too)", lambda: pipeline_scorer(BackendPipeline(
            lda_dim=args.lda_dim, systems=("plda",), enroll_utts=3).fit(X, y)), False),
        ("raw cosine", lambda: pipeline_scorer(BackendPipeline(
            lda_dim=0, systems=("cosine_raw",)).fit(Xm, ym)), False),
        ("cosine centred on the female mean", lambda: pipeline_scorer(BackendPipeline(
            lda_dim=0, systems=("cosine_centred",)).fit(Xm, ym, adapt=Xf)), False),
        ("auto", lambda: AutoBackend(**auto_params).fit(Xm, ym), True),
        ("auto --adapt", lambda: AutoBackend(**auto_params).fit(Xm, ym, X_adapt=Xf), True),
        ("auto --adapt --dev", lambda: AutoBackend(**auto_params).fit(
            Xm, ym, X_adapt=Xf, dev=dev), True),
    ]
    if args.systems:
        wanted = [w.strip() for w in args.systems.split(",") if w.strip()]
        systems = [s for s in systems if s[0] in ("PLDA-adp", "oracle PLDA (female labels too)")
                   or s[0] in wanted]
    rows, notes, fold_pauc = [], [], {}
    for name, make, is_auto in systems:
        t0 = time.time()
        fitted = make()
        seconds = time.time() - t0
        scorer = auto_scorer(fitted) if is_auto else fitted
        figures = {k: v.figures(scorer) for k, v in sets.items()
                   if not (name.endswith("--dev") and k == "all 27")}
        chosen = ("%s, LDA %s; QMF %s" % ("+".join(fitted.members_),
                                            fitted.lda_dim_ or "none",
                                            "+".join(fitted.quality_) or "none")
                  if is_auto else "")
        if is_auto:           # why, from its system.txt
            card = dict(line.split(" ", 1) for line in fitted.describe().splitlines())
            chosen = "%s (%s), LDA %s" % (card["chosen"], card["system_title"],
                                          card["lda_dim"])
            notes.append("- %s: %s" % (name, card["reason"]))
            raw = [r for r in fitted.cv_results_ if r["candidate"] == "cosine_raw"
                   and r["budget"] == "full"]
            if raw:
                fold_pauc[name] = raw[0]["pauc_001"]
        rows.append((name, figures, seconds, chosen))
        print("%-36s %s  (%.0f s)%s" % (name, "  ".join(
            "%s: EER %.2f%% pAUC %.4f minDCF %.4f" % (k, 100 * f["eer"], f["pauc"],
                                                       f["min_dcf"])
            for k, f in figures.items()), seconds, "  chose " + chosen if chosen else ""),
            flush=True)
    if "auto" in fold_pauc and "auto --adapt" in fold_pauc:
        notes.append("- Training folds: raw cosine's held-out pAUC[0,0.01] %.4f with --adapt "
                     "(folds translated to the adaptation mean), %.4f without: ratio %.3f"
                     % (fold_pauc["auto --adapt"], fold_pauc["auto"],
                        fold_pauc["auto --adapt"] / fold_pauc["auto"]))
    write(args.out, rows, load_before, load(), time.time() - started, args.quick, args.lda_dim,
          notes)
    return 0


def write(path, rows, load_before, load_after, total, quick, lda_dim, notes=()):
    by = {name: f for name, f, _, _ in rows}

    def gap(name, where):
        adp, oracle = by["PLDA-adp"][where]["eer"], by["oracle PLDA (female labels too)"][
            where]["eer"]
        if where not in by[name] or adp == oracle:
            return "-"
        return "%+.0f %%" % (100 * (adp - by[name][where]["eer"]) / (adp - oracle))

    lines = ["# ETRI speaker-sex shift: male training speakers, female evaluation speakers",
             "", "Written by `benchmarks/etri_sex_shift.py`%s (its docstring says what is "
             "trained on what). Run %s, commit %s, %.0f s in all; load before: `%s`; after: "
             "`%s`. Figures are evidence only from a run alone on the machine (load below "
             "the cores before and after)." % (
                 " --quick (NOT the figures to report)" if quick else "",
                 datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), commit(), total,
                 load_before, load_after), "",
             "Eval half: the 14 female evaluation speakers not used as development trials; "
             "all 27: every female evaluation speaker (not for the variant that uses the "
             "first 13 as development trials). Gap closed: (EER of PLDA-adp - EER) / (EER of "
             "PLDA-adp - EER of the oracle PLDA). The PLDAs: LDA %s." % (lda_dim or "none"),
             "",
             "| System | EER(%) eval half | minDCF(0.01) eval half | actDCF(0.01) eval half | "
             "pAUC[0,0.01] eval half | gap closed eval half | EER(%) all 27 | minDCF(0.01) "
             "all 27 | actDCF(0.01) all 27 | pAUC[0,0.01] all 27 | gap closed all 27 | "
             "training (s) | chosen |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, figures, seconds, chosen in rows:
        half, full = figures["eval half"], figures.get("all 27")
        lines.append("| %s | %.2f | %.4f | %.4f | %.4f | %s | %s | %s | %s | %s | %s | %.0f | "
                     "%s |" % (
                         name, 100 * half["eer"], half["min_dcf"], half["act_dcf"],
                         half["pauc"], gap(name, "eval half"),
                         "-" if full is None else "%.2f" % (100 * full["eer"]),
                         "-" if full is None else "%.4f" % full["min_dcf"],
                         "-" if full is None else "%.4f" % full["act_dcf"],
                         "-" if full is None else "%.4f" % full["pauc"], gap(name, "all 27"),
                         seconds, chosen or "-"))
    if notes:
        lines += ["", "Why each auto variant chose what it chose (its system.txt `reason`):",
                  ""] + list(notes)
    text = "\n".join(lines) + "\n"
    print(text)
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
