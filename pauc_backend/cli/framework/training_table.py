"""train-pauc-auto's training table, read in one pass (a pipe is fine), held in memory only
when it is small (issue 35).

The speaker table (spk2utt, or utt2spk: speaker_tables.as_spk2utt) is read first, and its
listings numbered in its order (labelled_stream.ListedSlots: a slot each). The cross-fitting
subset (models.crossfit.crossfit_rows: at most --max-speakers speakers, at most
--max-vectors of their vectors) is drawn from those slots BEFORE any vector is read, so the
vectors are read once, in any order, and each goes straight to

* its slot of the table: an array when the table (listed utterances x dimension x 4 bytes)
  is at most the in-memory bound; else, when every vector is a binary float-vector record of
  a regular file (an ``ark:`` file, an ``scp:`` of ``file:offset`` entries), nothing but
  where it is: the final training reads it there again (archive_rows.ArchiveRows, as
  Kaldi's script readers seek to an entry; nothing is written); else (a pipe, standard
  input, text or double vectors) an unlinked temporary file in $TMPDIR (kaldi_io.temp_dir:
  an unusable TMPDIR is an ERROR) (models.row_table.SpooledRows: 4 bytes a dimension a
  vector of disk), read back later a block at a time with explicit reads (never
  memory-mapped); a table that turns out not to be re-readable half-way is spooled from
  there, its rows so far copied from their archives;
* when the table is not held, also the subset's own array, which is all the cross-fitting
  reads.

Either way the rows are in spk2utt order, exactly what the whole table held and reordered
gave before, so the model is the same, byte for byte, held, re-read or spooled. A listed
utterance
without a vector gets Kaldi's warnings (and a speaker left without any is dropped); a
subset slot without a vector leaves the subset smaller (its sentence says how many of the
drawn vectors were found). Duplicate keys, NaN or infinity, and speaker and vector tables
that do not match are one ERROR each (labelled_stream.ListedSlots).
"""

import numpy as np

from pauc_backend.cli.framework.archive_rows import MAX_FILES, ArchiveRows
from pauc_backend.cli.framework.dev_trials import read_durations
from pauc_backend.cli.framework.labelled_stream import ListedSlots
from pauc_backend.cli.framework.speaker_tables import read_spk2utt
from pauc_backend.errors import KaldiError
from pauc_backend.process import release_free_memory
from pauc_backend.kaldi_io import read_token_table
from pauc_backend.kaldi_io.temp_dir import temp_dir
from pauc_backend.models.crossfit import crossfit_rows
from pauc_backend.models.auto.table import TrainingTable
from pauc_backend.models.blocked import first_nonfinite
from pauc_backend.models.row_table import RowTable, SpooledRows

__all__ = ["read_training_table"]


