"""Does the final pAUCMetrics' bounded sample (--max-metric-vectors, issue 35) lose accuracy?

On a corpus written by paper_corpus.py (default: the paper's shape, 200,000 x 512 of 7,363
speakers), the final model's pieces are trained as train-pauc-auto trains them
(BackendPipeline: mean, LDA, PLDA on every vector) with the pAUCMetrics on all the vectors
and on seeded samples of a few sizes (the same cap on each speaker's count), and each metric
system scores the corpus' evaluation trials (new speakers: enroll.scp x test.scp, trials).
Printed per sample size: EER and pAUC[0,0.01] of pauc_lnorm and pauc_latent, and the CPU
seconds of the fit. The metrics draw num_iters x batch_size speakers (500 x 500 at the
defaults) whatever the table's size, so the question is only whether a sample of the
vectors within speakers is enough. The trials are the synthetic corpus' new speakers: a check
of a default, not a way to choose one (defaults are tuned on training data only).

Usage: nice python benchmarks/auto_metric_sample.py --data=/work/bench-data/paper
          [--lda-dim 200] [--samples 0,100000,50000,25000]
"""

import argparse
import datetime
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from pauc_backend import metrics  # noqa: E402
from pauc_backend.kaldi_io import read_vector_table  # noqa: E402
from pauc_backend.models.auto.params import metric_defaults  # noqa: E402
from pauc_backend.models.backend_pipeline import BackendPipeline  # noqa: E402
from profile_auto_stages import load, read_corpus  # noqa: E402


def trials(data):
    ekeys, E = read_vector_table("scp:%s/enroll.scp" % data)
    tkeys, T = read_vector_table("scp:%s/test.scp" % data)
    epos = {k: i for i, k in enumerate(ekeys)}
    tpos = {k: i for i, k in enumerate(tkeys)}
    e, t, lab = [], [], []
    with open(os.path.join(data, "trials")) as f:
        for line in f:
            a, b, kind = line.split()
            e.append(epos[a])
            t.append(tpos[b])
            lab.append(kind == "target")
    return E, T, np.array(e), np.array(t), np.array(lab)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--lda-dim", type=int, default=200)
    parser.add_argument("--samples", default="0,100000,50000,25000")
    parser.add_argument("--systems", default="pauc_lnorm,pauc_latent",
                        help="metric systems (and plda, to score the fusion's partner)")
    args = parser.parse_args()
    print("start %s UTC; uptime load %s" % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), load()), flush=True)
    X, y = read_corpus(args.data)
    E, T, e, t, lab = trials(args.data)
    print("%d x %d training vectors; %d trials (%d target)"
          % (X.shape + (lab.size, lab.sum())), flush=True)
    systems = tuple(args.systems.split(","))
    print("%-10s %-8s %s  fit CPU s" % ("sample", "used", "  ".join(
        "%-22s" % (name + " EER pAUC") for name in systems)))
    for limit in [int(v) for v in args.samples.split(",")]:
        cpu = time.process_time()
        pipe = BackendPipeline(lda_dim=args.lda_dim, systems=systems,
                               metric_params=metric_defaults(), max_metric_vectors=limit,
                               random_state=0).fit(X, y)
        cpu = time.process_time() - cpu
        scores = pipe.score(pipe.features(E), pipe.features(T), e, t)
        cells = []
        for j in range(len(systems)):
            tar, non = scores[lab, j], scores[~lab, j]
            cells.append("%6.3f %% %.4f" % (100 * metrics.eer(tar, non),
                                            metrics.pauc(tar, non, 0.0, 0.01)))
        print("%-10s %-8d %s  %.0f" % (limit or "all", pipe.metric_rows_[0], "  ".join(
            "%-22s" % c for c in cells), cpu), flush=True)
    print("end %s UTC; uptime load %s" % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), load()))


if __name__ == "__main__":
    main()
