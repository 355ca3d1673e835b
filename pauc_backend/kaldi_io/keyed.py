"""Keyed line files (``<key1> <key2> <value>``) mapped to integer ids, and the one join of them.

Every tool that matches lines of two files by the key pair goes through here: compute-eer-pauc
(scores with trials), train-calibration and apply-calibration (scores with trials and with other
score files), plot-det-roc, and any later table of the same shape (e.g. a ``<key1> <key2>
<partition>`` file). The scoring tools use ``KeyIndex`` alone to map trial keys to vector rows.

Design (memory does not grow with the files beyond the arrays a caller keeps):

- ``KeyIndex``: the keys of one column (key1 or key2), each mapped once to an integer id. A
  ``KeySpace`` holds the two indices shared by every table of one join, so a pair is the
  same ``(id1, id2)`` in all of them.
- ``PairTable.read(rx, keys, kind)``: a file streamed in chunks and held as one sorted uint64
  code per line (``id1 << 32 | id2``; with ``kind="label"`` the label is packed into the low
  bit, 8 bytes a trial) plus the values (``"score"``: float64, ``"token"``: int32 ids of
  ``value_index``). A pair listed twice is an error naming the file and both lines.
- ``iter_join(log, base_rx, keys, tables)`` streams a base file (``<key1> <key2> <score>``) and
  yields ``JoinedChunk`` s; ``join_columns`` collects them. Row order contract: rows come in the
  base file's order, only those whose pair is in every table. For a scores file joined with a
  trials file that is compute_min_dcf.py's order (the order minDCF ties are broken in). A
  pair scored twice in the base is an error; base lines and table lines without a partner are
  counted and reported in one WARNING each (with the first example), never one per line.

Example, a partitions file joined with trials and scores::

    keys = KeySpace()
    trials = PairTable.read("data/trials", keys, "label", noun="trials")
    parts = PairTable.read("data/partitions", keys, "token", noun="partition entries",
                           what="partitions file")
    scores, (labels, part_ids) = join_columns(log, "exp/scores", keys, [trials, parts])
    names = parts.value_index.keys       # part_ids index this list (bytes)
"""

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import memory, streams
from pauc_backend.kaldi_io.key_index import KeyIndex, KeySpace, table_key_index  # noqa: F401
from pauc_backend.kaldi_io.trials import iter_fields

__all__ = ["KeyIndex", "KeySpace", "PairTable", "JoinedChunk", "iter_join", "join_columns",
           "table_key_index"]

_MAX_ID1 = 1 << 30


def _lines_of(rx, what, pair, num_fields, labels=None):
    """Line numbers of ``pair`` (text) in a re-readable file (first two); [] for a pipe.
    With a list ``labels``, the label of each found line (True: target) is appended to it."""
    if streams.classify_rxfilename(rx)[0] not in ("file", "offset"):
        return []
    key1, key2 = (key.encode("utf-8") for key in pair.split(" "))
    found = []
    for chunk in iter_fields(rx, (num_fields,), what):
        hits = np.flatnonzero((chunk.tokens(0) == key1) & (chunk.tokens(1) == key2))
        found += (chunk.first_line + hits).tolist()
        if labels is not None and hits.size and len(chunk.columns) == 3:
            labels += chunk.labels(2)[hits].astype(bool).tolist()
        if len(found) >= 2:
            break
    return found[:2]


def _duplicate_error(pair, name, what, lines, labels=()):
    """The ERROR of a pair listed twice; ``labels`` (of the two ``lines``, True: target):
    a pair listed as both target and nontarget is said to be contradictory."""
    where = ("lines %d and %d" % tuple(lines)) if len(lines) == 2 else (
        "line %d and an earlier line" % lines[0] if lines else "twice")
    if len(labels) >= 2 and labels[0] != labels[1]:
        where += ", once as target and once as nontarget: contradictory labels"
    return KaldiError("Duplicate key pair '%s' in %s: Trial '%s' appears twice in %s %s (%s)"
                      % (pair, streams.printable(name), pair, what, streams.printable(name),
                         where))


