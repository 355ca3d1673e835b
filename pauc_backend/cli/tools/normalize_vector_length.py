"""normalize-vector-length: scale vectors to length sqrt(dim) or 1 (twin of
ivector-normalize-length)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import VectorChunkWriter, iter_vector_chunks
from pauc_backend.models.preprocessing import (nonfinite_rows, normalize_length, ratio_stats,
                                               ratio_sums)

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
    sums, count = (0.0, 0.0), 0
    with VectorChunkWriter(vector_wspecifier) as writer:
        for chunk in iter_vector_chunks(vector_rspecifier):
            Y, ratios = normalize_length(chunk.X, scaleup=opts.scaleup,
                                         normalize=opts.normalize)
            if not np.isfinite(ratios).all():  # a NaN/inf element, or a float32 overflow
                bad = nonfinite_rows(chunk.X)
                if bad.size:
                    raise KaldiError("Vector for key %s in %s contains NaN or infinity"
                                     % (chunk.keys[bad[0]], vector_rspecifier))
            if log.verbose >= 2 or not ratios.all():
                for key, ratio in zip(chunk.keys, ratios.tolist()):
                    log.vlog(2, "Ratio for key %s is %s" % (key, format_float(ratio)))
                    if ratio == 0.0:
                        log.warning("Zero iVector")
            writer.write(chunk, Y)
            sums = ratio_sums(ratios, sums)
            count += len(chunk)
    if not count:
        raise KaldiError("No vectors read from %s (empty input); %s not written"
                         % (vector_rspecifier, vector_wspecifier))
    log.log("Processed %d iVectors." % count)
    avg, stddev = ratio_stats(sums=sums, num=count)
    log.log("Average ratio of iVector to expected length was %s, standard deviation was %s"
            % (format_float(avg), format_float(stddev)))
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=2, outputs=-1)
