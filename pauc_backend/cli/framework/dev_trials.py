"""train-pauc-auto's labelled development trials (issue 34 item 2) and training durations:
the options, their checks before any input is read, and the reading of the tables into the
plain object the estimator takes (models.auto.dev.DevTrials).

    --dev-vectors=<rspecifier>   raw vectors of the development utterances (enrollment and
                                 test sides; several tables: "scp:cat a.scp b.scp |")
    --dev-trials=<rxfilename>    Kaldi trials: <enroll-key> <test-key> target|nontarget
    --dev-enroll=<rspecifier>    spk2utt of the enrollment side: each enrollment key is the
                                 mean of its utterances' vectors, scored with num_utts = their
                                 count (as score-pauc-auto --num-utts); without it the
                                 enrollment keys are keys of --dev-vectors (single vectors)
    --dev-utt2spk=<rspecifier>   speaker of each development utterance: the clusters of the
                                 bootstrap (an enrollment model's speaker is its first
                                 utterance's; without it each key is its own cluster)
    --dev-utt2dur=<rspecifier>   durations (seconds) of the development utterances, for the
                                 quality measures of the final calibration
    --utt2dur=<rspecifier>       durations of the training vectors (the held-out trials'
                                 quality measures when there are no development trials)

Every problem is ONE ERROR naming the file and the key: a trial key with no vector or model, a
trials file without labels or with one class, a missing duration; with the two lines or
entries: a development key listed twice in --dev-vectors, a trial listed twice or as both
target and nontarget (compute-eer-pauc's check, kaldi_io.keyed); and, before any training,
trials whose non-targets (of those rated, at most --max-dev-trials) leave the pAUC band
[--pauc-alpha, --pauc-beta] empty. An enrollment utterance
without a vector is left out of its model with a WARNING, as ivector-mean does (a model left
without any is dropped, and a trial naming it is then an ERROR).
"""

import numpy as np

from pauc_backend.cli.framework.speaker_tables import (gather_speakers, read_spk2utt,
                                                      read_utt2spk)
from pauc_backend.cli.framework.kaldi_cli import format_float
from pauc_backend.cli.framework.vector_input import check_unique_keys, read_vectors
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_float_table, streams
from pauc_backend.kaldi_io.keyed import KeySpace, PairTable
from pauc_backend.kaldi_io.trials import read_trials
from pauc_backend.metrics.ranking import band_ranks
from pauc_backend.models.auto.dev import DevTrials

__all__ = ["register", "check_options", "read_dev_trials", "read_durations", "check_band"]

_DEV = ("dev_enroll", "dev_utt2spk", "dev_utt2dur")


def register(tool):
    tool.register("dev-vectors", "", "Raw vectors of labelled development utterances of the "
                  "domain you will score (enrollment and test sides; several tables: "
                  "\"scp:cat a.scp b.scp |\"): with --dev-trials they rate the candidates, "
                  "the fusion weights and the final calibration come from them "
                  "(docs/auto-backend.md)")
    tool.register("dev-trials", "", "Development trials, lines <enroll-key> <test-key> "
                  "target|nontarget, among --dev-vectors (or the models of --dev-enroll)")
    tool.register("dev-enroll", "", "spk2utt of the development enrollment side (each "
                  "enrollment key the mean of its utterances in --dev-vectors, scored with "
                  "num_utts = their count); without it the enrollment keys are vectors")
    tool.register("dev-utt2spk", "", "Speaker of each development utterance: the clusters of "
                  "the bootstrap of the development figures (without it each enrollment and "
                  "test key is its own)")
    tool.register("dev-utt2dur", "", "Durations in seconds of the development utterances "
                  "(utt2dur), for the quality measures of the final calibration")
    tool.register("utt2dur", "", "Durations in seconds of the training utterances (utt2dur, "
                  "e.g. ark:data/train/utt2dur), for the duration quality measure of a final "
                  "calibration learned on the training folds' held-out trials (applied only "
                  "when --quality-measures names it: a measure learned in the training domain "
                  "alone is not applied to yours otherwise; docs/auto-backend.md)")