class PairTable:
    """One row per (key1, key2) pair of a keyed file, sorted by pair code.

    ``noun``/``singular`` name the rows in messages ("trials"/"trial"); ``values(rows)``
    gives the value of table rows (bool labels, float64 scores or int32 token ids)."""

    def __init__(self, name, keys, codes, values, kind, noun, singular, what, num_fields):
        self.name, self.keys, self.kind = name, keys, kind
        self.noun, self.singular, self.what = noun, singular, what
        self._codes, self._values, self._num_fields = codes, values, num_fields
        self.value_index = None

    def __len__(self):
        return self._codes.size

    @property
    def shift(self):
        return np.uint64(1 if self.kind == "label" else 0)

    @classmethod
    def read(cls, rx, keys, kind="score", noun=None, singular=None, what=None):
        """Stream ``rx`` into a table; ``kind``: "label" (target|nontarget or 1|0), "score"
        (float) or "token" (any word, mapped to ids of ``table.value_index``)."""
        try:
            return cls._read(rx, keys, kind, noun, singular, what)
        except MemoryError:
            raise KaldiError("Out of memory reading %s (%d distinct first and %d second keys "
                             "so far)" % (streams.printable(rx), len(keys.first),
                                          len(keys.second))) from None

    @classmethod
    def _read(cls, rx, keys, kind, noun, singular, what):
        noun = noun or ("trials" if kind == "label" else "scores")
        singular = singular or noun.rstrip("s")
        what = what or ("trials file" if kind == "label" else "scores file")
        value_index = KeyIndex() if kind == "token" else None
        allowed = (2, 3) if kind == "label" else (3,)
        codes = memory.GrowingArray(np.uint64)
        values = memory.GrowingArray({"label": bool, "score": np.float64,
                                       "token": np.int32}[kind])
        for chunk in iter_fields(rx, allowed, what):
            if len(chunk.columns) == 2:
                raise KaldiError("Trials file %s has no target/nontarget column; evaluation and "
                                 "calibration need labelled trials" % streams.printable(rx))
            code = keys.codes(keys.first.lookup_chunk(chunk, 0, add=True),
                              keys.second.lookup_chunk(chunk, 1, add=True))
            if kind == "label":
                codes.append((code << np.uint64(1)) | chunk.labels(2).astype(np.uint64))
            else:
                codes.append(code)
                values.append(chunk.floats(2) if kind == "score" else
                              value_index.lookup(chunk.tokens(2), add=True).astype(np.int32))
        if len(keys.first) >= _MAX_ID1:
            raise KaldiError("Too many distinct first keys in %s (%d)" % (rx, len(keys.first)))
        # In code order. Nothing is copied when the file already is (a list in the order of
        # its trials, as the scoring tools write it); otherwise labels sort in place and a
        # score or token table takes its order once: 32 bytes a line at the peak, each
        # unsorted array freed as soon as its sorted copy exists (the names hold the only
        # references to the growing buffers' memory).
        codes = codes.array()
        values = None if kind == "label" else values.array()
        if not _ascending(codes):
            if values is None:
                codes.sort()
            else:
                order = np.argsort(codes)
                codes = codes[order]
                values = values[order]
                del order
        table = cls(rx, keys, codes, values, kind, noun, singular, what, 3)
        table.value_index = value_index
        table._check_unique()
        return table

    @classmethod
    def from_arrays(cls, name, keys, key1, key2, values, noun="scores", singular=None,
                    what="scores file", kind="score"):
        """A table from in-memory key arrays (str) and values: float scores, or with
        ``kind="label"`` bool labels (True: target; a trials list already read, e.g. by
        kaldi_io.trials.read_trials). A pair listed twice is the same ERROR as ``read``'s,
        naming both lines (the rows + 1) and, for labels, a contradiction."""
        ids1 = keys.first.lookup(_as_bytes(key1), add=True)
        ids2 = keys.second.lookup(_as_bytes(key2), add=True)
        codes = keys.codes(ids1, ids2)
        labels = None
        if kind == "label":
            labels = np.asarray(values, dtype=bool)
            codes = (codes << np.uint64(1)) | labels.astype(np.uint64)
            values = None
        order = np.argsort(codes, kind="stable")
        table = cls(name, keys, codes[order],
                    None if values is None else np.asarray(values, np.float64)[order], kind,
                    noun, singular or noun.rstrip("s"), what, None)
        table._arrays = (np.asarray(key1), np.asarray(key2), labels)
        table._check_unique()
        return table

    @property
    def num_rows(self):
        """The size of the row space that ``find`` returns indices into."""
        return len(self)

    def unmatched(self, matched):
        """(count, an example pair) of the rows not ``matched`` by the base."""
        rows = np.flatnonzero(~matched)
        return rows.size, (self.keys.pair_text(self.pair_code(rows[0])) if rows.size else None)

    def pair_codes(self):
        return self._codes >> self.shift

    def pair_code(self, row):
        return int(self._codes[row]) >> int(self.shift)

    def _check_unique(self):
        step = 1 << 22          # in slices: no second n-sized array
        for start in range(0, max(len(self) - 1, 0), step):
            pairs = self._codes[start:start + step + 1] >> self.shift
            same = np.flatnonzero(pairs[1:] == pairs[:-1])
            if same.size:
                pair = self.keys.pair_text(pairs[same[0]])
                labels = [] if self.kind == "label" else None
                lines = self.locate(pair, labels)
                raise _duplicate_error(pair, self.name, self.what, lines, labels or ())

    def locate(self, pair, labels=None):
        """The line numbers of ``pair`` (first two), if the source can be read again; with a
        list ``labels`` (a label table), their labels are appended to it."""
        arrays = getattr(self, "_arrays", None)
        if arrays is not None:
            key1, key2 = pair.split(" ")
            rows = np.flatnonzero((arrays[0] == key1) & (arrays[1] == key2))[:2]
            if labels is not None and arrays[2] is not None:
                labels += arrays[2][rows].tolist()
            return (rows + 1).tolist()
        return _lines_of(self.name, self.what, pair, self._num_fields, labels)

    def find(self, pair_codes):
        """Table row of each pair code (``KeySpace.codes``), -1 where the pair is absent."""
        if not self._codes.size:
            return np.full(pair_codes.size, -1, dtype=np.int64)
        shift = self.shift
        rows = self._consecutive(pair_codes)
        if rows is not None:
            return rows
        rows = np.searchsorted(self._codes, pair_codes << shift)
        np.minimum(rows, self._codes.size - 1, out=rows)
        return np.where((self._codes[rows] >> shift) == pair_codes, rows, -1)

    def _consecutive(self, pair_codes):
        """The rows of ``pair_codes`` when they are consecutive rows of the table (a file in
        the table's order, e.g. scores written in the order of a sorted trials list): one
        comparison with a slice instead of a binary search per code; None otherwise."""
        first = int(np.searchsorted(self._codes, pair_codes[:1] << self.shift)[0])
        if first + pair_codes.size > self._codes.size:
            return None
        if not np.array_equal(self._codes[first:first + pair_codes.size] >> self.shift,
                              pair_codes):
            return None
        return np.arange(first, first + pair_codes.size)

    def values(self, rows):
        if self.kind == "label":
            return (self._codes[rows] & np.uint64(1)).astype(bool)
        return self._values[rows]


