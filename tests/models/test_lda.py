"""LDA against Kaldi's ivector-compute-lda output (up to row sign) and its defining properties."""

import re

import numpy as np
import pytest

from pauc_backend.kaldi_io import read_matrix, read_vector_table
from pauc_backend.models.lda import LDA


def kaldi_training_set(golden):
    """train_sub in ivector-compute-lda's order (utterance keys sorted, as its std::map)."""
    keys, X = read_vector_table("ark:%s" % (golden / "exp/train_sub.ark"))
    utt2spk = dict(line.split() for line in
                   (golden / "data/train/utt2spk").read_text().splitlines())
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return X[order], np.array([utt2spk[keys[i]] for i in order])


def align_row_signs(A, ref):
    return A * np.sign(np.sum(A * ref, axis=1))[:, None]


def logged_eigenvalues(golden, name):
    text = (golden / "logs" / name).read_text()
    return np.array(re.search(r"are:  \[ ([^\]]*)\]", text).group(1).split(), dtype=float)


@pytest.mark.parametrize("factor, matrix, log", [
    (0.0, "exp/transform.mat", "ivector_compute_lda.log"),
    (0.1, "exp/transform_tcf0.1.txt.mat", "ivector_compute_lda_tcf0.1.log")])
def test_lda_matches_kaldi_up_to_row_sign(golden, factor, matrix, log):
    X, y = kaldi_training_set(golden)
    lda = LDA(dim=32, total_covariance_factor=factor).fit(X, y)
    ref = read_matrix(str(golden / matrix)).astype(np.float64)
    ours = lda.affine_matrix_
    assert ours.dtype == np.float32 and ours.shape == ref.shape == (32, 65)
    aligned = align_row_signs(ours.astype(np.float64), ref)
    np.testing.assert_allclose(aligned[:, :-1], ref[:, :-1], rtol=1e-5, atol=0)
    # The offset column -A m is ~1e-8 (m is the float32 rounding residue of the centred data).
    np.testing.assert_allclose(aligned[:, -1], ref[:, -1], rtol=1e-5, atol=1e-12)
    ref_values = logged_eigenvalues(golden, log)
    np.testing.assert_allclose(lda.eigenvalues_, ref_values, rtol=1e-5)
    assert "%.6g" % np.linalg.norm(lda.mean_) == "3.44355e-07"
    assert (lda.num_speakers_, lda.num_utts_) == (300, 2338)


def make_speakers(rng, num_spk=40, per_spk=6, dim=8):
    centres = rng.normal(size=(num_spk, dim)) * np.linspace(3, 0.5, dim)
    y = np.repeat(np.arange(num_spk), per_spk)
    X = centres[y] + rng.normal(size=(y.size, dim)) @ rng.normal(size=(dim, dim))
    return (X + 5).astype(np.float32), y


def test_projection_whitens_within_class_and_diagonalises_between_class():
    X, y = make_speakers(np.random.default_rng(1))
    lda = LDA(dim=5).fit(X, y)
    assert lda.fit(X, y) is lda
    Z = (X.astype(np.float64) - lda.mean_) @ lda.components_.T
    means = np.array([Z[y == s].mean(axis=0) for s in np.unique(y)])
    within = sum((Z[y == s] - m).T @ (Z[y == s] - m) for s, m in zip(np.unique(y), means))
    np.testing.assert_allclose(within / len(y), np.eye(5), atol=1e-6)
    counts = np.bincount(y)
    between = (means * counts[:, None]).T @ means / len(y)
    np.testing.assert_allclose(between, np.diag(lda.eigenvalues_[:5]), atol=1e-6)
    assert np.all(np.diff(lda.eigenvalues_) <= 0)


def test_total_covariance_factor_one_whitens_total_covariance():
    X, y = make_speakers(np.random.default_rng(2))
    lda = LDA(dim=8, total_covariance_factor=1.0).fit(X, y)
    Z = (X.astype(np.float64) - lda.mean_) @ lda.components_.T
    np.testing.assert_allclose(Z.T @ Z / len(y), np.eye(8), atol=1e-6)


def test_transform_applies_the_affine_matrix_and_centres():
    X, y = make_speakers(np.random.default_rng(3))
    lda = LDA(dim=4).fit(X, y)
    Z = lda.transform(X)
    assert Z.dtype == np.float32 and Z.shape == (len(y), 4)
    np.testing.assert_allclose(Z.mean(axis=0), 0, atol=1e-4)
    expected = (X.astype(np.float64) - lda.mean_) @ lda.components_.T
    np.testing.assert_allclose(Z, expected, atol=1e-4)


