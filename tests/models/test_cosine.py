"""Dot-product / cosine scoring of paired vectors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pauc_backend.kaldi_io import read_vector_table
from pauc_backend.models.cosine import cosine_scores, dot_scores, indexed_dot_scores

# Kaldi's float32 norm has no rescaling: squares below ~1e-38 underflow, so stay above 1e-3.
elements = st.floats(-100, 100, width=32).filter(lambda x: x == 0 or abs(x) > 1e-3)
pairs = st.integers(1, 20).flatmap(lambda n: st.integers(1, 30).flatmap(
    lambda d: st.tuples(*[hnp.arrays(np.float32, (n, d), elements=elements)] * 2)))


@settings(max_examples=60, deadline=None)
@given(pairs)
def test_dot_scores_are_float32_dot_products_of_paired_rows(arrays):
    E, T = arrays
    scores = dot_scores(E, T)
    assert scores.dtype == np.float32 and scores.shape == (E.shape[0],)
    exact = np.sum(E.astype(np.float64) * T.astype(np.float64), axis=1)
    bound = 1e-6 * np.sum(np.abs(E.astype(np.float64) * T), axis=1) * E.shape[1]
    assert np.all(np.abs(scores - exact) <= bound + 1e-30)


@settings(max_examples=60, deadline=None)
@given(pairs, st.floats(0.01, 100))
def test_cosine_is_bounded_and_scale_invariant(arrays, scale):
    E, T = arrays
    scores = cosine_scores(E, T, normalize=True)
    assert np.all(np.abs(scores) <= 1 + 1e-5)
    scaled = cosine_scores(E * np.float32(scale), T, normalize=True)
    np.testing.assert_allclose(scaled, scores, atol=1e-5)


def test_cosine_of_a_vector_with_itself_is_one_and_zero_vector_scores_zero():
    E = np.array([[3, 4, 0], [0, 0, 0]], dtype=np.float32)
    np.testing.assert_allclose(cosine_scores(E, E, normalize=True), [1, 0], atol=1e-7)


def test_normalize_equals_kaldi_unit_length_then_dot_product(golden):
    _, X = read_vector_table("ark:%s" % (golden / "exp/test_lda.ark"))
    text = (golden / "exp/test_lda_unitnorm.txt.ark").read_text().splitlines()
    unit = np.array([line.split()[2:-1] for line in text], dtype=np.float32)
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, len(X), 500), rng.integers(0, len(X), 500)
    expected = np.sum(unit[a].astype(np.float64) * unit[b], axis=1)
    np.testing.assert_allclose(cosine_scores(X[a], X[b], normalize=True), expected, atol=3e-6)


def test_mismatched_shapes_are_an_error():
    with pytest.raises(ValueError, match="same shape"):
        dot_scores(np.zeros((2, 3)), np.zeros((2, 4)))


def test_indexed_scores_equal_scores_of_the_gathered_rows():
    rng = np.random.default_rng(1)
    E = rng.normal(size=(7, 5)).astype(np.float32)
    T = rng.normal(size=(11, 5)).astype(np.float32)
    e_rows, t_rows = rng.integers(0, 7, 1000), rng.integers(0, 11, 1000)
    expected = dot_scores(E[e_rows], T[t_rows])
    assert np.array_equal(indexed_dot_scores(E, T, e_rows, t_rows, block=64), expected)
