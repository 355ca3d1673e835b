"""The cost model of pAUCMetric (auto)'s choice (issue 27 item 1) and what it leaves behind
(item 2): a seeded cross-fitting subset of speakers and vectors, successive halving of the
candidates (screened with the metrics at 1/factor of their iterations, the best 1/factor
promoted), the store released after the fit; and the contract of ``cv_results_`` and
``fold_of_vector_`` (held-out figures of fold k = the candidate trained on the vectors of the
other folds, scored on every pair of fold k's vectors), checked against plain numpy."""

import numpy as np
import pytest

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.auto_backend import AutoBackend
from pauc_backend.models.auto_policy import crossfit_rows


@pytest.fixture(scope="module")
def data():
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=40, num_adapt_speakers=2,
                            num_eval_speakers=6, train_utts_range=(6, 12))
    return np.asarray(c.train.X, np.float32), np.asarray(c.train.labels)


def brute_pauc(tar, non, beta):
    """Eq. 5 written out: over the floor(beta n) highest non-targets, the mean fraction of
    targets above each (ties half)."""
    band = np.sort(non)[::-1][:int(np.floor(beta * non.size))]
    return float(np.mean([(np.sum(tar > s) + 0.5 * np.sum(tar == s)) / tar.size
                          for s in band]))


def test_cv_results_and_fold_of_vector_follow_the_contract(data):
    """Raw cosine needs no training and centred cosine only the mean of the training folds:
    both recomputed here in plain numpy on every pair of fold k's vectors."""
    X, y = data
    model = AutoBackend(candidates=("cosine_raw", "cosine_centred"), lda_dims=(0,),
                        num_folds=3).fit(X, y)
    fold = model.fold_of_vector_
    assert fold.shape == y.shape and fold.dtype.kind == "i" and set(fold) == {0, 1, 2}
    for spk in np.unique(y):                                 # speaker-disjoint folds
        assert np.unique(fold[y == spk]).size == 1
    rows = {r["candidate"]: r for r in model.cv_results_}
    for name in ("cosine_raw", "cosine_centred"):
        row = rows[name]
        assert row["lda_dim"] == 0 and row["budget"] == "full"
        assert len(row["folds"]) == 3
        assert row["pauc"] == pytest.approx(np.mean([f["pauc"] for f in row["folds"]]))
        for k in range(3):
            held = np.flatnonzero(fold == k)
            train = np.flatnonzero((fold != k) & (fold >= 0))
            V = X[held].astype(np.float64)
            if name == "cosine_centred":
                V = V - X[train].astype(np.float64).mean(axis=0)
            V /= np.linalg.norm(V, axis=1, keepdims=True)
            a, b = np.triu_indices(held.size, k=1)
            scores = np.einsum("ij,ij->i", V[a], V[b])
            same = y[held][a] == y[held][b]
            got = row["folds"][k]
            assert set(got) >= {"pauc", "eer", "min_dcf"}
            assert got["pauc"] == pytest.approx(brute_pauc(scores[same], scores[~same], 0.01),
                                                abs=2e-3)


def test_the_cross_fitting_subset_is_seeded_and_bounded():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(300), rng.integers(5, 40, size=300))
    rows, text = crossfit_rows(y, 0, 0, 0)
    assert rows.size == y.size and text == "every speaker and vector"
    rows, text = crossfit_rows(y, 120, 2500, 3)
    again, _ = crossfit_rows(y, 120, 2500, 3)
    other, _ = crossfit_rows(y, 120, 2500, 4)
    np.testing.assert_array_equal(rows, again)
    assert not np.array_equal(rows, other)
    kept, counts = np.unique(y[rows], return_counts=True)
    assert kept.size == 120 and rows.size <= 2500
    cap = counts.max()
    full = np.bincount(y)[kept]
    # the same cap on every speaker: all of a smaller speaker's vectors, cap of a larger one
    np.testing.assert_array_equal(counts, np.minimum(full, cap))
    assert np.minimum(full, cap + 1).sum() > 2500           # the largest cap that fits
    assert "120 of the 300 speakers" in text


