"""Trials (``enroll test [target|nontarget]``; 1|0 labels too) and scores (``enroll test score``).

These are plain line files, not tables (ivector-plda-scoring reads trials with getline and
SplitStringToVector). Parsing is chunked and vectorised: numpy checks every line's field count,
``bytes.split`` cuts the fields, so ten million lines take seconds, not minutes.
"""

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import memory, outputs, streams
from pauc_backend.kaldi_io import lines as tokenizer

_CHUNK_BYTES = 1 << 22
_FIELD_HELP = {"trials file": "key1 key2 [target|nontarget|1|0]", "scores file": "key1 key2 score"}


def _gather_str(codes, starts, ends, as_str=True):
    """The tokens codes[start:end] (uint8, ASCII) as one numpy array without Python objects:
    str ('U') or, with ``as_str=False``, bytes ('S')."""
    if starts.size == 0:
        return np.array([], dtype=np.str_ if as_str else np.bytes_)
    lengths = ends - starts
    width = int(lengths.max())
    shortest = int(lengths.min())
    chars = np.empty((starts.size, width), dtype=np.uint8)
    last = codes.size - 1
    for column in range(width):  # one gather per character position: no (n, width) index
        chars[:, column] = codes[np.minimum(starts + column, last)]
        if column >= shortest:
            chars[:, column] *= column < lengths
    if as_str:
        return chars.astype(np.uint32).view("<U%d" % width).ravel()
    return chars.view("S%d" % width).ravel()


def _bad_line(piece, first_line, counts, expected, rx, what):
    allowed = (expected,) if isinstance(expected, int) else tuple(expected)
    bad = int(np.flatnonzero(~np.isin(counts, allowed))[0])
    line = piece.split(b"\n")[bad]
    return KaldiError("Bad line %d in %s %s: expected %s fields (%s), got %d: %r" % (
        first_line + bad, what, streams.printable(rx), " or ".join(map(str, allowed)),
        _FIELD_HELP.get(what, "key1 key2 value"), int(counts[bad]),
        line[:200].decode(errors="replace")))


def _check_text(piece, codes, first_line, rx, what):
    """No NUL byte (numpy's byte strings would drop a trailing one: 'ev001\\0' is not 'ev001')
    and valid UTF-8."""
    nul = piece.find(b"\0")
    if nul >= 0:
        line = piece.count(b"\n", 0, nul)
        raise KaldiError("Line %d of %s %s holds a NUL byte (byte %d of the line); keys and "
                         "values must be text" % (first_line + line, what, streams.printable(rx),
                                                  nul - (piece.rfind(b"\n", 0, nul) + 1)))
    if (codes >= 128).any():
        try:
            piece.decode("utf-8")
        except UnicodeDecodeError as err:
            line = piece.count(b"\n", 0, err.start)
            raise KaldiError("Line %d of %s is not valid UTF-8 (byte %d of the line)" % (
                first_line + line, streams.printable(rx),
                err.start - (piece.rfind(b"\n", 0, err.start) + 1))) from None


def _scan_piece(piece, codes, first_line, allowed, num_fields, what, rx):
    """Token bounds of each column of one piece (whole lines); ``num_fields`` None: the first
    line decides (it must be one of ``allowed``). Returns (columns, num_fields)."""
    simple = tokenizer.simple_bounds(codes)
    if simple is None:
        starts, ends = tokenizer.token_bounds(codes)
        line_ends = tokenizer.line_ends(codes)
    else:
        starts, ends, line_ends = simple
    if num_fields is None:
        num_fields = int(np.searchsorted(starts, line_ends[0])) if line_ends.size else 0
        if num_fields not in allowed:
            counts = np.diff(np.searchsorted(starts, line_ends), prepend=0)
            raise _bad_line(piece, first_line, counts, allowed, rx, what)
    lines = line_ends.size
    ok = starts.size == num_fields * lines
    if ok and lines:
        previous = np.concatenate([[-1], line_ends[:-1]])
        ok = bool((starts[0::num_fields] > previous).all()
                  and (ends[num_fields - 1::num_fields] <= line_ends).all())
    if not ok:
        counts = np.diff(np.searchsorted(starts, line_ends), prepend=0)
        raise _bad_line(piece, first_line, counts, num_fields, rx, what)
    _check_text(piece, codes, first_line, rx, what)
    columns = [(starts[i::num_fields], ends[i::num_fields] - starts[i::num_fields])
               for i in range(num_fields)]
    return columns, num_fields


