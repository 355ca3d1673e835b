"""Score normalisation against a plain numpy transcription of WeSpeaker's score_norm.py."""

import numpy as np
import pytest

from pauc_backend.models.score_norm import (ScoreNormalizer, blockwise_cohort_statistics,
                                            cohort_statistics, normalize_scores)


def wespeaker_mean_std(cohort_scores, top_n):
    """wespeaker/bin/score_norm.py get_mean_std after its matmul: full descending sort."""
    top = np.sort(cohort_scores, axis=1)[:, ::-1][:, :top_n]
    return np.mean(top, axis=1), np.std(top, axis=1)


def wespeaker_trial_loop(scores, e_rows, t_rows, em, es, tm, ts):
    """WeSpeaker's per-trial loop: 0.5 * ((s - mu_e)/sd_e + (s - mu_t)/sd_t)."""
    return np.array([0.5 * ((s - em[e]) / es[e] + (s - tm[t]) / ts[t])
                     for s, e, t in zip(scores, e_rows, t_rows)])


def _data(seed, n_e=7, n_t=9, n_c=23, n_trials=40):
    rng = np.random.default_rng(seed)
    Se = rng.normal(size=(n_e, n_c))
    St = rng.normal(size=(n_t, n_c))
    e_rows = rng.integers(0, n_e, n_trials)
    t_rows = rng.integers(0, n_t, n_trials)
    scores = rng.normal(size=n_trials)
    return Se, St, scores, e_rows, t_rows


@pytest.mark.parametrize("top_n", [1, 2, 5, 22, 23, 100])
def test_cohort_statistics_match_full_sort(top_n):
    Se = _data(top_n)[0]
    mean, std = cohort_statistics(Se, top_n)
    ref_mean, ref_std = wespeaker_mean_std(Se, top_n)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(std, ref_std, rtol=1e-12, atol=1e-14)


def test_none_top_n_is_whole_cohort_and_ties_are_harmless():
    S = np.array([[3.0, 1.0, 3.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_allclose(cohort_statistics(S)[0], S.mean(axis=1))
    np.testing.assert_allclose(cohort_statistics(S)[1], S.std(axis=1))
    mean, std = cohort_statistics(S, 3)
    np.testing.assert_allclose(mean, [3.0, 3.0])
    np.testing.assert_allclose(std, [0.0, np.std([2.0, 3.0, 4.0])])


@pytest.mark.parametrize("method,top_n", [("s", None), ("as", 5), ("as", 1000)])
def test_normalizer_matches_wespeaker_loop(method, top_n):
    Se, St, scores, e_rows, t_rows = _data(11)
    n = Se.shape[1] if method == "s" else top_n
    em, es = wespeaker_mean_std(Se, n)
    tm, ts = wespeaker_mean_std(St, n)
    ref = wespeaker_trial_loop(scores, e_rows, t_rows, em, es, tm, ts)
    got = ScoreNormalizer(method, top_n).fit(Se, St).transform(scores, e_rows, t_rows)
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_z_and_t_use_one_side_and_s_is_their_mean():
    Se, St, scores, e_rows, t_rows = _data(3)
    z = ScoreNormalizer("z").fit(Se, None).transform(scores, e_rows, t_rows)
    t = ScoreNormalizer("t").fit(None, St).transform(scores, e_rows, t_rows)
    s = ScoreNormalizer("s", top_n=4).fit(Se, St).transform(scores, e_rows, t_rows)
    np.testing.assert_allclose(z, (scores - Se.mean(1)[e_rows]) / Se.std(1)[e_rows])
    np.testing.assert_allclose(t, (scores - St.mean(1)[t_rows]) / St.std(1)[t_rows])
    np.testing.assert_allclose(s, 0.5 * (z + t))       # "s" ignores top_n: whole cohort
    none = ScoreNormalizer("none").fit(Se, St).transform(scores, e_rows, t_rows)
    np.testing.assert_array_equal(none, scores)


def test_invariant_to_increasing_affine_map_of_all_scores():
    Se, St, scores, e_rows, t_rows = _data(5)
    a, b = 3.7, -12.0
    base = ScoreNormalizer("as", 6).fit(Se, St).transform(scores, e_rows, t_rows)
    moved = ScoreNormalizer("as", 6).fit(a * Se + b, a * St + b).transform(
        a * scores + b, e_rows, t_rows)
    np.testing.assert_allclose(moved, base, rtol=1e-10, atol=1e-12)


def test_blockwise_statistics_equal_whole_matrix():
    S = _data(8, n_e=50)[0]
    whole = cohort_statistics(S, 4)
    parts = blockwise_cohort_statistics(lambda a, b: S[a:b], S.shape[0], 4, block=7)
    np.testing.assert_allclose(parts[0], whole[0])
    np.testing.assert_allclose(parts[1], whole[1])


def test_zero_spread_is_a_clear_error():
    Se, St, scores, e_rows, t_rows = _data(2)
    Se[3] = 0.25                                       # constant cohort row
    with pytest.raises(ValueError, match="enroll cohort statistics of row 3"):
        ScoreNormalizer("as", 5).fit(Se, St)
    with pytest.raises(ValueError, match="test cohort statistics of row 0"):
        normalize_scores([1.0], "t", test_mean=[0.0], test_std=[0.0])
    # the same row is harmless for t-norm, which does not look at the enrollment side
    ScoreNormalizer("t").fit(Se, St)


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown score normalisation"):
        normalize_scores([1.0], "q")
    with pytest.raises(ValueError, match="needs top_n"):
        ScoreNormalizer("as").fit(np.ones((1, 2)), np.ones((1, 2)))
    with pytest.raises(ValueError, match="enrollment-side"):
        normalize_scores([1.0], "s", test_mean=[0.0], test_std=[1.0])
    with pytest.raises(ValueError, match="top_n must be at least 1"):
        cohort_statistics(np.ones((2, 3)), 0)
    with pytest.raises(ValueError, match="empty"):
        cohort_statistics(np.ones((2, 0)))