def test_a_large_corpus_is_cross_fitted_on_a_subset_and_trained_on_all(data):
    X, y = data
    lines = []
    model = AutoBackend(candidates=("plda",), lda_dims=(6,), num_folds=3, max_speakers=18,
                        max_vectors=150, log=lines.append).fit(X, y)
    fold = model.fold_of_vector_
    inside = fold >= 0
    assert np.unique(y[inside]).size == 18 and inside.sum() <= 150
    assert np.all(fold[~inside] == -1)
    assert any("18 of the 40 speakers" in line for line in lines)
    assert "crossfit_data 18 of the 40 speakers" in model.describe()
    # the final model trains on every vector: its cohort-free PLDA saw all 40 speakers
    assert model.num_speakers_ == 40
    assert model.pipeline_.lda_.num_speakers_ == 40


def test_successive_halving_promotes_the_best_fraction_to_the_full_budget(data):
    X, y = data
    candidates = ("plda", "pauc_lnorm", "pauc_latent", "plda+pauc_lnorm", "plda+pauc_latent",
                  "pauc_lnorm+pauc_latent")
    lines = []
    model = AutoBackend(candidates=candidates, lda_dims=(6, 10), num_folds=3,
                        metric_params={"num_iters": 200, "batch_size": 40}, screen_factor=3,
                        log=lines.append).fit(X, y)
    screen = [r for r in model.cv_results_ if r["budget"] == "screen"]
    full = [r for r in model.cv_results_ if r["budget"] == "full"]
    # every metric candidate screened at 200 / 3 -> 67 iterations, at one LDA dimension
    assert {r["candidate"] for r in screen} == set(candidates) - {"plda"}
    dim = screen[0]["lda_dim"]
    assert all(r["lda_dim"] == dim for r in screen)
    # the best third of the 6 candidates at that dimension (plda's full rating included)
    at_dim = screen + [r for r in full if r["candidate"] == "plda" and r["lda_dim"] == dim]
    best = sorted(at_dim, key=lambda r: -r["pauc"])[:2]
    promoted = {r["candidate"] for r in best if r["budget"] == "screen"}
    assert {r["candidate"] for r in full if r["candidate"] != "plda"} == promoted
    assert model.chosen_ in full or dict(model.chosen_) in full
    assert any(line.startswith("Screening: 6 candidates rated at LDA %d, the pAUCMetrics at "
                               "67 of 200 iterations; the best 2 (1/3)" % dim)
               for line in lines)
    assert "screening 6 candidates rated at LDA %d" % dim in model.describe()
    # nothing of the cross-fitting is kept once the model is fitted but its figures
    assert not hasattr(model, "fold_scores_") and not hasattr(model, "_store")


def test_no_screening_below_its_minimum_budget(data):
    X, y = data
    model = AutoBackend(candidates=("plda", "pauc_lnorm"), lda_dims=(6, 10), num_folds=3,
                        metric_params={"num_iters": 120}, screen_factor=3).fit(X, y)
    assert {r["budget"] for r in model.cv_results_} == {"full"}       # 40 < 50 iterations


def test_the_result_does_not_depend_on_the_processes(data):
    X, y = data
    kwargs = dict(candidates=("plda", "pauc_lnorm", "plda+pauc_latent"), lda_dims=(6, 10),
                  num_folds=3, metric_params={"num_iters": 100, "batch_size": 40},
                  screen_factor=2)
    one = AutoBackend(**kwargs).fit(X, y)
    two = AutoBackend(n_jobs=2, **kwargs).fit(X, y)
    assert one.cv_results_ == two.cv_results_
    E, T = X[:4], X[4:30]
    er, tr = np.repeat(np.arange(4), 26), np.tile(np.arange(26), 4)
    np.testing.assert_array_equal(one.score(E, T, er, tr), two.score(E, T, er, tr))
