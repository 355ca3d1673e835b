"""AutoBackend: cross-fitting never trains on held-out speakers, seeded determinism, the
held-out trial designs, few speakers, and the stored model scoring like the estimator."""

import numpy as np
import pytest

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.systems import parse_candidate
from pauc_backend.models.backend_pipeline import BackendPipeline
from pauc_backend.models.crossfit import HeldOutTrials, speaker_folds

FAST = {"num_iters": 60, "batch_size": 50}


@pytest.fixture(scope="module")
def corpus():
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=30, num_adapt_speakers=2,
                            num_eval_speakers=6, train_utts_range=(6, 12))
    return c


def train_data(c):
    X = np.asarray(c.train.X, dtype=np.float32)
    return X, np.asarray(c.train.labels)


class Spy(AutoBackend):
    """Records the speakers every pipeline is trained on, and the rows it scores."""

    def _make_pipeline(self, lda_dim, systems, seed):
        pipe = super()._make_pipeline(lda_dim, systems, seed)
        record = self.fits

        class Recorder(type(pipe)):
            def fit(inner, X, y, **kwargs):
                record.append(set(np.asarray(y).tolist()))
                return super().fit(X, y, **kwargs)

        pipe.__class__ = Recorder
        return pipe


def small(**kwargs):
    params = dict(lda_dims=(8,), num_folds=3, metric_params=FAST,
                  candidates=("plda", "pauc_lnorm", "plda+pauc_latent"))
    params.update(kwargs)
    return params


def test_cross_fitting_never_trains_on_held_out_speakers(corpus):
    X, y = train_data(corpus)
    spy = Spy(**small(lda_dims=(6, 8)))
    spy.fits = []
    spy.fit(X, y)
    speakers, fold = speaker_folds(y, 3, 0)
    everyone = set(speakers.tolist())
    held = [set(speakers[fold == k].tolist()) for k in range(3)]
    # cheap systems at 2 dims x 3 folds, the metrics at the best dim x 3 folds, the final
    assert len(spy.fits) == 2 * 3 + 3 + 1
    for i, trained in enumerate(spy.fits[:-1]):
        k = i % 3
        assert trained.isdisjoint(held[k])
        assert trained | held[k] == everyone
    assert spy.fits[-1] == everyone
    assert set().union(*held) == everyone and sum(map(len, held)) == len(everyone)


def test_same_seed_same_choice_and_scores_other_seed_other_folds(corpus):
    X, y = train_data(corpus)
    a = AutoBackend(**small()).fit(X, y)
    b = AutoBackend(**small()).fit(X, y)
    assert [r["pauc"] for r in a.cv_results_] == [r["pauc"] for r in b.cv_results_]
    E, T = X[:5], X[5:40]
    er, tr = np.repeat(np.arange(5), 35), np.tile(np.arange(35), 5)
    np.testing.assert_array_equal(a.score(E, T, er, tr), b.score(E, T, er, tr))
    parallel = AutoBackend(**small(n_jobs=2)).fit(X, y)
    np.testing.assert_array_equal(a.score(E, T, er, tr), parallel.score(E, T, er, tr))
    c = AutoBackend(**small(random_state=1)).fit(X, y)
    assert [r["pauc"] for r in a.cv_results_] != [r["pauc"] for r in c.cv_results_]


def test_choice_is_the_best_held_out_pauc_and_scores_fuse_members(corpus):
    X, y = train_data(corpus)
    # selection="best": the best mean held-out pAUC (the default "1se" is tested below)
    model = AutoBackend(**small(selection="best")).fit(X, y)
    best = max(r["pauc"] for r in model.cv_results_)
    assert model.chosen_["pauc"] == best
    assert model.members_ == parse_candidate(model.chosen_["candidate"])
    # The score is the fusion of the member systems of a pipeline trained on everything.
    pipe = BackendPipeline(lda_dim=model.lda_dim_, systems=model.members_,
                           metric_params=FAST, random_state=0).fit(X, y)
    E, T = X[:4], X[10:30]
    er, tr = np.repeat(np.arange(4), 20), np.tile(np.arange(20), 4)
    raw = pipe.score(pipe.features(E), pipe.features(T), er, tr)
    np.testing.assert_allclose(model.score(E, T, er, tr),
                               raw @ model.fusion_.weights_ + model.fusion_.offset_,
                               rtol=1e-9, atol=1e-9)


def test_held_out_trials_with_enrollment_averaging_brute_force():
    rng = np.random.default_rng(0)
    y = np.repeat(np.array(["a", "b", "c", "d"]), [5, 3, 4, 6])
    rows = np.arange(y.size)
    t = HeldOutTrials(y, rows, enroll_utts=3, random_state=3)
    assert len(t.enroll_sets) == 3                       # "b" has only 3 vectors: no test left
    used = np.concatenate(t.enroll_sets)
    assert np.intersect1d(used, t.test_rows).size == 0
    assert set(used.tolist()) | set(t.test_rows.tolist()) == set(rows.tolist())
    for e, s in enumerate(t.enroll_sets):
        assert s.size == 3 and len(set(y[s])) == 1
    expected = [(e, j, y[t.enroll_sets[e][0]] == y[t.test_rows[j]])
                for e in range(3) for j in range(t.test_rows.size)]
    got = list(zip(t.enroll_index, t.test_index, t.is_target))
    assert sorted(got) == sorted(expected)
    X = rng.normal(size=(y.size, 4)).astype(np.float32)
    np.testing.assert_allclose(t.enroll_vectors(X)[1], X[t.enroll_sets[1]].mean(axis=0),
                               rtol=1e-6)


