"""models.unlabelled: the verdict on an unlabelled (adaptation) set. Real sets of another
domain (ETRI's female training speakers against a male training set, TIMIT's evaluation
vectors against its training speakers, the synthetic demo corpus's adapt/ set) are usable,
with speaker clusters; one vector of each of their speakers is usable for centring and
covariance but has no clusters; isotropic noise (at the data's scale and at unit scale),
identical vectors, vectors on a line, a rank-5 set and copies of one vector are flagged with
their cause; bad rows are left out and counted, without a numpy warning. The sphericity
statistic is checked against its null distribution (isotropic Gaussian draws)."""

import dataclasses
import warnings

import numpy as np
import pytest

from conftest import SHARED
from prerequisites import need
from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import read_token_table, read_vector_table
from pauc_backend.models import unlabelled as U

REAL = SHARED / "realdata"


def _read(folder):
    keys, X = read_vector_table("ark:%s" % (folder / "xvector.ark"))
    utt2spk = read_token_table("ark:%s" % (folder / "utt2spk"))
    return X, np.array([utt2spk[k] for k in keys])


def _pair(X, y, A, ya):
    return X, y, A, ya, U.TrainingReference.fit(X, y)


@pytest.fixture(scope="module")
def synthetic():
    c = make_speaker_corpus(seed=777, dim=80)           # make-synthetic-vectors' defaults
    return _pair(c.train.X, np.array(c.train.labels), c.adapt.X, np.array(c.adapt.labels))


@pytest.fixture(scope="module")
def etri():
    need(REAL / "etri")
    X, y = _read(REAL / "etri" / "train")
    female = np.array([s[3] == "F" for s in y])
    return _pair(X[~female], y[~female], X[female], y[female])


@pytest.fixture(scope="module")
def timit():
    need(REAL / "timit-ge2e")
    X, y = _read(REAL / "timit-ge2e" / "train")
    A, ya = _read(REAL / "timit-ge2e" / "eval")      # its vectors only, no trial is read
    return _pair(X, y, A, ya)


@pytest.fixture(params=["synthetic", "etri", "timit"])
def pair(request):
    return request.getfixturevalue(request.param)


def _one_per_speaker(ya):
    return np.array([np.flatnonzero(ya == s)[0] for s in np.unique(ya)])


def test_a_real_set_of_another_domain_is_usable_with_speaker_clusters(pair):
    _, _, A, _, reference = pair
    check = U.examine(A, reference)
    assert (check.level, check.token) == ("log", "ok"), check.cause
    assert check.centring and check.covariance and check.pseudo_speakers
    np.testing.assert_array_equal(check.rows, np.arange(A.shape[0]))
    assert check.left_out == {} and check.cause.startswith("speaker clusters found")


def test_one_vector_per_speaker_is_usable_for_centring_and_covariance_not_pseudo_speakers(
        pair):
    _, _, A, ya, reference = pair
    check = U.examine(A[_one_per_speaker(ya)], reference)
    assert (check.level, check.token) == ("log", "no_clusters"), check.cause
    assert check.centring and check.covariance and not check.pseudo_speakers
    assert "not for pseudo-speakers" in check.cause


@pytest.mark.parametrize("scale", ["data", "unit"])
def test_isotropic_noise_is_not_used(pair, scale):
    X, _, _, _, reference = pair
    rng = np.random.default_rng(3)
    if scale == "data":                 # the issue's: 20,000 vectors at the data's scale
        A = X.mean(axis=0) + np.sqrt(X.var(axis=0).mean()) * rng.standard_normal(
            (20000, X.shape[1]))
    else:
        A = rng.standard_normal((2000, X.shape[1]))
    check = U.examine(A.astype(np.float32), reference)
    assert (check.level, check.token) == ("warning", "isotropic"), check.cause
    assert not check.usable and "isotropic noise" in check.cause
    assert check.figures["sample"] == U.MAX_ROWS        # the statistics on a bounded sample


def test_identical_vectors_and_copies_of_one_vector_are_a_warning_and_not_used(synthetic):
    """No speaker structure (issue 41 item 4): one WARNING, the set is not used."""
    X, _, _, _, reference = synthetic
    for count in (200, 50):
        check = U.examine(np.repeat(X[:1], count, axis=0), reference)
        assert (check.level, check.token) == ("warning", "identical")
        assert not check.usable and check.left_out == {"repeated": count - 1}
        assert check.cause == ("its %d vectors are one vector repeated bit for bit: no "
                               "speaker structure, not used" % count)


def test_copies_appended_to_a_real_set_are_left_out_and_the_rest_is_used(synthetic):
    _, _, A, _, reference = synthetic
    B = np.vstack([A, np.repeat(A[:1], 50, axis=0)])
    check = U.examine(B, reference)
    np.testing.assert_array_equal(check.rows, np.arange(A.shape[0]))
    assert check.left_out == {"repeated": 50} and check.level == "warning"
    assert check.pseudo_speakers and check.token == "ok"
    assert check.cause.startswith("50 of its %d vectors are left out (50 repeating an earlier "
                                  "vector bit for bit); speaker clusters found" % B.shape[0])


