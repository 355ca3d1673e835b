"""Float-vector tables read in bounded chunks, as Kaldi's SequentialTableReader streams them.

``iter_vector_chunks(rspecifier)`` yields ``VectorChunk`` s in table order; memory holds one
input buffer (about ``CHUNK_BYTES``, more only for a single record larger than that) and one
chunk of rows, whatever the table's size, and a chunk is yielded as soon as its bytes have
arrived (a reader of a pipe sees its first vectors before the writer has finished).

Binary float-vector records ``key \\0BFV \\x04<dim> <dim floats>`` come in runs of equal key
length in the usual archive; such a run is checked with numpy (separator, header and key bytes
of every record at once) and handed out as strided views into the input buffer: rows
``(n, dim)`` and keys ``(n, key_len)`` uint8, no copy, no Python object per vector. Other FV
records go through ``archive.scan_fv_block`` (bulk, row copies) and anything else (text, DV,
odd whitespace, errors) through the record parser ``archive.read_record``, which names the
file, key and byte offset of a bad record exactly as the whole-table reader does.

Script files (``scp:``) are streamed line chunk by line chunk; each chunk's targets are read
with ``pread`` (one read per run of neighbouring records), never by mapping the whole archive.
"""

import os
import re
import select
import struct

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import codec, streams
from pauc_backend.kaldi_io.archive import (FV_HEADER, fv_dim, gather_rows, read_record,
                                           scan_fv_block)
from pauc_backend.kaldi_io.codec import ByteCursor
from pauc_backend.kaldi_io.holders import HOLDERS
from pauc_backend.kaldi_io.lines import MAX_LIST_LINE_BYTES, iter_line_chunks, regular_file
from pauc_backend.kaldi_io.scripts import (FileCache, parse_offset_script, parse_script,
                                          read_script_entry, split_targets)
from pauc_backend.kaldi_io.specifiers import parse_rspecifier
from pauc_backend.kaldi_io.tables import TableWriter

__all__ = ["VectorChunk", "VectorChunkWriter", "iter_vector_chunks", "CHUNK_BYTES"]

CHUNK_BYTES = 1 << 22
_WS = re.compile(rb"[ \t\n\v\f\r]*")
_TOKEN = re.compile(rb"[^ \t\n\v\f\r]+")
_NOT_KEY = np.zeros(256, dtype=bool)  # whitespace, controls and non-ASCII: not in a fast key
_NOT_KEY[list(range(33)) + list(range(127, 256))] = True
_FIRST_WINDOW = 64      # records checked before a run is taken as a fixed-stride run
_VECTOR = HOLDERS["vector"]
_SCRIPT_CHUNK = 1 << 16  # script bytes per step (~2,000 lines: ~4 MB of 512-dim rows)


class VectorChunk:
    """Consecutive vectors of one table, all of one dim.

    ``X``: float32 ``(n, dim)`` (may be a read-only strided view into the reader's buffer: valid
    until the next chunk is asked for). ``key_array``: ``(n, key_len)`` uint8 ASCII keys when
    every key has the same length (else None); ``keys``: the keys as str (decoded on first use).
    ``raw``: the chunk's input bytes when they are exactly the canonical binary records of
    (keys, X) (``key \\0BFV \\x04<dim> floats``, one space), so a copy may write them as they are.
    ``where``: ``(path, offsets)`` when the rows are binary float-vector records of the regular
    file ``path`` whose floats start at byte ``offsets`` (int64, one per row), so the rows can
    be read there again (an archive file's runs of canonical records, a script's entries);
    else None.
    """

    __slots__ = ("X", "key_array", "raw", "_keys", "where")

    def __init__(self, X, keys=None, key_array=None, raw=None, where=None):
        self.X, self.key_array, self.raw, self._keys = X, key_array, raw, keys
        self.where = where

    def __len__(self):
        return self.X.shape[0]

    @property
    def dim(self):
        return self.X.shape[1]

    @property
    def keys(self):
        if self._keys is None:
            width = self.key_array.shape[1]
            text = self.key_array.tobytes().decode("ascii")
            self._keys = [text[i:i + width] for i in range(0, len(text), width)]
        return self._keys

    def key_bytes(self):
        """The keys as a list of bytes."""
        if self.key_array is not None:
            blob = self.key_array.tobytes()
            width = self.key_array.shape[1]
            return [blob[i:i + width] for i in range(0, len(blob), width)]
        return [key.encode() for key in self.keys]


# -- the input buffer --------------------------------------------------------------------------

