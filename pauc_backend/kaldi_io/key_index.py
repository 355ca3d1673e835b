"""Keys of one column of keyed line files (key1 or key2) mapped once each to an integer id
(``KeyIndex``), and the two indices shared by every table of one join (``KeySpace``); see
``kaldi_io.keyed`` for the join built on them. Keys are hashed from their 8-byte words with a
direct-mapped table in front of a binary search, vectorised for keys up to 48 bytes.

Memory per key (what bounds a keyed join whatever the key layout, issue 26 item 9): its bytes in
one buffer, an 8-byte end offset, its 8-byte words and three 8-byte search arrays: about 60
bytes plus the key, not the ~250 of a dict entry, a bytes object and an int object per key (a
list of a million keys each in ten trials took 32 bytes a trial). The dict of the keys is built
only for what the vectorised path leaves to it (keys over 48 bytes, equal 64-bit hashes)."""

import itertools

import numpy as np

from pauc_backend.kaldi_io import memory
from pauc_backend.kaldi_io.lines import token_words

__all__ = ["KeyIndex", "KeySpace", "table_key_index"]


_PRIME = np.uint64(0x100000001B3)
_SEED = np.uint64(0x9E3779B97F4A7C15)
_MAX_WORDS = 6          # keys up to 48 bytes take the vectorised path (FieldChunk pads 48)


def _hash_words(words):
    """A 64-bit hash of each row of (n, w) words; trailing zero words do not change it. Callers
    pass the transpose of (w, n) words, so each column is contiguous."""
    code = np.full(words.shape[0], _SEED)
    for k in range(words.shape[1]):
        row = words[:, k]
        mixed = (code ^ row) * _PRIME
        mixed ^= mixed >> np.uint64(29)
        if k == 0:
            code = mixed
        else:
            np.copyto(code, mixed, where=row != 0)
    return code


def _runs_differ(words):
    """n-1 bools: token i+1 differs from token i ((w, n) words)."""
    differ = words[0, 1:] != words[0, :-1]
    for row in words[1:]:
        differ |= row[1:] != row[:-1]
    return differ


def _inserted(values, at, new):
    """``np.insert(values, at, new)`` (``at`` ascending) into a fresh mapped array."""
    out = memory.fresh_array(values.size + new.size, values.dtype)
    spots = at + np.arange(new.size)
    rest = np.ones(out.size, dtype=bool)
    rest[spots] = False
    out[spots] = new
    out[rest] = values
    return out


