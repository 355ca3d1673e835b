"""Trials (``enroll test [target|nontarget]``) and scores (``enroll test score``) text files.

These are plain line files, not tables (ivector-plda-scoring reads trials with getline and
SplitStringToVector). Parsing is chunked and vectorised: numpy checks every line's field count,
``bytes.split`` cuts the fields, so ten million lines take seconds, not minutes.
"""

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import streams

_CHUNK_BYTES = 1 << 25
_IS_SEP = np.zeros(256, dtype=bool)
_IS_SEP[list(b" \t\n\v\f\r")] = True
_FIELD_HELP = {"trials file": "key1 key2 [target|nontarget]", "scores file": "key1 key2 score"}


def _chunks(raw):
    """Split ``raw`` at newlines into pieces of about _CHUNK_BYTES: (piece, first line number)."""
    line = 1
    start = 0
    size = len(raw)
    while start < size:
        end = raw.find(b"\n", min(start + _CHUNK_BYTES, size) - 1)
        end = size if end < 0 else end + 1
        piece = raw[start:end]
        yield piece, line
        line += piece.count(b"\n")
        start = end


def _token_bounds(codes):
    """Start and end offsets of the whitespace-separated tokens of a uint8 array."""
    if codes.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    sep = _IS_SEP[codes]
    edges = np.flatnonzero(sep[1:] != sep[:-1]) + 1
    if not sep[0]:
        edges = np.concatenate([[0], edges])
    if not sep[-1]:
        edges = np.concatenate([edges, [codes.size]])
    return edges[0::2], edges[1::2]


def _line_ends(codes):
    ends = np.flatnonzero(codes == 10)
    if codes.size and codes[-1] != 10:
        ends = np.append(ends, codes.size)
    return ends


def _gather_str(codes, starts, ends):
    """The tokens codes[start:end] as one numpy array without Python objects: str ('U') if
    ``codes`` is uint32 (ASCII input), bytes ('S') if it is uint8."""
    kind = "<U" if codes.dtype == np.uint32 else "S"
    if starts.size == 0:
        return np.array([], dtype=kind + "1")
    lengths = ends - starts
    width = int(lengths.max())
    columns = np.arange(width)
    index = starts[:, None] + columns
    np.minimum(index, codes.size - 1, out=index)
    chars = codes[index]
    if lengths.min() != width:
        chars[columns >= lengths[:, None]] = 0
    return chars.view("%s%d" % (kind, width)).ravel()


def _bad_line(piece, first_line, counts, expected, rx, what):
    bad = int(np.flatnonzero(counts != expected)[0])
    line = piece.split(b"\n")[bad]
    return KaldiError("Bad line %d in %s %s: expected %s fields (%s), got %d: %r" % (
        first_line + bad, what, streams.printable(rx),
        expected if isinstance(expected, int) else " or ".join(map(str, expected)),
        _FIELD_HELP[what], int(counts[bad]), line[:200].decode(errors="replace")))


def _read_columns(rx, allowed, what, numeric_last=False):
    """The columns of a line file as numpy str arrays (the last as float64 if numeric_last).

    Every line must have the same number of fields, one of ``allowed``; otherwise a KaldiError
    names the line. Chunked: numpy finds the token boundaries and checks the field counts,
    then each column is gathered straight into a str array.
    """
    data, start = streams.read_all(rx)
    raw = memoryview(data)[start:] if not isinstance(data, bytes) else data[start:]
    parts = None
    num_fields = None
    for piece, first_line in _chunks(bytes(raw)):
        codes = np.frombuffer(piece, np.uint8)
        starts, ends = _token_bounds(codes)
        line_ends = _line_ends(codes)
        if num_fields is None:
            num_fields = int(np.searchsorted(starts, line_ends[0])) if line_ends.size else 0
            if num_fields not in allowed:
                counts = np.diff(np.searchsorted(starts, line_ends), prepend=0)
                raise _bad_line(piece, first_line, counts, allowed, rx, what)
            parts = [[] for _ in range(num_fields)]
        lines = line_ends.size
        ok = starts.size == num_fields * lines
        if ok and lines:
            previous = np.concatenate([[-1], line_ends[:-1]])
            ok = bool((starts[0::num_fields] > previous).all()
                      and (ends[num_fields - 1::num_fields] <= line_ends).all())
        if not ok:
            counts = np.diff(np.searchsorted(starts, line_ends), prepend=0)
            raise _bad_line(piece, first_line, counts, num_fields, rx, what)
        ascii_only = not (codes >= 128).any()
        if ascii_only:
            codes32 = codes.astype(np.uint32)
            for index in range(num_fields):
                numeric = numeric_last and index == num_fields - 1
                parts[index].append((_gather_str(codes if numeric else codes32,
                                                 starts[index::num_fields],
                                                 ends[index::num_fields]), first_line))
        else:
            try:
                fields = piece.decode("utf-8").split()
            except UnicodeDecodeError as err:
                line = piece.count(b"\n", 0, err.start)
                raise KaldiError("Line %d of %s is not valid UTF-8 (byte %d of the line)" % (
                    first_line + line, streams.printable(rx),
                    err.start - (piece.rfind(b"\n", 0, err.start) + 1))) from None
            for index in range(num_fields):
                parts[index].append((np.array(fields[index::num_fields], dtype=np.str_),
                                     first_line))
    if parts is None:
        return []
    columns = [_concat([array for array, _ in column]) for column in parts[:-1]]
    if numeric_last:
        columns.append(_parse_floats(parts[-1], rx))
    else:
        columns.append(_concat([array for array, _ in parts[-1]]))
    return columns


def _concat(arrays):
    return np.concatenate(arrays) if len(arrays) > 1 else arrays[0]


def _parse_floats(parts, rx):
    values = []
    for array, first_line in parts:
        try:
            values.append(array.astype(np.float64))
        except ValueError:
            for index, value in enumerate(array.tolist()):
                try:
                    float(value)
                except ValueError:
                    if isinstance(value, bytes):
                        value = value.decode(errors="replace")
                    raise KaldiError("Bad score '%s' on line %d of %s" % (
                        value, first_line + index, streams.printable(rx))) from None
            raise
    return _concat(values)


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
    """``k1 k2 %.7g\n`` lines (bytes) of the float32-rounded scores, as ivector-plda-scoring."""
    values = np.asarray(scores, dtype=np.float32).astype(np.float64).tolist()
    return "".join(map("%s %s %.7g\n".__mod__,
                       zip(_as_list(key1), _as_list(key2), values))).encode("utf-8")


def write_scores(wxfilename, key1, key2, scores):
    """Write ``k1 k2 score`` lines (score = float32 printed ``%.7g``, as Kaldi) atomically."""
    if not len(key1) == len(key2) == len(scores):
        raise KaldiError("write_scores: %d, %d and %d keys/scores" % (
            len(key1), len(key2), len(scores)))
    step = 1 << 20
    with streams.open_output(wxfilename) as stream:
        for begin in range(0, len(scores), step):
            stream.write(format_scores(key1[begin:begin + step], key2[begin:begin + step],
                                       scores[begin:begin + step]))
