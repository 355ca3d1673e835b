"""The trial loop shared by the scoring tools, with ivector-plda-scoring's exact semantics.

A trial whose key1 is not among the enrollment vectors gives ``WARNING Key K not present in
training iVectors.`` (key2 is then not checked), an unknown key2 gives ``... test iVectors.``;
such a trial writes no output line and counts as an error. The rest are scored in chunks by a
vectorised ``score_fn`` and written as ``key1 key2 %.7g`` of the float32 score, like Kaldi.
"""

import numpy as np

from pauc_backend.cli.kaldi_cli import format_float
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_trials, write_scores

CHUNK_SIZE = 1 << 20


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


def _lookup(positions, keys):
    """Row of each key (-1 if absent); a run of equal keys (sorted trials) is looked up once."""
    if not len(keys):
        return np.zeros(0, dtype=np.intp)
    heads = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    unique = keys[heads].tolist() if heads.size < len(keys) else keys.tolist()
    rows = np.fromiter((positions.get(key, -1) for key in unique), dtype=np.intp,
                       count=len(unique))
    if heads.size < len(keys):
        rows = np.repeat(rows, np.diff(np.append(heads, len(keys))))
    return rows


def score_trial_list(log, trials_rx, scores_wx, enroll_keys, test_keys, score_fn,
                     enroll_name="training", test_name="test", chunk_size=CHUNK_SIZE):
    """Score the trials in ``trials_rx`` (2 or 3 columns) and write ``scores_wx``.

    ``score_fn(enroll_rows, test_rows)`` gets index arrays into ``enroll_keys``/``test_keys``
    (at most ``chunk_size`` trials per call) and returns their scores. Logs the mean and
    standard deviation of the scores and ``Processed N trials, E had errors.``; returns N.
    The scores file is written (possibly empty) even when N is 0, as Kaldi does.
    """
    enroll_pos = enroll_keys if isinstance(enroll_keys, dict) else {
        key: row for row, key in enumerate(enroll_keys)}
    test_pos = test_keys if isinstance(test_keys, dict) else {
        key: row for row, key in enumerate(test_keys)}
    key1, key2, _ = read_trials(trials_rx)
    key1, key2 = np.asarray(key1, dtype=np.str_), np.asarray(key2, dtype=np.str_)
    enroll_rows = _lookup(enroll_pos, key1)
    test_rows = _lookup(test_pos, key2)
    missing_enroll = enroll_rows < 0
    missing_test = (test_rows < 0) & ~missing_enroll
    bad = missing_enroll | missing_test
    for trial in np.flatnonzero(bad):
        if missing_enroll[trial]:
            log.warning("Key %s not present in %s iVectors." % (key1[trial], enroll_name))
        else:
            log.warning("Key %s not present in %s iVectors." % (key2[trial], test_name))
    if bad.any():
        good = np.flatnonzero(~bad)
        key1, key2 = key1[good], key2[good]
        enroll_rows, test_rows = enroll_rows[good], test_rows[good]
    num_done = key1.shape[0]

    scores = np.empty(num_done, dtype=np.float64)
    for start in range(0, num_done, chunk_size):
        stop = min(start + chunk_size, num_done)
        chunk = np.asarray(score_fn(enroll_rows[start:stop], test_rows[start:stop]),
                           dtype=np.float64)
        if chunk.shape != (stop - start,):
            raise ValueError("score function returned %s scores for %d trials"
                             % (chunk.shape, stop - start))
        scores[start:stop] = chunk
    if not np.all(np.isfinite(scores)):
        trial = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise KaldiError("Score for trial %s %s is not finite (%s)"
                         % (key1[trial], key2[trial], scores[trial]))
    write_scores(scores_wx, key1, key2, scores)

    if num_done:
        as_float = scores.astype(np.float32).astype(np.float64)
        mean = np.float32(as_float.sum() / num_done)
        scatter = np.float32((as_float * as_float).sum() / num_done)
        with np.errstate(invalid="ignore"):
            stddev = np.sqrt(np.float32(scatter - mean * mean))
        log.log("Mean score was %s, standard deviation was %s"
                % (format_float(mean), format_float(stddev)))
    log.log("Processed %d trials, %d had errors." % (num_done, int(bad.sum())))
    return num_done
