"""Discriminative PLDA: the quadratic form at its start IS Kaldi's PLDA LLR, the closed-form
gradient matches finite differences (scipy.optimize.check_grad), training lowers the objective
and is pulled back to the PLDA by a large lambda, and the training trials are what they claim."""

import numpy as np
import pytest
from scipy.optimize import check_grad

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.discriminative_plda import (DiscriminativePLDA, plda_quadratic_form,
                                                     sample_training_trials)
from pauc_backend.models.plda import PLDA


@pytest.fixture(scope="module")
def latent():
    c = make_speaker_corpus(seed=3, dim=6, num_train_speakers=25, num_adapt_speakers=2,
                            num_eval_speakers=4, train_utts_range=(4, 9))
    X = np.asarray(c.train.X, dtype=np.float64)
    y = np.asarray(c.train.labels)
    plda = PLDA().fit(X, y)
    return plda, X, y


@pytest.mark.parametrize("num_utts", [1, 3])
def test_quadratic_form_is_kaldi_plda_llr(latent, num_utts):
    plda, X, y = latent
    E = plda.transform(X[:7], num_utts)[0]
    T = plda.transform(X[7:40], 1)[0]
    ei, ti = np.repeat(np.arange(7), 33), np.tile(np.arange(33), 7)
    model = DiscriminativePLDA.from_params(*plda_quadratic_form(plda, num_utts))
    np.testing.assert_allclose(model.score_pairs(E, T, ei, ti),
                               plda.log_likelihood_ratio(E[ei], T[ti], num_utts),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("symmetric", [False, True])
def test_gradient_matches_finite_differences(latent, symmetric):
    plda, X, y = latent
    sets, test_rows, valid, lab = sample_training_trials(y, 0 if symmetric else 2, 20, 60,
                                                         random_state=1)
    E = plda.transform(X[sets].mean(axis=1), sets.shape[1])[0]
    T = plda.transform(X[test_rows], 1)[0]
    init = plda_quadratic_form(plda, sets.shape[1])
    model = DiscriminativePLDA(regularization=0.05)
    f, theta0 = model.objective_function(E, T, valid, lab, init, symmetric)
    rng = np.random.default_rng(0)
    for theta in (theta0, theta0 + 0.05 * rng.normal(size=theta0.size)):
        # forward differences: the error of a right gradient shrinks with epsilon (O(eps))
        errs = [check_grad(lambda t: f(t)[0], lambda t: f(t)[1], theta, epsilon=eps)
                for eps in (1e-6, 1e-7)]
        assert errs[1] < 1e-5 * max(1.0, np.linalg.norm(f(theta)[1]))
        assert errs[1] < 0.2 * errs[0]


def test_objective_is_the_prior_weighted_cross_entropy(latent):
    """J at theta0 with lambda = 0: BOSARIS's C_pi of the PLDA LLRs over the valid trials,
    divided by H(pi), written out trial by trial."""
    plda, X, y = latent
    sets, test_rows, valid, lab = sample_training_trials(y, 0, 0, 50, random_state=3)
    U = plda.transform(X[test_rows], 1)[0]
    f, theta0 = DiscriminativePLDA(regularization=0.0, prior=0.05).objective_function(
        U, U, valid, lab, plda_quadratic_form(plda, 1), True)
    i, j = np.nonzero(valid)
    llr = plda.log_likelihood_ratio(U[i], U[j], 1)
    t = lab[i, j]
    logit = np.log(0.05 / 0.95)
    c = (0.05 * np.mean(np.log1p(np.exp(-(llr[t] + logit))))
         + 0.95 * np.mean(np.log1p(np.exp(llr[~t] + logit))))
    h = -0.05 * np.log(0.05) - 0.95 * np.log(0.95)
    assert f(theta0)[0] == pytest.approx(c / h, rel=1e-10)


def test_training_lowers_objective_and_lambda_pulls_back(latent):
    plda, X, y = latent
    sets, test_rows, valid, lab = sample_training_trials(y, 0, 0, 200, random_state=2)
    U = plda.transform(X[test_rows], 1)[0]
    init = plda_quadratic_form(plda, 1)
    free = DiscriminativePLDA(regularization=1e-3, max_iter=200).fit(U, U, valid, lab, init,
                                                                     True)
    assert free.objective_ < free.initial_objective_
    # symmetric form: Q1 = Q2 and P symmetric
    np.testing.assert_array_equal(free.quad_enroll_, free.quad_test_)
    np.testing.assert_allclose(free.cross_, free.cross_.T)
    tight = DiscriminativePLDA(regularization=1e4).fit(U, U, valid, lab, init, True)
    moved = [np.linalg.norm(m.cross_ - init[2]) for m in (free, tight)]
    assert moved[1] < 0.05 * moved[0]
    # warm start reaches the same (convex) minimum
    warm = DiscriminativePLDA(regularization=1e-3, max_iter=200).fit(
        U, U, valid, lab, init, True, start=tight)
    np.testing.assert_allclose(warm.objective_, free.objective_, rtol=1e-4)


def test_training_trials_brute_force():
    y = np.repeat(np.array(list("abcd")), [5, 2, 4, 1])
    # single vectors: the test rows are every speaker's first per_test vectors (here all but
    # "d", whose one vector cannot make a target), each unordered pair once
    sets, test_rows, valid, lab = sample_training_trials(y, 0, 0, 100, random_state=0)
    assert sorted(test_rows.tolist()) == [i for i in range(y.size) if y[i] != "d"]
    np.testing.assert_array_equal(sets[:, 0], test_rows)
    i, j = np.nonzero(valid)
    assert all(a < b for a, b in zip(i, j))
    assert len(i) == test_rows.size * (test_rows.size - 1) // 2
    np.testing.assert_array_equal(lab[i, j], y[test_rows[i]] == y[test_rows[j]])
    assert not lab[~valid].any()
    # enrollment sets of 2: disjoint, one speaker each, never holding a test vector
    sets, test_rows, valid, lab = sample_training_trials(y, 2, 100, 100, random_state=0)
    assert sets.shape[1] == 2 and np.unique(sets).size == sets.size
    assert all(len(set(y[s])) == 1 for s in sets)
    assert {y[s[0]] for s in sets} == {"a", "c"}     # b has 2 vectors, d one: no test left
    assert not set(sets.ravel()) & set(test_rows.tolist())
    assert valid.all()
    np.testing.assert_array_equal(lab, y[sets[:, 0]][:, None] == y[test_rows][None, :])
    # caps: a share of max_test / max_enroll per speaker
    many = np.repeat(np.arange(10), 30)
    sets, test_rows, valid, lab = sample_training_trials(many, 3, 20, 40, random_state=1)
    assert sets.shape[0] == 20 and test_rows.size == 40
    assert np.bincount(many[test_rows]).max() == 4 and np.bincount(many[sets[:, 0]]).max() == 2


def test_training_grid_is_bounded_by_max_test_whatever_the_number_of_speakers():
    """Each speaker gives at least two test vectors (a target needs two), so with more
    speakers than max_test / 2 that floor multiplied the grid: a fold of the paper's corpus
    (5,900 speakers) gave 11,800 test vectors, a 139 M-trial grid. At most max_test speakers
    now take part, so the grid has at most 2 x max_test test vectors (and each enrollment set
    still belongs to one of them)."""
    y = np.repeat(np.arange(3000), 4)
    for n, max_enroll, max_test in ((0, 0, 100), (2, 50, 100), (3, 250, 40)):
        sets, test_rows, valid, lab = sample_training_trials(y, n, max_enroll, max_test,
                                                             random_state=5)
        speakers = set(y[test_rows].tolist())
        assert len(speakers) <= max_test and test_rows.size <= 2 * max_test
        assert set(y[sets[:, 0]].tolist()) <= speakers
        assert sets.shape[0] <= (test_rows.size if n == 0 else max(max_enroll, max_test))
        assert lab.any() and (valid & ~lab).any()
        np.testing.assert_array_equal(lab, valid & (y[sets[:, 0]][:, None]
                                                    == y[test_rows][None, :]))
    # below the cap nothing changes: every usable speaker takes part
    few = np.repeat(np.arange(50), 5)
    _, test_rows, _, _ = sample_training_trials(few, 0, 0, 100, random_state=5)
    assert set(few[test_rows].tolist()) == set(range(50))
