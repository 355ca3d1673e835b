"""Kaldi script files (util/kaldi-table.cc ReadScriptFile): ``key rxfilename`` lines, and the
bulk reader of float vectors that a script points at (``key a.ark:123``).
"""

import re
import struct

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import codec, streams
from pauc_backend.kaldi_io import lines as tokenizer
from pauc_backend.kaldi_io.archive import FV_HEADER, gather_rows, new_rows
from pauc_backend.kaldi_io.codec import ByteCursor
from pauc_backend.kaldi_io.numpy_files import check_not_numpy

_C_WS = " \t\n\v\f\r"  # isspace() in the C locale: what Kaldi splits script lines at
_SCRIPT_LINE = re.compile("[%s]*([^%s]+)(?:[%s]+(.*?))?[%s]*$" % ((_C_WS,) * 4), re.S)
_CONTROL_TEXT = re.compile("[\x00-\x1f\x7f]")
_EXTRA_SPACE = re.compile("[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f"
                          "\u3000]")  # what str.split() splits at beyond C whitespace
_ODD_CONTROL = np.zeros(256, dtype=bool)  # controls that are not C whitespace (e.g. 0x1C-0x1F)
_ODD_CONTROL[list(range(32)) + [127]] = True
_ODD_CONTROL[list(b" \t\n\v\f\r")] = False

# -- script files --------------------------------------------------------------------------------

