"""PLDA model: Kaldi's golden models and scores, a per-class EM reference, Gaussian identities."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import multivariate_normal

from pauc_backend.kaldi_io import read_int32_table, read_plda, read_token_table, read_vector_table
from pauc_backend.models.plda import PLDA


def assert_plda_close(model, ref, transform_rtol=1e-5, atol=1e-6):
    """Kaldi's eigen-solver picks each row's sign: compare the transform up to row sign."""
    mean, transform, psi = ref
    np.testing.assert_allclose(model.psi_, psi, rtol=atol, atol=atol)
    np.testing.assert_allclose(model.mean_, mean, rtol=atol, atol=atol)
    signs = np.sign(np.sum(model.transform_ * transform, axis=1))
    np.testing.assert_allclose(model.transform_ * signs[:, None], transform,
                               rtol=transform_rtol, atol=transform_rtol * np.abs(transform).max())


def kaldi_em_reference(X, y, num_iters):
    """Kaldi's PldaEstimator written as its per-class loop (one matrix inverse per class)."""
    X = np.asarray(X, dtype=np.float64)
    labels = sorted(set(y), key=lambda lab: list(y).count(lab))
    groups = [X[np.asarray(y) == lab] for lab in labels]
    dim = X.shape[1]
    means = [g.mean(axis=0) for g in groups]
    scatter = sum(g.T @ g - len(g) * np.outer(m, m) for g, m in zip(groups, means))
    global_mean = sum(means) / len(groups)
    within, between = np.eye(dim), np.eye(dim)
    for _ in range(num_iters):
        w_stats, w_count = scatter.copy(), float(len(X) - len(groups))
        b_stats, b_count = np.zeros((dim, dim)), 0.0
        w_inv, b_inv = np.linalg.inv(within), np.linalg.inv(between)
        for g, m in zip(groups, means):
            n = len(g)
            mixed = np.linalg.inv(b_inv + n * w_inv)
            centred = m - global_mean
            w = mixed @ (n * w_inv @ centred)
            b_stats += mixed + np.outer(w, w)
            b_count += 1
            w_stats += n * (mixed + np.outer(centred - w, centred - w))
            w_count += 1
        within, between = w_stats / w_count, b_stats / b_count
    chol_inv = np.linalg.inv(np.linalg.cholesky(within))
    psi, vectors = np.linalg.eigh(chol_inv @ between @ chol_inv.T)
    order = np.argsort(-psi)
    return global_mean, vectors[:, order].T @ chol_inv, psi[order]


def synthetic(rng, num_speakers, dim, max_utts=6, min_utts=1):
    sizes = rng.integers(min_utts, max_utts + 1, size=num_speakers)
    speakers = rng.normal(size=(num_speakers, dim)) * rng.uniform(0.5, 2.0, size=dim)
    y = np.repeat(np.arange(num_speakers), sizes)
    X = speakers[y] + rng.normal(size=(len(y), dim)) + 3.0
    return X, y


@pytest.fixture
def golden_dir(golden):
    return golden


@pytest.fixture
def kaldi_model(golden):
    return PLDA.from_params(*read_plda(str(golden / "exp/plda")))


def test_em_reproduces_kaldi_ivector_compute_plda(golden_dir):
    keys, X = read_vector_table("ark:%s" % (golden_dir / "exp/train_lda_norm.ark"))
    utt2spk = read_token_table("ark:%s" % (golden_dir / "data/train/utt2spk"))
    model = PLDA(num_em_iters=10).fit(X, [utt2spk[k] for k in keys])
    assert_plda_close(model, read_plda(str(golden_dir / "exp/plda")))
    # Kaldi's log: traces of the first and last iteration.
    assert "%.6g %.6g" % (model.within_var_trace_[0], model.between_var_trace_[0]) == \
        "18.9941 17.0254"
    assert "%.6g %.6g" % (model.within_var_trace_[9], model.between_var_trace_[9]) == \
        "17.3909 14.5462"


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), dim=st.integers(1, 6), num_iters=st.integers(1, 4))
def test_grouped_em_equals_per_class_em(seed, dim, num_iters):
    rng = np.random.default_rng(seed)
    X, y = synthetic(rng, num_speakers=12, dim=dim, max_utts=5)
    if len(X) <= dim or np.all(np.bincount(y) == 1):
        return
    model = PLDA(num_em_iters=num_iters).fit(X, y)
    assert np.all(np.diff(model.psi_) <= 0) and np.all(model.psi_ >= 0)
    assert_plda_close(model, kaldi_em_reference(X, y, num_iters), transform_rtol=1e-8,
                      atol=1e-9)


