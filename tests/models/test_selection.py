"""The one-standard-error rule of models.auto.selection, against its definition written out."""

import itertools

import numpy as np
import pytest

from pauc_backend.models.auto import selection
from pauc_backend.models.auto.evidence import (DEV_TRIALS, IN_DOMAIN_PSEUDO, TRAINING_FOLDS,
                                               Evidence)


def evidence_of(P):
    return [Evidence(TRAINING_FOLDS, [
        {"candidate": "c%d" % i, "lda_dim": 0, "folds": [{"pauc": v} for v in p]}
        for i, p in enumerate(P)])]


@pytest.mark.parametrize("seed", range(6))
def test_choice_is_the_simplest_within_one_paired_se_of_the_best(seed):
    rng = np.random.default_rng(seed)
    K = 5
    fold = rng.normal(0.8, 0.05, K)                 # difficulty shared by every system
    P = fold + rng.normal(0, 0.01, (7, K)) + np.linspace(0, 0.02, 7)[:, None]
    complexity = list(rng.permutation(7))
    chosen, verdict = selection.choose(evidence_of(P), complexity)
    means = P.mean(axis=1)
    best = int(np.argmax(means))
    ok = []
    for i in range(7):
        d = P[best] - P[i]
        ok.append(i == best or d.mean() <= d.std(ddof=1) / np.sqrt(K))
    expected = min((i for i in range(7) if ok[i]), key=lambda i: (complexity[i], -means[i]))
    assert chosen == expected and verdict["best"] == best
    assert list(verdict["within"]) == ok and verdict["source"] == TRAINING_FOLDS
    assert selection.choose(evidence_of(P), complexity, "best")[0] == best


def test_shared_fold_difficulty_cancels_in_the_paired_se():
    # B is better than A on every fold by 0.01, folds differ by 0.1: B is kept although
    # A is simpler, because the paired difference has no spread
    P = np.array([[0.5, 0.6, 0.7, 0.8], [0.51, 0.61, 0.71, 0.81]])
    assert selection.choose(evidence_of(P), [0, 1])[0] == 1
    # a noisy gain of the same size is within one SE: the simpler A is kept
    P = np.array([[0.5, 0.6, 0.7, 0.8], [0.55, 0.57, 0.74, 0.78]])
    assert selection.choose(evidence_of(P), [0, 1])[0] == 0


def test_the_evidence_read_must_be_paired_known_sources_of_the_same_candidates():
    """Figures on unequal numbers of held-out parts are not paired; an unknown source, a
    source twice, or sources rating other candidates (or in another order) are refused, not
    guessed."""
    P = np.array([[0.5, 0.6, 0.7], [0.51, 0.61, 0.71]])
    unpaired = evidence_of(P)[0].rows[0], dict(evidence_of(P)[0].rows[1], folds=[{"pauc": 0.5}])
    with pytest.raises(ValueError, match="not paired"):
        selection.choose([Evidence(TRAINING_FOLDS, unpaired)], [0, 1])
    rows = evidence_of(P)[0].rows
    with pytest.raises(ValueError, match="unknown source"):
        selection.choose([Evidence("evaluation trials", rows)], [0, 1])
    with pytest.raises(ValueError, match="two sources .*training folds"):
        selection.choose(evidence_of(P) + evidence_of(P), [0, 1])
    swapped = Evidence(DEV_TRIALS, rows[::-1], estimate="bootstrap")
    with pytest.raises(ValueError, match="same candidates in the same order"):
        selection.choose(evidence_of(P) + [swapped], [0, 1])
    with pytest.raises(ValueError, match="complexities"):
        selection.choose(evidence_of(P), [0])
    with pytest.raises(ValueError, match="at least one source"):
        selection.choose([], [])
    # pseudo-speaker folds alone rate (the in-domain stage of models.auto.pseudo, issue 34
    # item 1: its pseudo-trained candidates have no training-fold figures)
    chosen, verdict = selection.choose([Evidence(IN_DOMAIN_PSEUDO, rows)], [0, 1],
                                       baselines=())
    assert verdict["source"] == IN_DOMAIN_PSEUDO and chosen in (0, 1)


def test_trained_parameters_order():
    D, S = 200, 100
    count = {}
    for members, dim in itertools.product([("cosine_raw",), ("cosine",), ("plda",),
                                           ("pauc_latent",), ("dplda",), ("plda", "dplda"),
                                           ("plda:as",)], [0, 50, 100]):
        count[members, dim] = selection.trained_parameters(members, dim, D, S)
    assert count[("cosine_raw",), 0] == 0 == count[("cosine_raw",), 100]
    assert count[("cosine",), 0] == D < count[("cosine",), 50]
    for dim in (0, 50, 100):
        assert (count[("cosine",), dim] < count[("plda",), dim] < count[("pauc_latent",), dim]
                < count[("dplda",), dim] < count[("plda", "dplda"), dim])
        assert count[("plda:as",), dim] == count[("plda",), dim] + S * D
    assert count[("plda",), 50] < count[("plda",), 100]
