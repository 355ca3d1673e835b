"""A deliberately simple, independent parser of Kaldi archives, scripts and objects (the fuzzers'
oracle). It mirrors Kaldi's readers (util/kaldi-table-inl.h SequentialTableReaderArchiveImpl,
util/kaldi-table.cc ReadScriptFile, matrix/kaldi-vector.cc and kaldi-matrix.cc Read, base/io-funcs
ReadToken/ReadBasicType) byte by byte with plain Python, plus the project's documented rules
where it is stricter than Kaldi (keys must be UTF-8 without control characters). Any input it
rejects raises ``Reject``; the project's readers must then raise KaldiError.
"""

import math
import re
import struct

import numpy as np

WS = b" \t\n\v\f\r"  # isspace() in the C locale
# ``is >> r`` after Kaldi peeked '-' or a digit (".5" and "+1" go the string path: rejected)
NUMBER = re.compile(rb"(?:-(?:[0-9]+\.?[0-9]*|\.[0-9]+)|[0-9]+\.?[0-9]*)(?:[eE][-+]?[0-9]+)?\Z")


class Reject(Exception):
    pass


class Reader:
    def __init__(self, data, pos=0):
        self.data, self.pos = bytes(data), pos

    def peek(self):
        return self.data[self.pos] if self.pos < len(self.data) else -1

    def skip_ws(self):
        while self.pos < len(self.data) and self.data[self.pos] in WS:
            self.pos += 1

    def word(self):
        """``is >> str``: skip whitespace, read non-whitespace (Reject at end of input)."""
        self.skip_ws()
        start = self.pos
        while self.pos < len(self.data) and self.data[self.pos] not in WS:
            self.pos += 1
        if self.pos == start:
            raise Reject("end of input")
        return self.data[start:self.pos]

    def token(self):
        """ReadToken: a word and one whitespace character after it."""
        word = self.word()
        if self.pos >= len(self.data):
            raise Reject("no space after token")
        self.pos += 1
        return word

    def take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise Reject("truncated")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def int32(self):
        if self.take(1) != b"\x04":
            raise Reject("int size byte")
        return struct.unpack("<i", self.take(4))[0]


def number(word):
    """A text number as Kaldi's readers accept it (NaN/inf spelled out, any case)."""
    lowered = word.lower()[1:] if word.startswith(b"-") else word.lower()
    if lowered in (b"inf", b"infinity", b"nan"):
        value = math.inf if lowered != b"nan" else math.nan
        return -value if word.startswith(b"-") else value
    if not NUMBER.match(word):
        raise Reject("bad number %r" % word)
    return float(word)


def binary_header(r):
    if r.peek() == 0:
        if r.take(2) != b"\0B":
            raise Reject("bad binary header")
        return True
    return False


def vector(r, binary):
    if binary:
        token = r.token()
        if token not in (b"FV", b"DV"):
            raise Reject("vector token %r" % token)
        size = r.int32()
        if size < 0:
            raise Reject("negative size")
        code = "<f4" if token == b"FV" else "<f8"
        return np.frombuffer(r.take(size * int(code[-1])), code).astype(np.float64)
    word = r.word()
    if word == b"[]":
        if r.peek() == ord("\n"):
            r.pos += 1
        return np.zeros(0)
    if word != b"[":
        raise Reject("expected [")
    end = r.data.find(b"]", r.pos)
    if end < 0:
        raise Reject("no ]")
    body = r.data[r.pos:end]
    if any(c in body for c in b"\n\r\v\f"):
        raise Reject("newline in vector")
    values = [number(w) for w in body.split()]
    r.pos = end + 1
    if r.data[r.pos:r.pos + 2] == b"\r\n":
        r.pos += 2
    elif r.peek() == ord("\n"):
        r.pos += 1
    return np.array(values, dtype=np.float64)


def matrix(r, binary):
    if binary:
        token = r.token()
        if token not in (b"FM", b"DM"):
            raise Reject("matrix token %r" % token)
        rows, cols = r.int32(), r.int32()
        if rows < 0 or cols < 0 or (rows == 0) != (cols == 0):
            raise Reject("bad size")
        code = "<f4" if token == b"FM" else "<f8"
        flat = np.frombuffer(r.take(rows * cols * int(code[-1])), code)
        with np.errstate(invalid="ignore"):  # signalling NaNs from flipped bytes
            return flat.astype(np.float64).reshape(rows, cols)
    word = r.word()
    if word == b"[]":
        if r.peek() == ord("\n"):
            r.pos += 1
        return np.zeros((0, 0))
    if word != b"[":
        raise Reject("expected [")
    end = r.data.find(b"]", r.pos)
    if end < 0:
        raise Reject("no ]")
    body = r.data[r.pos:end]
    # rows end at '\n' or ';'; other whitespace separates numbers
    rows = [[number(w) for w in line.split()] for line in re.split(b"[\n;]", body)]
    rows = [row for row in rows if row]
    if rows and any(len(row) != len(rows[0]) for row in rows):
        raise Reject("ragged matrix")
    r.pos = end + 1
    if r.data[r.pos:r.pos + 2] == b"\r\n":
        r.pos += 2
    elif r.peek() == ord("\n"):
        r.pos += 1
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(rows[0]) if rows else 0)


def key_text(raw):
    if any(c < 32 or c == 127 for c in raw):
        raise Reject("control character in key")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Reject("key not UTF-8") from None


def vector_ark(data):
    """[(key, float64 vector)] of a vector archive, or Reject."""
    r = Reader(data)
    out = []
    while True:
        r.skip_ws()
        if r.pos >= len(r.data):
            return out
        key = key_text(r.word())
        c = r.peek()
        if c in (ord(" "), ord("\t")):
            r.pos += 1
        elif c != ord("\n"):
            raise Reject("no space after key")
        out.append((key, vector(r, binary_header(r))))


def script(data):
    """[(key, target)] of a script file, or Reject (ReadScriptFile)."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise Reject("not UTF-8") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = []
    ws = WS.decode()
    for line in lines:
        parts = line.strip(ws)
        cut = next((i for i, c in enumerate(parts) if c in ws), None)
        if not parts or cut is None:
            raise Reject("line without two fields")
        key, rest = parts[:cut], parts[cut:].strip(ws)
        key_text(key.encode())
        out.append((key, rest))
    return out


def single_object(data, reader):
    r = Reader(data)
    return reader(r, binary_header(r))


def plda(data):
    r = Reader(data)
    binary = binary_header(r)
    if r.token() not in (b"<Plda>", b"Plda>"):
        raise Reject("no <Plda>")
    mean, transform, psi = vector(r, binary), matrix(r, binary), vector(r, binary)
    if r.token() not in (b"</Plda>", b"/Plda>"):
        raise Reject("no </Plda>")
    dim = mean.size
    if transform.shape != (dim, dim) or psi.size != dim:
        raise Reject("inconsistent dims")
    if not (np.isfinite(mean).all() and np.isfinite(transform).all()
            and np.isfinite(psi).all() and (psi >= 0).all()):
        raise Reject("invalid PLDA values")
    return mean, transform, psi
