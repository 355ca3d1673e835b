"""Score files joined by their key pair, for calibration and fusion (train-calibration,
apply-calibration): the join itself is ``kaldi_io.keyed``'s (one KeySpace, exact, in the first
file's order)."""

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io.keyed import (AlignedScores, KeySpace, PairTable, join_columns,
                                         join_score_matrix, read_labelled_trials)


def read_joined_scores(log, score_rxs, trials_rx=None, key_ids=False):
    """The score files joined by key (kaldi_io.keyed, in the first file's order), with the
    labels of ``trials_rx`` if given: (scores (n, K) float64, is_target or None, #trials);
    with ``key_ids`` a fourth item (KeySpace, ids1, ids2): the key ids of each joined trial.
    Memory at the peak, with trials: 8 bytes a trial for their table, 9 for each further score
    file (a column of it, ``AlignedScores``) and the result (8 bytes a score, 1 a label),
    filled in place: 36 bytes a trial for a fusion of two files (8 more with ``key_ids``)."""
    keys = KeySpace()
    tables = [read_labelled_trials(trials_rx, keys)] if trials_rx is not None else []
    tables += [AlignedScores.read(rx, tables[0]) if tables else PairTable.read(rx, keys, "score")
               for rx in score_rxs[1:]]
    joined = join_score_matrix(log, score_rxs[0], keys, tables, key_ids=key_ids)
    scores, labels = joined[:2]
    num_trials = len(tables[0]) if trials_rx is not None else None
    is_target = labels[0] if trials_rx is not None else None
    del tables
    check_finite_scores(scores, score_rxs)
    if key_ids:
        return scores, is_target, num_trials, (keys,) + joined[2]
    return scores, is_target, num_trials


def check_finite_scores(scores, score_rxs, step=1 << 20):
    """KaldiError naming the file of the first NaN or Inf (checked in slices of rows: no
    n-sized temporary)."""
    for start in range(0, scores.shape[0], step):
        bad = ~np.isfinite(scores[start:start + step])
        if bad.any():
            row, column = np.argwhere(bad)[0]
            raise KaldiError("Score %s in %s is not finite (the %d-th joined trial)"
                             % (scores[start + row, column], score_rxs[column],
                                start + row + 1))


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
