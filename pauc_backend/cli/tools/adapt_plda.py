"""adapt-plda: unsupervised PLDA domain adaptation (twin of Kaldi's ivector-adapt-plda)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float, format_vector
from pauc_backend.cli.options.plda import read_plda_model
from pauc_backend.cli.framework.vector_input import read_vectors
from pauc_backend.kaldi_io import write_plda

USAGE = """
Adapt a PLDA object using unsupervised adaptation-data vectors from a different
domain to the training data (as ivector-adapt-plda).

Usage: adapt-plda [options] <plda-in> <vectors-rspecifier> <plda-out>
e.g.: adapt-plda --within-covar-scale=0.75 --between-covar-scale=0.25 exp/plda ark:exp/adapt_final.ark exp/plda_adapt
"""

tool = Tool("adapt-plda", USAGE)
tool.register("binary", True, "Write output in binary mode")
tool.register("mean-diff-scale", 1.0, "Scale with which to add to the total data variance, the "
              "outer product of the difference between the original mean and the "
              "adaptation-data mean")
tool.register("within-covar-scale", 0.3, "Scale that determines how much of excess variance "
              "in a particular direction gets attributed to within-class covar.")
tool.register("between-covar-scale", 0.7, "Scale that determines how much of excess variance "
              "in a particular direction gets attributed to between-class covar.")


def run(opts, args):
    plda_rxfilename, vector_rspecifier, plda_wxfilename = args
    plda = read_plda_model(plda_rxfilename)
    keys, X = read_vectors(vector_rspecifier, plda.dim, "the PLDA model %s" % plda_rxfilename,
                           "No vectors in %s, unable to adapt the PLDA model")
    old_psi = plda.psi_.copy()
    # Kaldi's options are BaseFloat: use their float32 values.
    scales = [float(np.float32(s)) for s in (opts.mean_diff_scale, opts.within_covar_scale,
                                             opts.between_covar_scale)]
    plda.adapt(X, *scales)
    log = tool.log
    log.log("Eigenvalues of adaptation-data total-covariance in space where training-data "
            "total-covariance is unit, is: %s\n" % format_vector(plda.adapt_eigenvalues_))
    for i, (s, w, b) in enumerate(zip(plda.adapt_eigenvalues_, plda.adapt_within_,
                                      plda.adapt_between_)):
        log.log("For %d'th eigenvalue, value is %s, within-class covar in this direction is %s, "
                "between-class is %s" % (i, format_float(s), format_float(np.float32(w)),
                                         format_float(np.float32(b))))
    log.log("Old diagonal of between-class covar was: %s\n, new diagonal is %s\n"
            % (format_vector(old_psi), format_vector(plda.psi_)))
    write_plda(plda_wxfilename, plda.mean_, plda.transform_, plda.psi_, binary=opts.binary)
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=3, outputs=-1)
