"""score-pauc-auto: score trials with the back-end chosen by train-pauc-auto."""

import numpy as np

from pauc_backend.persist.auto_backend import read_model_dir
from pauc_backend.cli.framework.kaldi_cli import Tool
from pauc_backend.cli.framework.trial_scoring import index_keys, score_trial_list
from pauc_backend.cli.framework.vector_input import check_dimension, check_finite
from pauc_backend.cli.framework.domain_check import describe_shift, warn_if_out_of_domain
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_float_table, read_int32_table, read_vector_table
from pauc_backend.models.systems import candidate_title

USAGE = """
Scores trials with the back-end that train-pauc-auto chose and trained (its model directory):
RAW vectors (as extracted) go through the stored mean, LDA, PLDA and metrics, and the stored
fusion (or calibration) combines the member systems; higher = same speaker. --num-utts as in
score-plda-trials. ONE WARNING when the vectors look out of the model's domain (the training
set's, or the adaptation set's for a model trained with --adapt); a model calibrated with
durations needs --enroll-duration/--test-duration.

Usage: score-pauc-auto [options] <model-dir> <enroll-vector-rspecifier> <test-vector-rspecifier> <trials-rxfilename> <scores-wxfilename>
e.g.: score-pauc-auto --num-utts=ark:exp/enroll_num_utts.ark exp/pauc_auto ark:exp/enroll_spk.ark scp:data/test/xvector.scp data/trials exp/scores/pauc_auto
"""

tool = Tool("score-pauc-auto", USAGE, docs="docs/tool-reference.md#score-pauc-auto")
tool.register("num-utts", "", "Table of the number of utterances averaged into each "
              "enrollment vector, e.g. ark:num_utts.ark (default: 1 each)")
tool.register("enroll-duration", "", "Rspecifier of the durations in seconds of the "
              "enrollment keys (for a model whose calibration uses durations)")
tool.register("test-duration", "", "Rspecifier of the durations in seconds of the test keys")


@tool.check
def _durations_together(opts):
    if bool(opts.enroll_duration) != bool(opts.test_duration):
        given, missing = (("enroll", "test") if opts.enroll_duration else ("test", "enroll"))
        raise KaldiError("Invalid options: --%s-duration needs --%s-duration" % (given,
                                                                              missing))


def side_durations(rspecifier, keys):
    """float64 seconds of each key (NaN where the table has none); ONE ERROR for a bad
    value."""
    table = read_float_table(rspecifier)
    out = np.array([table.get(key, np.nan) for key in keys], dtype=np.float64)
    bad = np.flatnonzero(~np.isnan(out) & ~(np.isfinite(out) & (out > 0)))
    if bad.size:
        raise KaldiError("Bad duration %r for key %s in %s (durations must be positive and "
                         "finite)" % (out[bad[0]], keys[bad[0]], rspecifier))
    return out


def _check_used(durations, rows, keys, rspecifier, side):
    missing = np.flatnonzero(np.isnan(durations[rows]))
    if missing.size:
        raise KaldiError("No duration for %s key %s in %s: the model's calibration uses the "
                         "durations of every trial side" % (side, keys[rows[missing[0]]],
                                                            rspecifier))


def read_vectors(rspecifier, dim, what):
    keys, X = read_vector_table(rspecifier)
    index_keys(keys, "Duplicate " + what + " vector found for %s")
    if not len(keys):
        raise KaldiError("No %s vectors in %s" % (what, rspecifier))
    check_dimension(X, rspecifier, dim, "the model")
    check_finite(keys, X, rspecifier)
    return keys, X


def check_domain(log, model, model_dir, E, T, adapted=False):
    """ONE WARNING when the scored vectors (enrollment and test pooled) look out of the
    model's domain (models.domain, threshold OUT_OF_DOMAIN_SHIFT): the training domain, whose
    remedy is --adapt, or for a model trained with an adaptation set (``adapted``) that set's,
    whose remedy is an adaptation set of the scored domain; a LOG when the model directory
    has no domain statistics (an older version's)."""
    domain = getattr(model, "domain_", None)
    if domain is None:
        log.log("%s has no training-domain statistics (written by an older train-pauc-auto): "
                "no domain check" % model_dir)
        return
    shift = domain.shift(E, T)
    if adapted:
        where = "the domain of the adaptation set the model was trained with (its mean)"
        remedy = ("retrain with an adaptation set (--adapt) drawn from the vectors you score, "
                  "or check that these are the vectors you meant to score")
    else:
        where = "the training domain"
        remedy = ("the scores' calibration was learned on training-domain trials and need "
                  "not hold for them (docs/auto-backend.md, 'The final model'); retrain with "
                  "train-pauc-auto --adapt=<unlabelled vectors of their domain> (the centring "
                  "mean, an adapted PLDA and a calibration from them)")
    if not warn_if_out_of_domain(log, shift, "scored vectors", remedy, where):
        log.log("Domain check: %s" % describe_shift(shift))


def run(opts, args):
    model_dir, enroll_rspecifier, test_rspecifier, trials_rx, scores_wx = args
    log = tool.log
    model, card = read_model_dir(model_dir)
    log.log("Back-end %s (%s, LDA %s) from %s" % (
        "+".join(model.members_), candidate_title(model.members_), card.get("lda_dim", "?"),
        model_dir))
    if model.needs_durations and not opts.enroll_duration:
        raise KaldiError("The back-end in %s calibrates with the durations of the trial sides "
                         "(quality_measures %s in its system.txt): give --enroll-duration and "
                         "--test-duration (utt2dur of the enrollment and test keys)"
                         % (model_dir, ",".join(model.quality_)))
    if opts.enroll_duration and not model.needs_durations:
        log.warning("The back-end in %s does not use durations (quality_measures %s): "
                    "--enroll-duration and --test-duration have no effect on its scores"
                    % (model_dir, ",".join(model.quality_) or "none"))
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
    check_domain(log, model, model_dir, E, T, "adapt_vectors" in card)
    fe = model.features(E, num_utts)
    ft = model.features(T, 1)
    durations = (None, None)
    if model.needs_durations:
        durations = (side_durations(opts.enroll_duration, enroll_keys),
                     side_durations(opts.test_duration, test_keys))

    def score_fn(enroll_rows, test_rows):
        if durations[0] is not None:
            _check_used(durations[0], enroll_rows, enroll_keys, opts.enroll_duration,
                        "enrollment")
            _check_used(durations[1], test_rows, test_keys, opts.test_duration, "test")
        return model.score_features(fe, ft, enroll_rows, test_rows, num_utts, *durations)

    num_done = score_trial_list(log, trials_rx, scores_wx, enroll_keys, test_keys, score_fn,
                                enroll_name="enrollment")
    return 0 if num_done else 1


def main(argv=None):
    return tool.main(run, argv, num_args=5, outputs=-1)
