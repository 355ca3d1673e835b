"""Which cross-fitted candidate the automatic back-end keeps, and why.

Every candidate (a system or fusion at an LDA dimension) has figures on held-out trials from
one or more SOURCES of evidence (models.auto.evidence: the training folds; labelled
development trials; held-out folds of pseudo-speakers of the unlabelled in-domain set).

One source: the one-standard-error rule. Choosing the maximum of the fold means is optimistic
when the candidates are many and the folds few: a complex system can win by fold noise, and
with few or out-of-domain training speakers it then generalises worse than a simple one. The
rule here is the one-standard-error rule of Breiman, Friedman, Olshen & Stone (Classification
and Regression Trees, 1984, Section 3.4.3; Hastie, Tibshirani & Friedman, The Elements of
Statistical Learning, 2nd ed., Section 7.10), applied to paired differences:

    b   = the candidate with the best held-out pAUC;
    d_c = pAUC(b) - pAUC(c), SE(d_c) its paired standard error (over the folds: std(d_k,
          ddof=1) / sqrt(K); over paired bootstrap resamples: their std);
    keep the SIMPLEST candidate c with d_c <= SE(d_c),

i.e. a more complex system is kept only if it beats every simpler one by more than the noise
of their difference. The differences are paired (same folds or resamples, same trials), so
the difficulty shared by all systems cancels. "Simplest" is the fewest trained parameters
(``trained_parameters``): raw cosine trains none; then the mean, the LDA, PLDA, the metrics,
the discriminative PLDA, the AS-norm cohort and the fusion weights add theirs. Ties go to the
better pAUC. ``rule="best"`` keeps b.

Several sources (``choose``), the rule of issue 34 ("do no harm"). The DO-NO-HARM BASELINES
are raw cosine and the cosine of vectors centred on the in-domain mean without LDA
(``cosine_centred`` at LDA none: with an adaptation set its mean is the adaptation set's):
what a user of the embeddings already has. In-domain evidence is the development trials or
the pseudo-speakers; the training folds only see the training domain.

1. DEVELOPMENT TRIALS present: they RATE. A candidate other than a baseline is eligible only
   if its development pAUC beats EACH baseline's by more than their paired (bootstrap)
   standard error; among the eligible candidates and the baselines, the rule above (1se or
   best) on the development figures. The training folds (and pseudo-speakers) are reported.
2. Otherwise the TRAINING FOLDS RANK (the rule above over the folds, as without in-domain
   evidence), and PSEUDO-SPEAKERS, when present, VETO: a candidate is not chosen when, on the
   pseudo-speakers' folds, it is worse than a simpler candidate by more than their paired
   standard error, or (unless it is a baseline) not better than each baseline by more than
   the paired standard error. The rule runs over the candidates not vetoed; when no candidate
   but the baselines survives, the in-domain evidence chooses among the baselines (with the
   rule: the simpler raw cosine unless the centred one is better by more than its SE).
3. PSEUDO-SPEAKER folds alone (the in-domain stage of models.auto.pseudo, whose
   pseudo-trained candidates have no training-fold figures): they veto as in 2 and rate
   what survives with the rule above (the baselines alone when nothing else survives).
4. Training folds alone: the rule above over them (no baseline is imposed: without in-domain
   evidence nothing can show a system better in domain; raw cosine is the simplest candidate,
   so the 1se rule already falls back to it when nothing is clearly better).

The verdict says which source rated, what was vetoed and why; ``explain`` writes every
source's figures side by side for the chosen candidate and the runner-up.
"""

import math

import numpy as np

from pauc_backend.models import systems as auto_systems
from pauc_backend.models.auto.evidence import (DEV_TRIALS, IN_DOMAIN_PSEUDO, SOURCES,
                                               TRAINING_FOLDS)

__all__ = ["trained_parameters", "complexity", "do_no_harm", "choose", "describe_choice",
           "explain"]


def trained_parameters(members, lda_dim, dim, num_speakers):
    """Number of numbers the candidate learns from the training data (see the module doc and
    models.systems.trained_parameters, where each system's count is derived)."""
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


def do_no_harm(rows):
    """Indices of the do-no-harm baselines among ``rows`` (see the module doc): raw cosine
    and the centred cosine at LDA none."""
    out = []
    for i, r in enumerate(rows):
        try:
            members = auto_systems.parse_candidate(r["candidate"])
        except ValueError:               # a name of no system (tests): not a baseline
            continue
        if members == ("cosine_raw",) or (members == ("cosine_centred",)
                                          and not int(r["lda_dim"])):
            out.append(i)
    return out


