"""What train-calibration and apply-calibration share: the calibration object and key joining.

The object mirrors Kaldi's token style (text shown; binary has the ``\\0B`` header, doubles with
size byte 8 and a ``DV`` vector)::

    <LinearCalibration> <Prior> 0.5 <Weights>  [ 17.57 ]
    <Offset> -5.166 </LinearCalibration>

Score files are joined to the trials (and to each other) by the pair (key1, key2), vectorised:
each key column is mapped to integer codes with ``np.unique`` and the pairs to one int64 code.
"""

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import codec, read_scores, read_trials
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


def pair_codes(key1s, key2s):
    """One int64 code per (key1, key2) pair, comparable across the given lists of arrays."""
    sizes = np.cumsum([len(k) for k in key1s])[:-1]
    _, code1 = np.unique(np.concatenate(key1s), return_inverse=True)
    uniq2, code2 = np.unique(np.concatenate(key2s), return_inverse=True)
    codes = code1.astype(np.int64).ravel() * max(len(uniq2), 1) + code2.ravel()
    return np.split(codes, sizes)


def check_unique(codes, key1, key2, what):
    """KaldiError naming the first repeated pair, if any."""
    order = np.argsort(codes, kind="stable")
    repeated = np.flatnonzero(codes[order][1:] == codes[order][:-1])
    if repeated.size:
        row = order[repeated[0] + 1]
        raise KaldiError("Duplicate key pair '%s %s' in %s" % (key1[row], key2[row], what))


def locate(codes, wanted):
    """Row of each ``wanted`` code in ``codes`` (unique), or -1."""
    if len(codes) == 0:
        return np.full(len(wanted), -1, dtype=np.int64)
    order = np.argsort(codes)
    pos = np.minimum(np.searchsorted(codes, wanted, sorter=order), len(codes) - 1)
    rows = order[pos]
    return np.where(codes[rows] == wanted, rows, -1)


def read_score_files(score_rxs):
    """[(rxfilename, key1, key2, scores)] for each score file."""
    tables = []
    for rx in score_rxs:
        key1, key2, scores = read_scores(rx)
        tables.append((rx, np.asarray(key1), np.asarray(key2),
                       np.asarray(scores, dtype=np.float64)))
    return tables


def join_by_key(log, base_name, base_key1, base_key2, tables):
    """Scores (n, K) of the base pairs from each of ``tables`` (``read_score_files``), joined by
    the key pair.

    Duplicate pairs in the base or a score file are an error; scores of pairs not in the base
    give one WARNING per file; base pairs missing from some file are dropped with a WARNING.
    Returns (rows of the base that were kept, scores of those rows).
    """
    codes = pair_codes([base_key1] + [t[1] for t in tables], [base_key2] + [t[2] for t in tables])
    check_unique(codes[0], base_key1, base_key2, base_name)
    columns = []
    for (rx, key1, key2, scores), file_codes in zip(tables, codes[1:]):
        check_unique(file_codes, key1, key2, rx)
        bad = np.flatnonzero(~np.isfinite(scores))
        if bad.size:
            raise KaldiError("Score of '%s %s' in %s is not finite (%s)"
                             % (key1[bad[0]], key2[bad[0]], rx, scores[bad[0]]))
        rows = locate(file_codes, codes[0])
        extra = np.flatnonzero(~np.isin(file_codes, codes[0]))
        if extra.size:
            log.warning("%d scores in %s have no trial in %s (e.g. '%s %s'); ignoring them."
                        % (extra.size, rx, base_name, key1[extra[0]], key2[extra[0]]))
        missing = np.flatnonzero(rows < 0)
        if missing.size:
            log.warning("%d of %d trials in %s have no score in %s (e.g. '%s %s'); leaving "
                        "them out." % (missing.size, len(rows), base_name, rx,
                                       base_key1[missing[0]], base_key2[missing[0]]))
        columns.append(np.where(rows >= 0, scores[np.maximum(rows, 0)], np.nan))
    stacked = np.column_stack(columns)
    kept = np.flatnonzero(~np.isnan(stacked).any(axis=1))
    return kept, stacked[kept]


def read_labelled_trials(trials_rx):
    """(key1, key2, is_target) from a 3-column trials file; KaldiError otherwise."""
    key1, key2, labels = read_trials(trials_rx)
    if labels is None:
        raise KaldiError("Trials file %s has no target/nontarget column; calibration needs "
                         "labelled trials" % trials_rx)
    labels = np.asarray(labels)
    is_target = labels == "target"
    bad = np.flatnonzero(~is_target & (labels != "nontarget"))
    if bad.size:
        raise KaldiError("Trials file %s, line %d: label '%s' is neither target nor nontarget"
                         % (trials_rx, bad[0] + 1, labels[bad[0]]))
    return np.asarray(key1), np.asarray(key2), is_target
