"""Which cross-fitted candidate the automatic back-end keeps, and why.

Every candidate (a system or fusion at an LDA dimension) has one held-out pAUC per fold of
training speakers (models.auto.backend). Choosing the maximum of the fold means is optimistic
when the candidates are many and the folds few: a complex system can win by fold noise, and
with few or out-of-domain training speakers it then generalises worse than a simple one. The
rule here is the one-standard-error rule of Breiman, Friedman, Olshen & Stone (Classification
and Regression Trees, 1984, Section 3.4.3; Hastie, Tibshirani & Friedman, The Elements of
Statistical Learning, 2nd ed., Section 7.10), applied to paired fold differences:

    b   = the candidate with the best mean held-out pAUC;
    d_c = per fold, pAUC(b) - pAUC(c);  SE(d_c) = std(d_c, ddof=1) / sqrt(K);
    keep the SIMPLEST candidate c with mean(d_c) <= SE(d_c),

i.e. a more complex system is kept only if it beats every simpler one by more than the
fold-to-fold noise of their difference. The differences are paired (same folds, same held-out
trials), so the difficulty shared by all systems on a fold cancels. "Simplest" is the fewest
trained parameters (``trained_parameters``): raw cosine trains none; then the mean, the LDA,
PLDA, the metrics, the discriminative PLDA, the AS-norm cohort and the fusion weights add
theirs. Ties go to the better mean pAUC.

The figures come from sources of held-out evidence (models.auto.evidence.Evidence: the
training folds today; the module doc there says how another source plugs in). ``choose``
reads a list of them and, today, takes exactly one: how several combine (issue 34: the
in-domain evidence overriding the training folds, raw and centred cosine kept unless it shows
a system better by more than its paired SE) is a rule to be written here, not a default.
"""

import math

import numpy as np

from pauc_backend.models.auto import systems as auto_systems

__all__ = ["trained_parameters", "complexity", "choose", "describe_choice"]


def trained_parameters(members, lda_dim, dim, num_speakers):
    """Number of numbers the candidate learns from the training data (see the module doc and
    models.auto.systems.trained_parameters, where each system's count is derived)."""
    return auto_systems.trained_parameters(members, lda_dim, dim, num_speakers)


def complexity(rows, dim, num_speakers):
    """``trained_parameters`` of each row's candidate (``"candidate"``, ``"lda_dim"``) on
    vectors of dimension ``dim`` from ``num_speakers`` training speakers."""
    return [trained_parameters(auto_systems.parse_candidate(r["candidate"]), r["lda_dim"],
                               dim, num_speakers) for r in rows]


def _fold_matrix(results):
    return np.array([[fold["pauc"] for fold in row["folds"]] for row in results])


def _se(values):
    values = np.asarray(values, dtype=np.float64)
    if values.size < 2:
        return 0.0
    return float(np.std(values, ddof=1) / math.sqrt(values.size))


def choose(evidence, complexity, rule="1se"):
    """Index of the kept candidate (a row of the evidence's ``rows``) and the verdict, a
    dict saying why ("best", "means", "fold_se", "within", "rule", "source").
    ``evidence``: a list of models.auto.evidence.Evidence, today of one source (see the
    module doc); ``complexity``: one number per candidate (smaller = simpler); ``rule``:
    "1se" (see the module doc) or "best" (the best mean held-out pAUC)."""
    if rule not in ("1se", "best"):
        raise ValueError("selection must be '1se' or 'best' (got %r)" % rule)
    if len(evidence) != 1:
        raise ValueError("the selection reads one source of evidence, got %d (%s): the rule "
                         "combining several is not written yet (models.selection)"
                         % (len(evidence), ", ".join(e.source for e in evidence)))
    source = evidence[0].check()
    if len(complexity) != len(source.rows):
        raise ValueError("%d complexities for %d candidates" % (len(complexity),
                                                                len(source.rows)))
    P = source.fold_matrix()
    means = P.mean(axis=1)
    best = int(np.argmax(means))                    # first of equal means
    diff = P[best][None, :] - P
    diff_mean = diff.mean(axis=1)
    diff_se = np.array([_se(d) for d in diff])
    within = diff_mean <= diff_se + 1e-12
    within[best] = True
    if rule == "best":
        chosen = best
    else:
        chosen = min(np.flatnonzero(within), key=lambda i: (complexity[i], -means[i], i))
    return chosen, {"best": best, "means": means, "fold_se": np.array([_se(p) for p in P]),
                    "within": within, "rule": rule, "source": source.source}


