"""The checks of an unlabelled adaptation set (pauc_backend/models/unlabelled.py, issue 41
item 4): what each statistic gives on real and degenerate sets, and the data behind each
threshold. Output: benchmarks/RESULTS_adapt_set_checks.md (with --out).

Corpora (../shared/realdata and the synthetic demo corpus); each pair is (labelled training
set, unlabelled set):

* etri: the 68 male training speakers -> the 50 female training speakers (training data);
* timit-split: the TIMIT training speakers below the median of the first principal direction
  of the speaker means -> the others (training data; benchmarks/RESULTS_pseudo_speakers.md's S3);
* synthetic: make-synthetic-vectors' corpus (seed 777, dim 80): train/ -> adapt/;
* timit-eval: the TIMIT training speakers -> the evaluation vectors (unlabelled here; a check
  only, chose nothing: no evaluation trial is read anywhere).

Sections:

1. Each pair's unlabelled set, its one-vector-per-speaker version (the first vector of each
   speaker: the real set without clusters) and degenerate sets built at the training data's
   scale: isotropic Gaussian noise (20,000 vectors at the data's scale around the training
   mean, as issue 41 item 4; 2,000 at unit scale around 0), 200 identical vectors, 200 vectors
   on one line, 2,000 vectors of rank 5, 50 copies of one vector (alone, and appended to the
   real set), 200 all-zero vectors, 200 vectors of 1e30: every statistic and the verdict;
   the domain shift (models.domain, not a criterion) beside them.
2. CLUSTER_SHARE's calibration: the share (module doc, 4) on halves of the TRAINING speakers
   (the reference from one half, the sets from the other: one vector per speaker, four, all)
   and on the three training-data unlabelled sets (all vectors, one per speaker), seeds 0-4.
3. The sphericity statistics under their null: isotropic Gaussian draws (1,000 per shape):
   quantiles of John's z (the criterion) and the share above Z_999; Johnstone's z_edge.
4. Power: one-vector-per-speaker subsets of k speakers of the unlabelled sets: John's z and
   the largest-eigenvalue z_edge.
5. The automatic back-end on the synthetic corpus (--quick settings: 3 folds, LDA none/50,
   100 iterations; enroll-utts 3; its evaluation trials only measure), with X_adapt = none,
   adapt/, its one-vector-per-speaker version (with and without the pseudo-speaker stage),
   and the issue's noise set given to the estimator unchecked (what train-pauc-auto did
   before; now it WARNs and trains as without --adapt, so its result is the "none" row).
6. Cost: CPU seconds (process_time) of TrainingReference.fit and examine.

Usage (by hand; about 30 min under load 15-25 on the shared 2-core machine):
    python benchmarks/adapt_set_checks.py [--skip-backend]
    [--out=benchmarks/RESULTS_adapt_set_checks.md]
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

from pauc_backend.datasets import make_speaker_corpus  # noqa: E402
from pauc_backend.kaldi_io import read_token_table, read_vector_table  # noqa: E402
from pauc_backend.models import unlabelled as U  # noqa: E402
from pauc_backend.models.domain import TrainingDomain  # noqa: E402

REAL = os.path.join(HERE, os.pardir, os.pardir, "shared", "realdata")
SEEDS = range(5)


def read_set(*parts):
    folder = os.path.join(REAL, *parts)
    keys, X = read_vector_table("ark:%s" % os.path.join(folder, "xvector.ark"))
    utt2spk = read_token_table("ark:%s" % os.path.join(folder, "utt2spk"))
    return X.astype(np.float32), np.array([utt2spk[k] for k in keys])


def corpora():
    """[(name, X, y, A, speaker of each A row, whether A is training data)]."""
    out = []
    X, y = read_set("etri", "train")
    female = np.array([s[3] == "F" for s in y])
    out.append(("etri", X[~female], y[~female], X[female], y[female], True))
    X, y = read_set("timit-ge2e", "train")
    speakers = np.unique(y)
    means = np.array([X[y == s].mean(axis=0) for s in speakers])
    centred = means - means.mean(axis=0)
    direction = np.linalg.svd(centred, full_matrices=False)[2][0]
    high = np.isin(y, speakers[centred @ direction > np.median(centred @ direction)])
    out.append(("timit-split", X[~high], y[~high], X[high], y[high], True))
    c = make_speaker_corpus(seed=777, dim=80)
    out.append(("synthetic", c.train.X, np.array(c.train.labels), c.adapt.X,
                np.array(c.adapt.labels), True))
    E, ye = read_set("timit-ge2e", "eval")
    out.append(("timit-eval", X, y, E, ye, False))
    return out


def first_per_speaker(y, count=1, rng=None):
    """Rows: the first ``count`` vectors of each speaker (a seeded choice with ``rng``)."""
    rows = []
    for s in np.unique(y):
        mine = np.flatnonzero(y == s)
        rows.extend((rng.permutation(mine) if rng is not None else mine)[:count])
    return np.sort(np.asarray(rows))


def degenerate_sets(X, seed=0):
    rng = np.random.default_rng([seed, 7])
    dim = X.shape[1]
    mean, scale = X.mean(axis=0), float(np.sqrt(X.var(axis=0).mean()))
    x0 = X[0]
    line = rng.standard_normal(dim)
    line /= np.linalg.norm(line)
    basis = rng.standard_normal((5, dim))
    return {
        "noise, data scale (20,000)": mean + scale * rng.standard_normal((20000, dim)),
        "noise, unit scale (2,000)": rng.standard_normal((2000, dim)),
        "200 identical": np.repeat(x0[None], 200, axis=0),
        "200 on one line": x0 + np.outer(3 * scale * rng.standard_normal(200), line),
        "rank 5 (2,000)": mean + scale * rng.standard_normal((2000, 5)) @ basis,
        "50 copies of one": np.repeat(x0[None], 50, axis=0),
        "200 all zero": np.zeros((200, dim)),
        "200 of 1e30": 1e30 * rng.standard_normal((200, dim)),
    }


def fmt(value, spec="%.3g"):
    return "-" if value is None else spec % value


def row(name, check, shift=None):
    f = check.figures
    use = "".join(c for c, ok in zip("CVP", (check.centring, check.covariance,
                                             check.pseudo_speakers)) if ok) or "-"
    return "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        name, f["vectors"], f["kept"],
        "%d / %d" % (f["rank"], f["expected_rank"]) if "rank" in f else "-",
        fmt(f.get("z"), "%.1f"), fmt(f.get("ratio")), fmt(f.get("edge")),
        fmt(f.get("z_edge"), "%.1f"), fmt(f.get("cluster_share"), "%.3f"),
        fmt(shift, "%.2f"), check.token, use)


def section_sets(data, lines):
    lines += ["## 1. The statistics and the verdict of each set", "",
              "Columns: vectors, kept (after the row checks), numerical rank / expected "
              "(min(training's, m - 1)), John's z (not above %.2f: isotropic), largest "
              "eigenvalue / mean, the Marchenko-Pastur edge and Johnstone's z_edge (reported, "
              "not used), cluster share (clusters: >= %.2f and >= 40 such vectors), the domain "
              "shift (models.domain; not a criterion), the verdict and what the set may be "
              "used for (C centring, V covariance, P pseudo-speakers). A statistic is shown "
              "only when the checks before it passed." % (U.Z_999, U.CLUSTER_SHARE), ""]
    costs = []
    for name, X, y, A, ya, _ in data:
        t0 = time.process_time()
        reference = U.TrainingReference.fit(X, y)
        costs.append(("TrainingReference.fit, %s (%d x %d)" % (name, X.shape[0], X.shape[1]),
                      time.process_time() - t0))
        domain = TrainingDomain().fit(X, y)
        lines += ["### %s: %d training vectors of %d speakers (rank %d, LDA %d)" % (
            name, X.shape[0], np.unique(y).size, reference.rank,
            reference.directions.shape[0]), "",
                  "| set | n | kept | rank | z | ratio | edge | z_edge | cluster share | "
                  "shift | verdict | use |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        sets = {"the unlabelled set": A, "one vector per speaker": A[first_per_speaker(ya)]}
        sets.update(degenerate_sets(X))
        sets["the set + 50 copies of its first"] = np.vstack([A, np.repeat(A[:1], 50, 0)])
        for label, B in sets.items():
            B = np.asarray(B, dtype=np.float32)
            t0 = time.process_time()
            check = U.examine(B, reference)
            if label in ("the unlabelled set", "noise, data scale (20,000)"):
                costs.append(("examine, %s: %s (%d x %d)" % (name, label, B.shape[0],
                                                            B.shape[1]),
                              time.process_time() - t0))
            kept = B[check.rows]
            with np.errstate(all="ignore"):
                shift = domain.shift(kept) if kept.shape[0] >= 2 and np.isfinite(
                    kept.astype(np.float64) ** 2).all() else None
            lines.append(row(label, check, shift))
            print(lines[-1], flush=True)
        lines.append("")
    return costs


def section_calibration(data, lines):
    lines += ["## 2. CLUSTER_SHARE: structureless (one vector per speaker) against clustered",
              "", "Seeds 0-4 (the half split and the samples). Training halves: the "
              "reference (LDA, rank) from a seeded half of the training speakers, the sets from "
              "the other half.", "",
              "| corpus | set | vectors | share min | share max |", "|---|---|---|---|---|"]
    singles, clustered = [], []
    for name, X, y, A, ya, training in data:
        groups = {}
        for seed in SEEDS:
            rng = np.random.default_rng([seed, 3])
            speakers = np.unique(y)
            half = np.isin(y, rng.permutation(speakers)[:speakers.size // 2])
            reference = U.TrainingReference.fit(X[half], y[half], seed=seed)
            other, yo = X[~half], y[~half]
            full = U.TrainingReference.fit(X, y, seed=seed)
            for label, B, ref in (
                    ("training half, 1 per speaker", other[first_per_speaker(yo, 1, rng)],
                     reference),
                    ("training half, 4 per speaker", other[first_per_speaker(yo, 4, rng)],
                     reference),
                    ("training half, all", other, reference),
                    ("unlabelled set, 1 per speaker", A[first_per_speaker(ya, 1, rng)], full),
                    ("unlabelled set, all", A, full)):
                # the share as examine computes it, whatever the checks before it say
                S = np.asarray(B[U.sample_rows(B.shape[0], U.MAX_ROWS, seed)], np.float64)
                share = U.cluster_share(S @ ref.directions.T, seed)[0]
                groups.setdefault(label, []).append((B.shape[0], share))
        for label, values in groups.items():
            shares = [v for _, v in values]
            lines.append("| %s | %s | %d-%d | %.3f | %.3f |" % (
                name, label, min(n for n, _ in values), max(n for n, _ in values),
                min(shares), max(shares)))
            print(lines[-1], flush=True)
            if label == "training half, 1 per speaker":      # training data, every corpus
                singles.append(max(shares))
            if label == "unlabelled set, all" and training:  # not TIMIT's evaluation vectors
                clustered.append(min(shares))
    low, high = max(singles), min(clustered)
    lines += ["", "Largest share of a one-vector-per-speaker training half: %.3f; smallest "
              "of a clustered unlabelled set of training data: %.3f; their geometric mean: "
              "%.3f (CLUSTER_SHARE = %.2f). TIMIT's evaluation vectors chose nothing."
              % (low, high, np.sqrt(low * high), U.CLUSTER_SHARE), ""]


def section_null(lines):
    lines += ["## 3. The sphericity statistics of isotropic Gaussian noise (1,000 seeded draws "
              "per shape)", "",
              "| m vectors | D | John's z: q95 | q99 | q99.9 | max | share > %.2f | z_edge: "
              "q99.9 | max |" % U.Z_999, "|---|---|---|---|---|---|---|---|---|"]
    for m, dim in ((10, 80), (50, 200), (200, 80), (500, 16), (2000, 200), (2000, 256)):
        rng = np.random.default_rng([m, dim])
        stats = np.array([U.sphericity(U.covariance_spectrum(rng.standard_normal((m, dim))), m)
                          for _ in range(1000)])
        z, edge = stats[:, 0], stats[:, 3]
        lines.append("| %d | %d | %.2f | %.2f | %.2f | %.2f | %.3f | %.2f | %.2f |" % (
            (m, dim) + tuple(np.quantile(z, [0.95, 0.99, 0.999])) + (
                z.max(), np.mean(z > U.Z_999), np.quantile(edge, 0.999), edge.max())))
        print(lines[-1], flush=True)
    lines.append("")


def section_power(data, lines):
    lines += ["## 4. Power: one vector per speaker of k speakers", "",
              "John's z / z_edge, min-max over seeds 0-4 (the speakers drawn).", "",
              "| corpus | k = 5 | 10 | 20 | 30 | 50 |", "|---|---|---|---|---|---|"]
    for name, X, y, A, ya, _ in data:
        cells = []
        singles = first_per_speaker(ya)
        speakers = ya[singles]
        for k in (5, 10, 20, 30, 50):
            if k > speakers.size:
                cells.append("-")
                continue
            stats = []
            for seed in SEEDS:
                pick = np.random.default_rng([seed, k]).permutation(speakers)[:k]
                rows = singles[np.isin(speakers, pick)]
                stats.append(U.sphericity(U.covariance_spectrum(A[rows].astype(np.float64)), k))
            stats = np.array(stats)
            cells.append("%.1f-%.1f / %.1f-%.1f" % (stats[:, 0].min(), stats[:, 0].max(),
                                                    stats[:, 3].min(), stats[:, 3].max()))
        lines.append("| %s | %s |" % (name, " | ".join(cells)))
        print(lines[-1], flush=True)
    lines.append("")


def section_backend(lines):
    from pauc_backend.metrics import eer
    from pauc_backend.models.auto import AutoBackend, pseudo as auto_pseudo
    c = make_speaker_corpus(seed=777, dim=80)
    X, y = c.train.X, np.array(c.train.labels)
    labels = np.array(c.enroll.labels)
    speakers = sorted(set(labels.tolist()))
    E = np.stack([c.enroll.X[labels == s].mean(axis=0) for s in speakers]).astype(np.float32)
    counts = np.array([(labels == s).sum() for s in speakers])
    er = np.searchsorted(speakers, c.trial_enroll)
    tr = np.searchsorted(np.array(c.test.keys), c.trial_test)
    assert (np.array(c.test.keys)[tr] == c.trial_test).all()
    noise = degenerate_sets(X)["noise, data scale (20,000)"].astype(np.float32)
    single = c.adapt.X[first_per_speaker(np.array(c.adapt.labels))]
    quick = dict(num_folds=3, lda_dims=(0, 50), enroll_utts=3,
                 metric_params={"num_iters": 100})
    lines += ["## 5. pAUCMetric (auto) on the synthetic corpus (quick settings)", "",
              "| X_adapt | chosen | rated by | EER % | vs none |", "|---|---|---|---|---|"]
    base = None
    original = auto_pseudo.build
    for label, A, pseudo in (("none", None, True), ("adapt/ (959 vectors)", c.adapt.X, True),
                             ("one per speaker (150)", single, True),
                             ("one per speaker, no pseudo-speakers", single, False),
                             ("noise (the issue's case; examined: not used)", noise, True)):
        if not pseudo:
            auto_pseudo.build = lambda *a, **k: (None, "not built (this row)")
        try:
            model = AutoBackend(**quick).fit(X, y, X_adapt=A)
        finally:
            auto_pseudo.build = original
        s = np.asarray(model.score(E, c.test.X, er, tr, counts), dtype=np.float64)
        value = 100 * eer(s[c.trial_target], s[~c.trial_target])
        base = value if base is None else base
        card = dict(line.split(" ", 1) for line in model.describe().splitlines() if " " in line)
        lines.append("| %s | %s | %s | %.2f | %.3f |" % (
            label, "+".join(model.members_), card.get("selection_rated_by", "-"), value,
            value / base))
        print(lines[-1], flush=True)
    lines.append("")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-backend", action="store_true")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    start = time.time()
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = ["# Checks of an unlabelled adaptation set (`benchmarks/adapt_set_checks.py`)", "",
             "Run %s, commit %s; load at the start: `%s`. CPU times below are process "
             "times (the machine is shared)." % (datetime.date.today(), commit, load), ""]
    data = corpora()
    costs = section_sets(data, lines)
    section_calibration(data, lines)
    section_null(lines)
    section_power(data, lines)
    if not args.skip_backend:
        section_backend(lines)
    lines += ["## 6. Cost (CPU seconds)", "", "| step | CPU s |", "|---|---|"]
    lines += ["| %s | %.2f |" % item for item in costs]
    lines += ["", "Wall time of the whole run: %.0f s; load at the end: `%s`." % (
        time.time() - start,
        subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()), ""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
