"""score-plda-trials: PLDA log-likelihood ratios for trials (twin of ivector-plda-scoring)."""

import numpy as np

from pauc_backend.cli.kaldi_cli import Tool, format_float
from pauc_backend.cli.transform_plda_latent import (read_plda_model, read_transformed,
                                                     register_plda_options)
from pauc_backend.cli.trial_scoring import score_trial_list
from pauc_backend.errors import KaldiError

USAGE = """
Computes log-likelihood ratios for trials using a PLDA model (as ivector-plda-scoring).
The trials file has lines <key1> <key2> [<target|nontarget>] (Kaldi accepts only two
columns; a third is ignored here) and the output has lines <key1> <key2> <score>;
a trial with an unknown key is skipped with a warning.
The enrollment vectors are averages over each speaker's utterances; --num-utts gives
the number of utterances per speaker (default 1), which affects the scoring.

Usage: score-plda-trials [options] <plda> <enroll-vector-rspecifier> <test-vector-rspecifier> <trials-rxfilename> <scores-wxfilename>
e.g.: score-plda-trials --num-utts=ark:exp/enroll_num_utts.ark exp/plda ark:exp/enroll_final.ark ark:exp/test_final.ark data/trials scores/plda
"""

tool = Tool("score-plda-trials", USAGE)
register_plda_options(tool)


def run(opts, args):
    plda_rxfilename, enroll_rspecifier, test_rspecifier, trials_rxfilename, scores_wx = args
    plda = read_plda_model(plda_rxfilename)
    log = tool.log
    log.log("Reading train iVectors")
    enroll_keys, U_enroll, num_utts, factors, num_errors = read_transformed(
        log, plda, enroll_rspecifier, opts, opts.num_utts,
        "Duplicate training iVector found for speaker %s")
    log.log("Read %d training iVectors, errors on %d" % (len(enroll_keys), num_errors))
    if not len(enroll_keys):
        raise KaldiError("No training iVectors present.")
    log.log("Average renormalization scale on training iVectors was %s"
            % format_float(factors.astype(np.float64).sum() / len(enroll_keys)))
    log.log("Reading test iVectors")
    test_keys, U_test, _, factors, _ = read_transformed(
        log, plda, test_rspecifier, opts, "", "Duplicate test iVector found for utterance %s")
    log.log("Read %d test iVectors." % len(test_keys))
    if not len(test_keys):
        raise KaldiError("No test iVectors present.")
    log.log("Average renormalization scale on test iVectors was %s"
            % format_float(factors.astype(np.float64).sum() / len(test_keys)))

    def score_fn(enroll_rows, test_rows):
        return plda.score_pairs(U_enroll, U_test, enroll_rows, test_rows, num_utts)

    score_trial_list(log, trials_rxfilename, scores_wx, enroll_keys, test_keys,
                     score_fn, require_scores=True)
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=5)
