"""compute-eer-pauc's --bootstrap and --partitions: option parsing, the keyed inputs (utt2spk,
partitions table) and calls into pauc_backend.metrics.bootstrap / .equalized.

The partitions file is a keyed ``<key1> <key2> <partition>`` table joined to the scored trials
through the same key join as the scores (``kaldi_io.keyed``: one KeySpace, PairTable.find).
"""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import UsageError, format_float
from pauc_backend.errors import KaldiError
from pauc_backend.cli.framework.speaker_tables import read_utt2spk
from pauc_backend.kaldi_io.keyed import PairTable
from pauc_backend.metrics.bootstrap import bootstrap_columns
from pauc_backend.metrics.evaluation import Bootstrap
from pauc_backend.metrics.registry import setting_of

HELP_TEXT = """
--bootstrap=N adds percentile confidence intervals (level --confidence) for EER, each
minDCF, pAUC and AUC from N resamples of a two-way cluster bootstrap: the enrollment keys
(first column) and the test keys (second column) are resampled as clusters, independently,
and trial (e, t) counts a_e * b_t times (Owen's pigeonhole bootstrap, 2007; cf. Poh, Martin
& Bengio, IEEE TPAMI 2007, for users as the bootstrap unit). With --utt2spk keys are replaced
by their speakers (keys not in it are speakers themselves). Needs the keyed (two-argument)
form; the same --seed gives the same output.
--partitions=FILE (lines <key1> <key2> <partition>) switches to NIST's equalised scoring:
miss and false-alarm rates are averaged over partitions at each threshold, and EER (NIST's
interpolated), minDCF, pAUC, AUC and actDCF come from those rates. Whenever --p-target holds
0.01 and 0.005, the JSON report has c_primary (their mean minDCF: SRE16's Cprimary with
--partitions) and, with --llr, act_c_primary."""


def register_allow_partial(tool):
    """``--allow-partial`` of the tools that join scores with a trials file (compute-eer-pauc,
    compare-systems); ``check_coverage`` applies it."""
    tool.register("allow-partial", False, "With a trials file: evaluate even when the scores "
                  "cover only part of its trials (the report then says how many); without it "
                  "that is an error, since the figures would describe another list")


def check_coverage(log, allow_partial, scored_by, num_scored, num_listed, trials_rx):
    """An evaluation of part of the trial list is a KaldiError unless ``allow_partial`` (then
    one WARNING; the caller's report carries ``num_scored/num_listed``). ``scored_by`` is the
    subject and verb, e.g. ``"exp/scores/plda scores"`` or ``"exp/a and exp/b both score"``.
    compute_min_dcf.py ignores unscored trials silently; a score file cut short or scored on the
    wrong table must not pass."""
    if num_scored >= num_listed:
        return
    text = "%s %d of the %d trials of %s (%.3g%%)" % (
        scored_by, num_scored, num_listed, trials_rx, 100.0 * num_scored / num_listed)
    if not allow_partial:
        raise KaldiError(text + ": the figures would describe part of the list; score every "
                         "trial, or give --allow-partial=true to evaluate the scored ones (the "
                         "report then says how many)")
    log.warning("Evaluating part of the trial list (--allow-partial): " + text)


def register_options(tool):
    tool.register("bootstrap", 0, "Number of cluster-bootstrap resamples for confidence "
                  "intervals (0: none)", bounds=(">=0",))
    tool.register("seed", 0, "Seed of the bootstrap's random draws")
    tool.register("confidence", 0.95, "Level of the bootstrap's percentile intervals",
                  bounds=(">0", "<1"))
    tool.register("utt2spk", "", "Bootstrap clusters by speaker: rspecifier of a table "
                  "<key> <speaker> for the trials' keys, e.g. ark:data/utt2spk")
    tool.register("partitions", "", "NIST equalised scoring: file of lines <key1> <key2> "
                  "<partition>, e.g. language x gender of each trial")
    tool.check(_check_combinations)


def _check_combinations(opts):
    """Options that cannot go together: one ERROR before any input is read."""
    if opts.utt2spk and not opts.bootstrap:
        raise KaldiError("Invalid option --utt2spk: it is only used by --bootstrap")
    if opts.bootstrap and opts.partitions:
        raise KaldiError("Invalid options --bootstrap and --partitions: they cannot be combined "
                         "(the bootstrap resamples plain, not equalised, rates)")
    if opts.bootstrap and opts.eer_method != "kaldi":
        raise KaldiError("Invalid option --eer-method=%s: --bootstrap computes Kaldi's EER"
                         % opts.eer_method)
    if opts.partitions and opts.eer_method != "kaldi":
        raise KaldiError("Invalid option --eer-method=%s: --partitions uses NIST's equalised "
                         "EER; drop --eer-method" % opts.eer_method)


