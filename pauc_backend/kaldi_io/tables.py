"""Kaldi tables (util/kaldi-table*.h, kaldi-holder*.h): archives, scripts, readers and writers.

Holders: ``vector`` (float32, Kaldi's BaseFloat vector tables, always written as FV),
``double_vector``, ``matrix`` (float32, FM), ``double_matrix``, ``int32`` (``num_utts.ark``),
``token`` (utt2spk) and ``token_vector`` (spk2utt).

Reading loads the whole input; binary float-vector archives and scripts take a numpy fast path
(record headers verified in bulk, rows gathered with one strided copy), everything else goes
through the per-record parser, which names the file, key and byte offset of any error.
"""

import mmap
import os
import re
import struct

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import _memory, codec, streams
from pauc_backend.kaldi_io.codec import ByteCursor
from pauc_backend.kaldi_io.specifiers import parse_rspecifier, parse_wspecifier

_WS = re.compile(rb"[ \t\n\v\f\r]*")
_TOKEN = re.compile(rb"[^ \t\n\v\f\r]+")
_BLANKS = re.compile(rb"[ \t\v\f\r]*")
_IS_WS = np.zeros(256, dtype=bool)
_IS_WS[list(b" \t\n\v\f\r")] = True
_NOT_KEY = np.zeros(256, dtype=bool)  # bytes never in a key: whitespace and ASCII controls
_NOT_KEY[list(range(33)) + [127]] = True  # incl. space: Kaldi's `is >> key` skips/stops at it
_C_WS = " \t\n\v\f\r"  # isspace() in the C locale: what Kaldi splits script lines at
_SCRIPT_LINE = re.compile("[%s]*([^%s]+)(?:[%s]+(.*?))?[%s]*$" % ((_C_WS,) * 4), re.S)
_CONTROL_TEXT = re.compile("[\x00-\x1f\x7f]")
_EXTRA_SPACE = re.compile("[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f"
                          "\u3000]")  # what str.split() splits at beyond C whitespace
_ODD_CONTROL = np.zeros(256, dtype=bool)  # controls that are not C whitespace (e.g. 0x1C-0x1F)
_ODD_CONTROL[list(range(32)) + [127]] = True
_ODD_CONTROL[list(b" \t\n\v\f\r")] = False
_CONTROL = re.compile(rb"[\x00-\x1f\x7f]")
_FV_HEADER = b"\0BFV \x04"
_GATHER_BLOCK = 2048
_WRITE_BLOCK = 8192
_STREAM_RESERVE = 1 << 31  # bytes of address space reserved for rows read from a pipe/stdin


# -- holders -------------------------------------------------------------------------------------

def _end_of_line(cur, what):
    """After a text int/token: blanks, then a newline (consumed) or end of input."""
    cur.pos = _BLANKS.match(cur.data, cur.pos).end()
    nxt = cur.data[cur.pos:cur.pos + 1]
    if nxt == b"\n":
        cur.pos += 1
    elif nxt:
        raise cur.error("Failed to read %s: expected newline, got %r" % (what, nxt))


class _Holder:
    name = None

    def read(self, cur):
        raise NotImplementedError

    def encode(self, value, binary):
        raise NotImplementedError


class _VectorHolder(_Holder):
    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype

    def read(self, cur):
        binary = codec.read_binary_header(cur)
        return codec.read_vector_obj(cur, binary, self.dtype)

    def encode(self, value, binary):
        value = np.asarray(value, dtype=self.dtype)
        if value.ndim != 1:
            raise KaldiError("Cannot write an array of shape %s as a vector" % (value.shape,))
        if not binary:
            return codec.format_text_vector(value)
        token = b"FV " if self.dtype == np.float32 else b"DV "
        return (b"\0B" + token + struct.pack("<bi", 4, value.size)
                + value.astype(self.dtype.newbyteorder("<")).tobytes())


class _MatrixHolder(_Holder):
    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype

    def read(self, cur):
        binary = codec.read_binary_header(cur)
        return codec.read_matrix_obj(cur, binary, self.dtype)

    def encode(self, value, binary):
        value = np.asarray(value, dtype=self.dtype)
        if value.ndim != 2:
            raise KaldiError("Cannot write an array of shape %s as a matrix" % (value.shape,))
        if not binary:
            return codec.format_text_matrix(value)
        token = b"FM " if self.dtype == np.float32 else b"DM "
        return (b"\0B" + token + struct.pack("<bibi", 4, value.shape[0], 4, value.shape[1])
                + np.ascontiguousarray(value, dtype=self.dtype.newbyteorder("<")).tobytes())


