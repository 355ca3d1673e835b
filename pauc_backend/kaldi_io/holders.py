"""Kaldi's table holders (util/kaldi-holder-inl.h, text-utils.h): how one value of a table is
read from and encoded into an archive.

``vector`` (float32, Kaldi's BaseFloat vector tables, always written as FV), ``double_vector``,
``matrix`` (float32, FM), ``double_matrix``, ``int32`` (``num_utts.ark``), ``float``
(BaseFloat scalars: ``utt2dur``, ``utt2num_frames`` read as floats, quality measures),
``token`` (utt2spk) and ``token_vector`` (spk2utt); ``check_token`` is Kaldi's IsToken for keys.
"""

import re
import struct

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import codec, streams
from pauc_backend.kaldi_io.lines import MAX_LIST_LINE_BYTES

_TOKEN = re.compile(rb"[^ \t\n\v\f\r]+")
_BLANKS = re.compile(rb"[ \t\v\f\r]*")

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


class _FloatHolder(_Holder):
    """BasicHolder<BaseFloat>: binary ``\0B\x04<float32>`` (or ``\x08<float64>``), text
    ``3.52 \n`` (utt2dur). A text error names the line, as these tables are often hand-made."""
    name = "float"

    def read(self, cur):
        if codec.read_binary_header(cur):
            return codec.read_float(cur, True)
        cur.pos = _BLANKS.match(cur.data, cur.pos).end()
        match = _TOKEN.match(cur.data, cur.pos)
        if match is None:
            raise self._error(cur, "found the end of the line, expected a number")
        try:
            if b"_" in match.group():       # Python's float takes "1_0" as 10; C++ does not
                raise ValueError
            value = float(match.group())
        except ValueError:
            raise self._error(cur, "got %s, not a number" % codec.show(match.group())) \
                from None
        cur.pos = _BLANKS.match(cur.data, match.end()).end()
        nxt = cur.data[cur.pos:cur.pos + 1]
        if nxt == b"\n":
            cur.pos += 1
        elif nxt:
            raise self._error(cur, "expected one number, got more (%s)" % codec.show(
                _TOKEN.match(cur.data, cur.pos).group()))
        return value

    @staticmethod
    def _error(cur, problem):
        """The problem on its line (whole-file input) or at its byte (a stream's tail)."""
        if cur.base:
            return cur.error("Failed to read float: " + problem)
        line = 1 + int(np.count_nonzero(
            np.frombuffer(cur.data, dtype=np.uint8, count=cur.pos) == ord("\n")))
        return KaldiError("Bad value for key '%s' on line %d of %s: %s" % (
            cur.key, line, streams.printable(cur.name), problem))

    def encode(self, value, binary):
        value = float(value)
        if binary:
            return b"\0B" + struct.pack("<bf", 4, value)
        return b"%g \n" % float(np.float32(value))     # WriteBasicType<float>: os << f << " "


class _TokenHolder(_Holder):
    """TokenHolder (utt2spk): one token then newline; text only."""
    name = "token"

    def read(self, cur):
        cur.skip_whitespace()
        match = codec.token_match(cur)
        if match is None:
            raise cur.error("Failed to read token: end of input")
        cur.pos = match.end()
        _end_of_line(cur, "token")
        return decode_token(match.group(), cur, match.start())

    def encode(self, value, binary):
        check_token(value, "token")
        return value.encode() + b"\n"


class _TokenVectorHolder(_Holder):
    """TokenVectorHolder (spk2utt): the rest of the line split at whitespace; text only."""
    name = "token_vector"

    def read(self, cur):
        end = cur.data.find(b"\n", cur.pos, cur.pos + MAX_LIST_LINE_BYTES + 1)
        if end < 0 and len(cur.data) - cur.pos > MAX_LIST_LINE_BYTES:
            raise cur.error("Failed to read token_vector: a line longer than %d MiB (an endless "
                            "line?)" % (MAX_LIST_LINE_BYTES >> 20))
        end = len(cur.data) if end < 0 else end
        line = bytes(cur.data[cur.pos:end])
        start = cur.pos
        cur.pos = min(end + 1, len(cur.data))
        return [decode_token(token, cur, start) for token in line.split()]

    def encode(self, value, binary):
        if isinstance(value, str):
            raise KaldiError("A token_vector value must be a list of tokens, not a string")
        for token in value:
            check_token(token, "token")
        return "".join(token + " " for token in value).encode() + b"\n"


HOLDERS = {
    "vector": _VectorHolder("vector", np.dtype(np.float32)),
    "double_vector": _VectorHolder("double_vector", np.dtype(np.float64)),
    "matrix": _MatrixHolder("matrix", np.dtype(np.float32)),
    "double_matrix": _MatrixHolder("double_matrix", np.dtype(np.float64)),
    "int32": _Int32Holder(),
    "float": _FloatHolder(),
    "token": _TokenHolder(),
    "token_vector": _TokenVectorHolder(),
}


def get_holder(name):
    try:
        return HOLDERS[name]
    except KeyError:
        raise ValueError("unknown holder %r (one of %s)" % (name, ", ".join(HOLDERS))) from None


def decode_token(raw, cur, pos):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise KaldiError("Invalid key or token (not valid UTF-8) at byte %d of %s: %r" % (
            cur.base + pos + err.start, streams.printable(cur.name), bytes(raw[:40]))) from None


def check_token(token, what="key"):
    """Kaldi's IsToken (util/text-utils.cc): non-empty, no ASCII whitespace, no ASCII control
    character. Like Kaldi, other characters (also Unicode spaces such as U+00A0) are part of
    the token: every reader here splits lines at ASCII whitespace only, as Kaldi does."""
    if not isinstance(token, str) or not token or _BAD_KEY_CHAR.search(token):
        raise KaldiError("Invalid %s %r: must be non-empty, without whitespace or control "
                         "characters" % (what, token))


_BAD_KEY_CHAR = re.compile(r"[\x00-\x20\x7f]")


def check_keys(keys):
    """check_token over many keys at once."""
    if not all(isinstance(k, str) and k for k in keys) or _BAD_KEY_CHAR.search("".join(keys)):
        for key in keys:
            check_token(key)
