"""A vector table streamed into ``ClassStats`` with each vector's speaker (train-lda's utt2spk,
train-plda's spk2utt), with Kaldi's warnings and counts; no table is held.

Memory: one chunk of the reader (``iter_vector_chunks``, ~4 MB) and its float64 blocks, the
statistics (D x D and speakers x D doubles), and per listed utterance a dict entry (its key) and
a few bytes of numpy arrays (speaker index, seen flag): ~150 bytes, where the table is 2 KB per
512-d vector. train-lda needs a second pass (Kaldi centres the vectors on their mean, in
float, before accumulating): the vectors it keeps go to a ``Spool`` (an unlinked temporary
file) on the first.
"""

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pauc_backend.cli.framework.speaker_tables import MAX_WARNINGS, check_lookup_counts
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import iter_vector_chunks
from pauc_backend.kaldi_io.temp_dir import temp_dir
from pauc_backend.models.blocked import block_rows, first_nonfinite
from pauc_backend.models.class_stats import ClassStats, NonFiniteRowError


class _Blocks:
    """Rows gathered into blocks of ``block_rows`` rows before ``ClassStats.add``, so the
    statistics (and the model's bytes) do not depend on where the reader's chunks end (a
    pipe, an archive or a script give the same blocks); a NaN or infinity is named by its
    key (as check_finite names it)."""

    def __init__(self, stats, rspecifier):
        self.stats, self.rspecifier = stats, rspecifier
        self.X = self.labels = None
        self.keys, self.have = [], 0

    def add(self, X, labels, keys):
        if self.X is None:
            size = block_rows(X.shape[1])
            self.X = np.empty((size, X.shape[1]), dtype=np.float32)
            self.labels = np.empty(size, dtype=np.intp)
        at = 0
        while at < X.shape[0]:
            take = min(X.shape[0] - at, self.X.shape[0] - self.have)
            self.X[self.have:self.have + take] = X[at:at + take]
            self.labels[self.have:self.have + take] = labels[at:at + take]
            self.keys.extend(keys[at:at + take])
            self.have += take
            at += take
            if self.have == self.X.shape[0]:
                self.flush()

    def flush(self):
        if not self.have:
            return
        try:
            self.stats.add(self.X[:self.have], self.labels[:self.have])
        except NonFiniteRowError as err:
            raise KaldiError("Vector %s in %s contains NaN or Inf"
                             % (self.keys[err.row], self.rspecifier)) from None
        self.keys, self.have = [], 0


def _lookup(index, keys):
    return np.fromiter((index.get(key, -1) for key in keys), dtype=np.intp, count=len(keys))


class Spool:
    """Float32 rows written to an unlinked temporary file (in $TMPDIR) and read back in
    blocks: a second pass over a table that came through a pipe, with no table in memory.
    Use as a context manager (the file is closed, hence gone, on exit)."""

    def __init__(self, what):
        self.what = what
        self.num_rows = 0
        self.dim = None
        self.directory = temp_dir(what)
        try:
            self.file = tempfile.TemporaryFile(prefix="pauc-backend-spool.", dir=self.directory)
        except OSError as err:
            raise KaldiError("Cannot create a temporary file for %s in %s: %s"
                             % (what, self.directory, err.strerror)) from None

    def write(self, X):
        self.dim = X.shape[1]
        try:
            self.file.write(memoryview(np.ascontiguousarray(X, dtype=np.float32)).cast("B"))
        except OSError as err:
            raise KaldiError("Cannot spool %s to a temporary file in %s: %s"
                             % (self.what, self.directory, err.strerror)) from None
        self.num_rows += X.shape[0]

    def read(self, begin, out):
        """Rows ``begin:begin + len(out)`` into ``out`` (float32, (n, dim)); a positional
        read, so threads may read different blocks at once."""
        self.file.flush()
        view = memoryview(out).cast("B")
        offset = begin * 4 * self.dim
        have = 0
        while have < view.nbytes:
            got = os.preadv(self.file.fileno(), [view[have:]], offset + have)
            if got <= 0:
                raise KaldiError("The temporary file of %s was cut short" % self.what)
            have += got
        return out

    def blocks(self, rows):
        """``(begin, block)``: float32 (n, dim) blocks of ``rows`` rows, in writing order (the
        block is a reused buffer: valid until the next one)."""
        buffer = np.empty((rows, self.dim or 0), dtype=np.float32)
        for begin in range(0, self.num_rows, rows):
            yield begin, self.read(begin, buffer[:min(rows, self.num_rows - begin)])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()


