"""The trial loop shared by the scoring tools, with ivector-plda-scoring's exact semantics.

A trial whose key1 is not among the enrollment vectors gives ``WARNING Key K not present in
training iVectors.`` (key2 is then not checked), an unknown key2 gives ``... test iVectors.``;
such a trial writes no output line and counts as an error. The rest are scored in chunks by a
vectorised ``score_fn`` and written as ``key1 key2 %.7g`` of the float32 score, like Kaldi.
Trials are streamed in and scores out (kaldi_io.trials.iter_fields, kaldi_io.keyed.KeyIndex).
"""

import itertools

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import format_float
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import format_scores, outputs
from pauc_backend.kaldi_io.keyed import table_key_index
from pauc_backend.kaldi_io.trials import iter_fields
from pauc_backend.metrics.moments import Float32Moments
from pauc_backend.voxceleb import utterance_key

CHUNK_SIZE = 1 << 20
MAX_WARNINGS = 20       # Kaldi warns once per trial with an unknown key; we stop after these
EARLY_CHECK = 1000      # trials looked up before judging whether the tables fit the trials
_LABEL_TOKENS = {b"0", b"1", b"target", b"nontarget"}
VOXCELEB_CONVERTER = ("convert-voxceleb-trials <list> <trials>, which maps id10270/x6uYqmx31kE/"
                      "00001.wav to Kaldi's key id10270-x6uYqmx31kE-00001")
MIN_JUDGED = 10         # a shorter list is never judged: its warnings say enough
MAX_MAPPED = 200000     # table keys mapped to egs/voxceleb/v2 form by the diagnosis (error path)


def index_keys(keys, duplicate_message):
    """``{key: row}`` for a table's keys; KaldiError ``duplicate_message % key`` on a repeat.

    e.g. ``index_keys(keys, "Duplicate training iVector found for speaker %s")`` (Kaldi's words).
    """
    positions = {key: row for row, key in enumerate(keys)}
    if len(positions) != len(keys):
        seen = set()
        for key in keys:
            if key in seen:
                raise KaldiError(duplicate_message % key)
            seen.add(key)
    return positions


def _key_index(keys):
    if isinstance(keys, dict):                 # {key: row} of index_keys
        keys = sorted(keys, key=keys.get)
    return table_key_index(keys)


def _text(key):
    return key.decode("utf-8", "replace")


def _voxceleb_hint(trial_keys, index, table_name):
    """The mapping to name when the trial keys and the table's keys are the two forms of
    VoxCeleb utterance names (paths ``id10270/x6uYqmx31kE/00001.wav``, egs/voxceleb/v2 keys
    ``id10270-x6uYqmx31kE-00001``); None otherwise. Runs on the error path only: at most
    MAX_MAPPED table keys are mapped, each sampled trial key is looked up once."""
    sample = [_text(key) for key in np.unique(trial_keys)[:EARLY_CHECK]]
    mapped = {}
    for key in itertools.islice((k for k in index.keys if b"/" in k), MAX_MAPPED):
        short = utterance_key(_text(key))
        if short is not None:
            mapped.setdefault(short, _text(key))
    for key in sample:
        if key in mapped:
            return ("the %s vectors' keys are VoxCeleb paths (e.g. '%s') and the trials' "
                    "keys their egs/voxceleb/v2 form (e.g. '%s'): import the vectors again with "
                    "import-vectors, which maps VoxCeleb path keys to that form as "
                    "convert-voxceleb-trials maps the list's paths"
                    % (table_name, mapped[key], key))
    for key in sample:
        short = utterance_key(key) if "/" in key else None
        if short is not None and short.encode("utf-8") in index.ids:
            return ("the trials' keys are VoxCeleb paths (e.g. '%s') and the %s vectors' "
                    "keys their egs/voxceleb/v2 form (e.g. '%s'): make the trials from the "
                    "VoxCeleb list with %s" % (key, table_name, short, VOXCELEB_CONVERTER))
    return None


def _examples(key1, key2, enroll, test, enroll_name, test_name):
    """One key of each side: " (keys seen: trial 'a b'; training vectors 'x'; test vectors
    'y')"."""
    def first(index):
        return "'%s'" % index.text(0) if len(index) else "none"
    return " (keys seen: trial '%s %s'; %s vectors %s; %s vectors %s)" % (
        _text(key1[0]), _text(key2[0]), enroll_name, first(enroll), test_name, first(test))


