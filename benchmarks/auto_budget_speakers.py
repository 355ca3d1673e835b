"""How many training speakers pAUCMetric (auto)'s cross-fitting needs to rank its candidates:
the cheap systems (PLDA, centred cosine) at every default LDA dimension, cross-fitted on
seeded subsets of --max-speakers speakers of a TRAINING set (no evaluation trial is read), with
each row's mean held-out pAUC[0,0.01] and fold SE, the dimension the selection rule keeps and
the rank correlation with the largest subset.

    python benchmarks/auto_budget_speakers.py paper|timit|etri [--sizes=500,1000,2000,4000]
        [--folds=5] [--jobs=1] [--lda-dims=0,100,150,200,250]

(paper: the corpus of benchmarks/paper_corpus.py in $PAPER_CORPUS, default /tmp/i27data/paper.)
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from auto_budget_iters import load_training  # noqa: E402
from pauc_backend.models.auto import AutoBackend  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", choices=("etri", "timit", "paper"))
    parser.add_argument("--sizes", default="500,1000,2000,4000")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--lda-dims", default="", help="default: the estimator's")
    args = parser.parse_args()
    X, y, groups, enroll_utts = load_training(args.corpus)
    print("%s: %d vectors of %d speakers; %s" % (args.corpus, len(y), np.unique(y).size,
                                                 os.popen("uptime").read().strip()), flush=True)
    table = {}
    for size in [int(s) for s in args.sizes.split(",")]:
        t0, c0 = time.time(), os.times()
        dims = ({"lda_dims": [int(d) for d in args.lda_dims.split(",")]} if args.lda_dims
                else {})
        model = AutoBackend(candidates=("plda", "cosine_centred"), num_folds=args.folds, **dims,
                            enroll_utts=enroll_utts, max_speakers=size, max_vectors=0,
                            screen_factor=1,
                            n_jobs=args.jobs)
        plan = model.prepare(X, y, groups)
        for stage in (1, 2, 3):
            model.add_fold_results(plan, stage, model.cross_fit_stage(plan, stage))
        rows = plan.rows_at()
        c1 = os.times()
        chosen = plan.complexity(rows)
        from pauc_backend.models.auto import selection
        kept, verdict = selection.choose([plan.evidence(rows)], chosen, "1se")
        print("\n%d speakers (%s): %.0f s wall, %.0f s CPU; kept %s at LDA %d, best %s at "
              "LDA %d" % (size, plan.subset, time.time() - t0, sum(c1[i] - c0[i]
                                                                  for i in range(4)),
                          rows[kept]["candidate"], rows[kept]["lda_dim"],
                          rows[verdict["best"]]["candidate"], rows[verdict["best"]]["lda_dim"]),
              flush=True)
        for r in rows:
            p = np.array([f["pauc"] for f in r["folds"]])
            table.setdefault((r["candidate"], r["lda_dim"]), {})[size] = (
                p.mean(), p.std(ddof=1) / np.sqrt(p.size))
    sizes = sorted({s for v in table.values() for s in v})
    print("\n| candidate | LDA | " + " | ".join("%d speakers" % s for s in sizes) + " |")
    print("|---|---|" + "---|" * len(sizes))
    for (name, dim), by in sorted(table.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        print("| %s | %d | %s |" % (name, dim, " | ".join(
            "%.4f +- %.4f" % by[s] if s in by else "-" for s in sizes)))
    from scipy.stats import spearmanr
    keys = sorted(table)
    last = sizes[-1]
    for s in sizes[:-1]:
        pairs = [(table[k][s][0], table[k][last][0]) for k in keys if s in table[k]
                 and last in table[k]]
        print("Spearman of the %d-speaker ranking with the %d-speaker one: %.3f"
              % (s, last, spearmanr(*zip(*pairs)).correlation))
    print(os.popen("uptime").read().strip())


if __name__ == "__main__":
    main()
