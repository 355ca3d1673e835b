"""AutoBackend's held-out figures and choice against references computed here with plain numpy.

Nothing below comes from the code under test except what is being checked (``cv_results_``,
``chosen_``) and the folds it dealt (``fold_of_vector_``). For a fold k the candidate is
trained on the vectors with ``fold_of_vector_`` not in {k, -1} and scores every pair of the
vectors of fold k (enroll_utts=0, below max_trials). The references:

* scores: raw cosine needs no training (unit-length raw vectors, dot product); cosine without
  LDA needs only the training mean of the other folds (centred, unit length, dot product);
* pAUC[alpha, beta]: the paper's eq. 5 by brute force (every target against the band of the
  k_alpha+1..k_beta highest non-targets, ties 1/2, band edges in exact rationals);
* EER: Kaldi's ComputeEer (ivector/compute-eer.cc) transcribed loop for loop, in float32;
* minDCF: sid/compute_min_dcf.py's ComputeErrorRates/ComputeMinDcf with numpy cumulative sums;
* the paired one-standard-error comparison: per-fold differences, std(ddof=1)/sqrt(K).

Two synthetic corpora have a best system by construction, and the same three candidates
(raw cosine, cosine, PLDA, no LDA) must find it under both selection rules:

* "gain": each speaker is a direction (all in one orthant), each vector that direction times
  a random gain in [1, 20] plus small noise. Raw cosine ignores the gain; centring mixes the
  gain into the direction, and a PLDA's one shared within-speaker covariance cannot model a
  gain along each speaker's own direction. Raw cosine is best.
* "nuisance": Gaussian speakers plus, in every vector, a component along one fixed direction
  with standard deviation 30 (60 times a speaker's own spread): it swamps both cosines, which
  cannot remove it; the PLDA's within-speaker covariance learns it and discounts it. PLDA is
  best; a numpy oracle that projects the direction out shows the speaker information is there.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.auto import AutoBackend

ALPHA, BETA = 0.0, 0.01


# ------------------------------------------------------------------------------ references
def brute_pauc(tar, non, alpha=ALPHA, beta=BETA):
    """Eq. 5: mean over targets and the band's non-targets of [t > s] + 1/2 [t = s]."""
    k = non.size
    k_alpha = math.ceil(k * Fraction(str(alpha)))
    k_beta = math.floor(k * Fraction(str(beta)))
    band = np.sort(non)[::-1][k_alpha:k_beta]
    assert band.size > 0
    t = tar[:, None]
    return float(np.mean((t > band[None, :]) + 0.5 * (t == band[None, :])))


def kaldi_eer(tar, non):
    """ComputeEer of Kaldi's compute-eer.cc, on float32 scores as it reads them."""
    tar = np.sort(np.asarray(tar, dtype=np.float32))
    non = np.sort(np.asarray(non, dtype=np.float32))
    position = 0
    while position + 1 < tar.size:
        n = int(non.size * position * 1.0 / tar.size)
        other = max(non.size - 1 - n, 0)
        if non[other] < tar[position]:
            break
        position += 1
    return float(np.float32(position * 1.0 / tar.size))


def compute_min_dcf(scores, is_target, p_target=0.01):
    """compute_min_dcf.py: stable ascending sort, cumulative miss/false-alarm rates, the least
    c_miss * FNR * p + c_fa * FPR * (1 - p) over the positions, normalised."""
    labels = is_target[np.argsort(scores, kind="stable")].astype(np.float64)
    fnr = np.cumsum(labels) / labels.sum()
    fpr = 1 - np.cumsum(1 - labels) / (labels.size - labels.sum())
    cost = fnr * p_target + fpr * (1 - p_target)
    return float(cost.min() / min(p_target, 1 - p_target))


def unit(Z):
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def fold_scores(candidate, X, fold, k):
    """(scores, pair indices) of every pair of fold k's vectors, the system trained on the
    vectors of the other folds."""
    held = np.flatnonzero(fold == k)
    train = np.flatnonzero((fold != k) & (fold != -1))
    Xd = np.asarray(X, dtype=np.float64)
    if candidate == "cosine_raw":
        U = unit(Xd[held])
    elif candidate == "cosine":
        U = unit(Xd[held] - Xd[train].mean(axis=0))
    else:
        raise ValueError(candidate)
    a, b = np.triu_indices(held.size, k=1)
    return np.einsum("ij,ij->i", U[a], U[b]), held[a], held[b]


def reference_folds(candidate, X, y, fold, num_folds):
    """Per-fold (pauc, eer, min_dcf) of a candidate, from scratch."""
    out = []
    for k in range(num_folds):
        scores, a, b = fold_scores(candidate, X, fold, k)
        is_target = y[a] == y[b]
        tar, non = scores[is_target], scores[~is_target]
        out.append({"pauc": brute_pauc(tar, non), "eer": kaldi_eer(tar, non),
                    "min_dcf": compute_min_dcf(scores, is_target)})
    return out


