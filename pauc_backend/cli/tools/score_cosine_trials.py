"""score-cosine-trials: dot-product (or cosine) scores for trials (twin of
ivector-compute-dot-products)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool
from pauc_backend.cli.options.score_norm import (HELP_TEXT, check_score_norm_options,
                                                  normalizing_score_fn,
                                                  register_score_norm_options)
from pauc_backend.cli.framework.trial_scoring import index_keys, score_trial_list
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_vector_table
from pauc_backend.models.cosine import indexed_dot_scores
from pauc_backend.models.preprocessing import nonfinite_rows, norm_variation, normalize_length

USAGE = """
Computes dot-products between vectors (as ivector-compute-dot-products); with
length-normalized vectors (as the recipes use) this is cosine scoring.
The trials file has lines <key1> <key2> [<target|nontarget>] and the output has
lines <key1> <key2> <score>; a trial with an unknown key is skipped with a warning.
With --normalize=true each vector is first divided by its norm, so the score is the
cosine similarity (default: Kaldi's plain dot product, with one warning when norms vary).

Usage: score-cosine-trials [options] <trials-in> <vector1-rspecifier> <vector2-rspecifier> <scores-out>
e.g.: score-cosine-trials data/trials ark:exp/enroll_final.ark ark:exp/test_final.ark scores/cosine
""" + HELP_TEXT + """The cohort is length-normalised too when --normalize=true.
"""

# Above this coefficient of variation of the vector norms, plain dot products are warned about.
# Length-normalised vectors give ~1e-7, raw x-vectors and i-vectors 0.07-0.13. On GE2E
# d-vectors of TIMIT (../shared/realdata/timit-ge2e) random norms with a spread of 0.02 raised
# the EER of the dot product over cosine by 12 % relative (5.8 % -> 6.5 %), with 0.05 by 75 %.
NORM_VARIATION_WARNING = 0.02

tool = Tool("score-cosine-trials", USAGE, docs="docs/tool-reference.md#score-cosine-trials")
tool.register("normalize", False, "If true, divide each vector by its norm first, so the score "
              "is the cosine similarity; if false, the plain dot product (as Kaldi)")
register_score_norm_options(tool)


def read_table(rspecifier, normalize):
    keys, X = read_vector_table(rspecifier)
    bad = nonfinite_rows(X)
    if bad.size:
        raise KaldiError("Vector for key %s in %s contains NaN or infinity"
                         % (keys[bad[0]], rspecifier))
    if normalize:
        X = normalize_length(X, scaleup=False)[0]
    return index_keys(keys, "Duplicate key %%s in %s" % rspecifier.replace("%", "%%")), X


def warn_unequal_norms(*tables):
    """One WARNING when the norms within a table vary (the scores then mix lengths with
    angles); equal norms within each table only rescale every score alike."""
    spreads = [(rspecifier, norm_variation(X)) for rspecifier, X in tables]
    if max(spread for _, spread in spreads) > NORM_VARIATION_WARNING:
        tool.log.warning(
            "The vector norms are far from equal (coefficient of variation %s; above %s): the "
            "dot products mix vector lengths into the scores. For cosine scoring use "
            "--normalize=true, or length-normalise the vectors first" % (
                ", ".join("%.3g in %s" % (spread, rspecifier) for rspecifier, spread
                          in spreads), NORM_VARIATION_WARNING))


def run(opts, args):
    trials_rxfilename, rspecifier1, rspecifier2, scores_wxfilename = args
    check_score_norm_options(opts)
    keys1, X1 = read_table(rspecifier1, opts.normalize)
    keys2, X2 = read_table(rspecifier2, opts.normalize)
    if not opts.normalize:
        warn_unequal_norms((rspecifier1, X1), (rspecifier2, X2))
    if keys1 and keys2 and X1.shape[1] != X2.shape[1]:
        raise KaldiError("Dimension mismatch: vectors in %s have dimension %d but vectors in "
                         "%s have dimension %d" % (rspecifier1, X1.shape[1], rspecifier2,
                                                   X2.shape[1]))

    def score_fn(rows1, rows2):
        return indexed_dot_scores(X1, X2, rows1, rows2)

    if opts.score_norm != "none":
        cohort_keys, cohort = read_table(opts.cohort, opts.normalize)
        for rspecifier, X in ((rspecifier1, X1), (rspecifier2, X2)):
            if cohort_keys and len(X) and X.shape[1] != cohort.shape[1]:
                raise KaldiError("Dimension mismatch: vectors in %s have dimension %d but the "
                                 "cohort %s has dimension %d" % (rspecifier, X.shape[1],
                                                                 opts.cohort, cohort.shape[1]))
        cohort_t = np.ascontiguousarray(cohort.T, dtype=np.float32)

        def grid_of(X):
            return lambda start, stop: X[start:stop] @ cohort_t

        score_fn = normalizing_score_fn(tool.log, opts, score_fn, len(cohort_keys),
                                        (list(keys1), grid_of(X1)), (list(keys2), grid_of(X2)))

    score_trial_list(tool.log, trials_rxfilename, scores_wxfilename, keys1, keys2,
                     score_fn, enroll_name="1st table of",
                     test_name="2nd table of", require_scores=True)
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=4, outputs=-1)