class _Int32Holder(_Holder):
    """BasicHolder<int32>: binary ``\\0B\\x04<int32>`` or text ``5 \\n``."""
    name = "int32"

    def read(self, cur):
        if codec.read_binary_header(cur):
            return codec.read_int32(cur, True)
        cur.pos = _BLANKS.match(cur.data, cur.pos).end()
        if cur.data[cur.pos:cur.pos + 1] in (b"\n", b""):
            raise cur.error("Failed to read int32: found newline but expected a number")
        value = codec.read_int32(cur, False)
        _end_of_line(cur, "int32")
        return value

    def encode(self, value, binary):
        value = int(value)
        if not -2 ** 31 <= value < 2 ** 31:
            raise KaldiError("Integer %d does not fit in int32" % value)
        return b"\0B" + struct.pack("<bi", 4, value) if binary else b"%d \n" % value


class _TokenHolder(_Holder):
    """TokenHolder (utt2spk): one token then newline; text only."""
    name = "token"

    def read(self, cur):
        cur.skip_whitespace()
        match = _TOKEN.match(cur.data, cur.pos)
        if match is None:
            raise cur.error("Failed to read token: end of input")
        cur.pos = match.end()
        _end_of_line(cur, "token")
        return _decode(match.group(), cur, match.start())

    def encode(self, value, binary):
        _check_token(value, "token")
        return value.encode() + b"\n"


class _TokenVectorHolder(_Holder):
    """TokenVectorHolder (spk2utt): the rest of the line split at whitespace; text only."""
    name = "token_vector"

    def read(self, cur):
        end = cur.data.find(b"\n", cur.pos)
        end = len(cur.data) if end < 0 else end
        line = bytes(cur.data[cur.pos:end])
        start = cur.pos
        cur.pos = min(end + 1, len(cur.data))
        return [_decode(token, cur, start) for token in line.split()]

    def encode(self, value, binary):
        if isinstance(value, str):
            raise KaldiError("A token_vector value must be a list of tokens, not a string")
        for token in value:
            _check_token(token, "token")
        return "".join(token + " " for token in value).encode() + b"\n"


HOLDERS = {
    "vector": _VectorHolder("vector", np.dtype(np.float32)),
    "double_vector": _VectorHolder("double_vector", np.dtype(np.float64)),
    "matrix": _MatrixHolder("matrix", np.dtype(np.float32)),
    "double_matrix": _MatrixHolder("double_matrix", np.dtype(np.float64)),
    "int32": _Int32Holder(),
    "token": _TokenHolder(),
    "token_vector": _TokenVectorHolder(),
}


def _holder(name):
    try:
        return HOLDERS[name]
    except KeyError:
        raise ValueError("unknown holder %r (one of %s)" % (name, ", ".join(HOLDERS))) from None


def _decode(raw, cur, pos):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise KaldiError("Invalid key or token (not valid UTF-8) at byte %d of %s: %r" % (
            cur.base + pos + err.start, streams.printable(cur.name), bytes(raw[:40]))) from None


def _check_token(token, what="key"):
    """Kaldi's IsToken: non-empty, no whitespace, no control characters."""
    if not isinstance(token, str) or not token or any(
            c.isspace() or ord(c) < 32 or ord(c) == 127 for c in token):
        raise KaldiError("Invalid %s %r: must be non-empty, without whitespace" % (what, token))


_BAD_KEY_CHAR = re.compile(r"[\s\x00-\x1f\x7f]")


def _check_keys(keys):
    """_check_token over many keys at once."""
    if not all(isinstance(k, str) and k for k in keys) or _BAD_KEY_CHAR.search("".join(keys)):
        for key in keys:
            _check_token(key)


# -- archive parsing -----------------------------------------------------------------------------