@pytest.mark.parametrize("rank", [1, 5])
def test_a_set_of_low_rank_is_degenerate(pair, rank):
    X, _, _, _, reference = pair
    rng = np.random.default_rng(rank)
    basis = rng.standard_normal((rank, X.shape[1]))
    A = X[0] + rng.standard_normal((300, rank)) @ basis
    check = U.examine(A.astype(np.float32), reference)
    assert (check.level, check.token) == ("warning", "rank_deficient"), check.cause
    assert not check.usable and check.figures["rank"] == rank
    assert check.cause.startswith("its vectors span only %d dimension" % rank)


def test_low_rank_embeddings_are_judged_against_the_training_rank(synthetic):
    """Embeddings of rank 40 in 80 dimensions (e.g. an LDA output mapped back): training and
    unlabelled set alike; the set is not rank-deficient for that."""
    X, y, A, _, _ = synthetic
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((80, 40)))[0]
    project = (Q @ Q.T).astype(np.float32)
    reference = U.TrainingReference.fit(X @ project, y)
    assert reference.rank == 40
    check = U.examine(A @ project, reference)
    assert check.figures["rank"] == 40 and check.centring and check.covariance, check.cause


def test_bad_rows_are_left_out_and_counted_without_a_numpy_warning(synthetic):
    _, _, A, _, reference = synthetic
    B = np.vstack([A[:300], np.zeros((3, 80)), np.full((2, 80), np.nan),
                   1e30 * np.ones((4, 80)), [np.r_[np.inf, np.zeros(79)]]]).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check = U.examine(B, reference)
        assert check.left_out == {"zero": 3, "nonfinite": 3, "too_large": 4}
        np.testing.assert_array_equal(check.rows, np.arange(300))
        assert check.level == "warning" and check.centring
        assert check.cause.startswith("10 of its 310 vectors are left out (3 with NaN or Inf, "
                                      "3 all zero, 4 with an entry above ")
        for bad in (np.zeros((50, 80)), 1e30 * np.ones((50, 80)), np.full((5, 80), np.inf)):
            check = U.examine(bad.astype(np.float32), reference)
            assert (check.level, check.token) == ("error", "no_usable_rows")
            assert check.cause.endswith("no usable vector: nothing in it can be used")


def test_the_overflow_limit_is_that_of_float32_sums_of_products():
    n, dim = 100, 16
    limit = np.sqrt(np.finfo(np.float32).max / (n * dim))
    A = np.ones((n, dim), dtype=np.float64)
    A[0, 3], A[1, 5] = limit * 0.999, limit * 1.001
    masks, reported = U.screen_rows(A)
    assert reported == pytest.approx(limit)
    np.testing.assert_array_equal(np.flatnonzero(masks["too_large"]), [1])


def test_repeats_are_exact_bit_for_bit():
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64):
        A = rng.standard_normal((500, 24)).astype(dtype)
        A[100] = A[7]                                          # a copy
        A[200] = A[7]
        A[300] = A[7]
        A[300, 5] = np.nextafter(A[7, 5], np.inf)              # one bit apart: not a copy
        masks, _ = U.screen_rows(A)
        np.testing.assert_array_equal(np.flatnonzero(masks["repeated"]), [100, 200])


def test_john_statistic_of_isotropic_noise_is_standard_normal():
    """The criterion's null: John's z of isotropic Gaussian draws (seeded) has mean 0 and
    standard deviation 1 (Ledoit & Wolf 2002), and few exceed Z_999, for m below, near and
    above D."""
    for m, dim in ((50, 200), (200, 80), (1000, 16)):
        draws = np.random.default_rng([m, dim]).standard_normal((400, m, dim))
        C = draws - draws.mean(axis=1, keepdims=True)
        gram = C @ C.transpose(0, 2, 1) if m < dim else C.transpose(0, 2, 1) @ C
        values = np.zeros((400, dim))       # each draw's covariance eigenvalues, all D
        values[:, :min(m, dim)] = np.linalg.eigvalsh(gram)[:, ::-1][:, :dim] / (m - 1)
        z = np.array([U.sphericity(v, m)[0] for v in values])
        assert abs(z.mean()) < 0.2 and 0.85 < z.std() < 1.15, (m, dim, z.mean(), z.std())
        assert np.mean(z > U.Z_999) <= 0.005, (m, dim)


def test_the_sample_is_bounded_and_seeded(synthetic):
    _, _, A, _, reference = synthetic
    small = U.examine(A, reference, max_rows=300, seed=4)
    assert small.figures["sample"] == 300
    assert small.figures == U.examine(A, reference, max_rows=300, seed=4).figures


def test_the_verdict_is_frozen_and_the_dimension_checked(synthetic):
    _, _, A, _, reference = synthetic
    check = U.examine(A, reference)
    with pytest.raises(dataclasses.FrozenInstanceError):
        check.level = "ok"
    with pytest.raises(ValueError, match=r"\(n, 80\)"):
        U.examine(A[:, :40], reference)
