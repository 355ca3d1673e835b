"""Kaldi's basic encodings (base/io-funcs, matrix/kaldi-{vector,matrix}.cc), binary and text.

Readers take a ``ByteCursor`` (what ``read_object`` hands to a reader function): a position in an
in-memory buffer with the input's name, so every error names the file and the byte offset.
Writers take any binary writable stream. Text numbers are written as C++ ostream precision 7
(``%.7g`` of the value promoted to double), which reproduces Kaldi byte for byte.

Text is bounded as in ``lines``: a token (a key, ``<Plda>``, a number) at most
``MAX_LINE_BYTES``, a text vector or a matrix row at most ``MAX_LIST_LINE_BYTES``. An object read
from anything but a regular file (a pipe, standard input, a device or FIFO) is read as it
arrives and parsed on the way (``read_growing``), so an endless input is an error once the
bounds are passed rather than a read without end.
"""

import os
import re
import struct
import sys

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import outputs, streams
from pauc_backend.kaldi_io.numpy_files import check_not_numpy
from pauc_backend.kaldi_io.lines import (MAX_LINE_BYTES, MAX_LIST_LINE_BYTES, parse_growing,
                                        regular_file)

WHITESPACE = b" \t\n\v\f\r"
_WS = re.compile(rb"[ \t\n\v\f\r]*")
# a token, or the first MAX_LINE_BYTES + 1 bytes of a longer one (see token_match)
_TOKEN = re.compile(rb"[^ \t\n\v\f\r]{1,%d}" % (MAX_LINE_BYTES + 1))
_INT = re.compile(rb"[-+]?[0-9]{1,20}")      # more digits never fit in int32
_BAD_START = re.compile(rb"(?:^|[ \t\v\f])[^- \t\v\f0-9]")
_BINARY_HEADER = b"\0B"


class ByteCursor:
    """A read position in a bytes-like buffer (bytes, bytearray, mmap) named for error messages."""

    __slots__ = ("data", "pos", "name", "key", "base")

    def __init__(self, data, pos=0, name="<memory>", key=None, base=0):
        self.data = data
        self.pos = pos
        self.name = name
        self.key = key
        self.base = base

    def read(self, n):
        chunk = self.data[self.pos:self.pos + n]
        self.pos += len(chunk)
        return bytes(chunk)

    def peek(self, n=1):
        return bytes(self.data[self.pos:self.pos + n])

    def tell(self):
        return self.pos

    def at_eof(self):
        return self.pos >= len(self.data)

    def skip_whitespace(self):
        self.pos = _WS.match(self.data, self.pos).end()

    def error(self, message, pos=None):
        """A KaldiError naming the input, the table key (if any) and the byte offset."""
        where = "" if self.key is None else " for key '%s'" % self.key
        return KaldiError("%s%s (reading %s at byte %d)" % (
            message, where, streams.printable(self.name),
            self.base + (self.pos if pos is None else pos)))


def show(token, limit=40):
    """A token from the input as text for a message (repr if it is not printable)."""
    text = bytes(token[:limit]).decode("utf-8", errors="replace")
    return text if text.isprintable() else repr(bytes(token[:limit]))


def token_match(cur, pos=None, what="token"):
    """The regex match of the token at ``pos`` (default ``cur.pos``), None at end of input; a
    token longer than ``MAX_LINE_BYTES`` (no whitespace for a megabyte: binary data, an endless
    line) is a KaldiError."""
    pos = cur.pos if pos is None else pos
    match = _TOKEN.match(cur.data, pos)
    if match is not None and match.end() - pos > MAX_LINE_BYTES:
        raise cur.error("Failed to read %s: longer than %d MiB (binary data or an endless line "
                        "where text was expected?)" % (what, MAX_LINE_BYTES >> 20), pos)
    return match


def _cursor(f):
    if isinstance(f, ByteCursor):
        return f
    name = getattr(f, "name", "<stream>")
    return ByteCursor(f.read(), 0, name if isinstance(name, str) else "<stream>")


