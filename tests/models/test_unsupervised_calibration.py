"""The label-free two-Gaussian calibration (models.unsupervised_calibration): mathematical
properties of the fit, the originals' algorithm written out independently, degenerate input."""

import math

import numpy as np
import pytest

from pauc_backend.models.unsupervised_calibration import (GaussianMixtureCalibration,
                                                          sample_pairs)


def two_gaussians(seed, n, w, m_tar, m_non, sd_tar=1.0, sd_non=1.0):
    rng = np.random.default_rng(seed)
    target = rng.random(n) < w
    return np.where(target, rng.normal(m_tar, sd_tar, n), rng.normal(m_non, sd_non, n))


def true_llr(s, m_tar, m_non, sd_tar, sd_non):
    return (-math.log(sd_tar / sd_non) - 0.5 * ((s - m_tar) / sd_tar) ** 2
            + 0.5 * ((s - m_non) / sd_non) ** 2)


@pytest.mark.parametrize("init", ["hyperion", "vbx"])
@pytest.mark.parametrize("w, m_tar, sd", [(0.2, 2.0, 1.0), (0.03, 4.0, 1.0),
                                          (0.1, 0.6, 0.15)])
def test_recovers_the_affine_llr_of_two_gaussians_with_a_shared_variance(init, w, m_tar, sd):
    """EM is the maximum-likelihood fit, consistent: on 150,000 scores of a true mixture the
    fitted LLR a s + b is the true one, a = (m_tar - m_non) / v and a zero at the midpoint of
    the means, within sampling error (over 20 other seeds at 100,000 scores the errors stayed
    below 2.4 % in a, 5 % in the prior and 0.025 sd in the zero; the bounds are about twice
    that at 1.5 x the scores)."""
    m_non = 0.0
    s = two_gaussians(1, 150000, w, m_tar, m_non, sd, sd)
    model = GaussianMixtureCalibration(init=init).fit(s)
    assert model.converged_
    a = (m_tar - m_non) / sd ** 2
    b = (m_non ** 2 - m_tar ** 2) / (2 * sd ** 2)
    assert model.weights_[0] == pytest.approx(a, rel=0.03)
    assert model.threshold(0.5) == pytest.approx(-b / a, abs=0.04 * sd)
    assert model.prior_ == pytest.approx(w, rel=0.07)


def test_separate_variances_recover_the_quadratic_llr():
    s = two_gaussians(2, 300000, 0.1, 3.0, 0.0, 0.6, 1.2)
    model = GaussianMixtureCalibration(covariance="separate").fit(s)
    assert model.var_target_ == pytest.approx(0.36, rel=0.05)
    assert model.var_nontarget_ == pytest.approx(1.44, rel=0.03)
    grid = np.linspace(-1.0, 4.0, 50)
    assert np.max(np.abs(model.transform(grid) - true_llr(grid, 3.0, 0.0, 0.6, 1.2))) < 0.15
    with pytest.raises(ValueError, match="quadratic"):
        model.to_linear_calibration()


@pytest.mark.parametrize("covariance", ["tied", "separate"])
@pytest.mark.parametrize("init", ["hyperion", "vbx"])
@pytest.mark.parametrize("scale, shift", [(1e-3, 0.0), (250.0, -7.0), (0.37, 1e4)])
def test_the_llr_of_a_trial_does_not_change_under_an_increasing_affine_score_map(
        init, covariance, scale, shift):
    """EM's iterates move with the scores (both starts are affine-equivariant), so after the
    same 40 iterations the LLR of every trial is the same."""
    s = two_gaussians(3, 5000, 0.1, 2.5, 0.0, 0.8, 1.0)
    params = dict(init=init, covariance=covariance, max_iter=40, tol=0.0)
    before = GaussianMixtureCalibration(**params).fit(s)
    after = GaussianMixtureCalibration(**params).fit(scale * s + shift)
    assert after.prior_ == pytest.approx(before.prior_, rel=1e-7)
    np.testing.assert_allclose(after.transform(scale * s + shift), before.transform(s),
                               rtol=1e-6, atol=1e-6)


def test_a_known_prior_is_held_and_the_llr_still_recovered():
    s = two_gaussians(4, 300000, 0.05, 3.0, 0.0)
    model = GaussianMixtureCalibration(prior=0.05).fit(s)
    assert model.prior_ == 0.05
    assert model.weights_[0] == pytest.approx(3.0, rel=0.03)
    assert model.offset_ == pytest.approx(-4.5, abs=0.15)