class AlignedScores:
    """A scores file held as a column of a label table: its score for each trial (float64, 8
    bytes a trial, plus 1 saying it is there), found through the trials' own codes. Half of a
    table of its own (codes and values: 16 bytes a line, and a sort unless the file is in
    pair order), for the joins that have the trials anyway (train-calibration's fusion). Lines
    whose pair is no trial are counted for the WARNING, as a table's unmatched rows are; a
    pair of a trial listed twice is an error naming both lines."""

    kind = "score"

    def __init__(self, name, trials, values, present, outside, noun, what):
        self.name, self.keys, self.trials = name, trials.keys, trials
        self.noun, self.singular, self.what = noun, noun.rstrip("s"), what
        self._values, self._present, self._outside = values, present, outside

    @classmethod
    def read(cls, rx, trials, noun="scores", what="scores file"):
        keys = trials.keys
        values = memory.fresh_array(len(trials), np.float64)
        present = np.zeros(len(trials), dtype=bool)
        outside = [0, None]       # lines whose pair is no trial: count, the first pair
        for chunk in iter_fields(rx, (3,), what):
            ids1 = keys.first.lookup_chunk(chunk, 0)
            ids2 = keys.second.lookup_chunk(chunk, 1)
            known = (ids1 >= 0) & (ids2 >= 0)
            rows = np.where(known, trials.find(keys.codes(np.maximum(ids1, 0),
                                                          np.maximum(ids2, 0))), -1)
            hit = np.flatnonzero(rows >= 0)
            if hit.size < rows.size:
                if outside[1] is None:
                    line = int(np.flatnonzero(rows < 0)[0])
                    outside[1] = "%s %s" % (chunk.token(0, line), chunk.token(1, line))
                outside[0] += rows.size - hit.size
            taken = rows[hit]
            again = present[taken]
            if again.any() or np.unique(taken).size < taken.size:
                line = int(hit[np.flatnonzero(again)[0]]) if again.any() else int(
                    hit[_first_repeat(taken)])
                pair = "%s %s" % (chunk.token(0, line), chunk.token(1, line))
                raise _duplicate_error(pair, rx, what, _lines_of(rx, what, pair, 3) or
                                       [chunk.first_line + line])
            values[taken] = chunk.floats(2)[hit]
            present[taken] = True
        return cls(rx, trials, values, present, outside, noun, what)

    def __len__(self):
        return int(np.count_nonzero(self._present)) + self._outside[0]

    @property
    def num_rows(self):
        return len(self.trials)

    def find(self, pair_codes):
        rows = self.trials.find(pair_codes)
        rows[rows >= 0] = np.where(self._present[rows[rows >= 0]], rows[rows >= 0], -1)
        return rows

    def values(self, rows):
        return self._values[rows]

    def unmatched(self, matched):
        rows = np.flatnonzero(self._present & ~matched)
        example = (self.keys.pair_text(self.trials.pair_code(rows[0])) if rows.size
                   else self._outside[1])
        return rows.size + self._outside[0], example