def check_options(opts, num_args):
    """What depends on the positional arguments (usage, exit 1)."""
    if (opts.bootstrap or opts.partitions) and num_args != 2:
        raise UsageError("--bootstrap and --partitions need keys: give <scores> <trials>")


def read_partitions(rx, keys, ids1, ids2):
    """Partition name of each scored trial ``(ids1[i], ids2[i])`` (key ids in ``keys``), from
    the ``<key1> <key2> <partition>`` file ``rx`` read through the one key join."""
    table = PairTable.read(rx, keys, "token", noun="partition entries",
                           what="partitions file")
    if not len(table):
        raise KaldiError("Empty partitions file %s" % rx)
    rows = table.find(keys.codes(ids1, ids2))
    missing = np.flatnonzero(rows < 0)
    if missing.size:
        first = keys.pair_text(keys.codes(ids1[missing[:1]], ids2[missing[:1]])[0])
        raise KaldiError("%d scored trials have no partition in %s (first: '%s')"
                         % (missing.size, rx, first))
    return table.values(rows)


def speaker_codes(ids, index, utt2spk):
    """Speaker name of each trial's key (a key not in ``utt2spk`` is its own speaker), the
    number of distinct keys found in ``utt2spk`` and the number of distinct keys."""
    used, inverse = np.unique(ids, return_inverse=True)
    names = [index.text(key_id) for key_id in used.tolist()]
    speakers = np.array([utt2spk.get(name, name) for name in names])
    return speakers[inverse.ravel()], sum(name in utt2spk for name in names), used.size


def bootstrap_clusters(log, opts, keys, ids1, ids2):
    """The ``metrics.evaluation.Bootstrap`` of the options: clusters are the trials' keys (ids
    in ``keys``), or their speakers with --utt2spk."""
    enroll, test = ids1, ids2
    if opts.utt2spk:
        table = read_utt2spk(opts.utt2spk, log)
        (enroll, found1, num1), (test, found2, num2) = (
            speaker_codes(ids, index, table) for ids, index in ((ids1, keys.first),
                                                                 (ids2, keys.second)))
        log.log("Clusters by speaker from %s: %d of %d enrollment keys and %d of %d test keys "
                "found in it" % (opts.utt2spk, found1, num1, found2, num2))
    return Bootstrap(enroll, test, opts.bootstrap, opts.seed, opts.confidence)


def log_evaluation(log, opts, result):
    """LOG lines about how the summary was computed (partitions, resamples); KaldiError when
    no bootstrap resample kept both classes."""
    summary = result.summary
    if "num_partitions" in summary:
        log.log("Equalised over %d partitions of %s (%d with targets, %d with non-targets)"
                % (summary["num_partitions"], opts.partitions,
                   summary["num_partitions_with_targets"],
                   summary["num_partitions_with_nontargets"]))
    if result.resamples_used is not None:
        used, wanted = result.resamples_used, opts.bootstrap
        log.log("Bootstrap: %d resamples of %d enrollment and %d test clusters (seed %d)"
                % (wanted, result.clusters[0], result.clusters[1], opts.seed))
        if used < wanted:
            log.warning("%d of %d resamples lost every target or every non-target and were "
                        "dropped: too few clusters for a meaningful interval"
                        % (wanted - used, wanted))
        if used == 0:
            raise KaldiError("No bootstrap resample kept both targets and non-targets")


def log_extras(log, summary):
    """LOG lines for c_primary and the intervals (--report=kaldi)."""
    if "c_primary" in summary:
        text = "Cprimary (mean minDCF at p-target 0.01 and 0.005) is %.4f" % summary["c_primary"]
        if summary.get("act_c_primary") is not None:
            text += ", actual %.4f" % summary["act_c_primary"]
        log.log(text)
    confidence = summary.get("confidence")
    if confidence:
        parts = []
        for col in bootstrap_columns(setting_of(summary)):
            pair = confidence[col.metric.key]
            if col.metric.per_prior:
                pair = pair[col.index]
            scale = 100.0 if col.metric.percent else 1.0
            parts.append("%s %s" % (col.label(setting_of(summary)), "n/a" if pair is None else
                                    "[%s, %s]" % (format_float(scale * pair[0]),
                                                  format_float(scale * pair[1]))))
        log.log("%g%% bootstrap intervals (%d resamples): %s"
                % (100 * confidence["level"], confidence["resamples"], ", ".join(parts)))


def check_priors(opts):
    """A valid ``--p-target`` list, before any input (the band: cli/options/pauc.py)."""
    p_targets(opts.p_target)


def p_targets(text):
    """The comma-separated priors of ``--p-target``; KaldiError naming the option unless each
    lies strictly between 0 and 1."""
    try:
        values = [float(item) for item in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(0 < p < 1 for p in values):
        raise KaldiError("Invalid value --p-target=%s: need priors strictly between 0 and 1, "
                         "comma-separated" % text)
    return values
