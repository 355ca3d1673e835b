"""Score files joined by their key pair, for calibration and fusion (train-calibration,
apply-calibration): the join itself is ``kaldi_io.keyed``'s (one KeySpace, exact, in the first
file's order)."""

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io.keyed import KeySpace, PairTable, join_columns, read_labelled_trials


def read_joined_scores(log, score_rxs, trials_rx=None, key_ids=False):
    """The score files joined by key (kaldi_io.keyed, in the first file's order), with the
    labels of ``trials_rx`` if given: (scores (n, K) float64, is_target or None, #trials);
    with ``key_ids`` a fourth item (KeySpace, ids1, ids2): the key ids of each joined trial."""
    keys = KeySpace()
    tables = [read_labelled_trials(trials_rx, keys)] if trials_rx is not None else []
    tables += [PairTable.read(rx, keys, "score") for rx in score_rxs[1:]]
    joined = join_columns(log, score_rxs[0], keys, tables, key_ids=key_ids)
    base, columns = joined[:2]
    num_trials = len(tables[0]) if trials_rx is not None else None
    is_target = columns.pop(0) if trials_rx is not None else None
    # one file: the joined column itself, not a copy of it
    scores = base.reshape(-1, 1) if not columns else np.column_stack([base] + columns)
    del base, columns, tables
    check_finite_scores(scores, score_rxs)
    if key_ids:
        return scores, is_target, num_trials, (keys,) + joined[2]
    return scores, is_target, num_trials


def check_finite_scores(scores, score_rxs):
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
