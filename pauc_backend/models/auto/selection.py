"""Which candidate the automatic back-end keeps, and why: one rule over every source.

Every candidate (a system or fusion at an LDA dimension: cross-fitted, pseudo-trained or a
baseline) has figures on held-out trials from one or more SOURCES (models.auto.evidence:
development trials, pseudo-speaker trials, training folds; a source may not rate every
candidate).

The rule (``choose``):

1. The RATING SOURCE is the most in-domain source that can be trusted: development trials,
   else pseudo-speaker trials, else the training folds. A source whose cosine baselines are
   near chance is not trusted (Evidence.trust: it would rate every candidate near chance);
   it is named in the verdict and the log, and the next one rates. With no trusted source
   nothing can be chosen (ValueError).
2. Only the candidates the rating source rates are eligible. On an IN-DOMAIN rating source
   the DO-NO-HARM BASELINES (the cosine of vectors centred on the in-domain mean at LDA none,
   and raw cosine: what a user of the embeddings already has) are always candidates, and any
   other candidate is eligible only if it beats EACH baseline there by more than their paired
   standard error.
3. Among the eligible ones, the one-standard-error rule of Breiman, Friedman, Olshen & Stone
   (Classification and Regression Trees, 1984, Section 3.4.3; Hastie, Tibshirani &
   Friedman, The Elements of Statistical Learning, 2nd ed., Section 7.10), on paired
   differences: b = the eligible candidate with the best pAUC; d_c = pAUC(b) - pAUC(c) with
   its paired standard error SE(d_c) (over the folds: std(d_k, ddof=1) / sqrt(K); over
   paired bootstrap resamples: their std); keep the SIMPLEST eligible c with d_c <= SE(d_c).
   A more complex system is kept only if it beats every simpler one by more than the noise
   of their difference. "Simplest" is the fewest trained parameters (``complexity``: raw
   cosine trains none; with an adaptation set the centred cosine at LDA none learns nothing
   from labels either and comes first, the baseline a tie goes to: centring on the in-domain
   mean is Kaldi's own sre16 step); ties go to the better pAUC. ``rule="best"`` keeps b.

The other sources are reported beside it (``explain``), not used: one source rates, so the
reason for a choice is one sentence. Why the pseudo-speaker trials are guarded (their trials
favour systems close to the similarity that formed the clusters, and are easier than real
trials): they rate only when no labelled in-domain trials exist, a candidate must beat both
baselines on them by more than the paired SE (the first cut of the clustering is the centred
cosine itself, so the baseline shares that favour), the pseudo-trained candidates are rated
on pseudo-speakers they never saw, and the one-SE rule falls back to the simplest candidate
on differences the bootstrap cannot separate.
"""

import numpy as np

from pauc_backend.models.auto.evidence import IN_DOMAIN, PREFIX, SOURCES

__all__ = ["choose", "explain", "do_no_harm", "cosine_baselines"]

_KIND = {"folds": "fold SE", "bootstrap": "bootstrap SE"}


def cosine_baselines(labels):
    """Indices of the centred cosine at LDA none and of raw cosine among ``labels``
    ((candidate, lda_dim) pairs), in that order (the centred one first)."""
    centred = [i for i, (name, dim) in enumerate(labels)
               if name == "cosine_centred" and not int(dim)]
    raw = [i for i, (name, _) in enumerate(labels) if name == "cosine_raw"]
    return centred + raw


def do_no_harm(labels, adapted):
    """The do-no-harm baselines (module doc), simplest first: with an adaptation set the
    centred cosine then raw cosine; without one raw cosine then the centred cosine."""
    found = cosine_baselines(labels)
    return found if adapted else found[::-1]


def _sources(evidence, n):
    if not evidence:
        raise ValueError("the selection needs at least one source of evidence")
    sources = {}
    for e in evidence:
        if e.source in sources:
            raise ValueError("two sources of evidence named %r" % e.source)
        if len(e.rows) != n:
            raise ValueError("the %s rate %d candidates, not the %d of the choice"
                             % (e.source, len(e.rows), n))
        sources[e.source] = e.check()
    return sources


