"""pAUCMetric (auto) with labelled development trials (issue 34 item 2): they rate the
candidates over the training folds, a candidate's development figures are those of its folds'
scores averaged, the bootstrap resamples are of the development speakers, the do-no-harm
baselines are always candidates, and the final calibration is learned on the final model's
scores of them."""

import dataclasses

import numpy as np
import pytest

from dev_corpus import dev_of, planted
from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.metrics.bootstrap import ClusterBootstrap
from pauc_backend.metrics.ranking import pauc
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.auto.dev import DevTrials
from pauc_backend.models.auto.evidence import DEV_TRIALS
from pauc_backend.models.auto.trialsets import TrialSetScores
from pauc_backend.models.backend_pipeline import BackendPipeline
from pauc_backend.models.calibration import LinearFusion
from pauc_backend.models.crossfit import trial_figures

FAST = {"num_iters": 40, "batch_size": 20}


@pytest.fixture(scope="module")
def corpus():
    return make_speaker_corpus(seed=5, dim=16, num_train_speakers=30, num_adapt_speakers=20,
                               num_eval_speakers=4, train_utts_range=(6, 12),
                               num_dev_speakers=12)


def train_data(c):
    return np.asarray(c.train.X, np.float32), np.asarray(c.train.labels)


def test_dev_trials_override_the_training_folds():
    """The planted corpus (tests/models/dev_corpus.py): the training folds' winner separates
    the development speakers worse than raw cosine. Without development trials it is chosen;
    with them it is not, and the choice is the development trials' best (raw cosine)."""
    X, y, dev = planted()
    params = dict(lda_dims=(0, 5), num_folds=3, metric_params=FAST, dev_resamples=50,
                  candidates=("cosine_raw", "plda", "pauc_lnorm", "plda+pauc_lnorm"))
    alone = AutoBackend(**params).fit(X, y)
    assert alone.chosen_["candidate"] != "cosine_raw"
    with_dev = AutoBackend(**params).fit(X, y, dev=dev)
    winner = (alone.chosen_["candidate"], alone.chosen_["lda_dim"])
    assert (with_dev.chosen_["candidate"], with_dev.chosen_["lda_dim"]) != winner
    dev_rows = {(r["candidate"], r["lda_dim"]): r for r in with_dev.set_results_[DEV_TRIALS]}
    chosen = (with_dev.chosen_["candidate"], with_dev.chosen_["lda_dim"])
    assert chosen == max(dev_rows, key=lambda k: dev_rows[k]["pauc"])
    # the training folds' winner (at whatever dimension the development trials rated it)
    theirs = [r["pauc"] for k, r in dev_rows.items() if k[0] == winner[0]]
    assert theirs and dev_rows[chosen]["pauc"] > max(theirs) + 0.2
    card = dict(line.split(" ", 1) for line in with_dev.describe().splitlines())
    assert card["selection_rated_by"] == "dev" and "runner_up_dev_pauc" in card
    assert "runner_up_heldout_pauc" in card and "reason" in card


def test_dev_figures_are_those_of_the_fold_averaged_scores(corpus):
    """Every fold's models score the development trials; a candidate's development pAUC and
    EER are those of its K folds' scores averaged (recomputed here from the recorded fold
    pipelines), and the do-no-harm baselines are candidates though not asked for, at LDA
    none though not among the dimensions."""
    X, y = train_data(corpus)
    dev = dev_of(corpus)
    fitted = []

    class Spy(AutoBackend):
        def _make_pipeline(self, lda_dim, systems, seed):
            pipe = super()._make_pipeline(lda_dim, systems, seed)
            fitted.append((lda_dim, tuple(systems), seed, pipe))
            return pipe

    model = Spy(lda_dims=(8,), num_folds=3, metric_params=FAST, candidates=("plda",),
                dev_resamples=30).fit(X, y, dev=dev)
    rated = {(r["candidate"], r["lda_dim"]) for r in model.cv_results_}
    assert {("cosine_raw", 0), ("cosine_centred", 0), ("plda", 8)} <= rated
    rows = {(r["candidate"], r["lda_dim"]): r for r in model.set_results_[DEV_TRIALS]}
    for name, dim in (("plda", 8), ("cosine_centred", 0)):
        columns = []
        for k in range(3):
            pipe = [p for d, s, seed, p in fitted if d == dim and name in s and seed == k][-1]
            pipe.systems = (name,)
            fe = pipe.features(dev.enroll_vectors(), dev.num_utts)
            ft = pipe.features(dev.test_vectors(), 1)
            columns.append(pipe.score(fe, ft, dev.enroll_index, dev.test_index,
                                      dev.num_utts)[:, 0])
        expected = trial_figures(np.mean(columns, axis=0), dev.is_target, 0.0, 0.01)
        assert rows[name, dim]["model_folds"] == 3
        assert rows[name, dim]["pauc"] == pytest.approx(expected["pauc"], abs=1e-9)
        assert rows[name, dim]["eer"] == pytest.approx(expected["eer"], abs=1e-6)