def warn(message):
    """A Kaldi-style WARNING line on stderr from the I/O layer (e.g. inf/nan in a text vector)."""
    from pauc_backend import __version__
    frame = sys._getframe(1)
    program = sys.argv[0].rsplit("/", 1)[-1] if sys.argv and sys.argv[0] else "python"
    sys.stderr.write("WARNING (%s[pauc-backend %s]:%s():kaldi_io/%s:%d) %s\n" % (
        program, __version__, frame.f_code.co_name, frame.f_code.co_filename.rsplit("/", 1)[-1],
        frame.f_lineno, message))
    sys.stderr.flush()


# -- tokens and basic types ----------------------------------------------------------------------

def write_token(f, binary, token):
    """WriteToken: the token and one space (binary and text alike)."""
    if not token or any(c in token for c in " \t\n\v\f\r"):
        raise KaldiError("Invalid token %r" % token)
    f.write(token.encode() + b" ")


def read_token(f, binary):
    """ReadToken: skip whitespace, read a token, consume the one whitespace character after it."""
    cur = _cursor(f)
    cur.skip_whitespace()
    match = token_match(cur)
    if match is None:
        raise cur.error("Failed to read token: end of input")
    end = match.end()
    token = match.group()
    if end >= len(cur.data):
        raise cur.error("Failed to read token %s: expected whitespace after it, got end of input"
                        % show(token), end)
    cur.pos = end + 1
    return token.decode(errors="replace")


def expect_token(f, binary, token):
    """ExpectToken; like Kaldi, ``Plda>`` is accepted for ``<Plda>``."""
    cur = _cursor(f)
    start = cur.pos
    got = read_token(cur, binary)
    if got != token and not (token.startswith("<") and got == token[1:]):
        raise cur.error("Expected token %s, got %s" % (token, got), start)


def peek_token(f, binary):
    """The next token without consuming it (or "" at end of input)."""
    cur = _cursor(f)
    pos = _WS.match(cur.data, cur.pos).end()
    match = token_match(cur, pos)
    return match.group().decode(errors="replace") if match else ""


def write_int32(f, binary, value):
    value = int(value)
    if not -2 ** 31 <= value < 2 ** 31:
        raise KaldiError("Integer %d does not fit in int32" % value)
    f.write(struct.pack("<bi", 4, value) if binary else b"%d " % value)


def read_int32(f, binary):
    cur = _cursor(f)
    start = cur.pos
    if binary:
        chunk = cur.data[start:start + 5]
        if len(chunk) < 5:
            raise cur.error("Failed to read int32: end of input")
        size, value = struct.unpack("<bi", chunk)
        if size != 4:
            raise cur.error("Failed to read int32: expected size byte 4, got %d" % size)
        cur.pos = start + 5
        return value
    cur.skip_whitespace()
    match = _INT.match(cur.data, cur.pos)
    if match is None:
        token = token_match(cur, what="int32")
        raise cur.error("Failed to read int32: got %s" % (
            show(token.group()) if token else "end of input"))
    value = int(match.group())
    if not -2 ** 31 <= value < 2 ** 31 or cur.data[match.end():match.end() + 1].isdigit():
        raise cur.error("Integer %s does not fit in int32" % show(token_match(cur).group()))
    cur.pos = match.end()
    return value


def write_float(f, binary, value):
    """A float32 (binary ``\\x04`` + 4 bytes) or ``%.7g `` text."""
    f.write(struct.pack("<bf", 4, value) if binary else b"%.7g " % float(np.float32(value)))


def write_double(f, binary, value):
    f.write(struct.pack("<bd", 8, value) if binary else b"%.7g " % float(value))


