"""Kaldi-exact vector pre-processing against the golden Kaldi arks and brute-force references."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pauc_backend.kaldi_io import read_matrix, read_vector, read_vector_table
from pauc_backend.models.preprocessing import (
    apply_affine, global_mean, normalize_length, nonfinite_rows, ratio_stats, speaker_means,
    subtract_mean, vector_norms, vector_sum)


def table(golden, name):
    return read_vector_table("ark:%s" % (golden / name))


finite_f32 = st.floats(-1e4, 1e4, allow_nan=False, width=32)


def matrices(max_rows=12, max_cols=9):
    shape = st.tuples(st.integers(1, max_rows), st.integers(1, max_cols))
    return hnp.arrays(np.float32, shape, elements=finite_f32)


# -- golden: every result below is compared bit for bit with Kaldi's file ------------------------

def test_own_mean_subtraction_is_bit_identical_to_kaldi(golden):
    keys, X = table(golden, "data/train/xvector.ark")
    ref_keys, ref = table(golden, "exp/train_sub.ark")
    centred, total = subtract_mean(X)
    assert keys == ref_keys
    assert np.array_equal(centred, ref)
    assert float(np.linalg.norm(total) / len(keys)) == pytest.approx(17.9542, abs=1e-4)


def test_given_mean_subtraction_is_bit_identical_to_kaldi(golden):
    _, X = table(golden, "data/test/xvector.ark")
    _, ref = table(golden, "exp/test_sub.ark")
    mean = read_vector(str(golden / "exp/mean.vec"))
    assert np.array_equal(subtract_mean(X, mean)[0], ref)


def test_global_mean_is_bit_identical_to_kaldi_double_mean(golden):
    _, X = table(golden, "data/adapt/xvector.ark")
    ref = read_vector(str(golden / "exp/mean_bin.vec"))
    assert ref.dtype == np.float64
    assert np.array_equal(global_mean(X), ref)


def test_speaker_means_are_bit_identical_to_kaldi(golden):
    keys, X = table(golden, "data/enroll/xvector.ark")
    row = {key: i for i, key in enumerate(keys)}
    spk2utt = [line.split() for line in (golden / "data/enroll/spk2utt").read_text().splitlines()]
    means, num_utts = speaker_means(X, [[row[u] for u in fields[1:]] for fields in spk2utt])
    ref_keys, ref = table(golden, "exp/enroll_spk_xvector.ark")
    assert ref_keys == [fields[0] for fields in spk2utt]
    assert np.array_equal(means, ref)
    ref_counts = [int(line.split()[1]) for line in
                  (golden / "exp/enroll_num_utts.ark").read_text().splitlines()]
    assert num_utts.tolist() == ref_counts


@pytest.mark.parametrize("source, target", [("exp/train_sub.ark", "exp/train_lda.ark"),
                                            ("exp/test_sub.ark", "exp/test_lda.ark")])
def test_affine_transform_is_bit_identical_to_transform_vec(golden, source, target):
    _, X = table(golden, source)
    _, ref = table(golden, target)
    M = read_matrix(str(golden / "exp/transform.mat"))
    assert np.array_equal(apply_affine(M, X), ref)


@pytest.mark.parametrize("source, target", [("exp/train_lda.ark", "exp/train_lda_norm.ark"),
                                            ("exp/test_lda.ark", "exp/test_final.ark")])
def test_length_normalisation_is_bit_identical_to_kaldi(golden, source, target):
    _, X = table(golden, source)
    _, ref = table(golden, target)
    assert np.array_equal(normalize_length(X)[0], ref)


def test_unit_length_normalisation_matches_kaldi_text_ark(golden):
    keys, X = table(golden, "exp/test_lda.ark")
    unit, ratios = normalize_length(X, scaleup=False)
    text = "".join("%s  [ %s]\n" % (key, "".join("%.7g " % v for v in row))
                   for key, row in zip(keys, unit))
    assert text == (golden / "exp/test_lda_unitnorm.txt.ark").read_text()
    avg, std = ratio_stats(ratios)
    assert "%.6g %.6g" % (avg, std) == "8.57379 1.15002"  # logs/test_normalize_length_noscaleup


def test_ratio_stats_match_kaldi_log(golden):
    _, X = table(golden, "exp/test_lda.ark")
    avg, std = ratio_stats(normalize_length(X)[1])
    assert "%.6g %.6g" % (avg, std) == "1.51565 0.203297"  # logs/test_normalize_length.log


# -- brute-force references and properties -------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float32, st.tuples(st.integers(1, 40), st.integers(1, 4)),
                  elements=st.floats(-2.0 ** 100, 2.0 ** 100, width=32)))
def test_vector_sum_accumulates_rows_in_order(X):
    # Magnitudes up to 2^100 make double sums order-dependent (pairwise summation would differ).
    expected = np.zeros(X.shape[1])
    for row in X.astype(np.float64):
        expected = expected + row
    assert np.array_equal(vector_sum(X), expected)


@settings(max_examples=60, deadline=None)
@given(matrices(max_rows=5, max_cols=40))
def test_norm_is_a_sequential_float32_sum(X):
    assert vector_norms(X).shape == (X.shape[0],)
    for row, norm in zip(X, vector_norms(X)):
        total = np.float32(0)
        for value in row:
            total = np.float32(total + np.float32(value * value))
        assert norm == np.sqrt(total)


@settings(max_examples=60, deadline=None)
@given(matrices(), st.booleans())
def test_normalisation_matches_scalar_reference(X, scaleup):
    Y, ratios = normalize_length(X, scaleup=scaleup)
    assert Y.shape == X.shape and len(ratios) == X.shape[0]
    for row, out, ratio in zip(X, Y, ratios):
        norm = vector_norms(row[None])[0]
        expected_ratio = np.float32(norm / np.sqrt(X.shape[1])) if scaleup else norm
        assert ratio == expected_ratio
        if ratio == 0:
            assert np.array_equal(out, row)
        else:
            assert np.array_equal(out, row * np.float32(1.0 / float(ratio)))


def test_zero_vector_is_left_unchanged_and_normalize_false_copies():
    X = np.array([[0, 0, 0], [3, 4, 0]], dtype=np.float32)
    Y, ratios = normalize_length(X, scaleup=False)
    assert np.array_equal(Y[0], X[0]) and ratios[0] == 0
    assert np.allclose(Y[1], [0.6, 0.8, 0])
    Z, ratios = normalize_length(X, normalize=False)
    assert np.array_equal(Z, X) and ratios[1] == np.float32(5 / np.sqrt(3))


@settings(max_examples=60, deadline=None)
@given(matrices(max_rows=20), st.data())
def test_speaker_means_match_float32_loop(X, data):
    num_spk = data.draw(st.integers(1, 6))
    lists = [data.draw(st.lists(st.integers(0, X.shape[0] - 1), min_size=1, max_size=7))
             for _ in range(num_spk)]
    means, counts = speaker_means(X, lists)
    assert len(means) == len(counts) == num_spk
    for utts, mean, count in zip(lists, means, counts):
        acc = X[utts[0]].copy()
        for u in utts[1:]:
            acc = acc + X[u]
        assert np.array_equal(mean, acc * np.float32(1.0 / len(utts)))
        assert count == len(utts)


def test_speaker_without_utterances_is_an_error():
    with pytest.raises(ValueError, match="no utterances"):
        speaker_means(np.ones((2, 3), np.float32), [[0], []])


@settings(max_examples=40, deadline=None)
@given(matrices(max_rows=6, max_cols=8), st.integers(1, 5), st.data())
def test_affine_equals_linear_part_plus_offset(X, rows, data):
    M = data.draw(hnp.arrays(np.float32, (rows, X.shape[1] + 1), elements=finite_f32))
    linear = apply_affine(np.ascontiguousarray(M[:, :-1]), X)
    assert np.array_equal(apply_affine(M, X), M[:, -1] + linear)
    exact = X.astype(np.float64) @ M[:, :-1].T.astype(np.float64) + M[:, -1]
    assert np.allclose(apply_affine(M, X), exact, rtol=1e-4, atol=1e-2)


def test_transform_dimension_mismatch_names_both_sizes():
    with pytest.raises(ValueError, match=r"^Dimension mismatch: input vector has dimension 4 "
                                         r"and transform has 7 columns\.$"):
        apply_affine(np.zeros((3, 7), np.float32), np.zeros((2, 4), np.float32))


def test_subtract_mean_checks_the_mean_dimension():
    with pytest.raises(ValueError, match="Dimension mismatch"):
        subtract_mean(np.zeros((2, 4), np.float32), np.zeros(3))


def test_nonfinite_rows_finds_nan_and_inf():
    X = np.zeros((4, 2), np.float32)
    X[1, 0], X[3, 1] = np.nan, np.inf
    assert nonfinite_rows(X).tolist() == [1, 3]


def test_global_mean_of_nothing_is_an_error():
    with pytest.raises(ValueError, match="No iVectors read"):
        global_mean(np.zeros((0, 3), np.float32))


def test_blocked_sums_norms_and_centring_equal_whole_array_references():
    # Several cache-sized blocks (about 1750 rows at dim 150): results must not depend on them.
    rng = np.random.default_rng(5)
    X = (rng.normal(size=(4000, 150)) * 10.0 ** rng.integers(-8, 8, (4000, 150))).astype(
        np.float32)
    expected = np.zeros(150)
    for row in X.astype(np.float64):
        expected = expected + row * 0.25
    assert np.array_equal(vector_sum(X, 0.25), expected)
    sumsq = np.zeros(4000, np.float32)
    for column in X.T:
        sumsq = sumsq + column * column
    assert np.array_equal(vector_norms(X), np.sqrt(sumsq))
    total = vector_sum(X)
    shifted = (X.astype(np.float64) + float(np.float32(-1 / 4000)) * total).astype(np.float32)
    assert np.array_equal(subtract_mean(X)[0], shifted)
