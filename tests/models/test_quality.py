"""Quality measure functions (QualityFusion) against an independent minimisation of BOSARIS's
objective with quality features built by hand, and the LLR properties they must keep."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from pauc_backend.metrics.llr import cllr
from pauc_backend.models.calibration import LinearCalibration
from pauc_backend.models.quality import (DURATION, QualityFusion, QualityMeasure, sum_by_model,
                                         trial_features)


def reference_objective(params, X, labels, prior):
    """Prior-weighted cross-entropy written out from the formula (no shared code)."""
    w, b = params[:-1], params[-1]
    llr = X @ w + b + math.log(prior / (1 - prior))
    return (prior * np.mean(np.logaddexp(0, -llr[labels]))
            + (1 - prior) * np.mean(np.logaddexp(0, llr[~labels])))


def duration_trials(rng, n=6000, p_target=0.2, offset_per_log_second=0.6):
    """Scores whose true LLR is s + c (min log d - 2): short trials are less to be trusted."""
    d_e = np.exp(rng.uniform(0.0, 4.5, n))
    d_t = np.exp(rng.uniform(0.0, 4.5, n))
    labels = rng.random(n) < p_target
    mu = 2.0
    s = np.where(labels, rng.normal(mu, math.sqrt(2 * mu), n),
                 rng.normal(-mu, math.sqrt(2 * mu), n))       # s itself is an LLR
    shift = offset_per_log_second * (np.log(np.clip(np.minimum(d_e, d_t), 0.1, 30.0)) - 2.0)
    # s - shift has the LLR distribution of s shifted: the true LLR of (s', q) is s' + shift
    return s - shift, labels, d_e, d_t


@pytest.mark.parametrize("interactions", [False, True])
@pytest.mark.parametrize("prior", [0.5, 0.05])
def test_optimum_matches_an_independent_scipy_minimisation(interactions, prior):
    rng = np.random.default_rng(3 + interactions)
    s, labels, d_e, d_t = duration_trials(rng)
    norm_e, norm_t = rng.normal(10, 1, s.size), rng.normal(10, 1, s.size)
    measures = (DURATION, QualityMeasure("norm"))
    model = QualityFusion(measures, interactions=interactions, prior=prior).fit(
        s, labels, np.c_[d_e, norm_e], np.c_[d_t, norm_t])
    # the features, by hand: min/max of log(clip(d, 0.1, 30)) and of the norms
    le, lt = np.log(np.clip(d_e, 0.1, 30)), np.log(np.clip(d_t, 0.1, 30))
    q = np.c_[np.minimum(le, lt), np.maximum(le, lt), np.minimum(norm_e, norm_t),
              np.maximum(norm_e, norm_t)]
    X = np.c_[s, q, s[:, None] * q] if interactions else np.c_[s, q]
    reference = minimize(reference_objective, np.zeros(X.shape[1] + 1),
                         args=(X, labels, prior), method="BFGS",
                         options={"gtol": 1e-12, "maxiter": 20000})
    ours = np.concatenate([model.weights_, model.quality_weights_,
                           model.interaction_weights_.ravel() if interactions else [],
                           [model.offset_]])
    assert model.objective_ == pytest.approx(reference.fun, rel=1e-9)
    assert model.objective_ <= reference.fun + 1e-12
    assert ours == pytest.approx(reference.x, rel=1e-4, abs=1e-4)
    np.testing.assert_allclose(model.transform(s, np.c_[d_e, norm_e], np.c_[d_t, norm_t]),
                               X @ ours[:-1] + ours[-1], rtol=1e-12, atol=1e-12)


def test_calibrated_llrs_with_uninformative_quality_stay_the_identity():
    # Targets N(mu, 2mu), non-targets N(-mu, 2mu): the score is already the LLR, and quality
    # that says nothing must get weights near zero.
    rng = np.random.default_rng(8)
    n, mu = 100000, 3.0
    s = np.r_[rng.normal(mu, math.sqrt(2 * mu), n), rng.normal(-mu, math.sqrt(2 * mu), n)]
    labels = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    d_e, d_t = np.exp(rng.uniform(0, 4, 2 * n)), np.exp(rng.uniform(0, 4, 2 * n))
    model = QualityFusion().fit(s, labels, d_e, d_t)
    assert model.weights_[0] == pytest.approx(1.0, abs=0.03)
    assert np.abs(model.quality_weights_).max() < 0.03
    assert model.offset_ == pytest.approx(0.0, abs=0.1)


def test_quality_dependent_offset_is_learned_and_lowers_held_out_cllr():
    rng = np.random.default_rng(4)
    s, labels, d_e, d_t = duration_trials(rng, n=40000)
    qmf = QualityFusion(prior=0.5).fit(s[:20000], labels[:20000], d_e[:20000], d_t[:20000])
    # true LLR = s + 0.6 (min log d - 2): weights (1, 0.6 on min, 0 on max), offset -1.2
    assert qmf.weights_[0] == pytest.approx(1.0, abs=0.05)
    assert qmf.quality_weights_ == pytest.approx([0.6, 0.0], abs=0.06)
    assert qmf.offset_ == pytest.approx(-1.2, abs=0.15)
    plain = LinearCalibration(prior=0.5).fit(s[:20000], labels[:20000])
    held = slice(20000, None)
    llr_q = qmf.transform(s[held], d_e[held], d_t[held])
    llr_s = plain.transform(s[held])
    y = labels[held]
    assert cllr(llr_q[y], llr_q[~y]) < cllr(llr_s[y], llr_s[~y]) - 0.01


def test_trial_features_are_min_and_max_of_the_sides_and_symmetric():
    measures = (QualityMeasure("duration", True, 1.0, 20.0), QualityMeasure("norm"))
    e = np.array([[0.5, 3.0], [40.0, 1.0], [5.0, 2.0]])
    t = np.array([[4.0, 2.0], [10.0, 7.0], [5.0, 2.0]])
    f = trial_features(measures, e, t)
    expected = [[0.0, math.log(4), 2, 3], [math.log(10), math.log(20), 1, 7],
                [math.log(5), math.log(5), 2, 2]]
    np.testing.assert_allclose(f, expected, rtol=1e-15)
    np.testing.assert_array_equal(trial_features(measures, t, e), f)


def test_constant_quality_feature_is_a_clear_error():
    # TIMIT's segments all last 1.8 s: duration carries no information.
    rng = np.random.default_rng(5)
    s, labels, _, _ = duration_trials(rng, n=2000)
    with pytest.raises(ValueError, match=r"min\(log duration\) is constant"):
        QualityFusion().fit(s, labels, np.full(s.size, 1.8), np.full(s.size, 1.8))


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan])
def test_nonpositive_or_missing_durations_are_errors(bad):
    s = np.array([1.0, -1.0, 2.0, -2.0])
    labels = np.array([True, False, True, False])
    d = np.array([1.0, 2.0, bad, 4.0])
    with pytest.raises(ValueError):
        QualityFusion().fit(s, labels, d, np.ones(4) * 3)


def test_shapes_are_checked_and_from_params_reproduces_the_model():
    rng = np.random.default_rng(6)
    s, labels, d_e, d_t = duration_trials(rng, n=3000)
    scores = np.c_[s, s + rng.normal(0, 1, s.size)]
    model = QualityFusion(interactions=True, prior=0.1).fit(scores, labels, d_e, d_t)
    assert model.interaction_weights_.shape == (2, 2)
    copy = QualityFusion.from_params(model.measures, True, 2, model.fusion_.weights_,
                                     model.offset_, prior=0.1)
    np.testing.assert_array_equal(copy.transform(scores, d_e, d_t),
                                  model.transform(scores, d_e, d_t))
    with pytest.raises(ValueError, match="2 score columns"):
        model.transform(s, d_e, d_t)
    with pytest.raises(ValueError, match="shape"):
        model.transform(scores, d_e[:-1], d_t)
    with pytest.raises(ValueError, match="weights"):
        QualityFusion.from_params(model.measures, False, 2, model.fusion_.weights_, 0.0)


def test_model_quality_is_the_sum_of_its_utterances():
    assert sum_by_model({"a": ["u1", "u2"], "b": ["u3"]},
                        {"u1": 2.5, "u2": 3.0, "u3": 7.0}) == {"a": 5.5, "b": 7.0}
    with pytest.raises(KeyError, match="u9"):
        sum_by_model({"a": ["u9"]}, {"u1": 1.0})
