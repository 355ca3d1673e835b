"""The choice across sources of evidence (models.auto.selection, issue 34): development trials rate,
the training folds rank when there are none and pseudo-speakers veto, the do-no-harm baselines
(raw cosine, centred cosine at LDA none). Checked on planted evidence and against the rule
written out independently (loops over the definitions of the module doc)."""

import math

import numpy as np
import pytest

from pauc_backend.models.auto import selection
from pauc_backend.models.auto.evidence import (DEV_TRIALS, IN_DOMAIN_PSEUDO, TRAINING_FOLDS,
                                               Evidence, dev_trials, pseudo_speaker_folds,
                                               training_folds)

# their trained parameters on 16-d vectors of 30 speakers (selection.complexity)
NAMES = [("cosine_raw", 0), ("cosine_centred", 0), ("plda", 8), ("pauc_lnorm", 8),
         ("plda+pauc_lnorm", 8)]
COMPLEXITY = selection.complexity([{"candidate": c, "lda_dim": d} for c, d in NAMES], 16, 30)


def test_the_planted_names_complexity():
    assert COMPLEXITY[0] < COMPLEXITY[1] < COMPLEXITY[3] < COMPLEXITY[2] < COMPLEXITY[4]
    assert selection.do_no_harm([{"candidate": c, "lda_dim": d} for c, d in NAMES]) == [0, 1]
    assert selection.do_no_harm([{"candidate": "cosine_centred", "lda_dim": 8}]) == []


def folds_of(P):
    return [{"candidate": c, "lda_dim": d, "folds": [{"pauc": v} for v in p],
             "pauc": float(np.mean(p))} for (c, d), p in zip(NAMES, P)]


def boot_of(point, R, rng, noise=0.002, shared=0.02):
    """Point figures and R paired resamples: a shared resample effect plus each
    candidate's own noise (so paired differences are much tighter than the figures)."""
    common = rng.normal(0, shared, R)
    rows = []
    for (c, d), v in zip(NAMES, point):
        res = v + common + rng.normal(0, noise, R)
        rows.append({"candidate": c, "lda_dim": d, "pauc": float(v), "eer": 0.1,
                     "min_dcf": 0.5, "folds": [{"pauc": float(x)} for x in res]})
    return rows


def training(P):
    return training_folds(folds_of(P), len(P[0]), "every speaker and vector", 0)


# -- planted cases -----------------------------------------------------------------------------
def test_development_trials_override_the_training_folds():
    """The training folds' winner (the fusion, clearly) is worse than PLDA on the
    development trials, where PLDA beats both baselines: PLDA is chosen, and without the
    development trials the fusion would be."""
    rng = np.random.default_rng(0)
    P = np.array([[0.40] * 5, [0.41] * 5, [0.50] * 5, [0.52] * 5, [0.60] * 5])
    P = P + rng.normal(0, 0.001, P.shape)
    alone, _ = selection.choose([training(P)], COMPLEXITY)
    assert NAMES[alone][0] == "plda+pauc_lnorm"
    dev = dev_trials(boot_of([0.70, 0.72, 0.80, 0.75, 0.74], 200, rng), "planted")
    chosen, verdict = selection.choose([training(P), dev], COMPLEXITY)
    assert NAMES[chosen][0] == "plda" and verdict["source"] == DEV_TRIALS
    assert verdict["baselines"] == [0, 1] and not verdict["vetoed"]


