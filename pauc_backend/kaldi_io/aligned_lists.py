"""A scores file and a trials file that list the same key pairs in the same order, read side by
side: the common case of a keyed evaluation (score-plda-trials, ivector-plda-scoring and every
scorer here write their scores in the order of the trials), joined without any key index.

``read_same_order(scores_rx, trials_rx)`` streams both files in chunks of lines and checks,
line by line, that the two key columns hold the same bytes, and that the pairs strictly ascend
(byte order of key1, then of key2): then no pair is listed twice, which the join by key would
otherwise have to rule out with a table of every pair. It returns ``(scores float64,
is_target bool)`` in file order (9 bytes a trial, nothing else grows with the lists) exactly as
the join (``keyed.keyed_score_labels``) would, or None at the first line that does not fit
(other orders, keys over 48 bytes, anything malformed or a NaN or infinite score, a pipe or
stdin, which cannot be read twice): the caller then joins by key from the start, and that path reports every problem with
its own words. A list that fails late costs one extra read of the files, never another answer.
"""

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import memory
from pauc_backend.kaldi_io.lines import regular_file, token_words
from pauc_backend.kaldi_io.trials import iter_fields

__all__ = ["read_same_order"]

_MAX_KEY_BYTES = 48      # what FieldChunk's padding lets token_words read as 8-byte words
_CHUNK_BYTES = 1 << 20   # per file. On the bench fixture at 10^7 trials (busy machine) the
#                          reading peaked at 147 MB with 1 MB chunks, 216 MB with iter_fields'
#                          4 MB (their temporaries, which glibc keeps once freed), 128 MB with
#                          256 kB, a little slower


class _NotAligned(Exception):
    """The two files do not list the same pairs in ascending order (the join decides)."""


def _key_words(chunk, index, lo, hi):
    """Big-endian 8-byte words (w, n) of key column ``index`` of lines lo..hi of ``chunk``:
    comparing them as unsigned integers, word after word, is comparing the keys' bytes."""
    starts, lengths = chunk.columns[index]
    starts, lengths = starts[lo:hi], lengths[lo:hi]
    if int(lengths.max()) > _MAX_KEY_BYTES:
        raise _NotAligned
    return token_words(chunk.buf, starts, lengths).byteswap(), lengths


def _strictly_ascending(rows):
    """Whether each column of ``rows`` (w, n) is lexicographically above the one before."""
    order = np.zeros(rows.shape[1] - 1, dtype=np.int8)      # 0: equal so far
    for row in rows:
        open_ = order == 0
        order[open_ & (row[1:] > row[:-1])] = 1
        order[open_ & (row[1:] < row[:-1])] = -1
    return bool((order == 1).all())


def _pair(chunk, row):
    """The two keys (bytes) of line ``row`` of ``chunk``."""
    return tuple(bytes(chunk.buf[start:start + length]) for start, length in (
        (int(chunk.columns[index][0][row]), int(chunk.columns[index][1][row]))
        for index in (0, 1)))


class _Trials:
    """The trials file as a cursor over its lines: ``take(n)`` gives the next n lines as
    (chunk, lo, hi, labels) pieces, whatever the chunks' boundaries."""

    def __init__(self, chunks):
        self._chunks = chunks
        self._chunk, self._labels, self._at = None, None, 0

    def take(self, count):
        while count:
            if self._chunk is None or self._at == self._chunk.num_lines:
                self._chunk = next(self._chunks, None)
                if self._chunk is None:
                    raise _NotAligned                 # fewer trials than scores
                self._labels = self._chunk.labels(2)
                self._at = 0
            hi = min(self._chunk.num_lines, self._at + count)
            yield self._chunk, self._at, hi, self._labels[self._at:hi]
            count -= hi - self._at
            self._at = hi

    def exhausted(self):
        if self._chunk is not None and self._at < self._chunk.num_lines:
            return False
        return next(self._chunks, None) is None


def read_same_order(scores_rx, trials_rx, chunk_bytes=_CHUNK_BYTES,
                    trials_chunk_bytes=_CHUNK_BYTES):
    """``(scores, is_target)`` of two regular files with the same key pairs line by line in
    strictly ascending order, else None (see the module doc). The chunk sizes are for tests."""
    try:
        if not (regular_file(scores_rx) and regular_file(trials_rx)):
            return None
        return _read(scores_rx, trials_rx, chunk_bytes, trials_chunk_bytes)
    except (_NotAligned, KaldiError):
        return None


def _read(scores_rx, trials_rx, chunk_bytes, trials_chunk_bytes):
    scores = memory.GrowingArray(np.float64)
    is_target = memory.GrowingArray(bool)
    trials = _Trials(iter_fields(trials_rx, (3,), "trials file", trials_chunk_bytes))
    last = None                    # (key1, key2) bytes of the line before
    for chunk in iter_fields(scores_rx, (3,), "scores file", chunk_bytes):
        line = 0
        for other, lo, hi, labels in trials.take(chunk.num_lines):
            count = hi - lo
            rows = []
            for index in (0, 1):
                ours, our_lengths = _key_words(chunk, index, line, line + count)
                theirs, their_lengths = _key_words(other, index, lo, hi)
                if not (np.array_equal(our_lengths, their_lengths)
                        and np.array_equal(ours, theirs)):
                    raise _NotAligned
                rows.append(ours)
            if (last is not None and not last < _pair(chunk, line)) or not _strictly_ascending(
                    np.concatenate(rows)):
                raise _NotAligned
            last = _pair(chunk, line + count - 1)
            is_target.append(labels)
            line += count
        scores.append(chunk.floats(2, finite=True))
    if not scores.size or not trials.exhausted():
        return None
    return scores.array(), is_target.array()
