"""QMF with real durations against score-only calibration on real VoxCeleb1-O scores (issue 34).

Data: ``../shared/realdata/vox1o-det-scores`` (read in place, never copied): 36,437 VoxCeleb1-O
trials among 40 speakers, scored by three back-ends of one older system (``scores_lda``,
``scores_plda``, ``scores_lda_plda``), and every utterance's real duration (``utt2dur``).

Protocol (nothing is chosen on the trials a calibration is applied to; the QMF is the shipped
default, fixed before any run: min and max of the two sides' log(clip(duration, 0.1, 30 s)),
no interactions, prior 0.01):

- the 40 speakers are split into two halves of 20 by a seeded permutation (``--seed``); a
  trial belongs to a half when both its sides' speakers are in it. Every target trial does;
  the non-target trials between the halves (about half of them) are dropped, since a
  calibration trained on either half has seen one of their speakers;
- for each system: ``train-calibration --prior=0.01`` (score-only) and the same with
  ``--enroll-duration``/``--test-duration`` (QMF) on half A's trials, ``apply-calibration`` on
  half B's; and swapped (trained on B, applied to A);
- the two applied halves are POOLED (each trial's LLR comes from the calibration trained on
  the other half: 40 speakers, the most power) and ``compare-systems --llr --utt2spk``
  compares QMF (B) with score-only (A) on 1,000 paired two-way speaker-cluster resamples:
  EER, minDCF(0.01), actDCF(0.01), Cllr. Each half alone (20 speakers) is reported too, as a
  check that the two directions agree;
- the scores per bin of the trial's shorter side (target and non-target means, standard
  deviations, non-target 99th percentile), pooled halves, raw scores: whether short
  recordings move the non-target tail, where the Bayes threshold at p = 0.01 lies (what
  ``benchmarks/qmf_demo_diagnosis.py`` found the synthetic demo does not do).

An embedding-norm QMF variant is impossible here: the data has scores, no embeddings.

``--variants`` also checks the QMF settings that were chosen on other data (the clip range,
log duration as the feature, no interactions) WITHOUT reading the applied half: within each
training half, 2-fold cross-validation over its speakers (alternate speakers of the sorted
list; a trial used when both sides are in one fold) scores each variant by the calibration's
own objective (prior-0.01-weighted cross-entropy, lower is better; criterion fixed before any
run), the lowest wins; the winner is retrained on the whole training half with the tools and
applied to the other half, and its pooled LLRs are compared with the default QMF's. The
variants: default; ``--max-duration=20`` (WeSpeaker's 20 s cap); ``--max-duration=1000`` (no
upper clip: the data's longest recording lasts 69 s); ``--quality-interactions=true``; 1/d
(min and max of the inverse durations, ``--enroll-quality``/``--test-quality``) instead of
log d. No default is changed by this.

    nice -n 10 python benchmarks/vox1o_qmf.py [--data DIR] [--seed 0] [--bootstrap 1000]
        [--work DIR] [--variants]

Prints Markdown tables, the split's trial counts and ``uptime`` at start and end.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from bench_qmf import (SHARED, cllr_act_dcf, read_trials, table, tool, write_scores,  # noqa: E402
                       write_trials)
from qmf_demo_diagnosis import duration_bins  # noqa: E402

from pauc_backend.models.calibration import LinearFusion  # noqa: E402
from pauc_backend.models.quality import DURATION, QualityFusion, QualityMeasure  # noqa: E402

SYSTEMS = {"scores_lda": "LDA (cosine)", "scores_plda": "PLDA", "scores_lda_plda": "LDA+PLDA"}
PRIOR = 0.01
# name: (train/apply-calibration options, QualityFusion settings for the inner cross-validation)
VARIANTS = {
    "default": ([], dict(measures=(DURATION,))),
    "max 20 s": (["--max-duration=20"],
                 dict(measures=(QualityMeasure("duration", log=True, low=0.1, high=20.0),))),
    "no upper clip": (["--max-duration=1000"],
                      dict(measures=(QualityMeasure("duration", log=True, low=0.1,
                                                    high=1000.0),))),
    "interactions": (["--quality-interactions=true"],
                     dict(measures=(DURATION,), interactions=True)),
    "1/d": (None, dict(measures=(QualityMeasure("inverse_duration"),))),
}


def load(data):
    """Trials (key1, key2, target), {system: scores} in the trials' order, {utt: seconds},
    {utt: speaker}."""
    key1, key2, target = read_trials(os.path.join(data, "trials"))
    scores = {}
    for system in SYSTEMS:
        rows = [line.split() for line in open(os.path.join(data, system))]
        if [r[:2] for r in rows] != [list(k) for k in zip(key1, key2)]:
            raise SystemExit("%s: not the trials' keys in the trials' order" % system)
        scores[system] = np.array([float(r[2]) for r in rows])
    durations = {k: float(v) for k, v in (line.split() for line in open(
        os.path.join(data, "utt2dur")))}
    utt2spk = dict(line.split() for line in open(os.path.join(data, "utt2spk")))
    return np.array(key1), np.array(key2), target, scores, durations, utt2spk


def split(speakers, seed):
    """Two halves of the sorted speakers by a seeded permutation."""
    order = np.random.default_rng(seed).permutation(sorted(speakers))
    half = len(order) // 2
    return sorted(order[:half]), sorted(order[half:])


def halves(key1, key2, utt2spk, seed):
    s1 = np.array([utt2spk[k] for k in key1])
    s2 = np.array([utt2spk[k] for k in key2])
    groups = split(set(s1) | set(s2), seed)
    masks = [np.isin(s1, g) & np.isin(s2, g) for g in groups]
    return groups, masks, s1, s2


def objective(llr, target, prior=PRIOR):
    """The calibration's training objective on held-out LLRs: prior-weighted cross-entropy
    (nats), BOSARIS's, with the logit(prior) offset."""
    offset = np.log(prior / (1 - prior))
    return (prior * np.mean(np.logaddexp(0, -(llr[target] + offset)))
            + (1 - prior) * np.mean(np.logaddexp(0, llr[~target] + offset)))


