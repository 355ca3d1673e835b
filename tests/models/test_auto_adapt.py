"""pAUCMetric (auto) with an adaptation set: the centring mean and Kaldi's adapted PLDA from
the unlabelled in-domain vectors, the adapted candidates, the held-out folds translated to it
(and nothing more: their speakers keep what tells them apart), the cost cap, and the stored
model."""

import numpy as np
import pytest

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.auto.adapt import AdaptationSet, adapted_candidates, sample_rows
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.auto.crossfit import CrossFit
from pauc_backend.models.auto.evidence import Evidence, TRAINING_FOLDS
from pauc_backend.models.auto.policy import make_plan
from pauc_backend.models.auto.settings import Reporter, Settings
from pauc_backend.models.auto.params import DEFAULT_CANDIDATES
from pauc_backend.models.backend_pipeline import BackendPipeline
from pauc_backend.models.plda import PLDA
from pauc_backend.persist.auto_backend import read_model_dir, write_model_dir

FAST = {"num_iters": 40, "batch_size": 40}


@pytest.fixture(scope="module")
def corpus():
    return make_speaker_corpus(seed=11, dim=16, num_train_speakers=40, num_adapt_speakers=30,
                               num_eval_speakers=8, train_utts_range=(5, 10))


def _data(c):
    return np.asarray(c.train.X, np.float32), np.asarray(c.train.labels)