def _iter_ark(data, start, name, holder, permissive=False, base=0):
    """Yield (key, value, key_offset) from an archive; KaldiError (or stop, if permissive).

    ``base`` is added to byte offsets in messages (when ``data`` is the tail of a stream).
    """
    cur = ByteCursor(data, start, name)
    cur.base = base
    size = len(data)
    while True:
        cur.key = None
        cur.pos = _WS.match(data, cur.pos).end()
        if cur.pos >= size:
            return
        key_pos = cur.pos
        try:
            match = _TOKEN.match(data, key_pos)
            key = _decode(match.group(), cur, key_pos)
            cur.pos = match.end()
            control = _CONTROL.search(match.group())
            if control:
                raise KaldiError("Invalid archive: the key %r at byte %d of %s contains a "
                                 "control character (binary data where a key was expected?)"
                                 % (key[:40], cur.base + key_pos, streams.printable(name)))
            cur.key = key
            sep = data[cur.pos:cur.pos + 1]
            if sep in (b" ", b"\t"):
                cur.pos += 1
            elif sep != b"\n":
                raise cur.error("Invalid archive: expected space after key, got %s" % (
                    "end of input" if not sep else repr(sep)))
            value = holder.read(cur)
        except KaldiError as err:
            if permissive:
                codec.warn("Stopped reading archive %s after an error (permissive mode): %s" % (
                    streams.printable(name), err))
                return
            raise
        yield key, value, key_pos


def _new_rows(count, dim):
    """An uninitialised float32 (count, dim) array in the memory _Rows uses."""
    rows = _Rows(dim, count)
    rows.reserve(count)  # populates the pages
    rows.n = count
    return rows.result()


def _gather_rows(data, offsets, dim, out=None):
    """Rows of ``dim`` float32 starting at byte ``offsets`` of ``data``, as one (n, dim) array."""
    if out is None:
        out = _new_rows(len(offsets), dim)
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
            _memory.populate(self.mm, start, self.populated - start)
        return self._view(self.n, extra)

    def result(self):
        if self.n == 0 or self.dim == 0:
            return np.zeros((self.n, self.dim), dtype=np.float32)
        if self.n < self.capacity:
            self._resize(self.n)
        return self._view(0, self.n)


def _fv_dim(data, pos, end):
    """The dim of the FV record at ``pos`` (after whitespace), or None if it is not one."""
    pos = _WS.match(data, pos, end).end()
    match = _TOKEN.match(data, pos, end)
    if match is None:
        return None
    head = bytes(data[match.end():min(match.end() + 11, end)])
    if len(head) < 11 or head[:1] not in (b" ", b"\t") or head[1:7] != _FV_HEADER:
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


def _scan_fv_block(data, start, end, dim, rows, keys):
    """Parse whole ``key \\0BFV \\x04<dim> floats`` records of data[start:end] into rows/keys.

    Runs of records with equal-length keys are verified and copied in bulk (one strided copy);
    other records are walked one header at a time. Returns ``(stop, irregular)``: where parsing
    stopped and whether the record there is not an FV record of this dim (else it is incomplete
    or the block ended); the record-by-record parser takes over from ``stop``.
    """
    header = _FV_HEADER + struct.pack("<i", dim)
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
            _gather_rows(data, pending_offsets, dim, rows.reserve(len(pending_offsets)))
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


def _fill(fd, view, have):
    """Read from ``fd`` until ``view`` is full or EOF; return the new fill level and EOF flag."""
    size = len(view)
    while have < size:
        got = os.readv(fd, [view[have:]])
        if got == 0:
            return have, True
        have += got
    return have, False


