"""pAUCMetric (auto) with an adaptation set (issue 28): the centring mean and Kaldi's adapted
PLDA from the unlabelled in-domain vectors, the adapted candidates, the held-out folds playing
the adaptation set in the cross-fitting, the cost cap, and the stored model."""

import numpy as np
import pytest

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.auto.adapt import adapt_rows, adapted_candidates
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.auto.params import DEFAULT_CANDIDATES
from pauc_backend.models.backend_pipeline import BackendPipeline
from pauc_backend.models.plda import PLDA
from pauc_backend.persist.auto_backend import read_model_dir, write_model_dir

FAST = {"num_iters": 40, "batch_size": 40}


@pytest.fixture(scope="module")
def corpus():
    return make_speaker_corpus(seed=11, dim=16, num_train_speakers=40, num_adapt_speakers=30,
                               num_eval_speakers=8, train_utts_range=(5, 10))


def _data(c):
    return np.asarray(c.train.X, np.float32), np.asarray(c.train.labels)


def test_pipeline_centres_on_the_adapt_mean_and_adapts_the_plda_as_kaldi(corpus):
    X, y = _data(corpus)
    A = np.asarray(corpus.adapt.X, np.float32)
    pipe = BackendPipeline(lda_dim=8, systems=("plda", "plda_adapt", "pauc_latent_adapt"),
                           metric_params=FAST).fit(X, y, adapt=A)
    np.testing.assert_allclose(pipe.mean_, A.astype(np.float64).mean(axis=0), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(pipe.train_mean_, X.astype(np.float64).mean(axis=0),
                               rtol=1e-5, atol=1e-6)
    # independent reference: egs/sre16/v2 stage 8 in plain numpy (subtract the adaptation
    # set's own mean, LDA, length norm to sqrt(dim)), then PLDA.adapt with 0.75/0.25
    W = pipe.lda_.affine_matrix_[:, :-1].astype(np.float64)
    Z = (A.astype(np.float64) - A.astype(np.float64).mean(axis=0)) @ W.T
    Z *= np.sqrt(Z.shape[1]) / np.linalg.norm(Z, axis=1, keepdims=True)
    ref = PLDA.from_params(pipe.plda_.mean_, pipe.plda_.transform_, pipe.plda_.psi_)
    ref.adapt(Z, 1.0, 0.75, 0.25)
    np.testing.assert_allclose(pipe.plda_adapt_.psi_, ref.psi_, rtol=1e-4)
    np.testing.assert_allclose(np.abs(pipe.plda_adapt_.transform_), np.abs(ref.transform_),
                               rtol=1e-3, atol=1e-5)
    # the adapted system scores with the adapted PLDA, the plain one with the training PLDA
    T = np.asarray(corpus.test.X[:6], np.float32)
    f = pipe.features(T)
    s = pipe.score(f, f, [0, 1, 2], [3, 4, 5])
    assert not np.allclose(s[:, 0], s[:, 1])


def test_adapted_systems_need_an_adaptation_set(corpus):
    X, y = _data(corpus)
    with pytest.raises(ValueError, match="adaptation set"):
        BackendPipeline(lda_dim=8, systems=("plda_adapt",)).fit(X, y)
    with pytest.raises(ValueError, match="adaptation set"):
        AutoBackend(candidates=("plda_adapt",), lda_dims=(8,), num_folds=2).fit(X, y)


def test_default_candidates_with_adaptation_use_the_adapted_plda():
    swapped = adapted_candidates(DEFAULT_CANDIDATES)
    names = {m for c in swapped for m in c.replace(":as", "").split("+")}
    assert "plda_adapt" in names and "pauc_latent_adapt" in names
    assert not names & {"plda", "pauc_latent", "dplda"}
    assert "cosine_raw" in swapped and "plda_adapt+pauc_lnorm" in swapped


def test_cross_fitting_moves_each_held_out_fold_into_the_adaptation_domain(corpus):
    """Each fold's pipeline is adapted to that fold's held-out vectors (unlabelled, none of
    its training speakers' vectors), mapped to the adaptation set's mean and total
    covariance (CORAL); the final model is adapted to the adaptation set itself."""
    X, y = _data(corpus)
    A = np.asarray(corpus.adapt.X, np.float32)
    seen = []

    class Spy(AutoBackend):
        def _make_pipeline(self, lda_dim, systems, seed):
            pipe = super()._make_pipeline(lda_dim, systems, seed)

            class Recorder(type(pipe)):
                def fit(inner, X, y, **kw):
                    seen.append((np.asarray(y).size, kw.get("adapt"), kw.get("adapt_rows")))
                    return super().fit(X, y, **kw)
            pipe.__class__ = Recorder
            return pipe

    model = Spy(candidates=("plda_adapt", "cosine_centred"), lda_dims=(8,), num_folds=2,
                metric_params=FAST).fit(X, y, X_adapt=A)
    folds = seen[:-1]
    assert folds
    A64 = A.astype(np.float64)
    for num_train, adapt, _ in folds:
        assert adapt.shape[0] == X.shape[0] - num_train        # the held-out fold's vectors
        np.testing.assert_allclose(adapt.mean(axis=0), A64.mean(axis=0), atol=1e-3)
        np.testing.assert_allclose(np.cov(adapt.T.astype(np.float64), bias=True),
                                   np.cov(A64.T, bias=True), rtol=1e-3, atol=1e-3)
    _, final_adapt, final_rows = seen[-1]
    assert final_adapt.shape == A.shape and final_rows.size == A.shape[0]
    np.testing.assert_allclose(model.pipeline_.mean_, A64.mean(axis=0), rtol=1e-5, atol=1e-6)
    card = dict(line.split(" ", 1) for line in model.describe().splitlines())
    assert card["adapt_vectors"] == "all_%d_vectors" % A.shape[0]
    assert float(card["adapt_shift_raw_before"]) > 0.4       # the corpus' domain shift


def test_adaptation_set_is_capped_by_a_seeded_subset(corpus):
    rows, text = adapt_rows(1000, 100, 3)
    assert rows.size == 100 and np.unique(rows).size == 100 and "seeded subset" in text
    assert np.array_equal(rows, adapt_rows(1000, 100, 3)[0])
    assert adapt_rows(50, 100, 3)[0].size == 50 and adapt_rows(50, 0, 3)[0].size == 50
    X, y = _data(corpus)
    A = np.asarray(corpus.adapt.X, np.float32)
    model = AutoBackend(candidates=("plda_adapt",), lda_dims=(8,), num_folds=2,
                        max_adapt_vectors=20).fit(X, y, X_adapt=A)
    assert "adapt_vectors a_seeded_subset_of_20_of_%d_vectors" % A.shape[0] in model.describe()


def test_model_dir_stores_the_adapted_plda_and_the_domain(corpus, tmp_path):
    X, y = _data(corpus)
    A = np.asarray(corpus.adapt.X, np.float32)
    model = AutoBackend(candidates=("plda_adapt",), lda_dims=(8,), num_folds=2).fit(
        X, y, X_adapt=A)
    write_model_dir(str(tmp_path / "m"), model)
    back, card = read_model_dir(str(tmp_path / "m"))
    T = np.asarray(corpus.test.X, np.float32)
    rows = np.arange(T.shape[0])
    np.testing.assert_allclose(back.score(T, T, rows, rows[::-1]),
                               model.score(T, T, rows, rows[::-1]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(back.domain_.mean_, model.domain_.mean_, rtol=1e-6)
    np.testing.assert_allclose(back.domain_.whitener_, model.domain_.whitener_, rtol=1e-5,
                               atol=1e-7)
    # the stored domain is the adaptation set's: its vectors are in domain, the training
    # vectors (the other domain of this corpus) are not
    assert back.domain_.shift(A) < 0.05 and back.domain_.shift(X) > 0.4
    assert card["system"] == "plda_adapt"
