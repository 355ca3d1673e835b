"""Bounded held-out trials (models.crossfit, max_trials): below the cap the full list, above
it every target kept, non-targets sampled in per-speaker quotas (checked against the brute-
force enumeration of all pairs), and the stated standard error checked by simulation."""

import numpy as np
import pytest
from scipy import stats

from pauc_backend import metrics
from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.crossfit import HeldOutTrials


def corpus_labels(seed=0, num_speakers=40, low=3, high=15):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(low, high + 1, size=num_speakers)
    y = np.repeat(np.array(["s%03d" % i for i in range(num_speakers)]), sizes)
    return y[rng.permutation(y.size)]          # speakers interleaved, as in a real table


def pairs_of(t):
    """Trials as (row, row, is_target) with rows of the training matrix."""
    e = np.array([s[0] for s in t.enroll_sets])[t.enroll_index]
    return e, t.test_rows[t.test_index], t.is_target


@pytest.mark.parametrize("enroll_utts", [0, 2])
def test_below_the_cap_the_trials_are_the_full_list(enroll_utts):
    y = corpus_labels()
    rows = np.flatnonzero(np.isin(y, np.unique(y)[:12]))
    full = HeldOutTrials(y, rows, enroll_utts, random_state=4)
    capped = HeldOutTrials(y, rows, enroll_utts, random_state=4,
                           max_trials=full.is_target.size)
    assert not capped.sampled
    for name in ("enroll_index", "test_index", "is_target", "test_rows"):
        np.testing.assert_array_equal(getattr(capped, name), getattr(full, name))


def test_sampled_pairs_keep_every_target_and_each_speakers_share():
    y = corpus_labels(seed=1, num_speakers=60)
    rows = np.arange(y.size)
    n = rows.size
    budget = 20000
    assert n * (n - 1) // 2 > 4 * budget
    t = HeldOutTrials(y, rows, 0, random_state=7, max_trials=budget)
    assert t.sampled and t.is_target.size <= budget
    a, b, tar = pairs_of(t)
    assert np.all(t.enroll_index < t.test_index)                    # unordered, no self pair
    a, b = np.minimum(a, b), np.maximum(a, b)
    key = a * n + b
    assert np.unique(key).size == key.size                          # no duplicate trial
    np.testing.assert_array_equal(tar, y[a] == y[b])
    # Brute force: every target pair of the full list is there.
    ia, ib = np.triu_indices(n, k=1)
    full_tar = ia[y[ia] == y[ib]] * n + ib[y[ia] == y[ib]]
    assert set(full_tar.tolist()) == set(key[tar].tolist())
    # drawn with replacement: duplicates (dropped) cost ~ budget / (2 * all pairs) of it
    assert t.is_target.size > (1 - budget / (n * (n - 1) / 2.0)) * budget
    # Each speaker's share of the non-target trials, against its share of all of them.
    spk, count = np.unique(y, return_counts=True)
    expected = count * (n - count) / (count * (n - count)).sum()    # = share of pairs
    na, nb = y[a[~tar]], y[b[~tar]]
    got = np.array([np.count_nonzero((na == s) | (nb == s)) for s in spk]) / (2.0 * na.size)
    se = np.sqrt(expected / (2.0 * na.size))
    assert np.all(np.abs(got - expected) < 5 * se + 1e-3)


def test_sampled_enrollment_trials_and_groups():
    y = corpus_labels(seed=2, num_speakers=50, low=6, high=14)
    rows = np.arange(y.size)
    groups = np.arange(y.size) // 2                                  # pairs of stretches
    t = HeldOutTrials(y, rows, 3, random_state=1, max_trials=3000)
    assert t.sampled and t.is_target.size <= 3000
    labels_e = t.enroll_labels[t.enroll_index]
    labels_t = y[t.test_rows[t.test_index]]
    np.testing.assert_array_equal(t.is_target, labels_e == labels_t)
    # every (model, own test vector) target is kept
    own = sum(int(np.count_nonzero(y[t.test_rows] == s)) for s in t.enroll_labels)
    assert t.num_target == own
    key = t.enroll_index * t.test_rows.size + t.test_index
    assert np.unique(key).size == key.size
    # each model keeps its share: its non-target trials ~ its non-target partners
    spk_t = y[t.test_rows]
    partners = np.array([np.count_nonzero(spk_t != s) for s in t.enroll_labels], float)
    got = np.bincount(t.enroll_index[~t.is_target], minlength=len(t.enroll_sets))
    want = partners / partners.sum() * np.count_nonzero(~t.is_target)
    assert np.all(np.abs(got - want) <= 1 + 0.01 * want)
    g = HeldOutTrials(y, rows, 0, groups=groups, random_state=1, max_trials=5000)
    a, b, _ = pairs_of(g)
    assert g.sampled and not np.any(groups[a] == groups[b])


def test_stated_standard_error_of_the_sampled_pauc():
    """pAUC over [0, beta] from fixed targets and n_n fresh non-targets (the band is the top
    floor(beta n_n) of them) has variance (Var_band[TPR] + (TPR(beta) - pAUC)^2 (1 - beta))
    / (beta n_n), the formula stated in models.crossfit; checked against 400 draws, at a
    low and a high pAUC."""
    rng = np.random.default_rng(11)
    beta, n_non, reps = 0.01, 20000, 400
    for mu in (2.5, 4.0):
        tar = np.sort(rng.normal(mu, 1.0, size=3000))
        y = stats.norm.isf((np.arange(200000) + 0.5) / 200000 * beta)   # the band, by quantile
        tpr = 1.0 - np.searchsorted(tar, y) / tar.size
        p_true = tpr.mean()
        edge = 1.0 - np.searchsorted(tar, stats.norm.isf(beta)) / tar.size
        se_formula = np.sqrt((tpr.var() + (edge - p_true) ** 2 * (1 - beta)) / (beta * n_non))
        draws = np.array([metrics.pauc(tar, rng.normal(size=n_non), 0.0, beta)
                          for _ in range(reps)])
        assert abs(draws.mean() - p_true) < 4 * se_formula / np.sqrt(reps) + 0.002
        assert 0.85 < draws.std(ddof=1) / se_formula < 1.15, (mu, draws.std(), se_formula)


def test_auto_backend_with_sampled_trials_logs_and_fits():
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=30, num_adapt_speakers=2,
                            num_eval_speakers=6, train_utts_range=(6, 12))
    X, y = np.asarray(c.train.X, np.float32), np.asarray(c.train.labels)
    lines = []
    model = AutoBackend(lda_dims=(8,), num_folds=3, candidates=("plda", "cosine"),
                        max_trials=1000, log=lines.append).fit(X, y)
    assert any("sampled" in line for line in lines)
    assert sum(t.size for t in model.heldout_labels_) <= 3 * 1000
