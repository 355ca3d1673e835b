"""Large output arrays in private anonymous memory, faulted in up front.

On a busy virtual machine first-touch page faults dominate the cost of producing a few hundred
megabytes of output (numpy's huge-page advice makes them stall unpredictably). Memory mapped
privately and populated in one call (MADV_POPULATE_WRITE, Linux >= 5.14) is cheaper and
steadier; elsewhere it silently degrades to ordinary page faults.
"""

import mmap
import sys

import numpy as np

MADV_POPULATE_WRITE = 23
_POPULATE = [sys.platform.startswith("linux")]


def populate(mm, start, length):
    """Fault in mm[start:start+length] in one call (no-op where unsupported)."""
    if not _POPULATE[0] or length <= 0:
        return
    try:
        mm.madvise(MADV_POPULATE_WRITE, start, length)
    except (OSError, ValueError, AttributeError):
        _POPULATE[0] = False


def fresh_array(shape, dtype):
    """A zero-filled, writable, C-contiguous array backed by a populated private mapping."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    size = count * dtype.itemsize
    if size < (1 << 20):
        return np.zeros(shape, dtype=dtype)
    mm = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
    populate(mm, 0, size)
    return np.frombuffer(mm, dtype=dtype, count=count).reshape(shape)


def lazy_array(shape, dtype):
    """A zero-filled, writable, C-contiguous array in its own anonymous mapping whose pages are
    faulted in only when written (room to grow costs address space, not memory) and returned
    to the system when the array goes."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    mm = mmap.mmap(-1, max(count * dtype.itemsize, 1), flags=mmap.MAP_PRIVATE)
    return np.frombuffer(mm, dtype=dtype, count=count).reshape(shape)


class GrowingArray:
    """A 1-D array appended to chunk by chunk in its own anonymous mapping, grown by mremap
    (``mmap.resize``): no list of chunks and no final copy, and pages past the end are never
    touched, so the memory is the data itself. ``array()`` is the result (a view)."""

    def __init__(self, dtype, capacity=1 << 16):
        self.dtype = np.dtype(dtype)
        self.size = 0
        self._mm = mmap.mmap(-1, max(capacity * self.dtype.itemsize, mmap.PAGESIZE),
                             flags=mmap.MAP_PRIVATE)

    def append(self, values):
        values = np.ascontiguousarray(values, dtype=self.dtype)
        start = self.size * self.dtype.itemsize
        end = start + values.nbytes
        if end > len(self._mm):
            self._mm.resize(max(end, 2 * len(self._mm)))
        self._mm[start:end] = values.view(np.uint8).data
        self.size += values.size

    def array(self):
        return np.frombuffer(self._mm, dtype=self.dtype, count=self.size)
