"""ClassStats: statistics of labelled vectors streamed block by block (issue 27, item 3).

Checked against independent references in plain numpy: a two-pass float64 computation (the
mean first, then products of the centred vectors) for the scatter matrices, whatever the order
of the rows, the size of the blocks and the offset of the data (1e6 times its spread, where the
one-pass ``sum x x^T - N m m^T`` is shown to lose most of its digits); LDA and PLDA estimated
from streamed statistics against ``fit`` on the table in memory and against the per-class E-M
reference of test_plda.py.
"""

import numpy as np
import pytest
from test_plda import assert_plda_close, kaldi_em_reference, synthetic

from pauc_backend.models.class_stats import ClassStats, NonFiniteRowError
from pauc_backend.models.lda import LDA
from pauc_backend.models.plda import PLDA


def two_pass(X, y):
    """(total, between, within) scatter of X (float64) by a plain two-pass computation."""
    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(axis=0)
    centred = X - mean
    total = centred.T @ centred
    between = np.zeros_like(total)
    within = np.zeros_like(total)
    for label in np.unique(y):
        part = X[y == label]
        offset = part.mean(axis=0) - mean
        between += len(part) * np.outer(offset, offset)
        inner = part - part.mean(axis=0)
        within += inner.T @ inner
    return total, between, within


def stream(X, y, rng, max_block=50):
    """ClassStats of the rows of X in a random order, in blocks of random sizes."""
    order = rng.permutation(len(X))
    stats = ClassStats()
    at = 0
    while at < len(X):
        size = int(rng.integers(1, max_block + 1))
        stats.add(X[order[at:at + size]], y[order[at:at + size]])
        at += size
    return stats


def relative_error(got, ref):
    return np.abs(got - ref).max() / np.abs(ref).max()


def labelled(rng, num_speakers=30, dim=5, offset=0.0, max_utts=12):
    X, y = synthetic(rng, num_speakers, dim, max_utts=max_utts, min_utts=2)
    return X + offset, y


@pytest.mark.parametrize("offset", [0.0, 1e3, 1e6])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_streamed_scatter_equals_the_two_pass_reference_in_any_order_and_blocks(seed, offset):
    rng = np.random.default_rng(seed)
    X, y = labelled(rng, offset=offset)
    stats = stream(X, y, rng)
    total, between, within = two_pass(X, y)
    assert stats.count_ == len(X)
    np.testing.assert_array_equal(stats.counts(), np.bincount(y))
    assert relative_error(stats.mean(), X.mean(axis=0)) < 1e-14
    # The data's spread is O(1): a relative error of 1e-16 * offset^2 is what a one-pass
    # formula would leave; the shifted accumulation stays at the two-pass reference's own
    # rounding (which grows as offset * 1e-16 through x - mean).
    for got, ref in ((stats.total_scatter(), total), (stats.between_scatter(), between),
                     (stats.within_scatter(), within)):
        assert relative_error(got, ref) < 1e-12 * max(1.0, offset / 1e3)
    means = np.array([X[y == c].mean(axis=0) for c in np.unique(y)])
    assert relative_error(stats.class_means(), means) < 1e-15 * max(1.0, offset)


def test_the_one_pass_formula_that_the_reference_point_avoids_does_lose_precision():
    """Why the statistics are kept about a reference point: with an offset of 1e6 the plain
    one-pass ``sum x x^T - N m m^T`` has almost no correct digit left."""
    rng = np.random.default_rng(5)
    X, y = labelled(rng, offset=1e6)
    total, _, _ = two_pass(X, y)
    naive = X.T @ X - len(X) * np.outer(X.mean(axis=0), X.mean(axis=0))
    assert relative_error(naive, total) > 1e-4
    assert relative_error(stream(X, y, rng).total_scatter(), total) < 1e-9


def test_merge_of_parts_with_other_references_equals_one_pass_over_all():
    rng = np.random.default_rng(7)
    X, y = labelled(rng, offset=50.0)
    half = len(X) // 2
    a = ClassStats().add(X[:half], y[:half])
    b = ClassStats().add(X[half:] + 0.0, y[half:])
    assert not np.allclose(a.reference_, b.reference_)
    merged = ClassStats().merge(a).merge(b)
    whole = ClassStats().add(X, y)
    for name in ("total_scatter", "between_scatter", "within_scatter", "mean"):
        assert relative_error(getattr(merged, name)(), getattr(whole, name)()) < 1e-12, name
    np.testing.assert_array_equal(merged.counts(), whole.counts())
    # merging does not change its argument
    np.testing.assert_array_equal(b.counts(), ClassStats().add(X[half:], y[half:]).counts())