def read_float(f, binary):
    """ReadBasicType<float/double>: binary size byte 4 or 8 (converted), or a text number."""
    cur = _cursor(f)
    start = cur.pos
    if binary:
        size = cur.data[start:start + 1]
        if size == b"\x04" and start + 5 <= len(cur.data):
            cur.pos = start + 5
            return float(struct.unpack("<f", cur.data[start + 1:start + 5])[0])
        if size == b"\x08" and start + 9 <= len(cur.data):
            cur.pos = start + 9
            return struct.unpack("<d", cur.data[start + 1:start + 9])[0]
        raise cur.error("Failed to read float: expected size byte 4 or 8, got %r" % size)
    cur.skip_whitespace()
    match = token_match(cur, what="float")
    try:
        if b"_" in match.group():  # Python's float takes "1_0" as 10; C++ streams do not
            raise ValueError(match.group())
        value = float(match.group())
    except (AttributeError, ValueError):
        raise cur.error("Failed to read float: got %s" % (
            show(match.group()) if match else "end of input")) from None
    cur.pos = match.end()
    return value


read_double = read_float


def write_bool(f, binary, value):
    f.write(b"T" if value else b"F")
    if not binary:
        f.write(b" ")


def read_bool(f, binary):
    cur = _cursor(f)
    cur.skip_whitespace()
    char = cur.read(1)
    if char not in (b"T", b"F"):
        raise cur.error("Failed to read bool: expected T or F, got %r" % char)
    if not binary and cur.peek(1) == b" ":
        cur.pos += 1
    return char == b"T"


# -- vectors and matrices ------------------------------------------------------------------------

def format_text_vector(values):
    """`` [ a b c ]\\n`` exactly as Kaldi's Vector::Write in text mode."""
    values = np.asarray(values)
    if values.size == 0:
        return b" [ ]\n"
    return b" [ " + (b"%.7g " * values.size) % tuple(values.ravel().tolist()) + b"]\n"


def format_text_matrix(values):
    """`` [\\n  a b \\n  c d ]\\n`` exactly as Kaldi's Matrix::Write in text mode."""
    values = np.asarray(values)
    rows, cols = values.shape
    if cols == 0 or rows == 0:
        return b" [ ]\n"
    row_format = b"\n  " + b"%.7g " * cols
    return b" [" + (row_format * rows) % tuple(values.ravel().tolist()) + b"]\n"


def write_vector_obj(f, binary, vector):
    """Vector::Write: ``FV``/``DV`` by dtype (float32 -> FV, anything else -> DV)."""
    vector = np.asarray(vector)
    if vector.ndim != 1:
        raise KaldiError("Cannot write an array of shape %s as a vector" % (vector.shape,))
    if not binary:
        f.write(format_text_vector(vector))
        return
    if vector.dtype == np.float32:
        f.write(b"FV \x04" + struct.pack("<i", vector.size) + vector.astype("<f4").tobytes())
    else:
        f.write(b"DV \x04" + struct.pack("<i", vector.size) + vector.astype("<f8").tobytes())


def write_matrix_obj(f, binary, matrix):
    """Matrix::Write: ``FM``/``DM`` by dtype (float32 -> FM, anything else -> DM)."""
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise KaldiError("Cannot write an array of shape %s as a matrix" % (matrix.shape,))
    if not binary:
        f.write(format_text_matrix(matrix))
        return
    token, code = (b"FM ", "<f4") if matrix.dtype == np.float32 else (b"DM ", "<f8")
    f.write(token + struct.pack("<bibi", 4, matrix.shape[0], 4, matrix.shape[1])
            + np.ascontiguousarray(matrix, dtype=code).tobytes())


def _read_binary_array(cur, count, code, what):
    itemsize = 4 if code == "<f4" else 8
    start = cur.pos
    nbytes = count * itemsize
    if start + nbytes > len(cur.data):
        raise cur.error("Failed to read %s: truncated (expected %d bytes of data, got %d)" % (
            what, nbytes, len(cur.data) - start), start)
    array = np.frombuffer(cur.data, dtype=code, count=count, offset=start).astype(
        code[1:], copy=True)
    cur.pos = start + nbytes
    return array


