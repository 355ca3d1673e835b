"""score-pauc-trials: score trials with a learned Mahalanobis metric, score = -S (eq. 1)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool
from pauc_backend.cli.options.score_norm import (HELP_TEXT, check_score_norm_options,
                                                  normalizing_score_fn,
                                                  register_score_norm_options)
from pauc_backend.cli.framework.trial_scoring import index_keys, score_trial_list
from pauc_backend.cli.framework.vector_input import check_dimension, check_finite
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_matrix, read_vector_table
from pauc_backend.models.metric_learning import metric_factor

USAGE = """
Scores trials with the metric M of train-pauc-metric: score = -(x1-x2)^T M (x1-x2), so a
higher score means the same speaker and compute-eer works unchanged. The arguments are those
of ivector-plda-scoring; enrollment vectors are speaker averages in the metric's input space.
The trials file has lines <key1> <key2> [<target|nontarget>]; a trial with an unknown key is
skipped with a warning.

Usage: score-pauc-trials [options] <metric> <enroll-vector-rspecifier> <test-vector-rspecifier> <trials-rxfilename> <scores-wxfilename>
e.g.: score-pauc-trials exp/metric ark:exp/enroll_latent.ark ark:exp/test_latent.ark data/trials scores/pauc
""" + HELP_TEXT

tool = Tool("score-pauc-trials", USAGE, docs="docs/tool-reference.md#score-pauc-trials")
tool.register("num-utts", "", "Accepted for symmetry with score-plda-trials and ignored: the "
              "number of utterances enters through transform-plda-latent --num-utts")
register_score_norm_options(tool, "vectors in the metric's input space, like the inputs")

SUB_CHUNK = 1 << 14    # trials gathered at once (two float64 blocks of SUB_CHUNK x dim)
DENSE_FACTOR = 8      # Gram block if (#enroll x #test in a chunk) <= this x #trials


def read_projected(rspecifier, A, what):
    keys, X = read_vector_table(rspecifier)
    index_keys(keys, "Duplicate " + what + " vector found for %s")
    if not len(keys):
        raise KaldiError("No %s vectors in %s" % (what, rspecifier))
    check_dimension(X, rspecifier, A.shape[1], "the metric")
    check_finite(keys, X, rspecifier)
    return keys, X.astype(np.float64) @ A.T


def run(opts, args):
    metric_rx, enroll_rspecifier, test_rspecifier, trials_rx, scores_wx = args
    log = tool.log
    check_score_norm_options(opts)
    M = np.asarray(read_matrix(metric_rx), dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or not M.size:
        raise KaldiError("Metric in %s must be a square matrix, got %s" % (metric_rx, M.shape))
    if not np.all(np.isfinite(M)) or not np.allclose(M, M.T, rtol=1e-5, atol=1e-8):
        raise KaldiError("Metric in %s is not a finite symmetric matrix" % metric_rx)
    A, w, _ = metric_factor(M)
    if np.linalg.eigvalsh(0.5 * (M + M.T)).min() < -1e-6 * max(1.0, w.max()):
        log.warning("Metric in %s is not positive semi-definite; negative eigenvalues "
                    "clipped to 0" % metric_rx)
    enroll_keys, Ye = read_projected(enroll_rspecifier, A, "enrollment")
    log.log("Read %d enrollment vectors" % len(enroll_keys))
    test_keys, Yt = read_projected(test_rspecifier, A, "test")
    log.log("Read %d test vectors" % len(test_keys))

    qe, qt = np.einsum("ij,ij->i", Ye, Ye), np.einsum("ij,ij->i", Yt, Yt)

    def score_fn(enroll_rows, test_rows):
        used_e = np.bincount(enroll_rows, minlength=len(Ye)) > 0
        used_t = np.bincount(test_rows, minlength=len(Yt)) > 0
        num_e, num_t = int(used_e.sum()), int(used_t.sum())
        if num_e * num_t <= DENSE_FACTOR * enroll_rows.size:    # dense: one BLAS Gram block
            ie = np.cumsum(used_e) - 1
            it = np.cumsum(used_t) - 1
            gram = Ye[used_e] @ Yt[used_t].T
            dist = qe[enroll_rows] + qt[test_rows] - 2.0 * gram[ie[enroll_rows], it[test_rows]]
            return -np.maximum(dist, 0.0)
        # The dense branch's formula and precision, so that a trial's score does not depend
        # on which branch its chunk took (--nj N parts of a list give the --nj 1 bytes).
        dist = np.empty(enroll_rows.size)
        for start in range(0, enroll_rows.size, SUB_CHUNK):
            e, t = enroll_rows[start:start + SUB_CHUNK], test_rows[start:start + SUB_CHUNK]
            dist[start:start + SUB_CHUNK] = qe[e] + qt[t] - 2.0 * np.einsum("ij,ij->i", Ye[e],
                                                                            Yt[t])
        return -np.maximum(dist, 0.0)

    if opts.score_norm != "none":
        cohort_keys, Yc = read_projected(opts.cohort, A, "cohort")
        qc, Yc_t = np.einsum("ij,ij->i", Yc, Yc), np.ascontiguousarray(Yc.T)

        def grid_of(Y, q):
            def grid(start, stop):      # -(squared distance), as score_fn
                dist = q[start:stop, None] + qc[None, :] - 2.0 * (Y[start:stop] @ Yc_t)
                return -np.maximum(dist, 0.0)
            return grid

        score_fn = normalizing_score_fn(log, opts, score_fn, len(cohort_keys),
                                        (enroll_keys, grid_of(Ye, qe)),
                                        (test_keys, grid_of(Yt, qt)))

    score_trial_list(log, trials_rx, scores_wx, enroll_keys, test_keys, score_fn,
                     require_scores=True)
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=5, outputs=-1)
