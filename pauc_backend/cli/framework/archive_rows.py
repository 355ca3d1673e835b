"""A training table read again, when needed, from the archive files it was read from.

train-pauc-auto reads its table once and, beyond the in-memory bound, needs its rows again
for the final training's passes (models.auto.table). When every vector it read was a binary
float-vector record of a regular file (an ``ark:`` file, or an ``scp:`` of ``file:offset``
entries, as Kaldi's ``xvector.scp``), the reader says where each row's floats are
(``VectorChunk.where``) and ``ArchiveRows`` reads them there again, with positional reads
of neighbouring records in one span, as Kaldi's script readers seek to an entry: nothing is
spooled (models.row_table.SpooledRows writes the whole table to $TMPDIR and reads it back).
A pipe, standard input, text or double-precision vectors, or more than ``MAX_FILES`` archive
files are spooled instead.

The files stay open from the first read; each read checks that a file's size and
modification time are those it had then and that every record still starts with the
float-vector header of the table's dimension before its floats: a file changed under the run
is one error naming it, never different rows (the first pass checked the values finite).
"""

import os
import struct

import numpy as np

from pauc_backend.kaldi_io.archive import FV_HEADER, gather_rows
from pauc_backend.models.row_table import RowTable

__all__ = ["ArchiveRows", "MAX_FILES"]

MAX_FILES = 256          # archive files held open; a table in more is spooled
_HEADER = len(FV_HEADER) + 4
_GAP = 1 << 16           # records closer than this (bytes between) are read in one span
_SPAN = 1 << 24          # a span reads at most this many bytes (its temporary)


class ArchiveRows(RowTable):
    """``num_rows`` float32 rows of ``dim`` values, each at a byte offset of one of the
    archive files it was read from (module doc); ``locate`` records where rows are.
    ``what`` names the table in error messages (ValueError)."""

    def __init__(self, num_rows, dim, what="the table"):
        self.what = what
        self.dim = int(dim)
        self._num_rows = int(num_rows)
        self._index = None
        self._file = np.full(self._num_rows, -1, dtype=np.int32)
        self._offset = np.zeros(self._num_rows, dtype=np.int64)
        self._paths, self._fds, self._stats, self._ids = [], [], [], {}
        self._header = np.frombuffer(FV_HEADER + struct.pack("<i", self.dim), np.uint8)
        self._owner = True

    @property
    def files(self):
        return len(self._paths)

    def located(self):
        """The rows whose place is known so far (increasing)."""
        return np.flatnonzero(self._file >= 0)

    def locate(self, positions, path, offsets):
        """Rows ``positions`` are the float-vector records of the regular file ``path`` whose
        floats start at byte ``offsets``. False (nothing recorded) when that would hold more
        than MAX_FILES files open or the file cannot be opened: spool instead."""
        i = self._ids.get(path)
        if i is None:
            if len(self._paths) >= MAX_FILES:
                return False
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                return False
            self._ids[path] = i = len(self._paths)
            self._paths.append(path)
            self._fds.append(fd)
            self._stats.append(_stamp(os.fstat(fd)))
        self._file[positions] = i
        self._offset[positions] = offsets
        return True

    def _changed(self, i, why):
        return ValueError("%s: %s changed since it was read (%s)"
                          % (self.what, self._paths[i], why))

    def _read_sorted(self, wanted, target):
        files, offsets = self._file[wanted], self._offset[wanted]
        if (files < 0).any():
            raise IndexError("ArchiveRows: a row that was never read")
        record = 4 * self.dim
        for i in np.unique(files):
            if _stamp(os.fstat(self._fds[i])) != self._stats[i]:
                raise self._changed(i, "its size or modification time")
            mine = np.flatnonzero(files == i)
            order = np.argsort(offsets[mine], kind="stable")
            at = offsets[mine][order]
            cuts = np.flatnonzero(np.diff(at) > record + _GAP) + 1
            bounds = [0] + cuts.tolist() + [at.size]
            for a, b in zip(bounds[:-1], bounds[1:]):
                while a < b:           # a span of at most _SPAN bytes (one record at least)
                    end = max(a + 1, int(np.searchsorted(at[a:b], at[a] + _SPAN - record))
                              + a)
                    end = min(end, b)
                    self._read_span(i, at[a:end], target, mine[order[a:end]])
                    a = end

    def _read_span(self, i, at, target, rows):
        """The records whose floats start at ``at`` (ascending) of file ``i`` into
        ``target[rows]``, read as one span (their headers checked)."""
        first = int(at[0]) - _HEADER
        size = int(at[-1]) + 4 * self.dim - first
        data = bytearray(size)
        view = memoryview(data)
        have = 0
        try:
            while have < size:
                got = os.preadv(self._fds[i], [view[have:]], first + have)
                if got <= 0:
                    raise self._changed(i, "cut short")
                have += got
        except OSError as err:
            raise ValueError("%s: cannot read %s again: %s"
                             % (self.what, self._paths[i], err.strerror or err)) from None
        finally:
            view.release()
        codes = np.frombuffer(data, np.uint8)
        where = at - first
        if not (codes[(where - _HEADER)[:, None] + np.arange(_HEADER)] == self._header).all():
            raise self._changed(i, "no float vector of dimension %d where one was" % self.dim)
        target[rows] = gather_rows(data, where, self.dim)

    def close(self):
        if self._owner:
            for fd in self._fds:
                os.close(fd)
            self._fds = []


def _stamp(st):
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
