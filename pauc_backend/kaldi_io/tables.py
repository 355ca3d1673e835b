"""Kaldi tables (util/kaldi-table.h): sequential and random-access readers, and writers.

The parts live along Kaldi's own seams: ``holders`` (one value of a table), ``archive`` (archive
scanning and the float-vector fast path), ``scripts`` (script files), ``vector_stream``
(float-vector tables read and written in bounded chunks) and this module (readers, writers and
the whole-table helpers). Everything public is re-exported by ``pauc_backend.kaldi_io``.
"""

import struct

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import commit, outputs, streams
from pauc_backend.kaldi_io.archive import (FV_HEADER, iter_archive_source, read_fv_buffer,
                                           read_fv_stream, stack_vectors)
from pauc_backend.kaldi_io.holders import HOLDERS, check_keys, check_token, get_holder
from pauc_backend.kaldi_io.lines import MAX_LINE_BYTES, UTF8_BOM, read_line_file, regular_file
from pauc_backend.kaldi_io.scripts import (FileCache, fv_at_offsets, iter_script,
                                           parse_offset_script, parse_script, read_script,
                                           split_targets)
from pauc_backend.kaldi_io.specifiers import parse_rspecifier, parse_wspecifier

_WRITE_BLOCK = 8192

# -- readers -------------------------------------------------------------------------------------