def _parse_numbers(cur, body, start, what):
    """Text numbers of one vector/matrix row, with Kaldi's rules (inf/nan warn, else digits)."""
    tokens = body.split()
    if not tokens:
        return np.zeros(0)
    if _BAD_START.search(body) is None and b"_" not in body:
        try:
            return np.array(tokens, dtype=np.float64)
        except ValueError:
            pass
    values = []
    for token in tokens:
        lowered = token.lower()
        if token[:1] == b"-" or token[:1].isdigit():
            try:
                if b"_" in token:  # Python's float takes "1_0" as 10; C++ streams do not
                    raise ValueError(token)
                value = float(token)
            except ValueError:
                raise cur.error("Failed to read %s: bad number %s" % (
                    what, show(token)), start) from None
            if value != value or value in (float("inf"), float("-inf")):
                warn("Reading %s value into %s." % ("NaN" if value != value else "infinite",
                                                     what))
            values.append(value)
        elif lowered in (b"inf", b"infinity"):
            warn("Reading infinite value into %s." % what)
            values.append(float("inf"))
        elif lowered == b"nan":
            warn("Reading NaN value into %s." % what)
            values.append(float("nan"))
        else:
            raise cur.error("Failed to read %s: expecting numeric data, got %s" % (
                what, show(token)), start)
    return np.array(values, dtype=np.float64)


def _text_open_bracket(cur, what):
    start = cur.pos
    cur.skip_whitespace()
    match = token_match(cur, what=what)
    if match is None:
        raise cur.error("Failed to read %s: end of input" % what, start)
    token = match.group()
    if token == b"[]":
        cur.pos = match.end()
        _eat_newline(cur)
        return None
    if token != b"[":
        raise cur.error('Failed to read %s: expected "[" but got %s' % (what, show(token)),
                        cur.pos)
    cur.pos = match.end()
    limit = cur.pos + MAX_LIST_LINE_BYTES + 1
    close = cur.data.find(b"]", cur.pos, limit)
    if close >= 0:
        return close
    if what == "vector" and len(cur.data) >= limit:
        raise cur.error("Failed to read vector: no ']' within %d MiB of its '[' (the longest "
                        "text vector)" % (MAX_LIST_LINE_BYTES >> 20), start)
    if what == "matrix":      # rows end at newlines: the last one read must not be endless
        close = cur.data.find(b"]", limit)
        end = len(cur.data) if close < 0 else close
        row = max(cur.data.rfind(b"\n", cur.pos, end), cur.data.rfind(b";", cur.pos, end))
        if end - max(row, cur.pos) > MAX_LIST_LINE_BYTES:
            raise cur.error("Failed to read matrix: a row longer than %d MiB (no newline)" % (
                MAX_LIST_LINE_BYTES >> 20), start)
        if close >= 0:
            return close
        raise cur.error("Failed to read matrix: end of input before ']' (%d bytes after '[')"
                        % (len(cur.data) - cur.pos), start)
    raise cur.error("Failed to read %s: end of input before ']'" % what, start)


def _eat_newline(cur):
    nxt = cur.data[cur.pos:cur.pos + 2]
    if nxt[:1] == b"\n":
        cur.pos += 1
    elif nxt == b"\r\n":
        cur.pos += 2


def read_vector_obj(f, binary, dtype=None):
    """Vector::Read: ``FV``/``DV`` binary or `` [ ... ]`` text.

    Returns float32 for FV, float64 for DV and text, unless ``dtype`` forces a type (Kaldi
    converts a DV read into a float vector and the reverse).
    """
    cur = _cursor(f)
    start = cur.pos
    if binary:
        token = read_token(cur, True)
        if token not in ("FV", "DV"):
            raise cur.error("Failed to read vector: expected token FV or DV, got %s" % token[:20],
                            start)
        size = read_int32(cur, True)
        if size < 0:
            raise cur.error("Failed to read vector: negative size %d" % size, start)
        vector = _read_binary_array(cur, size, "<f4" if token == "FV" else "<f8", "vector")
    else:
        close = _text_open_bracket(cur, "vector")
        if close is None:
            vector = np.zeros(0)
        else:
            body = bytes(cur.data[cur.pos:close])
            if b"\n" in body or b"\r" in body:
                raise cur.error("Failed to read vector: newline found while reading vector "
                                "(maybe it's a matrix?)", start)
            if b"\v" in body or b"\f" in body:  # Vector::Read takes only ' ' and '\t' there
                raise cur.error("Failed to read vector: vertical tab or form feed between "
                                "numbers", start)
            vector = _parse_numbers(cur, body, start, "vector")
            cur.pos = close + 1
            _eat_newline(cur)
    return _as_dtype(cur, vector, dtype, "vector", start)


