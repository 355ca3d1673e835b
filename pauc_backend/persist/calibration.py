"""The calibration/fusion model file of train-calibration and apply-calibration, usable from
Python: ``write_calibration(path, model)`` / ``read_calibration(path)`` (reading the score files
joined by key is ``kaldi_io.joined_scores``).

The object mirrors Kaldi's token style (text shown; binary has the ``\\0B`` header, doubles with
size byte 8 and a ``DV`` vector)::

    <LinearCalibration> <Prior> 0.5 <Weights>  [ 17.57 ]
    <Offset> -5.166 </LinearCalibration>

A quality-measure model (``models.quality.QualityFusion``) has one weight per feature column
(scores, then min and max of each measure, then the score-quality products) and says which
measures it was trained with, so that apply-calibration can refuse other ones::

    <LinearCalibration> <Prior> 0.01 <Weights>  [ 1.2 0.3 -0.1 ]
    <Offset> -5.2 <NumScores> 1 <QualityMeasures> 1 <Measure> duration <Log> T <Low> 0.1
    <High> 30 <Interactions> F </LinearCalibration>
"""

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import codec
from pauc_backend.models.calibration import LinearCalibration, LinearFusion
from pauc_backend.models.quality import QualityFusion, QualityMeasure

TOKEN = "<LinearCalibration>"


def write_calibration(wx, model, binary=True):
    """Write a fitted LinearCalibration/LinearFusion/QualityFusion as a ``<LinearCalibration>``
    object."""
    quality = isinstance(model, QualityFusion)
    weights = model.fusion_.weights_ if quality else model.weights_

    def writer(f, binary):
        codec.write_token(f, binary, TOKEN)
        codec.write_token(f, binary, "<Prior>")
        codec.write_double(f, binary, model.prior)
        codec.write_token(f, binary, "<Weights>")
        codec.write_vector_obj(f, binary, np.asarray(weights, dtype=np.float64))
        codec.write_token(f, binary, "<Offset>")
        codec.write_double(f, binary, model.offset_)
        if quality:
            _write_quality(f, binary, model)
        codec.write_token(f, binary, "</LinearCalibration>")
        if not binary:
            f.write(b"\n")
    codec.write_object(wx, binary, writer)


def _write_quality(f, binary, model):
    codec.write_token(f, binary, "<NumScores>")
    codec.write_int32(f, binary, model.n_scores_)
    codec.write_token(f, binary, "<QualityMeasures>")
    codec.write_int32(f, binary, len(model.measures))
    for measure in model.measures:
        codec.write_token(f, binary, "<Measure>")
        codec.write_token(f, binary, measure.name)
        codec.write_token(f, binary, "<Log>")
        codec.write_bool(f, binary, measure.log)
        codec.write_token(f, binary, "<Low>")
        codec.write_double(f, binary, measure.low)
        codec.write_token(f, binary, "<High>")
        codec.write_double(f, binary, measure.high)
    codec.write_token(f, binary, "<Interactions>")
    codec.write_bool(f, binary, model.interactions)


def _read_quality(f, binary):
    num_scores = codec.read_int32(f, binary)
    codec.expect_token(f, binary, "<QualityMeasures>")
    count = codec.read_int32(f, binary)
    if not 0 < count <= 64 or num_scores <= 0:
        raise KaldiError("Bad quality-measure counts (%d scores, %d measures)"
                         % (num_scores, count))
    measures = []
    for _ in range(count):
        codec.expect_token(f, binary, "<Measure>")
        name = codec.read_token(f, binary)
        codec.expect_token(f, binary, "<Log>")
        log = codec.read_bool(f, binary)
        codec.expect_token(f, binary, "<Low>")
        low = codec.read_float(f, binary)
        codec.expect_token(f, binary, "<High>")
        high = codec.read_float(f, binary)
        try:
            measures.append(QualityMeasure(name, log, low, high))
        except ValueError as err:
            raise KaldiError("Bad quality measure: %s" % err) from None
    codec.expect_token(f, binary, "<Interactions>")
    interactions = codec.read_bool(f, binary)
    return num_scores, measures, interactions


def _read_fields(f, binary):
    codec.expect_token(f, binary, TOKEN)
    codec.expect_token(f, binary, "<Prior>")
    prior = codec.read_float(f, binary)
    codec.expect_token(f, binary, "<Weights>")
    weights = np.asarray(codec.read_vector_obj(f, binary), dtype=np.float64)
    codec.expect_token(f, binary, "<Offset>")
    offset = codec.read_float(f, binary)
    quality = None
    if codec.peek_token(f, binary) == "<NumScores>":
        codec.expect_token(f, binary, "<NumScores>")
        quality = _read_quality(f, binary)
    codec.expect_token(f, binary, "</LinearCalibration>")
    return prior, weights, offset, quality


def _model(fields, rx):
    prior, weights, offset, quality = fields
    if weights.size == 0 or not np.all(np.isfinite(weights)) or not np.isfinite(offset):
        raise KaldiError("Calibration model %s has no weights or non-finite parameters" % rx)
    if quality is not None:
        try:
            return QualityFusion.from_params(quality[1], quality[2], quality[0], weights,
                                             offset, prior=prior)
        except ValueError as err:
            raise KaldiError("Calibration model %s: %s" % (rx, err)) from None
    cls = LinearCalibration if weights.size == 1 else LinearFusion
    return cls.from_params(weights, offset, prior=prior)


def read_calibration(rx):
    """Read a ``<LinearCalibration>`` object back as a fitted model: LinearCalibration (one
    score), LinearFusion (several) or QualityFusion (with quality measures)."""
    return _model(codec.read_object(rx, _read_fields), rx)


def calibration_reader(rx):
    """``read_calibration`` as a reader of ``codec`` (``reader(cursor, binary)``) of the file
    ``rx``, for bytes already read (a model directory's ``fusion``)."""
    return lambda f, binary: _model(_read_fields(f, binary), rx)
