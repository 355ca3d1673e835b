"""The systems of benchmarks/pseudo_speakers_study.py (issue 34): the similarities clustered,
the training speakers' held-out scores for the stopping rule, the PLDAs trained with
pseudo-speakers (pooled, Hyperion's covariance blend, an LDA re-estimated), AS-norm with an
in-domain cohort, and the rating of candidates on held-out trials among pseudo-speakers."""

import numpy as np
from sklearn.metrics import adjusted_rand_score

from pseudo_speakers_data import (ADAPT_SCALES, Backend, copy_plda, cosine_grid, figures,
                                  lnorm, plda_grid)
from pauc_backend.models.lda import LDA
from pauc_backend.models.plda import PLDA
from pauc_backend.models.pseudo_speakers import (PseudoSpeakers, blend_plda,
                                                 cosine_similarity, plda_similarity,
                                                 stopping_threshold)
from pauc_backend.models.score_norm import cohort_statistics, normalize_scores

SIMILARITIES = ("cos_c", "cos_lda", "plda", "plda_adp")
RULES = (("eer", False), ("eer", True), ("equal_density", False), ("equal_density", True))
FOLDS = 4
MAX_PAIRS = 400000
SWEEP = (0.5, 1, 2, 4, 8)
ITERATE_FROM = (("plda_adp", "eer"), ("cos_c", "eer"))


def rule_name(rule, corrected):
    return rule + ("+in-domain" if corrected else "")


# -- similarities and the training speakers' held-out scores -----------------------------------

def similarity_of(name, be):
    """(similarity callable, the adaptation vectors it takes) under back-end ``be``."""
    if name == "cos_c":
        return cosine_similarity(be.mean), be.A_raw
    if name == "cos_lda":
        return cosine_similarity(None), be.ZA
    if name == "plda":
        return plda_similarity(be.plda), be.ZA
    if name == "plda_adp":
        return plda_similarity(be.plda_adapt), be.ZA
    raise ValueError(name)


def make_backend(Xtr, ytr, A, lda_dim):
    be = Backend(Xtr, ytr, A, lda_dim)
    be.A_raw = A
    return be


def upper_pairs(S, labels, rng, max_pairs=MAX_PAIRS):
    """(target, non-target) scores of the upper triangle of S (a seeded sample of at most
    ``max_pairs`` non-targets)."""
    iu = np.triu_indices(S.shape[0], 1)
    same = labels[iu[0]] == labels[iu[1]]
    values = S[iu]
    tar, non = values[same], values[~same]
    if non.size > max_pairs:
        non = non[rng.choice(non.size, max_pairs, replace=False)]
    return tar, non