def _scan(rx, allowed, what):
    """First pass: per chunk, the token bounds of each column (validated field counts)."""
    chunks = []
    num_fields = None
    for piece, first_line in tokenizer.iter_line_chunks(rx, _CHUNK_BYTES, what=what):
        codes = np.frombuffer(piece, np.uint8)
        columns, num_fields = _scan_piece(piece, codes, first_line, allowed, num_fields, what,
                                          rx)
        chunks.append((codes, columns))
    return num_fields, chunks


_TARGET = np.frombuffer(b"target\0\0", dtype="<u8")[0]
_NONTARGET = np.frombuffer(b"nontarge", dtype="<u8")[0]
_ONE = np.uint64(ord("1"))
_ZERO = np.uint64(ord("0"))


def _swapped_hint(label):
    """A number where the first label belongs: a scores file given as the trials."""
    try:
        float(label)
    except ValueError:
        return ""
    return (": a score, so this is a scores file: are the scores and the trials arguments "
            "swapped? The trials file has lines <key1> <key2> target|nontarget")


class FieldChunk:
    """Some whole lines of a line file, cut into fields: ``columns[i] = (starts, lengths)`` of
    field i of every line in ``buf`` (the text with 16 zero bytes before and 48 after, as
    ``numbers.parse_decimal_tokens`` wants); ``first_line`` numbers the first of them."""

    FRONT, PAD = 16, 48

    def __init__(self, rx, what, first_line, piece, columns):
        self.rx, self.what, self.first_line = rx, what, first_line
        self.buf = np.frombuffer(b"\0" * self.FRONT + piece + b"\0" * self.PAD, np.uint8)
        self.columns = [(starts + self.FRONT, lengths) for starts, lengths in columns]
        self.num_lines = columns[0][0].size if columns else 0

    def tokens(self, index):
        """Field ``index`` of every line as a numpy bytes ('S') array."""
        starts, lengths = self.columns[index]
        return _gather_str(self.buf, starts, starts + lengths, as_str=False)

    def token(self, index, row):
        start, length = self.columns[index][0][row], self.columns[index][1][row]
        return bytes(self.buf[start:start + length]).decode("utf-8", "replace")

    def labels(self, index):
        """Field ``index`` as trial labels (bool, True for a target): ``target``/``nontarget``,
        or ``1``/``0`` as in the VoxCeleb1 lists and most neural-embedding toolkits (the two
        may be mixed). Read as 8-byte words of the buffer (no token array); KaldiError naming
        the first other label."""
        starts, lengths = self.columns[index]
        head = tokenizer.byte_words(self.buf)[starts] & tokenizer.LOW_BYTES[np.minimum(lengths, 8)]
        one = lengths == 1
        is_target = ((head == _TARGET) & (lengths == 6)) | (one & (head == _ONE))
        valid = is_target | ((head == _NONTARGET) & (lengths == 9)
                             & (self.buf[starts + 8] == ord("t"))) | (one & (head == _ZERO))
        bad = np.flatnonzero(~valid)
        if bad.size:
            label = self.token(index, bad[0])
            line = self.first_line + int(bad[0])
            raise KaldiError("Bad label '%s' on line %d of %s %s (line %d: label '%s' is neither "
                             "target nor nontarget, nor 1 or 0)%s" % (
                                 label, line, self.what, streams.printable(self.rx), line, label,
                                 _swapped_hint(label) if line == 1 else ""))
        return is_target

    def floats(self, index, finite=False):
        """Field ``index`` as float64, as Python's ``float`` reads it; KaldiError naming the
        line of the first field that is not a number (with ``finite``, or that is NaN or
        infinite: then the key pair of fields 0 and 1 is named too)."""
        from pauc_backend.kaldi_io.numbers import parse_decimal_tokens
        starts, lengths = self.columns[index]
        values, ok = parse_decimal_tokens(self.buf, starts, lengths, double=True)
        rest = np.flatnonzero(~ok)
        if rest.size:
            texts = _gather_str(self.buf, starts[rest], starts[rest] + lengths[rest], False)
            if _suspect_numbers(texts.view(np.uint8)):
                for row, text in zip(rest.tolist(), texts.tolist()):
                    if _suspect_numbers(np.frombuffer(text, np.uint8)):
                        raise _bad_score(text, self.first_line + row, self.rx)
            try:
                values[rest] = texts.astype(np.float64)
            except ValueError:
                for row, text in zip(rest.tolist(), texts.tolist()):
                    try:
                        float(text)
                    except ValueError:
                        raise _bad_score(text, self.first_line + row, self.rx) from None
                raise
        # a number too large for a double (1e400) is out of range; a written inf, and NaN, are
        # numbers unless ``finite``: the first line of either kind is reported
        bad = np.flatnonzero(~np.isfinite(values) if finite else np.isinf(values))
        if bad.size:
            texts = _gather_str(self.buf, starts[bad], starts[bad] + lengths[bad], False)
            for row, text in zip(bad.tolist(), texts.tolist()):
                where = (text.decode(errors="replace"), self.first_line + row,
                         streams.printable(self.rx))
                if np.isinf(values[row]) and b"inf" not in text.lower():
                    raise KaldiError("Bad score '%s' on line %d of %s: out of range" % where)
                if finite:
                    raise KaldiError("Bad score '%s' on line %d of %s%s: not a finite number" % (
                        where + (" (trial '%s %s')" % (self.token(0, row), self.token(1, row))
                                 if index >= 2 else "",)))
        return values