def paired(results, a, b):
    """Mean and SE over folds of pAUC(a) - pAUC(b)."""
    P = _fold_matrix(results)
    d = P[a] - P[b]
    return float(d.mean()), _se(d)


def describe_choice(results, chosen, verdict, label, reference=None):
    """(log lines, system.txt lines) saying why ``chosen`` was kept: its held-out pAUC and
    fold SE, against the best (or, when it is the best, the runner-up) and against
    ``reference`` (the row of raw cosine, if rated), with the paired differences."""
    means, se = verdict["means"], verdict["fold_se"]
    best = verdict["best"]
    order = np.argsort(-means, kind="stable")
    other = best if chosen != best else (int(order[1]) if len(order) > 1 else None)
    card = ["selection %s" % ("one-standard-error" if verdict["rule"] == "1se" else "best"),
            "heldout_pauc_se %.6g" % se[chosen],
            "candidates_rated %d" % len(results),
            "candidates_within_one_se %d" % int(verdict["within"].sum())]
    lines = []
    what = "%s (%.4f, fold SE %.4f)" % (label(chosen), means[chosen], se[chosen])
    if other is None:
        reason = "only candidate: %s" % what
    elif chosen == best:
        d, d_se = paired(results, chosen, other)
        reason = ("%s has the best held-out pAUC; the runner-up %s (%.4f, fold SE %.4f) is "
                  "%.4f +- %.4f (paired SE) below it"
                  % (what, label(other), means[other], se[other], d, d_se))
        if verdict["rule"] == "1se":
            reason += (" and no simpler candidate is within one SE of it"
                       if int(verdict["within"].sum()) == 1 else
                       "; it is also the simplest of the %d candidates within one SE"
                       % int(verdict["within"].sum()))
        card += ["runner_up %s" % label(other), "runner_up_heldout_pauc %.6g" % means[other],
                 "runner_up_heldout_pauc_se %.6g" % se[other],
                 "chosen_minus_runner_up_pauc %.6g" % d, "chosen_minus_runner_up_se %.6g"
                 % d_se]
    else:
        d, d_se = paired(results, other, chosen)
        reason = ("%s is the simplest of the %d candidates within one standard error of the "
                  "best, %s (%.4f, fold SE %.4f): the best is only %.4f +- %.4f (paired SE) "
                  "better" % (what, int(verdict["within"].sum()), label(other),
                              means[other], se[other], d, d_se))
        card += ["best %s" % label(other), "best_heldout_pauc %.6g" % means[other],
                 "best_heldout_pauc_se %.6g" % se[other],
                 "best_minus_chosen_pauc %.6g" % d, "best_minus_chosen_se %.6g" % d_se]
    if reference is not None and reference != chosen:
        d, d_se = paired(results, chosen, reference)
        reason += ("; raw cosine: %.4f (fold SE %.4f), chosen minus raw cosine %+.4f +- %.4f"
                   % (means[reference], se[reference], d, d_se))
        card += ["cosine_raw_heldout_pauc %.6g" % means[reference],
                 "cosine_raw_heldout_pauc_se %.6g" % se[reference],
                 "chosen_minus_cosine_raw_pauc %.6g" % d, "chosen_minus_cosine_raw_se %.6g"
                 % d_se]
    lines.append("Why: " + reason)
    card.append("reason " + reason)
    return lines, card