class _Input:
    """A stream read into one reusable buffer: ``buf[:have]`` is unparsed input that starts at
    byte ``consumed`` of the stream."""

    def __init__(self, stream, chunk_bytes):
        try:
            self.fd = stream.fileno()
        except (AttributeError, OSError, ValueError):
            self.fd = None
        self.stream = stream
        pending = stream.peek(0) if hasattr(stream, "peek") and self.fd is not None else b""
        pending = stream.read(len(pending)) if pending else b""
        self.buf = bytearray(max(chunk_bytes, 2 * len(pending), 64))
        self.buf[:len(pending)] = pending
        self.have = len(pending)
        self.consumed = 0
        self.eof = False
        self._pollable = True
        self.failure = None      # (record offset, message) of a parse failure, bytes read then

    def _ready(self):
        """True if the descriptor has data now (so a pipe's chunk is not held back waiting)."""
        if not self._pollable:
            return True
        try:
            return bool(select.select([self.fd], [], [], 0)[0])
        except (OSError, ValueError):
            self._pollable = False
            return True

    def refill(self, keep_from):
        """Drop ``buf[:keep_from]``, then read until the buffer is full, the input ends, or (once
        something new arrived) no more input is waiting. Grows the buffer if a record that
        starts at ``keep_from == 0`` fills it all."""
        left = self.have - keep_from
        if keep_from:
            self.buf[:left] = self.buf[keep_from:self.have]
            self.consumed += keep_from
        elif left == len(self.buf):
            # a new buffer: views into the old one (the last chunk's) may still be alive
            bigger = bytearray(2 * len(self.buf))
            bigger[:left] = self.buf
            self.buf = bigger
        self.have = left
        view = memoryview(self.buf)
        try:
            got_any = False
            while self.have < len(self.buf):
                if got_any and self.fd is not None and not self._ready():
                    break
                if self.fd is not None:
                    count = os.readv(self.fd, [view[self.have:]])
                else:
                    count = self.stream.readinto(view[self.have:]) or 0
                if count == 0:
                    self.eof = True
                    break
                self.have += count
                got_any = True
        finally:
            view.release()


class _Rows:
    """A reusable float32 row buffer for ``scan_fv_block`` (``reserve``/``n`` interface)."""

    def __init__(self):
        self.array = np.empty(0, np.float32)
        self.n = 0
        self.dim = 0

    def reset(self, dim, capacity):
        need = dim * capacity
        if self.array.size < need:
            self.array = np.empty(max(need, 2 * self.array.size), np.float32)
        self.dim, self.n = dim, 0

    def reserve(self, extra):
        return self.array[self.n * self.dim:(self.n + extra) * self.dim].reshape(extra, self.dim)

    def result(self):
        return self.array[:self.n * self.dim].reshape(self.n, self.dim)