def _diagnose(key1, key2, enroll, test, enroll_name, test_name):
    """Why (almost) no trial key is known: swapped tables, a VoxCeleb list or the other form of
    VoxCeleb keys, or keys of the wrong kind; ends with one key of each side."""
    return (_cause(key1, key2, enroll, test, enroll_name, test_name)
            + _examples(key1, key2, enroll, test, enroll_name, test_name))


def _cause(key1, key2, enroll, test, enroll_name, test_name):
    in_enroll1 = np.mean(enroll.lookup(key1) >= 0)
    in_test2 = np.mean(test.lookup(key2) >= 0)
    if np.mean(test.lookup(key1) >= 0) > 0.5 and np.mean(enroll.lookup(key2) >= 0) > 0.5:
        return ("its first keys are in the %s vectors and its second keys in the %s vectors: "
                "are the two vector arguments swapped?" % (test_name, enroll_name))
    first = np.unique(key1[:1000])
    if first.size <= 4 and set(first.tolist()) <= _LABEL_TOKENS:
        return ("its first column holds labels (e.g. %s), as a VoxCeleb list (`1 id10270/"
                "x6uYqmx31kE/00001.wav id10270/8jEAjG6SegY/00008.wav`) does: convert it into "
                "Kaldi's `<enroll-key> <test-key> target|nontarget` with %s"
                % (key1[0].decode("utf-8", "replace"), VOXCELEB_CONVERTER))
    for keys, index, name, share in ((key2, test, test_name, in_test2),
                                     (key1, enroll, enroll_name, in_enroll1)):
        hint = _voxceleb_hint(keys, index, name) if share < 0.5 else None
        if hint:
            return hint
    parts = []
    if in_enroll1 < 0.5:
        parts.append("%d%% of its first keys (e.g. %s) are in the %s vectors" % (
            100 * in_enroll1, key1[0].decode("utf-8", "replace"), enroll_name))
    if in_test2 < 0.5:
        parts.append("%d%% of its second keys (e.g. %s) are in the %s vectors" % (
            100 * in_test2, key2[0].decode("utf-8", "replace"), test_name))
    return ("only " + " and only ".join(parts) + ": is a table of the wrong kind given (e.g. "
            "utterance vectors where speaker vectors are expected), or the wrong trials file?")


