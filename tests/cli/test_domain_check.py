"""score-plda-trials' domain check (issue 28): the synthetic demo's in-domain test vectors,
prepared with its out-of-domain training set's back-end, get ONE WARNING naming adapt-plda;
the same vectors scored with the PLDA adapted to the demo's adapt/ set, and ETRI's and TIMIT's
own evaluation vectors scored with back-ends trained on their training speakers, get none.
Each back-end is built as recipes/common/steps/train_backend.sh builds it (training mean, LDA,
length norm, Kaldi PLDA) and the evaluation side is prepared as the recipes feed
score-plda-trials (centred on the training mean, LDA, length norm; ETRI's enrollment side is
the speaker means)."""

import re

import numpy as np
import pytest
from conftest import SHARED, run_tool

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import write_plda
from pauc_backend.kaldi_io import write_vector_table
from pauc_backend.models.lda import LDA
from pauc_backend.models.plda import PLDA
from pauc_backend.models.preprocessing import normalize_length
from prerequisites import need
from realdata_sides import evaluation_sides, read_set, speaker_means

HEADER = re.compile(r"^(LOG|WARNING|ERROR) \(([^\[\s]+)\[[^\]]*\]:\S*\) (.*)$")
REALDATA = SHARED / "realdata"


def _messages(proc, level):
    return [m.group(3) for m in map(HEADER.match, proc.stderr.decode().splitlines())
            if m and m.group(1) == level]


class _Backend:
    def __init__(self, X, y, lda_dim):
        self.mean = X.mean(axis=0)
        self.lda = LDA(dim=lda_dim).fit(X - self.mean, y)
        self.plda = PLDA().fit(self.prepare(X), y)

    def prepare(self, X):
        return normalize_length(self.lda.transform(X - self.mean))[0]


def _score(tmp_path, plda, enroll_keys, E, test_keys, T):
    """score-plda-trials on every enrollment against the first 50 test vectors."""
    write_plda(str(tmp_path / "plda"), plda.mean_, plda.transform_, plda.psi_)
    write_vector_table("ark:%s" % (tmp_path / "enroll.ark"), enroll_keys, E)
    write_vector_table("ark:%s" % (tmp_path / "test.ark"), test_keys, T)
    (tmp_path / "trials").write_text("".join("%s %s\n" % (e, t) for e in enroll_keys
                                             for t in test_keys[:50]))
    proc = run_tool("score-plda-trials", tmp_path / "plda", "ark:%s" % (tmp_path / "enroll.ark"),
                    "ark:%s" % (tmp_path / "test.ark"), tmp_path / "trials",
                    tmp_path / "scores", check=True)
    assert len((tmp_path / "scores").read_text().splitlines()) == 50 * len(enroll_keys)
    return _messages(proc, "WARNING")


def test_the_demos_test_vectors_warn_once_and_not_with_the_adapted_plda(tmp_path):
    corpus = make_speaker_corpus(seed=777, dim=80)         # make-synthetic-vectors' defaults
    X, y = corpus.train.X.astype(np.float64), np.array(corpus.train.labels)
    backend = _Backend(X, y, 50)                            # recipes/demo's --lda-dim
    speakers, means = speaker_means(corpus.enroll.X.astype(np.float64), corpus.enroll.labels)
    E, T = backend.prepare(means), backend.prepare(corpus.test.X.astype(np.float64))
    warnings = _score(tmp_path, backend.plda, speakers, E, corpus.test.keys, T)
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("The enrollment and test vectors look out of the training "
                                  "domain: their mean lies ")
    assert "adapt-plda" in warnings[0]
    # the remedy silences it: the PLDA adapted to the unlabelled in-domain set (the recipes'
    # 0.75/0.25), the same vectors
    adapted = PLDA.from_params(backend.plda.mean_, backend.plda.transform_, backend.plda.psi_)
    adapted.adapt(backend.prepare(corpus.adapt.X.astype(np.float64)), within_covar_scale=0.75,
                  between_covar_scale=0.25)
    assert _score(tmp_path, adapted, speakers, E, corpus.test.keys, T) == []


@pytest.mark.parametrize("corpus", ["etri", "timit-ge2e"])
def test_etri_and_timit_evaluation_vectors_do_not_warn(tmp_path, corpus):
    root = need(REALDATA / corpus)
    _, X, y = read_set(root / "train", np.float64)
    backend = _Backend(X, y, 100 if corpus == "etri" else 200)   # the recipes' --lda-dim
    speakers, means, test_keys, test = evaluation_sides(root, corpus, np.float64)
    warnings = _score(tmp_path, backend.plda, speakers, backend.prepare(means), test_keys,
                      backend.prepare(test))
    assert warnings == []
