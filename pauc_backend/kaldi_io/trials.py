"""Trials (``enroll test [target|nontarget]``) and scores (``enroll test score``) text files.

These are plain line files, not tables (ivector-plda-scoring reads trials with getline and
SplitStringToVector). Parsing is chunked and vectorised: numpy checks every line's field count,
``bytes.split`` cuts the fields, so ten million lines take seconds, not minutes.
"""

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import streams

_CHUNK_BYTES = 1 << 25
_IS_BLANK = np.zeros(256, dtype=bool)
_IS_BLANK[list(b" \t\v\f\r")] = True


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


def _fields_per_line(piece):
    """Number of whitespace-separated fields on each line of ``piece`` (a bytes chunk)."""
    codes = np.frombuffer(piece, np.uint8)
    newline = codes == 10
    separator = _IS_BLANK[codes] | newline
    starts = ~separator
    starts[1:] &= separator[:-1]
    line_ends = np.flatnonzero(newline)
    if not piece.endswith(b"\n"):
        line_ends = np.append(line_ends, len(piece))
    token_starts = np.flatnonzero(starts)
    return np.diff(np.searchsorted(token_starts, line_ends), prepend=0)


def _to_str(column, name, first_line, num_fields, field):
    try:
        return column.astype(np.str_)
    except UnicodeDecodeError:
        out = []
        for index, value in enumerate(column.tolist()):
            try:
                out.append(value.decode("utf-8"))
            except UnicodeDecodeError:
                raise KaldiError("Line %d of %s is not valid UTF-8: %r" % (
                    first_line + index, streams.printable(name), value)) from None
        return np.array(out, dtype=np.str_)


def _read_columns(rx, allowed, what):
    """The fields of a line file as 'S' arrays per column; every line must have one count."""
    data, start = streams.read_all(rx)
    raw = bytes(data[start:])
    columns = None
    num_fields = None
    for piece, first_line in _chunks(raw):
        counts = _fields_per_line(piece)
        if num_fields is None and counts.size:
            num_fields = int(counts[0])
            if num_fields not in allowed:
                raise KaldiError("Bad line 1 in %s %s: expected %s fields (%s), got %d" % (
                    what, streams.printable(rx), " or ".join(map(str, allowed)),
                    _FIELD_HELP[what], num_fields))
            columns = [[] for _ in range(num_fields)]
        bad = np.flatnonzero(counts != num_fields)
        if bad.size:
            number = first_line + int(bad[0])
            line = piece.split(b"\n")[int(bad[0])]
            raise KaldiError("Bad line %d in %s %s: expected %d fields (%s), got %d: %r" % (
                number, what, streams.printable(rx), num_fields, _FIELD_HELP[what],
                int(counts[bad[0]]), line[:200].decode(errors="replace")))
        fields = piece.split()
        for index in range(num_fields):
            columns[index].append((np.array(fields[index::num_fields], dtype=np.bytes_),
                                   first_line))
    if columns is None:
        return []
    return columns


_FIELD_HELP = {"trials file": "key1 key2 [target|nontarget]", "scores file": "key1 key2 score"}


def _join(parts, rx, num_fields, field):
    arrays = [_to_str(array, rx, line, num_fields, field) for array, line in parts]
    return np.concatenate(arrays) if arrays else np.array([], dtype=np.str_)


def read_trials(rxfilename):
    """``(key1, key2, labels)`` as numpy str arrays; labels is None for a 2-column file.

    Every line must have the same number of fields (2 or 3); a bad line is a KaldiError naming
    the file and the line number.
    """
    columns = _read_columns(rxfilename, (2, 3), "trials file")
    if not columns:
        empty = np.array([], dtype=np.str_)
        return empty, empty.copy(), None
    key1 = _join(columns[0], rxfilename, len(columns), 0)
    key2 = _join(columns[1], rxfilename, len(columns), 1)
    labels = _join(columns[2], rxfilename, len(columns), 2) if len(columns) == 3 else None
    return key1, key2, labels


def read_scores(rxfilename):
    """``(key1, key2, scores)`` of a ``key1 key2 score`` file; scores float64."""
    columns = _read_columns(rxfilename, (3,), "scores file")
    if not columns:
        empty = np.array([], dtype=np.str_)
        return empty, empty.copy(), np.zeros(0)
    key1 = _join(columns[0], rxfilename, 3, 0)
    key2 = _join(columns[1], rxfilename, 3, 1)
    scores = []
    for array, first_line in columns[2]:
        try:
            scores.append(array.astype(np.float64))
        except ValueError:
            for index, value in enumerate(array.tolist()):
                try:
                    float(value)
                except ValueError:
                    raise KaldiError("Bad score %r on line %d of %s" % (
                        value.decode(errors="replace"), first_line + index,
                        streams.printable(rxfilename))) from None
            raise
    return key1, key2, np.concatenate(scores)


def format_scores(key1, key2, scores):
    """``k1 k2 %.7g\\n`` lines (bytes) of the float32-rounded scores, as ivector-plda-scoring."""
    values = np.asarray(scores, dtype=np.float32).astype(np.float64).tolist()
    if len(values) == 0:
        return b""
    text = ("%s %s %.7g\n" * len(values)) % tuple(
        item for triple in zip(key1, key2, values) for item in triple)
    return text.encode("utf-8")


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
