"""The one rule of models.auto.selection, against its definition written out here: the most
in-domain trusted source rates, baselines veto on an in-domain source, the one-standard-error
rule among the rest."""

import itertools

import numpy as np
import pytest

from pauc_backend.models.auto import selection
from pauc_backend.models.auto.evidence import (DEV_TRIALS, NEAR_CHANCE_EER, PSEUDO_TRIALS,
                                               TRAINING_FOLDS, Evidence)
from pauc_backend.models.systems import trained_parameters


def rows_of(P, eer=0.1, names=None):
    names = names or ["c%d" % i for i in range(len(P))]
    return [None if p is None else {"candidate": n, "lda_dim": 0, "eer": eer,
                                    "pauc": float(np.mean(p)),
                                    "folds": [{"pauc": v} for v in p]}
            for n, p in zip(names, P)]


def folds(P, **kw):
    return Evidence(TRAINING_FOLDS, rows_of(P, **kw))


def labels_of(n):
    return [("c%d" % i, 0) for i in range(n)]


def reference_1se(P, complexity, allowed, spread):
    """The rule written out: best mean among the allowed; keep the simplest allowed one
    whose paired gap to the best is at most its SE (ties: better mean, then index)."""
    means = P.mean(axis=1)
    idx = [i for i in range(len(P)) if allowed[i]]
    best = max(idx, key=lambda i: (means[i], -i))
    ok = [i for i in idx if i == best or means[best] - means[i] <= spread(P[best] - P[i])]
    return min(ok, key=lambda i: (complexity[i], -means[i], i)), best


@pytest.mark.parametrize("seed", range(6))
def test_choice_is_the_simplest_within_one_paired_se_of_the_best(seed):
    rng = np.random.default_rng(seed)
    K = 5
    fold = rng.normal(0.8, 0.05, K)                 # difficulty shared by every system
    P = fold + rng.normal(0, 0.01, (7, K)) + np.linspace(0, 0.02, 7)[:, None]
    complexity = list(rng.permutation(7))
    chosen, verdict = selection.choose(labels_of(7), [folds(P)], complexity)
    expected, best = reference_1se(P, complexity, [True] * 7,
                                   lambda d: d.std(ddof=1) / np.sqrt(K))
    assert chosen == expected and verdict["best"] == best
    assert verdict["source"] == TRAINING_FOLDS
    assert selection.choose(labels_of(7), [folds(P)], complexity, "best")[0] == best


def test_shared_fold_difficulty_cancels_in_the_paired_se():
    # B beats A on every fold by 0.01 while the folds differ by 0.1: B is kept although A is
    # simpler (the paired difference has no spread); the same gain with spread is not enough
    P = np.array([[0.5, 0.6, 0.7, 0.8], [0.51, 0.61, 0.71, 0.81]])
    assert selection.choose(labels_of(2), [folds(P)], [0, 1])[0] == 1
    P = np.array([[0.5, 0.6, 0.7, 0.8], [0.55, 0.57, 0.74, 0.78]])
    assert selection.choose(labels_of(2), [folds(P)], [0, 1])[0] == 0


def boot(P, source=DEV_TRIALS, eer=0.1):
    """Bootstrap evidence: the point figure is the first column, the resamples the rest."""
    rows = []
    for i, p in enumerate(P):
        if p is None:
            rows.append(None)
            continue
        rows.append({"candidate": "c%d" % i, "lda_dim": 0, "pauc": float(p[0]), "eer": eer,
                     "folds": [{"pauc": float(v)} for v in p[1:]]})
    return Evidence(source, rows, estimate="bootstrap")


def test_the_most_in_domain_trusted_source_rates():
    rng = np.random.default_rng(3)
    T = rng.normal(0.5, 0.01, (3, 5)) + np.array([[0.0], [0.2], [0.1]])   # folds: c1 best
    D = rng.normal(0.5, 0.01, (3, 30)) + np.array([[0.0], [0.0], [0.3]])  # dev: c2 best
    S = rng.normal(0.5, 0.01, (3, 30)) + np.array([[0.3], [0.0], [0.0]])  # pseudo: c0 best
    for evidence, source, best in (([folds(T)], TRAINING_FOLDS, 1),
                                   ([folds(T), boot(S, PSEUDO_TRIALS)], PSEUDO_TRIALS, 0),
                                   ([folds(T), boot(S, PSEUDO_TRIALS), boot(D)], DEV_TRIALS, 2)):
        chosen, verdict = selection.choose(labels_of(3), evidence, [5, 5, 5])
        assert (verdict["source"], chosen) == (source, best)