def _rule(rating, complexity, allowed, rule, order):
    """The 1se (or best) rule over the candidates ``allowed`` (a mask) of the source
    ``rating``; ``order``: the tie rank of each candidate after its complexity."""
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
        chosen = min(np.flatnonzero(within),
                     key=lambda i: (complexity[i], order[i], -means[i], i))
    return int(chosen), {"best": best, "means": means, "fold_se": rating.standard_errors(),
                         "within": within, "eligible": np.asarray(allowed, bool)}


def choose(labels, evidence, complexity, rule="1se", baselines=(), check_trust=True):
    """Index of the kept candidate and the verdict, a dict saying why: "source" (the source
    that rated), "best", "means", "fold_se" (its figures), "within", "eligible", "rule",
    "sources" (the names read), "untrusted" ({source: why}), "baselines" (their indices,
    simplest first), "vetoed" ({index: (baseline index, difference, SE)}).

    ``labels``: (candidate, lda_dim) of each candidate; ``evidence``: a list of
    models.auto.evidence.Evidence, at most one per source, rows aligned with ``labels``
    (None where a source cannot rate); ``complexity``: one number per candidate (smaller =
    simpler); ``rule``: "1se" or "best"; ``baselines``: the do-no-harm baselines
    (``do_no_harm``), used when an in-domain source rates (() for none, e.g. when only an LDA
    dimension is chosen); ``check_trust``: False when the caller has already decided which
    sources are trusted (the screening of LDA dimensions, whose rows hold no baseline). The
    rule is the module doc's."""
    if rule not in ("1se", "best"):
        raise ValueError("selection must be '1se' or 'best' (got %r)" % rule)
    n = len(labels)
    sources = _sources(evidence, n)
    if len(complexity) != n:
        raise ValueError("%d complexities for %d candidates" % (len(complexity), n))
    untrusted, rating = {}, None
    cosine = cosine_baselines(labels)
    for name in SOURCES:
        if name not in sources:
            continue
        ok, why = sources[name].trust(cosine) if check_trust else (True, "")
        if ok:
            rating = sources[name]
            break
        untrusted[name] = why
    if rating is None:
        raise ValueError("no source of held-out evidence can be trusted: %s"
                         % "; ".join(untrusted.values()))
    in_domain = rating.source in IN_DOMAIN
    baselines = [b for b in baselines if rating.rows[b] is not None] if in_domain else []
    allowed = rating.rated.copy()
    vetoed = {}
    for c in np.flatnonzero(allowed):
        if c in baselines:
            continue
        for b in baselines:
            d, se = rating.paired(c, b)
            if not d > se:
                allowed[c] = False
                vetoed[int(c)] = (b, d, se)
                break
    order = [baselines.index(i) if i in baselines else len(baselines) for i in range(n)]
    chosen, fields = _rule(rating, complexity, allowed, rule, order)
    verdict = {"rule": rule, "sources": list(sources), "untrusted": untrusted,
               "baselines": baselines, "vetoed": vetoed, "source": rating.source}
    verdict.update(fields)
    return chosen, verdict


