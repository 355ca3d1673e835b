"""Single Kaldi objects in plain files: vectors (``mean.vec``), matrices, ``<Plda>``."""

import os
import re

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import codec

_RANGE = re.compile(r"^(.*)\[(\d*):(\d*)(?:,(\d*):(\d*))?\]$", re.S)


def read_vector(rx):
    """ReadKaldiObject of a Vector: float32 for FV, float64 for DV and text."""
    return codec.read_object(rx, codec.read_vector_obj)


def write_vector(wx, vector, binary=True):
    """WriteKaldiObject of a Vector: FV if ``vector.dtype`` is float32, else DV."""
    codec.write_object(wx, binary, lambda f, b: codec.write_vector_obj(f, b, vector))


def _apply_range(rx, matrix, match):
    def bound(text, default):
        return int(text) if text else default

    rows, cols = matrix.shape
    r1, r2 = bound(match.group(2), 0), bound(match.group(3), rows - 1)
    c1, c2 = bound(match.group(4), 0), bound(match.group(5), cols - 1)
    if not (0 <= r1 <= r2 < rows and 0 <= c1 <= c2 < cols):
        raise KaldiError("Invalid range in '%s' for a %d x %d matrix" % (rx, rows, cols))
    return np.ascontiguousarray(matrix[r1:r2 + 1, c1:c2 + 1])


def read_matrix(rx):
    """ReadKaldiObject of a Matrix (also ``file[r1:r2,c1:c2]``, inclusive ranges, as Kaldi)."""
    rx = os.fspath(rx)
    match = _RANGE.match(rx) if rx.endswith("]") else None
    if match is not None and match.group(1):
        return _apply_range(rx, codec.read_object(match.group(1), codec.read_matrix_obj), match)
    return codec.read_object(rx, codec.read_matrix_obj)


def write_matrix(wx, matrix, binary=True):
    """WriteKaldiObject of a Matrix: FM if ``matrix.dtype`` is float32, else DM."""
    codec.write_object(wx, binary, lambda f, b: codec.write_matrix_obj(f, b, matrix))


def read_plda_obj(f, binary):
    """Plda::Read: ``<Plda>`` mean (DV) transform (DM) psi (DV) ``</Plda>``, float64 arrays."""
    codec.expect_token(f, binary, "<Plda>")
    mean = codec.read_vector_obj(f, binary, np.float64)
    transform = codec.read_matrix_obj(f, binary, np.float64)
    psi = codec.read_vector_obj(f, binary, np.float64)
    codec.expect_token(f, binary, "</Plda>")
    dim = mean.size
    name = codec.streams.printable(getattr(f, "name", "?"))
    if transform.shape != (dim, dim) or psi.size != dim:
        raise KaldiError("Bad PLDA model in %s: mean has dim %d, transform is %d x %d, psi has "
                         "dim %d" % (name, dim, transform.shape[0], transform.shape[1],
                                     psi.size))
    check_plda_values(mean, transform, psi, name)
    return mean, transform, psi


def check_plda_values(mean, transform, psi, name):
    """KaldiError unless the PLDA's numbers are usable: all finite and psi >= 0 (the
    between-class variances; Plda::Read does not check, and scoring would give NaN)."""
    for what, values in (("mean", mean), ("transform", transform), ("psi", psi)):
        if not np.isfinite(values).all():
            raise KaldiError("Bad PLDA model in %s: its %s contains NaN or infinity"
                             % (name, what))
    if (psi < 0).any():
        raise KaldiError("Bad PLDA model in %s: psi (between-class variance) has a negative "
                         "value %g at index %d" % (name, psi.min(), int(np.argmin(psi))))


def write_plda_obj(f, binary, mean, transform, psi):
    """Plda::Write (always double precision), ending in ``</Plda> `` as Kaldi needs."""
    codec.write_token(f, binary, "<Plda>")
    codec.write_vector_obj(f, binary, np.asarray(mean, dtype=np.float64))
    codec.write_matrix_obj(f, binary, np.asarray(transform, dtype=np.float64))
    codec.write_vector_obj(f, binary, np.asarray(psi, dtype=np.float64))
    codec.write_token(f, binary, "</Plda>")


def read_plda(rx):
    """``(mean, transform, psi)`` of a Kaldi ``<Plda>`` file (binary or text)."""
    return codec.read_object(rx, read_plda_obj)


def write_plda(wx, mean, transform, psi, binary=True):
    """A Kaldi ``<Plda>`` file, byte-identical to ivector-compute-plda / ivector-copy-plda."""
    mean = np.asarray(mean, dtype=np.float64)
    transform = np.asarray(transform, dtype=np.float64)
    psi = np.asarray(psi, dtype=np.float64)
    dim = mean.size
    if mean.ndim != 1 or transform.shape != (dim, dim) or psi.shape != (dim,):
        raise KaldiError("Cannot write PLDA to %s: mean %s, transform %s, psi %s are not "
                         "consistent" % (wx, mean.shape, transform.shape, psi.shape))
    codec.write_object(wx, binary, lambda f, b: write_plda_obj(f, b, mean, transform, psi))