def test_a_source_that_rates_every_candidate_near_chance_does_not_rate():
    """The planted move of the held-out folds put every candidate near chance: such a source
    is named untrusted and the next one rates; with none left nothing can be chosen. A source
    on which only the cosines are near chance (a nuisance swamps them) still rates."""
    labels = [("cosine_raw", 0), ("cosine_centred", 0), ("plda", 100)]
    T = np.array([[0.5] * 5, [0.55] * 5, [0.6, 0.61, 0.62, 0.6, 0.6]])
    bad = [dict(r, eer=NEAR_CHANCE_EER + 0.01) for r in rows_of(T, names=[n for n, _ in labels])]
    good = boot(np.array([[0.5] * 20, [0.5] * 20, [0.9] * 20]), PSEUDO_TRIALS, eer=0.1)
    chosen, verdict = selection.choose(labels, [Evidence(TRAINING_FOLDS, bad), good], [0, 1, 2])
    assert verdict["source"] == PSEUDO_TRIALS and chosen == 2
    chosen, verdict = selection.choose(labels, [Evidence(TRAINING_FOLDS, bad),
                                                boot(np.full((3, 20), 0.5), DEV_TRIALS,
                                                     eer=0.45), good], [0, 1, 2])
    assert verdict["source"] == PSEUDO_TRIALS and set(verdict["untrusted"]) == {DEV_TRIALS}
    assert "near chance" in verdict["untrusted"][DEV_TRIALS]
    with pytest.raises(ValueError, match="no source of held-out evidence can be trusted"):
        selection.choose(labels, [Evidence(TRAINING_FOLDS, bad)], [0, 1, 2])
    # one candidate below the bound: the source is trusted, whatever the cosines do
    ok = bad[:2] + [dict(bad[2], eer=NEAR_CHANCE_EER - 1e-9)]
    assert selection.choose(labels, [Evidence(TRAINING_FOLDS, ok)], [0, 1, 2])[1][
        "source"] == TRAINING_FOLDS


def test_on_an_in_domain_source_a_candidate_must_beat_each_baseline_by_its_paired_se():
    labels = [("cosine_centred", 0), ("cosine_raw", 0), ("plda", 100), ("pauc_lnorm", 100)]
    rng = np.random.default_rng(0)
    base = rng.normal(0.6, 0.05, 200)
    P = np.stack([base, base - 0.01, base + 0.003 + rng.normal(0, 0.02, 200),
                  base + 0.05 + rng.normal(0, 0.005, 200)])
    evidence = [boot(P, DEV_TRIALS)]
    baselines = selection.do_no_harm(labels, adapted=True)
    assert baselines == [0, 1]
    chosen, verdict = selection.choose(labels, evidence, [0, 0, 5, 9], baselines=baselines)
    for c in (2, 3):        # the veto written out
        beats = all(evidence[0].paired(c, b)[0] > evidence[0].paired(c, b)[1]
                    for b in baselines)
        assert (c in verdict["vetoed"]) == (not beats)
    assert 2 in verdict["vetoed"] and chosen == 3
    # without baselines the 1se rule alone decides, on the point figures (column 0) with
    # the spread of the paired resamples (the other columns)
    chosen_free, _ = selection.choose(labels, evidence, [0, 0, 5, 9])
    means = P[:, 0]
    best = int(np.argmax(means))
    ok = [i for i in range(4)
          if means[best] - means[i] <= np.std(P[best, 1:] - P[i, 1:], ddof=1)]
    assert chosen_free == min(ok, key=lambda i: ([0, 0, 5, 9][i], -means[i], i))


