"""Keys of one column of keyed line files (key1 or key2) mapped once each to an integer id
(``KeyIndex``), and the two indices shared by every table of one join (``KeySpace``); see
``kaldi_io.keyed`` for the join built on them. Keys are hashed from their 8-byte words with a
direct-mapped table in front of a binary search, vectorised for keys up to 48 bytes."""

import itertools

import numpy as np

from pauc_backend.kaldi_io.lines import LOW_BYTES as _LOW_BYTES
from pauc_backend.kaldi_io.lines import byte_words as _words

__all__ = ["KeyIndex", "KeySpace", "table_key_index"]


_PRIME = np.uint64(0x100000001B3)
_SEED = np.uint64(0x9E3779B97F4A7C15)
_MAX_WORDS = 6          # keys up to 48 bytes take the vectorised path (FieldChunk pads 48)


def _token_words(buf, starts, lengths):
    """(w, n) uint64: each token's bytes as little-endian 8-byte words, zero past its end (one
    contiguous row per word position, so comparisons run on whole rows, not along axis 1)."""
    words = _words(buf)
    width = max(1, -(-int(lengths.max()) // 8))
    out = np.empty((width, starts.size), dtype=np.uint64)
    for k in range(width):
        out[k] = words[starts + 8 * k]
        if k or int(lengths.min()) < 8:
            out[k] &= _LOW_BYTES[np.minimum(np.maximum(lengths - 8 * k, 0), 8)]
    return out


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


class KeyIndex:
    """Integer ids of the keys (bytes) of one column, in order of first appearance.

    Lookups are vectorised: a token's bytes are read as 8-byte words, hashed, found in a
    direct-mapped table of the known hashes (binary search where two keys share a slot) and
    verified word by word against the key's own words (a hash collision falls back to a dict of
    the keys, so ids are always exact)."""

    def __init__(self):
        self.ids = {}
        self.keys = []
        self._words = np.zeros((1, 0), dtype=np.uint64)       # (w, num keys)
        self._sorted = np.zeros(0, dtype=np.uint64)
        self._order = np.zeros(0, dtype=np.int64)
        self._hashes = self._slots = None

    def __len__(self):
        return len(self.keys)

    def _add_keys(self, keys):
        """Append new keys (bytes) and rebuild the hash search arrays."""
        for key in keys:
            self.ids[key] = len(self.keys)
            self.keys.append(key)
        width = max(1, max((-(-len(k) // 8) for k in self.keys), default=1))
        known = self._words.shape[1]
        words = np.zeros((width, len(self.keys)), dtype=np.uint64)
        words[:self._words.shape[0], :known] = self._words
        for row, key in enumerate(self.keys[known:], known):
            padded = key + b"\0" * (8 * width - len(key))
            words[:, row] = np.frombuffer(padded, dtype="<u8")
        self._words = words
        codes = _hash_words(words.T)
        self._order = np.argsort(codes, kind="stable")
        self._sorted = codes[self._order]
        self._distinct = bool((self._sorted[1:] != self._sorted[:-1]).all())
        # a direct-mapped table on the hash's top bits: the key id where one key owns the
        # slot, -2 where several do (those rows take the binary search), -1 where none does
        bits = max(10, min(22, int(len(self.keys)).bit_length() + 5))
        self._hashes, self._shift = codes, np.uint64(64 - bits)
        slot = (codes * _SEED) >> self._shift        # Fibonacci hashing: top bits of all bits
        self._slots = np.full(1 << bits, -1, dtype=np.int32 if len(self.keys) < 2 ** 31
                              else np.int64)
        self._slots[slot] = np.arange(slot.size)
        count = np.bincount(slot.astype(np.int64), minlength=1 << bits)
        self._slots[count > 1] = -2

    def lookup_chunk(self, chunk, index, add=False):
        """Ids of field ``index`` of a FieldChunk (see ``lookup``), read from its buffer."""
        if not hasattr(chunk, "buf"):
            return self.lookup(chunk.tokens(index), add)
        starts, lengths = chunk.columns[index]
        if not starts.size or int(lengths.max()) > 8 * _MAX_WORDS:
            return self.lookup(chunk.tokens(index), add)
        words = _token_words(chunk.buf, starts, lengths)
        heads = np.flatnonzero(np.concatenate(([True], _runs_differ(words))))
        if heads.size < 0.5 * starts.size:     # runs of one key (sorted lists): look up once
            ids = self.lookup_chunk(_Heads(chunk, index, heads), 0, add)
            return np.repeat(ids, np.diff(np.append(heads, starts.size)))
        ids = self._find(words)
        if add and (ids < 0).any():
            missing = np.flatnonzero(ids < 0)
            _, first = np.unique(_hash_words(words[:, missing].T), return_index=True)
            new = []
            for row in missing[np.sort(first)].tolist():
                key = bytes(chunk.buf[starts[row]:starts[row] + lengths[row]])
                if key in self.ids:          # same hash as a known key: use the dict
                    return self.lookup(chunk.tokens(index), add)
                new.append(key)
            if len(set(new)) < len(new):     # two new keys share a hash
                return self.lookup(chunk.tokens(index), add)
            self._add_keys(new)
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
        return self.keys[key_id].decode("utf-8", "replace")


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