def _first_repeat(values):
    """Index of the first element of ``values`` equal to an earlier one."""
    order = np.argsort(values, kind="stable")
    same = np.flatnonzero(values[order][1:] == values[order][:-1])
    return int(order[same + 1].min())


def _ascending(values, step=1 << 22):
    """Whether ``values`` never decreases (checked in slices: no n-sized temporary)."""
    for start in range(0, max(values.size - 1, 0), step):
        piece = values[start:start + step + 1]
        if not (piece[1:] >= piece[:-1]).all():
            return False
    return True


def _as_bytes(keys):
    keys = np.asarray(keys)
    return keys if keys.dtype.kind == "S" else np.char.encode(keys.astype(np.str_), "utf-8")


class JoinedChunk:
    """Rows of one base chunk whose pair is in every table: ``rows`` (indices into the chunk,
    ascending), ``base`` (their base values), ``values[t]`` (their values in table t),
    ``ids1``/``ids2`` (their key ids in the KeySpace; None when there are no tables);
    ``chunk`` is the FieldChunk (``chunk.tokens(0)[rows]`` are their key1s)."""

    def __init__(self, chunk, rows, base, values, ids1=None, ids2=None):
        self.chunk, self.rows, self.base, self.values = chunk, rows, base, values
        self.ids1, self.ids2 = ids1, ids2


class _ArrayChunk:
    """In-memory key arrays dressed as a FieldChunk (one chunk, values float64)."""

    def __init__(self, name, key1, key2, values):
        self.rx, self.what, self.first_line = name, "scores file", 1
        self._tokens = (_as_bytes(key1), _as_bytes(key2))
        self._values = np.asarray(values, dtype=np.float64)
        self.num_lines = len(self._values)

    def tokens(self, index):
        return self._tokens[index]

    def token(self, index, row):
        return self._tokens[index][row].decode("utf-8", "replace")

    def floats(self, index, finite=False):
        return self._values