def test_label_values_and_order_do_not_change_the_projection():
    X, y = make_speakers(np.random.default_rng(4))
    ref = LDA(dim=3).fit(X, y)
    names = np.array(["spk%03d" % (97 * s % 40) for s in y])
    other = LDA(dim=3).fit(X, names)
    np.testing.assert_allclose(align_row_signs(other.components_, ref.components_),
                               ref.components_, rtol=1e-9, atol=1e-12)


def test_singular_covariance_eigenvalues_are_floored():
    X, y = make_speakers(np.random.default_rng(5), dim=6)
    X = np.hstack([X, X[:, :1]])  # a duplicated column: the covariance is singular
    lda = LDA(dim=3).fit(X, y)
    assert lda.num_floored_ >= 1
    assert np.all(np.isfinite(lda.affine_matrix_))


def test_fewer_utterances_than_dimensions_is_an_error():
    X, y = make_speakers(np.random.default_rng(6), num_spk=3, per_spk=2, dim=8)
    with pytest.raises(ValueError, match="Too little data for iVector dimension"):
        LDA(dim=2).fit(X, y)


def test_one_utterance_per_speaker_is_an_error():
    X, y = make_speakers(np.random.default_rng(7), num_spk=20, per_spk=1, dim=4)
    with pytest.raises(ValueError, match="within-class covariance is zero"):
        LDA(dim=2).fit(X, y)


def test_nan_in_input_is_an_error():
    X, y = make_speakers(np.random.default_rng(8))
    X[7, 2] = np.nan
    with pytest.raises(ValueError, match="row 7 of X contains NaN"):
        LDA(dim=2).fit(X, y)


@pytest.mark.parametrize("bad", [(9000, -np.inf), (3, np.nan), (12000, np.inf)])
def test_the_first_bad_row_of_a_selection_is_named(monkeypatch, bad):
    """With rows (a selection, in its order) the mean's pass finds a NaN or infinity (the
    first in selection order, whichever chunk it is in) and names its row of X; two bad rows
    in different chunks: the earlier of the selection."""
    from pauc_backend.models import lda as lda_module
    monkeypatch.setattr(lda_module, "_CHUNK_ROWS", 64)
    rng = np.random.default_rng(14)
    X, y = make_speakers(rng, num_spk=300, per_spk=50, dim=6)
    rows = rng.permutation(len(y))
    row, value = bad
    X[row, 4] = value
    X[rows[-1], 0] = np.nan               # a later one of the selection
    with pytest.raises(ValueError, match="row %d of X contains NaN" % row):
        LDA(dim=2).fit(X, y[rows], rows=rows)


@pytest.mark.parametrize("dim", [0, 9])
def test_output_dimension_must_fit_the_input(dim):
    X, y = make_speakers(np.random.default_rng(9))
    with pytest.raises(ValueError, match="--dim=%d must be in 1..8" % dim):
        LDA(dim=dim).fit(X, y)


@pytest.mark.parametrize("seed, factor", [(10, 0.0), (11, 0.1), (12, 1.0)])
def test_every_dimension_from_one_decomposition_equals_its_own_fit(seed, factor):
    """LDA.fit_dims (the automatic back-end's screen of LDA dimensions, issue 35) gives, for
    each dimension, the same bits as a fit at that dimension alone: ComputeLdaTransform's
    statistics and eigendecompositions do not depend on the output dimension."""
    rng = np.random.default_rng(seed)
    X, y = make_speakers(rng, num_spk=60, per_spk=5, dim=24)
    rows = np.sort(rng.choice(len(y), 250, replace=False))[::-1]     # a selection, reordered
    dims = [1, 3, 8, 23, 24]
    fitted = LDA.fit_dims(X, y[rows], dims, rows=rows, total_covariance_factor=factor)
    assert sorted(fitted) == dims
    for dim in dims:
        alone = LDA(dim=dim, total_covariance_factor=factor).fit(X, y[rows], rows=rows)
        got = fitted[dim]
        assert got.dim == dim and got.affine_matrix_.shape == (dim, 25)
        for name in ("affine_matrix_", "components_", "eigenvalues_", "mean_"):
            assert np.array_equal(getattr(got, name), getattr(alone, name)), (dim, name)
        assert (got.num_floored_, got.floor_, got.num_speakers_, got.num_utts_) == \
            (alone.num_floored_, alone.floor_, alone.num_speakers_, alone.num_utts_)


def test_every_dimension_from_one_decomposition_checks_like_a_fit():
    X, y = make_speakers(np.random.default_rng(13))
    with pytest.raises(ValueError, match="--dim=9 must be in 1..8"):
        LDA.fit_dims(X, y, [2, 9])
    X[3, 1] = np.inf
    with pytest.raises(ValueError, match="row 3 of X contains NaN"):
        LDA.fit_dims(X, y, [2])
