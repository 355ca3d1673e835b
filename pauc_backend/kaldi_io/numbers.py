"""Kaldi's numbers in text: ``ConvertStringToReal`` (strtof) on one field, vectorised decoding
of many, and compute-eer's ``score target|nontarget`` input (streamed in chunks).

``read_score_labels`` accepts exactly what Kaldi's compute-eer accepts and fails with its words:
lines (``getline``; a last line without a newline counts) split on spaces and tabs with empty
fields dropped, exactly two fields, the score parsed by ``ConvertStringToReal<float>`` (strtof,
correctly rounded to float32, surrounding \\r\\v\\f allowed, ``inf``/``nan`` words accepted,
overflow refused), the label ``target`` or ``nontarget``. NaN and infinite scores, which Kaldi
accepts and then sorts into nonsense, are refused here (naming the line).

Speed: the text is cut into 1 MB chunks at newlines; a chunk of canonical lines
(``<number> <label>\n``, one blank; tabs and extra blanks are first normalised) is parsed with
numpy alone. Newline and blank positions give the fields, labels are compared as 8-byte words,
and numbers ``[+-]digits[.digits]`` are decoded as rows of 16 bytes: the integer part is shifted
over the dot, each half of the row is read as 8 digits at once, and the integer mantissa m with
f fraction digits becomes float32 by one correctly rounded float32 division m / 10^f when both
are exact in float32 (m < 2^24, f <= 10), or else by Clinger's correctly rounded double
m / 10^f rounded to float32, with the rare double-rounding ties redone exactly. Exponents, long
tokens and anything unusual go to slower exact paths; a chunk the fast path cannot vouch for is
re-read line by line with the exact rules, which also finds the first bad line for the error
message.
"""

import math
import re
from fractions import Fraction

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import memory, streams
from pauc_backend.kaldi_io.lines import HIGH_BYTES as _HIGH_BYTES
from pauc_backend.kaldi_io.lines import LOW_BYTES as _LOW_BYTES
from pauc_backend.kaldi_io.lines import byte_words as _words
from pauc_backend.kaldi_io.lines import iter_line_chunks

__all__ = ["read_score_labels", "iter_score_labels", "parse_score_labels",
           "kaldi_string_to_float", "parse_decimal_tokens"]

_CHUNK_BYTES = 1 << 20
_FRONT, _PAD = 16, 48   # zero bytes around a chunk, so fixed-width reads stay inside
_BLANKS = re.compile(rb"[ \t]+")
_EDGE_BLANKS = re.compile(rb"^ | $", re.MULTILINE)
_NUMBER = re.compile(rb"[ \t\n\r\x0b\x0c]*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_INF_NAN = {b"INF": math.inf, b"+INF": math.inf, b"-INF": -math.inf, b"INFINITY": math.inf,
            b"+INFINITY": math.inf, b"-INFINITY": -math.inf, b"NAN": math.nan,
            b"+NAN": math.nan, b"-NAN": math.nan, b"1.#INF": math.inf, b"-1.#INF": -math.inf,
            b"1.#QNAN": math.nan, b"-1.#QNAN": math.nan}
_FLT_OVERFLOW = Fraction(2) ** 128 - Fraction(2) ** 103   # rounds to inf (ties to even)
_POW10 = 10.0 ** np.arange(23)
_U = np.uint64


# -- one token, exactly as Kaldi ------------------------------------------------------------

