"""Archive scanning (util/kaldi-table-inl.h SequentialTableReaderArchiveImpl) and the numpy
fast path for binary float-vector (FV) archives.

``iter_archive`` parses any archive record by record and names the file, key and byte offset
of an error; ``iter_archive_source`` does so for an rxfilename, mapping a regular file and
parsing anything else (a pipe, standard input, a device, a FIFO) while it arrives
(``iter_archive_stream``), so an endless input fails once a key or line passes its bound
(``lines.MAX_LINE_BYTES``, ``MAX_LIST_LINE_BYTES``) instead of filling the memory.
``scan_fv_block`` parses runs of ``key \\0BFV \\x04<dim> floats`` records in bulk (headers
verified at once, rows copied with one strided view); ``read_fv_stream`` and ``read_fv_buffer``
read a whole table with it, falling back to the record parser for anything else.
"""

import mmap
import os
import re
import struct

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import codec, memory, streams
from pauc_backend.kaldi_io.codec import ByteCursor, token_match
from pauc_backend.kaldi_io.holders import HOLDERS, decode_token
from pauc_backend.kaldi_io.lines import UTF8_BOM, parse_growing, regular_file
from pauc_backend.kaldi_io.numpy_files import check_not_numpy

_WS = re.compile(rb"[ \t\n\v\f\r]*")
_TOKEN = re.compile(rb"[^ \t\n\v\f\r]+")
_NOT_KEY = np.zeros(256, dtype=bool)  # bytes never in a key: whitespace and ASCII controls
_NOT_KEY[list(range(33)) + [127]] = True  # incl. space: Kaldi's `is >> key` skips/stops at it
_CONTROL = re.compile(rb"[\x00-\x1f\x7f]")
FV_HEADER = b"\0BFV \x04"
_GATHER_BLOCK = 2048
_STREAM_RESERVE = 1 << 31  # bytes of address space reserved for rows read from a pipe/stdin

# -- archive parsing -----------------------------------------------------------------------------

def read_record(cur, holder):
    """One archive record at ``cur.pos`` (after whitespace): ``(key, value, key_offset)``, or
    None at the end of the data; KaldiError naming the key and byte offset if it is bad.
    ``cur.pos`` is left after the record (SequentialTableReaderArchiveImpl::Next)."""
    data = cur.data
    cur.key = None
    cur.pos = _WS.match(data, cur.pos).end()
    if cur.pos >= len(data):
        return None
    key_pos = cur.pos
    if cur.base + key_pos == 0:             # the first record: a NumPy file given as an archive?
        check_not_numpy(data, 0, streams.printable(cur.name), "a Kaldi archive")
    match = token_match(cur, key_pos, "key")
    if match.group().startswith(UTF8_BOM):
        raise KaldiError("Invalid archive: the key at byte %d of %s starts with a UTF-8 "
                         "byte-order mark (bytes EF BB BF), which Kaldi would keep in the key; "
                         "save the file without one" % (cur.base + key_pos,
                                                        streams.printable(cur.name)))
    key = decode_token(match.group(), cur, key_pos)
    cur.pos = match.end()
    control = _CONTROL.search(match.group())
    if control:
        raise KaldiError("Invalid archive: the key %r at byte %d of %s contains a "
                         "control character (binary data where a key was expected?)"
                         % (key[:40], cur.base + key_pos, streams.printable(cur.name)))
    cur.key = key
    sep = data[cur.pos:cur.pos + 1]
    if sep in (b" ", b"\t"):
        cur.pos += 1
    elif sep != b"\n":
        raise cur.error("Invalid archive: expected space after key, got %s" % (
            "end of input" if not sep else repr(sep)))
    value_pos = cur.pos
    try:
        return key, holder.read(cur), key_pos
    except KaldiError as err:
        hint = _script_hint(data, value_pos, key, cur.name)
        if not hint:
            raise
        raise KaldiError("%s%s" % (err, hint)) from None


_SCRIPT_TARGET = re.compile(rb"[^ \t\n\v\f\r]+:[0-9]+(\[[^\]]*\])?\Z")