def test_pipeline_centres_on_the_adapt_mean_and_adapts_the_plda_as_kaldi(corpus):
    X, y = _data(corpus)
    A = np.asarray(corpus.adapt.X, np.float32)
    pipe = BackendPipeline(lda_dim=8, systems=("plda", "plda_adapt", "pauc_latent_adapt"),
                           metric_params=FAST).fit(X, y, adapt=A)
    np.testing.assert_allclose(pipe.mean_, A.astype(np.float64).mean(axis=0), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(pipe.train_mean_, X.astype(np.float64).mean(axis=0),
                               rtol=1e-5, atol=1e-6)
    # independent reference: egs/sre16/v2 stage 8 in plain numpy (subtract the adaptation
    # set's own mean, LDA, length norm to sqrt(dim)), then PLDA.adapt with 0.75/0.25
    W = pipe.lda_.affine_matrix_[:, :-1].astype(np.float64)
    Z = (A.astype(np.float64) - A.astype(np.float64).mean(axis=0)) @ W.T
    Z *= np.sqrt(Z.shape[1]) / np.linalg.norm(Z, axis=1, keepdims=True)
    ref = PLDA.from_params(pipe.plda_.mean_, pipe.plda_.transform_, pipe.plda_.psi_)
    ref.adapt(Z, 1.0, 0.75, 0.25)
    np.testing.assert_allclose(pipe.plda_adapt_.psi_, ref.psi_, rtol=1e-4)
    np.testing.assert_allclose(np.abs(pipe.plda_adapt_.transform_), np.abs(ref.transform_),
                               rtol=1e-3, atol=1e-5)
    # the adapted system scores with the adapted PLDA, the plain one with the training PLDA
    T = np.asarray(corpus.test.X[:6], np.float32)
    f = pipe.features(T)
    s = pipe.score(f, f, [0, 1, 2], [3, 4, 5])
    assert not np.allclose(s[:, 0], s[:, 1])


def test_adapted_systems_need_an_adaptation_set(corpus):
    X, y = _data(corpus)
    with pytest.raises(ValueError, match="adaptation set"):
        BackendPipeline(lda_dim=8, systems=("plda_adapt",)).fit(X, y)
    with pytest.raises(ValueError, match="adaptation set"):
        AutoBackend(candidates=("plda_adapt",), lda_dims=(8,), num_folds=2).fit(X, y)


def test_default_candidates_with_adaptation_use_the_adapted_plda():
    swapped = adapted_candidates(DEFAULT_CANDIDATES)
    names = {m for c in swapped for m in c.replace(":as", "").split("+")}
    assert "plda_adapt" in names and "pauc_latent_adapt" in names
    assert not names & {"plda", "pauc_latent", "dplda"}
    assert "cosine_raw" in swapped and "plda_adapt+pauc_lnorm" in swapped


def test_fold_models_adapt_to_the_adaptation_sample_as_the_final_model(corpus):
    """Every fold's pipeline is centred on and adapted to the same sample of the adaptation
    set as the final model (not to the fold's own vectors)."""
    X, y = _data(corpus)
    A = np.asarray(corpus.adapt.X, np.float32)
    seen = []

    class Spy(AutoBackend):
        def _make_pipeline(self, lda_dim, systems, seed):
            pipe = super()._make_pipeline(lda_dim, systems, seed)

            class Recorder(type(pipe)):
                def fit(inner, X, y, **kw):
                    seen.append((kw.get("adapt"), kw.get("adapt_rows")))
                    return super().fit(X, y, **kw)
            pipe.__class__ = Recorder
            return pipe

    model = Spy(candidates=("plda_adapt", "cosine_centred"), lda_dims=(8,), num_folds=2,
                metric_params=FAST, max_adapt_vectors=60).fit(X, y, X_adapt=A)
    assert len(seen) > 2
    rows = seen[-1][1]
    assert rows.size == 60
    for adapt, adapt_rows in seen:
        assert adapt is A or np.shares_memory(adapt, A) or np.array_equal(adapt, A)
        assert np.array_equal(adapt_rows, rows)
    np.testing.assert_allclose(model.pipeline_.mean_, A[rows].astype(np.float64).mean(axis=0),
                               rtol=1e-5, atol=1e-6)
    card = dict(line.split(" ", 1) for line in model.describe().splitlines())
    assert float(card["adapt_shift_raw_before"]) > 0.4       # the corpus' domain shift


def fold_rows(X, y, A=None, num_folds=5, enroll_utts=0,
              candidates=("cosine_raw", "cosine_centred", "plda")):
    """The training folds' rows of a cross-fitting without and with an adaptation set (no
    in-domain trial set: the folds alone)."""
    settings = Settings.of(dict(AutoBackend(num_folds=num_folds, enroll_utts=enroll_utts,
                                            lda_dims=(0,), candidates=candidates,
                                            screen_factor=1)
                                .get_params()))
    members = {c: (c,) for c in candidates}
    adapt = None if A is None else AdaptationSet.of(A, X.shape[1], 0, 0)
    plan = make_plan(settings, Reporter(), X, y, None, members, adapt=adapt)
    cross = CrossFit(settings, Reporter(), plan)
    for stage in (1, 2, 3):
        cross.add(stage, cross.run(stage))
    return {r["candidate"]: r for r in cross.rows_at() if r["budget"] == "full"}


def etri_sets(etri):
    from pauc_backend.kaldi_io import read_token_table, read_vector_table
    keys, V = read_vector_table("ark:%s" % (etri / "train" / "xvector.ark"))
    utt2spk = read_token_table("ark:%s" % (etri / "train" / "utt2spk"))
    spk = np.array([utt2spk[k] for k in keys])
    return V.astype(np.float32), spk, np.array([s[3] == "M" for s in spk])


def test_held_out_folds_are_translated_so_centred_systems_see_them_unchanged(etri):
    """With an adaptation set of the training domain itself (ETRI's male speakers split in
    two halves: one labelled, one unlabelled), every fold figure equals the one without it:
    the centred systems' exactly (x + m_a - m_k - m_a = x - m_k), raw cosine's within its
    paired standard error."""
    V, spk, male = etri_sets(etri)
    speakers = np.unique(spk[male])
    half = male & np.isin(spk, speakers[::2])
    labelled = male & ~half
    without = fold_rows(V[labelled], spk[labelled], enroll_utts=3)
    moved = fold_rows(V[labelled], spk[labelled], V[half], enroll_utts=3)
    for name in ("cosine_centred", "plda"):
        for a, b in zip(moved[name]["folds"], without[name]["folds"]):
            assert a["pauc"] == pytest.approx(b["pauc"], abs=1e-3)
    d = np.array([a["pauc"] - b["pauc"] for a, b in zip(moved["cosine_raw"]["folds"],
                                                         without["cosine_raw"]["folds"])])
    se = Evidence(TRAINING_FOLDS, [None]).spread(d)
    assert abs(d.mean()) <= se


def test_etri_raw_cosine_keeps_its_fold_figures_under_the_female_adaptation_set(etri):
    """ETRI's male training speakers with the female ones as the adaptation set: raw cosine's
    held-out pAUC[0,0.01] with the folds translated is at least 0.8 of its value without (a
    covariance map estimated on the fold put it at 0.1 of it)."""
    V, spk, male = etri_sets(etri)
    without = fold_rows(V[male], spk[male], enroll_utts=3, candidates=("cosine_raw",))
    moved = fold_rows(V[male], spk[male], V[~male], enroll_utts=3,
                      candidates=("cosine_raw",))
    assert moved["cosine_raw"]["pauc_001"] >= 0.8 * without["cosine_raw"]["pauc_001"]
    assert without["cosine_raw"]["eer"] < 0.3       # far from chance: the source is sane


def test_adaptation_set_is_capped_by_a_seeded_subset(corpus):
    rows, text = sample_rows(1000, 100, 3)
    assert rows.size == 100 and np.unique(rows).size == 100 and "seeded subset" in text
    assert np.array_equal(rows, sample_rows(1000, 100, 3)[0])
    assert sample_rows(50, 100, 3)[0].size == 50 and sample_rows(50, 0, 3)[0].size == 50
    X, y = _data(corpus)
    A = np.asarray(corpus.adapt.X, np.float32)
    model = AutoBackend(candidates=("plda_adapt",), lda_dims=(8,), num_folds=2,
                        max_adapt_vectors=20).fit(X, y, X_adapt=A)
    assert "adapt_vectors a_seeded_subset_of_20_of_%d_vectors" % A.shape[0] in model.describe()


def test_model_dir_stores_the_adapted_plda_and_the_domain(corpus, tmp_path):
    X, y = _data(corpus)
    A = np.asarray(corpus.adapt.X, np.float32)
    model = AutoBackend(candidates=("plda_adapt",), lda_dims=(8,), num_folds=2).fit(
        X, y, X_adapt=A)
    write_model_dir(str(tmp_path / "m"), model)
    back, card = read_model_dir(str(tmp_path / "m"))
    T = np.asarray(corpus.test.X, np.float32)
    rows = np.arange(T.shape[0])
    np.testing.assert_allclose(back.score(T, T, rows, rows[::-1]),
                               model.score(T, T, rows, rows[::-1]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(back.domain_.mean_, model.domain_.mean_, rtol=1e-6)
    np.testing.assert_allclose(back.domain_.whitener_, model.domain_.whitener_, rtol=1e-5,
                               atol=1e-7)
    # the stored domain is the adaptation set's: its vectors are in domain, the training
    # vectors (the other domain of this corpus) are not
    assert back.domain_.shift(A) < 0.05 and back.domain_.shift(X) > 0.4
    assert card["system"] == "plda_adapt"
