"""compute-eer-pauc: Kaldi's compute-eer (byte for byte) plus minDCF, pAUC, AUC and AP."""

import sys

from pauc_backend.cli.options import evaluation as extras, pauc as pauc_options
from pauc_backend.cli.framework.kaldi_cli import Tool, format_float
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io.aligned_lists import read_same_order
from pauc_backend.kaldi_io.keyed import KeySpace, keyed_score_labels, read_labelled_trials
from pauc_backend.kaldi_io.numbers import read_score_labels
from pauc_backend.metrics import report
from pauc_backend.metrics.llr import NBER_HELP
from pauc_backend.metrics.evaluation import evaluate
from pauc_backend.metrics.registry import Setting, columns, setting_of

USAGE = """
Computes the equal error rate exactly as Kaldi's compute-eer, and also minDCF (as
sid/compute_min_dcf.py), pAUC over an FPR band (the paper's eq. 5), AUC and average precision;
with --llr also actDCF, Cllr and minCllr. With one argument the input is compute-eer's: lines
<score> target|nontarget; with two, a scores file <key1> <key2> <score> is joined by key with
a trials file <key1> <key2> target|nontarget. --report=kaldi prints only the EER, as compute-eer.

Usage: compute-eer-pauc [options] <scores-in>
   or: compute-eer-pauc [options] <scores-rxfilename> <trials-rxfilename>
e.g.: paste data/trials scores | awk '{print $6, $3}' | compute-eer-pauc -
      compute-eer-pauc --p-target=0.01,0.001 --report=table exp/scores data/trials
      compute-eer-pauc --bootstrap=1000 --report=json exp/scores data/trials
      compute-eer-pauc --partitions=data/partitions --p-target=0.01,0.005 exp/scores data/trials
""" + extras.HELP_TEXT + """
"""

tool = Tool("compute-eer-pauc", USAGE, docs="docs/tool-reference.md#compute-eer-pauc")
pauc_options.register_band(tool)
tool.register("p-target", "0.01", "Prior(s) of a target trial for minDCF (and actDCF), "
              "comma-separated, e.g. 0.01,0.005")
tool.register("c-miss", 1.0, "Cost of a miss (minDCF, actDCF)", bounds=(">0",))
tool.register("c-fa", 1.0, "Cost of a false alarm (minDCF, actDCF)", bounds=(">0",))
tool.register("eer-method", "kaldi", "EER definition: kaldi (compute-eer) or rocch (BOSARIS "
              "ROC convex hull)", choices=("kaldi", "rocch"))
tool.register("report", "kaldi", "What to print: kaldi (EER on stdout, the rest logged), "
              "table (one row) or json", choices=("kaldi", "table", "json"))
tool.register("llr", False, "Scores are calibrated log-likelihood ratios: also report actDCF, "
              "Cllr and minCllr")
extras.register_allow_partial(tool)
tool.register("det-plot", "", "Write a DET plot here (.png or .pdf)")
tool.register("roc-plot", "", "Write a ROC plot with the pAUC band shaded here (.png or .pdf)")
tool.register("nber-plot", "", "With --llr: write the normalised Bayes error-rate plot here "
              "(.png or .pdf): " + NBER_HELP.replace("--p-target prior", "--p-target priors"))
extras.register_options(tool)


tool.check(extras.check_priors)


@tool.check
def _check_nber_plot(opts):
    if opts.nber_plot and not opts.llr:
        raise KaldiError("--nber-plot=%s needs --llr=true: the plot reads the scores as "
                         "calibrated log-likelihood ratios" % opts.nber_plot)


def _log_kaldi(summary, opts):
    log = tool.log
    if summary["eer_method"] == "kaldi":
        log.log("Equal error rate is %s%%, at threshold %s" % (
            format_float(100.0 * summary["eer"]), format_float(summary["eer_threshold"])))
    elif summary["eer_method"] == "equalized":
        log.log("Equalised equal error rate is %s%%" % format_float(100.0 * summary["eer"]))
    else:
        log.log("ROCCH equal error rate is %s%%" % format_float(100.0 * summary["eer"]))
    for item in summary["min_dcf"]:
        where = ("" if item["threshold"] is None else
                 " at threshold {0:.4f}".format(item["threshold"]))
        log.log("minDCF is {0:.4f}{1} (p-target={2}, c-miss={3:g},"
                "c-fa={4:g})".format(item["min_dcf"], where, item["p_target"],
                                     opts.c_miss, opts.c_fa))
    label = report.pauc_label(opts.pauc_alpha, opts.pauc_beta)
    if summary["pauc"] is None:
        log.warning("%s is undefined: the band holds no non-target (%d non-targets)" % (
            label, summary["num_nontarget"]))
    elif "pauc_mcclish" not in summary:
        log.log("%s is %s" % (label, format_float(summary["pauc"])))
    else:
        log.log("%s is %s over %d non-targets (McClish-standardised partial AUC %s)" % (
            label, format_float(summary["pauc"]), summary["pauc_num_nontargets"],
            format_float(summary["pauc_mcclish"])))
    setting = setting_of(summary)
    for col in columns(setting):            # the other metrics, as the registry lists them
        key = col.metric.key
        if key in ("eer", "min_dcf", "pauc") or key not in summary:
            continue
        value = col.get(summary)
        log.log("%s is %s%s" % (col.metric.spoken or col.metric.title,
                                "undefined" if value is None else format_float(value),
                                " (p-target=%s)" % col.p_target if col.metric.per_prior
                                else ""))