def read_utt2spk_pass(log, vector_rspecifier, utt2spk, spool):
    """ivector-compute-lda's reading loop: the kept vectors go to ``spool`` in table order;
    returns ``(labels, num_done, num_err)`` (the kept vectors' speakers, numbered in utt2spk
    order).

    As Kaldi, in table order: an utterance read before (kept or not) is skipped with
    ``Duplicate iVector found for utterance U, ignoring it.``, one not in utt2spk with
    ``utt2spk has no entry for utterance U, skipping it.``; a kept vector with a NaN or
    infinity is an error naming it. ``utt2spk`` ({utt: spk}) is consumed (emptied) to save
    memory.
    """
    speaker_index = {}
    position = {}
    label = np.empty(len(utt2spk), dtype=np.int32)
    for row, (utt, spk) in enumerate(utt2spk.items()):
        position[utt] = row
        label[row] = speaker_index.setdefault(spk, len(speaker_index))
    utt2spk.clear()
    del speaker_index
    seen = np.zeros(label.size, dtype=bool)
    seen_missing = set()
    labels = []
    num_done = num_err = 0
    for chunk in iter_vector_chunks(vector_rspecifier):
        keys = chunk.keys
        rows = _lookup(position, keys)
        if (rows >= 0).all() and not seen[rows].any() and np.unique(rows).size == rows.size:
            keep = None
        else:  # the rare chunk with a duplicate or an unknown utterance: Kaldi's order
            keep = np.zeros(rows.size, dtype=bool)
            for i, (key, row) in enumerate(zip(keys, rows.tolist())):
                if (row >= 0 and seen[row]) or key in seen_missing:
                    log.warning("Duplicate iVector found for utterance %s, ignoring it." % key)
                elif row < 0:
                    log.warning("utt2spk has no entry for utterance %s, skipping it." % key)
                    seen_missing.add(key)
                else:
                    keep[i] = seen[row] = True
                    continue
                num_err += 1
            rows = rows[keep]
            keys = [key for key, kept in zip(keys, keep.tolist()) if kept]
        if rows.size:
            X = chunk.X if keep is None else chunk.X[keep]
            bad = first_nonfinite(X)
            if bad is not None:
                raise KaldiError("Vector %s in %s contains NaN or Inf"
                                 % (keys[bad], vector_rspecifier))
            spool.write(X)
            labels.append(label[rows])
            seen[rows] = True
            num_done += rows.size
    labels = np.concatenate(labels) if labels else np.zeros(0, dtype=np.int32)
    return labels, num_done, num_err


def _spool_mean(spool, rows, workers):
    """``sum_i (1/N) x_i`` in double, row after row (ComputeAndSubtractMean's AddVec), as
    float32; the columns split between ``workers`` threads (each column's sum keeps its
    order, so the bits do not depend on the split)."""
    scale = 1.0 / spool.num_rows
    cuts = np.linspace(0, spool.dim, workers + 1).astype(int).tolist()
    totals = [np.zeros(b - a) for a, b in zip(cuts[:-1], cuts[1:])]
    buffers = [np.empty((rows + 1, b - a)) for a, b in zip(cuts[:-1], cuts[1:])]

    def add(which, block):
        part = buffers[which][:block.shape[0] + 1]
        part[0] = totals[which]  # the running total rides along: the sum stays sequential
        np.multiply(block[:, cuts[which]:cuts[which + 1]], scale, out=part[1:],
                    dtype=np.float64)
        totals[which] = np.add.reduce(part, axis=0)

    if workers == 1:
        for _, block in spool.blocks(rows):
            add(0, block)
    else:
        with ThreadPoolExecutor(workers) as pool:
            for _, block in spool.blocks(rows):
                for future in [pool.submit(add, w, block) for w in range(workers)]:
                    future.result()
    return np.concatenate(totals).astype(np.float32)