def test_held_out_pairs_skip_same_group():
    y = np.array(list("aaabbb"))
    groups = np.array([0, 0, 1, 2, 3, 3])
    t = HeldOutTrials(y, np.arange(6), enroll_utts=0, groups=groups)
    pairs = {(int(a), int(b)) for a, b in zip(t.enroll_index, t.test_index)}
    assert pairs == {(a, b) for a in range(6) for b in range(a + 1, 6)} - {(0, 1), (4, 5)}
    assert t.num_target == 3 + 3 - 2


def test_lda_dimension_capped_by_fold_speakers(corpus):
    X, y = train_data(corpus)
    keep = np.isin(y, np.unique(y)[:9])
    lines = []
    model = AutoBackend(**small(lda_dims=(12,), log=lines.append)).fit(X[keep], y[keep])
    assert model.lda_dim_ == 5                           # 3 folds of 3: 6 training speakers
    assert any("capped at 5" in line for line in lines)


def test_too_few_speakers_is_a_clear_error(corpus):
    X, y = train_data(corpus)
    keep = np.isin(y, np.unique(y)[:5])
    with pytest.raises(ValueError, match="too few for 3 folds"):
        AutoBackend(**small()).fit(X[keep], y[keep])
    # enrollment averaging needs more vectors per held-out speaker than enroll_utts
    with pytest.raises(ValueError, match="fold 1 of 2 has 0 target"):
        AutoBackend(**small(num_folds=2, enroll_utts=50)).fit(X, y)
    with pytest.raises(ValueError, match="unknown system"):
        AutoBackend(**small(candidates=("plda+svm",))).fit(X, y)


def test_asnorm_systems_match_brute_force(corpus):
    from pauc_backend.models.score_norm import cohort_statistics, normalize_scores
    X, y = train_data(corpus)
    systems = ("plda", "plda:as", "pauc_lnorm:as")
    pipe = BackendPipeline(lda_dim=8, systems=systems, metric_params=FAST,
                           asnorm_top_n=7).fit(X, y)
    assert pipe.cohort_.shape[0] == np.unique(y).size
    E, T = X[:4], X[10:30]
    er, tr = np.repeat(np.arange(4), 20), np.tile(np.arange(20), 4)
    got = pipe.score(pipe.features(E, 2), pipe.features(T), er, tr, 2)
    for col, base in ((1, "plda"), (2, "pauc_lnorm")):
        only = BackendPipeline(lda_dim=8, systems=(base,), metric_params=FAST).fit(X, y)
        C = pipe.cohort_
        n = pipe.cohort_counts_
        ce, ct = np.repeat(np.arange(C.shape[0]), 4), np.tile(np.arange(4), C.shape[0])
        fc = only.features(C, n)
        # each side scored with the cohort speaker as the enrollment of its own size
        e_coh = only.score(fc, only.features(E, 2), ce, ct, n).reshape(C.shape[0], 4).T
        ce, ct = np.repeat(np.arange(C.shape[0]), 20), np.tile(np.arange(20), C.shape[0])
        t_coh = only.score(fc, only.features(T), ce, ct, n).reshape(C.shape[0], 20).T
        em, es = cohort_statistics(e_coh, 7)
        tm, ts = cohort_statistics(t_coh, 7)
        raw = only.score(only.features(E, 2), only.features(T), er, tr, 2)[:, 0]
        np.testing.assert_allclose(got[:, col], normalize_scores(raw, "as", em[er], es[er],
                                                                 tm[tr], ts[tr]), rtol=1e-9)


def test_metric_only_candidates_with_several_dims(corpus):
    X, y = train_data(corpus)
    model = AutoBackend(**small(lda_dims=(6, 8), candidates=("pauc_latent",))).fit(X, y)
    assert model.members_ == ("pauc_latent",)
    assert [r["lda_dim"] for r in model.cv_results_] == [model.lda_dim_]


@pytest.mark.parametrize("base", ["cosine", "cosine_raw", "pauc_lnorm", "pauc_latent"])
def test_cohort_grid_scores_are_the_pair_scores_bit_for_bit(base):
    """AS-norm scores every cohort row against every row of a block as one grid: the same
    values, to the bit, as the pair path it replaced (which built, hashed and searched the
    cohort x block pair indices), and the definition (dot product; metric: -|a - b|^2)."""
    rng = np.random.default_rng(0)
    pipe = BackendPipeline.__new__(BackendPipeline)
    E, T = rng.standard_normal((300, 40)), rng.standard_normal((1000, 40))
    for start, stop in ((0, 512), (512, 1000)):
        e = np.repeat(np.arange(300), stop - start)
        t = np.tile(np.arange(start, stop), 300)
        pairs = pipe._pair_scores(base, E, T, e, t, None).reshape(300, stop - start)
        grid = pipe._grid_scores(base, E, T, start, stop)
        np.testing.assert_array_equal(grid, pairs)
        diff = E[:, None, :] - T[None, start:stop, :]
        expected = (E @ T[start:stop].T if base.startswith("cosine")
                    else -np.einsum("ijk,ijk->ij", diff, diff))
        np.testing.assert_allclose(grid, expected, rtol=1e-10, atol=1e-10)