def vbx_reference(s, iterations):
    """BUT's twoGMMcalib_lin (BUTSpeechFIT/VBx VBx/diarization_lib.py) written out per
    component on the raw scores: start at mean -/+ std, equal weights, the scores' variance;
    EM with a shared variance; the threshold where the weighted densities cross."""
    w = [0.5, 0.5]
    m = [s.mean() - s.std(), s.mean() + s.std()]
    v = s.var()
    for _ in range(iterations):
        dens = [w[k] / math.sqrt(v) * np.exp(-0.5 * (s - m[k]) ** 2 / v) for k in (0, 1)]
        total = dens[0] + dens[1]
        g = [d / total for d in dens]
        n = [gk.sum() for gk in g]
        w = [nk / s.size for nk in n]
        m = [(gk * s).sum() / nk for gk, nk in zip(g, n)]
        v = sum((gk * (s - mk) ** 2).sum() for gk, mk in zip(g, m)) / s.size
    # w0 N(t; m0, v) = w1 N(t; m1, v)  =>  t = (m1^2 - m0^2)/(2v) - log(w1/w0), over (m1-m0)/v
    t = ((m[1] ** 2 - m[0] ** 2) / (2 * v) - math.log(w[1] / w[0])) / ((m[1] - m[0]) / v)
    return t, m, v, w


@pytest.mark.parametrize("iterations", [3, 20])
def test_vbx_start_and_fixed_iterations_give_the_vbx_fit_and_threshold(iterations):
    s = two_gaussians(5, 50000, 0.3, 4.0, 0.0, 1.0, 1.0) * 0.1 + 0.3
    t, m, v, w = vbx_reference(s, iterations)
    model = GaussianMixtureCalibration(init="vbx", max_iter=iterations, tol=0.0).fit(s)
    assert model.n_iter_ == iterations and not model.converged_
    assert model.mean_target_ == pytest.approx(m[1], rel=1e-9)
    assert model.mean_nontarget_ == pytest.approx(m[0], rel=1e-9, abs=1e-12)
    assert model.var_target_ == pytest.approx(v, rel=1e-9)
    assert model.prior_ == pytest.approx(w[1], rel=1e-9)
    assert model.threshold() == pytest.approx(t, rel=1e-9)


def test_the_fitted_prior_threshold_is_where_the_weighted_densities_cross():
    s = two_gaussians(6, 50000, 0.1, 2.0, -1.0)
    model = GaussianMixtureCalibration().fit(s)
    t = model.threshold()
    v = model.var_target_

    def weighted(weight, mean):
        return weight * math.exp(-0.5 * (t - mean) ** 2 / v)

    assert weighted(model.prior_, model.mean_target_) == pytest.approx(
        weighted(1 - model.prior_, model.mean_nontarget_), rel=1e-9)
    assert model.transform(model.threshold(0.01)) == pytest.approx(math.log(99), rel=1e-12)


def test_the_linear_calibration_scores_as_the_mixture():
    s = two_gaussians(7, 20000, 0.1, 2.0, 0.0)
    model = GaussianMixtureCalibration().fit(s)
    np.testing.assert_allclose(model.to_linear_calibration().transform(s), model.transform(s),
                               rtol=1e-12)


def test_all_scores_equal_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="all 500 scores are equal"):
        GaussianMixtureCalibration().fit(np.full(500, 0.25))


