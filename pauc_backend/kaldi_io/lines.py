"""The one tokenizer of Kaldi line files (trials, score files, key tables, script files).

Kaldi reads these with ``getline`` and splits at C-locale whitespace (SplitStringToVector);
here a chunk of whole lines is a uint8 array and numpy finds every token at once:
``token_bounds`` (start and end offset of each whitespace-separated token), ``line_ends``,
``simple_bounds`` (the same in one comparison for the usual one-blank text), and ``byte_words``
with ``LOW_BYTES``/``HIGH_BYTES`` and ``token_words`` to compare tokens as 8-byte words.

Line files are read through ``iter_line_chunks`` (streamed) or ``read_line_file`` (whole), which
bound every line: ``MAX_LINE_BYTES`` for trials, scores, key lists, scripts and the keys and
tokens of archives and objects, ``MAX_LIST_LINE_BYTES`` for a line holding a list (text vectors,
a text matrix row, a spk2utt line). Kaldi's ``getline``
has no bound, so an endless line (``/dev/zero``, a binary file given as text) fills the memory
before any error; here it is one KaldiError naming the file and line after at most the bound
(plus one read) is held. A UTF-8 byte-order mark at the start of a Kaldi line file is an error
too: Kaldi would make it part of the first key.
"""

import os
import stat

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import streams

__all__ = ["IS_SEP", "token_bounds", "line_ends", "simple_bounds", "byte_words", "LOW_BYTES",
           "HIGH_BYTES", "token_words", "MAX_LINE_BYTES", "MAX_LIST_LINE_BYTES", "UTF8_BOM",
           "iter_line_chunks", "read_line_file", "first_long_line", "long_line_error",
           "check_no_bom", "regular_file", "parse_growing"]

MAX_LINE_BYTES = 1 << 20
"""The longest line of a line file (trials, scores, key lists, script files, VoxCeleb lists) and
the longest key or token of an archive: 1 MiB (real ones are well under a kilobyte)."""
MAX_LIST_LINE_BYTES = 1 << 24
"""The longest line holding a list: text embeddings (import-vectors' ``key v1 v2 ...``), a Kaldi
text vector (``key [ v1 v2 ... ]``) or matrix row, a spk2utt line: 16 MiB, a million values of
up to 15 characters and a blank (or 600,000 utterance keys of 25 characters)."""
UTF8_BOM = b"\xef\xbb\xbf"

IS_SEP = np.zeros(256, dtype=bool)  # C isspace(): the bytes Kaldi splits fields at
IS_SEP[list(b" \t\n\v\f\r")] = True


def simple_bounds(codes):
    """(starts, ends, line ends) when every byte <= 32 is a lone space or newline between tokens
    and the text ends with a newline (the usual file): one comparison finds them all. None
    otherwise."""
    if codes.size < 2 or codes[-1] != 10 or codes[0] <= 32:
        return None
    cuts = np.flatnonzero(codes <= 32)
    kinds = codes[cuts]
    newline = kinds == 10
    if not (newline | (kinds == 32)).all() or not (cuts[1:] - cuts[:-1] > 1).all():
        return None
    starts = np.empty_like(cuts)
    starts[0] = 0
    starts[1:] = cuts[:-1] + 1
    return starts, cuts, cuts[newline]


def token_bounds(codes):
    """Start and end offsets of the whitespace-separated tokens of a uint8 array."""
    if codes.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    sep = IS_SEP[codes]
    edges = np.flatnonzero(sep[1:] != sep[:-1]) + 1
    if not sep[0]:
        edges = np.concatenate([[0], edges])
    if not sep[-1]:
        edges = np.concatenate([edges, [codes.size]])
    return edges[0::2], edges[1::2]


def line_ends(codes):
    """Offsets of the newlines of a uint8 array, plus its end if the last line has none."""
    ends = np.flatnonzero(codes == 10)
    if codes.size and codes[-1] != 10:
        ends = np.append(ends, codes.size)
    return ends


def byte_words(buf):
    """Every 8-byte little-endian word of ``buf``, one per byte offset (an overlapping view)."""
    return np.ndarray(shape=(buf.size - 7,), dtype="<u8", buffer=buf, strides=(1,))


def _byte_masks(high):
    """uint64 masks keeping the ``n`` high bytes (``high``) or ``n`` low bytes, n = 0..8."""
    n = np.arange(9, dtype=np.uint64)
    low = np.where(n == 8, np.uint64(0xFFFFFFFFFFFFFFFF),
                   (np.uint64(1) << (n * np.uint64(8))) - np.uint64(1))
    return ~low[::-1] if high else low


HIGH_BYTES, LOW_BYTES = _byte_masks(True), _byte_masks(False)