def parse_script(data, start, name, first_line=1):
    """(keys, targets) of script text (ReadScriptFile): ``key rxfilename`` per line; error
    messages count lines from ``first_line``."""
    raw = bytes(data[start:])
    check_not_numpy(raw, first_line - 1, streams.printable(name), "a Kaldi script file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + first_line
        raise KaldiError("Invalid script file %s: line %d is not valid UTF-8 (byte %d)" % (
            streams.printable(name), line, err.start)) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    keys, targets = [], []
    # SplitStringOnFirstSpace splits at C-locale whitespace only; str.split also splits at
    # 0x1C-0x1F and Unicode spaces, so it is used only when the text has none of those.
    simple = _EXTRA_SPACE.search(text) is None
    match_line = _SCRIPT_LINE.match
    for number, line in enumerate(lines, first_line):
        if simple:
            parts = line.split(None, 1)
            if len(parts) == 2:
                keys.append(parts[0])
                targets.append(parts[1].strip(_C_WS))
                continue
        else:
            match = match_line(line)
            if match is not None and match.group(2):
                keys.append(match.group(1))
                targets.append(match.group(2))
                continue
        raise KaldiError("Invalid line %d in script file %s (expected 'key rxfilename'): %r"
                         % (number, streams.printable(name), line[:200]))
    if _CONTROL_TEXT.search("".join(keys)):
        number = next(i for i, key in enumerate(keys) if _CONTROL_TEXT.search(key))
        raise KaldiError("Invalid line %d in script file %s: the key %r contains a control "
                         "character" % (number + first_line, streams.printable(name),
                                        keys[number][:200]))
    return keys, targets


def read_script(rx):
    """The (key, rxfilename) pairs of a ``.scp`` file (ReadScriptFile); KaldiError on bad lines."""
    data, start = tokenizer.read_line_file(rx, what="script file")
    return parse_script(data, start, rx)


def parse_offset_script(data, start):
    """Vectorised parse of the common script ``key path:offset`` (one path, ASCII, two fields
    per line): ``(keys, path, offsets)``, or None for anything else (the general parser)."""
    codes = np.frombuffer(data, np.uint8, len(data) - start, start)
    if codes.size == 0 or (codes >= 128).any() or _ODD_CONTROL[codes].any():
        return None  # str.split below must split exactly where token_bounds does
    starts, ends = tokenizer.token_bounds(codes)
    line_ends = tokenizer.line_ends(codes)
    lines = line_ends.size
    if lines == 0 or starts.size != 2 * lines:
        return None
    previous = np.concatenate([[-1], line_ends[:-1]])
    if not ((starts[0::2] > previous).all() and (ends[1::2] <= line_ends).all()):
        return None
    t_start, t_end = starts[1::2], ends[1::2]
    # the last 16 bytes of each target hold ":<offset>" (offsets have at most 15 digits)
    width = 16
    index = t_end[:, None] - width + np.arange(width)
    tail = codes[np.maximum(index, 0)]
    colon = (tail == 58) & (index >= t_start[:, None])
    if not colon.any(axis=1).all():
        return None
    last = width - 1 - np.argmax(colon[:, ::-1], axis=1)
    if (last == width - 1).any():
        return None  # nothing after the colon
    after = np.arange(width) > last[:, None]
    values = tail.astype(np.int64) - 48
    if ((after & ((values < 0) | (values > 9))).any()):
        return None
    values[~after] = 0
    offsets = values @ (10 ** np.arange(width - 1, -1, -1, dtype=np.int64))
    last_colon = t_end - width + last
    path_len = last_colon - t_start
    if (path_len != path_len[0]).any():
        return None
    length = int(path_len[0])
    paths = codes[t_start[:, None] + np.arange(length)]
    if not (paths == paths[0]).all():
        return None
    keys = bytes(codes).decode("ascii").split()[0::2]  # one C-level split: 2 tokens a line
    return keys, paths[0].tobytes().decode("ascii"), offsets


class FileCache:
    """Plain files opened by script entries (``a.ark:123``), mapped once each; any other target
    (a pipe ``cmd |``, a device, a FIFO) is read only as far as its object goes
    (``codec.read_growing``), as Kaldi reads it."""

    def __init__(self):
        self.files = {}

    def load(self, rx):
        """``(data, offset)`` of a regular file target (mapped once); KaldiError otherwise."""
        kind, what = streams.classify_rxfilename(rx)
        if kind not in ("file", "offset") or not tokenizer.regular_file(rx):
            raise KaldiError("Failed to read '%s': not a regular file" % rx)
        path, offset = what if kind == "offset" else (what, 0)
        if path not in self.files:
            self.files[path] = streams.read_all(path)[0]
        data = self.files[path]
        if offset > len(data):
            raise KaldiError("Failed to read '%s': offset %d is beyond the end of the file "
                             "(%d bytes)" % (rx, offset, len(data)))
        return data, offset

    def read_object(self, rx, holder, key):
        def parse(cur):
            try:
                return holder.read(cur)
            except (struct.error, IndexError, ValueError) as err:
                raise cur.error("Failed to read %s: %s" % (holder.name, err)) from None

        if not tokenizer.regular_file(rx):
            return codec.read_growing(rx, parse, key)
        data, offset = self.load(rx)
        check_not_numpy(data, offset, rx, "a Kaldi object")
        return parse(ByteCursor(data, offset, rx, key))

    def close(self):
        for data in self.files.values():
            streams.release(data)
        self.files.clear()


def iter_script(rx, holder, permissive=False, entries=None):
    keys, targets = read_script(rx) if entries is None else entries
    cache = FileCache()
    try:
        for key, target in zip(keys, targets):
            value = read_script_entry(cache, target, holder, key, rx, permissive)
            if value is not None:
                yield key, value
    finally:
        cache.close()


def split_targets(targets):
    """``file:offset`` targets as (paths, offsets), or None if one is not of that form."""
    paths, offsets = [], []
    for target in targets:
        colon = target.rfind(":")
        if colon < 0 or not target[colon + 1:].isdigit():
            return None
        paths.append(target[:colon])
        offsets.append(int(target[colon + 1:]))
    return paths, np.array(offsets, dtype=np.int64)


def fv_at_offsets(keys, paths, offsets):
    """Bulk read of FV records of one dim at ``offsets`` of plain files (``paths``: one path or
    one per key); None if any entry is not such a record (the per-entry reader reports)."""
    single = isinstance(paths, str)
    unique = [paths] if single else sorted(set(paths))
    try:
        if not len(keys) or any(streams.classify_rxfilename(p)[0] != "file"
                                or not tokenizer.regular_file(p) for p in unique):
            return None
    except KaldiError:
        return None  # the per-entry reader reports it with the script and key
    cache = FileCache()
    try:
        groups = []
        dim = None
        path_array = None if single or len(unique) == 1 else np.array(paths)
        for path in unique:
            try:
                data = cache.load(path)[0]
            except KaldiError:
                return None
            rows = np.arange(len(keys)) if path_array is None \
                else np.flatnonzero(path_array == path)
            where = offsets[rows]
            if dim is None:
                head = bytes(data[where[0]:where[0] + 10])
                if len(head) < 10 or head[:6] != FV_HEADER:
                    return None
                dim = struct.unpack("<i", head[6:])[0]
            expected = np.frombuffer(FV_HEADER + struct.pack("<i", dim), np.uint8)
            if (where + 10 + 4 * dim > len(data)).any():
                return None
            heads = np.frombuffer(data, np.uint8)[where[:, None] + np.arange(10)]
            if not (heads == expected).all():
                return None
            groups.append((rows, where + 10, data))
        if len(groups) == 1:
            return list(keys), gather_rows(groups[0][2], groups[0][1], dim)
        out = new_rows(len(keys), dim)
        for rows, data_offsets, data in groups:
            out[rows] = gather_rows(data, data_offsets, dim)
        return list(keys), out
    finally:
        cache.close()


def read_script_entry(cache, target, holder, key, rx, permissive):
    """The object of one script line (``cache.read_object``), or None after a WARNING when it
    fails in permissive mode (Kaldi's ``p``); KaldiError naming the key and script otherwise."""
    try:
        try:
            return cache.read_object(target, holder, key)
        except OSError as err:          # any failing read of the target names it
            raise KaldiError("Failed to read '%s': %s" % (target, err.strerror or err)) \
                from None
    except KaldiError as err:
        if not permissive:
            raise KaldiError("Failed to read key '%s' from script %s: %s" % (
                key, streams.printable(rx), err)) from None
        codec.warn("Skipping key '%s' of %s (permissive mode): %s" % (
            key, streams.printable(rx), err))
        return None