def test_single_utterance_speakers_still_shape_the_between_class_covariance():
    rng = np.random.default_rng(3)
    X, y = synthetic(rng, num_speakers=30, dim=4, max_utts=4, min_utts=2)
    extra = rng.normal(size=(10, 4)) * 5
    X2 = np.vstack([X, extra])
    y2 = np.concatenate([y, np.arange(100, 110)])
    with_singletons = PLDA(num_em_iters=3).fit(X2, y2)
    assert_plda_close(with_singletons, kaldi_em_reference(X2, y2, 3), 1e-8, 1e-9)
    assert not np.allclose(with_singletons.psi_, PLDA(num_em_iters=3).fit(X, y).psi_)


def test_llr_is_the_ratio_of_two_gaussian_densities():
    rng = np.random.default_rng(11)
    dim = 4
    model = PLDA.from_params(rng.normal(size=dim), np.eye(dim), np.array([3.0, 1.5, 0.4, 0.0]))
    u, v = rng.normal(size=(5, dim)), rng.normal(size=(5, dim))
    for n in (1, 3):
        llr = model.log_likelihood_ratio(u, v, num_utts=n)
        psi = model.psi_
        for k in range(5):
            same = multivariate_normal(n * psi / (n * psi + 1) * u[k],
                                       np.diag(1 + psi / (n * psi + 1))).logpdf(v[k])
            diff = multivariate_normal(np.zeros(dim), np.diag(1 + psi)).logpdf(v[k])
            assert llr[k] == pytest.approx(same - diff, rel=1e-10, abs=1e-10)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), num_enroll=st.integers(1, 30),
       num_test=st.integers(1, 30), num_trials=st.integers(1, 200), dense=st.booleans())
def test_trial_scoring_equals_pairwise_llr(seed, num_enroll, num_test, num_trials, dense):
    rng = np.random.default_rng(seed)
    dim = 6
    model = PLDA.from_params(rng.normal(size=dim), rng.normal(size=(dim, dim)),
                             np.sort(rng.uniform(0, 4, size=dim))[::-1])
    Ue, Ut = rng.normal(size=(num_enroll, dim)), rng.normal(size=(num_test, dim))
    n = rng.integers(1, 6, size=num_enroll)
    ie = rng.integers(0, num_enroll, size=num_trials)
    it = rng.integers(0, num_test, size=num_trials)
    expected = model.log_likelihood_ratio(Ue[ie], Ut[it], n[ie])
    fast = model.score_pairs(Ue, Ut, ie, it, n, block_size=7,
                             dense_limit=10**9 if dense else 0)
    np.testing.assert_allclose(fast, expected, rtol=1e-10, atol=1e-10)


def test_length_normalisation_gives_the_expected_norm():
    rng = np.random.default_rng(5)
    dim = 8
    model = PLDA.from_params(rng.normal(size=dim), rng.normal(size=(dim, dim)),
                             np.linspace(3, 0.1, dim))
    X = rng.normal(size=(20, dim))
    n = rng.integers(1, 5, size=20)
    U, factors = model.transform(X, num_utts=n)
    np.testing.assert_allclose((U**2 / (model.psi_ + 1.0 / n[:, None])).sum(1), dim)
    raw, raw_factors = model.transform(X, num_utts=n, normalize_length=False)
    np.testing.assert_allclose(factors, raw_factors)
    np.testing.assert_allclose(raw * factors[:, None], U)
    simple, _ = model.transform(X, simple_length_norm=True)
    np.testing.assert_allclose(np.linalg.norm(simple, axis=1), np.sqrt(dim))