class SequentialTableReader:
    """Iterate ``(key, value)`` over an rspecifier (SequentialTableReader), in file order."""

    def __init__(self, rspecifier, holder="vector"):
        self.rspecifier = rspecifier
        self.spec = parse_rspecifier(rspecifier)
        self.holder = get_holder(holder)

    def __iter__(self):
        spec = self.spec
        if spec.kind == "scp":
            yield from iter_script(spec.filename, self.holder, spec.permissive)
            return
        for key, value, _ in iter_archive_source(spec.filename, self.holder, spec.permissive):
            yield key, value

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
        self.holder = get_holder(holder)
        self._values = None
        self._targets = None
        self._cache = FileCache()

    def _index(self):
        if self.spec.kind == "ark":
            if self._values is None:
                values = {}
                for key, value, _ in iter_archive_source(self.spec.filename, self.holder,
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
        data, start = read_line_file(spec.filename, what="script file")
        parsed = parse_offset_script(data, start)
        if parsed is not None:
            fast = fv_at_offsets(*parsed)
            if fast is not None:
                return fast
        entries = parse_script(data, start, spec.filename)
        split = split_targets(entries[1])
        if split is not None:
            fast = fv_at_offsets(entries[0], *split)
            if fast is not None:
                return fast
        pairs = list(iter_script(spec.filename, HOLDERS["vector"], spec.permissive, entries))
        return stack_vectors([k for k, _ in pairs], [v for _, v in pairs], spec.filename, ragged)
    if not regular_file(spec.filename):     # a pipe, stdin, a device: parsed as it arrives
        with streams.open_input(spec.filename) as stream:
            return read_fv_stream(stream, spec.filename, ragged, spec.permissive)
    data, start = streams.read_all(spec.filename)
    try:
        return read_fv_buffer(data, start, spec.filename, ragged, spec.permissive)
    finally:
        streams.release(data)


def _canonical_token_table(rspecifier):
    """``{key: token}`` of a token table in a plain file whose every line is exactly
    ``key token\n`` (one space; the form of utt2spk files), checked with numpy and split in
    one go (1.28 M lines: ~1 s, against ~4 s record by record); None for anything else
    (other whitespace or controls, other sources, invalid UTF-8, duplicates, a byte-order mark,
    a line over MAX_LINE_BYTES), which the record parser then reads or rejects with its own
    message."""
    spec = parse_rspecifier(rspecifier)
    if spec.kind != "ark" or spec.permissive or \
            streams.classify_rxfilename(spec.filename)[0] != "file":
        return None
    try:
        with open(spec.filename, "rb") as stream:
            data = stream.read()
    except OSError:
        return None
    if not data.endswith(b"\n") or data.startswith(UTF8_BOM):
        return None
    codes = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(codes == 10)
    spaces = np.flatnonzero(codes == 32)
    starts = np.concatenate([[0], ends[:-1] + 1])
    if (spaces.size != ends.size or ((codes < 32) | (codes == 127)).sum() != ends.size
            or not ((spaces > starts) & (spaces < ends - 1)).all()
            or (ends - starts).max() > MAX_LINE_BYTES):
        return None
    try:
        tokens = data.decode("utf-8").replace("\n", " ").split(" ")
    except UnicodeDecodeError:
        return None
    table = dict(zip(tokens[0:-1:2], tokens[1::2]))
    return table if len(table) == ends.size else None


def _read_dict(rspecifier, holder):
    if holder == "token":
        table = _canonical_token_table(rspecifier)
        if table is not None:
            return table
    table = {}
    for key, value in SequentialTableReader(rspecifier, holder):
        if key in table:
            raise KaldiError("Duplicate key '%s' in %s" % (key, rspecifier))
        table[key] = value
    return table


def read_int32_table(rspecifier):
    """``{key: int}`` of an int32 table (e.g. ``ark:exp/enroll_num_utts.ark``)."""
    return _read_dict(rspecifier, "int32")


def read_float_table(rspecifier):
    """``{key: float}`` of a BaseFloat table (utt2dur, a quality measure), in file order."""
    return _read_dict(rspecifier, "float")


def read_token_table(rspecifier):
    """``{key: token}`` of a token table (utt2spk), in file order."""
    return _read_dict(rspecifier, "token")


def read_token_vector_table(rspecifier):
    """``{key: [tokens]}`` of a token-vector table (spk2utt), in file order."""
    return _read_dict(rspecifier, "token_vector")


# -- writers -------------------------------------------------------------------------------------

class TableWriter:
    """Write ``(key, value)`` to a wspecifier (TableWriter): ark, scp, ark+scp, stdout, pipes.

    Outputs are committed by ``close()`` (or leaving the ``with`` block) together, archive before
    script (``commit.commit_outputs``); an exception aborts them, so no half-written archive is
    left. ``ark,scp:A,S`` writes ``key A:offset`` lines.
    """

    def __init__(self, wspecifier, holder="vector"):
        self.wspecifier = wspecifier
        self.spec = parse_wspecifier(wspecifier)
        self.holder = get_holder(holder)
        self.binary = self.spec.binary and holder not in ("token", "token_vector")
        self._ark = self._scp = None
        self._targets = None
        self._pending = []
        self._record_buffer = None
        self.num_written = 0
        if self.spec.kind == "scp":
            keys, targets = read_script(self.spec.scp)
            self._targets = dict(zip(keys, targets))
            return
        if self.spec.kind == "ark,scp":
            self._ark, self._scp = outputs.open_outputs([self.spec.ark, self.spec.scp])
            self._scp.script_of = self._ark
            self._ark_name = self.spec.ark.encode()
        else:
            self._ark = outputs.OutputHandle(self.spec.ark)

    def write(self, key, value):
        check_token(key)
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
            handle = outputs.OutputHandle(target)
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

    def write_vector_block(self, X, keys_b=None, key_array=None, raw=None):
        """Write float vectors (rows of ``X``) under valid keys, built with numpy.

        Keys come as ``keys_b`` (a list of bytes) or ``key_array`` ((n, key_len) uint8, one key
        length). ``raw``: the canonical binary records of exactly these keys and rows (a copied
        input run), written as they are when the output is a binary archive.
        """
        X = np.asarray(X)
        if self._targets is not None or (not self.binary and keys_b is None):
            keys_b = _key_list(key_array) if keys_b is None else keys_b
            if self._targets is not None:
                for key, row in zip(keys_b, X):
                    self.write(key.decode(), row)
                return
        count = X.shape[0]
        if self.binary:
            if key_array is not None:
                key_len = key_array.shape[1]
                stride = key_len + 11 + 4 * X.shape[1]
                if raw is None:
                    raw = self._fv_records(key_array, X)
                offsets = np.arange(count, dtype=np.int64) * stride + key_len + 1
            else:
                raw, offsets = _encode_fv_records(keys_b, np.asarray(X, dtype=np.float32))
        else:
            row_format = b"%.7g " * X.shape[1]
            records = [b"%s  [ %s]\n" % (key, row_format % tuple(row))
                       for key, row in zip(keys_b, X.tolist())]
            lengths = np.fromiter(map(len, records), dtype=np.int64, count=len(records))
            key_lengths = np.fromiter(map(len, keys_b), dtype=np.int64, count=len(keys_b))
            offsets = np.cumsum(lengths) - lengths + key_lengths + 1
            raw = b"".join(records)
        base = self._ark.bytes_written
        self._ark.write(raw)
        if self._scp is not None:
            keys_b = _key_list(key_array) if keys_b is None else keys_b
            name = self._ark_name
            self._scp.write(b"".join(b"%s %s:%d\n" % (key, name, base + offset)
                                     for key, offset in zip(keys_b, offsets.tolist())))
        if self.spec.flush:
            self._ark.stream.flush()
        self.num_written += count

    def _fv_records(self, key_array, X):
        """Binary records of keys of one length: one reusable (n, stride) byte array."""
        count, key_len = key_array.shape
        dim = X.shape[1]
        stride = key_len + 11 + 4 * dim
        size = count * stride
        if self._record_buffer is None or self._record_buffer.size < size:
            self._record_buffer = np.empty(max(size, 1 << 20), np.uint8)
        records = self._record_buffer[:size].reshape(count, stride)
        records[:, :key_len] = key_array
        records[:, key_len:key_len + 11] = np.frombuffer(
            b" " + FV_HEADER + struct.pack("<i", dim), np.uint8)
        records[:, key_len + 11:].view("<f4")[:] = X
        return memoryview(records).cast("B")

    def flush(self):
        """Push what was written so far to the archive (and script) stream: a reader at the
        other end of a pipe sees it now, not when the buffer fills or the table ends."""
        for handle in (self._ark, self._scp):
            if handle is not None:
                handle.flush()

    def close(self):
        """Commit the outputs (rename temp files, check output pipes)."""
        handles = [h for h in (self._ark, self._scp) if h is not None] + self._pending
        self._ark = self._scp = None
        self._pending = []
        commit.commit_outputs(handles)

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
    header = FV_HEADER + struct.pack("<i", dim)
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
    check_keys(keys)
    with TableWriter(wspecifier, "vector") as writer:
        if writer._targets is not None:
            for key, row in zip(keys, X):
                writer.write(key, row)
            return
        keys_b = [key.encode() for key in keys]
        for begin in range(0, len(keys_b), _WRITE_BLOCK):
            writer.write_vector_block(X[begin:begin + _WRITE_BLOCK],
                                      keys_b[begin:begin + _WRITE_BLOCK])


def _key_list(key_array):
    blob = key_array.tobytes()
    width = key_array.shape[1]
    return [blob[i:i + width] for i in range(0, len(blob), width)]


def write_int32_table(wspecifier, keys, values):
    """An int32 table (``ark,t:num_utts.ark`` gives lines ``spk 5 \\n``)."""
    with TableWriter(wspecifier, "int32") as writer:
        for key, value in zip(keys, values):
            writer.write(key, value)


def write_float_table(wspecifier, keys, values):
    """Write ``key value`` BaseFloat entries (``ark,t:`` gives Kaldi's ``utt 3.52`` lines)."""
    with TableWriter(wspecifier, "float") as writer:
        for key, value in zip(keys, values):
            writer.write(key, float(value))


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
