"""pAUCMetric (auto) on the real corpora: run time of the cross-fitted choice, and the
evaluation table (Cosine, PLDA, pAUCMetric LN/latent at the chosen LDA dimension, auto).

The choice uses the training speakers only; the evaluation trials are scored afterwards, to
REPORT figures. Run by hand (not a test):

    nice python benchmarks/bench_auto_backend.py etri  [--lda-dims=100,150] [--folds=5] ...
    nice python benchmarks/bench_auto_backend.py timit [...]

Prints the cross-fitted table (mean over folds) and the evaluation table, with run times and
``uptime`` load.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pauc_backend.kaldi_io import read_vector_table  # noqa: E402
from pauc_backend.models.auto import AutoBackend  # noqa: E402
from pauc_backend.models.auto.params import DEFAULT_LDA_DIMS  # noqa: E402
from pauc_backend.models.systems import parse_candidate  # noqa: E402
from pauc_backend.models.backend_pipeline import BackendPipeline  # noqa: E402
from pauc_backend.models.crossfit import trial_figures  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                    "realdata")
CORPORA = {"etri": ("etri", 3), "timit": ("timit-ge2e", 0)}


def read_table(path):
    return dict(line.split(None, 1) for line in open(path))


def read_set(base, name):
    """Keys and vectors of <base>/<name>/xvector.scp, whose paths are relative to the corpus
    folder (ETRI) or to the set's own folder (TIMIT)."""
    lines = []
    for line in open(os.path.join(base, name, "xvector.scp")):
        key, target = line.split()
        path = target.rsplit(":", 1)[0]
        folder = base if os.path.exists(os.path.join(base, path)) else os.path.join(base, name)
        lines.append("%s %s\n" % (key, os.path.join(folder, target)))
    with tempfile.NamedTemporaryFile("w", suffix=".scp", delete=False) as f:
        f.writelines(lines)
    try:
        return read_vector_table("scp:" + f.name)
    finally:
        os.unlink(f.name)


def load(corpus):
    """(train X, train speakers, enroll X, enroll keys, num_utts, test X, test keys,
    trial enroll rows, trial test rows, is_target)."""
    name, enroll_utts = CORPORA[corpus]
    base = os.path.join(ROOT, name)
    cwd = os.getcwd()
    os.chdir(base)
    try:
        keys, X = read_set(base, "train")
        u2s = {k: v.strip() for k, v in read_table("train/utt2spk").items()}
        y = np.array([u2s[k] for k in keys])
        if corpus == "etri":
            ekeys, EX = read_set(base, "enroll")
            epos = {k: i for i, k in enumerate(ekeys)}
            spk2utt = {k: v.split() for k, v in read_table("enroll/spk2utt").items()}
            enroll_keys = sorted(spk2utt)
            E = np.stack([EX[[epos[u] for u in spk2utt[s]]].astype(np.float64).mean(axis=0)
                          for s in enroll_keys]).astype(np.float32)
            num_utts = np.array([len(spk2utt[s]) for s in enroll_keys])
            test_keys, T = read_set(base, "test")
            trials_path = "trials"
        else:
            test_keys, T = read_set(base, "eval")
            enroll_keys, E, num_utts = test_keys, T, 1
            trials_path = "eval/trials"
        epos = {k: i for i, k in enumerate(enroll_keys)}
        tpos = {k: i for i, k in enumerate(test_keys)}
        rows = [line.split() for line in open(trials_path)]
        er = np.array([epos[r[0]] for r in rows])
        tr = np.array([tpos[r[1]] for r in rows])
        lab = np.array([r[2] == "target" for r in rows])
    finally:
        os.chdir(cwd)
    return X, y, E, num_utts, T, er, tr, lab, enroll_utts


def fmt(fig):
    return "%5.2f | %.4f | %.4f" % (100 * fig["eer"], fig["min_dcf"], fig["pauc_001"])


