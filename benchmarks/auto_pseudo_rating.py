"""How well the pseudo-speaker trials rate the automatic back-end's candidates, on training data
only (issue 41: "say how the rating guards against that bias").

Two domain shifts built from TRAINING sets, each with labelled in-domain trials that only
measure (passed as development trials so that every candidate is scored on them by the same
fold models; their rows are compared, the choice of this fit is not used):

* etri: the 68 male training speakers of ../shared/realdata/etri labelled; 25 of the 50 female
  training speakers (seeded) the unlabelled adaptation set; the other 25 the measure trials
  (enrollment by the mean of 3 vectors against every other vector, --enroll-utts=3);
* timit: ../shared/realdata/timit-ge2e's training speakers split by the first principal
  direction of their means: the lower half labelled; of the upper half (seeded), one half the
  adaptation set, the other the measure trials (single vectors against single vectors, a
  seeded sample of 200,000 pairs, --enroll-utts=0).

For each design of the pseudo-speakers that rate (``--designs``): ``vectors`` (the shipped
design: the clustering's iteration with a PLDA in the vectors' own space), ``training-lda``
(the iteration's PLDA in an LDA of the training speakers, the earlier design), ``first-cut``
(no iteration: clusters of the centred cosine only), it prints every candidate's pAUC on the
pseudo-speaker trials and on the measure trials, their Spearman correlation, and what the
one rule picks on the pseudo-speaker trials alone (models.auto.selection) with its measure
pAUC. Quick settings (LDA none,100/150, pAUCMetrics at 100 iterations): the ranking, not the
best figures.

    nice python benchmarks/auto_pseudo_rating.py [etri] [timit] [--designs=vectors,...]
    [--out=benchmarks/RESULTS_pseudo_rating.md]
"""

import argparse
import datetime
import os
import subprocess
import sys
import time

import numpy as np
from scipy.stats import spearmanr

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir))

from pauc_backend.kaldi_io import read_token_table, read_vector_table  # noqa: E402
from pauc_backend.models import pseudo_speakers as ps  # noqa: E402
from pauc_backend.models.auto import AutoBackend, pseudo as P, selection  # noqa: E402
from pauc_backend.models.auto.dev import DevTrials  # noqa: E402
from pauc_backend.models.auto.evidence import DEV_TRIALS, PSEUDO_TRIALS  # noqa: E402
from pauc_backend.models.lda import LDA  # noqa: E402

SHARED = os.path.join(HERE, os.pardir, os.pardir, "shared", "realdata")


def read(root):
    keys, X = read_vector_table("ark:%s" % os.path.join(root, "xvector.ark"))
    utt2spk = read_token_table("ark:%s" % os.path.join(root, "utt2spk"))
    return X.astype(np.float32), np.array([utt2spk[k] for k in keys])


def etri():
    X, y = read(os.path.join(SHARED, "etri", "train"))
    female = np.array([s[3] == "F" for s in y])
    speakers = np.random.RandomState(7).permutation(np.unique(y[female]))
    adapt, measure = speakers[:25], speakers[25:]
    M, my = X[np.isin(y, measure)], y[np.isin(y, measure)]
    enroll, tests, test_speaker = [], [], []
    for s in sorted(measure):
        rows = np.flatnonzero(my == s)
        enroll.append(rows[:3])
        tests.extend(rows[3:])
        test_speaker.extend([s] * (rows.size - 3))
    tests, test_speaker = np.array(tests), np.array(test_speaker)
    e = np.repeat(np.arange(len(enroll)), tests.size)
    t = np.tile(np.arange(tests.size), len(enroll))
    names = np.array(sorted(measure))
    dev = DevTrials(M, enroll, tests, e, t, names[e] == test_speaker[t], names, test_speaker)
    return X[~female], y[~female], X[np.isin(y, adapt)], dev, 3


