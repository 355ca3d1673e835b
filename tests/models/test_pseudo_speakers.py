"""Pseudo-speakers (models.pseudo_speakers): recovery of planted speakers with the stopping
rule, the average-linkage stop property, the cost bound, seeds, folds, degenerate inputs."""

import numpy as np
import pytest
from scipy.cluster import hierarchy
from sklearn.metrics import adjusted_rand_score

from pauc_backend.metrics.error_rates import eer
from pauc_backend.models.plda import PLDA
from pauc_backend.models.pseudo_speakers import (PseudoSpeakers, blend_plda,
                                                 cosine_similarity, labelled_pair_scores,
                                                 plda_similarity, pseudo_speaker_folds,
                                                 stopping_threshold)


def planted(seed, num_speakers, dim=40, low=5, high=20, spread=1.0, noise=0.5, offset=0.0):
    """Speakers well apart (between-speaker std ``spread`` per dimension, within ``noise``),
    utterance counts uniform on [low, high]; ``offset`` shifts the whole set (a domain)."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(low, high + 1, size=num_speakers)
    y = np.repeat(np.arange(num_speakers), counts)
    centres = rng.normal(scale=spread, size=(num_speakers, dim))
    X = centres[y] + rng.normal(scale=noise, size=(y.size, dim)) + offset
    return X, y


def training_scores(X, y, similarity):
    """(target, non-target) scores of every pair of a labelled training set."""
    S = similarity(X, X)
    iu = np.triu_indices(len(y), 1)
    same = y[iu[0]] == y[iu[1]]
    return S[iu][same], S[iu][~same]


def test_planted_speakers_are_recovered_with_the_stopping_rule():
    X_train, y_train = planted(1, 40)
    X, y = planted(2, 25)
    sim = cosine_similarity(X.mean(axis=0))
    scores = training_scores(X_train, y_train, cosine_similarity(X_train.mean(axis=0)))
    model = PseudoSpeakers().fit(X, sim, training_scores=scores)
    assert adjusted_rand_score(y, model.labels_) > 0.95
    assert model.n_clusters_ == 25
    assert model.threshold_ == pytest.approx(stopping_threshold(
        *scores, in_domain=sim(X, X)[np.triu_indices(len(y), 1)]), abs=0.02)


def test_the_in_domain_correction_follows_a_shift_of_the_scores():
    """Out of domain a similarity's scores shift and scale (a PLDA's LLRs do). Average linkage
    is unchanged by s -> a s + b (a > 0) and so is the corrected threshold's cut, since it moves
    with the in-domain scores; the training threshold alone does not (here it merges all)."""
    X_train, y_train = planted(3, 40)
    X, y = planted(4, 20)
    sim = cosine_similarity(X.mean(axis=0))
    scores = training_scores(X_train, y_train, cosine_similarity(X_train.mean(axis=0)))

    def shifted(A, B):
        return 3.0 * sim(A, B) + 5.0
    same = PseudoSpeakers().fit(X, sim, training_scores=scores)
    moved = PseudoSpeakers().fit(X, shifted, training_scores=scores)
    np.testing.assert_array_equal(moved.labels_, same.labels_)
    assert moved.threshold_ == pytest.approx(3.0 * same.threshold_ + 5.0)
    assert adjusted_rand_score(y, moved.labels_) > 0.95
    plain = PseudoSpeakers(in_domain_shift=False).fit(X, shifted, training_scores=scores)
    assert plain.n_clusters_ == 1


def test_threshold_cut_obeys_the_average_linkage_stop():
    """After the cut at t: any two clusters have average similarity < t, and each cluster's
    own tree merged at average similarity >= t (the definition of the cut)."""
    X, _ = planted(5, 12, dim=10, spread=0.5, noise=0.5)
    sim = cosine_similarity(X.mean(axis=0))
    S = sim(X, X)
    t = 0.2
    labels = PseudoSpeakers(threshold=t, min_size=1).fit_predict(X, sim)
    k = labels.max() + 1
    assert 1 < k < len(X)
    for a in range(k):
        for b in range(a + 1, k):
            assert S[np.ix_(labels == a, labels == b)].mean() < t
    # the same cut by brute force: repeatedly merge the pair of clusters of highest average
    clusters = [[i] for i in range(len(X))]
    while len(clusters) > 1:
        best, pair = -np.inf, None
        for i in range(len(clusters)):
            for j in range(i + 1, len(clusters)):
                value = S[np.ix_(clusters[i], clusters[j])].mean()
                if value > best:
                    best, pair = value, (i, j)
        if best < t:
            break
        i, j = pair
        clusters[i] += clusters.pop(j)
    brute = np.empty(len(X), dtype=int)
    for c, members in enumerate(clusters):
        brute[members] = c
    assert adjusted_rand_score(brute, labels) == 1.0


def test_num_clusters_cut_matches_scipy():
    X, _ = planted(6, 10, dim=8)
    sim = cosine_similarity(None)
    S = sim(X, X)
    D = S.max() - S
    np.fill_diagonal(D, 0.0)
    ref = hierarchy.fcluster(hierarchy.linkage(D[np.triu_indices(len(X), 1)], "average"), 7,
                             "maxclust")
    labels = PseudoSpeakers(num_clusters=7, min_size=1).fit_predict(X, sim)
    assert adjusted_rand_score(ref, labels) == 1.0


def test_cost_is_bounded_by_max_vectors():
    """No similarity call sees more than max_vectors columns or block rows; the rest of the
    set is assigned to the cluster of highest average similarity (brute force)."""
    X, y = planted(7, 30, low=20, high=40)
    base = cosine_similarity(X.mean(axis=0))
    shapes = []

    def similarity(A, B):
        shapes.append((len(A), len(B)))
        return base(A, B)
    model = PseudoSpeakers(threshold=0.3, max_vectors=200, block=64).fit(X, similarity)
    assert model.subset_.size == 200
    assert max(r for r, _ in shapes) <= 64 and max(c for _, c in shapes) <= 200
    assert sum(r * c for r, c in shapes) <= 200 * 200 + (len(X) - 200) * 200
    assert adjusted_rand_score(y, model.labels_) > 0.9
    # assignment by brute force: the average similarity to each cut cluster of the subset
    sub = PseudoSpeakers(threshold=0.3, min_size=1).fit(X[model.subset_], base)
    rest = np.setdiff1d(np.arange(len(X)), model.subset_)
    S = base(X[rest], X[model.subset_])
    averages = np.stack([S[:, sub.labels_ == c].mean(axis=1)
                         for c in range(sub.labels_.max() + 1)], axis=1)
    expected = np.where(averages.max(axis=1) >= 0.3, np.argmax(averages, axis=1), -1)
    got = np.full(len(X), -1)
    got[model.subset_] = sub.labels_
    got[rest] = expected
    clustered = PseudoSpeakers(threshold=0.3, max_vectors=200, block=64, min_size=1).fit(
        X, base)
    assert adjusted_rand_score(got, clustered.labels_) == 1.0


def test_a_seed_fixes_the_result():
    X, _ = planted(8, 20, low=10, high=30)
    sim = cosine_similarity(X.mean(axis=0))
    a = PseudoSpeakers(threshold=0.3, max_vectors=100, random_state=3).fit(X, sim)
    b = PseudoSpeakers(threshold=0.3, max_vectors=100, random_state=3).fit(X, sim)
    c = PseudoSpeakers(threshold=0.3, max_vectors=100, random_state=4).fit(X, sim)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.subset_, b.subset_)
    assert not np.array_equal(a.subset_, c.subset_)


def test_labels_are_numbered_by_size_and_small_clusters_left_out():
    X, _ = planted(9, 15)
    model = PseudoSpeakers(threshold=0.3, min_size=8).fit(X)
    assert np.all(np.diff(model.sizes_) <= 0) and np.all(model.sizes_ >= 8)
    np.testing.assert_array_equal(np.bincount(model.labels_[model.labels_ >= 0]),
                                  model.sizes_)
    assert model.clustered_fraction_ == pytest.approx(np.mean(model.labels_ >= 0))
    assert model.separation_ > 2.0


def test_plda_similarity_is_the_kaldi_llr():
    X, y = planted(10, 30, dim=6, low=3, high=6)
    plda = PLDA().fit(X, y)
    U = plda.transform(X, 1)[0]
    n = len(X)
    ref = plda.score_pairs(U, U, np.repeat(np.arange(n), n), np.tile(np.arange(n), n))
    S = plda_similarity(plda)(X, X)
    np.testing.assert_allclose(S, ref.reshape(n, n), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(S, S.T, atol=1e-10)


def test_stopping_rules():
    rng = np.random.default_rng(0)
    tar, non = rng.normal(2.0, 1.0, 4000), rng.normal(-1.0, 1.0, 40000)
    assert stopping_threshold(tar, non) == pytest.approx(eer(tar, non, return_threshold=True)[1])
    # equal spreads: the densities cross at the midpoint
    assert stopping_threshold(tar, non, "equal_density") == pytest.approx(0.5, abs=0.05)
    # the in-domain correction is affine-equivariant: scores a x + b move the threshold so
    t = stopping_threshold(tar, non)
    moved = stopping_threshold(tar, non, in_domain=3.0 * non + 5.0)
    assert moved == pytest.approx(3.0 * t + 5.0)


@pytest.mark.parametrize("bad, message", [
    (np.zeros((2, 4)), "at least 3 vectors"),
    (np.ones((6, 4)), "same similarity"),
    (np.where(np.arange(24).reshape(6, 4) == 9, np.nan, 1.0 + np.arange(24).reshape(6, 4)),
     "row 2 contains NaN"),
    (np.zeros(5), "2-D array"),
])
def test_degenerate_inputs_are_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        PseudoSpeakers(threshold=0.0).fit(bad, cosine_similarity(None))


def test_bad_settings_and_scores_are_errors():
    X, _ = planted(11, 5)
    with pytest.raises(ValueError, match="exactly one of"):
        PseudoSpeakers().fit(X)
    with pytest.raises(ValueError, match="exactly one of"):
        PseudoSpeakers(threshold=0.1, num_clusters=3).fit(X)
    with pytest.raises(ValueError, match="max_vectors"):
        PseudoSpeakers(threshold=0.1, max_vectors=2).fit(X)
    with pytest.raises(ValueError, match="NaN or Inf"):
        PseudoSpeakers(threshold=0.1).fit(X, lambda A, B: np.full((len(A), len(B)), np.nan))
    with pytest.raises(ValueError, match="not higher"):
        stopping_threshold([0.0, 0.1], [1.0, 2.0])
    with pytest.raises(ValueError, match="NaN"):
        stopping_threshold([1.0, np.nan], [0.0, 0.1])
    with pytest.raises(ValueError, match="unknown stopping rule"):
        stopping_threshold([1.0, 2.0], [0.0, 0.1], rule="median")


def test_pseudo_speaker_folds_are_speaker_disjoint():
    labels = np.repeat(np.arange(-1, 11), [5] + [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    folds = pseudo_speaker_folds(labels, num_folds=3, min_size=4, random_state=1)
    for c in np.unique(labels):
        assert np.unique(folds[labels == c]).size == 1       # a speaker in one fold only
    usable = np.bincount(labels[labels >= 0]) >= 4
    assert np.all((folds >= 0) == ((labels >= 0) & usable[np.maximum(labels, 0)]))
    per_fold = [np.unique(labels[folds == f]).size for f in range(3)]
    assert max(per_fold) - min(per_fold) <= 1 and sum(per_fold) == usable.sum()
    with pytest.raises(ValueError, match="too few"):
        pseudo_speaker_folds(labels, num_folds=3, min_size=11)


def _llrs(plda, X):
    U = plda.transform(X, 1)[0]
    n = len(X)
    return plda.score_pairs(U, U, np.repeat(np.arange(n), n), np.tile(np.arange(n), n))


def test_blend_interpolates_the_covariances():
    X_out, y_out = planted(12, 40, dim=6, low=3, high=8)
    X_in, y_in = planted(13, 30, dim=6, low=3, high=8, spread=2.0, offset=1.0)
    out, inside = PLDA().fit(X_out, y_out), PLDA().fit(X_in, y_in)
    probe = X_in[:15]
    np.testing.assert_allclose(_llrs(blend_plda(out, inside, 0.0), probe), _llrs(out, probe),
                               rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(_llrs(blend_plda(out, inside, 1.0), probe),
                               _llrs(inside, probe), rtol=1e-8, atol=1e-8)

    def covariances(p):
        inv = np.linalg.inv(p.transform_)
        return inv @ inv.T, (inv * p.psi_) @ inv.T
    half = covariances(blend_plda(out, inside, 0.25))
    for got, a, b in zip(half, covariances(out), covariances(inside)):
        np.testing.assert_allclose(got, 0.75 * a + 0.25 * b, rtol=1e-8, atol=1e-10)
    with pytest.raises(ValueError, match="weight"):
        blend_plda(out, inside, 1.5)


def test_labelled_pair_scores_are_every_pair_of_a_bounded_subset():
    X, y = planted(14, 12, dim=5, low=2, high=6)
    sim = cosine_similarity(None)
    tar, non = labelled_pair_scores(X, y, sim, max_vectors=1000)
    ref_tar, ref_non = training_scores(X, y, sim)
    np.testing.assert_allclose(np.sort(tar), np.sort(ref_tar))
    np.testing.assert_allclose(np.sort(non), np.sort(ref_non))
    calls = []

    def counting(A, B):
        calls.append(len(A))
        return sim(A, B)
    X, y = planted(15, 200, dim=5, low=10, high=30)
    tar, non = labelled_pair_scores(X, y, counting, max_vectors=300, max_per_speaker=5)
    assert calls == [300]
    assert tar.size == 60 * 10 and tar.size + non.size == 300 * 299 // 2
