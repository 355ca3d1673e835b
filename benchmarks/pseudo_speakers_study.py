"""Pseudo-speakers from the unlabelled --adapt set (issue 34, item 1): which similarity, which
stopping rule, how to train and rate with them, how small an adaptation set may be.

Every choice is measured on TRAINING data with a domain shift (benchmarks/pseudo_speakers_data.py:
S1 ETRI's male training speakers -> its female training speakers, S2 the demo's synthetic
corpus with other seeds, S3 a TIMIT GE2E split by a derived property); the labels of the
adaptation set and of the in-domain trial half only MEASURE. The section ``final`` (not run by
default) scores the issue's ETRI public evaluation check once, for the chosen design only.

Sections (default: all but final):
  similarity  Q1+Q3: ARI / purity / count of average-linkage clusters under each similarity,
              at each stopping rule, at the best number of clusters (labels: a reference
              only) and after re-clustering with the PLDA re-estimated (Hyperion's iteration),
              and the downstream EER / pAUC of the PLDA trained with the pseudo-speakers
  use         Q4a: how to train with the pseudo-speakers (pooled, LDA too, blends, AS-norm)
  rating      Q4b: rating candidates on held-out pseudo-speaker trials vs true in-domain trials
  size        Q5: adaptation-set size
  cap         Q2: the cap on the clustered vectors (subset + assignment)
  final       the ETRI public-evaluation check of the chosen design (never used to choose)

Usage: nice -n 10 python benchmarks/pseudo_speakers_study.py [section ...] [--quick]
(about 20 min on the shared 2-core machine under load 6-9; --quick: one seed per scenario).
Results: benchmarks/RESULTS_pseudo_speakers.md.
"""

import os
import sys
import time

import numpy as np
from scipy.stats import spearmanr

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir))
sys.path.insert(0, HERE)

from pseudo_speakers_data import (ADAPT_SCALES, REAL, Scenario, copy_plda,  # noqa: E402
                                  etri_public_check, etri_sex_shift, figures, read_set,
                                  synthetic, timit_shift)
from pauc_backend.models.pseudo_speakers import (PseudoSpeakers, plda_similarity,  # noqa: E402
                                                 stopping_threshold)
from pseudo_speakers_systems import (DESIGN, ITERATE_FROM, RULES, SIMILARITIES,  # noqa: E402
                                     SWEEP, State, candidates, cluster_report, cohort_rows,
                                     cosine_scores, design_labels, design_row, heldout_scores,
                                     in_domain_pairs, plda_scores, pooled_plda, rate_on_folds,
                                     rule_name, Space, blend)


def scenarios(quick):
    s1 = [0] if quick else [0, 1, 2, 3, 4]
    s2 = [1] if quick else [1, 2, 3]
    s3 = [0] if quick else [0, 1]
    return ([("S1", lambda s=s: etri_sex_shift(s)) for s in s1]
            + [("S2", lambda s=s: synthetic(s)) for s in s2]
            + [("S3", lambda s=s: timit_shift(s)) for s in s3])


def fmt(f):
    return "%.2f / %.3f" % (f["eer"], f["pauc"])


def mean_of(rows, key):
    return float(np.mean([r[key] for r in rows]))


# -- sections ----------------------------------------------------------------------------------

