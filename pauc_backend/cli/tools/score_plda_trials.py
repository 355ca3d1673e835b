"""score-plda-trials: PLDA log-likelihood ratios for trials (twin of ivector-plda-scoring)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float
from pauc_backend.cli.options.plda import (read_plda_model, read_transformed,
                                                     register_plda_options)
from pauc_backend.cli.options.score_norm import (HELP_TEXT, check_score_norm_options,
                                                  normalizing_score_fn,
                                                  register_score_norm_options)
from pauc_backend.cli.framework.domain_check import warn_if_out_of_domain
from pauc_backend.cli.framework.trial_scoring import score_trial_list
from pauc_backend.errors import KaldiError
from pauc_backend.models.domain import OUT_OF_DOMAIN_SHIFT, ShiftAccumulator

USAGE = ("""
Computes log-likelihood ratios for trials using a PLDA model (as ivector-plda-scoring).
The trials file has lines <key1> <key2> [<target|nontarget>] (Kaldi accepts only two
columns; a third is ignored here) and the output has lines <key1> <key2> <score>;
a trial with an unknown key is skipped with a warning.
The enrollment vectors are averages over each speaker's utterances; --num-utts gives
the number of utterances per speaker (default 1), which affects the scoring.
One WARNING names adapt-plda when the vectors' mean is over %g within-speaker SDs from the PLDA's.

Usage: score-plda-trials [options] <plda> <enroll-vector-rspecifier> <test-vector-rspecifier> <trials-rxfilename> <scores-wxfilename>
e.g.: score-plda-trials --num-utts=ark:exp/enroll_num_utts.ark exp/plda ark:exp/enroll_final.ark ark:exp/test_final.ark data/trials scores/plda
""" % OUT_OF_DOMAIN_SHIFT) + HELP_TEXT + """Here each cohort vector counts as one utterance (it is the test side of an enrollment's
cohort trials and the enrollment side, n = 1, of a test vector's); the enrollment vectors
keep their --num-utts.
"""

PLDA_REMEDY = ("adapt the PLDA to unlabelled in-domain vectors with adapt-plda and centre the "
               "vectors on their mean (compute-vector-mean, subtract-vector-mean), as "
               "egs/sre16/v2 does")

tool = Tool("score-plda-trials", USAGE, docs="docs/tools.md#the-domain-check")
register_plda_options(tool)
register_score_norm_options(tool, "vectors in the same space as the inputs (before the PLDA "
                            "transform, like them)")


def cohort_grids(plda, U_enroll, U_test, U_cohort, num_utts):
    """Grid functions of the enrollment and the test vectors against the cohort, scored by
    PLDA.score_pairs (the tool's own scoring): enrollment x cohort with the enrollment's
    num_utts, cohort (one utterance) x test."""
    num_cohort = U_cohort.shape[0]
    cohort_rows = np.arange(num_cohort)

    def enroll_grid(start, stop):
        rows = np.repeat(np.arange(start, stop), num_cohort)
        llr = plda.score_pairs(U_enroll, U_cohort, rows, np.tile(cohort_rows, stop - start),
                               num_utts)
        return llr.reshape(stop - start, num_cohort)

    def test_grid(start, stop):
        rows = np.repeat(np.arange(start, stop), num_cohort)
        llr = plda.score_pairs(U_cohort, U_test, np.tile(cohort_rows, stop - start), rows, 1)
        return llr.reshape(stop - start, num_cohort)

    return enroll_grid, test_grid


def run(opts, args):
    plda_rxfilename, enroll_rspecifier, test_rspecifier, trials_rxfilename, scores_wx = args
    plda = read_plda_model(plda_rxfilename)
    log = tool.log
    check_score_norm_options(opts)
    log.log("Reading train iVectors")
    enroll_keys, U_enroll, num_utts, factors, num_errors = read_transformed(
        log, plda, enroll_rspecifier, opts, opts.num_utts,
        "Duplicate training iVector found for speaker %s")
    log.log("Read %d training iVectors, errors on %d" % (len(enroll_keys), num_errors))
    if not len(enroll_keys):
        raise KaldiError("No training iVectors present.")
    log.log("Average renormalization scale on training iVectors was %s"
            % format_float(factors.astype(np.float64).sum() / len(enroll_keys)))
    enroll_factors = factors
    log.log("Reading test iVectors")
    test_keys, U_test, _, factors, _ = read_transformed(
        log, plda, test_rspecifier, opts, "", "Duplicate test iVector found for utterance %s")
    log.log("Read %d test iVectors." % len(test_keys))
    if not len(test_keys):
        raise KaldiError("No test iVectors present.")
    log.log("Average renormalization scale on test iVectors was %s"
            % format_float(factors.astype(np.float64).sum() / len(test_keys)))
    shift = ShiftAccumulator(plda.dim)     # PLDA space before the length normalisation
    for U, scale in ((U_enroll, enroll_factors), (U_test, factors)):
        shift.add(U, row_scale=scale if opts.normalize_length else None)
    warn_if_out_of_domain(log, shift.value(), "enrollment and test vectors", PLDA_REMEDY)

    def score_fn(enroll_rows, test_rows):
        return plda.score_pairs(U_enroll, U_test, enroll_rows, test_rows, num_utts)

    if opts.score_norm != "none":
        cohort_keys, U_cohort, _, _, _ = read_transformed(
            log, plda, opts.cohort, opts, "", "Duplicate cohort vector found for key %s")
        enroll_grid, test_grid = cohort_grids(plda, U_enroll, U_test, U_cohort, num_utts)
        score_fn = normalizing_score_fn(log, opts, score_fn, len(cohort_keys),
                                        (enroll_keys, enroll_grid), (test_keys, test_grid))

    score_trial_list(log, trials_rxfilename, scores_wx, enroll_keys, test_keys,
                     score_fn, require_scores=True)
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=5, outputs=-1)