def _read_fv_stream(stream, name, ragged, permissive=False):
    """Float-vector archive from a pipe or stdin, parsed chunk by chunk while it is read."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None
    pending = stream.peek(0) if hasattr(stream, "peek") else b""
    pending = stream.read(len(pending)) if pending else b""
    if fd is None:
        data = pending + stream.read()
        return _read_fv_buffer(data, 0, name, ragged, permissive)
    buf = bytearray(max(streams._CHUNK, len(pending)))
    buf[:len(pending)] = pending
    view = memoryview(buf)
    have, eof = _fill(fd, view, len(pending))
    dim = _fv_dim(buf, 0, have)
    if dim is None:
        view.release()
        del buf[have:]
        if not eof:
            buf += streams._read_stream_fully(stream)
        return _read_fv_buffer(buf, 0, name, ragged, permissive)
    rows = _Rows(dim, _STREAM_RESERVE // (4 * dim + 16))
    keys = []
    consumed = 0
    while True:
        stop, irregular = _scan_fv_block(buf, 0, have, dim, rows, keys)
        if irregular or (eof and stop < have):
            view.release()
            rest = buf[stop:have]
            if not eof:
                rest += streams._read_stream_fully(stream)
            return _finish_generic(rest, 0, name, keys, rows.result(), ragged, consumed + stop,
                                   permissive)
        consumed += stop
        leftover = have - stop
        if eof:
            break
        view[:leftover] = view[stop:have]
        if leftover == len(buf):
            view.release()
            buf.extend(bytes(len(buf)))
            view = memoryview(buf)
        have, eof = _fill(fd, view, leftover)
    view.release()
    return keys, rows.result()


def _read_fv_buffer(data, start, name, ragged, permissive=False):
    """Float-vector archive from a whole buffer (an mmap of a file, or bytes)."""
    dim = _fv_dim(data, start, len(data))
    if dim is None:
        return _finish_generic(data, start, name, [], None, ragged, 0, permissive)
    rows = _Rows(dim, (len(data) - start) // (12 + 4 * dim) + 1)
    keys = []
    stop, _ = _scan_fv_block(data, start, len(data), dim, rows, keys)
    X = rows.result()
    if _WS.match(data, stop).end() >= len(data):
        return keys, X
    return _finish_generic(data, stop, name, keys, X, ragged, 0, permissive)


def _finish_generic(data, start, name, keys, X, ragged, base=0, permissive=False):
    """Parse the rest of an archive record by record and append it to (keys, X)."""
    more_keys, more_rows = [], []
    for key, value, _ in _iter_ark(data, start, name, HOLDERS["vector"], permissive, base):
        more_keys.append(key)
        more_rows.append(value)
    if X is None or X.shape[0] == 0:
        return _stack(keys + more_keys, more_rows, streams.printable(name), ragged)
    if not more_rows:
        return keys, X
    rows = list(X) + more_rows
    return _stack(keys + more_keys, rows, streams.printable(name), ragged)


def _stack(keys, rows, name, ragged=False):
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


# -- script files --------------------------------------------------------------------------------

def _parse_script(data, start, name):
    """(keys, targets) of script text (ReadScriptFile): ``key rxfilename`` per line."""
    raw = bytes(data[start:])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise KaldiError("Invalid script file %s: line %d is not valid UTF-8 (byte %d)" % (
            streams.printable(name), line, err.start)) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    keys, targets = [], []
    # SplitStringOnFirstSpace splits at C-locale whitespace only; str.split also splits at
    # 0x1C-0x1F and Unicode spaces, so it is used only when the text has none of those.
    simple = _EXTRA_SPACE.search(text) is None
    match_line = _SCRIPT_LINE.match
    for number, line in enumerate(lines, 1):
        if simple:
            parts = line.split(None, 1)
            if len(parts) == 2:
                keys.append(parts[0])
                targets.append(parts[1].strip(_C_WS))
                continue
        else:
            match = match_line(line)
            if match is not None and match.group(2):
                keys.append(match.group(1))
                targets.append(match.group(2))
                continue
        raise KaldiError("Invalid line %d in script file %s (expected 'key rxfilename'): %r"
                         % (number, streams.printable(name), line[:200]))
    if _CONTROL_TEXT.search("".join(keys)):
        number = next(i for i, key in enumerate(keys) if _CONTROL_TEXT.search(key))
        raise KaldiError("Invalid line %d in script file %s: the key %r contains a control "
                         "character" % (number + 1, streams.printable(name), keys[number][:200]))
    return keys, targets


def read_script(rx):
    """The (key, rxfilename) pairs of a ``.scp`` file (ReadScriptFile); KaldiError on bad lines."""
    data, start = streams.read_all(rx)
    return _parse_script(data, start, rx)


def _parse_offset_script(data, start):
    """Vectorised parse of the common script ``key path:offset`` (one path, ASCII, two fields
    per line): ``(keys, path, offsets)``, or None for anything else (the general parser)."""
    from pauc_backend.kaldi_io import trials
    codes = np.frombuffer(data, np.uint8, len(data) - start, start)
    if codes.size == 0 or (codes >= 128).any() or _ODD_CONTROL[codes].any():
        return None  # str.split below must split exactly where _token_bounds does
    starts, ends = trials._token_bounds(codes)
    line_ends = trials._line_ends(codes)
    lines = line_ends.size
    if lines == 0 or starts.size != 2 * lines:
        return None
    previous = np.concatenate([[-1], line_ends[:-1]])
    if not ((starts[0::2] > previous).all() and (ends[1::2] <= line_ends).all()):
        return None
    t_start, t_end = starts[1::2], ends[1::2]
    # the last 16 bytes of each target hold ":<offset>" (offsets have at most 15 digits)
    width = 16
    index = t_end[:, None] - width + np.arange(width)
    tail = codes[np.maximum(index, 0)]
    colon = (tail == 58) & (index >= t_start[:, None])
    if not colon.any(axis=1).all():
        return None
    last = width - 1 - np.argmax(colon[:, ::-1], axis=1)
    if (last == width - 1).any():
        return None  # nothing after the colon
    after = np.arange(width) > last[:, None]
    values = tail.astype(np.int64) - 48
    if ((after & ((values < 0) | (values > 9))).any()):
        return None
    values[~after] = 0
    offsets = values @ (10 ** np.arange(width - 1, -1, -1, dtype=np.int64))
    last_colon = t_end - width + last
    path_len = last_colon - t_start
    if (path_len != path_len[0]).any():
        return None
    length = int(path_len[0])
    paths = codes[t_start[:, None] + np.arange(length)]
    if not (paths == paths[0]).all():
        return None
    keys = bytes(codes).decode("ascii").split()[0::2]  # one C-level split: 2 tokens a line
    return keys, paths[0].tobytes().decode("ascii"), offsets


class _FileCache:
    """Plain files opened by script entries (``a.ark:123``), mapped once each."""

    def __init__(self):
        self.files = {}

    def load(self, rx):
        kind, what = streams.classify_rxfilename(rx)
        if kind in ("file", "offset"):
            path, offset = what if kind == "offset" else (what, 0)
            if path not in self.files:
                self.files[path] = streams.read_all(path)[0]
            data = self.files[path]
            if offset > len(data):
                raise KaldiError("Failed to read '%s': offset %d is beyond the end of the file "
                                 "(%d bytes)" % (rx, offset, len(data)))
            return data, offset
        return streams.read_all(rx)

    def read_object(self, rx, holder, key):
        data, offset = self.load(rx)
        cur = ByteCursor(data, offset, rx, key)
        try:
            return holder.read(cur)
        except (struct.error, IndexError, ValueError) as err:
            raise cur.error("Failed to read %s: %s" % (holder.name, err)) from None

    def close(self):
        for data in self.files.values():
            if hasattr(data, "close"):
                try:
                    data.close()
                except BufferError:
                    pass
        self.files.clear()


def _iter_scp(rx, holder, permissive=False, entries=None):
    keys, targets = read_script(rx) if entries is None else entries
    cache = _FileCache()
    try:
        for key, target in zip(keys, targets):
            try:
                value = cache.read_object(target, holder, key)
            except KaldiError as err:
                if not permissive:
                    raise KaldiError("Failed to read key '%s' from script %s: %s" % (
                        key, streams.printable(rx), err)) from None
                codec.warn("Skipping key '%s' of %s (permissive mode): %s" % (
                    key, streams.printable(rx), err))
                continue
            yield key, value
    finally:
        cache.close()


def _split_targets(targets):
    """``file:offset`` targets as (paths, offsets), or None if one is not of that form."""
    paths, offsets = [], []
    for target in targets:
        colon = target.rfind(":")
        if colon < 0 or not target[colon + 1:].isdigit():
            return None
        paths.append(target[:colon])
        offsets.append(int(target[colon + 1:]))
    return paths, np.array(offsets, dtype=np.int64)


def _fv_at_offsets(keys, paths, offsets):
    """Bulk read of FV records of one dim at ``offsets`` of plain files (``paths``: one path or
    one per key); None if any entry is not such a record (the per-entry reader reports)."""
    single = isinstance(paths, str)
    unique = [paths] if single else sorted(set(paths))
    try:
        if not len(keys) or any(streams.classify_rxfilename(p)[0] != "file" for p in unique):
            return None
    except KaldiError:
        return None  # the per-entry reader reports it with the script and key
    cache = _FileCache()
    try:
        groups = []
        dim = None
        path_array = None if single or len(unique) == 1 else np.array(paths)
        for path in unique:
            try:
                data = cache.load(path)[0]
            except KaldiError:
                return None
            rows = np.arange(len(keys)) if path_array is None \
                else np.flatnonzero(path_array == path)
            where = offsets[rows]
            if dim is None:
                head = bytes(data[where[0]:where[0] + 10])
                if len(head) < 10 or head[:6] != _FV_HEADER:
                    return None
                dim = struct.unpack("<i", head[6:])[0]
            expected = np.frombuffer(_FV_HEADER + struct.pack("<i", dim), np.uint8)
            if (where + 10 + 4 * dim > len(data)).any():
                return None
            heads = np.frombuffer(data, np.uint8)[where[:, None] + np.arange(10)]
            if not (heads == expected).all():
                return None
            groups.append((rows, where + 10, data))
        if len(groups) == 1:
            return list(keys), _gather_rows(groups[0][2], groups[0][1], dim)
        out = _new_rows(len(keys), dim)
        for rows, data_offsets, data in groups:
            out[rows] = _gather_rows(data, data_offsets, dim)
        return list(keys), out
    finally:
        cache.close()


# -- readers -------------------------------------------------------------------------------------

class SequentialTableReader:
    """Iterate ``(key, value)`` over an rspecifier (SequentialTableReader), in file order."""

    def __init__(self, rspecifier, holder="vector"):
        self.rspecifier = rspecifier
        self.spec = parse_rspecifier(rspecifier)
        self.holder = _holder(holder)

    def __iter__(self):
        spec = self.spec
        if spec.kind == "scp":
            yield from _iter_scp(spec.filename, self.holder, spec.permissive)
            return
        data, start = streams.read_all(spec.filename)
        try:
            for key, value, _ in _iter_ark(data, start, spec.filename, self.holder,
                                           spec.permissive):
                yield key, value
        finally:
            if hasattr(data, "close"):
                try:
                    data.close()
                except BufferError:
                    pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class RandomAccessTableReader:
    """Values by key from an rspecifier (RandomAccessTableReader).

    An archive is indexed on the first lookup (read once, kept in memory); a script is read
    lazily, opening ``file:offset`` per key. With ``p`` an unreadable entry counts as absent.
    """

    def __init__(self, rspecifier, holder="vector"):
        self.rspecifier = rspecifier
        self.spec = parse_rspecifier(rspecifier)
        self.holder = _holder(holder)
        self._values = None
        self._targets = None
        self._cache = _FileCache()

    def _index(self):
        if self.spec.kind == "ark":
            if self._values is None:
                values = {}
                data, start = streams.read_all(self.spec.filename)
                for key, value, _ in _iter_ark(data, start, self.spec.filename, self.holder,
                                               self.spec.permissive):
                    if key in values:
                        raise KaldiError("Duplicate key '%s' in archive %s" % (
                            key, streams.printable(self.spec.filename)))
                    values[key] = value
                self._values = values
        elif self._targets is None:
            keys, targets = read_script(self.spec.filename)
            self._targets = dict(zip(keys, targets))
            if len(self._targets) != len(keys):
                seen = set()
                duplicate = next(k for k in keys if k in seen or seen.add(k))
                raise KaldiError("Duplicate key '%s' in script %s" % (
                    duplicate, streams.printable(self.spec.filename)))
            self._values = {}

    def _load(self, key):
        try:
            value = self._cache.read_object(self._targets[key], self.holder, key)
        except KaldiError as err:
            if self.spec.permissive:
                return None
            raise KaldiError("Failed to read key '%s' from script %s: %s" % (
                key, streams.printable(self.spec.filename), err)) from None
        self._values[key] = value
        return value

    def __contains__(self, key):
        self._index()
        if key in self._values:
            return True
        if self._targets is None or key not in self._targets:
            return False
        return not self.spec.permissive or self._load(key) is not None

    has_key = __contains__

    def __getitem__(self, key):
        self._index()
        if key in self._values:
            return self._values[key]
        if self._targets is not None and key in self._targets:
            value = self._load(key)
            if value is not None:
                return value
        raise KaldiError("Key '%s' not present in %s" % (key, self.rspecifier))

    value = __getitem__

    def get(self, key, default=None):
        return self[key] if key in self else default

    def keys(self):
        self._index()
        return list(self._targets) if self._targets is not None else list(self._values)

    def close(self):
        self._cache.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_vector_table(rspecifier, ragged=False):
    """``(keys, X)``: every vector of a table as one float32 (n, d) array, in file order.

    KaldiError if the dims differ (with ``ragged=True``, X is then a list of 1-D arrays).
    Binary FV archives and scripts take the numpy fast path.
    """
    spec = parse_rspecifier(rspecifier)
    if spec.kind == "scp":
        data, start = streams.read_all(spec.filename)
        parsed = _parse_offset_script(data, start)
        if parsed is not None:
            fast = _fv_at_offsets(*parsed)
            if fast is not None:
                return fast
        entries = _parse_script(data, start, spec.filename)
        split = _split_targets(entries[1])
        if split is not None:
            fast = _fv_at_offsets(entries[0], *split)
            if fast is not None:
                return fast
        pairs = list(_iter_scp(spec.filename, HOLDERS["vector"], spec.permissive, entries))
        return _stack([k for k, _ in pairs], [v for _, v in pairs], spec.filename, ragged)
    if streams.classify_rxfilename(spec.filename)[0] in ("stdin", "pipe"):
        with streams.open_input(spec.filename) as stream:
            return _read_fv_stream(stream, spec.filename, ragged, spec.permissive)
    data, start = streams.read_all(spec.filename)
    try:
        return _read_fv_buffer(data, start, spec.filename, ragged, spec.permissive)
    finally:
        if hasattr(data, "close"):
            try:
                data.close()
            except BufferError:
                pass


def _read_dict(rspecifier, holder):
    table = {}
    for key, value in SequentialTableReader(rspecifier, holder):
        if key in table:
            raise KaldiError("Duplicate key '%s' in %s" % (key, rspecifier))
        table[key] = value
    return table


def read_int32_table(rspecifier):
    """``{key: int}`` of an int32 table (e.g. ``ark:exp/enroll_num_utts.ark``)."""
    return _read_dict(rspecifier, "int32")


def read_token_table(rspecifier):
    """``{key: token}`` of a token table (utt2spk), in file order."""
    return _read_dict(rspecifier, "token")


def read_token_vector_table(rspecifier):
    """``{key: [tokens]}`` of a token-vector table (spk2utt), in file order."""
    return _read_dict(rspecifier, "token_vector")


# -- writers -------------------------------------------------------------------------------------

class TableWriter:
    """Write ``(key, value)`` to a wspecifier (TableWriter): ark, scp, ark+scp, stdout, pipes.

    Outputs are committed by ``close()`` (or leaving the ``with`` block); an exception aborts
    them, so no half-written archive is left. ``ark,scp:A,S`` writes ``key A:offset`` lines.
    """

    def __init__(self, wspecifier, holder="vector"):
        self.wspecifier = wspecifier
        self.spec = parse_wspecifier(wspecifier)
        self.holder = _holder(holder)
        self.binary = self.spec.binary and holder not in ("token", "token_vector")
        self._ark = self._scp = None
        self._targets = None
        self._pending = []
        self.num_written = 0
        if self.spec.kind == "scp":
            keys, targets = read_script(self.spec.scp)
            self._targets = dict(zip(keys, targets))
            return
        self._ark = streams.OutputHandle(self.spec.ark)
        if self.spec.kind == "ark,scp":
            try:
                self._scp = streams.OutputHandle(self.spec.scp)
            except BaseException:
                self._ark.abort()
                raise
            self._ark_name = self.spec.ark.encode()

    def write(self, key, value):
        _check_token(key)
        data = self.holder.encode(value, self.binary)
        self.write_encoded(key, data)

    def write_encoded(self, key, data):
        """Write an already-encoded object (``\\0B``... or text) under ``key``."""
        if self._targets is not None:
            target = self._targets.get(key)
            if target is None:
                if self.spec.permissive:
                    return
                raise KaldiError("Key '%s' is not in the script file %s (writing %s)" % (
                    key, self.spec.scp, self.wspecifier))
            handle = streams.OutputHandle(target)
            try:
                handle.write(data)
            except BaseException:
                handle.abort()
                raise
            self._pending.append(handle)
        else:
            self._ark.write(key.encode() + b" ")
            offset = self._ark.bytes_written
            self._ark.write(data)
            if self._scp is not None:
                self._scp.write(b"%s %s:%d\n" % (key.encode(), self._ark_name, offset))
            if self.spec.flush:
                self._ark.stream.flush()
        self.num_written += 1

    def close(self):
        """Commit the outputs (rename temp files, check output pipes)."""
        handles = [h for h in (self._ark, self._scp) if h is not None] + self._pending
        self._ark = self._scp = None
        self._pending = []
        try:
            for handle in handles:
                handle.commit()
        except BaseException:
            for handle in handles:
                handle.abort()
            raise

    def abort(self):
        for handle in [h for h in (self._ark, self._scp) if h is not None] + self._pending:
            handle.abort()
        self._ark = self._scp = None
        self._pending = []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()


def _encode_fv_records(keys_b, X):
    """Binary FV archive bytes and the offset of each ``\\0B`` (vectorised, equal key lengths)."""
    count, dim = X.shape
    header = _FV_HEADER + struct.pack("<i", dim)
    lengths = np.fromiter((len(k) for k in keys_b), dtype=np.int64, count=count)
    if count and (lengths == lengths[0]).all():
        key_len = int(lengths[0])
        stride = key_len + 11 + 4 * dim
        records = np.empty((count, stride), dtype=np.uint8)
        records[:, :key_len] = np.frombuffer(b"".join(keys_b), np.uint8).reshape(count, key_len)
        records[:, key_len] = 32
        records[:, key_len + 1:key_len + 11] = np.frombuffer(header, np.uint8)
        records[:, key_len + 11:] = X.astype("<f4", copy=False).view(np.uint8).reshape(count, -1)
        offsets = np.arange(count, dtype=np.int64) * stride + key_len + 1
        return memoryview(records).cast("B"), offsets
    rows = X.astype("<f4", copy=False).tobytes()
    row_bytes = 4 * dim
    view = memoryview(rows)
    parts = []
    for i, key in enumerate(keys_b):
        parts += (key, b" ", header, view[i * row_bytes:(i + 1) * row_bytes])
    offsets = np.cumsum(lengths + 11 + row_bytes) - row_bytes - 10
    return b"".join(parts), offsets


def write_vector_table(wspecifier, keys, X):
    """Write float vectors (FV, or text with ``,t``) under ``keys`` to a wspecifier."""
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] != len(keys):
        raise KaldiError("write_vector_table: %d keys but an array of shape %s" % (
            len(keys), X.shape))
    X = np.ascontiguousarray(X, dtype=np.float32)
    _check_keys(keys)
    with TableWriter(wspecifier, "vector") as writer:
        if writer._targets is not None:
            for key, row in zip(keys, X):
                writer.write(key, row)
            return
        keys_b = [key.encode() for key in keys]
        for begin in range(0, len(keys_b), _WRITE_BLOCK):
            block_keys = keys_b[begin:begin + _WRITE_BLOCK]
            block = X[begin:begin + _WRITE_BLOCK]
            if writer.binary:
                data, offsets = _encode_fv_records(block_keys, block)
            else:
                row_format = b"%.7g " * X.shape[1]
                records = [b"%s  [ %s]\n" % (key, row_format % tuple(row))
                           for key, row in zip(block_keys, block.tolist())]
                lengths = np.fromiter(map(len, records), dtype=np.int64, count=len(records))
                key_lengths = np.fromiter(map(len, block_keys), dtype=np.int64,
                                          count=len(block_keys))
                offsets = np.cumsum(lengths) - lengths + key_lengths + 1
                data = b"".join(records)
            base = writer._ark.bytes_written
            writer._ark.write(data)
            if writer._scp is not None:
                name = writer._ark_name
                writer._scp.write(b"".join(b"%s %s:%d\n" % (key, name, base + offset)
                                           for key, offset in zip(block_keys,
                                                                  offsets.tolist())))
        writer.num_written += len(keys)


def write_int32_table(wspecifier, keys, values):
    """An int32 table (``ark,t:num_utts.ark`` gives lines ``spk 5 \\n``)."""
    with TableWriter(wspecifier, "int32") as writer:
        for key, value in zip(keys, values):
            writer.write(key, value)


def write_token_table(wspecifier, table):
    """A token table (utt2spk lines ``utt spk``) from a dict."""
    with TableWriter(wspecifier, "token") as writer:
        for key, value in table.items():
            writer.write(key, value)


def write_token_vector_table(wspecifier, table):
    """A token-vector table (spk2utt lines ``spk utt1 utt2 \\n``, as Kaldi) from a dict."""
    with TableWriter(wspecifier, "token_vector") as writer:
        for key, value in table.items():
            writer.write(key, value)
