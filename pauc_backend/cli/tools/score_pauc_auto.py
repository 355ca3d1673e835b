"""score-pauc-auto: score trials with the back-end chosen by train-pauc-auto."""

import numpy as np

from pauc_backend.persist.auto_backend import read_model_dir
from pauc_backend.cli.framework.kaldi_cli import Tool
from pauc_backend.cli.framework.trial_scoring import index_keys, score_trial_list
from pauc_backend.cli.framework.vector_input import check_dimension, check_finite
from pauc_backend.cli.framework.domain_check import describe_shift, warn_if_out_of_domain
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_int32_table, read_vector_table
from pauc_backend.models.auto.systems import candidate_title

USAGE = """
Scores trials with the back-end that train-pauc-auto chose and trained (its model directory):
the raw vectors go through the stored mean, LDA, PLDA and metrics, the member systems score
each trial, and the stored fusion (or calibration) combines them; higher = same speaker.
Vectors are RAW (as extracted). The enrollment side may be speaker means of raw vectors;
--num-utts then gives each speaker's count (as score-plda-trials). The trials file has lines
<key1> <key2> [<target|nontarget>]; output lines are <key1> <key2> <score>; a trial with an
unknown key is skipped with a warning.
Domain check: the enrollment and test vectors are compared with the training statistics the
model directory stores (their mean shift in training within-speaker standard deviations,
models/domain.py); above 0.4 (the demo's out-of-domain vectors: 0.97; ETRI's and TIMIT's own
evaluation vectors: 0.06 and 0.14) ONE WARNING names the remedy, train-pauc-auto --adapt.

Usage: score-pauc-auto [options] <model-dir> <enroll-vector-rspecifier> <test-vector-rspecifier> <trials-rxfilename> <scores-wxfilename>
e.g.: score-pauc-auto --num-utts=ark:exp/enroll_num_utts.ark exp/pauc_auto ark:exp/enroll_spk.ark scp:data/test/xvector.scp data/trials exp/scores/pauc_auto
"""

tool = Tool("score-pauc-auto", USAGE)
tool.register("num-utts", "", "Table of the number of utterances averaged into each "
              "enrollment vector, e.g. ark:num_utts.ark (default: 1 each)")


def read_vectors(rspecifier, dim, what):
    keys, X = read_vector_table(rspecifier)
    index_keys(keys, "Duplicate " + what + " vector found for %s")
    if not len(keys):
        raise KaldiError("No %s vectors in %s" % (what, rspecifier))
    check_dimension(X, rspecifier, dim, "the model")
    check_finite(keys, X, rspecifier)
    return keys, X


def check_domain(log, model, model_dir, E, T):
    """ONE WARNING naming --adapt when the scored vectors (enrollment and test pooled) look
    out of the model's training domain (models.domain, threshold OUT_OF_DOMAIN_SHIFT); a
    LOG when the model directory has no domain statistics (an older version's)."""
    domain = getattr(model, "domain_", None)
    if domain is None:
        log.log("%s has no training-domain statistics (written by an older train-pauc-auto): "
                "no domain check" % model_dir)
        return
    shift = domain.shift(E, T)
    if not warn_if_out_of_domain(
            log, shift, "scored vectors",
            "retrain with train-pauc-auto --adapt=<unlabelled vectors of their domain> (the "
            "centring mean and an adapted PLDA from them)"):
        log.log("Domain check: %s" % describe_shift(shift))


def run(opts, args):
    model_dir, enroll_rspecifier, test_rspecifier, trials_rx, scores_wx = args
    log = tool.log
    model, card = read_model_dir(model_dir)
    log.log("Back-end %s (%s, LDA %s) from %s" % (
        "+".join(model.members_), candidate_title(model.members_), card.get("lda_dim", "?"),
        model_dir))
    enroll_keys, E = read_vectors(enroll_rspecifier, model.n_features_in_, "enrollment")
    num_utts = np.ones(len(enroll_keys), dtype=np.int64)
    if opts.num_utts:
        table = read_int32_table(opts.num_utts)
        found = [table.get(key) for key in enroll_keys]
        for key, n in zip(enroll_keys, found):
            if n is None:
                log.warning("Number of utterances not given for speaker %s" % key)
            elif n < 1:
                raise KaldiError("Number of utterances for speaker %s in %s is %d, must be >= 1"
                                 % (key, opts.num_utts, n))
        keep = [row for row, n in enumerate(found) if n is not None]
        if not keep:
            raise KaldiError("No enrollment vector has a count in %s" % opts.num_utts)
        enroll_keys = [enroll_keys[row] for row in keep]
        E = E[keep]
        num_utts = np.array([found[row] for row in keep], dtype=np.int64)
    log.log("Read %d enrollment vectors" % len(enroll_keys))
    test_keys, T = read_vectors(test_rspecifier, model.n_features_in_, "test")
    log.log("Read %d test vectors" % len(test_keys))
    check_domain(log, model, model_dir, E, T)
    fe = model.features(E, num_utts)
    ft = model.features(T, 1)

    def score_fn(enroll_rows, test_rows):
        return model.score_features(fe, ft, enroll_rows, test_rows, num_utts)

    num_done = score_trial_list(log, trials_rx, scores_wx, enroll_keys, test_keys, score_fn,
                                enroll_name="enrollment")
    return 0 if num_done else 1


def main(argv=None):
    return tool.main(run, argv, num_args=5, outputs=-1)