def section_similarity(quick, state_cache):
    """Q1/Q2/Q3: each similarity x each stopping rule (+ the best count, labels only)."""
    print("\n## Similarity and stopping rule (average linkage; min size 2 for the PLDA)\n")
    print("| scenario | similarity | rule | threshold | clusters (>=2 / >=4) | ARI | purity | "
          "inv. purity | d' | PLDA pooled EER % / pAUC |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for tag, make in scenarios(quick):
        sc = make()
        st = state_cache.setdefault(sc.name, State(sc))
        base = st.baselines()
        st.base = base
        print("| %s | baselines | | | | | | | | %s |" % (sc.name, "; ".join(
            "%s %s" % (k, fmt(v)) for k, v in base.items())))
        rng = np.random.default_rng(7)
        for name in SIMILARITIES:
            sim, feats, S = st.similarity(name)
            tar, non = heldout_scores(sc, name)
            ind = in_domain_pairs(S, rng)
            for rule, corrected in RULES:
                try:
                    thr = stopping_threshold(tar, non, rule, ind if corrected else None)
                except ValueError as err:
                    print("| %s | %s | %s | %s |" % (sc.name, name, rule_name(rule, corrected),
                                                    err))
                    continue
                model = PseudoSpeakers(threshold=thr, min_size=1).fit(feats, sim)
                rep = cluster_report(model, sc.yA)
                plda = pooled_plda(st.be, sc.ytr, model.labels_)
                down = st.eval_plda(plda)
                summary.setdefault((tag, name, rule_name(rule, corrected)), []).append(
                    dict(rep, **down, gain=down["pauc"] - base["PLDA-adp"]["pauc"],
                         oracle_gap=(down["eer"] - base["oracle PLDA (true labels)"]["eer"])))
                print("| %s | %s | %s | %.3f | %d / %d | %.2f | %.2f | %.2f | %.1f | %s |" % (
                    sc.name, name, rule_name(rule, corrected), thr, rep["k"], rep["k4"],
                    rep["ari"], rep["purity"], rep["inverse"], rep["sep"], fmt(down)), flush=True)
            # reference (labels used): the best number of clusters for the pooled PLDA
            best = None
            true_k = np.unique(sc.yA).size
            for mult in SWEEP:
                model = PseudoSpeakers(num_clusters=int(round(mult * true_k)), min_size=1).fit(
                    feats, sim)
                down = st.eval_plda(pooled_plda(st.be, sc.ytr, model.labels_))
                if best is None or down["pauc"] > best[1]["pauc"]:
                    best = (mult, down, cluster_report(model, sc.yA))
            mult, down, rep = best
            summary.setdefault((tag, name, "best count (labels)"), []).append(
                dict(rep, **down, gain=down["pauc"] - base["PLDA-adp"]["pauc"],
                     oracle_gap=(down["eer"] - base["oracle PLDA (true labels)"]["eer"])))
            print("| %s | %s | best of %s x true count (labels) | x%g | %d / %d | %.2f | %.2f | "
                  "%.2f | %.1f | %s |" % (sc.name, name, "/".join("%g" % m for m in SWEEP),
                                         mult, rep["k"], rep["k4"], rep["ari"], rep["purity"],
                                         rep["inverse"], rep["sep"], fmt(down)), flush=True)
        # Hyperion's iteration: PLDA re-estimated with the pseudo-speakers, re-cluster
        for start in ITERATE_FROM:
            sim, feats, S = st.similarity(start[0])
            tar, non = heldout_scores(sc, start[0])
            thr = stopping_threshold(tar, non, start[1], in_domain_pairs(S, rng))
            labels = PseudoSpeakers(threshold=thr, min_size=1).fit(feats, sim).labels_
            count = int(labels.max()) + 1
            for step in range(2):
                plda = pooled_plda(st.be, sc.ytr, labels)
                for how in ("same count", "LLR 0"):
                    kw = ({"num_clusters": count} if how == "same count" else {"threshold": 0.0})
                    model = PseudoSpeakers(min_size=1, **kw).fit(st.be.ZA, plda_similarity(plda))
                    rep = cluster_report(model, sc.yA)
                    down = st.eval_plda(pooled_plda(st.be, sc.ytr, model.labels_))
                    key = "iterated x%d from %s, %s" % (step + 1, start[0], how)
                    summary.setdefault((tag, "pooled PLDA", key), []).append(
                        dict(rep, **down, gain=down["pauc"] - base["PLDA-adp"]["pauc"],
                             oracle_gap=(down["eer"]
                                         - base["oracle PLDA (true labels)"]["eer"])))
                    print("| %s | pooled PLDA | %s | | %d / %d | %.2f | %.2f | %.2f | %.1f | %s |"
                          % (sc.name, key, rep["k"], rep["k4"], rep["ari"], rep["purity"],
                             rep["inverse"], rep["sep"], fmt(down)), flush=True)
                    if how == "same count":
                        next_labels = model.labels_
                labels = next_labels
    print("\n### Means over seeds\n")
    print("| scenario | similarity | rule | clusters >=2 | ARI | purity | PLDA pooled EER % | "
          "pAUC | pAUC - PLDA-adp's | EER - oracle's |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (tag, name, rule), rows in summary.items():
        print("| %s | %s | %s | %.0f | %.2f | %.2f | %.2f | %.3f | %+.3f | %+.2f |" % (
            tag, name, rule, mean_of(rows, "k"), mean_of(rows, "ari"), mean_of(rows, "purity"),
            mean_of(rows, "eer"), mean_of(rows, "pauc"), mean_of(rows, "gain"),
            mean_of(rows, "oracle_gap")))


def section_use(quick, cache):
    """Q4a: how to train with the pseudo-speakers."""
    print("\n## Training with the pseudo-speakers (design %s)\n" % DESIGN)
    print("EER % / pAUC[0,0.01] on the labelled in-domain trials. Blend w: Hyperion's "
          "weighted_avg_model, covariances w x in-domain-only PLDA + (1 - w) x PLDA-adp. "
          "AS-norm: top 100 of a cohort of <= 1000 seeded adaptation vectors.\n")
    rows = {}
    runs = []
    for tag, make in scenarios(quick):
        runs.append((tag, make, None))
        if tag == "S1":
            runs.append(("S1 (LDA none)", make, 0))
    names = None
    for tag, make, lda in runs:
        sc = make()
        key = sc.name + ("" if lda is None else " LDA %s" % lda)
        st = cache.get(key) or cache.setdefault(key, State(sc, lda))
        be, tr = st.be, sc.trials
        labels, model = design_labels(st)
        truth = np.unique(sc.yA, return_inverse=True)[1]
        rng = np.random.default_rng(11)
        cohort = cohort_rows(labels, rng, "all")
        base = st.baselines()
        out = {"PLDA-adp": base["PLDA-adp"], "cosine (centred)": base["cosine (centred)"],
               "cosine (centred) + AS-norm": figures(cosine_scores(
                   tr.enroll - be.mean, tr.test - be.mean, sc.A[cohort] - be.mean), st.target)}
        for ms in (2, 4, 8):
            out["pooled, min size %d" % ms] = st.eval_plda(pooled_plda(be, sc.ytr, labels, ms))
        per_cluster = cohort_rows(labels, np.random.default_rng(11), "per cluster")
        out["training LDA, pooled + AS-norm (cohort: one vector per pseudo-speaker)"] = figures(
            plda_scores(pooled_plda(be, sc.ytr, labels), st.Ze, tr.counts, st.Zt,
                        be.ZA[per_cluster]), st.target)
        for space_name, reest in (("training LDA", False), ("LDA re-estimated", True)):
            for who, lab in (("pseudo", labels), ("true labels", truth)):
                sp = Space(be, sc, lab, reest)
                Ze, Zt, Zc = sp.prep(tr.enroll), sp.prep(tr.test), sp.ZA[cohort]
                models = {"PLDA-adp": sp.adapted, "pooled": sp.pooled,
                          "pooled, then adapt-plda": copy_plda(sp.pooled).adapt(
                              sp.ZA, 1.0, *ADAPT_SCALES)}
                if sp.indomain is not None:
                    for w in (0.5, 0.75, 1.0):
                        models["blend w=%g" % w] = blend(sp.adapted, sp.indomain, w, w)
                if who == "true labels":
                    models = {k: v for k, v in models.items()
                              if k in ("pooled", "blend w=0.75")}
                for name, plda in models.items():
                    if who == "pseudo" and name == "PLDA-adp" and not reest:
                        continue
                    for norm in (None, Zc):
                        label = "%s, %s%s%s" % (space_name, name, " + AS-norm" if norm is not
                                                None else "", "" if who == "pseudo"
                                                else " (ORACLE: true labels)")
                        out[label] = figures(plda_scores(plda, Ze, tr.counts, Zt, norm),
                                             st.target)
        names = names or list(out)
        rows.setdefault(tag, []).append(out)
        print("%s: %d clusters (>= 2) of %d vectors" % (key, model.n_clusters_, labels.size),
              flush=True)
    print("\n| system | " + " | ".join("%s (%d)" % (t, len(r)) for t, r in rows.items()) + " |")
    print("|---|" + "---|" * len(rows))
    for name in names:
        cells = []
        for t, r in rows.items():
            have = [o[name] for o in r if name in o]
            cells.append("%.2f / %.3f" % (mean_of(have, "eer"), mean_of(have, "pauc"))
                         if have else "")
        print("| %s | %s |" % (name, " | ".join(cells)))


def section_rating(quick, cache):
    """Q4b: does rating on pseudo-speaker folds rank the candidates as the true in-domain
    trials do? Spearman over candidates (pAUC), the regret of the pseudo choice, and the
    circularity bias (clusters under cosine vs under PLDA-adp)."""
    print("\n## Rating on pseudo-speaker folds vs the true in-domain trials\n")
    print("Spearman rho over the %s candidates of the pAUC[0,0.01] ranking; regret = true pAUC "
          "of the best candidate minus true pAUC of the pseudo-rated winner.\n" % "13")
    print("| scenario | clusters by | min size | pseudo-speakers | rho vs labelled trials | "
          "rho vs true-label folds | pseudo winner | its true EER % / pAUC | true winner | regret |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    bias = {}
    agg = {}
    for tag, make in scenarios(quick):
        sc = make()
        st = cache.get(sc.name) or cache.setdefault(sc.name, State(sc))
        be = st.be
        tr = sc.trials
        truth_labels = np.unique(sc.yA, return_inverse=True)[1]
        for sim, design in (("cos_c", dict(DESIGN, similarity="cos_c", iterate=0)),
                            ("plda_adp", dict(DESIGN, similarity="plda_adp", iterate=0)),
                            ("design", DESIGN)):
            labels, model = design_labels(st, design)
            rng = np.random.default_rng(5)
            cands = candidates(be, sc, labels, cohort_rows(labels, rng, "all"))
            true = {name: figures(score(tr.enroll, tr.counts, tr.test), st.target)
                    for name, score in cands.items()}
            folds_true = rate_on_folds(be, sc, truth_labels, 4, np.random.default_rng(3))
            for min_size in (2, 4, 8):
                pseudo = rate_on_folds(be, sc, labels, min_size, np.random.default_rng(3))
                if pseudo is None:
                    print("| %s | %s | %d | too few |" % (sc.name, sim, min_size))
                    continue
                names = list(true)
                p = np.array([pseudo[k]["pauc"] for k in names])
                t = np.array([true[k]["pauc"] for k in names])
                f = np.array([folds_true[k]["pauc"] for k in names])
                rho = spearmanr(p, t)[0]
                rho_f = spearmanr(p, f)[0]
                win, best = names[int(np.argmax(p))], names[int(np.argmax(t))]
                regret = t.max() - true[win]["pauc"]
                used = int(np.sum(np.bincount(labels[labels >= 0]) >= min_size))
                agg.setdefault((tag, sim, min_size), []).append((rho, rho_f, regret))
                print("| %s | %s | %d | %d | %.2f | %.2f | %s | %s | %s | %.3f |" % (
                    sc.name, sim, min_size, used, rho, rho_f, win, fmt(true[win]), best,
                    regret), flush=True)
                if min_size == 4:
                    offset = (p - t) - np.mean(p - t)
                    for name, o in zip(names, offset):
                        bias.setdefault((tag, sim, name), []).append(o)
    print("\n### Means over seeds\n")
    print("| scenario | clusters by | min size | rho vs labelled trials | rho vs true-label folds "
          "| regret |")
    print("|---|---|---|---|---|---|")
    for (tag, sim, ms), v in agg.items():
        v = np.array(v)
        print("| %s | %s | %d | %.2f | %.2f | %.3f |" % (tag, sim, ms, *v.mean(axis=0)))
    print("\n### Circularity: pseudo pAUC - true pAUC, relative to the candidates' mean "
          "(min size 4)\n")
    names = sorted({k[2] for k in bias})
    tags = sorted({(k[0], k[1]) for k in bias})
    print("| candidate | " + " | ".join("%s, clusters by %s" % t for t in tags) + " |")
    print("|---|" + "---|" * len(tags))
    for name in names:
        print("| %s | %s |" % (name, " | ".join("%+.3f" % np.mean(bias[(t, s, name)])
                                                 for t, s in tags)))


def section_size(quick, cache):
    """Q5: how small may the adaptation set be? S1 with fewer vectors per speaker / fewer
    speakers in its adaptation half."""
    print("\n## Adaptation-set size (S1, design %s)\n" % DESIGN)
    names = ("PLDA-adp", "pooled", "LDA re-est., pooled + AS-norm",
             "LDA re-est., blend 0.75 + AS-norm", "oracle PLDA (true labels)")
    print("EER %% / pAUC, means over the seeds (a blank: that system could not be trained)."
          "\n\n| adaptation set | vectors | seeds | clusters >= 2 | %s |" % " | ".join(names))
    print("|---|---|---|---|" + "---|" * len(names))
    seeds = [0] if quick else [0, 1, 2]
    for speakers, utts in ((25, 2), (25, 4), (25, 8), (25, 16), (25, 32), (25, None),
                           (6, None), (12, None)):
        res = []
        for seed in seeds:
            sc = etri_sex_shift(seed, adapt_utts=utts, adapt_speakers=speakers)
            try:
                out, model = design_row(State(sc))
            except (ValueError, np.linalg.LinAlgError) as err:
                res.append(err)
                continue
            res.append((sc.A.shape[0], model.n_clusters_, out))
        ok = [r for r in res if not isinstance(r, Exception)]
        label = "%d speakers x %s vectors" % (speakers, utts or "all (100)")
        if not ok:
            print("| %s | | %d | %s |" % (label, len(seeds), res[0]))
            continue
        cells = []
        for name in names:
            have = [r[2][name] for r in ok if name in r[2]]
            cells.append("%.2f / %.3f%s" % (mean_of(have, "eer"), mean_of(have, "pauc"),
                                            "" if len(have) == len(ok) else
                                            " (%d seeds)" % len(have)) if have else "")
        print("| %s | %d | %d | %.0f | %s |" % (label, ok[0][0], len(ok),
                                                np.mean([r[1] for r in ok]), " | ".join(cells)),
              flush=True)


def section_cap(quick, cache):
    """Q2: the cap on the clustered vectors: a seeded subset of N clustered, the rest assigned
    to the cluster of highest average similarity (or left out below the threshold)."""
    print("\n## Cap on the clustered vectors (design %s)\n" % DESIGN)
    print("| set | N (cap) | clustered | clusters | ARI | purity | left out | fit s | "
          "pooled PLDA EER % / pAUC |")
    print("|---|---|---|---|---|---|---|---|---|")
    seeds = [0] if quick else [0, 1, 2]
    for seed in seeds:
        sc = etri_sex_shift(seed)
        st = cache.get(sc.name) or cache.setdefault(sc.name, State(sc))
        for cap in (250, 500, 1000, 2500):
            t0 = time.time()
            labels, model = design_labels(st, cap=cap)
            took = time.time() - t0
            rep = cluster_report(model, sc.yA)
            down = st.eval_plda(pooled_plda(st.be, sc.ytr, labels))
            print("| %s | %d | %d | %d | %.2f | %.2f | %.2f | %.1f | %s |" % (
                sc.name, cap, model.subset_.size, rep["k"], rep["ari"], rep["purity"],
                1 - rep["clustered"], took, fmt(down)), flush=True)
    # the done-when check's adaptation set: all 50 female TRAINING speakers (labels measure)
    _, X, y = read_set(os.path.join(REAL, "etri", "train"))
    sex = np.array([v[3] for v in y])
    dummy = etri_sex_shift(0).trials
    sc = Scenario("ETRI female training set", X[sex == "M"], y[sex == "M"], X[sex == "F"],
                  y[sex == "F"], dummy, 100)
    st = State(sc)
    for cap in ((1000, 2500, 5000) if not quick else (1000, 5000)):
        t0 = time.time()
        labels, model = design_labels(st, cap=cap)
        rep = cluster_report(model, sc.yA)
        print("| %s | %d | %d | %d | %.2f | %.2f | %.2f | %.1f | (no trials) |" % (
            sc.name, cap, model.subset_.size, rep["k"], rep["ari"], rep["purity"],
            1 - rep["clustered"], time.time() - t0), flush=True)


def section_final(quick, cache):
    """The issue's done-when set, scored ONCE for the chosen design (chose nothing): the
    pseudo-speakers of all 50 female training speakers' vectors, every candidate trained with
    them, the candidate the pseudo-speaker folds rate best (min size 4, 2 folds), and the
    evaluation figures of all of them."""
    print("\n## FINAL CHECK (ETRI public evaluation, female; chose nothing)\n")
    print("Targets (issue 34): EER <= 6.28 %% with pAUC[0,0.01] >= 0.586 (PLDA-adp's).\n")
    sc = etri_public_check()
    for lda in (100, 0):
        st = State(sc, lda)
        labels, model = design_labels(st)
        rep = cluster_report(model, sc.yA)
        cohort = cohort_rows(labels, np.random.default_rng(5), "all")
        cands = candidates(st.be, sc, labels, cohort)
        pseudo = rate_on_folds(st.be, sc, labels, 4, np.random.default_rng(3))
        tr = sc.trials
        print("LDA %s: %d pseudo-speakers (>= 2 vectors) of %d vectors, d' %.1f; measured "
              "against the female training labels: ARI %.2f, purity %.2f\n"
              % (lda or "none", model.n_clusters_, sc.A.shape[0], model.separation_,
                 rep["ari"], rep["purity"]))
        print("| system | pseudo-fold pAUC (rating) | EER % | pAUC[0,0.01] | minDCF(0.01) |")
        print("|---|---|---|---|---|")
        best = max(pseudo, key=lambda k: pseudo[k]["pauc"])
        for name, score in cands.items():
            f = figures(score(tr.enroll, tr.counts, tr.test), st.target)
            print("| %s%s | %.3f | %.2f | %.3f | %.3f |" % (
                name, " (rated best)" if name == best else "", pseudo[name]["pauc"], f["eer"],
                f["pauc"], f["mindcf"]))
        oracle = st.baselines()["oracle PLDA (true labels)"]
        print("| oracle PLDA (female training labels) | | %.2f | %.3f | %.3f |\n"
              % (oracle["eer"], oracle["pauc"], oracle["mindcf"]))


def main(argv):
    quick = "--quick" in argv
    sections = ([a for a in argv if not a.startswith("--")]
                or ["similarity", "use", "rating", "size", "cap"])
    unknown = [a for a in sections if "section_" + a not in globals()]
    if unknown:
        sys.exit("unknown section(s) %s; see the module doc" % ", ".join(unknown))
    print("# pseudo-speakers study, %s, load %s" % (
        time.strftime("%Y-%m-%d %H:%M"), os.getloadavg()))
    cache = {}
    for name in sections:
        t0 = time.time()
        globals()["section_" + name](quick, cache)
        print("\n(section %s: %.0f s, load %s)" % (name, time.time() - t0, os.getloadavg()))


if __name__ == "__main__":
    main(sys.argv[1:])