def paired(a, b):
    """Mean and standard error over folds of a - b (per-fold figures)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size))


def full_rows(model):
    """The rows rated on every fold (a candidate screened out on the first folds also has a
    row with "budget": "screen", its figures on those folds only)."""
    return [r for r in model.cv_results_ if r.get("budget", "full") == "full"]


def row_of(model, candidate):
    rows = [r for r in full_rows(model) if r["candidate"] == candidate]
    assert len(rows) == 1, [r["candidate"] for r in model.cv_results_]
    return rows[0]


def check_folds(model, y, num_folds):
    """fold_of_vector_: one fold per vector, the same for all of a speaker's vectors, every
    fold holding at least two speakers."""
    fold = np.asarray(model.fold_of_vector_)
    assert fold.shape == y.shape and np.issubdtype(fold.dtype, np.integer)
    assert set(np.unique(fold)) - {-1} == set(range(num_folds))
    for spk in np.unique(y):
        assert np.unique(fold[y == spk]).size == 1
    for k in range(num_folds):
        assert np.unique(y[fold == k]).size >= 2
    return fold


# ----------------------------------------------------------------------------------- tests
@pytest.fixture(scope="module")
def corpus():
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=30, num_adapt_speakers=2,
                            num_eval_speakers=2, train_utts_range=(6, 12))
    return np.asarray(c.train.X, dtype=np.float32), np.asarray(c.train.labels)


@pytest.mark.parametrize("num_folds", [3, 4])
def test_held_out_figures_recomputed_from_scratch(corpus, num_folds):
    X, y = corpus
    model = AutoBackend(lda_dims=(0,), candidates=("cosine_raw", "cosine"),
                        num_folds=num_folds, selection="best").fit(X, y)
    fold = check_folds(model, y, num_folds)
    assert sorted(r["candidate"] for r in full_rows(model)) == ["cosine", "cosine_raw"]
    for candidate in ("cosine_raw", "cosine"):
        row = row_of(model, candidate)
        assert row["lda_dim"] == 0
        expected = reference_folds(candidate, X, y, fold, num_folds)
        assert len(row["folds"]) == num_folds
        for k, (got, want) in enumerate(zip(row["folds"], expected)):
            where = (candidate, k)
            # float32 vs float64 scores may swap a near-tie: one swap moves pAUC by
            # 1/(targets x band) ~ 5e-5 here, EER by 1/targets ~ 2e-3
            assert got["pauc"] == pytest.approx(want["pauc"], abs=1e-4), where
            assert got["eer"] == pytest.approx(want["eer"], abs=2.5e-3), where
            assert got["min_dcf"] == pytest.approx(want["min_dcf"], abs=1e-3), where
        assert row["pauc"] == pytest.approx(np.mean([f["pauc"] for f in expected]), abs=1e-4)
    # the two systems differ on every fold (the centring is not a no-op here)
    raw, centred = (reference_folds(c, X, y, fold, num_folds) for c in ("cosine_raw", "cosine"))
    assert all(abs(a["pauc"] - b["pauc"]) > 1e-3 for a, b in zip(raw, centred))


def by_construction(kind, seed=0, speakers=30, per_speaker=8, dim=16):
    """The two corpora of the module doc, in plain numpy."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(speakers), per_speaker)
    n = y.size
    if kind == "gain":
        directions = unit(np.abs(rng.standard_normal((speakers, dim))) + 0.5)
        gain = rng.uniform(1.0, 20.0, n)[:, None]
        X = gain * (directions[y] + 0.05 * rng.standard_normal((n, dim)))
        return X.astype(np.float32), y, None
    nuisance = np.zeros(dim)
    nuisance[0] = 1.0
    X = rng.standard_normal((speakers, dim))[y] + 0.5 * rng.standard_normal((n, dim))
    X += 30.0 * rng.standard_normal((n, 1)) * nuisance
    return X.astype(np.float32), y, nuisance


@pytest.mark.parametrize("selection", ["1se", "best"])
@pytest.mark.parametrize("kind,best", [("gain", "cosine_raw"), ("nuisance", "plda")])
def test_the_system_best_by_construction_is_chosen(kind, best, selection):
    X, y, nuisance = by_construction(kind)
    model = AutoBackend(lda_dims=(0,), candidates=("cosine_raw", "cosine", "plda"),
                        num_folds=3, selection=selection).fit(X, y)
    fold = check_folds(model, y, 3)
    raw, centred = (reference_folds(c, X, y, fold, 3) for c in ("cosine_raw", "cosine"))
    raw_pauc = [f["pauc"] for f in raw]
    centred_pauc = [f["pauc"] for f in centred]
    if kind == "gain":
        # raw cosine beats the centred one by far more than the fold noise
        diff, se = paired(raw_pauc, centred_pauc)
        assert diff > 0.5 and diff > 5 * se, (raw_pauc, centred_pauc)
    else:
        # both cosines are swamped; without the nuisance direction the same cosine is good
        oracle = []
        for k in range(3):
            held = np.flatnonzero(fold == k)
            train = np.flatnonzero(fold != k)
            P = np.eye(X.shape[1]) - np.outer(nuisance, nuisance)
            U = unit((X[held].astype(np.float64) - X[train].mean(axis=0)) @ P)
            a, b = np.triu_indices(held.size, k=1)
            s, t = np.einsum("ij,ij->i", U[a], U[b]), y[held][a] == y[held][b]
            oracle.append(brute_pauc(s[t], s[~t]))
        assert min(oracle) > 0.5 and max(raw_pauc + centred_pauc) < 0.2, (oracle, raw_pauc)
    assert model.chosen_["candidate"] == best, [(r["candidate"], r["pauc"])
                                                for r in model.cv_results_]
    assert model.chosen_["lda_dim"] == 0
    # the chosen system's held-out figures beat the other two systems' by > 3 paired SEs,
    # the cosines' taken from the numpy reference
    chosen = [f["pauc"] for f in row_of(model, best)["folds"]]
    others = {"cosine_raw": raw_pauc, "cosine": centred_pauc,
              "plda": [f["pauc"] for f in row_of(model, "plda")["folds"]]}
    for name, figures in others.items():
        if name != best:
            diff, se = paired(chosen, figures)
            assert diff > 3 * se and diff > 0.1, (name, chosen, figures)
    # the cosines' own rows are the reference's
    for name, ref in (("cosine_raw", raw_pauc), ("cosine", centred_pauc)):
        got = [f["pauc"] for f in row_of(model, name)["folds"]]
        np.testing.assert_allclose(got, ref, atol=1e-4)
