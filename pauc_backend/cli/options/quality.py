"""Quality measures of the trial sides for train-calibration and apply-calibration (QMF):
--enroll-duration/--test-duration (seconds, as Kaldi's utt2dur) and --enroll-quality/
--test-quality (any other per-side measure, e.g. compute-vector-norms), each a Kaldi BaseFloat
table keyed like its trial column; the features and the model are ``models.quality``'s.

Cost: each table is read once into memory (one float per key) and its keys indexed once; a
trial's values are gathered by key id, vectorised, so it adds O(#trials) work and no loop.
"""

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_float_table, streams
from pauc_backend.kaldi_io.key_index import table_key_index
from pauc_backend.models.quality import DURATION, QualityMeasure

SIDES = ("enroll", "test")
KINDS = ("duration", "quality")           # option stems, in feature order

HELP_TEXT = """
Quality measures (QMF): --enroll-duration and --test-duration are tables of seconds keyed like
the first and second trial column (Kaldi's utt2dur: 'utt 3.52' lines, read as ark:utt2dur; for
an enrollment model averaged over utterances, the sum of theirs, e.g. from spk2utt); each
trial gets min and max of log(clip(duration, --min-duration, --max-duration)) of its sides.
--enroll-quality/--test-quality give any other per-side measure (embedding norms from
compute-vector-norms, a cohort mean), used as is (min and max). Both sides of a measure go
together; a trial side without a value is an error.
"""


def register_quality_options(tool, training):
    """The table options (both tools) and, for training, the feature settings stored in the
    model (the clip range of durations and --quality-interactions)."""
    for side, column in (("enroll", "first"), ("test", "second")):
        tool.register("%s-duration" % side, "", "Rspecifier of the durations in seconds of the "
                      "%s trial column's keys (utt2dur), e.g. ark:data/%s/utt2dur" % (column,
                                                                                       side))
        tool.register("%s-quality" % side, "", "Rspecifier of another quality measure of the %s "
                      "trial column's keys (e.g. embedding norms), used as is" % column)
    if training:
        tool.register("min-duration", DURATION.low, "Durations are clipped to [--min-duration, "
                      "--max-duration] seconds before their log", bounds=(">0",))
        tool.register("max-duration", DURATION.high, "Upper clip of durations, seconds (longer "
                      "recordings count as this long)", bounds=(">0",))
        tool.register("quality-interactions", False, "Also fit the products of each score with "
                      "each quality feature (a quality-dependent slope)")
    tool.check(check_quality_options)


def check_quality_options(opts):
    """Both sides of a measure together; the clip range ordered."""
    for kind in KINDS:
        given = [bool(getattr(opts, "%s_%s" % (side, kind))) for side in SIDES]
        if any(given) and not all(given):
            missing = SIDES[given.index(False)]
            raise KaldiError("Invalid options: --%s-%s needs --%s-%s (a quality measure needs "
                             "both trial sides)" % (SIDES[given.index(True)], kind, missing,
                                                    kind))
    if hasattr(opts, "min_duration") and opts.min_duration > opts.max_duration:
        raise KaldiError("Invalid options: --min-duration=%g exceeds --max-duration=%g"
                         % (opts.min_duration, opts.max_duration))


def given_kinds(opts):
    """The measure stems whose tables were given, in feature order."""
    return [kind for kind in KINDS if getattr(opts, "enroll_" + kind)]


def training_measures(opts):
    """The QualityMeasures a training run's options define (none: score-only calibration)."""
    measures = []
    for kind in given_kinds(opts):
        if kind == "duration":
            measures.append(QualityMeasure("duration", True, opts.min_duration,
                                           opts.max_duration))
        else:
            measures.append(QualityMeasure("quality"))
    return measures


def check_model_measures(opts, measures, model_rx):
    """apply-calibration: the tables given must be the measures the model was trained with."""
    wanted = [m.name for m in measures]
    given = given_kinds(opts)
    if wanted == given:
        return
    if not wanted:
        raise KaldiError("Calibration model %s has no quality measures (it calibrates scores "
                         "alone), but %s given" % (model_rx, _options_text(given) + (
                             " were" if len(given) > 1 else " was")))
    raise KaldiError("Calibration model %s was trained with the quality measure(s) %s: it needs "
                     "%s%s" % (model_rx, ", ".join(wanted), _options_text(wanted),
                               "" if not given else ", not " + _options_text(given)))


def _options_text(kinds):
    return " and ".join("--enroll-%s/--test-%s" % (k, k) for k in kinds)


class SideTable:
    """One quality table of one trial side: values by key, looked up by key ids."""

    def __init__(self, rspecifier, kind, side):
        self.rspecifier, self.kind, self.side = rspecifier, kind, side
        table = read_float_table(rspecifier)
        keys = list(table)
        self.values = np.fromiter(table.values(), dtype=np.float64, count=len(keys))
        bad = np.flatnonzero(~np.isfinite(self.values) if kind == "quality"
                             else ~(np.isfinite(self.values) & (self.values > 0)))
        if bad.size:
            raise KaldiError("Bad %s %s for key '%s' in %s (%s)" % (
                kind, self.values[bad[0]], keys[bad[0]], streams.printable(rspecifier),
                "not finite" if kind == "quality" else "durations must be positive and finite"))
        self.keys = keys
        self.index = table_key_index(keys)

    def rows_of(self, key_index):
        """Row of each key of a KeyIndex (``kaldi_io.keyed``'s key ids) in this table; -1
        where absent."""
        return self.index.lookup(np.array(key_index.keys, dtype="S")) if len(key_index) else \
            np.zeros(0, dtype=np.int64)

    def gather(self, rows, key_text):
        """Values of table ``rows`` (one per trial); ``key_text(i)``: the key of trial i, for the
        one ERROR when a trial side has no value."""
        missing = np.flatnonzero(rows < 0)
        if missing.size:
            raise KaldiError("No %s for %s key '%s' in %s: every trial side needs one" % (
                self.kind, "enrollment" if self.side == "enroll" else "test",
                key_text(int(missing[0])), streams.printable(self.rspecifier)))
        return self.values[rows]


def read_side_tables(opts):
    """{side: [SideTable per given measure, in feature order]}."""
    return {side: [SideTable(getattr(opts, "%s_%s" % (side, kind)), kind, side)
                   for kind in given_kinds(opts)] for side in SIDES}


def trial_values(tables, ids1, ids2, keys):
    """(enroll (n, M), test (n, M)) raw values of the trials with KeySpace ids ``ids1``/``ids2``
    (``keys``: the KeySpace)."""
    out = []
    for side, ids, index in (("enroll", ids1, keys.first), ("test", ids2, keys.second)):
        columns = []
        for table in tables[side]:
            rows = table.rows_of(index)[ids]
            columns.append(table.gather(rows, lambda i, ids=ids, index=index:
                                        index.text(int(ids[i]))))
        out.append(np.column_stack(columns))
    return out
