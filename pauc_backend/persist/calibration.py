"""The calibration/fusion model file of train-calibration and apply-calibration, usable from
Python: ``write_calibration(path, model)`` / ``read_calibration(path)`` (reading the score files
joined by key is ``kaldi_io.joined_scores``).

The object mirrors Kaldi's token style (text shown; binary has the ``\\0B`` header, doubles with
size byte 8 and a ``DV`` vector)::

    <LinearCalibration> <Prior> 0.5 <Weights>  [ 17.57 ]
    <Offset> -5.166 </LinearCalibration>
"""

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import codec
from pauc_backend.models.calibration import LinearCalibration, LinearFusion

TOKEN = "<LinearCalibration>"


def write_calibration(wx, model, binary=True):
    """Write a fitted LinearCalibration/LinearFusion as a ``<LinearCalibration>`` object."""
    def writer(f, binary):
        codec.write_token(f, binary, TOKEN)
        codec.write_token(f, binary, "<Prior>")
        codec.write_double(f, binary, model.prior)
        codec.write_token(f, binary, "<Weights>")
        codec.write_vector_obj(f, binary, np.asarray(model.weights_, dtype=np.float64))
        codec.write_token(f, binary, "<Offset>")
        codec.write_double(f, binary, model.offset_)
        codec.write_token(f, binary, "</LinearCalibration>")
        if not binary:
            f.write(b"\n")
    codec.write_object(wx, binary, writer)


def read_calibration(rx):
    """Read a ``<LinearCalibration>`` object back as a fitted model (LinearFusion if K > 1)."""
    def reader(f, binary):
        codec.expect_token(f, binary, TOKEN)
        codec.expect_token(f, binary, "<Prior>")
        prior = codec.read_float(f, binary)
        codec.expect_token(f, binary, "<Weights>")
        weights = np.asarray(codec.read_vector_obj(f, binary), dtype=np.float64)
        codec.expect_token(f, binary, "<Offset>")
        offset = codec.read_float(f, binary)
        codec.expect_token(f, binary, "</LinearCalibration>")
        return prior, weights, offset
    prior, weights, offset = codec.read_object(rx, reader)
    if weights.size == 0 or not np.all(np.isfinite(weights)) or not np.isfinite(offset):
        raise KaldiError("Calibration model %s has no weights or non-finite parameters" % rx)
    cls = LinearCalibration if weights.size == 1 else LinearFusion
    return cls.from_params(weights, offset, prior=prior)
