"""The cost model of pAUCMetric (auto)'s choice (issue 27 item 1) and what it leaves behind
(item 2): a seeded cross-fitting subset of speakers and vectors, successive halving of the
candidates (screened with the metrics at 1/factor of their iterations, the best 1/factor
promoted), the store released after the fit; and the contract of ``cv_results_`` and
``fold_of_vector_`` (held-out figures of fold k = the candidate trained on the vectors of the
other folds, scored on every pair of fold k's vectors), checked against plain numpy."""

import numpy as np
import pytest

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.crossfit import crossfit_rows


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


def test_successive_halving_promotes_the_best_fraction_to_the_other_folds(data):
    X, y = data
    candidates = ("plda", "pauc_lnorm", "pauc_latent", "plda+pauc_lnorm", "plda+pauc_latent",
                  "pauc_lnorm+pauc_latent")
    lines = []
    model = AutoBackend(candidates=candidates, lda_dims=(6, 10), num_folds=5,
                        metric_params={"num_iters": 60, "batch_size": 40}, screen_factor=4,
                        log=lines.append).fit(X, y)
    screen = [r for r in model.cv_results_ if r["budget"] == "screen"]
    full = [r for r in model.cv_results_ if r["budget"] == "full"]
    # every candidate with a metric screened on the first max(2, ceil(5 / 4)) = 2 folds, at
    # the one LDA dimension promoted by the cheap systems
    assert {r["candidate"] for r in screen} == set(candidates) - {"plda"}
    assert all(len(r["folds"]) == 2 for r in screen)
    dim = screen[0]["lda_dim"]
    assert all(r["lda_dim"] == dim for r in screen)
    # the best quarter (2 of 6) by mean held-out pAUC on those 2 folds (plda's full row read
    # on the same folds) is promoted, and rated on all 5
    plda = next(r for r in full if r["candidate"] == "plda" and r["lda_dim"] == dim)
    mean = {r["candidate"]: np.mean([f["pauc"] for f in r["folds"][:2]])
            for r in screen + [plda]}
    best = sorted(mean, key=lambda c: -mean[c])[:2]
    promoted = {c for c in best if c != "plda"}
    needed = {m for c in promoted for m in c.split("+")}
    rated = {r["candidate"] for r in full if r["candidate"] != "plda"}
    # the promoted are rated on every fold, and so is any candidate made of their systems
    # (computed anyway); nothing else
    assert promoted <= rated
    assert rated == {c for c in candidates if c != "plda" and set(c.split("+")) <= needed}
    assert all(len(r["folds"]) == 5 for r in full)
    for r in full:                          # the promoted keep the figures they were screened
        if r["candidate"] in promoted:      # with: the same fold models
            first = next(s for s in screen if s["candidate"] == r["candidate"])
            if "+" not in r["candidate"]:
                assert r["folds"][:2] == first["folds"]
    # the third stage cross-fits the promoted candidates' systems, on folds 3-5 only
    third = [l for l in lines if l.startswith("Cross-fitted") and "folds 3,4,5 of 5" in l]
    if promoted:
        assert len(third) == 1
        assert sorted(third[0].split(" at ")[0][13:].split(", ")) == sorted(needed)
    assert dict(model.chosen_) in full
    assert any(line.startswith("Screening: 6 candidates rated at LDA %d on folds 1,2; the "
                               "best 2 (1/4)" % dim) for line in lines)
    assert "screening 6 candidates rated at LDA %d on folds 1,2" % dim in model.describe()
    # nothing of the cross-fitting is kept once the model is fitted but its figures
    assert not hasattr(model, "fold_scores_") and not hasattr(model, "_store")


def test_no_screening_with_fewer_than_twice_the_screening_folds(data):
    X, y = data
    model = AutoBackend(candidates=("plda", "pauc_lnorm"), lda_dims=(6, 10), num_folds=3,
                        metric_params={"num_iters": 40}, screen_factor=4).fit(X, y)
    assert {r["budget"] for r in model.cv_results_} == {"full"}
    assert all(len(r["folds"]) == 3 for r in model.cv_results_)


def test_the_result_does_not_depend_on_the_processes(data):
    """Folds, the final metrics and the fusions' rating in two forked processes: the same
    rows and the same model."""
    X, y = data
    kwargs = dict(candidates=("plda", "pauc_lnorm", "plda+pauc_latent", "dplda",
                              "pauc_lnorm+pauc_latent", "dplda+pauc_lnorm"),
                  lda_dims=(6, 10), num_folds=4, metric_params={"num_iters": 60,
                                                                "batch_size": 40},
                  dplda_lambdas=(100, 10), screen_factor=2)
    one = AutoBackend(**kwargs).fit(X, y)
    two = AutoBackend(n_jobs=2, **kwargs).fit(X, y)
    assert one.cv_results_ == two.cv_results_
    E, T = X[:4], X[4:30]
    er, tr = np.repeat(np.arange(4), 26), np.tile(np.arange(26), 4)
    np.testing.assert_array_equal(one.score(E, T, er, tr), two.score(E, T, er, tr))
