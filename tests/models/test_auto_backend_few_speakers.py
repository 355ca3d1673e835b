"""AutoBackend with few training speakers of real neural embeddings (TIMIT GE2E d-vectors):
the one-standard-error rule must fall back to raw cosine, or keep a system whose held-out
pAUC is not below raw cosine's by more than the fold noise, and say so in describe(). Raw
cosine's held-out pAUC and the paired fold comparisons are computed here in numpy
(test_auto_backend_reference.py), not taken from the code's selection module."""

import numpy as np
import pytest
from conftest import SHARED, need
from test_auto_backend_reference import brute_pauc, paired, unit

from pauc_backend.kaldi_io import read_token_vector_table, read_vector_table
from pauc_backend.models.auto import AutoBackend

TIMIT = SHARED / "realdata" / "timit-ge2e"


@pytest.fixture(scope="module")
def timit_train():
    need(TIMIT / "train" / "xvector.ark")
    keys, X = read_vector_table("ark:%s" % (TIMIT / "train" / "xvector.ark"))
    spk2utt = read_token_vector_table("ark:%s" % (TIMIT / "train" / "spk2utt"))
    return keys, np.asarray(X), spk2utt


def _speakers(timit_train, first, count):
    keys, X, spk2utt = timit_train
    pos = {k: i for i, k in enumerate(keys)}
    rows, labels = [], []
    for i, (spk, utts) in enumerate(sorted(spk2utt.items())[first:first + count]):
        rows += [pos[u] for u in utts]
        labels += [i] * len(utts)
    return X[rows], np.array(labels), [keys[r] for r in rows]


@pytest.mark.parametrize("first,count", [(0, 12), (200, 15)])
def test_few_speakers_fall_back_to_raw_cosine_or_within_noise(timit_train, first, count):
    X, y, keys = _speakers(timit_train, first, count)
    # two segments of one voiced stretch (segNN 2i and 2i+1) are never a held-out pair
    groups = np.array([k.rsplit("-seg", 1)[0] + "/%d" % (int(k.rsplit("seg", 1)[1]) // 2)
                       for k in keys])
    lines = []
    model = AutoBackend(num_folds=3, metric_params={"num_iters": 100},
                        log=lines.append).fit(X, y, groups)
    rows = model.cv_results_
    raw = next(i for i, r in enumerate(rows) if r["candidate"] == "cosine_raw")
    chosen = next(i for i, r in enumerate(rows) if r["candidate"] == model.chosen_["candidate"]
                  and r["lda_dim"] == model.chosen_["lda_dim"])
    folds = [[f["pauc"] for f in r["folds"]] for r in rows]
    assert all(len(f) == 3 for f in folds)
    # raw cosine's held-out pAUC (the reference of the rule) recomputed from the vectors: every
    # pair of a fold's vectors but those of one group, unit-length raw vectors, eq. 5
    fold = np.asarray(model.fold_of_vector_)
    for k in range(3):
        held = np.flatnonzero(fold == k)
        a, b = np.triu_indices(held.size, k=1)
        keep = groups[held][a] != groups[held][b]
        a, b = a[keep], b[keep]
        U = unit(X[held].astype(np.float64))
        s, t = np.einsum("ij,ij->i", U[a], U[b]), y[held][a] == y[held][b]
        assert folds[raw][k] == pytest.approx(brute_pauc(s[t], s[~t]), abs=1e-4), k
    # the kept system is not below raw cosine by more than the fold noise (0 +- 0 when it is
    # raw cosine itself); paired over folds in numpy, not by the code's selection module
    diff, se = paired(folds[chosen], folds[raw])
    assert diff >= -se, (model.chosen_["candidate"], diff, se)
    if chosen != raw:
        card = dict(line.split(" ", 1) for line in model.describe().splitlines())
        assert float(card["chosen_minus_cosine_raw_heldout_pauc"]) == pytest.approx(diff,
                                                                                 abs=1e-6)
    # the rule: the kept candidate is within one SE of the best
    best = int(np.argmax([np.mean(f) for f in folds]))
    diff_best, se_best = paired(folds[best], folds[chosen])
    assert diff_best <= se_best + 1e-12
    assert any(line.startswith("Why: ") for line in lines)
    # LDA capped by the folds' speakers: 2/3 of them train each fold
    assert rows and all(r["lda_dim"] <= count - count // 3 - 1 for r in rows)
