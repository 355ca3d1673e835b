"""compare-systems: paired speaker-cluster bootstrap evidence of system B against system A."""

import json
import sys

from pauc_backend.cli.framework.kaldi_cli import Tool
from pauc_backend.cli.framework.speaker_tables import read_utt2spk
from pauc_backend.cli.options import evaluation as extras, pauc as pauc_options
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io.keyed import KeySpace, PairTable, join_columns, read_labelled_trials
from pauc_backend.metrics.bootstrap import (ClusterBootstrap, bootstrap_columns,
                                            paired_bootstrap_statistics, paired_summary)
from pauc_backend.metrics.evaluation import evaluate
from pauc_backend.metrics.registry import Setting, metric

USAGE = """
Compares two systems scored on the same trials by a PAIRED two-way cluster bootstrap (the
resamples of compute-eer-pauc --bootstrap, the same ones for both score files). For EER,
minDCF (each --p-target), pAUC and AUC (with --llr also actDCF and Cllr) it prints A, B,
their relative difference (B - A) / A with its --confidence interval, and the share of
resamples in which B is better. With --utt2spk the clusters are speakers.

Usage: compare-systems [options] <scores-A> <scores-B> <trials>
e.g.: compare-systems --utt2spk=ark:data/test/utt2spk exp/scores/{plda,pauc_auto} data/trials
"""

tool = Tool("compare-systems", USAGE, docs="docs/tool-reference.md#compare-systems")
tool.register("bootstrap", 1000, "Number of paired bootstrap resamples", bounds=(">0",))
tool.register("seed", 0, "Seed of the bootstrap's random draws")
tool.register("confidence", 0.95, "Level of the percentile intervals", bounds=(">0", "<1"))
tool.register("utt2spk", "", "Clusters by speaker: rspecifier of a table <key> <speaker> for "
              "the trials' keys, e.g. ark:data/utt2spk")
tool.register("p-target", "0.01", "Prior(s) of a target trial for minDCF, comma-separated")
tool.register("c-miss", 1.0, "Cost of a miss (minDCF)", bounds=(">0",))
tool.register("c-fa", 1.0, "Cost of a false alarm (minDCF)", bounds=(">0",))
pauc_options.register_band(tool)
tool.register("report", "table", "What to print: table (Markdown rows) or json",
              choices=("table", "json"))
tool.register("name-a", "A", "Name of system A in the report")
tool.register("name-b", "B", "Name of system B in the report")
tool.register("llr", False, "Scores are calibrated log-likelihood ratios: also compare actDCF "
              "(each --p-target) and Cllr on the same resamples")
extras.register_allow_partial(tool)


tool.check(extras.check_priors)


def _setting(opts, p_targets):
    return Setting(p_targets, opts.pauc_alpha, opts.pauc_beta, opts.c_miss, opts.c_fa,
                   llr=opts.llr)


def _label(item, setting):
    for col in bootstrap_columns(setting, calibration=setting.llr):
        if col.metric.key == item["metric"] and col.p_target == item.get("p_target"):
            return col.label(setting)
    return item["metric"]


def format_table(rows, opts, setting):
    level = "%g%%" % (100 * opts.confidence)
    out = ["| Metric | %s | %s | (B-A)/A | %s interval | B better in |"
           % (opts.name_a, opts.name_b, level), "|---|---|---|---|---|---|"]
    for item in rows:
        percent = metric(item["metric"]).percent
        scale, digits = (100.0, "%.2f") if percent else (1.0, "%.4f")
        rel = "n/a" if item["relative"] is None else "%+.1f%%" % (100 * item["relative"])
        ci = ("n/a" if item["interval"] is None else "%+.1f%% .. %+.1f%%"
              % tuple(100 * v for v in item["interval"]))
        share = "n/a" if item["b_better"] is None else "%.1f%%" % (100 * item["b_better"])
        out.append("| %s | %s | %s | %s | %s | %s |" % (
            _label(item, setting), digits % (scale * item["a"]), digits % (scale * item["b"]),
            rel, ci, share))
    return "\n".join(out) + "\n"


def run(opts, args):
    p_targets = extras.p_targets(opts.p_target)
    scores_a, scores_b, trials_rx = args
    log = tool.log
    keys = KeySpace()
    trials = read_labelled_trials(trials_rx, keys)
    num_listed = len(trials)
    other = PairTable.read(scores_b, keys, "score", noun="scores", what="scores file")
    a, (is_target, b), (ids1, ids2) = join_columns(log, scores_a, keys, [trials, other],
                                                   key_ids=True)
    del trials, other
    if a.size == 0:
        raise KaldiError("No trial of %s is scored in both %s and %s"
                         % (trials_rx, scores_a, scores_b))
    extras.check_coverage(log, opts.allow_partial, "%s and %s both score" % (scores_a, scores_b),
                          a.size, num_listed, trials_rx)
    if not is_target.any() or is_target.all():
        raise KaldiError("No %s trials are scored in both files"
                         % ("target" if not is_target.any() else "non-target"))
    enroll, test = ids1, ids2
    if opts.utt2spk:
        table = read_utt2spk(opts.utt2spk, log)
        (enroll, found1, num1), (test, found2, num2) = (
            extras.speaker_codes(ids, index, table) for ids, index in ((ids1, keys.first),
                                                                       (ids2, keys.second)))
        log.log("Clusters by speaker from %s: %d of %d enrollment keys and %d of %d test keys "
                "found in it" % (opts.utt2spk, found1, num1, found2, num2))
    boot_a = ClusterBootstrap(a, is_target, enroll, test)
    boot_b = ClusterBootstrap(b, is_target, enroll, test)
    setting = _setting(opts, p_targets)
    stats_a, stats_b = paired_bootstrap_statistics([boot_a, boot_b], opts.bootstrap, opts.seed,
                                                   setting, calibration=opts.llr)
    rows = paired_summary(stats_a, stats_b, evaluate(a, is_target, setting).summary,
                          evaluate(b, is_target, setting).summary, setting, opts.confidence,
                          calibration=opts.llr)
    listed = "" if a.size == num_listed else " of the %d listed" % num_listed
    log.log("Paired bootstrap: %d resamples of %d enrollment and %d test clusters (seed %d) "
            "over %d trials%s (%d target)" % (opts.bootstrap, boot_a.num_enroll,
                                               boot_a.num_test, opts.seed, a.size, listed,
                                               int(is_target.sum())))
    dropped = opts.bootstrap - min(item["resamples"] for item in rows)
    if dropped:
        log.warning("%d of %d resamples lost every target or every non-target (or left a "
                    "figure undefined) and were dropped: too few clusters for a meaningful "
                    "interval" % (dropped, opts.bootstrap))
    if opts.report == "json":
        report = {"a": scores_a, "b": scores_b, "trials": int(a.size)}
        if listed:
            report["trials_listed"] = num_listed
        report.update({"level": opts.confidence, "resamples": opts.bootstrap,
                       "seed": opts.seed, "metrics": rows})
        sys.stdout.write(json.dumps(report, indent=1) + "\n")
    else:
        sys.stdout.write(format_table(rows, opts, setting))
        if listed:
            sys.stdout.write("\nScored in both files: %d/%d listed trials (--allow-partial).\n"
                             % (a.size, num_listed))
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=3)