@pytest.mark.parametrize("init", ["hyperion", "vbx"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_gaussian_is_a_value_error(init, seed):
    s = np.random.default_rng(seed).normal(0.3, 0.2, 5000)
    with pytest.raises(ValueError, match="one component|as well as two"):
        GaussianMixtureCalibration(init=init).fit(s)


@pytest.mark.parametrize("bad, message", [
    (np.array([0.0, np.nan] + [1.0] * 20), "NaN or infinite"),
    (np.array([0.0, np.inf] + [1.0] * 20), "NaN or infinite"),
    (np.arange(5.0), "at least 10 scores"),
    (np.zeros((20, 2)), "1-D"),
])
def test_bad_scores_are_value_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        GaussianMixtureCalibration().fit(bad)


@pytest.mark.parametrize("params, message", [
    (dict(init="kmeans"), "init must be"), (dict(covariance="full"), "covariance must be"),
    (dict(prior=1.0), "prior must lie"), (dict(init_prior=0.0), "init_prior must lie"),
    (dict(max_iter=0), "max_iter"), (dict(tol=-1.0), "tol"), (dict(var_floor=0.0), "var_floor"),
    (dict(max_prior=1.5), "max_prior must lie"),
])
def test_bad_parameters_are_value_errors(params, message):
    s = two_gaussians(8, 1000, 0.2, 3.0, 0.0)
    with pytest.raises(ValueError, match=message):
        GaussianMixtureCalibration(**params).fit(s)


def test_every_pair_when_the_budget_allows_it():
    i, j = sample_pairs(30, 435)
    a, b = np.triu_indices(30, k=1)
    np.testing.assert_array_equal(i, a)
    np.testing.assert_array_equal(j, b)


def test_sampled_pairs_are_distinct_ordered_and_seeded():
    i, j = sample_pairs(5000, 100000, random_state=3)
    assert i.size == 100000
    assert np.all((0 <= i) & (i < j) & (j < 5000))
    assert np.unique(i * 5000 + j).size == i.size
    i2, j2 = sample_pairs(5000, 100000, random_state=3)
    np.testing.assert_array_equal(i, i2)
    np.testing.assert_array_equal(j, j2)


def test_sampled_pairs_are_a_uniform_subset():
    """Each of the 4,950 pairs of 100 items is in the sample with probability 1,000 / 4,950:
    the count of sampled pairs among any fixed set of pairs (here: those of the first 10
    items, 945 pairs) is hypergeometric; it stays within 5 standard deviations."""
    n, k = 100, 1000
    total = n * (n - 1) // 2
    fixed = sum(n - 1 - r for r in range(10))
    p = fixed / total
    sd = math.sqrt(k * p * (1 - p) * (total - k) / (total - 1))
    for seed in range(5):
        i, _ = sample_pairs(n, k, random_state=seed)
        assert abs(np.count_nonzero(i < 10) - k * p) < 5 * sd


def test_bad_pair_requests_are_value_errors():
    with pytest.raises(ValueError, match="at least 2 items"):
        sample_pairs(1, 10)
    with pytest.raises(ValueError, match="max_pairs"):
        sample_pairs(10, 0)


@pytest.mark.parametrize("covariance", ["tied", "separate"])
def test_the_reported_log_likelihood_is_the_fitted_mixture_density_of_the_scores(covariance):
    s = two_gaussians(9, 20000, 0.1, 2.0, 0.0, 0.7, 1.0) * 3.0 + 1.0
    m = GaussianMixtureCalibration(covariance=covariance).fit(s)

    def density(mean, var):
        return np.exp(-0.5 * (s - mean) ** 2 / var) / np.sqrt(2 * np.pi * var)

    mixture = (m.prior_ * density(m.mean_target_, m.var_target_)
               + (1 - m.prior_) * density(m.mean_nontarget_, m.var_nontarget_))
    assert m.log_likelihood_ == pytest.approx(np.mean(np.log(mixture)), rel=1e-10)
    np.testing.assert_allclose(
        m.transform(s), np.log(density(m.mean_target_, m.var_target_))
        - np.log(density(m.mean_nontarget_, m.var_nontarget_)), rtol=1e-9, atol=1e-9)


def test_a_majority_upper_component_is_refused_unless_max_prior_allows_it():
    """0.8 N(0, 1) + 0.2 N(-3, 1): the component of higher mean holds 0.8 of the scores, a
    bulk with a lower tail, not a minority of targets; max_prior=None keeps the fit. (VBx's
    start finds the split; Hyperion's, at the maximum score, ends where the two components
    coincide, also refused.)"""
    s = two_gaussians(10, 50000, 0.8, 0.0, -3.0)
    with pytest.raises(ValueError, match=r"holds 0\.[78]\d* of the 50000 scores"):
        GaussianMixtureCalibration(init="vbx").fit(s)
    with pytest.raises(ValueError, match="as well as two"):
        GaussianMixtureCalibration(init="hyperion").fit(s)
    model = GaussianMixtureCalibration(init="vbx", max_prior=None).fit(s)
    assert model.prior_ == pytest.approx(0.8, rel=0.05)
    assert model.mean_target_ == pytest.approx(0.0, abs=0.05)
