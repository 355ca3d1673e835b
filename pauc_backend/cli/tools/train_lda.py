"""train-lda: estimate an LDA transform for speaker vectors (twin of ivector-compute-lda)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float, format_vector
from pauc_backend.cli.framework.labelled_stream import Spool, centred_stats, read_utt2spk_pass
from pauc_backend.cli.framework.speaker_tables import read_utt2spk
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import write_matrix
from pauc_backend.models.lda import LDA
from pauc_backend.models.preprocessing import vector_norms

USAGE = """
Compute an LDA matrix for speaker vectors (as ivector-compute-lda).  Reads in vectors
per utterance, and an utt2spk file which it uses to help work out the within-speaker
and between-speaker covariance matrices.  Outputs an LDA projection to a specified
dimension.  By default it will normalize so that the projected within-class covariance
is unit; --total-covariance-factor=1.0 normalizes the total covariance instead.
Note: the transform we produce is actually an affine transform which will also set
the global mean to zero (apply it with transform-vectors).

Usage:  train-lda [options] <vector-rspecifier> <utt2spk-rspecifier> <lda-matrix-out>
e.g.:
 train-lda --dim=32 "ark:subtract-vector-mean scp:data/train/xvector.scp ark:- |" ark:data/train/utt2spk exp/transform.mat
"""

tool = Tool("train-lda", USAGE, docs="docs/tool-reference.md#train-lda")
tool.register("dim", 100, "Dimension we keep with the LDA transform", bounds=(">=1",))
tool.register("total-covariance-factor", 0.0, "If this is 0.0 we normalize to make the "
              "within-class covariance unit; if 1.0, the total covariance; if between, we "
              "normalize an interpolated matrix.")
tool.register("covariance-floor", 1.0e-06, "Floor the eigenvalues of the interpolated "
              "covariance matrix to the product of its largest eigenvalue and this number.",
              bounds=(">=0",))
tool.register("binary", True, "Write output in binary mode")


def run(opts, args):
    vector_rspecifier, utt2spk_rspecifier, lda_wxfilename = args
    log = tool.log
    utt2spk = read_utt2spk(utt2spk_rspecifier, log)
    with Spool("the vectors of %s" % vector_rspecifier) as spool:
        labels, num_done, num_err = read_utt2spk_pass(log, vector_rspecifier, utt2spk, spool)
        log.log("Read %d utterances, %d with errors." % (num_done, num_err))
        if not num_done:
            raise KaldiError("Did not read any utterances from %s." % vector_rspecifier)
        log.log("Computing within-class covariance.")
        stats, mean = centred_stats(spool, labels)
    try:
        lda = LDA(dim=opts.dim, total_covariance_factor=opts.total_covariance_factor,
                  covariance_floor=opts.covariance_floor).fit_stats(stats, centre=mean)
    except ValueError as err:
        raise KaldiError("%s (vectors from %s, speakers from %s)"
                         % (err, vector_rspecifier, utt2spk_rspecifier)) from None
    log.log("2-norm of iVector mean is %s" % format_float(vector_norms(lda.mean_[None])[0]))
    log.log("Stats have %d speakers, %d utterances. " % (lda.num_speakers_, lda.num_utts_))
    if lda.num_speakers_ - 1 < opts.dim:  # Kaldi writes the same matrix without a word
        log.warning("Only %d speakers: the between-class covariance has rank at most %d, so "
                    "the last %d of the --dim=%d LDA dimensions carry no speaker information"
                    % (lda.num_speakers_, lda.num_speakers_ - 1,
                       opts.dim - lda.num_speakers_ + 1, opts.dim))
    if lda.num_floored_:
        log.warning("Floored %d eigenvalues of covariance to %s"
                    % (lda.num_floored_, format_float(lda.floor_)))
    log.log("Singular values of between-class covariance after projecting with interpolated "
            "[total/within] covariance with a weight of %s on the total covariance, are: %s\n"
            % (format_float(np.float32(opts.total_covariance_factor)),
               format_vector(lda.eigenvalues_)))
    write_matrix(lda_wxfilename, lda.affine_matrix_, binary=opts.binary)
    log.log("Wrote LDA transform to %s" % (lda_wxfilename if lda_wxfilename not in ("", "-")
                                           else "standard output"))
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=3, outputs=-1)
