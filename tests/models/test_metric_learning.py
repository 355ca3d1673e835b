"""pAUCMetric / TripletMetric: the fast batch maths against an O(J R) brute force, PPA
properties, determinism, and learning on synthetic speakers whose ideal metric is known."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pauc_backend.models import ppa
from pauc_backend.models.metric_learning import (PaucMetric, TripletMetric, fit_at_once,
                                                 group_by_speaker)


# -- brute-force references (the paper's O(J R) loops, written as plainly as possible) ----------
def brute_pauc(X, M, alpha, beta, delta, gamma):
    n = X.shape[0]
    pos, neg = [], []
    for a in range(n):
        for b in range(a + 1, n):
            (pos if a // 2 == b // 2 else neg).append(X[a] - X[b])
    S = lambda z: float(z @ M @ z)
    s_pos = [S(z) for z in pos]
    s_neg = [S(z) for z in neg]
    K = len(neg)
    k_alpha, k_beta = math.ceil(K * alpha), math.floor(K * beta)
    k_beta = min(max(k_beta, k_alpha + 1), K)
    ranked = sorted(range(K), key=lambda k: (s_neg[k], k))[k_alpha:k_beta]
    J, R = len(pos), len(ranked)
    P = np.zeros_like(M)
    hinge = wrong = 0.0
    for j in range(J):
        for r in ranked:
            if delta + s_pos[j] > s_neg[r]:
                P += np.outer(pos[j], pos[j]) - np.outer(neg[r], neg[r])
            hinge += max(0.0, delta - s_neg[r] + s_pos[j])
            wrong += (s_pos[j] > s_neg[r]) + 0.5 * (s_pos[j] == s_neg[r])
    PP = sum(np.outer(z, z) for z in pos) / J
    return P / (J * R) + gamma * PP, hinge / (J * R), 1 - wrong / (J * R), sorted(ranked)


def brute_triplet(X, M, delta, gamma):
    n = X.shape[0]
    S = lambda z: float(z @ M @ z)
    grad = np.zeros_like(M)
    hinge = 0.0
    count = 0
    for a in range(n):
        zp = X[a] - X[a ^ 1]
        for m in range(n):
            if m // 2 == a // 2:
                continue
            zn = X[a] - X[m]
            count += 1
            if delta + S(zp) > S(zn):
                grad += np.outer(zp, zp) - np.outer(zn, zn)
            hinge += max(0.0, delta - S(zn) + S(zp))
    pos = [X[2 * i] - X[2 * i + 1] for i in range(n // 2)]
    PP = sum(np.outer(z, z) for z in pos) / len(pos)
    assert count == n * (n - 2)
    return grad / count + gamma * PP, hinge / count


def integer_batch(rng, s, d, high=3):
    """Small-integer vectors: every distance is an exact integer, so ties are exact ties."""
    return rng.integers(-high, high + 1, size=(2 * s, d)).astype(np.float64)


# -- the fast batch maths equals the brute force -----------------------------------------------
@pytest.mark.parametrize("alpha,beta,delta,gamma", [(0.0, 0.1, 1.5, 0.5), (0.05, 0.3, 1.0, 0.0),
                                                     (0.1, 0.5, 0.0, 0.1), (0.0, 1.0, 2.0, 1.0)])
def test_pauc_gradient_equals_brute_force_with_ties(alpha, beta, delta, gamma):
    rng = np.random.default_rng(1)
    for s in (3, 6, 9):
        X = integer_batch(rng, s, 4)
        M = np.eye(4)
        stats = ppa.pauc_batch(X, X, alpha, beta, delta, gamma)
        grad, hinge, pauc, _ = brute_pauc(X, M, alpha, beta, delta, gamma)
        np.testing.assert_allclose(stats.gradient, grad, atol=1e-12)
        assert stats.hinge == pytest.approx(hinge, abs=1e-12)
        assert stats.pauc == pytest.approx(pauc, abs=1e-12)


def test_pauc_gradient_equals_brute_force_for_a_general_metric():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(16, 5))
    B = rng.normal(size=(5, 5))
    M = B.T @ B
    A = np.linalg.cholesky(M).T                     # A^T A = M
    stats = ppa.pauc_batch(X, X @ A.T, 0.02, 0.4, 1.5, 0.3)
    grad, hinge, pauc, _ = brute_pauc(X, M, 0.02, 0.4, 1.5, 0.3)
    np.testing.assert_allclose(stats.gradient, grad, rtol=1e-9, atol=1e-9)
    assert stats.hinge == pytest.approx(hinge, rel=1e-9)
    assert stats.pauc == pytest.approx(pauc)


def test_strict_inequality_decides_exact_ties():
    # S_j + delta == S_r exactly: Pi = 0 (eq. 10 is strict), so that pair has no weight.
    p_j, p_r, hinge, pauc = ppa.pauc_weights(np.array([1.0, 2.0]), np.array([2.0, 3.0, 4.0]), 1.0)
    np.testing.assert_array_equal(p_j, [0 / 3, 1 / 3])    # 2 > 2? no; 3 > 2 yes, 3 > 3 no
    np.testing.assert_array_equal(p_r, [1 / 2, 0, 0])
    assert hinge == pytest.approx(1 / 6)                   # only (S_j=2, S_r=2): 1 + 2 - 2
    assert pauc == pytest.approx(1 - 0.5 / 6)              # S_j = 2 ties S_r = 2


@given(st.lists(st.integers(0, 6), min_size=1, max_size=12),
       st.lists(st.integers(0, 6), min_size=1, max_size=30), st.integers(0, 3))
@settings(max_examples=200, deadline=None)
def test_pauc_weights_equal_the_index_matrix(pos, neg, delta):
    s_pos, s_neg = np.array(pos, float), np.array(neg, float)
    Pi = (delta + s_pos[:, None]) > s_neg[None, :]
    p_j, p_r, hinge, pauc = ppa.pauc_weights(s_pos, s_neg, float(delta))
    np.testing.assert_array_equal(p_j, Pi.mean(axis=1))
    np.testing.assert_array_equal(p_r, Pi.mean(axis=0))
    assert hinge == pytest.approx(np.mean(np.maximum(0, delta - s_neg[None] + s_pos[:, None])))
    ref = 1 - np.mean((s_pos[:, None] > s_neg) + 0.5 * (s_pos[:, None] == s_neg))
    assert pauc == pytest.approx(ref)


@given(st.lists(st.integers(0, 4), min_size=2, max_size=40), st.data())
@settings(max_examples=200, deadline=None)
def test_partial_selection_equals_a_stable_sort(values, data):
    values = np.array(values, float)
    lo = data.draw(st.integers(0, values.size - 1))
    hi = data.draw(st.integers(lo + 1, values.size))
    expected = np.sort(np.argsort(values, kind="stable")[lo:hi])
    np.testing.assert_array_equal(np.sort(ppa.select_ranks(values, lo, hi)), expected)


def test_n0_ranks_follow_ceil_and_floor():
    assert ppa.n0_bounds(1000, 0.0, 0.01) == (0, 10)
    assert ppa.n0_bounds(999, 0.001, 0.0105) == (1, 10)
    assert ppa.n0_bounds(40, 0.0, 0.01) == (0, 1)         # at least one negative


@pytest.mark.parametrize("delta,gamma", [(1.0, 0.5), (0.0, 0.0), (2.0, 0.1)])
def test_triplet_gradient_equals_brute_force_with_ties(delta, gamma):
    rng = np.random.default_rng(3)
    for s in (2, 4, 7):
        X = integer_batch(rng, s, 3)
        stats = ppa.triplet_batch(X, X, delta, gamma)
        grad, hinge = brute_triplet(X, np.eye(3), delta, gamma)
        np.testing.assert_allclose(stats.gradient, grad, atol=1e-12)
        assert stats.hinge == pytest.approx(hinge, abs=1e-12)
        assert stats.num_negatives == 2 * s * (2 * s - 2)


def test_laplacian_equals_sum_of_weighted_outer_products():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(12, 4))
    a = rng.integers(0, 12, 30)
    b = (a + rng.integers(1, 12, 30)) % 12
    w = rng.normal(size=30)
    ref = sum(wk * np.outer(X[i] - X[j], X[i] - X[j]) for i, j, wk in zip(a, b, w))
    np.testing.assert_allclose(ppa.laplacian_scatter(X, a, b, w), ref, atol=1e-12)


# -- PPA step ------------------------------------------------------------------------------------
@given(st.integers(1, 6), st.floats(0, 1), st.floats(1e-3, 20), st.integers(0, 10 ** 6))
@settings(max_examples=100, deadline=None)
def test_ppa_step_keeps_the_metric_symmetric_psd(d, mu, eta, seed):
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(d, d)) * 10
    B = rng.normal(size=(d, d))
    M, w, _ = ppa.ppa_step(B @ B.T, G + G.T, eta, mu)
    np.testing.assert_array_equal(M, M.T)
    assert np.all(w >= 0)
    assert np.linalg.eigvalsh(M).min() >= -1e-9 * max(1.0, np.abs(w).max())
    if mu > 1e-6:
        assert np.all(w > 0)


def test_phi_plus_is_the_proximal_map_of_minus_log():
    v = np.array([-1e8, -3.0, -1e-3, 0.0, 0.5, 7.0])
    lam = 0.2
    phi = ppa.phi_plus(v, lam)
    # phi solves phi - lam/phi = v (the stationarity condition of the prox of -lam log).
    np.testing.assert_allclose(phi - lam / phi, v, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(ppa.phi_plus(v, 0.0), np.maximum(v, 0.0))


# -- estimators ------------------------------------------------------------------------------
def synthetic_speakers(rng, num_spk, per_spk, d=8):
    """Speaker means ~ N(0, I); within-class noise huge along the first half of the axes, so
    the ideal metric down-weights them (LLR of the difference, Appendix A)."""
    noise = np.r_[np.full(d // 2, 3.0), np.full(d - d // 2, 0.3)]
    means = rng.normal(size=(num_spk, d))
    y = np.repeat(np.arange(num_spk), per_spk)
    X = means[y] + rng.normal(size=(y.size, d)) * noise
    return X, y


def eer_of(model, X, y):
    a, b = np.triu_indices(len(y), k=1)
    scores = model.pair_score(np.stack([X[a], X[b]], axis=1))
    same = y[a] == y[b]
    tar, non = np.sort(scores[same]), np.sort(scores[~same])
    thr = np.concatenate([tar, non])
    miss = np.searchsorted(tar, thr) / tar.size
    fa = 1 - np.searchsorted(non, thr) / non.size
    i = np.argmin(np.abs(miss - fa))
    return (miss[i] + fa[i]) / 2


class _Identity:
    def pair_score(self, pairs):
        return -np.sum((pairs[:, 0] - pairs[:, 1]) ** 2, axis=1)


@pytest.mark.parametrize("cls", [PaucMetric, TripletMetric])
def test_learning_lowers_the_objective_and_beats_the_identity(cls):
    rng = np.random.default_rng(5)
    X, y = synthetic_speakers(rng, 60, 6)
    model = cls(batch_size=40, num_iters=150, validation_fraction=0.0, eta=1.0,
                random_state=0).fit(X, y)
    objective = [h["objective"] for h in model.history_]
    assert np.mean(objective[-20:]) < 0.6 * objective[0]
    Xe, ye = synthetic_speakers(np.random.default_rng(6), 40, 5)
    assert eer_of(model, Xe, ye) < 0.7 * eer_of(_Identity(), Xe, ye)
    w = np.diag(model.get_mahalanobis_matrix())
    assert w[:4].mean() < w[4:].mean() / 5           # the noisy axes are down-weighted


def test_metrics_fitted_at_once_are_those_fitted_one_after_the_other():
    """fit_at_once (the two metrics of a fold task, in threads): the same bytes as each
    fitted alone (batches of the same size: the pair caches are shared), and an error in a
    thread is raised in the caller."""
    rng = np.random.default_rng(8)
    X, y = synthetic_speakers(rng, 40, 5)
    Y = np.tanh(X)                          # a second space
    make = [lambda: PaucMetric(batch_size=12, num_iters=60, random_state=1),
            lambda: PaucMetric(batch_size=12, num_iters=60, random_state=2, eta=3.0)]
    alone = [make[0]().fit(X, y), make[1]().fit(Y, y)]
    together = fit_at_once([make[0](), make[1]()], [X, Y], y)
    for a, b in zip(alone, together):
        assert a.get_mahalanobis_matrix().tobytes() == b.get_mahalanobis_matrix().tobytes()
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or Inf"):
        fit_at_once([make[0](), make[1]()], [bad, Y], y)


@pytest.mark.parametrize("cls", [PaucMetric, TripletMetric])
def test_same_seed_gives_a_byte_identical_model(cls):
    X, y = synthetic_speakers(np.random.default_rng(7), 30, 4)
    fit = lambda seed: cls(batch_size=10, num_iters=40, eval_every=5,
                           random_state=seed).fit(X, y).get_mahalanobis_matrix().tobytes()
    assert fit(3) == fit(3)
    assert fit(3) != fit(4)


def test_auto_scale_makes_the_metric_scale_equivariant():
    X, y = synthetic_speakers(np.random.default_rng(8), 30, 4)
    m1 = PaucMetric(batch_size=10, num_iters=30, random_state=0).fit(X, y)
    m2 = PaucMetric(batch_size=10, num_iters=30, random_state=0).fit(X * 7.0, y)
    np.testing.assert_allclose(m2.get_mahalanobis_matrix() * 49.0, m1.get_mahalanobis_matrix(),
                               rtol=1e-7, atol=1e-9)


def test_estimator_api_is_consistent():
    X, y = synthetic_speakers(np.random.default_rng(9), 20, 4)
    model = PaucMetric(batch_size=8, num_iters=20, random_state=0).fit(X, y)
    A = model.components_
    np.testing.assert_allclose(A.T @ A, model.get_mahalanobis_matrix(), atol=1e-10)
    pairs = np.stack([X[:10], X[10:20]], axis=1)
    diff = model.transform(X[:10]) - model.transform(X[10:20])
    np.testing.assert_allclose(model.pair_distance(pairs), np.sum(diff ** 2, axis=1), rtol=1e-9)
    np.testing.assert_array_equal(model.pair_score(pairs), -model.pair_distance(pairs))


def test_one_utterance_speakers_are_skipped_and_counted():
    labels, groups, skipped = group_by_speaker(np.array(["a", "b", "b", "c", "d", "d", "d"]))
    assert list(labels) == ["b", "d"] and skipped == 2
    assert [list(g) for g in groups] == [[1, 2], [4, 5, 6]]


@pytest.mark.parametrize("kwargs,message", [
    ({"alpha": 0.1, "beta": 0.1}, "alpha"), ({"alpha": 0.2, "beta": 0.1}, "alpha"),
    ({"delta": -1}, "delta"), ({"gamma": -0.1}, "gamma"), ({"mu": -1e-3}, "mu"),
    ({"eta": 0}, "eta"), ({"eta": float("nan")}, "eta"), ({"batch_size": 1}, "batch size"),
])
def test_bad_options_are_errors(kwargs, message):
    X, y = synthetic_speakers(np.random.default_rng(10), 10, 3)
    with pytest.raises(ValueError, match=message):
        PaucMetric(**kwargs).fit(X, y)


def test_degenerate_data_are_errors():
    with pytest.raises(ValueError, match="at least 2 speakers"):
        PaucMetric().fit(np.ones((4, 3)) * np.arange(4)[:, None], [0, 1, 2, 3])
    with pytest.raises(ValueError, match="NaN"):
        PaucMetric().fit(np.array([[np.nan, 1.0]] * 4), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="identical"):
        PaucMetric().fit(np.ones((4, 3)), [0, 0, 1, 1])


def test_early_stopping_keeps_the_best_held_out_iteration_and_refits():
    X, y = synthetic_speakers(np.random.default_rng(11), 40, 5)
    model = PaucMetric(batch_size=16, num_iters=60, validation_fraction=0.25, eval_every=5,
                       patience=0, random_state=0).fit(X, y)
    checked = [h for h in model.history_ if "validation" in h]
    assert [h["iteration"] for h in checked] == list(range(5, 61, 5))
    best = max(checked, key=lambda h: h["validation"])
    assert model.best_iteration_ == best["iteration"]
    refit = [h for h in model.history_ if h["stage"] == "refit"]
    assert len(refit) == model.best_iteration_
    assert model.best_validation_ == best["validation"]


def test_batches_hold_two_distinct_utterances_of_distinct_speakers():
    rng = np.random.default_rng(12)
    groups = [np.arange(10 * k, 10 * k + 2 + k % 5) for k in range(30)]
    seen = set()
    for _ in range(300):
        rows = ppa.sample_batch(groups, 12, rng)
        spk = rows // 10
        assert np.all(spk[0::2] == spk[1::2]) and np.unique(spk[0::2]).size == 12
        assert np.all(rows[0::2] != rows[1::2])
        assert all(r in groups[r // 10] for r in rows)
        seen.update((int(a), int(b)) for a, b in zip(rows[0::2], rows[1::2]))
    # every ordered pair of the 2-utterance speakers shows up
    assert {(0, 1), (1, 0)} <= seen