class KeepHeldOut(AutoBackend):
    """AutoBackend that keeps its cross-fitting (plan and store) after the fit, so that the
    evaluation of every rated candidate can reuse its pooled held-out scores (benchmark
    only: the estimator releases them)."""

    def prepare(self, X, y, groups=None, *args, **kwargs):
        self._plan = super().prepare(X, y, groups, *args, **kwargs)
        self._plan.store.clear = lambda: None
        return self._plan


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", choices=sorted(CORPORA))
    parser.add_argument("--lda-dims", default=",".join(map(str, DEFAULT_LDA_DIMS)))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--candidates", default="")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lda-selection", default="cheap")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    X, y, E, num_utts, T, er, tr, lab, enroll_utts = load(args.corpus)
    kwargs = {}
    if args.candidates:
        kwargs["candidates"] = args.candidates.split(",")
    load_before = os.getloadavg()
    t0, c0 = time.time(), os.times()
    auto = KeepHeldOut(lda_dims=[int(d) for d in args.lda_dims.split(",")],
                       num_folds=args.folds, enroll_utts=enroll_utts,
                       lda_selection=args.lda_selection, n_jobs=args.jobs,
                       random_state=args.seed,
                       log=lambda m: print("LOG", m, file=sys.stderr, flush=True), **kwargs)
    auto.fit(X, y)
    wall, c1 = time.time() - t0, os.times()
    cpu = sum(c1[i] - c0[i] for i in range(4))  # self + worker processes
    print("fit: wall %.1f s, cpu %.1f s; load before %.2f, uptime after: %s"
          % (wall, cpu, load_before[0], subprocess.run(["uptime"], capture_output=True,
                                                       text=True).stdout.strip()))
    print("chosen:", auto.chosen_["candidate"], "LDA", auto.lda_dim_)
    print("\n| system | LDA | held-out EER % | minDCF | pAUC[0,0.01] | eval EER % | minDCF | "
          "pAUC[0,0.01] |")
    print("|---|---|---|---|---|---|---|---|")
    plan = auto._plan
    rows = []
    full = [r for r in auto.cv_results_ if r["budget"] == "full"]
    for dim in sorted({r["score_dim"] for r in full}):
        here = [r for r in full if r["score_dim"] == dim]
        needed = tuple(dict.fromkeys(m for r in here for m in parse_candidate(r["candidate"])))
        pipe = BackendPipeline(lda_dim=dim, systems=needed, metric_params=auto.metric_params,
                               enroll_utts=enroll_utts, random_state=args.seed)
        if auto.dplda_lambda_ is not None:
            pipe.dplda_lambdas = (auto.dplda_lambda_,)
        pipe.fit(X, y)
        scores = pipe.score(pipe.features(E, num_utts), pipe.features(T), er, tr, num_utts)
        for r in here:
            mem = parse_candidate(r["candidate"])
            if not plan.store.has_columns(dim, mem):
                plan.recompute(dim, mem)
            pooled, labels = plan.store.pooled(dim, mem)
            fused = auto.settings_.fusion(auto.max_fusion_trials)(pooled, labels).transform(
                scores[:, [needed.index(m) for m in mem]])
            rows.append((r, trial_figures(fused, lab, 0, 0.01)))
    for r, ev in sorted(rows, key=lambda x: -x[0]["pauc"]):
        print("| %s | %d | %s | %s |" % (r["candidate"], r["lda_dim"], fmt(r), fmt(ev)))
    auto_scores = auto.score(E, T, er, tr, num_utts)
    print("| **auto: %s** | %d | %s | %s |" % (auto.chosen_["candidate"], auto.lda_dim_,
                                               fmt(auto.chosen_),
                                               fmt(trial_figures(auto_scores, lab, 0, 0.01))))
    ranks = [(r["pauc"], ev["pauc_001"]) for r, ev in rows]
    if len(ranks) > 2:
        from scipy.stats import spearmanr
        print("\nSpearman rank correlation held-out pAUC vs eval pAUC[0,0.01]: %.3f"
              % spearmanr(*zip(*ranks)).correlation)


if __name__ == "__main__":
    main()