def _sources(evidence):
    """{source name: Evidence}, checked: known names, each once, paired, the same
    candidates in the same order."""
    if not evidence:
        raise ValueError("the selection needs at least one source of evidence")
    sources = {}
    for e in evidence:
        if e.source not in SOURCES:
            raise ValueError("unknown source of evidence %r (known: %s)"
                             % (e.source, ", ".join(SOURCES)))
        if e.source in sources:
            raise ValueError("two sources of evidence named %r" % e.source)
        sources[e.source] = e.check()
    labels = [e.labels() for e in sources.values()]
    if any(other != labels[0] for other in labels[1:]):
        raise ValueError("the sources of evidence (%s) do not rate the same candidates in the "
                         "same order" % ", ".join(sources))
    return sources


def _rule(rating, complexity, allowed, rule):
    """The 1se (or best) rule over the candidates ``allowed`` (a mask) of the source
    ``rating``: (chosen, verdict fields)."""
    means = rating.means()
    P = rating.fold_matrix()
    idx = np.flatnonzero(allowed)
    best = int(idx[np.argmax(means[idx])])            # first of equal means
    diff_se = np.array([rating.spread(P[best] - p) for p in P])
    within = allowed & (means[best] - means <= diff_se + 1e-12)
    within[best] = True
    if rule == "best":
        chosen = best
    else:
        chosen = min(np.flatnonzero(within), key=lambda i: (complexity[i], -means[i], i))
    return int(chosen), {"best": best, "means": means, "fold_se": rating.standard_errors(),
                         "within": within, "eligible": np.asarray(allowed, bool)}


def _baseline_vetoes(source, baselines, vetoed):
    """Mask of the candidates not vetoed by the baseline rule on ``source``: a candidate
    other than a baseline must beat each baseline by more than the paired SE. Adds the
    reasons to ``vetoed`` {index: (kind, source, other, difference, se)}."""
    n = len(source.rows)
    allowed = np.ones(n, bool)
    for c in range(n):
        if c in baselines:
            continue
        for b in baselines:
            d, se = source.paired(c, b)
            if not d > se:
                allowed[c] = False
                vetoed.setdefault(c, ("not better than a baseline", source.source, b, d, se))
                break
    return allowed


def _simpler_vetoes(source, complexity, vetoed):
    """Mask of the candidates not worse on ``source`` than a simpler one by more than their
    paired SE (reasons added to ``vetoed``)."""
    n = len(source.rows)
    allowed = np.ones(n, bool)
    P = source.fold_matrix()
    means = source.means()
    for c in range(n):
        for s in sorted(range(n), key=lambda i: (complexity[i], i)):
            if complexity[s] >= complexity[c]:
                break
            d, se = float(means[s] - means[c]), source.spread(P[s] - P[c])
            if d > se:
                allowed[c] = False
                vetoed.setdefault(c, ("worse than a simpler candidate", source.source, s, d,
                                      se))
                break
    return allowed


