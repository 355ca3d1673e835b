"""pAUCMetric (auto) trained on FEW speakers against cosine of the raw embeddings (issue 19).

Trains AutoBackend (library defaults: LDA none,75..250 capped, 1se selection) on --speakers
randomly drawn training speakers of a corpus (shared/realdata, read in place), scores the
corpus's evaluation trials, and compares it with cosine of the raw unit-length vectors and
with PLDA (train mean, LDA capped at the training speakers - 1, length norm, Kaldi PLDA) by
the paired two-way speaker-cluster bootstrap of compare-systems (metrics.bootstrap): the
relative difference auto vs each, its 95 % interval, and the share of resamples in which auto
is better. Chosen on training speakers only; the evaluation trials are read only to report.

What "out of domain" means here: the TIMIT d-vectors come from a GE2E encoder trained on
LibriSpeech/VoxCeleb, so TIMIT is out of the ENCODER's domain, but the back-end's training
speakers (TIMIT train) are of the evaluation's domain; what is small is their number. We have
no second corpus embedded by the same encoder, so a back-end trained on another domain cannot
be measured with our data.

Usage (by hand, minutes): python benchmarks/auto_small_train.py timit [--speakers 40]
       [--draws 0,1,2] [--resamples 1000]
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from pauc_backend.kaldi_io import read_token_vector_table, read_vector_table  # noqa: E402
from pauc_backend.metrics import TrialScores  # noqa: E402
from pauc_backend.metrics.bootstrap import (ClusterBootstrap,  # noqa: E402
                                            paired_bootstrap_statistics, paired_summary)
from pauc_backend.metrics.registry import Setting  # noqa: E402
from pauc_backend.models.auto import AutoBackend, dim_label  # noqa: E402
from pauc_backend.models.backend_pipeline import BackendPipeline  # noqa: E402

REAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                    "shared", "realdata")


def table(folder, part):
    base = os.path.join(REAL, folder, part)
    keys, X = read_vector_table("ark:" + os.path.join(base, "xvector.ark"))
    return keys, np.asarray(X), read_token_vector_table("ark:" + os.path.join(base, "spk2utt"))


def timit_groups(keys):
    return np.array([k.rsplit("-seg", 1)[0] + "/%d" % (int(k.rsplit("seg", 1)[1]) // 2)
                     for k in keys])


def point(scores, is_target):
    return TrialScores.from_trials(scores, is_target).summary([0.01])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", choices=["timit"])
    parser.add_argument("--speakers", type=int, default=40)
    parser.add_argument("--draws", default="0,1,2")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    keys, X, spk2utt = table("timit-ge2e", "train")
    ekeys, E, espk2utt = table("timit-ge2e", "eval")
    pos = {k: i for i, k in enumerate(ekeys)}
    utt2spk = {u: s for s, utts in espk2utt.items() for u in utts}
    trials = [line.split() for line in open(os.path.join(REAL, "timit-ge2e", "eval", "trials"))]
    ei = np.array([pos[t[0]] for t in trials])
    ti = np.array([pos[t[1]] for t in trials])
    is_target = np.array([t[2] == "target" for t in trials])
    spk_e = np.array([utt2spk[t[0]] for t in trials])
    spk_t = np.array([utt2spk[t[1]] for t in trials])
    unit = E / np.linalg.norm(E, axis=1, keepdims=True)
    raw = np.einsum("ij,ij->i", unit[ei], unit[ti])
    kpos = {k: i for i, k in enumerate(keys)}
    speakers = sorted(spk2utt)
    print("# %s: %d of %d training speakers per draw; %d eval trials (%d target)\n"
          % (args.corpus, args.speakers, len(speakers), len(trials), is_target.sum()))
    for draw in [int(v) for v in args.draws.split(",")]:
        rng = np.random.default_rng(draw)
        chosen = [speakers[i] for i in np.sort(rng.choice(len(speakers), args.speakers,
                                                          replace=False))]
        rows = [kpos[u] for s in chosen for u in spk2utt[s]]
        y = np.repeat(np.arange(len(chosen)), [len(spk2utt[s]) for s in chosen])
        start = time.time()
        lines = []
        model = AutoBackend(n_jobs=args.jobs, log=lines.append).fit(
            X[rows], y, timit_groups([keys[r] for r in rows]))
        fit = time.time() - start
        auto = model.score(E, E, ei, ti)
        plda_dim = min(args.speakers - 1, X.shape[1])
        pipe = BackendPipeline(lda_dim=plda_dim, systems=("plda",)).fit(X[rows], y)
        plda = pipe.score(pipe.features(E), pipe.features(E), ei, ti)[:, 0]
        print("## draw %d: auto = %s (LDA %s), fit %.0f s\n"
              % (draw, "+".join(model.members_), dim_label(model.lda_dim_), fit))
        print("%s\n" % next(line for line in lines if line.startswith("Why:")))
        print("| auto vs | EER % (A / auto) | rel. [95 %] | auto better | minDCF (A / auto) "
              "| rel. [95 %] | auto better | pAUC (A / auto) | rel. [95 %] | auto better |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        boots = [ClusterBootstrap(s, is_target, spk_e, spk_t) for s in (raw, plda, auto)]
        stats = paired_bootstrap_statistics(boots, args.resamples, 0, Setting([0.01]))
        for name, col, s in (("raw cosine", 0, raw), ("PLDA (LDA %d)" % plda_dim, 1, plda)):
            rows_out = {r["metric"]: r for r in paired_summary(
                stats[col], stats[2], point(s, is_target), point(auto, is_target),
                Setting([0.01]))}
            cells = []
            for metric, scale in (("eer", 100), ("min_dcf", 1), ("pauc", 1)):
                r = rows_out[metric]
                fmt = "%.2f / %.2f" if metric == "eer" else "%.4f / %.4f"
                cells += [fmt % (scale * r["a"], scale * r["b"]),
                          "%+.1f %% [%+.1f, %+.1f]" % ((100 * r["relative"],)
                                                       + tuple(100 * v for v in r["interval"])),
                          "%.1f %%" % (100 * r["b_better"])]
            print("| %s | %s |" % (name, " | ".join(cells)))
        print()


if __name__ == "__main__":
    main()