def test_final_calibration_is_learned_on_the_final_models_dev_scores(corpus):
    """With development trials the fusion is the LinearFusion of the final model's (trained
    on every speaker) scores of them: recomputed independently."""
    X, y = train_data(corpus)
    dev = dev_of(corpus)
    model = AutoBackend(lda_dims=(8,), num_folds=3, metric_params=FAST, dev_resamples=30,
                        candidates=("plda", "plda+pauc_lnorm"), selection="best",
                        quality_measures="none").fit(X, y, dev=dev)
    pipe = BackendPipeline(lda_dim=model.lda_dim_, systems=model.members_,
                           metric_params=dict(model.settings_.metric_params),
                           enroll_utts=0, random_state=0).fit(X, y)
    raw = pipe.score(pipe.features(dev.enroll_vectors(), dev.num_utts),
                     pipe.features(dev.test_vectors(), 1), dev.enroll_index, dev.test_index,
                     dev.num_utts)
    expected = LinearFusion(prior=0.01, regularization=1e-6).fit(raw, dev.is_target)
    np.testing.assert_allclose(model.fusion_.weights_, expected.weights_, rtol=1e-6)
    assert model.fusion_.offset_ == pytest.approx(expected.offset_, rel=1e-6, abs=1e-9)
    assert "development_trials_scored_by_the_final_model" in model.describe()


def test_bootstrap_resample_figures_are_those_of_the_repeated_trial_list(corpus):
    """A development row's resample figure is the pAUC of the trial list in which each trial
    appears (multiplicity of its enrollment speaker) x (multiplicity of its test speaker)
    times: the repeated list built here, pAUC computed on it directly."""
    dev = dev_of(corpus)
    dev.check(16)
    store = TrialSetScores(DEV_TRIALS, dev, 0.0, 0.1, 5, 3)
    rng = np.random.default_rng(0)
    scores = rng.normal(size=dev.num_trials) + 2.0 * dev.is_target
    store.add(0, 0, {"cosine_raw": scores})
    point, resampled = store.rate(0, ("cosine_raw",), None)
    assert point["pauc"] == pytest.approx(pauc(scores[dev.is_target],
                                               scores[~dev.is_target], 0.0, 0.1))
    e, t = dev.clusters()
    for (a, b), got in zip(store.draws, resampled):
        times = a[e] * b[t]
        rep, lab = np.repeat(scores, times), np.repeat(dev.is_target, times)
        assert got["pauc"] == pytest.approx(pauc(rep[lab], rep[~lab], 0.0, 0.1), abs=1e-12)
    # the same draws for every candidate: a copy of the scores has the same resamples
    store.add(0, 0, {"plda": scores.copy()})
    assert store.rate(0, ("plda",), None)[1] == resampled


def test_dev_cap_keeps_targets_and_is_seeded(corpus):
    dev = dev_of(corpus).check(16)
    capped = dev.capped(200, 1)
    assert capped.num_trials == 200 and capped.num_target == min(100, dev.num_target)
    assert "seeded sample of 200" in capped.describe()
    again = dev.capped(200, 1)
    np.testing.assert_array_equal(capped.enroll_index, again.enroll_index)
    assert dev.capped(0, 1) is dev and dev.capped(dev.num_trials, 1) is dev


@pytest.mark.parametrize("change,message", [
    (dict(is_target=None), "target and non-target"),
    (dict(enroll_index=None), "does not exist"),
    (dict(vectors=None), "NaN or Inf"),
    (dict(durations=None), "durations"),
])
def test_bad_development_trials_are_named(corpus, change, message):
    dev = dev_of(corpus)
    key = next(iter(change))
    value = {"is_target": np.ones(dev.num_trials, bool),
             "enroll_index": np.full(dev.num_trials, len(dev.enroll)),
             "vectors": np.where(np.arange(dev.vectors.size).reshape(dev.vectors.shape) == 7,
                                 np.nan, dev.vectors),
             "durations": -np.ones(dev.vectors.shape[0])}[key]
    bad = dataclasses.replace(dev, **{key: value})
    X, y = train_data(corpus)
    with pytest.raises(ValueError, match=message):
        AutoBackend(lda_dims=(8,), num_folds=3, candidates=("plda",)).fit(X, y, dev=bad)
    assert isinstance(bad, DevTrials)


def test_cluster_codes_pair_enrolled_and_test_speakers(corpus):
    dev = dev_of(corpus).check(16)
    e, t = dev.clusters()
    assert e.max() + 1 == 12 and t.max() + 1 == 12
    boot = ClusterBootstrap(np.zeros(dev.num_trials) + dev.is_target, dev.is_target, e, t)
    assert (boot.num_enroll, boot.num_test) == (12, 12)


def test_a_fusion_on_a_trial_set_is_cross_fitted_over_its_enrolled_speakers(corpus):
    """Each group's trials are fused with the weights learned on the other groups' trials
    (recomputed here group by group); weights learned on every trial would differ."""
    dev = dev_of(corpus).check(16)
    store = TrialSetScores(DEV_TRIALS, dev, 0.0, 0.1, 5, 3)
    rng = np.random.default_rng(4)
    a = rng.normal(size=dev.num_trials) + 1.5 * dev.is_target
    b = 0.5 * a + rng.normal(size=dev.num_trials) + 0.5 * dev.is_target
    store.add(0, 0, {"plda": a, "pauc_lnorm": b})

    def fusion(scores, labels):
        return LinearFusion(prior=0.01, regularization=1e-6).fit(scores, labels)

    got = store.scores(0, ("plda", "pauc_lnorm"), fusion)
    X = np.column_stack([a, b])
    groups = dev.groups(5, 3)
    assert groups is not None and np.unique(groups).size > 1
    expected = np.empty(dev.num_trials)
    for g in np.unique(groups):
        held = groups == g
        expected[held] = fusion(X[~held], dev.is_target[~held]).transform(X[held])
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
    assert not np.allclose(got, fusion(X, dev.is_target).transform(X))
