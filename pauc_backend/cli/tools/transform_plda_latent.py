"""transform-plda-latent: vectors into the PLDA latent space (Plda::TransformIvector).

The paper's PLDA-based preprocessing (Section V-B and its footnote): u = transform (x - mean),
scaled by sqrt(d / sum_i u_i^2 / (psi_i + 1/n)).
"""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float
from pauc_backend.cli.options.plda import read_plda_model, read_transformed, register_plda_options
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import write_vector_table

USAGE = """
Maps vectors into the space of a PLDA model (within-class covariance unit, between-class
covariance diagonal), with the length normalisation that ivector-plda-scoring applies before
scoring, and writes them as float vectors.

Usage: transform-plda-latent [options] <plda> <vector-rspecifier> <vector-wspecifier>
e.g.: transform-plda-latent --num-utts=ark:exp/enroll_num_utts.ark exp/plda ark:exp/enroll.ark ark:exp/enroll_latent.ark
"""

tool = Tool("transform-plda-latent", USAGE)
register_plda_options(tool)


def run(opts, args):
    plda_rxfilename, vector_rspecifier, vector_wspecifier = args
    plda = read_plda_model(plda_rxfilename)
    keys, U, _, factors, num_errors = read_transformed(
        tool.log, plda, vector_rspecifier, opts, opts.num_utts,
        "Duplicate vector found for key %s")
    if not len(keys):
        raise KaldiError("No vectors read from %s (empty input); %s not written"
                         % (vector_rspecifier, vector_wspecifier))
    write_vector_table(vector_wspecifier, keys, U)
    average = format_float(factors.astype(np.float64).mean()) if len(keys) else "nan"
    tool.log.log("Transformed %d vectors into the PLDA space, errors on %d; average "
                 "renormalization scale was %s" % (len(keys), num_errors, average))
    return 0 if len(keys) else 1


def main(argv=None):
    return tool.main(run, argv, num_args=3, outputs=-1)