def score_trial_list(log, trials_rx, scores_wx, enroll_keys, test_keys, score_fn,
                     enroll_name="training", test_name="test", chunk_size=CHUNK_SIZE,
                     require_scores=False):
    """Score the trials in ``trials_rx`` (2 or 3 columns) and write ``scores_wx``, streaming:
    memory does not grow with the number of trials.

    ``score_fn(enroll_rows, test_rows)`` gets index arrays into ``enroll_keys``/``test_keys``
    (at most ``chunk_size`` trials per call) and returns their scores. Logs the mean and
    standard deviation of the scores and ``Processed N trials, E had errors.``; returns N.
    Unknown keys give Kaldi's WARNING per trial for the first MAX_WARNINGS, then one count.
    When more than 90% of the first EARLY_CHECK trials (or of a shorter list of at least
    MIN_JUDGED) fail, stops with one KaldiError that says what is probably wrong (swapped
    tables, a table of the wrong kind) before any per-trial warning is shown (_EarlyJudge).
    With ``require_scores`` an empty trial list or no scored trial is a KaldiError and the
    output is left untouched; without it the scores file is written (possibly empty) even
    when N is 0, as Kaldi does.
    """
    enroll_index, test_index = _key_index(enroll_keys), _key_index(test_keys)
    moments = Float32Moments()
    num_errors = num_lines = 0
    judge = _EarlyJudge(log, trials_rx, enroll_index, test_index, enroll_name, test_name)
    with outputs.open_output(scores_wx) as out:
        for chunk in iter_fields(trials_rx, (2, 3), "trials file"):
            key1, key2 = chunk.tokens(0), chunk.tokens(1)
            enroll_rows = enroll_index.lookup_chunk(chunk, 0)
            test_rows = test_index.lookup_chunk(chunk, 1)
            missing_enroll = enroll_rows < 0
            bad = missing_enroll | (test_rows < 0)
            num_lines += chunk.num_lines
            if bad.any():
                judge.warn(key1, key2, missing_enroll, bad, num_errors)
                num_errors += int(bad.sum())
                good = np.flatnonzero(~bad)
                key1, key2 = key1[good], key2[good]
                enroll_rows, test_rows = enroll_rows[good], test_rows[good]
            judge.look(chunk, num_errors, num_lines, done=False)
            for start in range(0, key1.size, chunk_size):
                stop = min(start + chunk_size, key1.size)
                scores = np.asarray(score_fn(enroll_rows[start:stop], test_rows[start:stop]),
                                    dtype=np.float64)
                if scores.shape != (stop - start,):
                    raise ValueError("score function returned %s scores for %d trials"
                                     % (scores.shape, stop - start))
                if not np.all(np.isfinite(scores)):
                    trial = int(np.flatnonzero(~np.isfinite(scores))[0])
                    raise KaldiError("Score for trial %s %s is not finite (%s)" % (
                        key1[start + trial].decode(), key2[start + trial].decode(),
                        scores[trial]))
                out.write(format_scores(key1[start:stop], key2[start:stop], scores))
                moments.add(scores)
        num_done = moments.count
        judge.look(None, num_errors, num_lines, done=True)
        if require_scores and not num_lines:
            raise KaldiError("Trials file %s is empty" % trials_rx)
        if require_scores and not num_done:
            raise KaldiError("None of the %d trials in %s has both keys in the vector tables"
                             % (num_lines, trials_rx))
    if num_errors > MAX_WARNINGS:
        log.warning("%d more trials had an unknown key (only the first %d are shown)"
                    % (num_errors - MAX_WARNINGS, MAX_WARNINGS))
    if num_done:
        mean, stddev = moments.mean_stddev()
        log.log("Mean score was %s, standard deviation was %s"
                % (format_float(mean), format_float(stddev)))
    log.log("Processed %d trials, %d had errors." % (num_done, num_errors))
    return num_done


class _EarlyJudge:
    """Whether the tables fit the trials, decided BEFORE any per-trial warning is shown.

    Kaldi's per-trial WARNINGs (the first MAX_WARNINGS) are held back until EARLY_CHECK trials
    were looked up (or the list ended, if shorter; from MIN_JUDGED trials on): when more than
    90 % of them had an unknown key the run stops with ONE KaldiError that leads with the
    diagnosis (swapped tables, keys of the wrong kind) and counts the failures, and none of the
    held warnings is printed; otherwise they are printed in order and the rest as before."""

    def __init__(self, log, trials_rx, enroll_index, test_index, enroll_name, test_name):
        self.log, self.trials_rx = log, trials_rx
        self.enroll_index, self.test_index = enroll_index, test_index
        self.names = (enroll_name, test_name)
        self.held = []              # warning texts, until judged
        self.first = None           # the first chunk's keys, for the diagnosis
        self.judged = False

    def warn(self, key1, key2, missing_enroll, bad, shown):
        """Kaldi's WARNING per trial with an unknown key, for the first MAX_WARNINGS trials."""
        for trial in np.flatnonzero(bad)[:max(0, MAX_WARNINGS - shown)].tolist():
            if missing_enroll[trial]:
                text = "Key %s not present in %s iVectors." % (key1[trial].decode(),
                                                               self.names[0])
            else:
                text = "Key %s not present in %s iVectors." % (key2[trial].decode(),
                                                               self.names[1])
            if self.judged:
                self.log.warning(text)
            else:
                self.held.append(text)

    def look(self, chunk, num_errors, num_lines, done):
        if self.judged:
            return
        if chunk is not None and self.first is None:
            self.first = (chunk.tokens(0), chunk.tokens(1))
        if not done and num_lines < EARLY_CHECK:
            return
        self.judged = True
        if num_lines >= MIN_JUDGED and num_errors > 0.9 * num_lines:
            raise KaldiError("%d of the %s%d trials in %s have a key missing from the vector "
                             "tables; stopping. It looks like %s" % (
                                 num_errors, "" if done else "first ", num_lines,
                                 self.trials_rx, _diagnose(*self.first, self.enroll_index,
                                                           self.test_index, *self.names)))
        for text in self.held:
            self.log.warning(text)
        self.held = []