def test_do_no_harm_a_system_must_beat_each_baseline_in_domain_by_its_paired_se():
    """On the development trials PLDA is 0.004 above raw cosine with a paired SE of about
    0.007: not chosen, though the training folds rate it far above; 0.04 above (the same
    noise): chosen."""
    rng = np.random.default_rng(1)
    P = np.array([[0.40] * 5, [0.41] * 5, [0.60] * 5, [0.30] * 5, [0.30] * 5])
    noisy = boot_of([0.700, 0.690, 0.704, 0.60, 0.60], 300, rng, noise=0.005)
    chosen, verdict = selection.choose([training(P), dev_trials(noisy, "d")], COMPLEXITY)
    assert NAMES[chosen][0] == "cosine_raw"
    assert verdict["vetoed"][2][0] == "not better than a baseline"
    d, se = dev_trials(noisy, "d").paired(2, 0)
    assert 0 < d <= se
    clear = boot_of([0.700, 0.690, 0.740, 0.60, 0.60], 300, rng, noise=0.005)
    chosen, verdict = selection.choose([training(P), dev_trials(clear, "d")], COMPLEXITY)
    assert NAMES[chosen][0] == "plda" and 2 not in verdict["vetoed"]


def test_pseudo_speakers_veto_what_the_training_folds_rank():
    """Training folds rank the fusion first; on the pseudo-speakers it is worse than the
    simpler PLDA by more than the paired SE: vetoed, PLDA (the training folds' next, better
    than both baselines in domain) is chosen."""
    rng = np.random.default_rng(2)
    P = np.array([[0.40] * 5, [0.41] * 5, [0.55] * 5, [0.30] * 5, [0.60] * 5])
    P = P + rng.normal(0, 0.002, P.shape)
    Q = np.array([[0.50] * 5, [0.52] * 5, [0.60] * 5, [0.40] * 5, [0.55] * 5])
    Q = Q + rng.normal(0, 0.002, Q.shape)
    pseudo = pseudo_speaker_folds(folds_of(Q), "planted clusters")
    chosen, verdict = selection.choose([training(P), pseudo], COMPLEXITY)
    assert NAMES[chosen][0] == "plda" and verdict["source"] == TRAINING_FOLDS
    assert verdict["vetoed"][4][:3] == ("worse than a simpler candidate", IN_DOMAIN_PSEUDO, 2)
    # pAUCMetric alone (0.40 in domain) is worse than raw cosine there too
    assert verdict["vetoed"][3][2] in (0, 1, 2)


def test_pseudo_speakers_fall_back_to_the_best_baseline_in_domain():
    """Nothing beats the baselines on the pseudo-speakers: the in-domain evidence chooses
    among them, the centred cosine when it is better there by more than its SE (else the
    simpler raw cosine)."""
    rng = np.random.default_rng(3)
    P = np.array([[0.40] * 5, [0.41] * 5, [0.55] * 5, [0.56] * 5, [0.60] * 5])
    P = P + rng.normal(0, 0.002, P.shape)
    Q = np.array([[0.50] * 5, [0.56] * 5, [0.55] * 5, [0.40] * 5, [0.50] * 5])
    Q = Q + rng.normal(0, 0.002, Q.shape)
    chosen, verdict = selection.choose([training(P), pseudo_speaker_folds(folds_of(Q), "p")],
                                       COMPLEXITY)
    assert NAMES[chosen][0] == "cosine_centred" and verdict["fallback"]
    assert verdict["source"] == IN_DOMAIN_PSEUDO
    Q = np.array([[0.50] * 5, [0.50] * 5, [0.45] * 5, [0.40] * 5, [0.45] * 5])
    Q = Q + rng.normal(0, 0.01, Q.shape)       # the centred no better than raw beyond noise
    chosen, verdict = selection.choose([training(P), pseudo_speaker_folds(folds_of(Q), "p")],
                                       COMPLEXITY)
    d, se = pseudo_speaker_folds(folds_of(Q), "p").paired(1, 0)
    assert NAMES[chosen][0] == ("cosine_centred" if d > se else "cosine_raw")


def test_without_in_domain_evidence_the_rule_is_the_training_folds_one():
    rng = np.random.default_rng(4)
    P = rng.normal(0.5, 0.05, (5, 5))
    one, verdict = selection.choose([training(P)], COMPLEXITY)
    other, unbased = selection.choose([training(P)], COMPLEXITY, baselines=())
    assert one == other and verdict["best"] == unbased["best"] and not verdict["vetoed"]
    assert list(verdict["within"]) == list(unbased["within"])


