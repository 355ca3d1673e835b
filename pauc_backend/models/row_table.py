"""A table of float32 rows spooled to an unlinked temporary file and read back on demand.

``SpooledRows`` holds a training table that is too large to keep in memory (the automatic
back-end's beyond its bound, models.auto.table): rows are written at their positions as they
arrive (``write``), in any order, and read back with explicit positional reads (``pread``)
a block at a time; nothing is memory-mapped, so only the rows asked for occupy memory (the
file's pages stay in the kernel's page cache, which is not the process's resident memory).
The file is created unlinked in the temporary directory (``$TMPDIR``, else /tmp: Python's
``tempfile``), so it disappears when closed or when the process ends, however it ends, and
nothing in a shared directory can find or steer it. Disk: 4 bytes a dimension a row.

It reads like an array where the passes over a table (models.blocked, class_stats, lda,
backend_pipeline) index one: ``shape``, ``ndim``, ``dtype``, ``len``, ``X[a:b]`` and
``X[index array]`` (any shape of integer array, any order; rows ``(..., dim)`` float32, a
new array each time), so those passes need no second code path; ``blocked.is_table`` tells
it from an array. ``view(rows)`` is the table of some of its rows (e.g. those that were
found, when some positions were never written). ``RowTable`` is that array-like reading
over any store that reads rows at sorted positions (``_read_sorted``): the spool here, the
archives a table was read from (cli.framework.archive_rows).
"""

import os
import tempfile

import numpy as np

__all__ = ["RowTable", "SpooledRows"]

_GAP_ROWS = 64           # neighbouring rows closer than this are read in one span
_SPAN_ROWS = 8192        # a span covers at most this many rows (its temporary: 16 MB at 512)


def _spans(wanted):
    """(a, b) bounds of the spans of sorted positions ``wanted``: cut where two neighbours
    are more than _GAP_ROWS apart, and so that a span covers at most _SPAN_ROWS rows."""
    gaps = np.flatnonzero(wanted[1:] - wanted[:-1] > _GAP_ROWS) + 1
    a, n = 0, wanted.size
    while a < n:
        b = int(np.searchsorted(wanted, wanted[a] + _SPAN_ROWS, side="left"))
        g = int(np.searchsorted(gaps, a, side="right"))
        if g < gaps.size:
            b = min(b, int(gaps[g]))
        yield a, b
        a = b


