"""Pseudo-speakers in the automatic back-end (models.auto.pseudo): their in-domain trials,
the guard, and the pseudo-trained candidates scored only by models that never saw the
pseudo-speakers they are rated on."""

import numpy as np
import pytest

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models import pseudo_speakers as ps
from pauc_backend.models.auto import pseudo
from pauc_backend.models.auto.adapt import AdaptationSet


class Found:
    """A stand-in for models.auto.pseudo.Clustering with known labels."""

    def __init__(self, labels, subset=None):
        self.labels = np.asarray(labels)
        self.subset = np.arange(self.labels.size) if subset is None else subset
        sizes = np.bincount(self.labels[self.labels >= 0])
        self.usable = int(np.sum(sizes >= pseudo.MIN_RATING_SIZE))


def speakers_of(corpus):
    _, index = np.unique(np.asarray(corpus.adapt.labels), return_inverse=True)
    return index.reshape(-1)


def pseudo_speakers(A, labels, enroll_utts=3, max_trials=0, seed=0):
    adapt = AdaptationSet.of(A, A.shape[1], 0, seed)
    found = Found(labels)
    fold = ps.pseudo_speaker_folds(labels, 2, pseudo.MIN_RATING_SIZE, seed)
    trials, trial_fold, positions = pseudo.trial_set(A, adapt.rows, labels, fold, enroll_utts,
                                                     max_trials, seed)
    return adapt, pseudo.PseudoSpeakers(found, 8, fold, trials, trial_fold, positions)


@pytest.mark.parametrize("enroll_utts", [0, 1, 3])
def test_pseudo_trials_stay_within_one_speaker_disjoint_fold(enroll_utts):
    """Every trial's two sides are of one fold; a target trial is two sides of one
    pseudo-speaker; an enrollment model is the mean of min(N, size - 1) of its vectors and is
    never tried against them; without a cap every such pair is a trial (brute force)."""
    rng = np.random.default_rng(2)
    labels = np.repeat(np.arange(14), rng.integers(4, 9, 14))
    A = rng.normal(size=(labels.size, 6)).astype(np.float32)
    adapt, found = pseudo_speakers(A, labels, enroll_utts)
    t = found.trials
    fold_of_vector = found.fold[found.positions]
    e_fold = np.array([fold_of_vector[rows[0]] for rows in t.enroll])
    assert np.array_equal(e_fold[t.enroll_index], fold_of_vector[t.test[t.test_index]])
    assert np.array_equal(found.trial_fold, e_fold[t.enroll_index])
    lab = labels[found.positions]
    e_lab = np.array([lab[rows[0]] for rows in t.enroll])
    assert all(np.unique(lab[rows]).size == 1 for rows in t.enroll)
    assert np.array_equal(t.is_target, e_lab[t.enroll_index] == lab[t.test[t.test_index]])
    if enroll_utts:
        for rows in t.enroll:
            size = int(np.sum(lab == lab[rows[0]]))
            assert rows.size == min(enroll_utts, size - 1)
        pairs = {(i, int(t.test[j])) for i, j in zip(t.enroll_index, t.test_index)}
        for i, rows in enumerate(t.enroll):
            assert not any((i, int(r)) in pairs for r in rows)
        expected = sum(int(np.sum(e_fold == k)) * int(np.sum(fold_of_vector[t.test] == k))
                       for k in (0, 1))
    else:
        assert all(rows.size == 1 for rows in t.enroll)
        assert np.all(t.enroll_index < t.test_index)        # each pair once, i < j
        expected = sum(int(np.sum(fold_of_vector == k)) * (int(np.sum(fold_of_vector == k))
                                                            - 1) // 2 for k in (0, 1))
    assert t.num_trials == expected


def test_a_cap_keeps_every_target_up_to_half_and_samples_the_non_targets():
    rng = np.random.default_rng(3)
    labels = np.repeat(np.arange(20), 8)
    A = rng.normal(size=(labels.size, 5)).astype(np.float32)
    _, full = pseudo_speakers(A, labels, 0)
    _, capped = pseudo_speakers(A, labels, 0, max_trials=2000)
    assert capped.trials.num_trials <= 2000 and capped.trials.sampled
    assert capped.trials.num_target == min(full.trials.num_target, 2000 // 2)
    key = lambda t: set(zip(t.enroll_index.tolist(), t.test_index.tolist()))  # noqa: E731
    assert key(capped.trials) <= key(full.trials)


def test_pseudo_trained_models_never_see_the_pseudo_speakers_they_are_rated_on():
    """Relabelling the pseudo-speakers of fold k leaves fold k's scores unchanged (its
    models are trained on the other fold's pseudo-speakers); relabelling the other fold's
    changes them. A leak of a fold's own pseudo-speakers into its models fails this."""
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=40, num_adapt_speakers=24,
                            adapt_utts_range=(6, 8))
    X, y = c.train.X, np.asarray(c.train.labels)
    A, labels = c.adapt.X, speakers_of(c)
    adapt, found = pseudo_speakers(A, labels, 2)
    rows = np.arange(X.shape[0])
    base = pseudo.cross_fit(X, y, rows, adapt, found, 10, 0)
    assert set(base) >= {"pseudo_pooled", "pseudo_pooled:as"}
    for k in (0, 1):
        mixed = labels.copy()
        mine = np.flatnonzero(found.fold == k)
        mixed[mine] = np.random.default_rng(k).permutation(mixed[mine])   # fold k relabelled
        clustering = Found(mixed)
        again = pseudo.PseudoSpeakers(clustering, found.lda_dim, found.fold, found.trials,
                                      found.trial_fold, found.positions)
        got = pseudo.cross_fit(X, y, rows, adapt, again, 10, 0)
        for name in ("pseudo_pooled", "pseudo_pooled:as"):
            same = found.trial_fold == k
            assert np.array_equal(got[name]["pseudo"][same], base[name]["pseudo"][same])
            assert not np.allclose(got[name]["pseudo"][~same], base[name]["pseudo"][~same])


def test_the_guard_needs_ten_pseudo_speakers_of_four_clustered_vectors():
    """The boundary of the guard: exactly MIN_PSEUDO_SPEAKERS usable pseudo-speakers pass,
    one fewer does not (sizes 4 count, 3 do not)."""
    n = pseudo.MIN_PSEUDO_SPEAKERS

    class Model:
        def __init__(self, sizes):
            self.sizes_ = np.asarray(sizes)
            self.subset_ = np.arange(int(np.sum(sizes)))
            self.n_clusters_ = len(sizes)
            self.clustered_fraction_ = 1.0
            self.separation_ = 2.0

    def clustering(sizes):
        labels = np.repeat(np.arange(len(sizes)), sizes)
        return pseudo.Clustering(labels, Model(sizes), 0.5, len(sizes))

    assert clustering([4] * n).ok
    assert not clustering([4] * (n - 1) + [3] * 5).ok
    assert clustering([4] * (n - 1) + [9]).usable == n
    assert not clustering([4] * (n - 1)).ok


def test_pseudo_trained_complexity_is_above_the_plda_it_is_built_on():
    from pauc_backend.models.systems import trained_parameters
    plda = trained_parameters(("plda",), 50, 100, 30)
    assert pseudo.complexity("pseudo_pooled", 50, 100, 30) == plda + 1
    assert (pseudo.complexity("pseudo_pooled", 50, 100, 30)
            < pseudo.complexity("pseudo_blend", 50, 100, 30)
            < pseudo.complexity("pseudo_blend:as", 50, 100, 30))