def test_a_block_with_nan_is_refused_whole_and_named():
    rng = np.random.default_rng(8)
    X, y = labelled(rng)
    stats = ClassStats().add(X[:20], y[:20])
    before = (stats.count_, stats.scatter_.copy(), stats.class_sums_.copy())
    bad = X[20:40].copy()
    bad[13, 2] = np.inf
    with pytest.raises(NonFiniteRowError) as err:
        stats.add(bad, y[20:40])
    assert err.value.row == 13
    assert stats.count_ == before[0]
    np.testing.assert_array_equal(stats.scatter_, before[1])
    np.testing.assert_array_equal(stats.class_sums_, before[2])
    first = X[:10].copy()
    first[4, 0] = np.nan  # in the first block (the one that sets the reference point)
    with pytest.raises(NonFiniteRowError) as err:
        ClassStats().add(first, y[:10])
    assert err.value.row == 4


def test_labels_never_seen_take_no_part():
    rng = np.random.default_rng(9)
    X, y = labelled(rng, num_speakers=10)
    sparse = ClassStats().add(X, 3 * y + 2)  # labels 2, 5, 8, ...: most classes empty
    dense = ClassStats().add(X, y)
    assert sparse.num_classes == dense.num_classes == 10
    for name in ("between_scatter", "within_scatter", "class_means"):
        np.testing.assert_allclose(getattr(sparse, name)(), getattr(dense, name)(),
                                   rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("seed", [0, 1])
def test_lda_from_streamed_stats_equals_lda_fit_on_the_table(seed):
    rng = np.random.default_rng(seed)
    X, y = labelled(rng, num_speakers=40, dim=8, offset=5.0)
    X = X.astype(np.float32)
    ref = LDA(dim=4).fit(X, y)
    got = LDA(dim=4).fit_stats(stream(X, y, rng))
    assert (got.num_speakers_, got.num_utts_) == (ref.num_speakers_, ref.num_utts_)
    np.testing.assert_array_equal(got.mean_, ref.mean_)
    # fit centres in float (Kaldi); the streamed statistics are centred in double: equal to
    # the float rounding of the centred vectors
    signs = np.sign(np.sum(got.components_ * ref.components_, axis=1))[:, None]
    scale = np.abs(ref.components_).max(axis=1, keepdims=True)
    assert (np.abs(got.components_ * signs - ref.components_) / scale).max() < 1e-5
    np.testing.assert_allclose(got.eigenvalues_, ref.eigenvalues_, rtol=1e-5, atol=1e-9)
    # with fit's own centring (two passes), the same numbers as fit
    centred = ClassStats()
    order = rng.permutation(len(X))
    for at in range(0, len(X), 17):
        rows = order[at:at + 17]
        centred.add(X[rows] - ref.mean_, y[rows])
    again = LDA(dim=4).fit_stats(centred, centre=ref.mean_)
    signs = np.sign(np.sum(again.components_ * ref.components_, axis=1))[:, None]
    assert (np.abs(again.components_ * signs - ref.components_) / scale).max() < 1e-9


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_plda_from_streamed_stats_equals_plda_fit_and_the_em_reference(seed):
    rng = np.random.default_rng(seed)
    X, y = synthetic(rng, 30, 4, max_utts=6)
    X = X + 100.0
    model = PLDA(num_em_iters=4).fit_stats(stream(X, y, rng, max_block=7))
    fitted = PLDA(num_em_iters=4).fit(X, y)
    assert_plda_close(model, (fitted.mean_, fitted.transform_, fitted.psi_),
                      transform_rtol=1e-10, atol=1e-10)
    assert_plda_close(model, kaldi_em_reference(X, y, 4), transform_rtol=1e-8, atol=1e-9)
    assert (model.num_classes_, model.num_examples_) == (30, len(X))


def test_estimators_refuse_empty_statistics():
    with pytest.raises(ValueError, match="Did not read any utterances"):
        LDA(dim=2).fit_stats(ClassStats())
    with pytest.raises(ValueError, match="No stats accumulated"):
        PLDA().fit_stats(ClassStats())