def test_scores_do_not_depend_on_transform_row_signs():
    rng = np.random.default_rng(9)
    dim = 5
    mean, transform = rng.normal(size=dim), rng.normal(size=(dim, dim))
    psi = np.linspace(2, 0.2, dim)
    flipped = transform * np.array([1, -1, -1, 1, -1])[:, None]
    a, b = PLDA.from_params(mean, transform, psi), PLDA.from_params(mean, flipped, psi)
    X = rng.normal(size=(6, dim))
    ua, _ = a.transform(X, num_utts=2)
    ub, _ = b.transform(X, num_utts=2)
    np.testing.assert_allclose(a.log_likelihood_ratio(ua[:3], ua[3:], 2),
                               b.log_likelihood_ratio(ub[:3], ub[3:], 2))


@pytest.mark.parametrize("name,n_key,options", [
    ("plda_numutts", True, {}),
    ("plda_nonumutts", False, {}),
    ("plda_numutts_simplelen", True, {"simple_length_norm": True}),
    ("plda_numutts_nolen", True, {"normalize_length": False}),
])
def test_kaldi_scores_reproduced_from_kaldi_model(golden_dir, kaldi_model, name, n_key,
                                                  options):
    ekeys, E = read_vector_table("ark:%s" % (golden_dir / "exp/enroll_final.ark"))
    tkeys, T = read_vector_table("ark:%s" % (golden_dir / "exp/test_final.ark"))
    num_utts = read_int32_table("ark:%s" % (golden_dir / "exp/enroll_num_utts.ark"))
    n = np.array([num_utts[k] for k in ekeys]) if n_key else np.ones(len(ekeys), int)
    Ue, _ = kaldi_model.transform(E, num_utts=n, **options)
    Ut, _ = kaldi_model.transform(T, **options)
    Ue, Ut = Ue.astype(np.float32), Ut.astype(np.float32)  # as ivector-plda-scoring stores them
    epos = {k: i for i, k in enumerate(ekeys)}
    tpos = {k: i for i, k in enumerate(tkeys)}
    rows = [line.split() for line in (golden_dir / "scores" / name).read_text().splitlines()]
    ie = np.array([epos[r[0]] for r in rows])
    it = np.array([tpos[r[1]] for r in rows])
    scores = kaldi_model.score_pairs(Ue, Ut, ie, it, n)
    assert ["%.7g" % np.float32(s) for s in scores] == [r[2] for r in rows]


def test_adaptation_reproduces_kaldi(golden_dir, kaldi_model):
    _, A = read_vector_table("ark:%s" % (golden_dir / "exp/adapt_final.ark"))
    base = read_plda(str(golden_dir / "exp/plda"))
    sre16 = PLDA.from_params(*base).adapt(A, 1.0, float(np.float32(0.75)),
                                          float(np.float32(0.25)))
    assert_plda_close(sre16, read_plda(str(golden_dir / "exp/plda_adapt")), 1e-9, 1e-11)
    assert "%.6g" % sre16.adapt_eigenvalues_[0] == "2.04941"
    assert "%.6g %.6g" % (np.float32(sre16.adapt_within_[0]),
                          np.float32(sre16.adapt_between_[0])) == "0.632295 0.367705"
    defaults = PLDA.from_params(*base).adapt(A, 1.0, float(np.float32(0.3)),
                                             float(np.float32(0.7)))
    assert_plda_close(defaults, read_plda(str(golden_dir / "exp/plda_adapt_defaults.txt")))


def test_smoothing_reproduces_kaldi(golden_dir):
    model = PLDA.from_params(*read_plda(str(golden_dir / "exp/plda")))
    model.smooth_within(float(np.float32(0.1)))
    assert_plda_close(model, read_plda(str(golden_dir / "exp/plda_smooth0.1.txt")))


@pytest.mark.parametrize("X,y,message", [
    (np.ones((3, 4)), [0, 0, 1], "not greater than their dimension"),
    (np.arange(12.0).reshape(6, 2), [0, 1, 2, 3, 4, 5], "No speakers with multiple"),
    (np.zeros((0, 2)), [], "No stats accumulated"),
    (np.array([[0.0, 1], [1, np.nan], [2, 2], [3, 1]]), [0, 0, 1, 1], "NaN"),
])
def test_unusable_training_data_is_an_error(X, y, message):
    with pytest.raises(ValueError, match=message):
        PLDA().fit(X, np.asarray(y))


def test_dimension_mismatch_is_an_error(kaldi_model):
    with pytest.raises(ValueError, match="dimension 3 but the PLDA model has dimension 32"):
        kaldi_model.transform(np.zeros((2, 3)))
