"""The one tokenizer of Kaldi line files (trials, score files, key tables, script files).

Kaldi reads these with ``getline`` and splits at C-locale whitespace (SplitStringToVector);
here a chunk of whole lines is a uint8 array and numpy finds every token at once:
``token_bounds`` (start and end offset of each whitespace-separated token), ``line_ends``,
``simple_bounds`` (the same in one comparison for the usual one-blank text), and ``byte_words``
with ``LOW_BYTES``/``HIGH_BYTES`` to compare tokens as 8-byte words.
"""

import numpy as np

__all__ = ["IS_SEP", "token_bounds", "line_ends", "simple_bounds", "byte_words", "LOW_BYTES",
           "HIGH_BYTES"]

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
