"""Evidence for QMF calibration (issue 29) on ETRI and TIMIT: score-only calibration against
QMF with embedding norms, both trained on trials of held-out TRAINING speakers, applied to the
evaluation trials, compared by compare-systems --llr (paired two-way speaker-cluster bootstrap).

Protocol (nothing is chosen on evaluation trials; the QMF setting is the shipped default,
fixed before any run: min and max of the two sides' measure, no interactions, prior 0.01):

- every 4th training speaker (sorted ids) is held out for calibration; the back-end (training
  mean, LDA, length norm, PLDA; cosine on the same length-normalised LDA vectors; cosine of the
  raw vectors) is trained on the other 3/4;
- calibration trials are drawn from the held-out speakers like the evaluation's: TIMIT single
  segments against single segments (make-calibration-trials, no durations: TIMIT's segments all
  last 1.8 s, so duration is constant and a duration QMF is refused; like the evaluation list,
  no pair of the two segments of one voiced stretch); ETRI enrollment models
  averaged over 3 utterances against single utterances (one model per held-out speaker, the
  rest of its utterances as test segments);
- quality = the norm of each side's vector centred on the training mean (what compute-vector-norms
  writes for subtract-vector-mean's output; an enrollment model's is its averaged vector's):
  the raw GE2E d-vectors all have unit length, so their raw norm is constant. ``--norms
  relative`` divides each table's norms by their median (compute-vector-norms --relative);
  this variant was added after the first ETRI run (centred norms) came out worse, see
  benchmarks/RESULTS_qmf.md; ``--select-norms`` chooses between the two on the held-out
  training speakers only (2-fold cross-validation of their calibration trials) and prints
  that table instead;
- train-calibration (score-only, and with --enroll-quality/--test-quality) on the calibration
  trials, apply-calibration on the evaluation trials, compare-systems --llr --bootstrap=1000
  --utt2spk (clusters: speakers).

    python benchmarks/bench_qmf.py [--corpus etri|timit|both] [--norms centred|relative]
        [--work DIR] [--bootstrap 1000] [--select-norms]

Prints one Markdown table per corpus: EER, minDCF(0.01), actDCF(0.01), Cllr of both
calibrations with the relative difference and its 95 % interval.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from pauc_backend.kaldi_io import (read_token_vector_table, read_vector_table,  # noqa: E402
                                   write_float_table)
from pauc_backend.models.calibration import LinearFusion  # noqa: E402
from pauc_backend.models.lda import LDA  # noqa: E402
from pauc_backend.models.plda import PLDA  # noqa: E402
from pauc_backend.models.preprocessing import normalize_length  # noqa: E402
from pauc_backend.models.quality import QualityFusion, QualityMeasure  # noqa: E402

SHARED = os.path.join(os.path.dirname(REPO), "shared", "realdata")
CORPORA = {
    "etri": dict(dir="etri", train="train", enroll="enroll", test="test", trials="trials",
                 lda=100, enroll_utts=3),
    "timit": dict(dir="timit-ge2e", train="train", enroll=None, test="eval",
                  trials="eval/trials", lda=200, enroll_utts=0),
}
METRICS = [("eer", None, "EER(%)", 100), ("min_dcf", 0.01, "minDCF(0.01)", 1),
           ("act_dcf", 0.01, "actDCF(0.01)", 1), ("cllr", None, "Cllr", 1)]


def tool(name, *args, **kw):
    env = dict(os.environ, PATH=os.path.join(REPO, "bin") + os.pathsep + os.environ["PATH"])
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bin", name), *map(str, args)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, **kw)
    if proc.returncode:
        raise SystemExit("%s failed:\n%s" % (name, proc.stderr.decode()))
    return proc


def read_set(root, name):
    cwd = os.getcwd()
    # ETRI's scp paths are relative to the corpus, TIMIT's to the set's folder
    first = open(os.path.join(root, name, "xvector.scp")).readline().split()[1]
    os.chdir(root if os.path.exists(os.path.join(root, first.rsplit(":", 1)[0]))
             else os.path.join(root, name))
    try:
        keys, X = read_vector_table("scp:xvector.scp" if os.path.exists("xvector.scp")
                                    else "scp:%s/xvector.scp" % name)
        spk2utt = read_token_vector_table("ark:spk2utt" if os.path.exists("spk2utt")
                                          else "ark:%s/spk2utt" % name)
    finally:
        os.chdir(cwd)
    utt2spk = {u: s for s, utts in spk2utt.items() for u in utts}
    return keys, X.astype(np.float64), np.array([utt2spk[k] for k in keys]), spk2utt


def read_trials(path):
    rows = [line.split() for line in open(path)]
    return [r[0] for r in rows], [r[1] for r in rows], np.array([r[2] == "target" for r in rows])


class Backend:
    """Training mean, LDA, length norm, PLDA (Kaldi's recipe) fitted on training vectors."""

    def __init__(self, X, speakers, lda_dim):
        self.mean = X.mean(axis=0)
        self.lda = LDA(dim=lda_dim).fit(X - self.mean, speakers)
        self.plda = PLDA().fit(self.lnorm(X, sqrt_dim=True), speakers)

    def lnorm(self, X, sqrt_dim=False):
        return normalize_length(self.lda.transform(X - self.mean), scaleup=sqrt_dim)[0]

    def scores(self, E, num_utts, T, e_rows, t_rows):
        """{system: scores} of trials (E[e_rows], T[t_rows])."""
        ue, _ = self.plda.transform(self.lnorm(E, True), num_utts=num_utts)
        ut, _ = self.plda.transform(self.lnorm(T, True))
        le, lt = self.lnorm(E), self.lnorm(T)
        re = E / np.linalg.norm(E, axis=1, keepdims=True)
        rt = T / np.linalg.norm(T, axis=1, keepdims=True)
        return {"plda": self.plda.score_pairs(ue, ut, e_rows, t_rows, num_utts=num_utts),
                "cosine": np.einsum("ij,ij->i", le[e_rows], lt[t_rows]),
                "cosine_raw": np.einsum("ij,ij->i", re[e_rows], rt[t_rows])}


def write_scores(path, key1, key2, values):
    with open(path, "w") as f:
        f.writelines("%s %s %.7g\n" % row for row in zip(key1, key2, values))


def write_trials(path, key1, key2, target):
    with open(path, "w") as f:
        f.writelines("%s %s %s\n" % (a, b, "target" if t else "nontarget")
                     for a, b, t in zip(key1, key2, target))


def calibration_trials_etri(rng, keys, speakers, held, enroll_utts):
    """One model of ``enroll_utts`` utterances per held-out speaker against every other
    held-out utterance (ETRI's evaluation design)."""
    models, model_rows, test_rows = [], [], []
    for spk in held:
        rows = np.flatnonzero(speakers == spk)
        if rows.size <= enroll_utts:
            continue
        rows = rng.permutation(rows)
        models.append(spk)
        model_rows.append(rows[:enroll_utts])
        test_rows.extend(rows[enroll_utts:].tolist())
    test_rows = np.array(sorted(test_rows))
    e = np.repeat(np.arange(len(models)), test_rows.size)
    t = np.tile(np.arange(test_rows.size), len(models))
    target = np.array(models)[e] == speakers[test_rows][t]
    return models, model_rows, test_rows, e, t, target


def norm_values(backend, vectors, norms):
    """Each vector's norm after the training mean is subtracted; ``relative``: over the
    table's median (compute-vector-norms --relative)."""
    values = np.linalg.norm(vectors - backend.mean, axis=1)
    return values / np.median(values) if norms == "relative" else values


def calibration_set(name, out):
    """The back-end (fitted on 3/4 of the training speakers) and the calibration trials of the
    held-out 1/4: (spec, root, backend, E, T, num_utts, e, t, target, e_keys, t_keys,
    e_speakers, t_speakers) with the speaker of each row of E and of T."""
    spec = CORPORA[name]
    root = os.path.join(SHARED, spec["dir"])
    keys, X, speakers, _ = read_set(root, spec["train"])
    all_speakers = sorted(set(speakers))
    held = set(all_speakers[3::4])
    fit = ~np.isin(speakers, list(held))
    backend = Backend(X[fit], speakers[fit], spec["lda"])
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    if spec["enroll_utts"]:
        models, model_rows, test_rows, e, t, target = calibration_trials_etri(
            rng, keys, speakers, sorted(held), spec["enroll_utts"])
        E = np.stack([X[r].mean(axis=0) for r in model_rows])
        num_utts = np.full(len(models), float(spec["enroll_utts"]))
        T, e_keys, t_keys = X[test_rows], models, [keys[i] for i in test_rows]
        e_speakers, t_speakers = np.array(models), speakers[test_rows]
    else:
        held_keys = [k for k, s in zip(keys, speakers) if s in held]
        with open(os.path.join(out, "cal_utt2spk"), "w") as f:
            f.writelines("%s %s\n" % (k, s) for k, s in zip(keys, speakers) if s in held)
        tool("make-calibration-trials", "--num-pairs=20000",
             "ark:" + os.path.join(out, "cal_utt2spk"), os.path.join(out, "cal_trials"))
        k1, k2, target = read_trials(os.path.join(out, "cal_trials"))
        # as the evaluation list: no pair of the two segments cut from one voiced stretch
        # (segNN 2i and 2i+1 of one speaker)
        keep = np.array([a.split("-seg")[0] != b.split("-seg")[0]
                         or int(a.split("-seg")[1]) // 2 != int(b.split("-seg")[1]) // 2
                         for a, b in zip(k1, k2)])
        k1, k2, target = np.array(k1)[keep], np.array(k2)[keep], target[keep]
        index = {k: i for i, k in enumerate(keys)}
        held_rows = np.array([index[k] for k in held_keys])
        pos = {k: i for i, k in enumerate(held_keys)}
        E = T = X[held_rows]
        e = np.array([pos[k] for k in k1])
        t = np.array([pos[k] for k in k2])
        num_utts = np.ones(len(held_keys))
        e_keys = t_keys = held_keys
        e_speakers = t_speakers = speakers[held_rows]
    return (spec, root, backend, E, T, num_utts, e, t, target, e_keys, t_keys, e_speakers,
            t_speakers)


def select_norms(name, work):
    """Centred or relative norms, chosen on TRAINING speakers only: 2-fold cross-validation
    over the held-out speakers' calibration trials (folds: alternate speakers; a trial belongs
    to a fold when both its sides' speakers do), score-only calibration and QMF with each
    variant trained on one fold at prior 0.01 and scored on the other; pooled Cllr and
    actDCF(0.01). Returns printable lines."""
    (_, _, backend, E, T, num_utts, e, t, target, _, _, e_speakers,
     t_speakers) = calibration_set(name, os.path.join(work, name + "_select"))
    speakers = sorted(set(e_speakers) | set(t_speakers))
    fold_of = {s: i % 2 for i, s in enumerate(speakers)}
    fe = np.array([fold_of[s] for s in e_speakers])[e]
    ft = np.array([fold_of[s] for s in t_speakers])[t]
    cal = backend.scores(E, num_utts, T, e, t)
    measure = (QualityMeasure("norm"),)
    lines = []
    for system, scores in cal.items():
        figures = {}
        for variant in ("score-only", "centred", "relative"):
            llr = np.full(scores.size, np.nan)
            for k in (0, 1):
                train, test = (fe == k) & (ft == k), (fe == 1 - k) & (ft == 1 - k)
                if variant == "score-only":
                    model = LinearFusion(prior=0.01).fit(scores[train, None], target[train])
                    llr[test] = model.transform(scores[test, None])
                    continue
                qe, qt = norm_values(backend, E, variant), norm_values(backend, T, variant)
                model = QualityFusion(measures=measure, prior=0.01).fit(
                    scores[train], target[train], qe[e[train]], qt[t[train]])
                llr[test] = model.transform(scores[test], qe[e[test]], qt[t[test]])
            used = ~np.isnan(llr)
            figures[variant] = cllr_act_dcf(llr[used], target[used])
        lines.append("| %s %s | %d | %s |" % (name.upper(), system, int(used.sum()), " | ".join(
            "%.4f / %.4f" % tuple(figures[v]) for v in ("score-only", "centred", "relative"))))
    return lines


def cllr_act_dcf(llr, target, prior=0.01):
    """Cllr (bits) and normalised actDCF(prior) of LLRs, plain numpy."""
    cllr = (np.mean(np.logaddexp(0, -llr[target])) + np.mean(np.logaddexp(0, llr[~target])))
    accept = llr >= np.log((1 - prior) / prior)
    return (cllr / 2 / np.log(2), np.mean(~accept[target])
            + (1 - prior) / prior * np.mean(accept[~target]))


def run_corpus(name, work, bootstrap, norms="centred"):
    out = os.path.join(work, name + "_" + norms)
    (spec, root, backend, E, T, num_utts, e, t, target, e_keys, t_keys, _,
     _) = calibration_set(name, out)

    def norm_table(path, table_keys, vectors):
        write_float_table("ark,t:" + path, table_keys, norm_values(backend, vectors, norms))

    cal = backend.scores(E, num_utts, T, e, t)
    write_trials(os.path.join(out, "cal_trials"), np.array(e_keys)[e], np.array(t_keys)[t],
                 target)
    norm_table(os.path.join(out, "cal_enroll_norms"), e_keys, E)
    norm_table(os.path.join(out, "cal_test_norms"), t_keys, T)
    for system, values in cal.items():
        write_scores(os.path.join(out, "cal_" + system), np.array(e_keys)[e],
                     np.array(t_keys)[t], values)

    # the evaluation trials
    t_keys, T, t_speakers, _ = read_set(root, spec["test"])
    key1, key2, _ = read_trials(os.path.join(root, spec["trials"]))
    if spec["enroll"]:
        e_keys_all, Xe, _, spk2utt = read_set(root, spec["enroll"])
        index = {k: i for i, k in enumerate(e_keys_all)}
        models = sorted(spk2utt)
        E = np.stack([Xe[[index[u] for u in spk2utt[m]]].mean(axis=0) for m in models])
        num_utts = np.array([len(spk2utt[m]) for m in models], dtype=np.float64)
        e_keys = models
        utt2spk = {k: s for k, s in zip(t_keys, t_speakers)}
        utt2spk.update({m: m for m in models})
    else:
        E, e_keys, num_utts = T, t_keys, np.ones(len(t_keys))
        utt2spk = dict(zip(t_keys, t_speakers))
    e_pos = {k: i for i, k in enumerate(e_keys)}
    t_pos = {k: i for i, k in enumerate(t_keys)}
    e = np.array([e_pos[k] for k in key1])
    t = np.array([t_pos[k] for k in key2])
    evaluation = backend.scores(E, num_utts, T, e, t)
    norm_table(os.path.join(out, "enroll_norms"), e_keys, E)
    norm_table(os.path.join(out, "test_norms"), t_keys, T)
    with open(os.path.join(out, "utt2spk"), "w") as f:
        f.writelines("%s %s\n" % kv for kv in sorted(utt2spk.items()))
    trials = os.path.join(root, spec["trials"])
    rows = []
    for system, values in evaluation.items():
        write_scores(os.path.join(out, system), key1, key2, values)
        cal_q = ["--enroll-quality=ark:" + os.path.join(out, "cal_enroll_norms"),
                 "--test-quality=ark:" + os.path.join(out, "cal_test_norms")]
        eval_q = ["--enroll-quality=ark:" + os.path.join(out, "enroll_norms"),
                  "--test-quality=ark:" + os.path.join(out, "test_norms")]
        for variant, train_q, apply_q in (("score_only", [], []), ("qmf", cal_q, eval_q)):
            model = os.path.join(out, "%s_%s.mdl" % (system, variant))
            tool("train-calibration", "--prior=0.01", *train_q, os.path.join(out, "cal_trials"),
                 os.path.join(out, "cal_" + system), model)
            tool("apply-calibration", *apply_q, model, os.path.join(out, system),
                 os.path.join(out, "%s_%s.llr" % (system, variant)))
        proc = tool("compare-systems", "--llr", "--report=json", "--bootstrap=%d" % bootstrap,
                    "--utt2spk=ark:" + os.path.join(out, "utt2spk"),
                    os.path.join(out, system + "_score_only.llr"),
                    os.path.join(out, system + "_qmf.llr"), trials)
        report = json.loads(proc.stdout)
        rows.append((system, {(r["metric"], r.get("p_target")): r for r in report["metrics"]}))
    return rows


def table(name, rows, labels=None, columns=("score-only", "QMF")):
    """Markdown table of (system, {(metric, p_target): compare-systems --llr row}) rows;
    ``labels``: {system: row label}; ``columns``: the names of systems A and B."""
    labels = labels or {"plda": "PLDA", "cosine": "Cosine", "cosine_raw": "Cosine (raw vectors)"}
    head = "| %s | " % name + " | ".join("%s %s | %s | (%s-A)/A [95%%]" % (
        title, columns[0], columns[1], columns[1]) for _, _, title, _ in METRICS) + " |"
    lines = [head, "|---" * (1 + 3 * len(METRICS)) + "|"]
    for system, by_key in rows:
        cells = []
        for key, p, _, scale in METRICS:
            r = by_key[(key, p)]
            lo, hi = r["interval"]
            cells.append("%.4g | %.4g | %+.1f%% [%+.1f, %+.1f]" % (
                scale * r["a"], scale * r["b"], 100 * r["relative"], 100 * lo, 100 * hi))
        lines.append("| %s | %s |" % (labels[system], " | ".join(cells)))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=("etri", "timit", "both"), default="both")
    parser.add_argument("--work", default=None)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--norms", choices=("centred", "relative"), default="centred")
    parser.add_argument("--select-norms", action="store_true",
                        help="only choose centred or relative norms on training speakers")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="bench_qmf.")
    if args.select_norms:
        print("| corpus system | cross-validated calibration trials | Cllr / actDCF(0.01) "
              "score-only | QMF centred norms | QMF relative norms |\n|---|---|---|---|---|")
        for name in (("etri", "timit") if args.corpus == "both" else (args.corpus,)):
            print("\n".join(select_norms(name, work)), flush=True)
        return
    for name in (("etri", "timit") if args.corpus == "both" else (args.corpus,)):
        print(table("%s (%s norms)" % (name.upper(), args.norms),
                    run_corpus(name, work, args.bootstrap, args.norms)))
        print(flush=True)
    print("work files in", work)


if __name__ == "__main__":
    main()