def centred_stats(spool, labels, workers=2):
    """Kaldi's ComputeAndSubtractMean then CovarianceStats over the spooled vectors:
    ``(stats, mean)``, the float32 mean ``sum_i (1/N) x_i`` summed in double row after row
    (in table order: Kaldi's std::map order when the table is sorted, as Kaldi's tables are),
    the statistics of the vectors centred on it in float (about zero, as Kaldi's).

    Two passes over the spool. The second is split between ``workers`` threads (numpy and
    the reads release the GIL: the D x D products run on both cores), block k going to
    thread k mod workers; their statistics are merged in thread order, so the result does not
    depend on timing."""
    rows = block_rows(spool.dim)
    starts = list(range(0, spool.num_rows, rows))
    workers = max(1, min(workers, len(starts)))
    mean = _spool_mean(spool, rows, workers)
    num_classes = int(labels.max()) + 1 if labels.size else 0
    parts = [ClassStats(reference=np.zeros(spool.dim), num_classes=num_classes)
             for _ in range(workers)]

    def work(which):
        block = np.empty((rows, spool.dim), dtype=np.float32)
        for begin in starts[which::workers]:
            part = spool.read(begin, block[:min(rows, spool.num_rows - begin)])
            part -= mean
            parts[which].add(part, labels[begin:begin + part.shape[0]])

    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            for future in [pool.submit(work, which) for which in range(workers)]:
                future.result()
    else:
        work(0)
    stats = parts[0]
    for part in parts[1:]:
        stats.merge(part)
    return stats, mean


class SpeakerCounts:
    """What ivector-compute-plda logs: speakers kept and dropped, utterances used and absent."""

    def __init__(self, num_spk_done, num_spk_err, num_utt_done, num_utt_err):
        self.num_spk_done, self.num_spk_err = num_spk_done, num_spk_err
        self.num_utt_done, self.num_utt_err = num_utt_done, num_utt_err


def stream_spk2utt(log, spk2utt, vector_rspecifier, spk2utt_name=None):
    """ivector-compute-plda's accumulation: ``(stats, counts)``, classes numbered by speaker in
    spk2utt order (a speaker with no vector keeps its number and a zero count).

    The vectors are read once, in table order; each listed utterance's vector is added to its
    speaker's statistics (to each of its speakers if listed twice). Afterwards, in spk2utt
    order, Kaldi's warnings (``No iVector present in input for utterance U``, at most
    MAX_WARNINGS of them, then one summary line; ``Not producing output for speaker S ...``).
    A listed utterance found twice in the table is an error (Kaldi's RandomAccessTableReader:
    duplicate key), as are a speaker with an empty list and spk2utt/vectors that do not match
    (``check_lookup_counts``).
    """
    listed = ListedSlots(spk2utt, spk2utt_name)
    stats = ClassStats(num_classes=listed.sizes.size)
    blocks = _Blocks(stats, vector_rspecifier)
    for slots, X, keys in listed.vectors(vector_rspecifier):
        blocks.add(X, listed.label[slots], keys)
    blocks.flush()
    return stats, listed.finish(log, vector_rspecifier)