def _as_dtype(cur, array, dtype, what, start):
    """``array`` as ``dtype``; a finite value too large for float32 is an error (a C++ stream
    reading it into a float fails), not a silent inf with a numpy RuntimeWarning."""
    if dtype is None or array.dtype == dtype:
        return array
    with np.errstate(over="ignore"):
        out = array.astype(dtype)
    if out.dtype.itemsize < array.dtype.itemsize:
        grown = np.isinf(out) & np.isfinite(array)
        if grown.any():
            raise cur.error("Failed to read %s: value %g is out of range for float" % (
                what, array[grown][0]), start)
    return out


_CM_FORMATS = {"CM": 1, "CM2": 2, "CM3": 3}


def _read_compressed_matrix(cur, token, start):
    """CompressedMatrix::Read (matrix/compressed-matrix.cc), binary only."""
    fmt = _CM_FORMATS[token]
    header = cur.data[cur.pos:cur.pos + 16]
    if len(header) < 16:
        raise cur.error("Failed to read compressed matrix: truncated header", start)
    min_value, value_range, rows, cols = struct.unpack("<ffii", header)
    cur.pos += 16
    if rows < 0 or cols < 0 or (rows == 0) != (cols == 0):
        raise cur.error("Failed to read compressed matrix: bad size %d x %d" % (rows, cols), start)

    def need(nbytes):
        if cur.pos + nbytes > len(cur.data):
            raise cur.error("Failed to read compressed matrix: truncated (expected %d bytes, got "
                            "%d)" % (nbytes, len(cur.data) - cur.pos), start)
        chunk = np.frombuffer(cur.data, np.uint8, nbytes, cur.pos)
        cur.pos += nbytes
        return chunk

    if fmt == 1:
        percentiles = need(8 * cols).view("<u2").reshape(cols, 4).astype(np.float64)
        data = need(rows * cols).reshape(cols, rows).astype(np.float64)
        p0, p25, p75, p100 = (min_value + percentiles[:, i:i + 1] * value_range / 65535.0
                              for i in range(4))
        low = p0 + (p25 - p0) * data / 64.0
        mid = p25 + (p75 - p25) * (data - 64.0) / 128.0
        high = p75 + (p100 - p75) * (data - 192.0) / 63.0
        out = np.where(data <= 64, low, np.where(data <= 192, mid, high)).T
        return out.astype(np.float32)
    if fmt == 2:
        data = need(2 * rows * cols).view("<u2").astype(np.float64)
        out = min_value + data * (value_range / 65535.0)
    else:
        data = need(rows * cols).astype(np.float64)
        out = min_value + data * (value_range / 255.0)
    return out.reshape(rows, cols).astype(np.float32)