def _fixed_run(buf, pos, have):
    """The run of canonical FV records with the key length of the one at ``pos``:
    ``(count, key_len, dim)``; count 0 if that record is not canonical or not complete."""
    match = _TOKEN.match(buf, pos, have)
    if match is None:
        return 0, 0, 0
    key_len = match.end() - pos
    head = buf[match.end():match.end() + 11]
    if len(head) < 11 or head[0] != 32 or head[1:7] != FV_HEADER:
        return 0, 0, 0
    dim = struct.unpack("<i", head[7:])[0]
    if dim < 0:
        return 0, 0, 0
    stride = key_len + 11 + 4 * dim
    expected = np.frombuffer(b" " + bytes(head[1:]), np.uint8)
    total = 0
    window = _FIRST_WINDOW
    while True:
        count = min(window, (have - pos) // stride - total)
        if count <= 0:
            return total, key_len, dim
        recs = np.frombuffer(buf, np.uint8, count * stride, pos + total * stride)
        recs = recs.reshape(count, stride)
        good = (recs[:, key_len:key_len + 11] == expected).all(axis=1)
        good &= ~_NOT_KEY[recs[:, :key_len]].any(axis=1)
        run = count if good.all() else int(np.argmin(good))
        total += run
        if run < count:
            return total, key_len, dim
        window *= 4


def _chunk_from_run(buf, pos, count, key_len, dim, locate=None):
    """The chunk of a run; ``locate``: (path, the file offset of ``buf[0]``) when the input
    is a regular file (the chunk's ``where``)."""
    stride = key_len + 11 + 4 * dim
    X = np.ndarray((count, dim), dtype="<f4", buffer=buf, offset=pos + key_len + 11,
                   strides=(stride, 4))
    keys = np.ndarray((count, key_len), dtype=np.uint8, buffer=buf, offset=pos,
                      strides=(stride, 1))
    raw = memoryview(buf)[pos:pos + count * stride]
    where = None
    if locate is not None:
        first = locate[1] + pos + key_len + 11
        where = (locate[0], first + stride * np.arange(count, dtype=np.int64))
    return VectorChunk(X, key_array=keys, raw=raw, where=where)


def _generic_chunks(source, pos, name, permissive, state):
    """Records at ``pos`` parsed one by one until a fixed-stride FV run starts, the buffer's
    complete records are used up, or the input ends. Yields chunks (one dim each); sets
    ``state[0]`` to the position to continue from and ``state[1]`` True to stop reading."""
    buf, have = source.buf, source.have
    data = bytes(buf[pos:have])
    cur = ByteCursor(data, 0, name)
    cur.base = source.consumed + pos
    keys, rows = [], []
    stop = False
    while True:
        start = cur.pos
        if start >= len(data) or (start and fv_dim(data, start, len(data)) is not None):
            break               # binary float vectors again: back to the bulk parsers
        try:
            record = read_record(cur, _VECTOR)
        except KaldiError as err:
            if not source.eof and not _stuck(source, cur.base + start, err):
                cur.pos = start
                break           # maybe only cut by the buffer's end: read more first
            if not permissive:
                raise
            codec.warn("Stopped reading archive %s after an error (permissive mode): %s" % (
                streams.printable(name), err))
            stop = True
            break
        if record is None:
            break
        if cur.pos >= len(data) and not source.eof:
            cur.pos = start     # it may go on past the buffer (a text vector, a token)
            break
        key, value = record[0], record[1]
        if rows and value.size != rows[0].size:
            yield VectorChunk(np.array(rows, np.float32).reshape(len(rows), -1), keys=keys)
            keys, rows = [], []
        keys.append(key)
        rows.append(value)
    if rows:
        yield VectorChunk(np.array(rows, np.float32).reshape(len(rows), -1), keys=keys)
    state[0], state[1] = pos + cur.pos, stop


def _stuck(source, offset, err):
    """Whether the record at byte ``offset`` failed with ``err`` already, before the last
    ``MAX_LIST_LINE_BYTES`` of input arrived: no bounded key or line can still complete it (an
    endless line, binary data where text was expected), so ``err`` is final."""
    read = source.consumed + source.have
    failure = (offset, str(err))
    if source.failure is None or source.failure[0] != failure:
        source.failure = (failure, read)
        return False
    return read - source.failure[1] > MAX_LIST_LINE_BYTES


def iter_archive_chunks(stream, name, permissive=False, chunk_bytes=CHUNK_BYTES, start=0,
                        path=None):
    """Chunks of a float-vector archive read from a binary ``stream`` (see the module doc);
    ``start``: the stream's first byte's offset, for messages; ``path``: the regular file the
    stream reads, whose runs of canonical records then say ``where`` they are."""
    where = [0]
    try:
        source = _Input(stream, chunk_bytes)
        source.consumed = start
        yield from _parse_archive(source, name, permissive, where, path)
    except OSError as err:       # a failing read (EIO): only reads happen in here
        raise KaldiError("Failed to read archive %s: %s" % (streams.printable(name),
                                                           err.strerror or err)) from None
    except MemoryError:
        # a record declaring more than the memory holds (a header of 2^31 floats on a pipe):
        # Kaldi's reader would try to read it all as well; here the ERROR names it
        pos = where[0]
        key = _TOKEN.match(source.buf, pos, source.have)
        raise KaldiError("Out of memory reading archive %s: the record at byte %d%s does not fit"
                         % (streams.printable(name), source.consumed + pos,
                            " (key '%s')" % key.group().decode("utf-8", "replace")[:200]
                            if key else "")) from None


def _parse_archive(source, name, permissive, where, path=None):
    """iter_archive_chunks' loop; ``where[0]``: the buffer offset of the record being read."""
    rows = _Rows()
    pos = 0
    parsed_any = source.have == 0   # bytes the stream's buffer already held: parse them first
    while True:
        if parsed_any:
            where[0] = pos
            source.refill(pos)
        parsed_any = True
        pos = where[0] = 0
        buf, have = source.buf, source.have
        while True:
            pos = where[0] = _WS.match(buf, pos, have).end()
            if pos >= have:
                break
            count, key_len, dim = _fixed_run(buf, pos, have)
            if count:
                yield _chunk_from_run(buf, pos, count, key_len, dim,
                                      None if path is None else (path, source.consumed))
                pos += count * (key_len + 11 + 4 * dim)
                continue
            dim = fv_dim(buf, pos, have)
            # rows for the whole records the buffer holds: none when the first is incomplete
            # (a header may declare 2^31 floats; the record parser reports that one)
            whole = (have - pos) // (12 + 4 * dim) if dim is not None else 0
            if whole:
                rows.reset(dim, whole)
                keys = []
                stop, irregular = scan_fv_block(buf, pos, have, dim, rows, keys)
                if rows.n:
                    yield VectorChunk(rows.result(), keys=keys)
                if stop > pos:
                    pos = stop
                    continue
            state = [pos, False]
            yield from _generic_chunks(source, pos, name, permissive, state)
            if state[1]:
                return
            if state[0] == pos:
                break           # the record at pos needs more input
            pos = state[0]
        if source.eof:
            if pos < have and _WS.match(buf, pos, have).end() < have:
                # only reached for a record cut by the end of the input: report it
                state = [pos, False]
                yield from _generic_chunks(source, pos, name, permissive, state)
            return


# -- scripts -----------------------------------------------------------------------------------

def _script_pieces(rx):
    """(keys, targets) of a script, a chunk of lines at a time."""
    for piece, line in iter_line_chunks(rx, _SCRIPT_CHUNK, what="script file"):
        parsed = parse_offset_script(piece, 0)
        if parsed is not None:
            keys, path, offsets = parsed
            yield keys, [path] * len(keys), offsets
            continue
        keys, targets = parse_script(piece, 0, rx, first_line=line)
        yield keys, targets, None


def _read_span(fd, start, size):
    out = bytearray(size)
    view = memoryview(out)
    have = 0
    while have < size:
        got = os.preadv(fd, [view[have:]], start + have)
        if got == 0:
            break
        have += got
    view.release()
    del out[have:]
    return out


def _fv_rows_at(paths, offsets, handles):
    """Rows of the FV records at ``offsets`` of plain files, read with pread in spans of
    neighbouring records; None if an entry is not a readable FV record of one dim."""
    if len(set(paths)) != 1:
        return None
    path = paths[0]
    try:
        if streams.classify_rxfilename(path)[0] != "file":
            return None
        if path not in handles:
            streams.finish_interrupted_commit(path)
            handles[path] = os.open(path, os.O_RDONLY)
        fd = handles[path]
        head = _read_span(fd, int(offsets[0]), 10)
    except (KaldiError, OSError):
        return None
    if len(head) < 10 or head[:6] != FV_HEADER:
        return None
    dim = struct.unpack("<i", bytes(head[6:]))[0]
    if dim < 0:
        return None
    record = 10 + 4 * dim
    in_order = bool((np.diff(offsets) > 0).all())  # the usual script: rows written in order
    order = np.arange(len(offsets)) if in_order else np.argsort(offsets, kind="stable")
    sorted_offsets = offsets if in_order else offsets[order]
    X = np.empty((len(offsets), dim), np.float32)
    expected = np.frombuffer(head, np.uint8)
    # spans: break where the gap to the next record is more than a few records
    gaps = np.flatnonzero(np.diff(sorted_offsets) > 4 * record + 4096) + 1
    bounds = np.concatenate([[0], gaps, [len(offsets)]]).tolist()
    for begin, end in zip(bounds[:-1], bounds[1:]):
        first = int(sorted_offsets[begin])
        size = int(sorted_offsets[end - 1]) - first + record
        try:
            span = _read_span(fd, first, size)
        except OSError:
            return None
        where = sorted_offsets[begin:end] - first
        if len(span) < size:
            return None
        codes = np.frombuffer(span, np.uint8)
        if not (codes[where[:, None] + np.arange(10)] == expected).all():
            return None
        if in_order:
            gather_rows(span, where + 10, dim, out=X[begin:end])
        else:
            X[order[begin:end]] = gather_rows(span, where + 10, dim,
                                              out=np.empty((end - begin, dim), np.float32))
    return X


def _by_file(pieces):
    """The script's pieces, those whose ``file:offset`` targets name several files (a Kaldi
    ``xvector.scp`` over ``xvector.1.ark`` ... ``xvector.N.ark``) cut into runs of one file
    each, so each run is read as one (``_fv_rows_at``) rather than entry by entry."""
    for keys, targets, offsets in pieces:
        split = split_targets(targets) if offsets is None else None
        if split is None:
            yield keys, targets, offsets
            continue
        paths, offsets = split
        cuts = [i for i in range(1, len(paths)) if paths[i] != paths[i - 1]]
        for a, b in zip([0] + cuts, cuts + [len(paths)]):
            yield keys[a:b], paths[a:b], offsets[a:b]


def iter_script_chunks(rx, permissive=False):
    """Chunks of the vectors a script points at, in script order."""
    handles = {}
    cache = FileCache()
    try:
        for keys, targets, offsets in _by_file(_script_pieces(rx)):
            if offsets is not None:
                X = _fv_rows_at(targets, offsets, handles)
                if X is not None:
                    yield VectorChunk(X, keys=keys, where=(
                        (targets[0], np.asarray(offsets, dtype=np.int64) + len(FV_HEADER) + 4)
                        if regular_file(targets[0]) else None))
                    continue
            if offsets is not None:      # not FV records at those offsets: one by one
                targets = ["%s:%d" % pair for pair in zip(targets, offsets.tolist())]
            chunk_keys, rows = [], []
            for key, target in zip(keys, targets):
                value = read_script_entry(cache, target, _VECTOR, key, rx, permissive)
                if value is None:
                    continue
                if rows and value.size != rows[0].size:
                    yield VectorChunk(np.array(rows, np.float32).reshape(len(rows), -1),
                                      keys=chunk_keys)
                    chunk_keys, rows = [], []
                chunk_keys.append(key)
                rows.append(value)
            if rows:
                yield VectorChunk(np.array(rows, np.float32).reshape(len(rows), -1),
                                  keys=chunk_keys)
            cache.close()
    finally:
        cache.close()
        for fd in handles.values():
            os.close(fd)


# -- the public reader -------------------------------------------------------------------------

def iter_vector_chunks(rspecifier, ragged=False, chunk_bytes=CHUNK_BYTES):
    """``VectorChunk`` s of a float-vector table in table order (bounded memory).

    Without ``ragged`` a vector whose dim differs from the first one's is an error naming both
    keys (as ``read_vector_table``); with it, chunks of different dims are yielded as they come.
    """
    spec = parse_rspecifier(rspecifier)
    if spec.kind == "scp":
        chunks = iter_script_chunks(spec.filename, spec.permissive)
        name = spec.filename
    else:
        chunks = _archive_chunks(spec.filename, spec.permissive, chunk_bytes)
        name = streams.printable(spec.filename)
    if ragged:
        yield from chunks
        return
    first = None
    for chunk in chunks:
        if first is None:
            first = (chunk.keys[0] if chunk.key_array is None else
                     chunk.key_array[0].tobytes().decode("ascii"), chunk.dim)
        elif chunk.dim != first[1]:
            raise KaldiError("Vectors in %s have different dimensions: '%s' has dim %d but '%s' "
                             "has dim %d" % (name, first[0], first[1], chunk.keys[0], chunk.dim))
        yield chunk


def _archive_chunks(rx, permissive, chunk_bytes):
    kind, what = streams.classify_rxfilename(rx)
    start = what[1] if kind == "offset" else 0  # messages give offsets in the file
    path = None
    if kind in ("file", "offset") and regular_file(rx):
        path = what if kind == "file" else what[0]
    with streams.open_input(rx) as stream:
        yield from iter_archive_chunks(stream, rx, permissive, chunk_bytes, start, path)


# -- writing -----------------------------------------------------------------------------------

class VectorChunkWriter:
    """A float-vector TableWriter fed chunk by chunk, opened at the first vector (so an empty
    input leaves the output untouched). Use as a context manager: committed on success,
    aborted on an exception."""

    def __init__(self, wspecifier):
        self.wspecifier = wspecifier
        self.writer = None
        self.num_written = 0

    def write(self, chunk, Y=None, keep=None):
        """Write ``Y`` (default: the chunk's own rows, copied byte for byte when possible)
        under the chunk's keys; ``keep``: the rows of the chunk to write (``Y`` then holds
        just those rows)."""
        if self.writer is None:
            self.writer = TableWriter(self.wspecifier, "vector")
        raw = chunk.raw if Y is None and keep is None else None
        if Y is None:
            Y = chunk.X if keep is None else chunk.X[keep]
        key_array, keys_b = chunk.key_array, None
        if keep is not None:
            if key_array is not None:
                key_array = key_array[keep]
            else:
                keys_b = [chunk.keys[row].encode() for row in np.asarray(keep).tolist()]
        elif key_array is None:
            keys_b = [key.encode() for key in chunk.keys]
        self.writer.write_vector_block(Y, keys_b, key_array, raw)
        self.writer.flush()  # the chunk leaves a pipe now, while the input may still arrive
        self.num_written += Y.shape[0]

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.writer is None:
            return
        if exc_type is None:
            self.writer.close()
        else:
            self.writer.abort()