def explain(labels, evidence, chosen, verdict):
    """(log lines, system.txt lines) saying why ``chosen`` was kept: every source's figures
    side by side for the chosen candidate, the runner-up (the best other candidate of the
    rating source) and the baselines, with the paired differences, then why."""
    sources = {e.source: e for e in evidence}
    rating = sources[verdict["source"]]

    def label(i):
        name, dim = labels[i]
        return "%s (LDA %s)" % (name, "none" if not int(dim) else int(dim))

    means = verdict["means"]
    order = [int(i) for i in np.argsort(-np.nan_to_num(means, nan=-np.inf), kind="stable")
             if int(i) != chosen and np.isfinite(means[i])]
    other = order[0] if order else None
    card = ["selection %s" % ("one-standard-error" if verdict["rule"] == "1se" else "best"),
            "selection_sources %s" % ",".join(PREFIX[s] for s in sources),
            "selection_rated_by %s" % PREFIX[rating.source],
            "candidates_rated %d" % int(rating.rated.sum()),
            "candidates_eligible %d" % int(verdict["eligible"].sum()),
            "candidates_within_one_se %d" % int(verdict["within"].sum()),
            "candidates_vetoed %d" % len(verdict["vetoed"])]
    card += ["untrusted_source %s %s" % (PREFIX[s], why.replace(" ", "_"))
             for s, why in verdict["untrusted"].items()]
    if other is not None:
        card.append("runner_up %s" % label(other))
    lines = ["Not used to choose: %s" % why for why in verdict["untrusted"].values()]
    for name, source in sources.items():
        p, kind = PREFIX[name], _KIND[source.estimate]
        m, se = source.means(), source.standard_errors()
        if source.rows[chosen] is None:
            lines.append("Evidence from %s: %s is not rated there" % (name, label(chosen)))
            continue
        text = "%s %.4f (%s %.4f)" % (label(chosen), m[chosen], kind, se[chosen])
        card += ["%s_pauc %.6g" % (p, m[chosen]), "%s_pauc_se %.6g" % (p, se[chosen])]
        for fig in ("pauc_001", "eer", "min_dcf"):
            value = source.figure(chosen, fig)
            if np.isfinite(value):
                card.append("%s_%s %.6g" % (p, fig, value))
        if other is not None and source.rows[other] is not None:
            d, d_se = source.paired(chosen, other)
            card += ["runner_up_%s_pauc %.6g" % (p, m[other]),
                     "chosen_minus_runner_up_%s_pauc %.6g" % (p, d),
                     "chosen_minus_runner_up_%s_se %.6g" % (p, d_se)]
            text += "; runner-up %s %.4f, chosen minus it %+.4f +- %.4f" % (
                label(other), m[other], d, d_se)
        for b in cosine_baselines(labels):
            if b == chosen or source.rows[b] is None:
                continue
            d, d_se = source.paired(chosen, b)
            key = labels[b][0]
            card += ["%s_%s_pauc %.6g" % (key, p, m[b]),
                     "chosen_minus_%s_%s_pauc %.6g" % (key, p, d),
                     "chosen_minus_%s_%s_se %.6g" % (key, p, d_se)]
            text += "; %s %.4f, chosen minus it %+.4f +- %.4f" % (label(b), m[b], d, d_se)
        lines.append("Evidence from %s (%s%s): %s" % (
            name, source.trials, "; it rates" if name == rating.source else "; reported",
            text))
    reason = _reason(rating, chosen, verdict, label)
    lines.append("Why: " + reason)
    card.append("reason " + reason)
    return lines, card


def _reason(rating, chosen, verdict, label):
    """The sentence of system.txt's ``reason`` line."""
    means, best = verdict["means"], verdict["best"]
    vetoed = verdict["vetoed"]
    head = "rated on the %s" % rating.source
    if verdict["untrusted"]:
        head += " (not trusted: %s)" % ", ".join(verdict["untrusted"])
    if verdict["baselines"]:
        head += ("; a candidate other than a baseline (%s) is eligible only if it beats each "
                 "baseline there by more than its paired SE (%d of %d are not)"
                 % (", ".join(label(b) for b in verdict["baselines"]), len(vetoed),
                    int(rating.rated.sum())))
    what = "%s (%.4f)" % (label(chosen), means[chosen])
    if chosen == best:
        body = "%s has the best pAUC of the eligible candidates" % what
        if verdict["rule"] == "1se" and int(verdict["within"].sum()) > 1:
            body += " and is the simplest of the %d within one SE of it" % int(
                verdict["within"].sum())
    else:
        d, se = rating.paired(best, chosen)
        body = ("%s is the simplest of the %d candidates within one SE of the best eligible "
                "one, %s (%.4f): only %.4f +- %.4f better" % (
                    what, int(verdict["within"].sum()), label(best), means[best], d, se))
    tail = ""
    finite = [int(i) for i in np.argsort(-np.nan_to_num(means, nan=-np.inf), kind="stable")
              if int(i) != chosen and np.isfinite(means[i])]
    if finite and finite[0] in vetoed:
        b, d, se = vetoed[finite[0]]
        tail = ("; the best, %s, was not eligible: it beats %s by only %+.4f +- %.4f"
                % (label(finite[0]), label(b), d, se))
    return "%s: %s%s" % (head, body, tail)