def iter_join(log, base, keys, tables, base_noun="scores", base_what="scores file",
              finite=False):
    """Stream the base (an rxfilename of ``<key1> <key2> <score>`` lines, or a tuple ``(name,
    key1, key2, scores)`` of arrays) against in-memory ``tables`` sharing ``keys``; with
    ``finite`` a NaN or infinite base score is a KaldiError naming its line and key pair.

    Yields a JoinedChunk per chunk of the base, in base order. When the base is exhausted,
    WARNs once per table about its rows no base line matched and once about base lines with
    no row in it (the count and the first example), then stops.
    """
    if isinstance(base, tuple):
        base_name = base[0]
        chunks = iter([_ArrayChunk(*base)])
    else:
        base_name = base
        chunks = iter_fields(base, (3,), base_what)
    matched = [np.zeros(table.num_rows, dtype=bool) for table in tables]
    absent = [[0, None] for _ in tables]
    total = 0
    for chunk in chunks:
        found_rows = []
        keep = np.ones(chunk.num_lines, dtype=bool)
        if tables:
            ids1 = keys.first.lookup_chunk(chunk, 0)
            ids2 = keys.second.lookup_chunk(chunk, 1)
            known = (ids1 >= 0) & (ids2 >= 0)
            codes = keys.codes(np.maximum(ids1, 0), np.maximum(ids2, 0))
            keep &= known
        for t, table in enumerate(tables):
            rows = np.where(known, table.find(codes), -1)
            hit = rows >= 0
            _mark_matched(matched[t], rows[hit], chunk, np.flatnonzero(hit), keys, base_name,
                          base_what)
            missing = np.flatnonzero(~hit)
            if missing.size:
                if absent[t][1] is None:
                    absent[t][1] = "%s %s" % (chunk.token(0, missing[0]),
                                              chunk.token(1, missing[0]))
                absent[t][0] += missing.size
            keep &= hit
            found_rows.append(rows)
        total += chunk.num_lines
        rows = np.flatnonzero(keep)
        base_values = chunk.floats(2, finite=finite)
        if rows.size < chunk.num_lines:
            base_values = base_values[rows]
        yield JoinedChunk(chunk, rows, base_values,
                          [table.values(r[rows]) for table, r in zip(tables, found_rows)],
                          *((ids1[rows], ids2[rows]) if tables else ()))
    for t, table in enumerate(tables):
        count, example = table.unmatched(matched[t])
        if count:
            log.warning(_unmatched(count, len(table), table, base_name, base_noun, example))
        if absent[t][0]:
            log.warning(_unmatched(absent[t][0], total, _Side(base_noun, base_name),
                                   table.name, table.singular, absent[t][1]))


class _Side:
    def __init__(self, noun, name):
        self.noun, self.name = noun, name


def _unmatched(count, total, side, other_name, other_singular, example):
    other_singular = other_singular.rstrip("s")
    if side.noun == "scores":
        return "%d scores in %s have no %s in %s (e.g. '%s'); ignoring them." % (
            count, streams.printable(side.name), other_singular, streams.printable(other_name),
            example)
    return "%d of %d %s in %s have no %s in %s (e.g. '%s'); leaving them out." % (
        count, total, side.noun, streams.printable(side.name), other_singular,
        streams.printable(other_name), example)


def _mark_matched(matched, rows, chunk, lines, keys, base_name, base_what):
    """Mark table rows matched by base lines; a row matched twice is a pair listed twice."""
    if not rows.size:
        return
    if not matched[rows].any():
        increasing = rows[1:] > rows[:-1]          # sorted files: rows come in order
        if increasing.all() or (np.diff(np.sort(rows)) > 0).all():
            matched[rows] = True
            return
    seen = set()
    for line, row in zip(lines.tolist(), rows.tolist()):
        if matched[row] or row in seen:
            pair = "%s %s" % (chunk.token(0, line), chunk.token(1, line))
            if isinstance(chunk, _ArrayChunk):
                same = ((chunk.tokens(0) == chunk.tokens(0)[line])
                        & (chunk.tokens(1) == chunk.tokens(1)[line]))
                earlier = [int(np.flatnonzero(same)[0]) + 1]
            else:
                earlier = [n for n in _lines_of(base_name, base_what, pair, 3)
                           if n < chunk.first_line + line][:1]
            raise _duplicate_error(pair, base_name, base_what,
                                   earlier + [chunk.first_line + line])
        seen.add(row)