def check_options(opts):
    """The development options together (one ERROR, exit 255, before any input)."""
    if bool(opts.dev_vectors) != bool(opts.dev_trials):
        given, missing = (("--dev-vectors", "--dev-trials") if opts.dev_vectors
                          else ("--dev-trials", "--dev-vectors"))
        raise KaldiError("Invalid options: %s needs %s" % (given, missing))
    for name in _DEV:
        if getattr(opts, name) and not opts.dev_trials:
            raise KaldiError("Invalid options: --%s needs --dev-trials and --dev-vectors"
                             % name.replace("_", "-"))
    if opts.dev_trials and (opts.fold_stage or opts.combine):
        raise KaldiError("Invalid options: development trials are not supported with "
                         "--fold-stage or --combine (train in one process)")
    measures = opts.quality_measures
    if "duration" in measures and measures != "auto":
        if opts.dev_trials and not opts.dev_utt2dur:
            raise KaldiError("Invalid options: --quality-measures=%s with development trials "
                             "needs --dev-utt2dur (the calibration is learned on them)"
                             % measures)
        if not opts.dev_trials and not opts.utt2dur and not opts.adapt_utt2dur:
            raise KaldiError("Invalid options: --quality-measures=%s needs the durations of "
                             "the trials the calibration is learned on: --utt2dur (the "
                             "training folds' held-out trials) or, with --adapt, "
                             "--adapt-utt2dur (its pseudo-speaker trials)" % measures)


def read_durations(rspecifier, keys, what):
    """float64 seconds of each of ``keys`` from the utt2dur table ``rspecifier``; ONE ERROR
    naming a missing key or a bad value."""
    table = read_float_table(rspecifier)
    out = np.empty(len(keys))
    for i, key in enumerate(keys):
        value = table.get(key)
        if value is None:
            raise KaldiError("No duration for %s %s in %s" % (what, key,
                                                              streams.printable(rspecifier)))
        if not (np.isfinite(value) and value > 0):
            raise KaldiError("Bad duration %r for %s %s in %s (durations must be positive "
                             "and finite)" % (value, what, key, streams.printable(rspecifier)))
        out[i] = value
    return out


def read_dev_trials(opts, dim, log):
    """The DevTrials of the options (models.auto.dev); ONE ERROR for each problem."""
    keys, V = read_vectors(opts.dev_vectors, dim, "the training vectors",
                           empty="No development vectors in %s")
    check_unique_keys(keys, opts.dev_vectors, "--dev-vectors")
    position = {key: row for row, key in enumerate(keys)}
    key1, key2, labels = read_trials(opts.dev_trials)
    where = streams.printable(opts.dev_trials)
    if not len(key1):
        raise KaldiError("Empty development trials file %s" % where)
    if labels is None:
        raise KaldiError("Development trials file %s has no target/nontarget column: the "
                         "development trials must be labelled" % where)
    is_target = (labels == "target") | (labels == "1")
    bad = np.flatnonzero(~(is_target | (labels == "nontarget") | (labels == "0")))
    if bad.size:
        raise KaldiError("Bad label '%s' on line %d of %s (neither target nor nontarget, nor "
                         "1 or 0)" % (labels[bad[0]], bad[0] + 1, where))
    if is_target.all() or not is_target.any():
        raise KaldiError("Development trials file %s has only %s trials (%d): rating and "
                         "calibration need both classes" % (
                             where, "target" if is_target.all() else "non-target",
                             is_target.size))
    # a pair listed twice, or as both target and nontarget: compute-eer-pauc's ERROR
    PairTable.from_arrays(opts.dev_trials, KeySpace(), key1, key2, is_target,
                          noun="trials", what="development trials file", kind="label")
    models, model_names = _enrollment(opts, position, log)
    model_index = {name: i for i, name in enumerate(model_names)}
    enroll_index = _lookup(key1, model_index, "enrollment", where,
                           opts.dev_enroll or opts.dev_vectors)
    test_index = _lookup(key2, position, "test", where, opts.dev_vectors)
    used = np.unique(test_index)
    remap = np.full(len(keys), -1, dtype=np.intp)
    remap[used] = np.arange(used.size)
    enroll_speaker = test_speaker = None
    if opts.dev_utt2spk:
        utt2spk = read_utt2spk(opts.dev_utt2spk, log)
        enroll_speaker = np.array([utt2spk.get(keys[rows[0]], name)
                                   for name, rows in zip(model_names, models)])
        test_speaker = np.array([utt2spk.get(keys[r], keys[r]) for r in used])
    durations = None
    if opts.dev_utt2dur:
        durations = read_durations(opts.dev_utt2dur, keys, "development utterance")
    dev = DevTrials(V, models, used, enroll_index, remap[test_index], is_target,
                    enroll_speaker, test_speaker, durations)
    try:
        dev.check(dim)
    except ValueError as err:
        raise KaldiError("Development trials %s: %s" % (where, err)) from None
    check_band(dev, opts, where)
    log.log("Read %d development trials (%d target) of %d enrollment models against %d test "
            "vectors from %s" % (dev.num_trials, dev.num_target, len(models), used.size, where))
    return dev


