"""train-plda: estimate a PLDA model by E-M (the twin of Kaldi's ivector-compute-plda)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float, format_vector
from pauc_backend.cli.framework.speaker_tables import gather_speakers
from pauc_backend.cli.framework.vector_input import check_finite
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_token_vector_table, read_vector_table, write_plda
from pauc_backend.models.plda import PLDA

USAGE = """
Computes a Plda object (for Probabilistic Linear Discriminant Analysis)
from a set of vectors.  Uses speaker information from a spk2utt file
to compute within and between class variances (as ivector-compute-plda).
Memory: the vectors are held once, as float (the table as read, like Kaldi's holder); the
class sums and the scatter about the mean are accumulated in double a block of rows at a
time (as Kaldi's PldaStats accumulates in double), and the E-M runs on D x D and
per-speaker statistics only.

Usage:  train-plda [options] <spk2utt-rspecifier> <vector-rspecifier> <plda-out>
e.g.:
 train-plda ark:data/train/spk2utt ark:exp/train_lda_norm.ark exp/plda
"""

tool = Tool("train-plda", USAGE)
tool.register("num-em-iters", 10, "Number of iterations of E-M used for PLDA estimation",
              bounds=(">=0",))
tool.register("binary", True, "Write output in binary mode")


def run(opts, args):
    spk2utt_rspecifier, vector_rspecifier, plda_wxfilename = args
    spk2utt = read_token_vector_table(spk2utt_rspecifier)
    keys, X = read_vector_table(vector_rspecifier)
    speakers = gather_speakers(tool.log, spk2utt, keys, spk2utt_rspecifier,
                               vector_rspecifier)
    rows, labels = speakers.rows, speakers.labels
    num_spk_err, num_utt_err = speakers.num_spk_err, speakers.num_utt_err
    num_spk_done = int(labels[-1]) + 1 if labels.size else 0
    tool.log.log("Accumulated stats from %d speakers (%d with no utterances), consisting of "
                 "%d utterances (%d absent from input)."
                 % (num_spk_done, num_spk_err, rows.size, num_utt_err))
    if not rows.size:
        X, rows = np.zeros((0, X.shape[1] if X.ndim == 2 else 0)), None
    check_finite(keys, X, vector_rspecifier, rows)
    try:
        plda = PLDA(num_em_iters=opts.num_em_iters).fit(X, labels, rows=rows)
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