def join_columns(log, base, keys, tables, key_ids=False, **names):
    """``iter_join`` collected: (base values float64, [values of each table]) of the kept rows,
    in base order; about 8 bytes a row plus each table's value (1 for a label). With
    ``key_ids`` a third item ``(ids1, ids2)`` (int32 key ids in ``keys``, 8 more bytes a row)."""
    base_values = memory.GrowingArray(np.float64)
    columns = [memory.GrowingArray(_dtype_of(table)) for table in tables]
    id_columns = [memory.GrowingArray(np.int32) for _ in range(2 if key_ids else 0)]
    for joined in iter_join(log, base, keys, tables, **names):
        base_values.append(joined.base)
        for column, values in zip(columns, joined.values):
            column.append(values)
        for column, ids in zip(id_columns, (joined.ids1, joined.ids2)):
            column.append(ids)
    result = base_values.array(), [column.array() for column in columns]
    if key_ids:
        result += (tuple(column.array() for column in id_columns),)
    return result


def join_score_matrix(log, base, keys, tables, key_ids=False, **names):
    """``join_columns`` with the base scores and every score table's values as the columns of
    one float64 matrix (n, 1 + #score tables), filled chunk by chunk (no copy to stack them);
    returns (matrix, [values of each other table, in order]), and with ``key_ids`` a third
    item ``(ids1, ids2)`` (int32 key ids in ``keys``, 8 more bytes a row)."""
    numeric = [table.kind == "score" for table in tables]
    width = 1 + sum(numeric)
    matrix = memory.GrowingArray(np.float64)
    others = [memory.GrowingArray(_dtype_of(t)) for t, n in zip(tables, numeric) if not n]
    id_columns = [memory.GrowingArray(np.int32) for _ in range(2 if key_ids else 0)]
    for joined in iter_join(log, base, keys, tables, **names):
        for column, ids in zip(id_columns, (joined.ids1, joined.ids2)):
            column.append(ids)
        block = np.empty((joined.base.size, width))
        block[:, 0] = joined.base
        column, other = 1, iter(others)
        for values, is_score in zip(joined.values, numeric):
            if is_score:
                block[:, column] = values
                column += 1
            else:
                next(other).append(values)
        matrix.append(block.ravel())
    result = matrix.array().reshape(-1, width), [column.array() for column in others]
    if key_ids:
        result += (tuple(column.array() for column in id_columns),)
    return result


def _dtype_of(table):
    return {"label": bool, "score": np.float64, "token": np.int32}[table.kind]


def read_labelled_trials(trials_rx, keys):
    """The ``<key1> <key2> target|nontarget`` (or ``1|0``) trials of ``trials_rx`` as a label
    PairTable; KaldiError if the file is empty, unlabelled, or lists a pair twice."""
    trials = PairTable.read(trials_rx, keys, "label")
    if not len(trials):
        raise KaldiError("Empty trials file %s" % streams.printable(trials_rx))
    return trials


def keyed_score_labels(log, scores_rx, trials, key_ids=False):
    """compute_min_dcf.py's inputs joined by key: ``(scores float64, is_target)`` of the scored
    trials in the scores file's order (its tie order), and with ``key_ids`` their ``(ids1,
    ids2)`` in ``trials.keys``. Scores with no trial and trials with no score are WARNed about
    once each; KaldiError if no score belongs to a trial, or at the first NaN or infinite
    score (naming its line and key pair)."""
    scores, (is_target,), *ids = join_columns(log, scores_rx, trials.keys, [trials],
                                              key_ids=key_ids, finite=True)
    if scores.size == 0:
        raise KaldiError("No score in %s belongs to a trial in %s" % (
            streams.printable(scores_rx), streams.printable(trials.name)))
    return (scores, is_target) + tuple(ids)