def test_with_an_adaptation_set_a_tie_goes_to_the_centred_cosine():
    """Equal figures: the in-domain-centred cosine is the simplest baseline (Kaldi's sre16
    step); without an adaptation set raw cosine is."""
    labels = [("cosine_raw", 0), ("cosine_centred", 0)]
    P = np.full((2, 21), 0.7)
    comp = [trained_parameters(("cosine_raw",), 0, 10, 5, True),
            trained_parameters(("cosine_centred",), 0, 10, 5, True)]
    assert comp == [0, 0]
    chosen, _ = selection.choose(labels, [boot(P, PSEUDO_TRIALS)], comp,
                                 baselines=selection.do_no_harm(labels, adapted=True))
    assert labels[chosen][0] == "cosine_centred"
    comp = [trained_parameters(("cosine_raw",), 0, 10, 5), trained_parameters(
        ("cosine_centred",), 0, 10, 5)]
    chosen, _ = selection.choose(labels, [boot(P, DEV_TRIALS)], comp,
                                 baselines=selection.do_no_harm(labels, adapted=False))
    assert labels[chosen][0] == "cosine_raw"


def test_a_candidate_only_an_in_domain_source_rates_can_be_chosen_there_only():
    """Pseudo-trained candidates have no training-fold figures: eligible where rated."""
    labels = [("cosine_raw", 0), ("cosine_centred", 0), ("pseudo_pooled", 50)]
    T = folds([[0.5, 0.52, 0.51], [0.6, 0.61, 0.62], None])
    S = boot(np.array([[0.5] * 20, [0.6] * 20, [0.8] * 20]), PSEUDO_TRIALS)
    chosen, verdict = selection.choose(labels, [T, S], [0, 0, 9],
                                       baselines=selection.do_no_harm(labels, True))
    assert chosen == 2 and verdict["source"] == PSEUDO_TRIALS
    chosen, verdict = selection.choose(labels, [T], [0, 0, 9])
    assert chosen == 1 and verdict["source"] == TRAINING_FOLDS
    lines, card = selection.explain(labels, [T, S], 2, selection.choose(
        labels, [T, S], [0, 0, 9], baselines=[1, 0])[1])
    assert any("is not rated there" in line for line in lines)
    assert "selection_rated_by pseudo" in card


def test_the_evidence_read_must_be_paired_and_aligned():
    P = np.array([[0.5, 0.6, 0.7], [0.51, 0.61, 0.71]])
    rows = folds(P).rows
    unpaired = [rows[0], dict(rows[1], folds=[{"pauc": 0.5}])]
    with pytest.raises(ValueError, match="not paired"):
        selection.choose(labels_of(2), [Evidence(TRAINING_FOLDS, unpaired)], [0, 1])
    with pytest.raises(ValueError, match="unknown source"):
        Evidence("evaluation trials", rows)
    with pytest.raises(ValueError, match="two sources .*training folds"):
        selection.choose(labels_of(2), [folds(P), folds(P)], [0, 1])
    with pytest.raises(ValueError, match="rate 1 candidates, not the 2"):
        selection.choose(labels_of(2), [Evidence(DEV_TRIALS, rows[:1], estimate="bootstrap")],
                         [0, 1])
    with pytest.raises(ValueError, match="complexities"):
        selection.choose(labels_of(2), [folds(P)], [0])
    with pytest.raises(ValueError, match="at least one source"):
        selection.choose([], [], [])


def test_trained_parameters_order():
    D, S = 200, 100
    count = {}
    for members, dim in itertools.product([("cosine_raw",), ("cosine",), ("plda",),
                                           ("pauc_latent",), ("dplda",), ("plda", "dplda"),
                                           ("plda:as",)], [0, 50, 100]):
        count[members, dim] = trained_parameters(members, dim, D, S)
    assert count[("cosine_raw",), 0] == 0 == count[("cosine_raw",), 100]
    assert count[("cosine",), 0] == D < count[("cosine",), 50]
    for dim in (0, 50, 100):
        assert (count[("cosine",), dim] < count[("plda",), dim] < count[("pauc_latent",), dim]
                < count[("dplda",), dim] < count[("plda", "dplda"), dim])
        assert count[("plda:as",), dim] == count[("plda",), dim] + S * D
    assert count[("plda",), 50] < count[("plda",), 100]
    assert trained_parameters(("cosine_centred",), 0, D, S, adapted=True) == 0
    assert trained_parameters(("cosine_centred",), 50, D, S, adapted=True) > 0