def variant_values(name, seconds):
    """Per-side raw values a variant's QualityFusion sees."""
    return 1.0 / seconds if name == "1/d" else seconds


def inner_cv(scores, target, e_sec, t_sec, s1, s2, group):
    """{variant (and "score-only"): held-out objective} by 2-fold cross-validation over the
    training half's speakers (alternate speakers of the sorted list)."""
    fold_of = {s: i % 2 for i, s in enumerate(sorted(group))}
    f1 = np.array([fold_of.get(s, -1) for s in s1])
    f2 = np.array([fold_of.get(s, -2) for s in s2])
    out = {}
    for name in ("score-only",) + tuple(VARIANTS):
        llr = np.full(scores.size, np.nan)
        for k in (0, 1):
            train, test = (f1 == k) & (f2 == k), (f1 == 1 - k) & (f2 == 1 - k)
            if name == "score-only":
                model = LinearFusion(prior=PRIOR).fit(scores[train, None], target[train])
                llr[test] = model.transform(scores[test, None])
                continue
            ev, tv = variant_values(name, e_sec), variant_values(name, t_sec)
            model = QualityFusion(prior=PRIOR, **VARIANTS[name][1]).fit(
                scores[train], target[train], ev[train], tv[train])
            llr[test] = model.transform(scores[test], ev[test], tv[test])
        used = ~np.isnan(llr)
        out[name] = objective(llr[used], target[used])
    return out, int(used.sum())


def calibrate(out, tag, train_half, apply_half, system, quality, train_options=()):
    """train-calibration (``quality`` tables and ``train_options``) on ``train_half``'s
    files, apply-calibration (the same tables; the model holds the rest) to ``apply_half``'s;
    returns the LLR file."""
    model = os.path.join(out, "%s_%s_on_%s.mdl" % (system, tag, train_half))
    llr = os.path.join(out, "%s_%s_%s.llr" % (system, tag, apply_half))
    tool("train-calibration", "--prior=%g" % PRIOR, *quality, *train_options,
         os.path.join(out, "trials_" + train_half), os.path.join(out, "%s_%s" % (
             system, train_half)), model)
    tool("apply-calibration", *quality, model,
         os.path.join(out, "%s_%s" % (system, apply_half)), llr)
    return llr