def read_matrix_obj(f, binary, dtype=None):
    """Matrix::Read: ``FM``/``DM``/``CM*`` binary or `` [\\n  a b \\n  c d ]`` text.

    Returns float32 for FM/CM, float64 for DM and text, unless ``dtype`` forces a type.
    """
    cur = _cursor(f)
    start = cur.pos
    if binary:
        token = read_token(cur, True)
        if token in _CM_FORMATS:
            matrix = _read_compressed_matrix(cur, token, start)
        elif token in ("FM", "DM"):
            rows = read_int32(cur, True)
            cols = read_int32(cur, True)
            if rows < 0 or cols < 0 or (rows == 0) != (cols == 0):  # Matrix::Init asserts
                raise cur.error("Failed to read matrix: bad size %d x %d" % (rows, cols), start)
            matrix = _read_binary_array(cur, rows * cols, "<f4" if token == "FM" else "<f8",
                                        "matrix").reshape(rows, cols)
        else:
            raise cur.error("Failed to read matrix: expected token FM, DM or CM, got %s"
                            % token[:20], start)
    else:
        close = _text_open_bracket(cur, "matrix")
        if close is None:
            matrix = np.zeros((0, 0))
        else:
            # Matrix::Read: rows end at '\n' or ';'; '\r', '\v', '\f' are plain whitespace
            lines = bytes(cur.data[cur.pos:close]).replace(b";", b"\n").split(b"\n")
            rows = [_parse_numbers(cur, line, start, "matrix") for line in lines
                    if line.strip(WHITESPACE)]
            if rows and any(row.size != rows[0].size for row in rows):
                raise cur.error("Failed to read matrix: inconsistent number of columns (%s)" % (
                    ", ".join(sorted({str(row.size) for row in rows}))), start)
            matrix = np.array(rows, dtype=np.float64).reshape(len(rows), -1 if rows else 0)
            cur.pos = close + 1
            _eat_newline(cur)
    return _as_dtype(cur, matrix, dtype, "matrix", start)


# -- whole objects (WriteKaldiObject / ReadKaldiObject) ------------------------------------------

def read_binary_header(cur):
    """InitKaldiInputStream: consume ``\\0B`` and return True, or return False for text."""
    head = cur.data[cur.pos:cur.pos + 2]
    if head[:1] == b"\0":
        if head != _BINARY_HEADER:
            raise cur.error("Failed to read object: binary header \\0 not followed by B")
        cur.pos += 2
        return True
    return False


def read_object(rx, reader_fn):
    """ReadKaldiObject: open ``rx``, detect binary/text from ``\\0B``; reader_fn(f, binary).
    A regular file is mapped; anything else is read only as far as the object goes
    (``read_growing``), as Kaldi reads it."""
    name = "" if rx is None else os.fspath(rx)
    parse = object_parser(reader_fn)
    try:
        if not regular_file(name):
            return read_growing(name, parse)
        data, start = streams.read_all(name)
        return parse(ByteCursor(data, start, name))
    except MemoryError:
        raise KaldiError("Out of memory reading %s (the object it declares does not fit)"
                         % streams.printable(name)) from None


def object_parser(reader_fn):
    """``parse(cur)`` of a whole object: the binary header, then ``reader_fn(cur, binary)``."""
    def parse(cur):
        check_not_numpy(cur.data, cur.base + cur.pos, streams.printable(cur.name),
                        "a Kaldi object")
        binary = read_binary_header(cur)
        try:
            return reader_fn(cur, binary)
        except (struct.error, IndexError) as err:
            raise cur.error("Failed to read object: %s" % err) from None
    return parse


def read_growing(rx, parse, key=None, chunk_bytes=streams.CHUNK_BYTES):
    """The object at the start of a stream (a pipe, standard input, a device or FIFO), read in
    doubling pieces until ``parse(cur)`` succeeds on it (see ``parse_growing``); the rest of
    the input is not read (a pipe's writer then gets SIGPIPE, as under Kaldi)."""
    name = "" if rx is None else os.fspath(rx)
    state, blocks, size = [], [], 0
    kind, what = streams.classify_rxfilename(name)
    base = what[1] if kind == "offset" else 0      # messages give offsets in the file

    def attempt(data):
        cur = ByteCursor(data, 0, name, key, base)
        return parse(cur), cur.pos

    with streams.open_input(name) as stream:
        while True:
            block = stream.read(max(chunk_bytes, size))
            blocks.append(block)
            size += len(block)
            data = b"".join(blocks)
            blocks = [data]
            done = parse_growing(data, attempt, not block, state)
            if done is not None:
                return done[0]


def write_object(wx, binary, writer_fn):
    """WriteKaldiObject: ``\\0B`` if binary, then writer_fn(f, binary), atomically."""
    with outputs.open_output(wx) as stream:
        if binary:
            stream.write(_BINARY_HEADER)
        writer_fn(stream, binary)
