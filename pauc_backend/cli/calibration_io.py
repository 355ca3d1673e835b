"""What train-calibration and apply-calibration share: the calibration object and reading the
score files joined by key (the join itself is kaldi_io.keyed's).

The object mirrors Kaldi's token style (text shown; binary has the ``\\0B`` header, doubles with
size byte 8 and a ``DV`` vector)::

    <LinearCalibration> <Prior> 0.5 <Weights>  [ 17.57 ]
    <Offset> -5.166 </LinearCalibration>
"""

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import codec
from pauc_backend.kaldi_io.keyed import KeySpace, PairTable, join_columns, read_labelled_trials
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


def read_joined_scores(log, score_rxs, trials_rx=None):
    """The score files joined by key (kaldi_io.keyed, in the first file's order), with the
    labels of ``trials_rx`` if given: (scores (n, K) float64, is_target or None, #trials)."""
    keys = KeySpace()
    tables = [read_labelled_trials(trials_rx, keys)] if trials_rx is not None else []
    tables += [PairTable.read(rx, keys, "score") for rx in score_rxs[1:]]
    base, columns = join_columns(log, score_rxs[0], keys, tables)
    is_target = columns.pop(0) if trials_rx is not None else None
    scores = np.column_stack([base] + columns)
    _check_finite(scores, score_rxs)
    return scores, is_target, (len(tables[0]) if trials_rx is not None else None)


def _check_finite(scores, score_rxs):
    bad = ~np.isfinite(scores)
    if bad.any():
        row, column = np.argwhere(bad)[0]
        raise KaldiError("Score %s in %s is not finite (the %d-th joined trial)"
                         % (scores[row, column], score_rxs[column], row + 1))


def join_by_key(log, base_name, base_key1, base_key2, tables):
    """Scores (n, K) of the base pairs (arrays) from each of ``tables`` [(name, key1, key2,
    scores)] by kaldi_io.keyed's join; returns (kept rows of the base, their scores). Kept for
    callers holding arrays; the tools stream files through ``read_joined_scores``."""
    keys = KeySpace()
    score_tables = [PairTable.from_arrays(name, keys, key1, key2, scores)
                    for name, key1, key2, scores in tables]
    base = (base_name, base_key1, base_key2, np.arange(len(base_key1), dtype=np.float64))
    rows, columns = join_columns(log, base, keys, score_tables, base_noun="trials",
                                 base_what="trials file")
    return rows.astype(np.int64), np.column_stack(columns)


_string_hash = None   # the former hash join's hook (tests patch it); the join is exact now