def choose(evidence, complexity, rule="1se", baselines=None):
    """Index of the kept candidate (a row of the sources' ``rows``) and the verdict, a dict
    saying why: "source" (the source that rated), "best", "means", "fold_se" (its figures),
    "within", "eligible", "rule", "sources" (the names read), "baselines" (their indices),
    "vetoed" ({index: (kind, source, other index, difference, SE)}), "fallback" (True when
    only the baselines survived the in-domain vetoes).

    ``evidence``: a list of models.auto.evidence.Evidence, at most one per source, rating the
    same candidates in the same order; ``complexity``: one number per candidate (smaller =
    simpler); ``rule``: "1se" or "best" (module doc); ``baselines``: indices of the
    do-no-harm baselines (None: ``do_no_harm`` of the rows; () for none, e.g. when only an
    LDA dimension is chosen). The rule across sources is the module doc's."""
    if rule not in ("1se", "best"):
        raise ValueError("selection must be '1se' or 'best' (got %r)" % rule)
    sources = _sources(evidence)
    rows = next(iter(sources.values())).rows
    n = len(rows)
    if len(complexity) != n:
        raise ValueError("%d complexities for %d candidates" % (len(complexity), n))
    baselines = sorted(set(do_no_harm(rows) if baselines is None else baselines))
    is_baseline = np.zeros(n, bool)
    is_baseline[baselines] = True
    vetoed = {}
    verdict = {"rule": rule, "sources": list(sources), "baselines": baselines,
               "vetoed": vetoed, "fallback": False}
    dev, pseudo = sources.get(DEV_TRIALS), sources.get(IN_DOMAIN_PSEUDO)
    if dev is not None:
        rating = dev
        allowed = _baseline_vetoes(dev, baselines, vetoed)
    elif TRAINING_FOLDS in sources:
        rating = sources[TRAINING_FOLDS]
        allowed = np.ones(n, bool)
        if pseudo is not None:
            allowed = (_simpler_vetoes(pseudo, complexity, vetoed)
                       & _baseline_vetoes(pseudo, baselines, vetoed))
            if baselines and not (allowed & ~is_baseline).any():
                rating, allowed = pseudo, is_baseline.copy()
                verdict["fallback"] = True
            elif not allowed.any():
                allowed[:] = True          # no baseline and everything vetoed: no veto
    elif pseudo is not None:
        # the in-domain stage (models.auto.pseudo): its pseudo-trained candidates have no
        # training-fold figures, so the pseudo-speaker folds veto (as in 2) and rate
        rating = pseudo
        allowed = (_simpler_vetoes(pseudo, complexity, vetoed)
                   & _baseline_vetoes(pseudo, baselines, vetoed))
        if baselines and not (allowed & ~is_baseline).any():
            allowed = is_baseline.copy()
            verdict["fallback"] = True
        elif not allowed.any():
            allowed[:] = True
    else:
        raise ValueError("the selection needs the training folds, development trials or "
                         "pseudo-speaker folds (got %s)" % ", ".join(sources))
    chosen, fields = _rule(rating, complexity, allowed, rule)
    verdict.update(fields, source=rating.source)
    return chosen, verdict


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


_PREFIX = {TRAINING_FOLDS: "heldout", DEV_TRIALS: "dev", IN_DOMAIN_PSEUDO: "pseudo"}
_KIND = {TRAINING_FOLDS: "fold SE", DEV_TRIALS: "bootstrap SE", IN_DOMAIN_PSEUDO: "fold SE"}


def _baseline_key(row):
    return "cosine_raw" if row["candidate"] == "cosine_raw" else "cosine_centred"


def explain(evidence, chosen, verdict, label):
    """(log lines, system.txt lines) saying why ``chosen`` was kept, from the ``evidence``
    and ``verdict`` of ``choose``; ``label(i)`` names candidate i. With the training folds
    alone, ``describe_choice``'s (raw cosine the reference). Otherwise every source's figures
    side by side for the chosen candidate, the runner-up (the best other candidate of the
    source that rated) and the baselines, with the paired differences, then why."""
    sources = {e.source: e for e in evidence}
    rows = list(evidence[0].rows)
    if list(sources) == [TRAINING_FOLDS]:
        reference = next((i for i, r in enumerate(rows) if r["candidate"] == "cosine_raw"),
                         None)
        return describe_choice(rows, chosen, verdict, label, reference)
    rating = sources[verdict["source"]]
    means = verdict["means"]
    order = [int(i) for i in np.argsort(-means, kind="stable") if int(i) != chosen]
    other = order[0] if order else None
    vetoed = verdict["vetoed"]
    card = ["selection %s" % ("one-standard-error" if verdict["rule"] == "1se" else "best"),
            "selection_sources %s" % ",".join(_PREFIX[s] for s in sources),
            "selection_rated_by %s" % _PREFIX[rating.source],
            "candidates_rated %d" % len(rows),
            "candidates_eligible %d" % int(verdict["eligible"].sum()),
            "candidates_within_one_se %d" % int(verdict["within"].sum()),
            "candidates_vetoed %d" % len(vetoed)]
    if other is not None:
        card.append("runner_up %s" % label(other))
    lines = []
    for name, source in sources.items():
        p, kind = _PREFIX[name], _KIND[name]
        m, se = source.means(), source.standard_errors()
        text = "%s %.4f (%s %.4f)" % (label(chosen), m[chosen], kind, se[chosen])
        if name != TRAINING_FOLDS:
            card += ["%s_pauc %.6g" % (p, m[chosen])]
            for fig in ("eer", "min_dcf"):
                if fig in source.rows[chosen]:
                    card.append("%s_%s %.6g" % (p, fig, source.rows[chosen][fig]))
        card.append("%s_pauc_se %.6g" % (p, se[chosen]))
        if other is not None:
            d, d_se = source.paired(chosen, other)
            card += ["runner_up_%s_pauc %.6g" % (p, m[other]),
                     "runner_up_%s_pauc_se %.6g" % (p, se[other]),
                     "chosen_minus_runner_up_%s_pauc %.6g" % (p, d),
                     "chosen_minus_runner_up_%s_se %.6g" % (p, d_se)]
            text += "; runner-up %s %.4f (%.4f), chosen minus runner-up %+.4f +- %.4f" % (
                label(other), m[other], se[other], d, d_se)
        for b in verdict["baselines"]:
            if b == chosen:
                continue
            d, d_se = source.paired(chosen, b)
            key = _baseline_key(rows[b])
            card += ["%s_%s_pauc %.6g" % (key, p, m[b]),
                     "chosen_minus_%s_%s_pauc %.6g" % (key, p, d),
                     "chosen_minus_%s_%s_se %.6g" % (key, p, d_se)]
            text += "; %s %.4f, chosen minus it %+.4f +- %.4f" % (label(b), m[b], d, d_se)
        lines.append("Evidence from %s (%s%s): %s" % (
            name, source.trials, "; it rates" if name == rating.source else "; reported",
            text))
    reason = _reason(rows, chosen, verdict, label, sources)
    lines.append("Why: " + reason)
    card.append("reason " + reason)
    return lines, card