def compare(utt2spk, llr_a, llr_b, trials, bootstrap):
    proc = tool("compare-systems", "--llr", "--report=json", "--bootstrap=%d" % bootstrap,
                "--utt2spk=ark:" + utt2spk, llr_a, llr_b, trials)
    return {(r["metric"], r.get("p_target")): r for r in json.loads(proc.stdout)["metrics"]}


def read_llr(path, trials):
    """LLRs of ``path`` in the order of ``trials``, and the trials' target labels."""
    llr = {(a, b): float(v) for a, b, v in (line.split() for line in open(path))}
    key1, key2, target = read_trials(trials)
    return np.array([llr[k] for k in zip(key1, key2)]), target


def concatenate(paths, target):
    with open(target, "w") as f:
        for path in paths:
            f.write(open(path).read())
    return target


def uptime():
    return subprocess.run(["uptime"], stdout=subprocess.PIPE, text=True).stdout.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.path.join(SHARED, "vox1o-det-scores"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--work", default=None)
    parser.add_argument("--variants", action="store_true",
                        help="also check the QMF settings by cross-validation within each "
                             "training half (see the module docstring)")
    args = parser.parse_args()
    start = time.time()
    print("started %s; %s" % (datetime.datetime.now().isoformat(timespec="seconds"), uptime()))
    out = args.work or tempfile.mkdtemp(prefix="vox1o_qmf.")
    os.makedirs(out, exist_ok=True)
    key1, key2, target, scores, durations, utt2spk = load(args.data)
    groups, masks, s1, s2 = halves(key1, key2, utt2spk, args.seed)
    names = ("A", "B")
    kept = masks[0] | masks[1]
    print("\nhalves (seed %d): A = %s; B = %s" % (args.seed, " ".join(groups[0]),
                                                  " ".join(groups[1])))
    for h, m in zip(names, masks):
        print("half %s: %d trials (%d target, %d non-target)"
              % (h, m.sum(), (m & target).sum(), (m & ~target).sum()))
    print("kept %d of %d trials (%d of %d target); %d cross-half non-target trials dropped"
          % (kept.sum(), target.size, (kept & target).sum(), target.sum(),
             (~kept & ~target).sum()))

    dur_table = os.path.join(args.data, "utt2dur")
    spk_table = os.path.join(args.data, "utt2spk")
    with open(os.path.join(out, "inverse_duration"), "w") as f:
        f.writelines("%s %.9g\n" % (k, 1.0 / v) for k, v in sorted(durations.items()))
    for h, m in zip(names, masks):
        write_trials(os.path.join(out, "trials_" + h), key1[m], key2[m], target[m])
        for system in SYSTEMS:
            write_scores(os.path.join(out, "%s_%s" % (system, h)), key1[m], key2[m],
                         scores[system][m])
    pooled_trials = concatenate([os.path.join(out, "trials_" + h) for h in names],
                                os.path.join(out, "trials_pooled"))
    duration_options = ["--enroll-duration=ark:" + dur_table, "--test-duration=ark:" + dur_table]
    e_sec = np.array([durations[k] for k in key1])
    t_sec = np.array([durations[k] for k in key2])

    pooled_rows, half_rows, llrs, checks = [], [], {}, []
    for system, label in SYSTEMS.items():
        for tag, quality in (("score_only", []), ("qmf", duration_options)):
            llrs[system, tag] = [calibrate(out, tag, names[1 - i], names[i], system, quality)
                                 for i in (0, 1)]
        pooled = [concatenate(llrs[system, tag], os.path.join(out, "%s_%s_pooled.llr" % (
            system, tag))) for tag in ("score_only", "qmf")]
        pooled_rows.append((label, compare(spk_table, *pooled, pooled_trials,
                                           args.bootstrap)))
        checks.append("%s: %s" % (label, "; ".join(
            "%s Cllr %.4f actDCF(0.01) %.4f" % ((tag,) + tuple(cllr_act_dcf(*read_llr(
                path, pooled_trials), prior=PRIOR)))
            for tag, path in zip(("score-only", "QMF"), pooled))))
        for i, h in enumerate(names):
            half_rows.append(("%s, half %s (trained on %s)" % (label, h, names[1 - i]), compare(
                spk_table, llrs[system, "score_only"][i], llrs[system, "qmf"][i],
                os.path.join(out, "trials_" + h), args.bootstrap)))
        print("%s done (%.0f s)" % (label, time.time() - start), file=sys.stderr, flush=True)

    labels = {label: label for label in SYSTEMS.values()}
    labels.update({label: label for label, _ in half_rows})
    print("\n" + table("Pooled halves (%d trials, 40 speakers)" % kept.sum(), pooled_rows,
                       labels))
    print("\nplain-numpy check of the pooled LLRs (not compare-systems' code):\n"
          + "\n".join(checks))
    print("\n" + table("Each half alone (20 speakers)", half_rows, labels))

    shorter = np.minimum(e_sec, t_sec)
    print("\nshorter side of the kept trials: quartiles %s s"
          % " / ".join("%.2f" % q for q in np.quantile(shorter[kept], [0.25, 0.5, 0.75])))
    for system, label in SYSTEMS.items():
        print("\n%s: raw scores by the trial's shorter side (kept trials)\n" % label)
        print("\n".join(duration_bins(scores[system][kept], target[kept], shorter[kept],
                                      edges=(0, 5, 6.5, 9, 15))))

    if args.variants:
        run_variants(args, out, names, groups, masks, target, scores, e_sec, t_sec, s1, s2,
                     duration_options, spk_table, llrs, pooled_trials, labels)
    print("\nfinished %s (%.0f s wall); %s" % (
        datetime.datetime.now().isoformat(timespec="seconds"), time.time() - start, uptime()))
    print("work files in", out)


def run_variants(args, out, names, groups, masks, target, scores, e_sec, t_sec, s1, s2,
                 duration_options, spk_table, llrs, pooled_trials, labels):
    """The settings check of the module docstring: choose within each training half, apply
    the winner to the other half, compare with the default QMF on the pooled halves."""
    inverse = os.path.join(out, "inverse_duration")
    print("\nQMF variants, 2-fold cross-validation within the training half (prior-0.01 "
          "cross-entropy, nats x 1000; lower is better; * = chosen)\n")
    print("| system | training half | trials | score-only | %s |" % " | ".join(VARIANTS))
    print("|---" * (4 + len(VARIANTS)) + "|")
    rows = []
    for system, label in SYSTEMS.items():
        chosen_llrs, chosen = [], []
        for i, h in enumerate(names):
            train = 1 - i
            m = masks[train]
            figures, used = inner_cv(scores[system][m], target[m], e_sec[m], t_sec[m], s1[m],
                                     s2[m], groups[train])
            best = min(VARIANTS, key=figures.get)
            chosen.append(best)
            print("| %s | %s | %d | %s |" % (label, names[train], used, " | ".join(
                "%.3f%s" % (1000 * figures[v], "*" if v == best else "")
                for v in ("score-only",) + tuple(VARIANTS))))
            if best == "default":
                chosen_llrs.append(llrs[system, "qmf"][i])
                continue
            train_options = VARIANTS[best][0]
            quality = (["--enroll-quality=ark:" + inverse, "--test-quality=ark:" + inverse]
                       if train_options is None else duration_options)
            chosen_llrs.append(calibrate(out, "qmf_" + best.replace(" ", "_").replace(
                "/", "inv"), names[train], h, system, quality, train_options or ()))
        if chosen == ["default", "default"]:
            continue
        pooled = concatenate(chosen_llrs, os.path.join(out, "%s_qmf_chosen_pooled.llr"
                                                       % system))
        default = os.path.join(out, "%s_qmf_pooled.llr" % system)
        rows.append(("%s: chosen %s / %s vs default" % (label, *chosen),
                     compare(spk_table, default, pooled, pooled_trials, args.bootstrap)))
    if rows:
        labels.update({r[0]: r[0] for r in rows})
        print("\n" + table("Chosen QMF variant (B) against the default QMF (A), pooled",
                           rows, labels, columns=("default QMF", "chosen")))
    else:
        print("\nthe default was chosen in every training half: nothing to compare")


if __name__ == "__main__":
    main()