class RowTable:
    """Float32 rows of ``dim`` values read on demand (module doc); a subclass reads the rows at
    sorted physical positions (``_read_sorted``) and sets ``dim``, ``_num_rows`` and
    ``_index`` (None, or the physical position of each logical row: a view's)."""

    dim = 0
    _num_rows = 0
    _index = None
    _owner = True

    # -- array-like ---------------------------------------------------------------------------
    @property
    def shape(self):
        return (self._num_rows if self._index is None else self._index.size, self.dim)

    ndim = 2
    dtype = np.dtype(np.float32)

    def __len__(self):
        return self.shape[0]

    @property
    def nbytes(self):
        return 4 * self.dim * self.shape[0]

    def __getitem__(self, key):
        if isinstance(key, slice):
            return self.read_rows(np.arange(*key.indices(self.shape[0])))
        if isinstance(key, (int, np.integer)):
            return self.read_rows(np.array([int(key)]))[0]
        index = np.asarray(key)
        if not np.issubdtype(index.dtype, np.integer):
            raise TypeError("%s: rows are read by slice or integer index arrays"
                            % type(self).__name__)
        return self.read_rows(index.reshape(-1)).reshape(index.shape + (self.dim,))

    def read_rows(self, rows):
        """float32 (len(rows), dim): the rows at logical positions ``rows`` (1-D, any order,
        repeats allowed), read in the order of their physical positions."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        out = np.empty((rows.size, self.dim), dtype=np.float32)
        if not rows.size:
            return out
        count = self.shape[0]
        if rows.min() < 0 or rows.max() >= count:
            raise IndexError("%s: row index out of range (%d rows)"
                             % (type(self).__name__, count))
        physical = rows if self._index is None else self._index[rows]
        ascending = physical.size == 1 or bool((physical[1:] >= physical[:-1]).all())
        order = None if ascending else np.argsort(physical, kind="stable")
        wanted = physical if order is None else physical[order]
        target = out if order is None else np.empty_like(out)
        self._read_sorted(wanted, target)
        if order is not None:
            out[order] = target
        return out

    def _read_sorted(self, wanted, target):
        """Rows at the physical positions ``wanted`` (ascending, repeats allowed) into
        ``target``."""
        raise NotImplementedError

    def blocks(self, size):
        """``(begin, rows begin:begin+size)`` in order (a new array each)."""
        for begin in range(0, self.shape[0], size):
            yield begin, self[begin:begin + size]

    def view(self, rows):
        """The table of rows ``rows`` (logical positions of this one) of the same store."""
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        rows = np.asarray(rows, dtype=np.int64)
        out._index = rows if self._index is None else self._index[rows]
        out._owner = False
        return out

    def _physical_rows(self):
        return self._num_rows if self._index is None else int(self._index.max(initial=-1)) + 1

    def close(self):
        """Release the store (a view does not own it)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SpooledRows(RowTable):
    """``num_rows`` float32 rows of ``dim`` values in an unlinked temporary file (module doc).
    ``what`` names the table in error messages. OSError of the file system becomes a
    ValueError naming the temporary directory."""

    def __init__(self, num_rows, dim, what="the table", directory=None):
        self.what = what
        self.dim = int(dim)
        self._num_rows = int(num_rows)
        self._index = None                       # a view's physical positions
        self.directory = directory or tempfile.gettempdir()
        try:
            self._file = tempfile.TemporaryFile(prefix="pauc-backend-rows.", dir=directory)
            os.ftruncate(self._file.fileno(), 4 * self.dim * self._num_rows)
        except OSError as err:
            raise ValueError(self._problem("create", err)) from None
        self._owner = True

    def _problem(self, doing, err):
        return ("cannot %s the temporary file of %s in %s (4 bytes a dimension a vector: "
                "%d MB): %s" % (doing, self.what, self.directory,
                                (4 * self.dim * self._physical_rows()) >> 20,
                                err.strerror or err))

    # -- writing and reading ------------------------------------------------------------------
    def write(self, positions, X):
        """Write the rows of X (float32 (n, dim)) at ``positions`` (n distinct integers, any
        order; runs of consecutive positions in one write each)."""
        positions = np.asarray(positions, dtype=np.int64)
        X = np.ascontiguousarray(X, dtype=np.float32)
        if self._index is not None or X.shape != (positions.size, self.dim):
            raise ValueError("SpooledRows.write: %s rows for %d positions of dimension %d"
                             % (X.shape, positions.size, self.dim))
        order = None
        if positions.size > 1 and not (positions[1:] > positions[:-1]).all():
            order = np.argsort(positions, kind="stable")
            positions, X = positions[order], X[order]
        cuts = np.flatnonzero(positions[1:] != positions[:-1] + 1) + 1
        bounds = [0] + cuts.tolist() + [positions.size]
        fd = self._file.fileno()
        try:
            for a, b in zip(bounds[:-1], bounds[1:]):
                view = memoryview(X[a:b]).cast("B")
                offset, done = int(positions[a]) * 4 * self.dim, 0
                while done < view.nbytes:
                    done += os.pwrite(fd, view[done:], offset + done)
        except OSError as err:
            raise ValueError(self._problem("write", err)) from None

    def _read_sorted(self, wanted, target):
        for a, b in _spans(wanted):
            first, last = int(wanted[a]), int(wanted[b - 1])
            if last - first + 1 == b - a:           # consecutive rows: straight into place
                self._read_span(first, target[a:b])
            else:
                span = self._read_span(first, np.empty((last - first + 1, self.dim),
                                                       np.float32))
                target[a:b] = span[wanted[a:b] - first]

    def _read_span(self, first, out):
        view = memoryview(out).cast("B")
        offset, have = first * 4 * self.dim, 0
        try:
            while have < view.nbytes:
                got = os.preadv(self._file.fileno(), [view[have:]], offset + have)
                if got <= 0:
                    raise OSError(0, "the file was cut short")
                have += got
        except OSError as err:
            raise ValueError(self._problem("read", err)) from None
        finally:
            view.release()
        return out

    def close(self):
        if self._owner:
            self._file.close()