def read_training_table(log, vector_rspecifier, spk2utt_rspecifier, draw, in_memory_mb,
                        utt2group="", utt2dur=""):
    """The TrainingTable (models.auto.table) of train-pauc-auto's inputs (module doc), its
    subset drawn with ``draw`` = (max_speakers, max_vectors, seed); held in memory up to
    ``in_memory_mb`` MB of float32 vectors, else spooled. ``utt2group``/``utt2dur``: the
    table's groups and ``durations`` (seconds, dev_trials.read_durations), in its row order.
    KaldiError naming a bad input."""
    spk2utt, spk2utt_name = read_spk2utt(log, spk2utt_rspecifier)
    listed = ListedSlots(spk2utt, spk2utt_name)
    num_slots = listed.label.size
    subset, text = crossfit_rows(listed.label, *draw)      # before any vector is read
    in_subset = np.full(num_slots, -1, dtype=np.intp)
    in_subset[subset] = np.arange(subset.size)
    store = subset_X = None
    try:
        for slots, X, keys, where in listed.vectors(vector_rspecifier, located=True):
            bad = first_nonfinite(X)
            if bad is not None:
                raise KaldiError("Vector %s in %s contains NaN or Inf"
                                 % (keys[bad], vector_rspecifier))
            if store is None:
                store, subset_X = _store(log, num_slots, X.shape[1], subset.size,
                                         in_memory_mb, vector_rspecifier, where is not None)
            if subset_X is None:
                store[slots] = X
                continue
            if isinstance(store, ArchiveRows) and (where is None
                                                   or not store.locate(slots, *where)):
                store = _spool_instead(log, store, vector_rspecifier)
            if isinstance(store, SpooledRows):
                store.write(slots, X)
            mine = in_subset[slots]
            kept = mine >= 0
            subset_X[mine[kept]] = X[kept]
        if not listed.num_vectors:
            raise KaldiError("No vectors in %s" % vector_rspecifier)
        listed.finish(log, vector_rspecifier)
    except (KaldiError, ValueError) as err:
        if isinstance(store, RowTable):
            store.close()
        if isinstance(err, KaldiError):
            raise
        raise KaldiError("Cannot read %s: %s" % (vector_rspecifier, err)) from None
    found = listed.found
    present = np.flatnonzero(found)
    X = store
    if present.size < num_slots:            # listed utterances without a vector
        X = store[present] if subset_X is None else store.view(present)
    _, y = np.unique(listed.label[present], return_inverse=True)
    rows = subset
    if not found[subset].all():
        have = found[subset]
        rows = np.searchsorted(present, subset[have])
        text = "%s listed, %d of them with a vector" % (text, rows.size)
        if subset_X is not None:
            subset_X = subset_X[have]
    groups = durations = None
    utts = listed.utterances() if utt2group or utt2dur else None
    if utt2group:
        table = read_token_table(utt2group)
        missing = next((utts[s] for s in present if utts[s] not in table), None)
        if missing is not None:
            raise KaldiError("Utterance %s has no group in %s" % (missing, utt2group))
        groups = np.array([table[utts[s]] for s in present])
    if utt2dur:
        durations = read_durations(utt2dur, [utts[s] for s in present], "training utterance")
    table = TrainingTable(X, y.reshape(-1), groups, (rows, text, tuple(map(int, draw))),
                          subset_X)
    table.durations = durations
    del listed, spk2utt, found, present, utts
    release_free_memory()       # the keys' memory, before the cross-fitting forks workers
    return table


def _store(log, num_rows, dim, subset_rows, in_memory_mb, rspecifier, located):
    """(the table's store, the subset's array or None): an array of ``num_rows`` x ``dim``
    float32 when it is at most ``in_memory_mb`` MB, else (``located``: the first vectors
    say where they are in their archive) an ArchiveRows, or a SpooledRows, and the subset's
    own array."""
    size = 4 * num_rows * dim
    if size <= in_memory_mb * 2 ** 20:
        return np.empty((num_rows, dim), dtype=np.float32), None
    what = "the training vectors of %s" % rspecifier
    if located:
        log.log("The training table (%d listed vectors x %d: %d MB) is beyond "
                "--in-memory-mb=%g: its rows are read again from the archives they are in "
                "when needed (nothing is copied); the cross-fitting subset (%d vectors, %d "
                "MB) is held" % (num_rows, dim, size >> 20, in_memory_mb, subset_rows,
                                 (4 * subset_rows * dim) >> 20))
        return ArchiveRows(num_rows, dim, what), np.empty((subset_rows, dim), np.float32)
    log.log("The training table (%d listed vectors x %d: %d MB) is beyond --in-memory-mb=%g: "
            "spooled to an unlinked temporary file in %s and read back in blocks; the "
            "cross-fitting subset (%d vectors, %d MB) is held" % (
                num_rows, dim, size >> 20, in_memory_mb, temp_dir(what), subset_rows,
                (4 * subset_rows * dim) >> 20))
    return _spool(num_rows, dim, what), np.empty((subset_rows, dim), dtype=np.float32)


def _spool(num_rows, dim, what):
    try:
        return SpooledRows(num_rows, dim, what, temp_dir(what))
    except ValueError as err:
        raise KaldiError(str(err)) from None


def _spool_instead(log, archive, rspecifier):
    """A SpooledRows holding the rows ``archive`` (an ArchiveRows) located so far, read from
    their archives; the archive's files closed."""
    spool = _spool(archive.shape[0], archive.dim, archive.what)
    log.log("Not every vector of %s is a float-vector record of a regular file (or they are "
            "in more than %d files): the training table is spooled to an unlinked temporary "
            "file in %s instead of read again from its archives" % (
                rspecifier, MAX_FILES, spool.directory))
    rows = archive.located()
    try:
        for start in range(0, rows.size, 8192):
            part = rows[start:start + 8192]
            spool.write(part, archive.read_rows(part))
    except ValueError:
        spool.close()
        raise
    finally:
        archive.close()
    return spool