def _script_hint(data, pos, key, name):
    """When the bad record's line reads like a script entry (``<key> <file>:<offset>`` or
    ``<key> <command> |``), the hint to read the file as ``scp:``; else ''."""
    end = data.find(b"\n", pos, pos + 4096)
    line = bytes(data[pos:end if end >= 0 else pos + 4096]).strip()
    if not (_SCRIPT_TARGET.match(line) or (line.endswith(b"|") and len(line) > 1)):
        return ""
    return ("; this is a script file (lines <key> <rxfilename>, e.g. '%s %s'), not an archive: "
            "read it as scp:%s, not ark:" % (key, codec.show(line, 80),
                                             streams.printable(name)))


def iter_archive(data, start, name, holder, permissive=False, base=0):
    """Yield (key, value, key_offset) from an archive; KaldiError (or stop, if permissive).

    ``base`` is added to byte offsets in messages (when ``data`` is the tail of a stream).
    """
    cur = ByteCursor(data, start, name)
    cur.base = base
    while True:
        try:
            record = read_record(cur, holder)
        except KaldiError as err:
            if permissive:
                codec.warn("Stopped reading archive %s after an error (permissive mode): %s" % (
                    streams.printable(name), err))
                return
            raise
        if record is None:
            return
        yield record


def iter_archive_stream(stream, name, holder, permissive=False, base=0, pending=b"",
                        chunk_bytes=streams.CHUNK_BYTES):
    """``iter_archive`` of a binary stream parsed while it arrives (Kaldi's
    SequentialTableReader on a pipe): memory holds the unparsed tail and one read. A record
    cut by the end of what has arrived is parsed again with more input, until EOF or until
    the same failure persists for ``MAX_LIST_LINE_BYTES`` more bytes (``lines.parse_growing``):
    an endless key or line is an error, not a read without end. ``pending``: bytes already
    taken from the stream; ``base``: the stream's offset in its file, for messages;
    ``chunk_bytes``: the size of one read (doubled while one record needs more)."""
    data, pos, state, eof = bytes(pending), 0, [], False

    def record_at(data):
        cur = ByteCursor(data, pos, name)
        cur.base = base
        return read_record(cur, holder), cur.pos

    while True:
        try:
            done = parse_growing(data, record_at, eof, state)
        except KaldiError as err:
            if not permissive:
                raise
            codec.warn("Stopped reading archive %s after an error (permissive mode): %s" % (
                streams.printable(name), err))
            return
        if done is not None:
            if done[0] is None:          # only whitespace left, at EOF
                return
            (key, value, key_pos), pos = done
            state = []
            yield key, value, base + key_pos
            continue
        block = stream.read(max(chunk_bytes, len(data) - pos))
        eof = not block
        base += pos
        data, pos = data[pos:] + block, 0


def iter_archive_source(rx, holder, permissive=False):
    """``(key, value, key_offset)`` of the archive ``rx``: a regular file mapped and parsed
    (``iter_archive``), anything else parsed while it arrives (``iter_archive_stream``)."""
    if regular_file(rx):
        data, start = streams.read_all(rx)
        try:
            yield from iter_archive(data, start, rx, holder, permissive)
        finally:
            streams.release(data)
        return
    kind, what = streams.classify_rxfilename(rx)
    with streams.open_input(rx) as stream:
        yield from iter_archive_stream(stream, rx, holder, permissive,
                                       what[1] if kind == "offset" else 0)


def new_rows(count, dim):
    """An uninitialised float32 (count, dim) array in the memory _Rows uses."""
    rows = _Rows(dim, count)
    rows.reserve(count)  # populates the pages
    rows.n = count
    return rows.result()