class ListedSlots:
    """The utterances of a spk2utt table numbered in its order, one SLOT per listing (an
    utterance listed under two speakers has two, as Kaldi counts it twice): ``sizes`` (per
    speaker), ``label`` (per slot: its speaker's number in spk2utt order), ``utterances()``
    (per slot), ``found`` (per slot: its vector was read). A speaker with an empty list is an
    error. ``vectors(rspecifier)`` reads a table once, in table order, and yields the listed
    vectors; ``finish`` then checks that the tables match and gives Kaldi's warnings."""

    def __init__(self, spk2utt, spk2utt_name=None):
        for spk, utts in spk2utt.items():
            if not utts:
                where = " in %s" % spk2utt_name if spk2utt_name else ""
                raise KaldiError("Speaker with no utterances: %s%s" % (spk, where))
        self.spk2utt, self.spk2utt_name = spk2utt, spk2utt_name
        self.sizes = np.fromiter(map(len, spk2utt.values()), dtype=np.intp,
                                 count=len(spk2utt))
        self.label = np.repeat(np.arange(self.sizes.size, dtype=np.int32), self.sizes)
        self.position, self.extra = {}, {}
        slot = 0
        for utts in spk2utt.values():
            for utt in utts:
                if self.position.setdefault(utt, slot) != slot:
                    self.extra.setdefault(utt, []).append(slot)
                slot += 1
        self.found = np.zeros(self.label.size, dtype=bool)
        self.num_vectors = self.speaker_keys = 0

    def utterances(self):
        """The utterance of each slot (a list)."""
        return [utt for utts in self.spk2utt.values() for utt in utts]

    def vectors(self, vector_rspecifier, located=False):
        """``(slots, X, keys)`` of the listed vectors, in table order (X: float32 rows, valid
        until the next step; an utterance listed again comes once more, after its chunk,
        with its other slots); vectors not listed are skipped. A listed utterance found
        twice in the table is an error (Kaldi's RandomAccessTableReader: duplicate key).
        ``located``: ``(slots, X, keys, where)``, where ``where`` says in which regular file
        and at which byte offsets the rows can be read again (the reader's
        ``VectorChunk.where``: ``(path, offsets)``, one offset a row), or is None."""
        found, extra, spk2utt = self.found, self.extra, self.spk2utt
        single = bool(self.sizes.size) and bool((self.sizes == 1).all())
        for chunk in iter_vector_chunks(vector_rspecifier):
            keys = chunk.keys
            self.num_vectors += len(keys)
            if single:  # only asked when every list has one utterance (utt2spk given?)
                self.speaker_keys += sum(key in spk2utt for key in keys)
            slots = _lookup(self.position, keys)
            keep = slots >= 0
            if not keep.all():
                slots = slots[keep]
                keys = [key for key, kept in zip(keys, keep.tolist()) if kept]
            if not slots.size:
                continue
            if found[slots].any() or np.unique(slots).size < slots.size:
                seen = set()
                key = next(k for k, s in zip(keys, slots.tolist()) if found[s] or s in seen
                           or seen.add(s))
                raise KaldiError("Duplicate key '%s' in %s" % (key, vector_rspecifier))
            X = chunk.X if keep.all() else chunk.X[keep]
            where = getattr(chunk, "where", None)
            if where is not None and not keep.all():
                where = (where[0], where[1][keep])
            yield (slots, X, keys, where) if located else (slots, X, keys)
            found[slots] = True
            if extra:  # utterances listed more than once count once per listing, as in Kaldi
                again = [i for i, key in enumerate(keys) if key in extra]
                for i in again:
                    more = np.asarray(extra[keys[i]], dtype=np.intp)
                    rows = np.repeat(X[i:i + 1], more.size, axis=0), [keys[i]] * more.size
                    yield (more,) + rows + ((None if where is None else (
                        where[0], np.repeat(where[1][i:i + 1], more.size)),)
                        if located else ())
                    found[more] = True

    def finish(self, log, vector_rspecifier):
        """After ``vectors``: KaldiError when the tables do not match
        (``check_lookup_counts``), else Kaldi's warnings for listed utterances without a
        vector; returns the SpeakerCounts."""
        check_lookup_counts(self.spk2utt, self.label.size, int(np.count_nonzero(self.found)),
                            self.num_vectors, lambda: self.speaker_keys, self.spk2utt_name,
                            vector_rspecifier)
        return _report_missing(log, self.spk2utt, self.found, self.sizes)


def _report_missing(log, spk2utt, found, sizes):
    """Kaldi's warnings for listed utterances without a vector, in spk2utt order."""
    num_utt_err = int(found.size - np.count_nonzero(found))
    num_spk_err = 0
    if num_utt_err:
        ends = np.cumsum(sizes)
        warned = 0
        for (spk, utts), end in zip(spk2utt.items(), ends.tolist()):
            here = found[end - len(utts):end]
            if here.all():
                continue
            for utt, ok in zip(utts, here.tolist()):
                if not ok:
                    if warned < MAX_WARNINGS:
                        log.warning("No iVector present in input for utterance %s" % utt)
                    warned += 1
            if not here.any():
                log.warning("Not producing output for speaker %s since no utterances had "
                            "iVectors" % spk)
                num_spk_err += 1
        if num_utt_err > MAX_WARNINGS:
            log.warning("... and %d more utterances with no iVector (%d in all; not listed)"
                        % (num_utt_err - MAX_WARNINGS, num_utt_err))
    return SpeakerCounts(len(spk2utt) - num_spk_err, num_spk_err,
                         int(np.count_nonzero(found)), num_utt_err)
