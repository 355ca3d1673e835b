"""Element-wise maths that must round as Kaldi's does, whatever numpy's SIMD kernels do.

numpy evaluates ``x ** p`` for float64 arrays with its own vectorised kernels where the CPU has
them (AVX-512), which do not always round as the C library's ``pow`` that Kaldi calls one element
at a time. Model files that Kaldi's binaries compare byte for byte
(``ivector-copy-plda --smoothing``) therefore need the C library's result; these helpers give it
for the short vectors (one value per dimension) where it matters.
"""

import math

import numpy as np


def apply_pow(values, power):
    """``VectorBase<double>::ApplyPow(power)``, i.e. ``VectorBase::Pow`` of matrix/kaldi-vector.cc
    without MKL: ``pow(x, power)`` of the C library for each element, as a new float64 array.
    Per element in Python: for vectors of one value per dimension, never per trial or
    per utterance."""
    values = np.asarray(values, dtype=np.float64)
    return np.array([math.pow(x, power) for x in values.ravel().tolist()],
                    dtype=np.float64).reshape(values.shape)