class KeyIndex:
    """Integer ids of the keys (bytes) of one column, in order of first appearance.

    Lookups are vectorised: a token's bytes are read as 8-byte words, hashed, found in a
    direct-mapped table of the known hashes (binary search where two keys share a slot) and
    verified word by word against the key's own words (a hash collision falls back to a dict of
    the keys, so ids are always exact)."""

    def __init__(self):
        self._blob = bytearray()                 # the keys' bytes, one after the other
        self._ends = memory.GrowingArray(np.int64)
        self._dict = None                        # {key: id}, built when first needed
        self._words = np.zeros((1, 0), dtype=np.uint64)       # (w, num keys)
        self._word_buf = self._hash_buf = None   # the same with room to grow
        self._sorted = np.zeros(0, dtype=np.uint64)
        self._order = np.zeros(0, dtype=np.int64)
        self._hashes = self._slots = None
        self._distinct = True

    def __len__(self):
        return self._ends.size

    def key(self, key_id):
        """The bytes of key ``key_id``."""
        ends = self._ends.array()
        return bytes(self._blob[(int(ends[key_id - 1]) if key_id else 0):int(ends[key_id])])

    @property
    def keys(self):
        """Every key (bytes) in id order (a list made on each call: for small indices)."""
        return [self.key(i) for i in range(len(self))]

    @property
    def ids(self):
        """``{key: id}`` of every key, built on first use and kept up to date."""
        if self._dict is None:
            self._dict = {key: i for i, key in enumerate(self.keys)}
        return self._dict

    def _add_keys(self, keys):
        """Append new keys (bytes) and update the search arrays in place: words and hashes of
        the new keys only (into arrays of doubling capacity), the sorted hashes merged, the
        slots of the new keys set (all slots again only when the table grows), so adding keys
        chunk by chunk neither rehashes every key nor churns the memory."""
        if not keys:
            return
        known = len(self)
        if self._dict is not None:
            for row, key in enumerate(keys, known):
                self._dict[key] = row
        self._ends.append(len(self._blob) + np.cumsum([len(k) for k in keys], dtype=np.int64))
        self._blob += b"".join(keys)
        size = len(self)
        width = max(1, self._words.shape[0], -(-max(len(k) for k in keys) // 8))
        buf = self._word_buf
        if buf is None or buf.shape[0] != width or size > buf.shape[1]:
            capacity = max(size, 2 * known, 1024)     # unused room costs no memory
            grown = memory.lazy_array((width, capacity), np.uint64)
            grown[:self._words.shape[0], :known] = self._words
            hashes = memory.lazy_array(capacity, np.uint64)
            hashes[:known] = self._hashes if known else hashes[:0]
            self._word_buf, self._hash_buf = grown, hashes
        new = self._word_buf[:, known:size]
        for row, key in enumerate(keys):
            new[:, row] = np.frombuffer(key + b"\0" * (8 * width - len(key)), dtype="<u8")
        self._words = self._word_buf[:, :size]
        codes = _hash_words(new.T)
        self._hash_buf[known:size] = codes
        self._hashes = self._hash_buf[:size]
        order = np.argsort(codes, kind="stable")
        at = np.searchsorted(self._sorted, codes[order])
        same = at < self._sorted.size
        same[same] = self._sorted[at[same]] == codes[order][same]
        self._distinct = bool(self._distinct and not same.any()
                              and (np.diff(codes[order]) != 0).all())
        self._sorted = _inserted(self._sorted, at, codes[order])
        self._order = _inserted(self._order, at, known + order)
        # a direct-mapped table on the hash's top bits: the key id where one key owns the
        # slot, -2 where several do (those rows take the binary search), -1 where none does
        bits = max(10, min(22, int(size).bit_length() + 5))
        if self._slots is None or bits != 64 - int(self._shift) or size >= 2 ** 31:
            self._shift = np.uint64(64 - bits)
            self._slots = np.full(1 << bits, -1, dtype=np.int32 if size < 2 ** 31
                                  else np.int64)
            self._set_slots(self._hashes, 0)
        else:
            self._set_slots(codes, known)

    def _set_slots(self, codes, first_id):
        """Enter keys ``first_id, first_id + 1, ...`` (hashes ``codes``) into the slots."""
        slot = (codes * _SEED) >> self._shift        # Fibonacci hashing: top bits of all bits
        order = np.argsort(slot, kind="stable")
        ordered = slot[order]
        alone = np.ones(slot.size, dtype=bool)       # the only new key of its slot
        repeat = ordered[1:] == ordered[:-1]
        alone[order[1:][repeat]] = False
        alone[order[:-1][repeat]] = False
        alone &= self._slots[slot] == -1
        self._slots[slot] = -2
        self._slots[slot[alone]] = first_id + np.flatnonzero(alone)

    def lookup_chunk(self, chunk, index, add=False):
        """Ids of field ``index`` of a FieldChunk (see ``lookup``), read from its buffer."""
        if not hasattr(chunk, "buf"):
            return self.lookup(chunk.tokens(index), add)
        starts, lengths = chunk.columns[index]
        if not starts.size or int(lengths.max()) > 8 * _MAX_WORDS:
            return self.lookup(chunk.tokens(index), add)
        words = token_words(chunk.buf, starts, lengths)
        heads = np.flatnonzero(np.concatenate(([True], _runs_differ(words))))
        if heads.size < 0.5 * starts.size:     # runs of one key (sorted lists): look up once
            ids = self.lookup_chunk(_Heads(chunk, index, heads), 0, add)
            return np.repeat(ids, np.diff(np.append(heads, starts.size)))
        ids = self._find(words)
        if ids is None:                      # equal hashes: the dict decides
            return self.lookup(chunk.tokens(index), add)
        if add and (ids < 0).any():
            # -1: a hash no known key has, so a new key; one per distinct hash (two new keys
            # of one hash make the second _find below fail over to the dict)
            missing = np.flatnonzero(ids < 0)
            _, first = np.unique(_hash_words(words[:, missing].T), return_index=True)
            self._add_keys([bytes(chunk.buf[starts[row]:starts[row] + lengths[row]])
                            for row in missing[np.sort(first)].tolist()])
            ids = self._find(words)
        if ids is None:
            return self.lookup(chunk.tokens(index), add)
        return ids

    def _find(self, words):
        """Ids of the columns of (w, n) words (-1 if unknown); None if a hash collision needs
        the dict."""
        codes = _hash_words(words.T)
        if not self._sorted.size:
            return np.full(codes.size, -1, dtype=np.int64)
        ids = self._slots[(codes * _SEED) >> self._shift].astype(np.int64)
        crowded = np.flatnonzero(ids == -2)
        if crowded.size:
            wanted = codes[crowded]
            at = np.minimum(np.searchsorted(self._sorted, wanted), self._sorted.size - 1)
            ids[crowded] = np.where(self._sorted[at] == wanted, self._order[at], -1)
        hit = self._hashes[ids] == codes        # ids -1: the last key's hash, checked below
        hit &= ids >= 0
        if not hit.all():
            ids[~hit] = -1
            rows = np.flatnonzero(hit)
            words, ids_hit = words[:, rows], ids[rows]
        else:
            ids_hit = ids
        width = min(words.shape[0], self._words.shape[0])
        same = np.ones(ids_hit.size, dtype=bool)
        for k in range(width):
            same &= self._words[k][ids_hit] == words[k]
        for k in range(width, self._words.shape[0]):
            same &= self._words[k][ids_hit] == 0
        for k in range(width, words.shape[0]):
            same &= words[k] == 0
        if not same.all():
            return None
        return ids if self._distinct else None   # equal hashes among known keys: the dict

    def lookup(self, tokens, add=False):
        """int64 id of each token of a numpy bytes ('S') array; -1 for an unknown key (or a new
        id with ``add``). A run of equal keys (sorted lists) is looked up once."""
        count = len(tokens)
        if count == 0:
            return np.zeros(0, dtype=np.int64)
        heads = np.flatnonzero(np.concatenate(([True], tokens[1:] != tokens[:-1])))
        unique = tokens[heads].tolist() if heads.size < count else tokens.tolist()
        if add:
            new = [key for key in dict.fromkeys(unique) if key not in self.ids]
            if new:
                self._add_keys(new)
        rows = np.fromiter(map(self.ids.get, unique, itertools.repeat(-1)), dtype=np.int64,
                           count=len(unique))
        if heads.size < count:
            rows = np.repeat(rows, np.diff(np.append(heads, count)))
        return rows

    def text(self, key_id):
        return self.key(key_id).decode("utf-8", "replace")


class _Heads:
    """The first token of each run of field ``index`` of a FieldChunk, as a one-field chunk."""

    def __init__(self, chunk, index, heads):
        self.buf = chunk.buf
        starts, lengths = chunk.columns[index]
        self.columns = [(starts[heads], lengths[heads])]
        self._chunk, self._index, self._heads = chunk, index, heads

    def tokens(self, index):
        return self._chunk.tokens(self._index)[self._heads]


def table_key_index(keys):
    """A KeyIndex whose ids are the positions of ``keys`` (str; distinct), e.g. the rows of a
    vector table."""
    index = KeyIndex()
    index._add_keys([key.encode("utf-8") for key in keys])
    return index


class KeySpace:
    """The key1 and key2 indices shared by the tables of one join."""

    def __init__(self):
        self.first, self.second = KeyIndex(), KeyIndex()

    def codes(self, ids1, ids2):
        return (ids1.astype(np.uint64) << np.uint64(32)) | ids2.astype(np.uint64)

    def pair_text(self, code):
        code = int(code)
        return "%s %s" % (self.first.text(code >> 32), self.second.text(code & 0xFFFFFFFF))
