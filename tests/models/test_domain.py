"""models.domain (issue 28): the mean shift in training within-speaker standard deviations,
against a brute-force numpy reference (np.cov, a per-class loop) and known shifts of
simulated data."""

import numpy as np
import pytest

from pauc_backend.models.domain import (OUT_OF_DOMAIN_SHIFT, ShiftAccumulator, TrainingDomain,
                                        is_out_of_domain)
from pauc_backend.models.plda import PLDA


def _reference(Z):
    """sqrt(max(0, |mean|^2 - tr(cov) / n) / d) with np.cov (n - 1 normalisation)."""
    n, d = Z.shape
    mean = Z.mean(axis=0)
    return np.sqrt(max(0.0, mean @ mean - np.trace(np.cov(Z.T)) / n) / d)


@pytest.mark.parametrize("seed", range(4))
def test_accumulated_sums_give_the_reference_value_in_any_chunking(seed):
    rng = np.random.default_rng(seed)
    Z = rng.normal(0.3 * seed, 1.0 + seed, size=(200 + 37 * seed, 7)).astype(np.float32)
    whole = ShiftAccumulator(7).add(Z).value()
    assert whole == pytest.approx(_reference(Z.astype(np.float64)), rel=1e-9, abs=1e-12)
    cuts = np.sort(rng.choice(np.arange(1, len(Z)), size=5, replace=False))
    chunked = ShiftAccumulator(7)
    for part in np.split(Z, cuts):
        chunked.add(part)
    assert chunked.value() == pytest.approx(whole, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("delta", [0.0, 0.2, 0.5, 1.0])
def test_a_known_shift_in_within_units_is_recovered(delta):
    """z ~ N(delta * u, I) with |u|^2 = d: the shift is delta (the noise of 4000 draws in 40
    dimensions is removed by the tr(cov)/n term; left alone it would read 0.079 at delta 0)."""
    rng = np.random.default_rng(7)
    d, n = 40, 4000
    direction = rng.choice([-1.0, 1.0], size=d)
    Z = rng.standard_normal((n, d)) + delta * direction
    value = ShiftAccumulator(d).add(Z).value()
    assert value == pytest.approx(delta, abs=0.03)
    assert is_out_of_domain(value) == (delta > OUT_OF_DOMAIN_SHIFT)


def test_fewer_than_two_vectors_give_no_verdict():
    acc = ShiftAccumulator(3)
    assert np.isnan(acc.value())
    assert np.isnan(acc.add(np.ones((1, 3))).value())
    assert not is_out_of_domain(acc.value())


def _speakers(rng, num_spk, per_spk, dim, within_factor, mean, between_factor=None):
    between_factor = 3.0 * np.eye(dim) if between_factor is None else between_factor
    centres = mean + rng.standard_normal((num_spk, dim)) @ between_factor.T
    labels = np.repeat(np.arange(num_spk), per_spk)
    X = centres[labels] + rng.standard_normal((labels.size, dim)) @ within_factor.T
    return X, labels


def test_fit_whitens_the_within_class_covariance_of_the_training_data():
    rng = np.random.default_rng(1)
    dim = 6                                             # eigenvalues 0.25..4: above the floor
    factor = np.linalg.qr(rng.standard_normal((dim, dim)))[0] @ np.diag(np.linspace(0.5, 2, dim))
    X, y = _speakers(rng, 30, rng.integers(2, 9, 30), dim, factor, np.zeros(dim))
    y = np.array(["spk%02d" % s for s in y])          # string labels, any order
    model = TrainingDomain().fit(X, y)
    within = np.zeros((dim, dim))                      # brute force: per-class loop
    for speaker in np.unique(y):
        rows = X[y == speaker]
        within += (rows - rows.mean(axis=0)).T @ (rows - rows.mean(axis=0))
    within /= len(X) - len(np.unique(y))
    np.testing.assert_allclose(model.whitener_ @ within @ model.whitener_.T, np.eye(dim),
                               atol=1e-9)
    np.testing.assert_allclose(model.mean_, X.mean(axis=0), rtol=1e-12)
    # training data have no shift from themselves
    assert model.shift(X) == pytest.approx(0.0, abs=1e-6)


def test_a_shift_of_the_scored_speakers_is_measured_in_within_speaker_units():
    """Training and scored data share the within-class covariance L L^T (between: 4 L L^T);
    the scored speakers' mean is moved by L v with |v|^2 / d = 0.8^2: the shift is 0.8, whatever
    L is. The spread of the speakers' means adds sqrt(4/2000 + 4/1000) = 0.08 in quadrature."""
    rng = np.random.default_rng(2)
    dim = 10
    factor = np.linalg.qr(rng.standard_normal((dim, dim)))[0] @ np.diag(np.linspace(0.2, 3, dim))
    X, y = _speakers(rng, 1000, 8, dim, factor, np.zeros(dim), 2.0 * factor)
    model = TrainingDomain().fit(X, y)
    offset = factor @ (0.8 * rng.choice([-1.0, 1.0], size=dim))
    scored, _ = _speakers(rng, 2000, 5, dim, factor, offset, 2.0 * factor)
    assert model.shift(scored) == pytest.approx(0.8, abs=0.05)
    same, _ = _speakers(rng, 2000, 5, dim, factor, np.zeros(dim), 2.0 * factor)
    assert model.shift(same) < 0.15


def test_a_rotated_whitener_gives_the_same_shift():
    rng = np.random.default_rng(3)
    mean, W = rng.standard_normal(5), rng.standard_normal((5, 5))
    Q = np.linalg.qr(rng.standard_normal((5, 5)))[0]
    X = rng.standard_normal((300, 5)) + 2.0
    a = TrainingDomain.from_params(mean, W).shift(X)
    b = TrainingDomain.from_params(mean, Q @ W).shift(X)
    assert a == pytest.approx(b, rel=1e-10)


def test_from_plda_whitens_as_the_plda_transform_before_length_normalisation():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((400, 5)) + np.repeat(rng.standard_normal((40, 5)) * 2, 10, axis=0)
    plda = PLDA().fit(X, np.repeat(np.arange(40), 10))
    test = rng.standard_normal((50, 5)) + 1.5
    U = plda.transform(test, normalize_length=False)[0]
    assert TrainingDomain.from_plda(plda).shift(test) == pytest.approx(
        _reference(U), rel=1e-9)


def test_a_direction_without_training_variation_is_floored_not_divided_by_zero():
    rng = np.random.default_rng(5)
    X, y = _speakers(rng, 20, 5, 4, np.eye(4), np.zeros(4))
    X[:, 3] = 1.0                                      # constant in training
    model = TrainingDomain().fit(X, y)
    assert np.all(np.isfinite(model.whitener_))
    test = X[:50].copy()
    test[:, 3] += rng.normal(0, 1e-6, 50)
    assert np.isfinite(model.shift(test)) and model.shift(test) < 1.0


def test_bad_shapes_are_value_errors():
    with pytest.raises(ValueError):
        ShiftAccumulator(3).add(np.ones((2, 4)))
    with pytest.raises(ValueError):
        TrainingDomain.from_params(np.zeros(3), np.eye(4))
    with pytest.raises(ValueError):
        TrainingDomain().fit(np.ones((3, 2)), [0, 1, 2])  # one vector per speaker


def test_row_scales_are_divided_out_block_by_block(monkeypatch):
    """add(U, row_scale=f) equals add(U / f[:, None]), also across BLOCK_ROWS boundaries."""
    from pauc_backend.models import domain
    monkeypatch.setattr(domain, "BLOCK_ROWS", 7)
    rng = np.random.default_rng(6)
    U = rng.standard_normal((50, 4)) + 0.7
    scale = rng.uniform(0.5, 2.0, 50)
    got = ShiftAccumulator(4).add(U, row_scale=scale).value()
    assert got == pytest.approx(_reference(U / scale[:, None]), rel=1e-9)