# -- the rule written out independently -------------------------------------------------------
def _mean_se(parts, estimate):
    parts = np.asarray(parts, dtype=float)
    sd = float(np.std(parts, ddof=1))
    return sd if estimate == "bootstrap" else sd / math.sqrt(parts.size)


def reference(train, dev, pseudo, complexity, baselines):
    """The module doc's rule with plain loops."""
    n = len(complexity)

    def fig(source, i):
        if source.estimate == "bootstrap":
            return source.rows[i]["pauc"]
        return float(np.mean([p["pauc"] for p in source.rows[i]["folds"]]))

    def diff(source, a, b):
        d = fig(source, a) - fig(source, b)
        se = _mean_se([x["pauc"] - y["pauc"] for x, y in zip(source.rows[a]["folds"],
                                                           source.rows[b]["folds"])],
                      source.estimate)
        return d, se

    def beats_baselines(source, c):
        return c in baselines or all(diff(source, c, b)[0] > diff(source, c, b)[1]
                                     for b in baselines)

    def one_se(source, allowed):
        best = max(allowed, key=lambda i: (fig(source, i), -i))
        within = [i for i in allowed if i == best
                  or fig(source, best) - fig(source, i) <= diff(source, best, i)[1] + 1e-12]
        return min(within, key=lambda i: (complexity[i], -fig(source, i), i))

    if dev is not None:
        return one_se(dev, [c for c in range(n) if beats_baselines(dev, c)])
    allowed = list(range(n))
    if pseudo is not None:
        allowed = [c for c in range(n) if beats_baselines(pseudo, c) and not any(
            complexity[s] < complexity[c] and diff(pseudo, s, c)[0] > diff(pseudo, s, c)[1]
            for s in range(n))]
        if not [c for c in allowed if c not in baselines]:
            return one_se(pseudo, [b for b in baselines if b in allowed] or baselines)
    return one_se(train, allowed)


@pytest.mark.parametrize("seed", range(12))
def test_the_rule_matches_its_definition_written_out(seed):
    rng = np.random.default_rng(100 + seed)
    K = 5
    P = rng.normal(0.5, 0.02, (5, K)) + rng.normal(0, 0.03, (5, 1))
    train = training(P)
    kind = seed % 3
    dev = pseudo = None
    if kind == 1:
        dev = dev_trials(boot_of(rng.normal(0.6, 0.01, 5), 60, rng, noise=0.006), "d")
    elif kind == 2:
        Q = rng.normal(0.5, 0.01, (5, K)) + rng.normal(0, 0.01, (5, 1))
        pseudo = pseudo_speaker_folds(folds_of(Q), "p")
    evidence = [train] + [e for e in (dev, pseudo) if e is not None]
    chosen, verdict = selection.choose(evidence, COMPLEXITY)
    assert chosen == reference(train, dev, pseudo, COMPLEXITY, [0, 1])
    # the explanation names every source with the chosen and runner-up figures
    lines, card = selection.explain(evidence, chosen, verdict, lambda i: NAMES[i][0])
    keys = {line.split(" ", 1)[0] for line in card}
    assert "reason" in keys and lines[-1].startswith("Why: ")
    if kind:
        prefix = "dev" if kind == 1 else "pseudo"
        assert {"heldout_pauc_se", "%s_pauc_se" % prefix, "runner_up_heldout_pauc",
                "runner_up_%s_pauc" % prefix, "selection_rated_by"} <= keys
        assert sum(line.startswith("Evidence from ") for line in lines) == 2


def test_bootstrap_evidence_needs_paired_resamples():
    rows = boot_of([0.5] * 5, 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="not paired"):
        dev_trials(rows, "one resample")
    with pytest.raises(ValueError, match="estimate"):
        Evidence(DEV_TRIALS, rows, estimate="median")
