"""Linear calibration/fusion against an independent scipy minimisation of BOSARIS's objective."""

import math

import numpy as np
import pytest
from scipy.optimize import approx_fprime, minimize

from pauc_backend.metrics.llr import cllr, min_cllr
from pauc_backend.models.calibration import (LinearCalibration, LinearFusion,
                                             SeparableScoresError,
                                             prior_weighted_cross_entropy)


def reference_objective(params, scores, labels, prior, regularization):
    """C(w, b) written out term by term from the formula (no shared code with the model)."""
    w, b = params[:-1], params[-1]
    offset = math.log(prior / (1 - prior))
    llr = scores.reshape(len(scores), -1) @ w + b + offset
    tar, non = llr[labels], llr[~labels]
    return (prior * np.mean(np.log1p(np.exp(-tar)))
            + (1 - prior) * np.mean(np.log1p(np.exp(non)))
            + 0.5 * regularization * np.sum(w ** 2))


def overlapping_scores(rng, num_cols, n_tar=400, n_non=3000):
    tar = rng.normal(1.0, 1.0, (n_tar, num_cols)) * rng.uniform(0.5, 3, num_cols) + 2
    non = rng.normal(-0.5, 1.2, (n_non, num_cols)) * rng.uniform(0.5, 3, num_cols) + 2
    scores = np.concatenate([tar, non])
    labels = np.r_[np.ones(n_tar, bool), np.zeros(n_non, bool)]
    return scores, labels


@pytest.mark.parametrize("num_cols", [1, 3])
@pytest.mark.parametrize("prior", [0.5, 0.01])
@pytest.mark.parametrize("regularization", [0.0, 0.05])
def test_optimum_matches_an_independent_scipy_minimisation(num_cols, prior, regularization):
    rng = np.random.default_rng(num_cols * 10 + int(prior * 100))
    scores, labels = overlapping_scores(rng, num_cols)
    model = LinearFusion(prior=prior, regularization=regularization).fit(scores, labels)
    reference = minimize(reference_objective, np.zeros(num_cols + 1),
                         args=(scores, labels, prior, regularization), method="BFGS",
                         options={"gtol": 1e-11, "maxiter": 10000})
    ours = np.append(model.weights_, model.offset_)
    assert ours == pytest.approx(reference.x, rel=1e-5, abs=1e-6)
    assert model.objective_ == pytest.approx(reference.fun, rel=1e-12)
    assert model.objective_ <= reference.fun + 1e-14
    assert model.grad_norm_ < 1e-8
    assert 0 < model.n_iter_ < 30


@pytest.mark.parametrize("num_cols", [1, 3])
def test_blockwise_newton_sums_give_the_one_block_fit(num_cols, monkeypatch):
    """Above calibration._BLOCK trials the Newton sums run over blocks standardised at each
    step; below it over one block standardised once: the same model either way."""
    from pauc_backend.models import calibration

    rng = np.random.default_rng(7 + num_cols)
    scores, labels = overlapping_scores(rng, num_cols)
    whole = LinearFusion(prior=0.01, regularization=0.01).fit(scores, labels)
    monkeypatch.setattr(calibration, "_BLOCK", 257)          # 14 blocks, the last one short
    blocks = LinearFusion(prior=0.01, regularization=0.01).fit(scores, labels)
    assert blocks.weights_ == pytest.approx(whole.weights_, rel=1e-10)
    assert blocks.offset_ == pytest.approx(whole.offset_, rel=1e-10, abs=1e-12)
    assert blocks.objective_ == pytest.approx(whole.objective_, rel=1e-12)


def test_objective_and_gradient_agree_with_the_formula_and_finite_differences():
    rng = np.random.default_rng(5)
    scores, labels = overlapping_scores(rng, 2, n_tar=50, n_non=300)
    for prior, regularization in ((0.5, 0.0), (0.01, 0.3)):
        for params in rng.normal(0, 1, (5, 3)):
            value, gradient = prior_weighted_cross_entropy(params[:2], params[2], scores, labels,
                                                           prior, regularization)
            assert value == pytest.approx(
                reference_objective(params, scores, labels, prior, regularization), rel=1e-12)
            numeric = approx_fprime(params, reference_objective, 1e-7, scores, labels, prior,
                                    regularization)
            assert gradient == pytest.approx(numeric, rel=1e-5, abs=1e-7)


def test_objective_at_prior_half_is_cllr_in_nats():
    rng = np.random.default_rng(6)
    scores, labels = overlapping_scores(rng, 1)
    model = LinearCalibration().fit(scores, labels)
    llr = model.transform(scores[:, 0])
    assert model.objective_ == pytest.approx(cllr(llr[labels], llr[~labels]) * math.log(2))


@pytest.mark.parametrize("prior", [0.5, 0.01])
def test_calibrated_cllr_lies_between_min_cllr_and_raw_cllr(prior):
    rng = np.random.default_rng(7)
    raw = np.r_[rng.normal(3, 2, 500), rng.normal(1, 2, 5000)]
    labels = np.r_[np.ones(500, bool), np.zeros(5000, bool)]
    llr = LinearCalibration(prior=prior).fit(raw, labels).transform(raw)
    calibrated = cllr(llr[labels], llr[~labels])
    assert min_cllr(raw[labels], raw[~labels]) <= calibrated <= cllr(raw[labels], raw[~labels])