def _veto_text(index, verdict, label):
    kind, source, other, d, se = verdict["vetoed"][index]
    if kind == "not better than a baseline":
        return ("%s is not better on the %s than %s by more than its paired SE (%+.4f +- "
                "%.4f)" % (label(index), source, label(other), d, se))
    return ("%s is worse on the %s than the simpler %s by more than their paired SE "
            "(%.4f +- %.4f)" % (label(index), source, label(other), d, se))


def _reason(rows, chosen, verdict, label, sources):
    """The sentence of system.txt's ``reason`` line for several sources."""
    rating = sources[verdict["source"]]
    means, best = verdict["means"], verdict["best"]
    vetoed = verdict["vetoed"]
    if verdict["source"] == DEV_TRIALS:
        head = ("rated on the development trials (the other sources are reported only); "
                "a candidate other than a baseline (%s) is eligible only if it beats each "
                "baseline there by more than its paired bootstrap SE (%d of %d are not)"
                % (", ".join(label(b) for b in verdict["baselines"]) or "none rated",
                   len(vetoed), len(rows)))
    elif verdict["source"] == IN_DOMAIN_PSEUDO:
        head = ("rated on the %s (no other source rates these candidates); a candidate is "
                "vetoed when worse there than a simpler one, or (not a baseline) not better "
                "than each baseline, by more than their paired SE (%d vetoed%s)"
                % (IN_DOMAIN_PSEUDO, len(vetoed), "; only the baselines survived"
                   if verdict["fallback"] else ""))
    elif verdict["fallback"]:
        head = ("ranked on the training folds, but on the %s no candidate other than the "
                "baselines survived the vetoes (%d vetoed): the baseline kept by the %s rule "
                "there" % (IN_DOMAIN_PSEUDO, len(vetoed), verdict["rule"]))
    else:
        head = ("ranked on the training folds; the %s vetoed %d candidate%s"
                % (IN_DOMAIN_PSEUDO, len(vetoed), "" if len(vetoed) == 1 else "s"))
    what = "%s (%.4f)" % (label(chosen), means[chosen])
    if chosen == best:
        body = "%s has the best %s pAUC of the candidates it could keep" % (
            what, "development" if rating.source == DEV_TRIALS else
            "in-domain" if rating.source == IN_DOMAIN_PSEUDO else "held-out")
    else:
        d, se = rating.paired(best, chosen)
        body = ("%s is the simplest of the %d candidates within one SE of the best it could "
                "keep, %s (%.4f): only %.4f +- %.4f better" % (
                    what, int(verdict["within"].sum()), label(best), means[best], d, se))
    order = [int(i) for i in np.argsort(-means, kind="stable") if int(i) != chosen]
    tail = ""
    if order and order[0] in vetoed:
        tail = "; the runner-up was vetoed: " + _veto_text(order[0], verdict, label)
    elif vetoed:
        first = min(vetoed, key=lambda i: -means[i])
        tail = "; e.g. " + _veto_text(first, verdict, label)
    return "%s: %s%s" % (head, body, tail)