def gather_rows(data, offsets, dim, out=None):
    """Rows of ``dim`` float32 starting at byte ``offsets`` of ``data``, as one (n, dim) array."""
    if out is None:
        out = new_rows(len(offsets), dim)
    if len(offsets) == 0 or dim == 0:
        return out
    offsets = np.asarray(offsets, dtype=np.int64)
    steps = np.diff(offsets)
    if len(offsets) > 1 and (steps == steps[0]).all() and steps[0] >= 4 * dim:
        out[:] = np.ndarray((len(offsets), dim), dtype="<f4", buffer=data,
                            offset=int(offsets[0]), strides=(int(steps[0]), 4))
        return out
    breaks = np.flatnonzero(steps[1:] != steps[:-1]) + 1
    if len(breaks) * 16 < len(offsets) and (steps >= 4 * dim).all():
        # long runs of equal steps (keys of one length in a row): one strided copy per run
        bounds = np.concatenate([[0], breaks, [len(offsets)]])
        for begin, end in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            step = int(offsets[begin + 1] - offsets[begin]) if end - begin > 1 else 4 * dim
            out[begin:end] = np.ndarray((end - begin, dim), dtype="<f4", buffer=data,
                                        offset=int(offsets[begin]), strides=(step, 4))
        return out
    # Any offsets: view the buffer as float32 at each of the 4 byte alignments, as overlapping
    # windows of dim floats, and take rows from those; in blocks so temporaries stay small.
    size = len(data)
    windows = []
    for shift in range(4):
        count = max((size - shift) // 4, 0)
        flat = np.ndarray((count,), dtype="<f4", buffer=data, offset=min(shift, size))
        windows.append(np.lib.stride_tricks.as_strided(flat, shape=(max(count - dim + 1, 0), dim),
                                                       strides=(4, 4), writeable=False))
    shifts = offsets % 4
    for begin in range(0, len(offsets), _GATHER_BLOCK):
        block = slice(begin, begin + _GATHER_BLOCK)
        block_shifts = shifts[block]
        block_offsets = offsets[block]
        for shift in range(4):
            rows = np.flatnonzero(block_shifts == shift)
            if rows.size == len(block_shifts):
                out[block] = windows[shift][(block_offsets - shift) // 4]
            elif rows.size:
                out[begin + rows] = windows[shift][(block_offsets[rows] - shift) // 4]
    return out


class _Rows:
    """A growing float32 (n, dim) array for rows parsed from a stream.

    Backed by a private anonymous mmap: reserving generous capacity costs address space only,
    growing and the final trim are mremap calls (no copy), and the pages are ordinary 4 kB ones
    (numpy would ask for transparent huge pages, whose faults stall badly on a busy machine).
    """

    def __init__(self, dim, capacity):
        self.dim = dim
        self.row_bytes = 4 * dim
        self.capacity = max(int(capacity), 16)
        self.n = 0
        self.populated = 0
        self.mm = self._map(self.capacity)

    def _map(self, rows):
        size = max(rows * self.row_bytes, 1)
        while True:
            try:
                return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
            except (OSError, ValueError):
                if size <= (1 << 24):
                    raise
                size //= 4
                self.capacity = max(size // max(self.row_bytes, 1), 16)

    def _view(self, begin, count):
        return np.frombuffer(self.mm, np.float32, count * self.dim,
                             begin * self.row_bytes).reshape(count, self.dim)

    def _resize(self, rows):
        self.populated = min(self.populated, self.n * self.row_bytes)
        try:
            self.mm.resize(max(rows * self.row_bytes, 1))
        except (BufferError, OSError, SystemError, ValueError):
            bigger = mmap.mmap(-1, max(rows * self.row_bytes, 1), flags=mmap.MAP_PRIVATE)
            keep = min(rows, self.n) * self.row_bytes
            bigger[:keep] = self.mm[:keep]
            self.mm = bigger
        self.capacity = rows

    def reserve(self, extra):
        need = self.n + extra
        if need > self.capacity:
            self._resize(max(need, 2 * self.capacity))
        if need * self.row_bytes > self.populated:
            # fault in the next 32 MB (or all that is needed) in one call rather than page by
            # page while copying
            start = self.populated
            self.populated = min(max(need * self.row_bytes, start + (1 << 25)), len(self.mm))
            memory.populate(self.mm, start, self.populated - start)
        return self._view(self.n, extra)

    def result(self):
        if self.n == 0 or self.dim == 0:
            return np.zeros((self.n, self.dim), dtype=np.float32)
        if self.n < self.capacity:
            self._resize(self.n)
        return self._view(0, self.n)


def fv_dim(data, pos, end):
    """The dim of the FV record at ``pos`` (after whitespace), or None if it is not one."""
    pos = _WS.match(data, pos, end).end()
    match = _TOKEN.match(data, pos, end)
    if match is None:
        return None
    head = bytes(data[match.end():min(match.end() + 11, end)])
    if len(head) < 11 or head[:1] not in (b" ", b"\t") or head[1:7] != FV_HEADER:
        return None
    dim = struct.unpack("<i", head[7:])[0]
    return dim if dim >= 0 else None


def _decode_keys(blobs):
    """Keys (bytes) to str in one decode; None if a key is not UTF-8 or has a control
    character (the record-by-record parser then reports it)."""
    joined = b"\n".join(blobs)
    if _CONTROL.search(joined.replace(b"\n", b"")):
        return None
    try:
        text = joined.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text.split("\n") if blobs else []


def scan_fv_block(data, start, end, dim, rows, keys):
    """Parse whole ``key \\0BFV \\x04<dim> floats`` records of data[start:end] into rows/keys.

    Runs of records with equal-length keys are verified and copied in bulk (one strided copy);
    other records are walked one header at a time. Returns ``(stop, irregular)``: where parsing
    stopped and whether the record there is not an FV record of this dim (else it is incomplete
    or the block ended); the record-by-record parser takes over from ``stop``.
    """
    header = FV_HEADER + struct.pack("<i", dim)
    spaced_header = b" " + header
    expected = np.frombuffer(header, np.uint8)
    row_bytes = 4 * dim
    token_match, ws_match = _TOKEN.match, _WS.match
    pending_starts, pending_keys, pending_offsets = [], [], []

    def flush():
        """Move the walked records into rows/keys; False if a key is not UTF-8."""
        if pending_offsets:
            decoded = _decode_keys(pending_keys)
            if decoded is None:
                return False
            gather_rows(data, pending_offsets, dim, rows.reserve(len(pending_offsets)))
            rows.n += len(pending_offsets)
            keys.extend(decoded)
            del pending_starts[:], pending_keys[:], pending_offsets[:]
        return True

    def fixed_run(pos):
        """Bulk-parse records with the key length of the one at ``pos``; new position, count."""
        match = token_match(data, pos, end)
        if match is None or data[match.end():match.end() + 11] != spaced_header:
            return pos, 0
        key_len = match.end() - pos
        stride = key_len + 11 + row_bytes
        window, total = 64, 0
        while True:
            count = min(window, (end - pos) // stride)
            if count == 0:
                return pos, total
            recs = np.frombuffer(data, np.uint8, count * stride, pos).reshape(count, stride)
            good = (recs[:, key_len + 1:key_len + 11] == expected).all(axis=1)
            good &= recs[:, key_len] == 32
            good &= ~_NOT_KEY[recs[:, :key_len]].any(axis=1)
            bad = np.flatnonzero(~good)
            run = int(bad[0]) if bad.size else count
            raw = recs[:run, :key_len].tobytes()
            if not raw.isascii():
                return pos, total
            text = raw.decode("ascii")
            keys.extend(text[i:i + key_len] for i in range(0, run * key_len, key_len))
            rows.reserve(run)[:] = np.ndarray((run, dim), dtype="<f4", buffer=data,
                                              offset=pos + key_len + 11, strides=(stride, 4))
            rows.n += run
            pos += run * stride
            total += run
            if run < count:
                return pos, total
            window *= 2

    pos = start
    scalar_budget = 0
    while pos < end:
        if scalar_budget <= 0:
            if not flush():
                return pending_starts[0], True
            pos, total = fixed_run(pos)
            scalar_budget = 256 if total < 16 else 1
            if pos >= end:
                break
        scalar_budget -= 1
        key_pos = ws_match(data, pos, end).end()
        if key_pos >= end:
            pos = key_pos
            break
        key_end = token_match(data, key_pos, end).end()
        complete = key_end + 11 + row_bytes <= end
        if complete or key_end + 11 <= end:
            if data[key_end:key_end + 11] not in (spaced_header, b"\t" + header):
                return (pos, True) if flush() else (pending_starts[0], True)
        if not complete:
            break  # more data may come
        pending_starts.append(key_pos)
        pending_keys.append(bytes(data[key_pos:key_end]))
        pending_offsets.append(key_end + 11)
        pos = key_end + 11 + row_bytes
    if not flush():
        return pending_starts[0], True
    return pos, False


def fill_from(fd, view, have):
    """Read from ``fd`` until ``view`` is full or EOF; return the new fill level and EOF flag."""
    size = len(view)
    while have < size:
        got = os.readv(fd, [view[have:]])
        if got == 0:
            return have, True
        have += got
    return have, False


def read_fv_stream(stream, name, ragged, permissive=False):
    """Float-vector archive from a pipe or stdin, parsed chunk by chunk while it is read."""
    where = [0]
    try:
        return _read_fv_stream(stream, name, ragged, permissive, where)
    except MemoryError:
        # a record declaring more than the memory holds (2^31 floats on a pipe): Kaldi would
        # try to read it as well; the ERROR names the archive and where its records stood
        raise KaldiError("Out of memory reading archive %s (%d bytes of it parsed: a record "
                         "there or the table does not fit)" % (streams.printable(name), where[0])
                         ) from None


def _read_fv_stream(stream, name, ragged, permissive, where):
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None
    pending = stream.peek(0) if hasattr(stream, "peek") else b""
    pending = stream.read(len(pending)) if pending else b""
    if fd is None:
        data = pending + stream.read()
        return read_fv_buffer(data, 0, name, ragged, permissive)
    buf = bytearray(max(streams.CHUNK_BYTES, len(pending)))
    buf[:len(pending)] = pending
    view = memoryview(buf)
    have, eof = fill_from(fd, view, len(pending))
    dim = fv_dim(buf, 0, have)
    if dim is None:
        view.release()
        if eof:
            return read_fv_buffer(bytes(buf[:have]), 0, name, ragged, permissive)
        return _finish_generic(iter_archive_stream(stream, name, HOLDERS["vector"], permissive,
                                                   0, bytes(buf[:have])),
                               name, [], None, ragged)
    rows = _Rows(dim, _STREAM_RESERVE // (4 * dim + 16))
    keys = []
    consumed = 0
    while True:
        stop, irregular = scan_fv_block(buf, 0, have, dim, rows, keys)
        where[0] = consumed + stop
        if irregular or (eof and stop < have):
            view.release()
            rest = bytes(buf[stop:have])
            records = (iter_archive(rest, 0, name, HOLDERS["vector"], permissive, consumed + stop)
                       if eof else iter_archive_stream(stream, name, HOLDERS["vector"],
                                                       permissive, consumed + stop, rest))
            return _finish_generic(records, name, keys, rows.result(), ragged)
        consumed += stop
        leftover = have - stop
        if eof:
            break
        view[:leftover] = view[stop:have]
        if leftover == len(buf):
            view.release()
            buf.extend(bytes(len(buf)))
            view = memoryview(buf)
        have, eof = fill_from(fd, view, leftover)
    view.release()
    return keys, rows.result()


def read_fv_buffer(data, start, name, ragged, permissive=False):
    """Float-vector archive from a whole buffer (an mmap of a file, or bytes)."""
    dim = fv_dim(data, start, len(data))
    if dim is None:
        return _finish_generic(iter_archive(data, start, name, HOLDERS["vector"], permissive),
                               name, [], None, ragged)
    rows = _Rows(dim, (len(data) - start) // (12 + 4 * dim) + 1)
    keys = []
    stop, _ = scan_fv_block(data, start, len(data), dim, rows, keys)
    X = rows.result()
    if _WS.match(data, stop).end() >= len(data):
        return keys, X
    return _finish_generic(iter_archive(data, stop, name, HOLDERS["vector"], permissive),
                           name, keys, X, ragged)


def _finish_generic(records, name, keys, X, ragged):
    """The rest of an archive (``records``: ``iter_archive`` or ``iter_archive_stream``)
    appended to (keys, X)."""
    more_keys, more_rows = [], []
    for key, value, _ in records:
        more_keys.append(key)
        more_rows.append(value)
    if X is None or X.shape[0] == 0:
        return stack_vectors(keys + more_keys, more_rows, streams.printable(name), ragged)
    if not more_rows:
        return keys, X
    rows = list(X) + more_rows
    return stack_vectors(keys + more_keys, rows, streams.printable(name), ragged)


def stack_vectors(keys, rows, name, ragged=False):
    if not rows:
        return keys, np.zeros((0, 0), dtype=np.float32)
    first = rows[0].size
    if any(row.size != first for row in rows):
        if ragged:
            return keys, [np.asarray(row, dtype=np.float32) for row in rows]
        bad = next(i for i, row in enumerate(rows) if row.size != first)
        raise KaldiError("Vectors in %s have different dimensions: '%s' has dim %d but '%s' has "
                         "dim %d" % (name, keys[0], first, keys[bad], rows[bad].size))
    return keys, np.array(rows, dtype=np.float32).reshape(len(rows), -1)
