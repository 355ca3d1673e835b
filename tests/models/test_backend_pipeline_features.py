"""BackendPipeline.features(X, num_utts, Z) with the LDA vectors Z made beforehand (issue 35:
a fold task of the automatic back-end projects its held-out vectors once for every space and
drops the raw vectors after the raw space). Byte comparison: the features and the scores are
the same bits as those made from X alone, every system at once, with and without AS-norm and
for enrollment sides that average several vectors; without raw-space systems X may be None."""

import numpy as np
import pytest

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.backend_pipeline import BackendPipeline

SYSTEMS = ("cosine_raw", "cosine_centred", "plda", "pauc_lnorm", "pauc_latent", "dplda",
           "plda:as", "pauc_lnorm:as")


@pytest.fixture(scope="module")
def fitted():
    c = make_speaker_corpus(seed=11, dim=24, num_train_speakers=30, num_adapt_speakers=2,
                            num_eval_speakers=12, train_utts_range=(4, 9))
    pipe = BackendPipeline(lda_dim=10, systems=SYSTEMS, metric_params={"num_iters": 20},
                           dplda_lambdas=(1.0,)).fit(c.train.X, np.array(c.train.labels))
    return pipe, np.asarray(c.test.X, dtype=np.float32)


def _same(a, b):
    assert sorted(a, key=str) == sorted(b, key=str)
    for key in a:
        pair = (a[key], b[key]) if isinstance(a[key], tuple) else ((a[key],), (b[key],))
        for u, v in zip(*pair):
            assert u.dtype == v.dtype and u.shape == v.shape, key
            assert u.tobytes() == v.tobytes(), key


@pytest.mark.parametrize("num_utts", [1, 3])
def test_features_from_given_lda_vectors_are_the_same_bits(fitted, num_utts):
    pipe, T = fitted
    pipe.__dict__.pop("_cohort_feats", None)
    Z = pipe.lda_.transform(T - pipe.mean_)
    _same(pipe.features(T, num_utts), pipe.features(T, num_utts, Z))


def test_scores_one_space_at_a_time_from_given_lda_vectors_are_the_same_bits(fitted):
    pipe, T = fitted
    n = T.shape[0]
    i, j = np.triu_indices(n, 1)
    pipe.systems = SYSTEMS
    pipe.__dict__.pop("_cohort_feats", None)
    feats = pipe.features(T)
    whole = pipe.score(feats, feats, i, j)              # every system at once, from X
    Z = pipe.lda_.transform(T - pipe.mean_)
    for group in (("cosine_raw",), ("cosine_centred", "pauc_lnorm", "pauc_lnorm:as"),
                  ("plda", "pauc_latent", "dplda", "plda:as")):
        pipe.systems = group
        pipe.__dict__.pop("_cohort_feats", None)
        raw = "cosine_raw" in group
        feats = pipe.features(T if raw else None, 1, None if raw else Z)
        cols = pipe.score(feats, feats, i, j)
        for col, name in enumerate(group):
            assert cols[:, col].tobytes() == whole[:, SYSTEMS.index(name)].tobytes(), name
    pipe.systems = SYSTEMS