def _round_float32(text):
    """strtof: the float32 nearest to the decimal ``text`` (ties to even); None on overflow."""
    mantissa, _, exponent = text.lower().partition(b"e")
    negative = text.startswith(b"-")
    whole, _, fraction = mantissa.lstrip(b"+-").partition(b".")
    whole = whole.lstrip(b"0")
    if not (whole + fraction).strip(b"0"):
        return -0.0 if negative else 0.0
    # |value| is in [10^(top-1), 10^top): far outside float32 no exact arithmetic is needed
    # (and none must be tried: 1e999999999 would take forever as a Fraction).
    leading_zeros = len(fraction) - len(fraction.lstrip(b"0"))
    top = int(exponent or b"0") + (len(whole) if whole else -leading_zeros)
    if top >= 40:
        return None
    if top <= -46:
        return -0.0 if negative else 0.0
    exact = Fraction(text.decode("ascii"))
    if abs(exact) >= _FLT_OVERFLOW:
        return None
    guess = np.float32(float(exact))
    with np.errstate(over="ignore"):
        candidates = [c for c in (np.nextafter(guess, np.float32(-np.inf)), guess,
                                  np.nextafter(guess, np.float32(np.inf))) if np.isfinite(c)]
    best = min(candidates, key=lambda c: (abs(Fraction(float(c)) - exact),
                                          int(np.array(c).view(np.uint32)) & 1))
    value = float(best)
    return -0.0 if value == 0 and negative else value


def kaldi_string_to_float(token):
    """``ConvertStringToReal<float>`` (util/text-utils.cc) on one field: float or None."""
    match = _NUMBER.match(token)
    if match and not token[match.end():].strip(b" \t\n\r\x0b\x0c"):
        return _round_float32(match.group(1))
    words = token.split()
    if len(words) == 1:
        return _INF_NAN.get(words[0].upper())
    return None


def _parse_lines_exactly(piece, first_line=1, name=None):
    """The Kaldi loop over the lines of ``piece``: (float32 scores, is_target). An error is
    Kaldi's message, then (when ``name`` is given) ``(line N of <name>)``."""
    lines = piece.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    scores = np.empty(len(lines), dtype=np.float32)
    is_target = np.empty(len(lines), dtype=bool)
    for index, line in enumerate(lines):
        where = "" if name is None else " (line %d of %s)" % (first_line + index, name)
        fields = [f for f in line.replace(b"\t", b" ").split(b" ") if f]
        if len(fields) != 2:
            raise KaldiError("Invalid input line (must have two fields): " + _text(line) + where)
        value = kaldi_string_to_float(fields[0])
        if value is None:
            raise KaldiError("Invalid input line (first field must be float): " + _text(line)
                             + where)
        if fields[1] == b"target":
            is_target[index] = True
        elif fields[1] == b"nontarget":
            is_target[index] = False
        else:
            raise KaldiError("Invalid input line (second field must be 'target' or "
                             "'nontarget')" + where)
        if not math.isfinite(value):
            raise KaldiError("Invalid input line (score is %s): " % (
                "NaN" if math.isnan(value) else "infinite") + _text(line) + where)
        scores[index] = value
    return scores, is_target


def _text(line):
    return line.decode("utf-8", errors="surrogateescape")


# -- many tokens at once -------------------------------------------------------------------

def _eight_digits(words):
    """Value of 8 ASCII digits packed little-endian in uint64 (first digit in the low byte)."""
    v = words - _U(0x3030303030303030)
    v = v * _U(10) + (v >> _U(8))
    v = ((v & _U(0x000000FF000000FF)) * _U(0x000F424000000064)
         + ((v >> _U(16)) & _U(0x000000FF000000FF)) * _U(0x0000271000000001)) >> _U(32)
    return v & _U(0xFFFFFFFF)


def _all_digits(words):
    return ((words & _U(0xF0F0F0F0F0F0F0F0))
            | (((words + _U(0x0606060606060606)) & _U(0xF0F0F0F0F0F0F0F0)) >> _U(4))
            ) == _U(0x3333333333333333)


_ZEROS = _U(0x3030303030303030)
_ONES = _U(0x0101010101010101)
_HIGH_BITS = _U(0x8080808080808080)


def _digits_at(words, positions, keep):
    """The 8-byte words at ``positions`` with the bytes outside ``keep`` replaced by '0'."""
    return (words[positions] & keep) | (_ZEROS & ~keep)