def heldout_scores(sc, name, seed=0):
    """Target and non-target scores among held-out TRAINING speakers: each of FOLDS folds of
    speakers plays the adaptation set of a back-end trained on the others (centred on its own
    mean, PLDA adapted to it), as the in-domain set will be."""
    rng = np.random.default_rng(seed + 101)
    speakers = rng.permutation(np.unique(sc.ytr))
    tars, nons = [], []
    for k in range(FOLDS):
        held = np.isin(sc.ytr, speakers[k::FOLDS])
        lda_dim = min(sc.lda_dim, np.unique(sc.ytr[~held]).size - 1) if sc.lda_dim else 0
        be = make_backend(sc.Xtr[~held], sc.ytr[~held], sc.Xtr[held], lda_dim)
        sim, feats = similarity_of(name, be)
        t, n = upper_pairs(sim(feats, feats), sc.ytr[held], rng, MAX_PAIRS // FOLDS)
        tars.append(t)
        nons.append(n)
    return np.concatenate(tars), np.concatenate(nons)


def in_domain_pairs(S, rng, max_pairs=MAX_PAIRS):
    values = S[np.triu_indices(S.shape[0], 1)]
    return values if values.size <= max_pairs else values[rng.choice(values.size, max_pairs,
                                                                     replace=False)]


# -- clustering quality -------------------------------------------------------------------------

def purity(labels, truth):
    """(purity of the clusters, fraction of each true speaker in its largest cluster)."""
    keep = labels >= 0
    lab, tru = labels[keep], truth[keep]
    _, t = np.unique(tru, return_inverse=True)
    table = np.zeros((lab.max() + 1, t.max() + 1))
    np.add.at(table, (lab, t), 1)
    return table.max(axis=1).sum() / keep.sum(), table.max(axis=0).sum() / keep.sum()


def cluster_report(model, truth):
    p, inv = purity(model.labels_, truth)
    return {"k": model.n_clusters_, "k4": int(np.sum(model.sizes_ >= 4)),
            "ari": adjusted_rand_score(truth, np.where(model.labels_ >= 0, model.labels_,
                                                       -1 - np.arange(truth.size))),
            "purity": p, "inverse": inv, "clustered": model.clustered_fraction_,
            "sep": model.separation_}


# -- training with pseudo-speakers ---------------------------------------------------------------

def pooled_plda(be, ytr, labels, min_size=2):
    """PLDA on the training vectors (their labels) + the adaptation vectors (pseudo-labels of
    clusters of >= min_size), each set centred on its own mean, in the training LDA space."""
    keep = labels >= 0
    counts = np.bincount(labels[keep])
    keep &= counts[np.maximum(labels, 0)] >= min_size
    y = np.concatenate([ytr.astype(str), np.char.add("pseudo", labels[keep].astype(str))])
    return PLDA().fit(np.vstack([be.Ztr, be.ZA[keep]]), y)


def blend(plda_out, plda_in, w_within, w_between):
    """Hyperion's weighted_avg_model with one weight (models.pseudo_speakers.blend_plda)."""
    assert w_within == w_between
    return blend_plda(plda_out, plda_in, w_within)


# -- the scenario state -----------------------------------------------------------------------

class State:
    """One scenario: its back-end, the trial features and the baselines' figures."""

    def __init__(self, sc, lda_dim=None):
        self.sc = sc
        self.lda_dim = sc.lda_dim if lda_dim is None else lda_dim
        self.be = make_backend(sc.Xtr, sc.ytr, sc.A, self.lda_dim)
        tr = sc.trials
        self.target = tr.target
        self.Ze, self.Zt = self.be.prep(tr.enroll), self.be.prep(tr.test)
        self.sims = {}

    def similarity(self, name):
        if name not in self.sims:
            sim, feats = similarity_of(name, self.be)
            self.sims[name] = (sim, feats, sim(feats, feats))
        return self.sims[name]

    def eval_plda(self, plda):
        """Figures of a PLDA of the training LDA space on the labelled in-domain trials."""
        return figures(plda_grid(plda, self.Ze, self.sc.trials.counts, self.Zt), self.target)

    def baselines(self):
        tr, be = self.sc.trials, self.be
        out = {"cosine (raw)": figures(cosine_grid(tr.enroll, tr.test), self.target),
               "cosine (centred)": figures(cosine_grid(tr.enroll - be.mean, tr.test - be.mean),
                                           self.target),
               "PLDA (train mean)": figures(plda_grid(be.plda, be.prep(tr.enroll, be.train_mean),
                                                      tr.counts,
                                                      be.prep(tr.test, be.train_mean)),
                                            self.target),
               "PLDA (in-domain mean)": self.eval_plda(be.plda),
               "PLDA-adp": self.eval_plda(be.plda_adapt)}
        oracle = pooled_plda(be, self.sc.ytr, np.unique(self.sc.yA, return_inverse=True)[1])
        out["oracle PLDA (true labels)"] = self.eval_plda(oracle)
        return out


# -- the chosen design (set from the similarity section's means) -------------------------------

DESIGN = {"similarity": "cos_c", "rule": "eer", "in_domain": True, "iterate": 1,
          "min_size": 2}


def design_labels(st, design=None, cap=None):
    """Pseudo-speaker labels of the adaptation set under ``design`` (and the last model):
    average linkage under the similarity, cut at the stopping rule's threshold; then
    ``iterate`` times: the PLDA re-estimated from the training labels + these pseudo-speakers
    (pooled), and the set re-clustered under its LLR into as many clusters (Hyperion's SRE19
    back-end, with the count of the first cut)."""
    design = DESIGN if design is None else design
    sc = st.sc
    sim, feats, S = st.similarity(design["similarity"])
    key = ("thr", design["similarity"], design["rule"], design["in_domain"])
    if key not in st.sims:
        tar, non = heldout_scores(sc, design["similarity"])
        ind = in_domain_pairs(S, np.random.default_rng(7)) if design["in_domain"] else None
        st.sims[key] = stopping_threshold(tar, non, design["rule"], ind)
    kw = {} if cap is None else {"max_vectors": cap}
    model = PseudoSpeakers(threshold=st.sims[key], min_size=1, **kw).fit(feats, sim)
    for _ in range(design.get("iterate", 0)):
        count = int(model.labels_.max()) + 1
        plda = pooled_plda(st.be, sc.ytr, model.labels_)
        model = PseudoSpeakers(num_clusters=count, min_size=1, **kw).fit(
            st.be.ZA, plda_similarity(plda))
    return model.labels_, model


def asnorm_grid(raw, enroll_cohort, cohort_test, top_n=100):
    """AS-norm (models.score_norm) of a (models x tests) grid from the cohort grids."""
    top = min(top_n, enroll_cohort.shape[1])
    em, es = cohort_statistics(enroll_cohort, top)
    tm, ts = cohort_statistics(cohort_test.T, top)
    return normalize_scores(raw, "as", em[:, None], es[:, None], tm[None, :], ts[None, :])


def plda_scores(plda, Ze, counts, Zt, cohort=None):
    grid = plda_grid(plda, Ze, counts, Zt)
    if cohort is None:
        return grid
    ec = plda_grid(plda, Ze, counts, cohort)
    ct = plda_grid(plda, cohort, np.ones(cohort.shape[0]), Zt)
    return asnorm_grid(grid, ec, ct)


def cosine_scores(E, T, cohort=None):
    grid = cosine_grid(E, T)
    if cohort is None:
        return grid
    return asnorm_grid(grid, cosine_grid(E, cohort), cosine_grid(cohort, T))


def cohort_rows(labels, rng, how):
    """Rows of the adaptation set forming the AS-norm cohort: a seeded subset of <= 1000
    vectors ("all"), or one seeded vector per pseudo-speaker ("per cluster")."""
    n = labels.size
    if how == "all":
        return np.sort(rng.choice(n, min(n, 1000), replace=False))
    order = rng.permutation(n)
    lab = labels[order]
    keep = lab >= 0
    _, first = np.unique(lab[keep], return_index=True)
    return np.sort(order[keep][first])


class Space:
    """A projection W (training LDA, or an LDA re-estimated on training + pseudo-speaker
    labels): the training vectors centred on their mean, the in-domain ones on theirs, then
    W, then length-normalised; the PLDAs of that space."""

    def __init__(self, be, sc, labels, reestimate, min_size=2):
        keep = labels >= 0
        counts = np.bincount(labels[keep]) if keep.any() else np.zeros(0, int)
        keep &= counts[np.maximum(labels, 0)] >= min_size
        self.be, self.keep = be, keep
        plab = np.char.add("pseudo", labels[keep].astype(str))
        y = np.concatenate([sc.ytr.astype(str), plab])
        if reestimate:
            raw = np.vstack([sc.Xtr - be.train_mean, sc.A - be.mean])
            rows = np.r_[np.arange(sc.Xtr.shape[0]), sc.Xtr.shape[0] + np.flatnonzero(keep)]
            dim = min(be.W.shape[0], np.unique(y).size - 1)
            self.W = LDA(dim=dim).fit(raw[rows].astype(np.float32), y).affine_matrix_[
                :, :-1].astype(np.float64)
            self.Ztr = lnorm((sc.Xtr - be.train_mean) @ self.W.T)
            self.ZA = lnorm((sc.A - be.mean) @ self.W.T)
            self.male = PLDA().fit(self.Ztr, sc.ytr)
            self.adapted = copy_plda(self.male).adapt(self.ZA, 1.0, *ADAPT_SCALES)
        else:
            self.W, self.Ztr, self.ZA = be.W, be.Ztr, be.ZA
            self.male, self.adapted = be.plda, be.plda_adapt
        self.pooled = PLDA().fit(np.vstack([self.Ztr, self.ZA[keep]]), y)
        try:
            self.indomain = PLDA().fit(self.ZA[keep], labels[keep])
        except ValueError:
            self.indomain = None

    def prep(self, X):
        return lnorm((X - self.be.mean) @ self.W.T)


# -- rating on pseudo-speaker folds -------------------------------------------------------------

def candidates(be, sc, train_labels, cohort):
    """{name: scorer(E raw means, counts, T raw) -> (models x tests) grid}: the systems rated.
    ``train_labels``: pseudo-labels of the adaptation vectors the pseudo-speaker systems may
    use (-1: not); ``cohort``: AS-norm cohort rows of the adaptation set."""
    pooled = pooled_plda(be, sc.ytr, train_labels)
    sp = Space(be, sc, train_labels, True)
    blended = (blend(sp.adapted, sp.indomain, 0.75, 0.75) if sp.indomain is not None
               else sp.pooled)
    Zc, Wc = be.ZA[cohort], sp.ZA[cohort]
    Ac = be.A_raw[cohort] - be.mean
    out = {
        "cosine (raw)": lambda E, n, T: cosine_grid(E, T),
        "cosine (centred)": lambda E, n, T: cosine_grid(E - be.mean, T - be.mean),
        "cosine (centred) + AS-norm": lambda E, n, T: cosine_scores(E - be.mean, T - be.mean,
                                                                   Ac),
        "cosine (LDA)": lambda E, n, T: cosine_grid(be.prep(E), be.prep(T)),
        "PLDA (train mean)": lambda E, n, T: plda_grid(be.plda, be.prep(E, be.train_mean), n,
                                                       be.prep(T, be.train_mean)),
        "PLDA (in-domain mean)": lambda E, n, T: plda_grid(be.plda, be.prep(E), n, be.prep(T)),
        "PLDA-adp": lambda E, n, T: plda_grid(be.plda_adapt, be.prep(E), n, be.prep(T)),
        "PLDA-adp + AS-norm": lambda E, n, T: plda_scores(be.plda_adapt, be.prep(E), n,
                                                          be.prep(T), Zc),
        "pooled PLDA": lambda E, n, T: plda_grid(pooled, be.prep(E), n, be.prep(T)),
        "LDA re-est., pooled PLDA": lambda E, n, T: plda_grid(sp.pooled, sp.prep(E), n,
                                                              sp.prep(T)),
        "LDA re-est., pooled PLDA + AS-norm": lambda E, n, T: plda_scores(
            sp.pooled, sp.prep(E), n, sp.prep(T), Wc),
        "LDA re-est., blend 0.75": lambda E, n, T: plda_grid(blended, sp.prep(E), n,
                                                             sp.prep(T)),
        "LDA re-est., blend 0.75 + AS-norm": lambda E, n, T: plda_scores(
            blended, sp.prep(E), n, sp.prep(T), Wc),
    }
    return out


def fold_trials(A, labels, members, rng, max_enroll=3):
    """Trials among the pseudo-speakers ``members``: each enrolled by the mean of
    min(max_enroll, size - 1) of its vectors, tested by the others; every model x every test."""
    enroll, counts, elab, test_rows = [], [], [], []
    for c in members:
        rows = rng.permutation(np.flatnonzero(labels == c))
        k = min(max_enroll, rows.size - 1)
        enroll.append(A[rows[:k]].mean(axis=0))
        counts.append(k)
        elab.append(c)
        test_rows.extend(rows[k:])
    test_rows = np.sort(np.asarray(test_rows))
    return (np.array(enroll), np.array(counts), np.array(elab), A[test_rows],
            labels[test_rows])


def rate_on_folds(be, sc, labels, min_size, rng, num_folds=2):
    """pAUC / EER of every candidate on held-out trials among pseudo-speakers of >= min_size
    vectors, in speaker-disjoint folds: the pooled PLDA of a fold never saw its speakers."""
    counts = np.bincount(labels[labels >= 0])
    usable = rng.permutation(np.flatnonzero(counts >= min_size))
    if usable.size < 2 * num_folds:
        return None
    grids = {}
    for k in range(num_folds):
        held = usable[k::num_folds]
        train = np.where(np.isin(labels, held), -1, labels)
        cohort = cohort_rows(train, rng, "all")
        cohort = cohort[train[cohort] >= 0] if np.any(train[cohort] >= 0) else cohort
        E, n, el, T, tl = fold_trials(be.A_raw, labels, held, rng)
        target = el[:, None] == tl[None, :]
        for name, score in candidates(be, sc, train, cohort).items():
            g = score(E, n, T)
            tar, non = grids.setdefault(name, ([], []))
            tar.append(g[target])
            non.append(g[~target])
    return {name: figures_of(np.concatenate(t), np.concatenate(nn))
            for name, (t, nn) in grids.items()}


def figures_of(tar, non):
    grid = np.concatenate([tar, non])[None, :]
    mask = np.zeros(grid.shape, dtype=bool)
    mask[0, :tar.size] = True
    return figures(grid, mask)


def design_row(st):
    """(figures of the baselines and of the design's systems, the clustering) of one state;
    a system that cannot be trained is left out."""
    labels, model = design_labels(st)
    base = st.baselines()
    sc, tr = st.sc, st.sc.trials
    out = {"PLDA-adp": base["PLDA-adp"],
           "pooled": st.eval_plda(pooled_plda(st.be, sc.ytr, labels, DESIGN["min_size"]))}
    try:
        sp = Space(st.be, sc, labels, True)
        cohort = sp.ZA[cohort_rows(labels, np.random.default_rng(11), "all")]
        Ze, Zt = sp.prep(tr.enroll), sp.prep(tr.test)
        out["LDA re-est., pooled + AS-norm"] = figures(
            plda_scores(sp.pooled, Ze, tr.counts, Zt, cohort), st.target)
        if sp.indomain is not None:
            out["LDA re-est., blend 0.75 + AS-norm"] = figures(plda_scores(
                blend(sp.adapted, sp.indomain, 0.75, 0.75), Ze, tr.counts, Zt, cohort),
                st.target)
    except (ValueError, np.linalg.LinAlgError):
        pass
    out["oracle PLDA (true labels)"] = base["oracle PLDA (true labels)"]
    return out, model
