"""train-plda: estimate a PLDA model by E-M (the twin of Kaldi's ivector-compute-plda)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float, format_vector
from pauc_backend.cli.framework.labelled_stream import stream_spk2utt
from pauc_backend.cli.framework.speaker_tables import read_spk2utt
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import write_plda
from pauc_backend.models.plda import PLDA

USAGE = """
Computes a Plda object (for Probabilistic Linear Discriminant Analysis)
from a set of vectors.  Uses speaker information from a spk2utt file
to compute within and between class variances (as ivector-compute-plda).

Usage:  train-plda [options] <spk2utt-rspecifier> <vector-rspecifier> <plda-out>
e.g.:
 train-plda ark:data/train/spk2utt ark:exp/train_lda_norm.ark exp/plda
"""

tool = Tool("train-plda", USAGE, docs="docs/tool-reference.md#train-plda")
tool.register("num-em-iters", 10, "Number of iterations of E-M used for PLDA estimation",
              bounds=(">=0",))
tool.register("binary", True, "Write output in binary mode")


def run(opts, args):
    spk2utt_rspecifier, vector_rspecifier, plda_wxfilename = args
    spk2utt, spk2utt_name = read_spk2utt(tool.log, spk2utt_rspecifier)
    stats, counts = stream_spk2utt(tool.log, spk2utt, vector_rspecifier, spk2utt_name)
    tool.log.log("Accumulated stats from %d speakers (%d with no utterances), consisting of "
                 "%d utterances (%d absent from input)."
                 % (counts.num_spk_done, counts.num_spk_err, counts.num_utt_done,
                    counts.num_utt_err))
    try:
        plda = PLDA(num_em_iters=opts.num_em_iters).fit_stats(stats)
    except ValueError as err:
        raise KaldiError("%s (vectors from %s, speakers from %s)"
                         % (err, vector_rspecifier, spk2utt_rspecifier)) from None
    for i in range(opts.num_em_iters):
        tool.log.log("Plda estimation iteration %d of %d" % (i, opts.num_em_iters))
        tool.log.log("Trace of within-class variance is %s"
                     % format_float(plda.within_var_trace_[i]))
        tool.log.log("Trace of between-class variance is %s"
                     % format_float(plda.between_var_trace_[i]))
    tool.log.log("Norm of mean of iVector distribution is %s"
                 % format_float(np.linalg.norm(plda.mean_)))
    tool.log.log("Diagonal of between-class variance in normalized space is %s\n"
                 % format_vector(plda.psi_))
    write_plda(plda_wxfilename, plda.mean_, plda.transform_, plda.psi_, binary=opts.binary)
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=3, outputs=-1)
