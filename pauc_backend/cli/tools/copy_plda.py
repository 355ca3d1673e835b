"""copy-plda: copy a PLDA model, optionally smoothing it (twin of Kaldi's ivector-copy-plda)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float, format_vector
from pauc_backend.cli.options.plda import read_plda_model, register_plda_options
from pauc_backend.kaldi_io import write_plda

USAGE = """
Copy a PLDA object, possibly applying smoothing to the within-class
covariance (as ivector-copy-plda); also converts between binary and text.

Usage: copy-plda <plda-in> <plda-out>
e.g.: copy-plda --smoothing=0.1 exp/plda exp/plda.smooth0.1
"""

tool = Tool("copy-plda", USAGE)
tool.register("smoothing", 0.0, "Factor used in smoothing within-class covariance (add this "
              "factor times between-class covar)", bounds=(">=0", "<=1"))
tool.register("binary", True, "Write output in binary mode")
register_plda_options(tool, num_utts=False)  # accepted and unused, as in Kaldi


def run(opts, args):
    plda_rxfilename, plda_wxfilename = args
    plda = read_plda_model(plda_rxfilename)
    smoothing = float(np.float32(opts.smoothing))  # a BaseFloat option in Kaldi
    if smoothing != 0.0:
        tool.log.log("Smoothing within-class covariance by %s, Psi is initially: %s\n"
                     % (format_float(smoothing), format_vector(plda.psi_)))
        plda.smooth_within(smoothing)
        tool.log.log("New value of Psi is %s\n" % format_vector(plda.psi_))
    write_plda(plda_wxfilename, plda.mean_, plda.transform_, plda.psi_, binary=opts.binary)
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=2, outputs=-1)
