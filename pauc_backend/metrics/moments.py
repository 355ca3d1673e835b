"""Mean and standard deviation of scores accumulated chunk by chunk, independent of the chunking.

``Float32Moments`` mirrors ivector-plda-scoring's log line (``sum += score; sumsq += score *
score`` in double over float32 scores, then ``mean = sum / n``, ``variance = sumsq / n - mean *
mean`` in float): the sums are kept exactly (every float32 and its square are integers times a
power of two), so the result is the correctly rounded double sum whatever the chunk sizes.
``Float64Moments`` gives numpy's ``mean()`` and ``std()`` by Chan's pairwise update (equal to
them up to rounding in the last bits). ``mean_of`` is numpy's ``mean`` of a function of an
array, bit for bit, computed block by block (no temporary as large as the array).
"""

import numpy as np

__all__ = ["Float32Moments", "Float64Moments", "mean_of"]

_MAX_CHUNK = 1 << 28
_PAIRWISE_BLOCK = 1 << 16     # bincount's float64 sums of 24-bit integers stay exact below 2^53


class Float32Moments:
    def __init__(self):
        self.count = 0
        self._sum = 0         # exact sum times 2^150
        self._squares = 0     # exact sum of squares times 2^300

    def add(self, values):
        values = np.ascontiguousarray(values, dtype=np.float32).ravel()
        for start in range(0, values.size, _MAX_CHUNK):
            self._add(values[start:start + _MAX_CHUNK])

    def _add(self, values):
        bits = values.view(np.uint32)
        exponent = ((bits >> 23) & 0xFF).astype(np.intp)
        mantissa = (bits & 0x7FFFFF).astype(np.int64)
        mantissa |= (exponent > 0).astype(np.int64) << 23
        np.maximum(exponent, 1, out=exponent)          # value = mantissa * 2^(exponent - 150)
        signed = np.where(bits >> 31, -mantissa, mantissa)
        sums = np.bincount(exponent, weights=signed, minlength=256)
        square = mantissa * mantissa                   # < 2^48, exact in int64
        high = np.bincount(exponent, weights=square >> 24, minlength=256)
        low = np.bincount(exponent, weights=square & 0xFFFFFF, minlength=256)
        for e in np.flatnonzero(sums).tolist():
            self._sum += int(sums[e]) << e
        for e in np.flatnonzero(high + low).tolist():
            self._squares += ((int(high[e]) << 24) + int(low[e])) << (2 * e)
        self.count += values.size

    def sum(self):
        """The sum as a double (correctly rounded)."""
        return self._sum / (1 << 150)

    def sum_of_squares(self):
        return self._squares / (1 << 300)

    def mean_stddev(self):
        """Kaldi's float ``mean`` and ``stddev`` (NaN stddev if rounding makes the variance
        negative, as sqrt in Kaldi)."""
        mean = np.float32(self.sum() / self.count)
        scatter = np.float32(self.sum_of_squares() / self.count)
        with np.errstate(invalid="ignore"):
            return mean, np.sqrt(np.float32(scatter - mean * mean))


class Float64Moments:
    def __init__(self):
        self.count, self.mean, self._m2 = 0, 0.0, 0.0

    def add(self, values):
        values = np.asarray(values, dtype=np.float64).ravel()
        if not values.size:
            return
        mean = values.mean()
        m2 = float(np.square(values - mean).sum())
        total = self.count + values.size
        delta = mean - self.mean
        self.mean += delta * values.size / total
        self._m2 += m2 + delta * delta * self.count * values.size / total
        self.count = total

    def std(self):
        return float(np.sqrt(self._m2 / self.count))


def _pairwise_sum(x, transform, block):
    """``np.add.reduce(transform(x))`` by numpy's own pairwise summation tree: above 128
    elements numpy (``pairwise_sum``, numpy/_core/src/umath/loops_utils.h.src) adds the sums
    of x[:m] and x[m:] with m = n // 2 rounded down to a multiple of 8. The same halving down
    to ``block`` elements, each block reduced by numpy, gives the very same sum."""
    if x.size <= block:
        return np.add.reduce(transform(x))
    half = x.size // 2
    half -= half % 8
    return _pairwise_sum(x[:half], transform, block) + _pairwise_sum(x[half:], transform, block)


def mean_of(x, transform, block=_PAIRWISE_BLOCK):
    """``np.mean(transform(x))`` bit for bit for a contiguous 1-D float array ``x`` and an
    elementwise ``transform`` that keeps its dtype, holding one block of ``block`` (>= 128)
    elements at a time instead of the n-sized ``transform(x)`` (d' on 3x10^7 scores:
    ``(x - mean)**2`` would be 8 bytes a trial). tests/metrics/test_moments_mean_of.py pins it
    to numpy's mean."""
    if x.size <= block:
        return np.mean(transform(x))
    total = _pairwise_sum(x, transform, max(int(block), 128))
    return total.dtype.type(total / x.size)      # numpy's _mean on a 1-D array
