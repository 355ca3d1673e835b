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


class _HashCollision(Exception):
    """Two different key pairs share a hash: redo the join with exact codes."""


def _string_hash(strings, salt):
    """A 64-bit linear hash of each string (a random odd weight per UCS-4 code point)."""
    strings = np.ascontiguousarray(strings, dtype=np.str_)
    width = strings.dtype.itemsize // 4
    chars = strings.view(np.uint32).reshape(strings.size, width)
    weights = np.random.default_rng(salt).integers(0, 1 << 62, width, dtype=np.uint64) * 2 + 1
    hashes = np.zeros(strings.size, dtype=np.uint64)
    step = max(1, (1 << 24) // max(width, 1))
    for begin in range(0, strings.size if width else 0, step):
        hashes[begin:begin + step] = chars[begin:begin + step].astype(np.uint64) @ weights
    return hashes


def pair_codes(key1s, key2s, exact=False):
    """One int64 code per (key1, key2) pair, for each array of the lists (same pair, same code).

    By default a 64-bit hash of the pair (different pairs may collide: callers verify the rows
    they match); ``exact=True`` gives collision-free codes from np.unique of each column.
    """
    sizes = np.cumsum([len(k) for k in key1s])[:-1]
    key1, key2 = np.concatenate(key1s), np.concatenate(key2s)
    if exact:
        _, code1 = np.unique(key1, return_inverse=True)
        uniq2, code2 = np.unique(key2, return_inverse=True)
        codes = code1.astype(np.int64).ravel() * max(len(uniq2), 1) + code2.ravel()
    else:
        codes = (_string_hash(key1, 1) + _string_hash(key2, 2)).view(np.int64)
    return np.split(codes, sizes)


def _sort_unique(codes, key1, key2, what):
    """(order, sorted codes); KaldiError on the first line repeating a pair, _HashCollision if
    equal codes hold different pairs."""
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    same = np.flatnonzero(sorted_codes[1:] == sorted_codes[:-1])
    if same.size:
        first, again = order[same], order[same + 1]
        if not (np.array_equal(key1[first], key1[again])
                and np.array_equal(key2[first], key2[again])):
            raise _HashCollision()
        row = again.min()
        raise KaldiError("Duplicate key pair '%s %s' in %s" % (key1[row], key2[row], what))
    return order, sorted_codes


def _join(base_name, base_key1, base_key2, tables, exact):
    codes = pair_codes([base_key1] + [t[1] for t in tables],
                       [base_key2] + [t[2] for t in tables], exact)
    base_order, base_sorted = _sort_unique(codes[0], base_key1, base_key2, base_name)
    columns, warnings = [], []
    for (rx, key1, key2, scores), file_codes in zip(tables, codes[1:]):
        order, sorted_codes = _sort_unique(file_codes, key1, key2, rx)
        bad = np.flatnonzero(~np.isfinite(scores))
        if bad.size:
            raise KaldiError("Score of '%s %s' in %s is not finite (%s)"
                             % (key1[bad[0]], key2[bad[0]], rx, scores[bad[0]]))
        # Sorted queries into sorted codes: a cache-friendly merge.
        pos = np.empty(len(base_order), dtype=np.intp)
        pos[base_order] = np.searchsorted(sorted_codes, base_sorted)
        np.minimum(pos, max(len(order) - 1, 0), out=pos)
        found = (sorted_codes[pos] == codes[0]) if len(order) else np.zeros(len(pos), bool)
        rows = np.where(found, order[pos] if len(order) else 0, -1)
        if not (exact or (np.array_equal(key1[rows[found]], base_key1[found])
                          and np.array_equal(key2[rows[found]], base_key2[found]))):
            raise _HashCollision()
        used = np.zeros(len(key1), dtype=bool)
        used[rows[found]] = True
        extra = np.flatnonzero(~used)
        if extra.size:
            warnings.append("%d scores in %s have no trial in %s (e.g. '%s %s'); ignoring them."
                            % (extra.size, rx, base_name, key1[extra[0]], key2[extra[0]]))
        missing = np.flatnonzero(~found)
        if missing.size:
            warnings.append("%d of %d trials in %s have no score in %s (e.g. '%s %s'); leaving "
                            "them out." % (missing.size, len(rows), base_name, rx,
                                           base_key1[missing[0]], base_key2[missing[0]]))
        columns.append(np.where(found, scores[np.maximum(rows, 0)], np.nan))
    return columns, warnings


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
    base_key1, base_key2 = np.asarray(base_key1), np.asarray(base_key2)
    try:
        columns, warnings = _join(base_name, base_key1, base_key2, tables, exact=False)
    except _HashCollision:
        columns, warnings = _join(base_name, base_key1, base_key2, tables, exact=True)
    for message in warnings:
        log.warning(message)
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