def iter_fields(rx, allowed, what, chunk_bytes=None):
    """A line file streamed as ``FieldChunk`` s of about ``chunk_bytes`` (default _CHUNK_BYTES).

    Every line must have the same number of fields, one of ``allowed`` (the first line
    decides); a bad line, a NUL byte or invalid UTF-8 is a KaldiError naming the file and line.
    Memory does not grow with the file.
    """
    num_fields = None
    first_line = 1
    for piece, _ in tokenizer.iter_line_chunks(rx, chunk_bytes or _CHUNK_BYTES, what=what):
        codes = np.frombuffer(piece, np.uint8)
        columns, num_fields = _scan_piece(piece, codes, first_line, allowed, num_fields, what,
                                          rx)
        chunk = FieldChunk(rx, what, first_line, piece, columns)
        first_line += chunk.num_lines
        if chunk.num_lines:
            yield chunk


def _fill_column(chunks, index, as_str):
    """Second pass: one column gathered straight into its final array (no concatenation)."""
    total = sum(chunk[1][index][0].size for chunk in chunks)
    width = max((int(chunk[1][index][1].max()) for chunk in chunks
                 if chunk[1][index][1].size), default=1)
    unicode = as_str and any((codes >= 128).any() for codes, _ in chunks)
    # ASCII text goes straight into the code points of a 'U' array; bytes otherwise
    chars = memory.fresh_array((total, width), np.uint32 if as_str and not unicode
                                else np.uint8)
    row = 0
    for codes, columns in chunks:
        starts, lengths = columns[index]
        count = starts.size
        if count == 0:
            continue
        block = chars[row:row + count]
        last = codes.size - 1
        shortest = int(lengths.min())
        for column in range(int(lengths.max())):  # one gather per character position
            block[:, column] = codes[np.minimum(starts + column, last)]
            if column >= shortest:
                block[:, column] *= column < lengths
        row += count
    if not as_str:
        return chars.view("S%d" % width).ravel()
    if unicode:
        return np.char.decode(chars.view("S%d" % width).ravel(), "utf-8")
    return chars.view("<U%d" % width).ravel()


