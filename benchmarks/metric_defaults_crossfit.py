"""Which --scale / --average / --eta should train-pauc-metric ship? Cross-fitted on TRAINING
speakers only (issue 19 item 2; the shipped values were chosen on ETRI evaluation trials).

For each corpus (ETRI i-vectors, TIMIT GE2E d-vectors; shared/realdata, read in place) the
training speakers are split into --folds folds (models.crossfit, seeded as train-pauc-auto);
for each fold the recipe's back-end (train mean, LDA at the recipe's dimension capped by the
fold's speakers - 1, length norm, PLDA) and the pAUCMetric on both preprocessings (length-norm,
PLDA latent) are trained on the other folds with each setting of the grid, and the held-out
trials (built like the corpus's evaluation trials: ETRI enrollment by the mean of 3, TIMIT
utterance against utterance without same-stretch pairs) are scored. The table gives the mean
held-out pAUC[0,0.01] per setting and (corpus, preprocessing), the fold SE, and the mean over
the four. The evaluation trials are never read.

Usage (by hand, minutes; 2 processes): python benchmarks/metric_defaults_crossfit.py [--folds 3]
"""

import argparse
import multiprocessing
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from pauc_backend.kaldi_io import read_token_vector_table, read_vector_table  # noqa: E402
from pauc_backend.models.backend_pipeline import BackendPipeline  # noqa: E402
from pauc_backend.models.crossfit import (HeldOutTrials, speaker_folds,  # noqa: E402
                                          trial_figures)

REAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                    "shared", "realdata")
CORPORA = {"etri": ("etri", 100, 3), "timit": ("timit-ge2e", 200, 0)}
# (scale, average, eta): the shipped default first, the paper's algorithm last.
GRID = [("auto", True, 1.0), ("auto", True, 0.3), ("auto", True, 3.0), ("auto", False, 1.0),
        (1.0, True, 1.0), (1.0, False, 10.0)]


def load(corpus):
    folder, lda, enroll = CORPORA[corpus]
    base = os.path.join(REAL, folder, "train")
    keys, X = read_vector_table("ark:" + os.path.join(base, "xvector.ark"))
    spk2utt = read_token_vector_table("ark:" + os.path.join(base, "spk2utt"))
    pos = {k: i for i, k in enumerate(keys)}
    rows, labels = [], []
    for i, (_, utts) in enumerate(sorted(spk2utt.items())):
        rows += [pos[u] for u in utts]
        labels += [i] * len(utts)
    names = [keys[r] for r in rows]
    groups = None
    if corpus == "timit":       # segNN 2i and 2i+1 come from one voiced stretch
        groups = np.array([k.rsplit("-seg", 1)[0] + "/%d" % (int(k.rsplit("seg", 1)[1]) // 2)
                           for k in names])
    return np.asarray(X)[rows], np.array(labels), groups, lda, enroll


_DATA = {}


def task(args):
    corpus, k, folds, setting = args
    X, y, groups, lda, enroll = _DATA[corpus]
    speakers, fold = speaker_folds(y, folds, 0)
    vec_fold = fold[np.searchsorted(speakers, y)]
    train = vec_fold != k
    cap = min(X.shape[1], int(np.count_nonzero(fold != k)) - 1)
    scale, average, eta = setting
    pipe = BackendPipeline(lda_dim=min(lda, cap), systems=("pauc_lnorm", "pauc_latent"),
                           metric_params={"scale": scale, "average": average, "eta": eta},
                           random_state=k).fit(X[train], y[train])
    t = HeldOutTrials(y, np.flatnonzero(vec_fold == k), enroll, groups, None, 1000 + k)
    fe = pipe.features(t.enroll_vectors(X), t.num_utts)
    ft = pipe.features(X[t.test_rows], 1)
    scores = pipe.score(fe, ft, t.enroll_index, t.test_index, t.num_utts)
    return [trial_figures(scores[:, j], t.is_target, 0.0, 0.01)["pauc"] for j in range(2)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    start = time.time()
    for corpus in CORPORA:
        _DATA[corpus] = load(corpus)
    tasks = [(c, k, args.folds, s) for c in CORPORA for s in GRID for k in range(args.folds)]
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        results = pool.map(task, tasks, chunksize=1)
    table = {}
    for (corpus, k, _, setting), paucs in zip(tasks, results):
        for prep, value in zip(("lnorm", "latent"), paucs):
            table.setdefault(setting, {}).setdefault((corpus, prep), []).append(value)
    cols = [(c, p) for c in CORPORA for p in ("lnorm", "latent")]
    print("| scale | average | eta | " + " | ".join("%s %s" % c for c in cols)
          + " | mean |")
    print("|---" * (4 + len(cols)) + "|")
    for setting in GRID:
        cells = []
        for col in cols:
            v = np.array(table[setting][col])
            cells.append("%.4f (%.4f)" % (v.mean(), v.std(ddof=1) / np.sqrt(v.size)))
        mean = np.mean([np.mean(table[setting][col]) for col in cols])
        print("| %s | %s | %g | %s | %.4f |" % (setting[0], str(setting[1]).lower(),
                                                setting[2], " | ".join(cells), mean))
    print("\nHeld-out pAUC[0,0.01] (fold SE), %d folds of training speakers, seed 0; %.0f s "
          "wall, %d processes." % (args.folds, time.time() - start, args.jobs))


if __name__ == "__main__":
    main()