def timit():
    X, y = read(os.path.join(SHARED, "timit-ge2e", "train"))
    speakers = np.unique(y)
    means = np.stack([X[y == s].mean(axis=0) for s in speakers])
    centred = means - means.mean(axis=0)
    proj = centred @ np.linalg.svd(centred, full_matrices=False)[2][0]
    low = speakers[proj <= np.median(proj)]
    high = np.random.RandomState(3).permutation(speakers[proj > np.median(proj)])
    adapt, measure = high[:high.size // 2], high[high.size // 2:]
    M, my = X[np.isin(y, measure)], y[np.isin(y, measure)]
    i, j = np.triu_indices(M.shape[0], 1)
    keep = np.random.RandomState(3).choice(i.size, min(i.size, 200000), replace=False)
    i, j = i[keep], j[keep]
    dev = DevTrials(M, [np.array([r]) for r in range(M.shape[0])], np.arange(M.shape[0]), i, j,
                    my[i] == my[j], my, my)
    train = np.isin(y, low)
    return X[train], y[train], X[np.isin(y, adapt)], dev, 0


def clustering(design):
    """models.auto.pseudo.cluster for a design (the shipped one for "vectors")."""
    if design == "vectors":
        return P.cluster

    def cluster(X, y, rows, A, arows, seed):
        Aa = np.asarray(A[arows], dtype=np.float64)
        mean = Aa.mean(axis=0).astype(np.float32)
        first = ps.PseudoSpeakers(min_size=1, max_vectors=P.MAX_CLUSTERED,
                                  random_state=seed).fit(
            Aa, ps.cosine_similarity(mean), P._stop_scores(X, y, rows, seed))
        if design == "first-cut":
            again = ps.PseudoSpeakers(num_clusters=first.n_cut_, min_size=P.MIN_TRAIN_SIZE,
                                      max_vectors=P.MAX_CLUSTERED, random_state=seed).fit(
                Aa, ps.cosine_similarity(mean))
            return P.Clustering(again.labels_, again, first.threshold_, first.n_cut_)
        speakers = int(np.unique(y[rows]).size)
        lda = LDA(dim=min(P.lda_dim_for((100, 150), X.shape[1]), speakers - 1)).fit(
            X, y[rows], rows=rows)
        W = lda.affine_matrix_[:, :-1].astype(np.float32)
        labels = np.where(P._kept(first.labels_, P.MIN_TRAIN_SIZE), first.labels_, -1)
        plda = P.pooled_plda(X, P._compact(y[rows]), rows, lda.mean_, A, arows, labels, mean,
                             W)
        second = ps.PseudoSpeakers(num_clusters=first.n_cut_, min_size=P.MIN_TRAIN_SIZE,
                                   max_vectors=P.MAX_CLUSTERED, random_state=seed).fit(
            P._project(A, arows, mean, W), ps.plda_similarity(plda))
        return P.Clustering(second.labels_, second, first.threshold_, first.n_cut_)
    return cluster


def study(name, data, design, jobs):
    X, y, A, dev, enroll_utts = data
    shipped = P.cluster
    P.cluster = clustering(design)
    try:
        t0 = time.process_time()
        model = AutoBackend(enroll_utts=enroll_utts, n_jobs=jobs, lda_dims=(0, 100, 150),
                            metric_params={"num_iters": 100}).fit(X, y, X_adapt=A, dev=dev)
        cpu = time.process_time() - t0
    finally:
        P.cluster = shipped
    choice = model.choice_
    sources = {e.source: e for e in choice.evidence}
    pseudo, measure = sources[PSEUDO_TRIALS], sources[DEV_TRIALS]
    both = [i for i in range(len(choice.labels))
            if pseudo.rows[i] is not None and measure.rows[i] is not None]
    rho = spearmanr(pseudo.means()[both], measure.means()[both]).correlation
    labels = list(choice.labels)
    alone = [e for e in choice.evidence if e.source != DEV_TRIALS]
    picked, _ = selection.choose(labels, alone, list(choice.complexity), "1se",
                                 selection.do_no_harm(labels, True))
    best = both[int(np.argmax(measure.means()[both]))]
    rows = [(labels[i], pseudo.means()[i], measure.means()[i]) for i in
            sorted(both, key=lambda i: -measure.means()[i])]
    return {"name": name, "design": design, "rho": rho, "count": len(both), "cpu": cpu,
            "picked": labels[picked], "picked_measure": measure.means()[picked],
            "picked_pseudo": pseudo.means()[picked], "best": labels[best],
            "best_measure": measure.means()[best], "rows": rows}


def label(c):
    return "%s (LDA %s)" % (c[0], c[1] or "none")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="*", default=["etri", "timit"])
    ap.add_argument("--designs", default="vectors,training-lda")
    ap.add_argument("--num-jobs", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS_pseudo_rating.md"))
    args = ap.parse_args(argv)
    load = lambda: subprocess.run(["uptime"], stdout=subprocess.PIPE).stdout.decode().strip()  # noqa: E731,E501
    before = load()
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                            stdout=subprocess.PIPE).stdout.decode().strip()
    results = []
    for name in args.sets:
        data = {"etri": etri, "timit": timit}[name]()
        for design in args.designs.split(","):
            r = study(name, data, design, args.num_jobs)
            results.append(r)
            print("%s %s: spearman %.3f over %d; picks %s (measure %.4f); measure-best %s "
                  "%.4f (%.0f CPU s)" % (name, design, r["rho"], r["count"], label(r["picked"]),
                                         r["picked_measure"], label(r["best"]),
                                         r["best_measure"], r["cpu"]), flush=True)
    lines = ["# The pseudo-speaker trials as a rating source, on training data only",
             "", "Written by `benchmarks/auto_pseudo_rating.py` (its docstring says what is "
             "trained on what; nothing here uses an evaluation speaker). Run %s, commit %s; "
             "load before: `%s`; after: `%s`." % (
                 datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), commit, before, load()),
             "", "| set | design | Spearman (pseudo vs measure) | candidates | picked on the "
             "pseudo-speaker trials | its measure pAUC | best on the measure trials | its "
             "pAUC |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append("| %s | %s | %.3f | %d | %s | %.4f | %s | %.4f |" % (
            r["name"], r["design"], r["rho"], r["count"], label(r["picked"]),
            r["picked_measure"], label(r["best"]), r["best_measure"]))
    for r in results:
        lines += ["", "%s, %s: each candidate's pAUC[0,0.01] on the pseudo-speaker trials and "
                  "on the measure trials" % (r["name"], r["design"]), "",
                  "| candidate | pseudo | measure |", "|---|---|---|"]
        lines += ["| %s | %.4f | %.4f |" % (label(c), p, m) for c, p, m in r["rows"]]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
