"""normalize-vector-length: scale vectors to length sqrt(dim) or 1 (twin of
ivector-normalize-length)."""

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_vector_table, write_vector_table
from pauc_backend.models.preprocessing import nonfinite_rows, normalize_length, ratio_stats

USAGE = """
Normalize length of vectors to equal sqrt(feature-dimension) (or 1 with
--scaleup=false), with ivector-normalize-length's exact float32 arithmetic.

Usage:  normalize-vector-length [options] <vector-rspecifier> <vector-wspecifier>
e.g.:
 normalize-vector-length ark:exp/train_lda.ark ark,scp:exp/train_lda_norm.ark,exp/train_lda_norm.scp
"""

tool = Tool("normalize-vector-length", USAGE)
tool.register("normalize", True, "Set this to false to disable normalization")
tool.register("scaleup", True, "If 'true', the normalized iVector is scaled-up by 'sqrt(dim)'")


def run(opts, args):
    vector_rspecifier, vector_wspecifier = args
    log = tool.log
    keys, X = read_vector_table(vector_rspecifier)
    if not keys:
        raise KaldiError("No vectors read from %s (empty input); %s not written"
                         % (vector_rspecifier, vector_wspecifier))
    bad = nonfinite_rows(X)
    if bad.size:
        raise KaldiError("Vector for key %s in %s contains NaN or infinity"
                         % (keys[bad[0]], vector_rspecifier))
    Y, ratios = normalize_length(X, scaleup=opts.scaleup, normalize=opts.normalize)
    if log.verbose >= 2 or not ratios.all():
        for key, ratio in zip(keys, ratios.tolist()):
            log.vlog(2, "Ratio for key %s is %s" % (key, format_float(ratio)))
            if ratio == 0.0:
                log.warning("Zero iVector")
    write_vector_table(vector_wspecifier, keys, Y)
    log.log("Processed %d iVectors." % len(keys))
    if keys:
        avg, stddev = ratio_stats(ratios)
        log.log("Average ratio of iVector to expected length was %s, standard deviation was %s"
                % (format_float(avg), format_float(stddev)))
    return 0 if keys else 1


def main(argv=None):
    return tool.main(run, argv, num_args=2, outputs=-1)
