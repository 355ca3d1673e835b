"""Pseudo-speakers in the automatic back-end (issue 34 item 1): the in-domain stage's choice
on constructed evidence, the guard, the clustering report and the rating folds."""

import numpy as np

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.auto import selection
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.auto import pseudo
from pauc_backend.models.auto.evidence import IN_DOMAIN_PSEUDO, pseudo_speaker_folds

# the in-domain stage's candidates, simplest first (its complexity order)
STAGE = ["cosine_raw", "cosine_centred", "pseudo_pooled", "plda+pauc_lnorm"]
COMPLEXITY = [0, 16, 300, 900]


def rows_of(P):
    return [{"candidate": c, "lda_dim": 0 if c.startswith("cosine") else 8,
             "folds": [{"pauc": float(v)} for v in p], "pauc": float(np.mean(p))}
            for c, p in zip(STAGE, P)]


def test_the_stage_refuses_a_candidate_worse_than_a_simpler_one_on_the_pseudo_folds():
    """The training folds' choice (the fusion, most complex) is worse on the pseudo-speaker
    folds than the simpler pseudo-trained PLDA by far more than their paired SE: vetoed for
    that reason and not chosen; the pooled PLDA, better than both baselines, is."""
    rng = np.random.default_rng(0)
    P = np.array([[0.40] * 2, [0.45] * 2, [0.60] * 2, [0.50] * 2]) + rng.normal(0, 0.002,
                                                                              (4, 2))
    ev = pseudo_speaker_folds(rows_of(P), "planted")
    for rule in ("1se", "best"):
        chosen, verdict = selection.choose([ev], COMPLEXITY, rule, baselines=[0, 1])
        assert STAGE[chosen] == "pseudo_pooled" and verdict["source"] == IN_DOMAIN_PSEUDO
        assert verdict["vetoed"][3][:3] == ("worse than a simpler candidate",
                                            IN_DOMAIN_PSEUDO, 2)


def test_the_stage_keeps_a_baseline_when_nothing_beats_it_by_its_paired_se():
    """Everything trained is within the noise of the centred cosine: the baselines alone
    survive (fallback) and the in-domain evidence chooses among them."""
    rng = np.random.default_rng(1)
    P = np.array([[0.40, 0.40], [0.55, 0.55], [0.50, 0.62], [0.62, 0.50]])
    P = P + rng.normal(0, 0.001, P.shape)
    chosen, verdict = selection.choose([pseudo_speaker_folds(rows_of(P), "p")], COMPLEXITY,
                                       baselines=[0, 1])
    assert STAGE[chosen] == "cosine_centred" and verdict["fallback"]
    assert verdict["vetoed"][2][0] == verdict["vetoed"][3][0] == "not better than a baseline"


def test_rating_folds_are_speaker_disjoint_and_trials_stay_in_their_fold():
    rng = np.random.default_rng(2)
    labels = np.repeat(np.arange(12), rng.integers(4, 9, 12))
    A = rng.normal(size=(labels.size, 6)).astype(np.float32)

    class Found:
        pass
    found = Found()
    found.labels, found.subset = labels, np.arange(labels.size)
    fold, lab = pseudo.folds_of(found, 0)
    for c in np.unique(labels):
        assert np.unique(fold[labels == c]).size == 1
    for k in (0, 1):
        E, counts, T, target = pseudo.fold_trials(A, np.arange(labels.size), lab, fold, k, 0)
        members = np.unique(labels[fold == k])
        assert E.shape[0] == members.size and np.all((counts >= 1) & (counts <= 3))
        # every test vector is one of the fold's, each enrolled speaker has >= 1 target
        assert T.shape[0] == np.sum(fold == k) - counts.sum()
        assert np.all(target.sum(axis=1) >= 1) and np.all(target.sum(axis=0) == 1)


def _corpus(num_adapt_speakers):
    return make_speaker_corpus(seed=2, dim=16, num_train_speakers=40,
                               num_adapt_speakers=num_adapt_speakers, adapt_utts_range=(6, 12),
                               num_eval_speakers=10, extra_within=(12.0, 6.0),
                               extra_within_rank=6)


QUICK = dict(candidates=("plda", "cosine_centred"), lda_dims=(0, 8), num_folds=2)


def test_guard_too_few_pseudo_speakers_keeps_the_training_folds_choice():
    """An adaptation set of 6 speakers: fewer than 10 pseudo-speakers of >= 4 vectors, so
    no in-domain stage; the model is the one the training folds chose, and system.txt
    says why the pseudo-speakers were not used."""
    c = _corpus(6)
    m = AutoBackend(**QUICK).fit(c.train.X, c.train.labels, X_adapt=c.adapt.X)
    card = m.describe()
    assert "\npseudo_used no_fewer_than_10_of_4_or_more_vectors\n" in card
    assert "in_domain_choice" not in card and "pseudo_speakers " in card
    assert "+".join(m.members_) == m.chosen_["candidate"]
    assert not any(r["candidate"] == "cosine_raw" for r in m.cv_results_)   # no baselines
    usable = int(card.split("\npseudo_speakers_of_4_or_more ")[1].split()[0])
    assert usable < pseudo.MIN_PSEUDO_SPEAKERS


def test_clustering_report_and_side_by_side_figures():
    c = _corpus(60)
    m = AutoBackend(**QUICK).fit(c.train.X, c.train.labels, X_adapt=c.adapt.X)
    card = dict(line.split(" ", 1) for line in m.describe().splitlines()
                if not line.startswith("in_domain_candidate "))
    assert int(card["pseudo_speakers"]) >= int(card["pseudo_speakers_of_4_or_more"]) >= 10
    q = [float(v) for v in card["pseudo_size_quantiles_0_25_50_75_100"].split()]
    assert q == sorted(q) and q[0] >= 2
    assert np.isfinite(float(card["pseudo_separation_dprime"]))
    assert card["pseudo_used"] == "yes" and card["in_domain_selection_rated_by"] == "pseudo"
    side = [l.split() for l in m.describe().splitlines()
            if l.startswith("in_domain_candidate ")]
    names = [s[1] for s in side]
    assert {"cosine_raw", "cosine_centred", "pseudo_pooled"} <= set(names)
    for s in side:      # pseudo-trained systems have no training-fold figure
        assert s[s.index("training_folds_pauc") + 1] == "none" or not s[1].startswith(
            "pseudo")
        assert 0 <= float(s[s.index("pseudo_pauc") + 1]) <= 1
    assert card["in_domain_choice"] in names