def _keyed_input(scores_rx, trials_rx, need_keys):
    """(scores, is_target, number of trials listed, KeySpace, (ids1, ids2)) of the keyed form:
    read side by side when both files list the same pairs in the same (ascending) order and no
    key ids are needed (9 bytes a trial), else joined by key (about 18 bytes a trial while
    joining)."""
    if not need_keys:
        same = read_same_order(scores_rx, trials_rx)
        if same is not None:
            return same + (same[0].size, None, ())
    keys = KeySpace()
    trials = read_labelled_trials(trials_rx, keys)
    scores, is_target, *ids = keyed_score_labels(tool.log, scores_rx, trials,
                                                 key_ids=need_keys)
    return scores, is_target, len(trials), keys, (ids[0] if ids else ())


def run(opts, args):
    extras.check_options(opts, len(args))
    p_targets = extras.p_targets(opts.p_target)
    if opts.det_plot or opts.roc_plot or opts.nber_plot:
        from pauc_backend.plotting import check_plot_name
        for name in filter(None, (opts.det_plot, opts.roc_plot, opts.nber_plot)):
            check_plot_name(name)
    if len(args) == 1:
        scores, is_target = read_score_labels(args[0])
    else:
        need_keys = bool(opts.partitions or opts.bootstrap)
        scores, is_target, num_listed, keys, key_ids = _keyed_input(args[0], args[1], need_keys)
        extras.check_coverage(tool.log, opts.allow_partial, "%s scores" % args[0], scores.size,
                              num_listed, args[1])
        if not is_target.any() or is_target.all():
            raise KaldiError("No %s trials have scores" % (
                "target" if not is_target.any() else "non-target"))
    setting = Setting(p_targets, opts.pauc_alpha, opts.pauc_beta, opts.c_miss, opts.c_fa,
                      opts.eer_method, opts.llr)
    num_scored = scores.size
    result = evaluate(
        scores, is_target, setting,
        partitions=(extras.read_partitions(opts.partitions, keys, *key_ids)
                    if opts.partitions else None),
        bootstrap=(extras.bootstrap_clusters(tool.log, opts, keys, *key_ids)
                   if opts.bootstrap else None),
        in_place=True)      # the scores become the sorted classes: no copy
    del scores, is_target
    extras.log_evaluation(tool.log, opts, result)
    summary, trials = result.summary, result.trials
    if len(args) == 2 and num_scored < num_listed:
        summary["num_trials_listed"] = num_listed
    if opts.report == "kaldi":
        _log_kaldi(summary, opts)
        extras.log_extras(tool.log, summary)
        sys.stdout.write("%.4g" % (100.0 * summary["eer"]))
    else:
        sys.stdout.write((report.format_table if opts.report == "table" else
                          report.format_json)(summary))
    if opts.det_plot or opts.roc_plot or opts.nber_plot:
        from pauc_backend import plotting
        systems = [("scores" if args[0] in ("-", "") else args[0], trials)]
        if opts.det_plot:
            plotting.plot_det(systems, opts.det_plot, p_target=p_targets[0],
                              c_miss=opts.c_miss, c_fa=opts.c_fa)
        if opts.roc_plot:
            plotting.plot_roc(systems, opts.roc_plot, opts.pauc_alpha, opts.pauc_beta)
        if opts.nber_plot:
            plotting.plot_nber(systems, opts.nber_plot, p_targets, opts.c_miss, opts.c_fa)
    tool.log.log("Evaluated %d trials: %d target, %d non-target." % (
        trials.num_tar + trials.num_non, trials.num_tar, trials.num_non))
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=(1, 2))