def _read_columns(rx, allowed, what, numeric_last=False):
    """The columns of a line file as numpy str arrays (the last as float64 if numeric_last).

    Every line must have the same number of fields, one of ``allowed``; otherwise a KaldiError
    names the line. Two passes over chunks: numpy finds the token boundaries and checks the
    field counts, then each column is gathered straight into its final array.
    """
    num_fields, chunks = _scan(rx, allowed, what)
    if not num_fields:
        return []
    columns = [_fill_column(chunks, i, True) for i in range(num_fields - 1)]
    if not numeric_last:
        return columns + [_fill_column(chunks, num_fields - 1, True)]
    texts = _fill_column(chunks, num_fields - 1, False)
    if any(_suspect_numbers(codes) for codes, _ in chunks):
        _check_numbers(texts, 1, rx)
    try:
        return columns + [texts.astype(np.float64)]
    except ValueError:
        for number, value in enumerate(texts.tolist(), 1):  # every line has one row
            try:
                float(value)
            except ValueError:
                raise _bad_score(value, number, rx) from None
        raise


def _suspect_numbers(codes):
    """Whether text (uint8) holds a byte that Python's ``float`` reads inside a number but C's
    strtod does not: ``_`` (``1_000``) or a non-ASCII byte (Arabic-Indic or full-width digits)."""
    return bool((codes == 95).any() or (codes >= 128).any())


def _check_numbers(texts, first_line, rx, step=1 << 20):
    """KaldiError for the first token of ``texts`` ('S' array, one per line from ``first_line``)
    that only Python's ``float`` would read (see ``_suspect_numbers``)."""
    width = texts.dtype.itemsize
    for start in range(0, texts.size, step):
        raw = texts[start:start + step].view(np.uint8).reshape(-1, width)
        bad = np.flatnonzero(((raw == 95) | (raw >= 128)).any(axis=1))
        if bad.size:
            row = start + int(bad[0])
            raise _bad_score(texts[row], first_line + row, rx)


def _bad_score(text, line, rx):
    return KaldiError("Bad score '%s' on line %d of %s: not a number (as C's strtod and Kaldi "
                      "read numbers: digits, '.', an exponent, inf or nan)" % (
                          text.decode(errors="replace"), line, streams.printable(rx)))


def read_trials(rxfilename):
    """``(key1, key2, labels)`` as numpy str arrays; labels is None for a 2-column file.

    Every line must have the same number of fields (2 or 3); a bad line is a KaldiError naming
    the file and the line number.
    """
    columns = _read_columns(rxfilename, (2, 3), "trials file")
    if not columns:
        empty = np.array([], dtype=np.str_)
        return empty, empty.copy(), None
    return columns[0], columns[1], columns[2] if len(columns) == 3 else None


def read_scores(rxfilename):
    """``(key1, key2, scores)`` of a ``key1 key2 score`` file; scores float64."""
    columns = _read_columns(rxfilename, (3,), "scores file", numeric_last=True)
    if not columns:
        empty = np.array([], dtype=np.str_)
        return empty, empty.copy(), np.zeros(0)
    return tuple(columns)


def _as_list(keys):
    return keys.tolist() if isinstance(keys, np.ndarray) else list(keys)


def format_scores(key1, key2, scores):
    """``k1 k2 %.7g\n`` lines (bytes) of the float32-rounded scores, as ivector-plda-scoring.

    Keys may be str or bytes (numpy 'U' or 'S' arrays, or lists)."""
    values = np.asarray(scores, dtype=np.float32).astype(np.float64).tolist()
    key1, key2 = _as_list(key1), _as_list(key2)
    if key1 and isinstance(key1[0], bytes):
        return b"".join(map(b"%s %s %.7g\n".__mod__, zip(key1, key2, values)))
    return "".join(map("%s %s %.7g\n".__mod__, zip(key1, key2, values))).encode("utf-8")


def write_scores(wxfilename, key1, key2, scores):
    """Write ``k1 k2 score`` lines (score = float32 printed ``%.7g``, as Kaldi) atomically."""
    if not len(key1) == len(key2) == len(scores):
        raise KaldiError("write_scores: %d, %d and %d keys/scores" % (
            len(key1), len(key2), len(scores)))
    step = 1 << 20
    with outputs.open_output(wxfilename) as stream:
        for begin in range(0, len(scores), step):
            stream.write(format_scores(key1[begin:begin + step], key2[begin:begin + step],
                                       scores[begin:begin + step]))
