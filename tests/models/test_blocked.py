"""Block-wise statistics over a float32 table held once (models.blocked, issue 17 item 2).

The training tools no longer copy the table (X[rows], float64 upcasts, centred copies): they
gather and upcast bounded blocks. Checked here against independent brute-force references:

* per-class sums (``ClassStats``, about a reference point): equal to a plain sequential loop in
  float64 within 1e-14;
* scatter matrices (``ClassStats`` in blocks of float32 rows centred as LDA.fit centres them):
  equal to one float64 product over the whole table within 1e-12 relative (only the order in
  which BLAS adds block products differs: ~1e-16 observed);
* LDA, PLDA and pAUCMetric with ``rows`` (a selection/reordering, no copy) equal the same fit
  on the copy X[rows]: bit for bit where the arithmetic is the same (LDA, pAUCMetric with a
  fixed scale), and within 1e-12 where the auto scale's sum of squares is now summed by blocks;
* PLDA on float32 data in many small blocks against the per-class E-M reference of
  test_plda.py on float64 data within the tolerances used there (1e-8 on the transform).
"""

import numpy as np
import pytest
from test_plda import assert_plda_close, kaldi_em_reference, synthetic

from pauc_backend.models import blocked, lda as lda_module
from pauc_backend.models.class_stats import ClassStats
from pauc_backend.models.lda import LDA
from pauc_backend.models.metric_learning import PaucMetric, TripletMetric
from pauc_backend.models.plda import PLDA


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few rows (so every table here spans many blocks); restored afterwards."""
    monkeypatch.setattr(blocked, "BLOCK_BYTES", 8 * 8 * 7)  # 64 rows minimum, see block_rows
    monkeypatch.setattr(lda_module, "_CHUNK_ROWS", 37)


def table(seed, num_speakers=40, dim=6, max_utts=9):
    rng = np.random.default_rng(seed)
    X, y = synthetic(rng, num_speakers, dim, max_utts=max_utts, min_utts=2)
    return X.astype(np.float32), y, rng


def test_class_sums_equal_a_sequential_loop(small_blocks):
    X, y, rng = table(1, num_speakers=60, dim=5)
    rows = rng.permutation(len(X))[: len(X) - 7]  # a reordered selection
    labels = y[rows]
    stats = ClassStats().add_table(X, labels, rows)
    expected = np.zeros((labels.max() + 1, X.shape[1]))
    for row, label in zip(rows, labels):
        expected[label] += X[row].astype(np.float64)
    counts = np.bincount(labels, minlength=labels.max() + 1)
    np.testing.assert_array_equal(stats.counts(), counts[counts > 0])
    np.testing.assert_allclose(stats.class_means(), (expected / counts[:, None])[counts > 0],
                               rtol=1e-14, atol=1e-14)


def test_centred_scatter_equals_one_float64_product(small_blocks):
    X, y, rng = table(2, num_speakers=80)
    rows = rng.permutation(len(X))
    got = ClassStats().add_table(X, y[rows], rows).total_scatter()
    ref = X[rows].astype(np.float64)
    ref -= ref.mean(axis=0)
    np.testing.assert_allclose(got, ref.T @ ref, rtol=1e-12, atol=1e-12 * np.abs(got).max())


def test_first_nonfinite_finds_the_first_bad_row_of_the_selection(small_blocks):
    X, _, _ = table(3, num_speakers=50)
    X[[30, 150]] = np.nan
    rows = np.arange(len(X))[::-1]
    assert blocked.first_nonfinite(X) == 30
    assert blocked.first_nonfinite(X, rows) == len(X) - 1 - 150
    assert blocked.first_nonfinite(X[:20]) is None


def test_lda_scatter_in_blocks_equals_the_whole_table_product(small_blocks):
    X, y, _ = table(4, num_speakers=50, dim=7)
    mean = X.astype(np.float64).mean(axis=0).astype(np.float32)
    stats = ClassStats().add_table(X, y, centre=mean)  # LDA.fit's statistics
    centred = (X - mean).astype(np.float64)
    centred -= centred.mean(axis=0)  # about the mean of the (float) centred vectors
    ref_tot = centred.T @ centred
    means = np.array([centred[y == s].sum(axis=0) for s in range(y.max() + 1)])
    ref_btw = (means / np.bincount(y)[:, None]).T @ means
    tot, btw = stats.total_scatter(), stats.between_scatter()
    np.testing.assert_allclose(tot, ref_tot, rtol=1e-12, atol=1e-12 * np.abs(ref_tot).max())
    np.testing.assert_allclose(btw, ref_btw, rtol=1e-12, atol=1e-12 * np.abs(ref_btw).max())


def test_lda_with_rows_is_bit_identical_to_the_copy(small_blocks):
    X, y, rng = table(5, num_speakers=60, dim=8)
    rows = rng.permutation(len(X))[:-5]
    a = LDA(dim=4).fit(X, y[rows], rows=rows)
    b = LDA(dim=4).fit(X[rows], y[rows])
    np.testing.assert_array_equal(a.affine_matrix_, b.affine_matrix_)
    np.testing.assert_array_equal(a.mean_, b.mean_)


def test_plda_float32_blocks_match_the_per_class_reference(small_blocks):
    X, y, rng = table(6, num_speakers=70, dim=5)
    rows = rng.permutation(len(X))
    model = PLDA(num_em_iters=3).fit(X, y[rows], rows=rows)
    ref = kaldi_em_reference(X[rows].astype(np.float64), y[rows], 3)
    assert_plda_close(model, ref, transform_rtol=1e-8, atol=1e-9)
    # and the float64 copy the old code made gives the same model to rounding
    old = PLDA(num_em_iters=3).fit(X[rows].astype(np.float64), y[rows])
    assert_plda_close(model, (old.mean_, old.transform_, old.psi_), transform_rtol=1e-10,
                      atol=1e-12)


@pytest.mark.parametrize("cls", [PaucMetric, TripletMetric])
def test_metric_with_rows_and_float32_matches_the_float64_copy(cls, small_blocks):
    X, y, rng = table(7, num_speakers=40, dim=6)
    rows = rng.permutation(len(X))[:-3]
    params = dict(batch_size=12, num_iters=15, random_state=3)
    # fixed scale: every batch is float64(x) * sqrt(scale) either way, so bit-identical
    a = cls(scale=0.5, **params).fit(X, y[rows], rows=rows)
    b = cls(scale=0.5, **params).fit(X[rows].astype(np.float64), y[rows])
    np.testing.assert_array_equal(a.metric_, b.metric_)
    # auto scale: the sum of squares is summed by blocks, equal to ~1e-16 relative
    a = cls(**params).fit(X, y[rows], rows=rows)
    b = cls(**params).fit(X[rows].astype(np.float64), y[rows])
    assert abs(a.scale_ / b.scale_ - 1) < 1e-13
    np.testing.assert_allclose(a.metric_, b.metric_, rtol=1e-10,
                               atol=1e-12 * np.abs(b.metric_).max())


def test_metric_validation_split_with_rows(small_blocks):
    X, y, rng = table(8, num_speakers=40, dim=5)
    rows = rng.permutation(len(X))
    params = dict(batch_size=10, num_iters=12, eval_every=3, random_state=1, scale=1.0,
                  validation_fraction=0.25)
    a = PaucMetric(**params).fit(X, y[rows], rows=rows)
    b = PaucMetric(**params).fit(X[rows].astype(np.float64), y[rows])
    np.testing.assert_array_equal(a.metric_, b.metric_)
    assert a.best_iteration_ == b.best_iteration_
