"""How many pAUCMetric iterations the cross-fitting of pAUCMetric (auto) needs to rank its
candidates: held-out pAUC[0,0.01] on TRAINING folds (no evaluation trial is read) of
pauc_lnorm, pauc_latent and their fusions with PLDA, at checkpoints of one 1,000-iteration run
per fold (the iterate average at each checkpoint, exactly what a run of that many iterations
returns: same seed, same batches).

    nice python benchmarks/auto_budget_iters.py etri|timit|paper [--lda-dim=D] [--folds=5]
        [--max-speakers=N] [--checkpoints=100,200,300,500,1000]

Prints, per checkpoint, the mean held-out pAUC over the folds and the paired difference to
the 1,000-iteration value with its fold SE (models.auto.selection's paired SE).
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from pauc_backend.models import ppa  # noqa: E402
from pauc_backend.models import metric_learning  # noqa: E402
from pauc_backend.models.backend_pipeline import BackendPipeline  # noqa: E402
from pauc_backend.models.calibration import LinearFusion  # noqa: E402
from pauc_backend.models.crossfit import HeldOutTrials, speaker_folds, trial_figures  # noqa


def load_training(corpus):
    """(X, speaker labels, groups, enroll_utts) of a corpus's TRAINING set only."""
    from pauc_backend.kaldi_io import read_token_vector_table, read_vector_table
    if corpus == "paper":
        base = os.environ.get("PAPER_CORPUS", "/tmp/i27data/paper")
        keys, X = read_vector_table("scp:%s/train.scp" % base)
        spk2utt = read_token_vector_table("ark:%s/spk2utt" % base)
        enroll_utts, groups = 0, None
    else:
        from bench_auto_backend import CORPORA, ROOT, read_set
        name, enroll_utts = CORPORA[corpus]
        base = os.path.join(ROOT, name)
        keys, X = read_set(base, "train")
        spk2utt = read_token_vector_table("ark:%s/train/spk2utt" % base)
        groups = None
    pos = {k: i for i, k in enumerate(keys)}
    rows, labels = [], []
    for i, (spk, utts) in enumerate(sorted(spk2utt.items())):
        rows += [pos[u] for u in utts]
        labels += [i] * len(utts)
    keys = [keys[r] for r in rows]
    if corpus == "timit":        # never two segments of one voiced stretch, as the recipe
        groups = np.array([k.rsplit("-seg", 1)[0] + "/%d" % (int(k.rsplit("seg", 1)[1]) // 2)
                           for k in keys])
    return np.asarray(X)[rows], np.array(labels), groups, enroll_utts


class Snapshots:
    """Records the PPA iterates' running mean at the checkpoints (monkeypatched ppa_step)."""

    def __init__(self, checkpoints):
        self.checkpoints = sorted(checkpoints)
        self.reset()

    def reset(self):
        self.it, self.mean, self.saved = 0, None, []

    def step(self, M, gradient, eta, mu):
        out = _ppa_step(M, gradient, eta, mu)
        self.it += 1
        M_new = out[0]
        self.mean = M_new.copy() if self.mean is None else self.mean + (M_new - self.mean) / self.it
        if self.it in self.checkpoints:
            self.saved.append(self.mean.copy())
        return out


_ppa_step = ppa.ppa_step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", choices=("etri", "timit", "paper"))
    parser.add_argument("--lda-dim", type=int, default=0)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--max-speakers", type=int, default=0)
    parser.add_argument("--max-trials", type=int, default=3000000)
    parser.add_argument("--checkpoints", default="100,200,300,500,1000")
    args = parser.parse_args()
    checkpoints = [int(c) for c in args.checkpoints.split(",")]
    X, y, groups, enroll_utts = load_training(args.corpus)
    if args.max_speakers and np.unique(y).size > args.max_speakers:
        rng = np.random.default_rng(0)
        keep = np.isin(y, rng.choice(np.unique(y), args.max_speakers, replace=False))
        X, y = X[keep], y[keep]
        groups = None if groups is None else groups[keep]
    dim = args.lda_dim or {"etri": 93, "timit": 125, "paper": 200}[args.corpus]
    print("%s: %d vectors of %d speakers, LDA %d, %d folds; %s"
          % (args.corpus, len(y), np.unique(y).size, dim, args.folds,
             os.popen("uptime").read().strip()), flush=True)
    speakers, fold_of = speaker_folds(y, args.folds, 0)
    vec_fold = fold_of[np.searchsorted(speakers, y)]
    snap = Snapshots(checkpoints)
    metric_learning.ppa.ppa_step = snap.step
    figures = {}          # (system, checkpoint) -> per-fold pAUC
    held = []
    t0 = time.time()
    for k in range(args.folds):
        train = np.flatnonzero(vec_fold != k)
        t = HeldOutTrials(y, np.flatnonzero(vec_fold == k), enroll_utts, groups, None,
                          1000 + k, max_trials=args.max_trials)
        held.append(t)
        pipe = BackendPipeline(lda_dim=dim, systems=("plda",), random_state=k)
        pipe.fit(X[train], y[train])
        fe = pipe.features(t.enroll_vectors(X), t.num_utts)
        ft = pipe.features(X[t.test_rows], 1)
        plda = pipe.score(fe, ft, t.enroll_index, t.test_index, t.num_utts)[:, 0]
        figures.setdefault(("plda", 0), []).append((plda, t.is_target))
        for name in ("pauc_lnorm", "pauc_latent"):
            snap.reset()
            pipe = BackendPipeline(lda_dim=dim, systems=(name,), random_state=k)
            pipe.fit(X[train], y[train])
            metric = pipe.metrics_[name]
            for c, M in zip(checkpoints, snap.saved):
                metric.metric_ = M * metric.scale_
                metric.components_ = metric_learning.metric_factor(metric.metric_)[0]
                fe = pipe.features(t.enroll_vectors(X), t.num_utts)
                ft = pipe.features(X[t.test_rows], 1)
                s = pipe.score(fe, ft, t.enroll_index, t.test_index, t.num_utts)[:, 0]
                figures.setdefault((name, c), []).append((s, t.is_target))
        print("fold %d done, %.0f s" % (k + 1, time.time() - t0), flush=True)

    def pauc_per_fold(columns):
        return np.array([trial_figures(s, lab, 0.0, 0.01)["pauc"] for s, lab in columns])

    def fused(names_c):
        out = []
        for k in range(args.folds):
            others = [j for j in range(args.folds) if j != k]
            train = np.concatenate([np.stack([figures[n][j][0] for n in names_c], 1)
                                    for j in others])
            lab = np.concatenate([held[j].is_target for j in others])
            f = LinearFusion(prior=0.01, regularization=1e-6).fit(train, lab)
            test = np.stack([figures[n][k][0] for n in names_c], 1)
            out.append((f.transform(test), held[k].is_target))
        return out

    rows = {}
    rows["plda"] = {c: pauc_per_fold(figures["plda", 0]) for c in checkpoints}
    for name in ("pauc_lnorm", "pauc_latent"):
        rows[name] = {c: pauc_per_fold(figures[name, c]) for c in checkpoints}
    for combo in (("plda", "pauc_latent"), ("pauc_lnorm", "pauc_latent"),
                  ("plda", "pauc_lnorm", "pauc_latent")):
        rows["+".join(combo)] = {c: pauc_per_fold(fused([(n, 0 if n == "plda" else c)
                                                          for n in combo]))
                                 for c in checkpoints}
    full = max(checkpoints)
    print("\n| candidate | " + " | ".join("%d it" % c for c in checkpoints) + " |")
    print("|---|" + "---|" * len(checkpoints))
    for name, by_c in rows.items():
        cells = []
        for c in checkpoints:
            d = by_c[c] - by_c[full]
            se = d.std(ddof=1) / np.sqrt(d.size)
            cells.append("%.4f (%+.4f +- %.4f)" % (by_c[c].mean(), d.mean(), se))
        print("| %s | %s |" % (name, " | ".join(cells)))
    print("\n%.0f s; %s" % (time.time() - t0, os.popen("uptime").read().strip()))


if __name__ == "__main__":
    main()