def token_words(buf, starts, lengths):
    """(w, n) uint64: each token's bytes as little-endian 8-byte words, zero past its end (one
    contiguous row per word position, so comparisons run on whole rows, not along axis 1).
    ``buf`` (uint8) must extend at least 8 bytes past each token's last word (a FieldChunk's
    buffer has 48 zero bytes after the text)."""
    words = byte_words(buf)
    width = max(1, -(-int(lengths.max()) // 8))
    out = np.empty((width, starts.size), dtype=np.uint64)
    for k in range(width):
        out[k] = words[starts + 8 * k]
        if k or int(lengths.min()) < 8:
            out[k] &= LOW_BYTES[np.minimum(np.maximum(lengths - 8 * k, 0), 8)]
    return out


# -- bounded reading of line files -------------------------------------------------------------

def _size_text(size):
    return "%d MiB" % (size >> 20) if size % (1 << 20) == 0 else "%d bytes" % size


def long_line_error(rx, line, max_line, what="file"):
    """The KaldiError for line ``line`` of ``rx`` longer than ``max_line`` bytes."""
    return KaldiError("Line %d of %s %s has no newline within %s (the longest line a %s may have):"
                      " an endless line, or not a text file" % (
                          line, what, streams.printable(rx), _size_text(max_line), what))


def first_long_line(data, start, end, max_line):
    """Offset of the first line of ``data[start:end]`` longer than ``max_line`` bytes (newline
    not counted; a last line without one counts too), or -1. One ``rfind`` per ``max_line``
    bytes: no per-line work."""
    pos = start
    while end - pos > max_line:
        newline = data.rfind(b"\n", pos, pos + max_line + 1)
        if newline < 0:
            return pos
        pos = newline + 1
    return -1


def check_no_bom(data, start, rx, what="file"):
    """KaldiError if ``data[start:]`` starts with a UTF-8 byte-order mark."""
    if bytes(data[start:start + 3]) == UTF8_BOM:
        raise KaldiError("%s %s starts with a UTF-8 byte-order mark (bytes EF BB BF), which "
                         "Kaldi would read as part of its first key; save it without one (e.g. "
                         "sed -i '1s/^\\xEF\\xBB\\xBF//' <file>)"
                         % (what[:1].upper() + what[1:], streams.printable(rx)))


def iter_line_chunks(rx, chunk_bytes=streams.CHUNK_BYTES, max_line=MAX_LINE_BYTES,
                     what="file", bom_error=True):
    """An rxfilename read in pieces of about ``chunk_bytes`` that end at a newline (the last
    may not): yields ``(piece, number of its first line)``. A line longer than ``max_line``
    bytes (or, with ``bom_error``, a byte-order mark at the start) is a KaldiError naming
    ``what`` and the line, raised once at most ``max_line + chunk_bytes`` bytes are held, so
    memory does not grow with the input; a failing input pipe is an error once read to its
    end."""
    with streams.open_input(rx) as stream:
        carry = b""
        line = 1
        first = bom_error
        while True:
            block = stream.read(chunk_bytes)
            if not block:
                break
            data = carry + block if carry else block
            if first and len(data) >= 3:
                check_no_bom(data, 0, rx, what)
                first = False
            cut = data.rfind(b"\n") + 1
            long = first_long_line(data, 0, cut, max_line)
            if long < 0 and len(data) - cut > max_line:
                long = cut
            if long >= 0:
                raise long_line_error(rx, line + data.count(b"\n", 0, long), max_line, what)
            if cut == 0:                  # a line longer than a chunk: read on
                carry = data
                continue
            piece, carry = data[:cut], data[cut:]
            yield piece, line
            line += piece.count(b"\n")
        if carry:
            if first:
                check_no_bom(carry, 0, rx, what)
            yield carry, line


def regular_file(rx):
    """Whether ``rx`` names a regular file (or a path that cannot be looked at, which the
    reader then reports): False for stdin, a pipe, a device or a FIFO, whose end is unknown."""
    kind, what = streams.classify_rxfilename(rx)
    if kind not in ("file", "offset"):
        return False
    try:
        return stat.S_ISREG(os.stat(what if kind == "file" else what[0]).st_mode)
    except OSError:
        return True


def read_line_file(rx, max_line=MAX_LINE_BYTES, what="file", bom_error=True):
    """The whole of a line file as ``(buffer, start)`` (``streams.read_all``'s form) with every
    line at most ``max_line`` bytes (see ``iter_line_chunks``): a regular file is mapped and
    checked, anything else (stdin, a pipe, a device) is read chunk by chunk and stops at the
    first over-long line."""
    if regular_file(rx):
        data, start = streams.read_all(rx)
        if bom_error:
            check_no_bom(data, start, rx, what)
        long = first_long_line(data, start, len(data), max_line)
        if long >= 0:
            raise long_line_error(rx, 1 + data[start:long].count(b"\n"), max_line, what)
        return data, start
    buf = bytearray()
    for piece, _ in iter_line_chunks(rx, max_line=max_line, what=what, bom_error=bom_error):
        buf += piece
    return buf, 0


def parse_growing(data, parse, eof, state):
    """One attempt of a parser on input that may still grow: ``parse(data)``'s value, or None
    when more input is needed (``parse`` failed, or its object reached the end of ``data``
    and may go on). ``state`` (a list, empty at first) remembers the failure: a KaldiError is
    raised at EOF, or when the same failure persists after ``MAX_LIST_LINE_BYTES`` more bytes
    (no bounded line or token can still complete it: an endless line, binary data as text).
    ``parse`` returns ``(value, end)``."""
    try:
        value, end = parse(data)
    except KaldiError as err:
        if eof:
            raise
        message = str(err)
        if not state or state[0] != message:
            state[:] = [message, len(data)]
        elif len(data) - state[1] > MAX_LIST_LINE_BYTES:
            raise
        return None
    if end < len(data) or eof:
        return value, end
    state[:] = []
    return None