@pytest.mark.parametrize("prior", [0.5, 0.1])
def test_perfectly_calibrated_gaussian_scores_learn_the_identity(prior):
    # Targets N(mu, 2mu) and non-targets N(-mu, 2mu): the score already is the true LLR.
    rng = np.random.default_rng(8)
    mu = 3.0
    scores = np.r_[rng.normal(mu, math.sqrt(2 * mu), 100000),
                   rng.normal(-mu, math.sqrt(2 * mu), 100000)]
    labels = np.r_[np.ones(100000, bool), np.zeros(100000, bool)]
    model = LinearCalibration(prior=prior).fit(scores, labels)
    assert model.weights_[0] == pytest.approx(1.0, abs=0.03)
    assert model.offset_ == pytest.approx(0.0, abs=0.06)


def test_known_affine_miscalibration_is_undone():
    rng = np.random.default_rng(9)
    mu = 2.0
    llr = np.r_[rng.normal(mu, 2.0, 100000), rng.normal(-mu, 2.0, 100000)]
    labels = np.r_[np.ones(100000, bool), np.zeros(100000, bool)]
    model = LinearCalibration().fit(0.25 * llr - 7.0, labels)
    assert model.weights_[0] == pytest.approx(4.0, rel=0.02)
    assert model.offset_ == pytest.approx(28.0, rel=0.02)


def test_fusion_of_two_noisy_copies_beats_each_copy_on_held_out_trials():
    rng = np.random.default_rng(10)

    def draw(n_tar, n_non):
        truth = np.r_[rng.normal(2, 2, n_tar), rng.normal(-2, 2, n_non)]
        copies = truth[:, None] + rng.normal(0, 2.0, (truth.size, 2)) * [1.0, 1.5]
        return copies, np.r_[np.ones(n_tar, bool), np.zeros(n_non, bool)]

    train, train_labels = draw(2000, 20000)
    test, test_labels = draw(2000, 20000)
    fused = LinearFusion().fit(train, train_labels).transform(test)
    fused_cllr = cllr(fused[test_labels], fused[~test_labels])
    for k in range(2):
        single = LinearCalibration().fit(train[:, k], train_labels).transform(test[:, k])
        assert fused_cllr < cllr(single[test_labels], single[~test_labels]) - 0.02


def test_identical_fusion_inputs_give_the_single_calibration():
    rng = np.random.default_rng(11)
    scores, labels = overlapping_scores(rng, 1)
    single = LinearCalibration().fit(scores, labels)
    fused = LinearFusion().fit(np.hstack([scores, scores]), labels)
    assert fused.transform(np.hstack([scores, scores])) == pytest.approx(
        single.transform(scores[:, 0]), rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("tar, non", [([1.0, 2.0, 3.0], [-1.0, 0.0, 0.5]),
                                      ([-1.0, 0.0, 0.5], [1.0, 2.0, 3.0]),
                                      ([1.0, 2.0, 3.0], [-1.0, 0.0, 1.0])])
def test_separable_scores_without_regularization_are_a_clear_error(tar, non):
    labels = np.r_[np.ones(len(tar), bool), np.zeros(len(non), bool)]
    with pytest.raises(SeparableScoresError, match="regularization"):
        LinearCalibration().fit(np.r_[tar, non], labels)


def test_separable_fusion_inputs_are_a_clear_error_not_a_nan_model():
    # Neither column separates alone, their sum does.
    rng = np.random.default_rng(12)
    x = rng.normal(0, 1, (400, 2))
    labels = x.sum(axis=1) > 0
    x[labels] += 0.1
    with pytest.raises(SeparableScoresError, match="regularization"):
        LinearFusion().fit(x, labels)


def test_regularization_makes_separable_scores_solvable():
    scores = np.array([1.0, 2.0, 3.0, -1.0, 0.0, 0.5])
    labels = np.array([1, 1, 1, 0, 0, 0])
    model = LinearCalibration(regularization=0.1).fit(scores, labels)
    assert np.all(np.isfinite(model.weights_)) and model.weights_[0] > 0
    assert model.grad_norm_ < 1e-8


@pytest.mark.parametrize("scores, labels, message", [
    ([1.0, 2.0], [1, 1], "both target and non-target"),
    ([1.0, np.nan], [1, 0], "NaN"),
    ([1.0, 1.0, 1.0], [1, 0, 1], "constant"),
    ([1.0, 2.0], [1, 2], "0/1"),
    ([1.0, 2.0], [1, 0, 1], "shape"),
])
def test_bad_training_input_is_an_error(scores, labels, message):
    with pytest.raises(ValueError, match=message):
        LinearCalibration().fit(scores, labels)


def test_calibration_refuses_several_columns_and_transform_checks_width():
    rng = np.random.default_rng(13)
    scores, labels = overlapping_scores(rng, 2)
    with pytest.raises(ValueError, match="LinearFusion"):
        LinearCalibration().fit(scores, labels)
    model = LinearFusion().fit(scores, labels)
    with pytest.raises(ValueError, match="2 score columns"):
        model.transform(scores[:, 0])


def test_from_params_reproduces_the_fitted_transform():
    rng = np.random.default_rng(14)
    scores, labels = overlapping_scores(rng, 2)
    model = LinearFusion(prior=0.01).fit(scores, labels)
    again = LinearFusion.from_params(model.weights_, model.offset_, prior=0.01)
    assert np.array_equal(again.transform(scores), model.transform(scores))
