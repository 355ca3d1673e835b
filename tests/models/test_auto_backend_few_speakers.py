"""AutoBackend with few training speakers of real neural embeddings (TIMIT GE2E d-vectors):
the one-standard-error rule must fall back to raw cosine, or keep a system whose held-out
pAUC is not below raw cosine's by more than the fold noise, and say so in describe()."""

import numpy as np
import pytest
from conftest import SHARED

from pauc_backend.kaldi_io import read_token_vector_table, read_vector_table
from pauc_backend.models import selection
from pauc_backend.models.auto_backend import AutoBackend

TIMIT = SHARED / "realdata" / "timit-ge2e"


@pytest.fixture(scope="module")
def timit_train():
    if not (TIMIT / "train" / "xvector.ark").is_file():
        pytest.skip("../shared/realdata/timit-ge2e is not beside the checkout")
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
    if chosen != raw:
        diff, se = selection.paired(rows, chosen, raw)
        assert diff >= -se, (model.chosen_["candidate"], diff, se)
        card = dict(line.split(" ", 1) for line in model.describe().splitlines())
        assert float(card["chosen_minus_cosine_raw_pauc"]) == pytest.approx(diff, abs=1e-6)
    # the rule: nothing simpler than the kept candidate is within one SE of the best
    best = int(np.argmax([r["pauc"] for r in rows]))
    diff_best, se_best = selection.paired(rows, best, chosen)
    assert diff_best <= se_best + 1e-12
    assert any(line.startswith("Why: ") for line in lines)
    # LDA capped by the folds' speakers: 2/3 of them train each fold
    assert all(r["lda_dim"] <= count - count // 3 - 1 for r in rows)
