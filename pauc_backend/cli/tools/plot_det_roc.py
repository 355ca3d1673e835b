"""plot-det-roc: DET and ROC curves of several systems on one trial list (paper, Figs. 7, 9)."""

from pauc_backend.cli.framework.kaldi_cli import Tool, UsageError
from pauc_backend.cli.options import pauc as pauc_options
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io.keyed import KeySpace, keyed_score_labels, read_labelled_trials
from pauc_backend.metrics import TrialScores
from pauc_backend.metrics.llr import NBER_HELP

USAGE = """
Plots the DET curves (probit axes, EER and minDCF points marked), optionally the ROC curves
(pAUC band shaded) and, for calibrated LLR scores, the normalised Bayes error-rate curves
(BOSARIS's calibration plot) of one or more systems scored on the same trials. Each system is
<label>:<scores-rxfilename>, a file of lines <key1> <key2> <score> joined by key with the
trials <key1> <key2> target|nontarget. The format follows the extension (.png or .pdf).

Usage: plot-det-roc [options] <trials-rxfilename> <label>:<scores-rxfilename> [<label>:<scores> ...]
e.g.: plot-det-roc --output=det.png --output-roc=roc.png data/trials PLDA:exp/plda pAUC:exp/pauc
      plot-det-roc --output=det.png --output-nber=nber.png data/trials QMF:exp/llr_qmf
"""

tool = Tool("plot-det-roc", USAGE, docs="docs/tool-reference.md#plot-det-roc")
tool.register("output", "det.png", "Where to write the DET plot (.png or .pdf)")
tool.register("output-roc", "", "Where to write the ROC plot (.png or .pdf); empty: no ROC plot")
tool.register("output-nber", "", "Where to write the normalised Bayes error-rate plot (.png or "
              ".pdf) of scores that are calibrated LLRs: " + NBER_HELP + "; empty: none")
tool.register("title", "", "Title of the plots (default: 'DET curve' and 'ROC curve')")
pauc_options.register_band(tool, "shaded on the ROC")
tool.register("p-target", 0.01, "Prior of a target trial for the minDCF point", bounds=(">0", "<1"))
tool.register("c-miss", 1.0, "Cost of a miss (minDCF)", bounds=(">0",))
tool.register("c-fa", 1.0, "Cost of a false alarm (minDCF)", bounds=(">0",))



@tool.check
def _check_output(opts):
    if not opts.output:
        raise KaldiError("Invalid value --output='': it must name the DET plot file")


def run(opts, args):
    if len(args) < 2:
        raise UsageError("")
    from pauc_backend import plotting
    for name in filter(None, (opts.output, opts.output_roc, opts.output_nber)):
        plotting.check_plot_name(name)
    trials_rx, systems = args[0], []
    trial_table = read_labelled_trials(trials_rx, KeySpace())
    for spec in args[1:]:
        label, sep, scores_rx = spec.partition(":")
        if not sep or not label or not scores_rx:
            raise KaldiError("Bad system '%s': expected <label>:<scores-rxfilename>" % spec)
        scores, is_target = keyed_score_labels(tool.log, scores_rx, trial_table)
        try:
            trials = TrialScores.from_trials(scores, is_target)
        except ValueError as err:
            raise KaldiError("System %s (%s): %s" % (label, scores_rx, err)) from None
        rate, _ = trials.eer()
        tool.log.log("%s: %d target and %d non-target scores, EER %.4g%%" % (
            label, trials.num_tar, trials.num_non, 100 * rate))
        systems.append((label, trials))
    title = opts.title or None
    plotting.plot_det(systems, opts.output, opts.p_target, opts.c_miss, opts.c_fa, title)
    tool.log.log("Wrote the DET plot of %d systems to %s" % (len(systems), opts.output))
    if opts.output_roc:
        plotting.plot_roc(systems, opts.output_roc, opts.pauc_alpha, opts.pauc_beta, title)
        tool.log.log("Wrote the ROC plot to %s" % opts.output_roc)
    if opts.output_nber:
        plotting.plot_nber(systems, opts.output_nber, (opts.p_target,), opts.c_miss, opts.c_fa,
                           title)
        tool.log.log("Wrote the normalised Bayes error-rate plot to %s" % opts.output_nber)
    return 0


def main(argv=None):
    return tool.main(run, argv)