def _first_byte(chunks, keeps, byte):
    """Index of the first byte equal to ``byte`` in the concatenated words, or -1."""
    found = np.full(chunks[0].size, -1, dtype=np.int64)
    for k in range(len(chunks) - 1, -1, -1):
        x = chunks[k] ^ (_ONES * _U(byte))
        hits = (x - _ONES) & ~x & _HIGH_BITS & keeps[k]   # exact for the lowest hit
        lowest = (hits & (~hits + _U(1))).astype(np.float64)
        index = (np.frexp(lowest)[1].astype(np.int64) - 1) // 8 + 8 * k
        found = np.where(hits != 0, index, found)
    return found


def _decode_general(buf, starts, lengths):
    """Per-token decoding of ``[+-]?d{0,8}[.d{0,16}][eE[+-]d{1,3}]`` (at most 24 bytes, at
    least one mantissa digit): (float32 values, decoded mask)."""
    words = _words(buf)
    ok = lengths <= 24
    lengths = np.minimum(lengths, 24)          # longer tokens are refused; keep reads in range
    chunks = [words[starts + 8 * k] for k in range(3)]
    keeps = [_LOW_BYTES[np.clip(lengths - 8 * k, 0, 8)] for k in range(3)]
    first = chunks[0] & _U(0xFF)
    negative = first == _U(45)
    signed = (negative | (first == _U(43))).astype(np.int64)
    dot = _first_byte(chunks, keeps, 0x2E)
    exp = _first_byte([c | _U(0x2020202020202020) for c in chunks], keeps, 0x65)
    has_exp = exp >= 0
    mant_end = np.where(has_exp, exp, lengths)
    has_dot = (dot >= 0) & (dot < mant_end)
    int_end = np.where(has_dot, dot, mant_end)
    num_int = int_end - signed
    num_frac = np.where(has_dot, mant_end - dot - 1, 0)
    ok &= (num_int >= 0) & (num_int <= 8) & (num_frac <= 16) & (num_int + num_frac >= 1)
    num_int = np.clip(num_int, 0, 8)
    num_frac = np.clip(num_frac, 0, 16)
    integer = _digits_at(words, starts + int_end - 8, _HIGH_BYTES[num_int])
    frac_hi = _digits_at(words, starts + int_end + 1, _LOW_BYTES[np.minimum(num_frac, 8)])
    frac_lo = _digits_at(words, starts + int_end + 9, _LOW_BYTES[np.maximum(num_frac - 8, 0)])
    ok &= _all_digits(integer) & _all_digits(frac_hi) & _all_digits(frac_lo)
    mantissa = _eight_digits(integer)
    # 16 fraction digits left-aligned: drop the padding zeros, append to the integer part.
    fraction = ((_eight_digits(frac_hi) * _U(10 ** 8) + _eight_digits(frac_lo))
                // _POW10_U[16 - num_frac])
    ok &= mantissa.astype(np.float64) * _POW10[num_frac] + fraction < 2.0 ** 53
    mantissa = mantissa * _POW10_U[num_frac] + fraction
    power = -num_frac
    rows = np.flatnonzero(has_exp & ok)
    if rows.size:
        value, good = _exponents(words[starts[rows] + exp[rows] + 1],
                                 lengths[rows] - exp[rows] - 1)
        power[rows] += value
        ok[rows] &= good
    ok &= np.abs(power) <= 22
    scale = _POW10[np.minimum(np.abs(power), 22)]
    exact = mantissa.astype(np.float64)
    exact = np.where(power >= 0, exact * scale, exact / scale)
    exact = np.where(negative, -exact, exact)
    with np.errstate(over="ignore"):
        values = exact.astype(np.float32)
    ok &= np.isfinite(values)
    back = values.astype(np.float64)
    off = exact - back
    neighbour = np.nextafter(values, np.where(off > 0, np.float32(np.inf),
                                              np.float32(-np.inf))).astype(np.float64)
    ok &= (off == 0) | (exact != 0.5 * (back + neighbour))
    return values, ok


_POW10_U = np.array([10 ** k for k in range(17)], dtype=np.uint64)


def _exponents(words, lengths):
    """``[+-]d{1,3}`` exponents from the words that start them: (values, well-formed)."""
    byte = [((words >> _U(8 * k)) & _U(0xFF)).astype(np.int64) for k in range(4)]
    sign = ((byte[0] == 45) | (byte[0] == 43)).astype(np.int64)
    digits = lengths - sign
    good = (digits >= 1) & (digits <= 3)
    value = np.zeros(words.size, dtype=np.int64)
    for k in range(3):
        d = np.choose(np.minimum(sign + k, 3), byte) - 48
        inside = k < digits
        good &= ~inside | ((d >= 0) & (d <= 9))
        value = np.where(inside, value * 10 + d, value)
    return np.where(byte[0] == 45, -value, value), good


def _strtof(mantissa, num_frac, negative):
    """float32 of (-1)^negative mantissa / 10^num_frac, as strtof rounds it, and a mask of the
    rows where that is certain (mantissa < 2^53 and num_frac <= 22 are the caller's duty)."""
    small = (mantissa < 2.0 ** 24) & (num_frac <= 10)
    with np.errstate(over="ignore"):
        # Both operands exact in float32: one correctly rounded float32 division.
        values = mantissa.astype(np.float32) / _POW10_F32[np.minimum(num_frac, 10)]
        ok = small.copy()
        big = np.flatnonzero(~small)
        if big.size:
            exact = mantissa[big] / _POW10[num_frac[big]]   # Clinger: correctly rounded
            near = exact.astype(np.float32)
            back = near.astype(np.float64)
            off = exact - back
            other = np.nextafter(near, np.where(off > 0, np.float32(np.inf),
                                                np.float32(-np.inf))).astype(np.float64)
            values[big] = near
            ok[big] = (off == 0) | (exact != 0.5 * (back + other))
    return np.where(negative, -values, values), ok


_POW10_F32 = (10.0 ** np.arange(11)).astype(np.float32)


def _row_masks(keep):
    """17 rows of 16 bytes: row k is 0xFF where ``keep(column, k)``, else 0 (a V16 table)."""
    columns, k = np.meshgrid(np.arange(16), np.arange(17))
    table = np.where(keep(columns, k), 0xFF, 0).astype(np.uint8)
    return np.ndarray(shape=(17,), dtype="V16", buffer=table)


_INSIDE = _row_masks(lambda c, length: c >= 16 - length)        # by token length
_AFTER_DOT = _row_masks(lambda c, dot: (c > dot) | (dot == 16))  # by dot column (16: none)
_DIGITS = _row_masks(lambda c, start: c >= start)              # by first digit column


def _mask_rows(table, index):
    return table[index].view(np.uint8).reshape(-1, 16)


def parse_decimal_tokens(buf, starts, lengths, double=False):
    """float32 values of the tokens buf[starts:starts+lengths] and a mask of those decoded
    (float64 values as Python's ``float`` with ``double=True``; then only the 16-byte rows are
    decoded, m / 10^f being one correctly rounded division for m < 2^53).

    ``buf`` is a uint8 array with at least 16 bytes before the first token and 48 after
    the last. Tokens ``[+-]?digits[.digits]`` of at most 16 bytes are decoded together as rows of
    16 bytes ending with the token: the bytes before the dot move one column right over it, the
    columns outside the digits become '0', and each half of a row is read as 8 digits at once.
    The rest go to ``_decode_general``; values equal strtof's. Undecoded tokens are for
    ``kaldi_string_to_float``.
    """
    count = starts.size
    if count == 0:
        return np.zeros(0, dtype=np.float64 if double else np.float32), np.zeros(0, bool)
    rows16 = np.ndarray(shape=(buf.size - 15,), dtype="V16", buffer=buf, strides=(1,))
    row = rows16[starts + lengths - 16].view(np.uint8).reshape(count, 16)
    row &= _mask_rows(_INSIDE, np.minimum(lengths, 16))
    is_dot = row == 46
    dot_words = is_dot.view("<u8")
    has_dot = (dot_words[:, 0] | dot_words[:, 1]) != 0
    dot = np.where(has_dot, is_dot.argmax(axis=1), 16)
    first = buf[starts]
    negative = first == 45
    digits = lengths - has_dot - (negative | (first == 43))
    shifted = np.empty_like(row)
    shifted[:, 0] = 48
    shifted[:, 1:] = row[:, :-1]
    keep = _mask_rows(_AFTER_DOT, dot)
    row = (row & keep) | (shifted & ~keep)
    keep = _mask_rows(_DIGITS, 16 - np.clip(digits, 0, 16))
    row = (row & keep) | (np.uint8(48) & ~keep)
    high = np.ascontiguousarray(row.view("<u8")[:, 0])
    low = np.ascontiguousarray(row.view("<u8")[:, 1])
    ok = (lengths <= 16) & (digits >= 1) & _all_digits(high) & _all_digits(low)
    mantissa = _eight_digits(high) * _U(10 ** 8) + _eight_digits(low)
    ok &= mantissa < _U(1 << 53)
    num_frac = np.where(has_dot, 15 - dot, 0)
    if double:
        values = mantissa.astype(np.float64) / _POW10[num_frac]
        return np.where(negative, -values, values), ok
    values, certain = _strtof(mantissa.astype(np.float64), num_frac, negative)
    ok &= certain
    rest = np.flatnonzero(~ok)
    if rest.size:
        values[rest], ok[rest] = _decode_general(buf, starts[rest], lengths[rest])
    return values, ok


_NUMBER_BYTE = np.zeros(256, dtype=bool)
_NUMBER_BYTE[list(b"0123456789+-.eE")] = True
_NUMBER_BYTE[0] = True                      # the padding after a token


def parse_long_decimals(buf, starts, lengths):
    """float32 as strtof of tokens of any length made of ``[0-9+-.eE]`` (long fractions such as
    ``%.25f`` or Python ``repr`` doubles), and a mask of those decoded.

    numpy reads the token as the nearest double d (on this alphabet Python's grammar and
    strtof's agree; anything malformed is left undecoded). Rounding d to float32 equals
    rounding the exact value unless d is itself a float32 midpoint (double rounding): a float32
    midpoint is a double, so a value on one side of it has its nearest double on the same side
    or on it. Those, overflows and NaN are left for the exact path."""
    width = int(lengths.max())
    chars = np.zeros((starts.size, width), dtype=np.uint8)
    for column in range(width):
        inside = column < lengths
        chars[:, column] = np.where(inside, buf[np.minimum(starts + column, buf.size - 1)], 0)
    ok = _NUMBER_BYTE[chars].all(axis=1)
    values = np.zeros(starts.size, dtype=np.float32)
    rows = np.flatnonzero(ok)
    texts = chars[rows].view("S%d" % width).ravel()
    try:
        exact = texts.astype(np.float64)
    except ValueError:
        exact = np.array([_python_float(t) for t in texts.tolist()], dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        near = exact.astype(np.float32)
        back = near.astype(np.float64)
        off = exact - back
        other = np.nextafter(near, np.where(off > 0, np.float32(np.inf),
                                            np.float32(-np.inf))).astype(np.float64)
        good = np.isfinite(near) & ((off == 0) | (exact != 0.5 * (back + other)))
    values[rows] = near
    ok[rows] = good
    return values, ok


def _python_float(text):
    try:
        return float(text)
    except ValueError:
        return math.nan


def _fields(piece):
    """Padded buffer, line starts and the one blank and newline of each line, or None."""
    buf = np.frombuffer(b"\0" * _FRONT + piece + b"\0" * _PAD, np.uint8)
    body = buf[_FRONT:_FRONT + len(piece)]
    cuts = np.flatnonzero(body <= 32)
    kinds = body[cuts]
    if cuts.size % 2 or not ((kinds[0::2] == 32).all() and (kinds[1::2] == 10).all()):
        return None
    blank, newline = cuts[0::2] + _FRONT, cuts[1::2] + _FRONT
    starts = np.concatenate([[_FRONT], newline[:-1] + 1])
    if not (np.all(blank > starts) and np.all(blank < newline - 1)):
        return None
    return buf, starts, blank, newline


_TARGET6 = _U(int.from_bytes(b"target", "little"))
_NONTARG8 = _U(int.from_bytes(b"nontarge", "little"))


def _parse_canonical(piece):
    """numpy parse of ``piece`` (ends with a newline), or None if the fast path cannot vouch."""
    if any(c in piece for c in (b"\r", b"\x0b", b"\x0c", b"\x00")):
        return None
    fields = None if b"\t" in piece else _fields(piece)
    if fields is None:
        piece = _EDGE_BLANKS.sub(b"", _BLANKS.sub(b" ", piece))
        fields = _fields(piece)
        if fields is None:
            return None
    buf, starts, blank, newline = fields
    label_len = newline - blank - 1
    label = _words(buf)[blank + 1]
    is_target = (label_len == 6) & ((label & _LOW_BYTES[6]) == _TARGET6)
    is_non = (label_len == 9) & (label == _NONTARG8) & (buf[blank + 9] == ord("t"))
    if not (is_target | is_non).all():
        return None
    scores, ok = parse_decimal_tokens(buf, starts, blank - starts)
    rest = np.flatnonzero(~ok)
    if rest.size > 16:
        scores[rest], ok[rest] = parse_long_decimals(buf, starts[rest], blank[rest] - starts[rest])
    for index in np.flatnonzero(~ok):
        value = kaldi_string_to_float(piece[starts[index] - _FRONT:blank[index] - _FRONT])
        if value is None or not math.isfinite(value):
            return None
        scores[index] = value
    return scores, is_target


def _chunks(data, start):
    size = len(data)
    while start < size:
        end = data.find(b"\n", min(start + _CHUNK_BYTES, size) - 1)
        end = size if end < 0 else end + 1
        yield bytes(data[start:end])
        start = end


def _parse_piece(piece, first_line=1, name=None):
    if not piece.endswith(b"\n"):
        piece += b"\n"
    parsed = _parse_canonical(piece)
    return _parse_lines_exactly(piece, first_line, name) if parsed is None else parsed


def _collect(parsed):
    scores, labels = memory.GrowingArray(np.float32), memory.GrowingArray(bool)
    for chunk_scores, chunk_labels in parsed:
        scores.append(chunk_scores)
        labels.append(chunk_labels)
    return scores.array(), labels.array()


def parse_score_labels(data, start=0):
    """``(scores float32, is_target bool)`` of compute-eer input held in ``data[start:]``."""
    return _collect(map(_parse_piece, _chunks(data, start)))


def iter_score_labels(rxfilename):
    """compute-eer's input streamed: ``(scores float32, is_target bool)`` per chunk of lines."""
    name = streams.printable(rxfilename)
    for piece, first_line in iter_line_chunks(rxfilename, _CHUNK_BYTES, what="scores file"):
        yield _parse_piece(piece, first_line, name)


def read_score_labels(rxfilename):
    """compute-eer's input reader: scores and labels (5 bytes a line, the text is streamed), or
    Kaldi's error for the first bad line."""
    scores, is_target = _collect(iter_score_labels(rxfilename))
    if scores.size == 0:
        raise KaldiError("Empty input.")
    if not is_target.any():
        raise KaldiError("No target scores seen.")
    if is_target.all():
        raise KaldiError("No non-target scores seen.")
    return scores, is_target