def check_band(dev, opts, where):
    """ONE ERROR, before any training, when the development trials the estimator rates on
    (at most --max-dev-trials of them, models.auto.dev.DevTrials.capped) leave the pAUC's
    false-positive band [--pauc-alpha, --pauc-beta] without a non-target: with K
    non-targets it holds floor(K beta) - ceil(K alpha) of them (metrics.ranking)."""
    rated = dev.capped(opts.max_dev_trials, 0)
    num_non = rated.num_trials - rated.num_target
    k_alpha, k_beta = band_ranks(num_non, opts.pauc_alpha, opts.pauc_beta)
    if k_beta > k_alpha:
        return
    need = _min_nontargets(opts.pauc_alpha, opts.pauc_beta)
    raise KaldiError("Development trials file %s cannot rate the candidates: its %d "
                     "non-target trial%s%s leave%s the false-positive band [%s, %s] of the "
                     "pAUC (--pauc-alpha, --pauc-beta) empty (ceil(K alpha) = %d, floor(K "
                     "beta) = %d); the band needs at least %d non-target trials" % (
                         where, num_non, "" if num_non == 1 else "s",
                         " (of those rated: --max-dev-trials=%d)" % opts.max_dev_trials
                         if rated is not dev else "", "s" if num_non == 1 else "",
                         format_float(opts.pauc_alpha), format_float(opts.pauc_beta),
                         k_alpha, k_beta, need))


def _min_nontargets(alpha, beta):
    """The fewest non-targets K whose band [alpha, beta] holds one (floor(K beta) >
    ceil(K alpha) needs K (beta - alpha) >= 1, and K (beta - alpha) >= 2 always holds one)."""
    count = max(1, int(1.0 / (beta - alpha)) - 1)      # below 1 / (beta - alpha): none
    while True:
        k_alpha, k_beta = band_ranks(count, alpha, beta)
        if k_beta > k_alpha:
            return count
        count += 1


def _enrollment(opts, position, log):
    """(rows of each enrollment model, its name): the spk2utt of --dev-enroll (as
    ivector-mean reads it: an utterance without a vector is a WARNING and is left out, a model
    left without any is dropped with a WARNING), or each development vector alone."""
    if not opts.dev_enroll:
        names = list(position)
        return [np.array([position[k]]) for k in names], names
    spk2utt, name = read_spk2utt(log, opts.dev_enroll, position)
    found = gather_speakers(log, spk2utt, position, name, opts.dev_vectors)
    ends = np.cumsum(found.sizes)
    models = [found.rows[end - size:end] for end, size in zip(ends, found.sizes)]
    return models, list(found.speakers)


def _lookup(keys, index, side, where, source):
    """Row of each trial key in ``index``; ONE ERROR naming the first unknown one."""
    names = np.array(list(index), dtype=str)
    rows = np.fromiter(index.values(), dtype=np.intp, count=len(index))
    order = np.argsort(names)
    names, rows = names[order], rows[order]
    keys = np.asarray(keys, dtype=str)
    at = np.minimum(np.searchsorted(names, keys), max(0, names.size - 1))
    found = (names[at] == keys) if names.size else np.zeros(keys.size, bool)
    if not found.all():
        i = int(np.argmin(found))
        raise KaldiError("Development trial on line %d of %s: %s key %s is not in %s"
                         % (i + 1, where, side, keys[i], source))
    return rows[at]
