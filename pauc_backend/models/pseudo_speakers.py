"""Pseudo-speakers: average-linkage clustering of an unlabelled in-domain set (numpy + scipy).

What it mirrors. Hyperion's SRE19 back-end (``egs/sre19-cmn2/v1/steps_be/train-tel-be-v2.py``)
clusters the unlabelled in-domain x-vectors by agglomerative clustering with average linkage
on PLDA log-likelihood ratios (``hyperion.clustering.AHC(method='average', metric='llr')``)
and re-estimates its PLDA with the clusters as speakers; Kaldi's ``egs/sre16/v2/run.sh`` (stage
8) notes that a clustering-based adaptation "tends to work better" than ``ivector-adapt-plda``
but ships none. Hyperion cuts the tree at a number of clusters set by hand
(``--num-spks-unlab``); here the cut is a similarity threshold chosen without any in-domain
label (``stopping_threshold``): the threshold where the training speakers' held-out target and
non-target scores have equal error rates, moved to the in-domain set's own score distribution.
benchmarks/RESULTS_pseudo_speakers.md gives the measurements (ETRI's and TIMIT's training
speakers under a domain shift, the demo's synthetic corpus) that chose this rule and the rest
of the design.

Cost, bounded whatever the size of the set: at most ``max_vectors`` (N) vectors are clustered
(a seeded subset when there are more). Their similarities are computed ``block`` rows at a
time straight into scipy's condensed distance vector (4 N^2 bytes), which
``scipy.cluster.hierarchy.linkage`` copies once (nearest-neighbour chain, O(N^2) time): about
8 N^2 bytes at the peak, 200 MB at N = 5,000. Every other vector is then assigned to the
cluster of highest average similarity (the cluster average linkage would merge it with) when
that average reaches the threshold (else it is left out, label -1): ``block`` x N similarities
at a time, so time grows linearly with the set and memory not at all.

A similarity is a callable ``similarity(A, B)`` returning the (len(A), len(B)) matrix of
scores of every row of A against every row of B, higher meaning more likely the same speaker,
and symmetric (``cosine_similarity``, ``plda_similarity``).

The design the study chose (training data only: ETRI male -> female training speakers, the
demo's corpus with other seeds, a TIMIT split):

1. cluster the raw adaptation vectors under ``cosine_similarity(their mean)`` with
   ``training_scores=labelled_pair_scores(<a held-out training fold>, cosine centred on that
   fold's mean)``;
2. once (Hyperion's iteration): a PLDA from the training labels + these pseudo-speakers, and
   the adaptation vectors (LDA-projected, length-normalised) re-clustered under
   ``plda_similarity`` of it into ``num_clusters=n_cut_`` clusters;
3. train with them: an LDA re-estimated on training + pseudo-speaker labels, the PLDA of both
   (pooled) and ``blend_plda(PLDA-adp, PLDA of the pseudo-speakers alone, 0.75)`` (with at
   least ~8x its dimension of clustered vectors), each also with AS-norm against an in-domain
   cohort;
4. rate candidates on held-out trials among the pseudo-speakers of ``pseudo_speaker_folds(
   labels, 2, min_size=4)`` (biases: benchmarks/RESULTS_pseudo_speakers.md, section 3).
"""

import numpy as np

__all__ = ["PseudoSpeakers", "cosine_similarity", "plda_similarity", "stopping_threshold",
           "labelled_pair_scores", "pseudo_speaker_folds", "blend_plda", "STOPPING_RULES"]

STOPPING_RULES = ("eer", "equal_density")
_BLOCK_CELLS = 1 << 22          # similarities computed at a time (32 MB of float64)


def _finite_matrix(X, name):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError("%s must be a 2-D array (one vector per row), got shape %s"
                         % (name, X.shape))
    bad = ~np.all(np.isfinite(X), axis=1)
    if bad.any():
        raise ValueError("%s row %d contains NaN or Inf" % (name, int(np.flatnonzero(bad)[0])))
    return X


def _finite_scores(values, name):
    values = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(values)):
        raise ValueError("the %s scores contain NaN or Inf" % name)
    return values


# -- similarities ---------------------------------------------------------------------------------

def cosine_similarity(centre=None):
    """Cosine of vectors centred on ``centre`` (e.g. the adaptation set's mean, as egs/sre16/v2
    centres the in-domain vectors on its mean.vec); ``None``: raw cosine."""
    centre = None if centre is None else np.asarray(centre, dtype=np.float64)

    def unit(X):
        X = np.asarray(X, dtype=np.float64)
        if centre is not None:
            X = X - centre
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        return X / np.where(norms > 0, norms, 1.0)

    def similarity(A, B):
        return unit(A) @ unit(B).T
    return similarity


def plda_similarity(plda):
    """Log-likelihood ratio of one vector against one vector under ``plda`` (a fitted
    models.plda.PLDA; rows in its input space, e.g. LDA-projected and length-normalised as
    score-plda-trials takes them, which it length-normalises again as --normalize-length does):
    ``Plda::LogLikelihoodRatio`` with n = 1 written as the matrix c + q_a + <g u_a, u_b> + q_b;
    symmetric, since with n = 1 both sides play the same role."""
    psi = plda.psi_
    gain = psi / (psi + 1.0)
    inv_var = 1.0 / (1.0 + gain)
    const = 0.5 * (np.log(inv_var).sum() + np.log(1.0 + psi).sum())
    quad = 0.5 * (1.0 / (1.0 + psi) - inv_var)      # = -gain^2 inv_var / 2
    lin = gain * inv_var

    def similarity(A, B):
        UA = plda.transform(np.asarray(A, dtype=np.float64), 1)[0]
        UB = UA if B is A else plda.transform(np.asarray(B, dtype=np.float64), 1)[0]
        qa = (UA * UA) @ quad
        qb = qa if B is A else (UB * UB) @ quad
        return const + qa[:, None] + (UA * lin) @ UB.T + qb[None, :]
    return similarity


# -- the stopping rule ------------------------------------------------------------------------

def stopping_threshold(target_scores, nontarget_scores, rule="eer", in_domain=None):
    """The similarity at which average linkage stops merging, from held-out TRAINING trials.

    ``rule``: ``"eer"`` (the default), the threshold where the training target and non-target
    error rates are equal (Kaldi's ComputeEer threshold); ``"equal_density"``, where Gaussians
    fitted to the target and to the non-target scores have equal density (likelihood ratio 1).
    ``in_domain`` (optional): scores of pairs of the unlabelled in-domain set, almost all
    non-target when it holds many speakers. The threshold is then moved from the training
    non-target distribution to the in-domain one, matching their median and interquartile
    range: t' = med_in + IQR_in / IQR_train (t - med_train). A PLDA's LLRs shift and shrink
    out of domain, so the training threshold alone cuts too few clusters there (ETRI: ~16
    clusters of 25 speakers; corrected ~70); cosine hardly moves (the correction is then
    harmless).
    """
    tar = _finite_scores(target_scores, "target")
    non = _finite_scores(nontarget_scores, "non-target")
    for name, values in (("target", tar), ("non-target", non)):
        if values.size < 2:
            raise ValueError("the stopping rule needs at least 2 %s scores, got %d"
                             % (name, values.size))
    if not tar.mean() > non.mean():
        raise ValueError("the target scores are not higher than the non-target scores (means "
                         "%.4g <= %.4g): no stopping threshold between them"
                         % (tar.mean(), non.mean()))
    if rule == "eer":
        from pauc_backend.metrics.error_rates import eer
        threshold = eer(tar, non, return_threshold=True)[1]
    elif rule == "equal_density":
        threshold = _equal_density(tar.mean(), tar.std(), non.mean(), non.std())
    else:
        raise ValueError("unknown stopping rule %r (choose from %s)"
                         % (rule, ", ".join(STOPPING_RULES)))
    if in_domain is not None:
        ind = _finite_scores(in_domain, "in-domain")
        if ind.size < 2:
            raise ValueError("the in-domain correction needs at least 2 scores, got %d"
                             % ind.size)
        q_non = np.percentile(non, [25, 50, 75])
        q_ind = np.percentile(ind, [25, 50, 75])
        if not (q_non[2] > q_non[0] and q_ind[2] > q_ind[0]):
            raise ValueError("the non-target or in-domain scores have no spread (interquartile "
                             "range 0): cannot move the threshold between them")
        threshold = q_ind[1] + (q_ind[2] - q_ind[0]) / (q_non[2] - q_non[0]) * (
            threshold - q_non[1])
    return float(threshold)


def labelled_pair_scores(X, y, similarity, max_vectors=2000, max_per_speaker=20,
                         random_state=0):
    """(target, non-target) scores of every pair among a seeded subset of labelled vectors:
    whole speakers in a seeded order, at most ``max_per_speaker`` vectors each, until
    ``max_vectors`` (cost O(max_vectors^2), whatever the corpus). For ``stopping_threshold``:
    give the similarity as the in-domain set gets it (e.g. cosine centred on THESE vectors'
    mean) and from a model not trained on these speakers (a held-out fold)."""
    X = _finite_matrix(X, "X")
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError("X has %d rows but y has %d labels" % (X.shape[0], y.size))
    rng = np.random.RandomState(random_state)
    speakers, index = np.unique(y, return_inverse=True)
    rows = []
    for s in rng.permutation(speakers.size):
        mine = np.flatnonzero(index == s)
        if mine.size < 2:
            continue
        take = min(mine.size, max_per_speaker, max_vectors - len(rows))
        if take < 2:
            break
        rows.extend(rng.choice(mine, take, replace=False))
    rows = np.sort(np.asarray(rows, dtype=np.int64))
    lab = index[rows]
    if rows.size < 3 or np.unique(lab).size < 2:
        raise ValueError("need at least 2 speakers with 2 or more vectors for target and "
                         "non-target scores")
    S = _checked_similarity(similarity, X[rows], X[rows], (rows.size, rows.size))
    iu = np.triu_indices(rows.size, 1)
    same = lab[iu[0]] == lab[iu[1]]
    values = S[iu]
    return values[same], values[~same]


def _equal_density(mu_t, sd_t, mu_n, sd_n):
    """The point between the means where N(mu_t, sd_t^2) and N(mu_n, sd_n^2) have equal
    density (the midpoint when the spreads are equal)."""
    if not (sd_t > 0 and sd_n > 0):
        raise ValueError("the target or non-target scores have no spread")
    if abs(sd_t - sd_n) <= 1e-9 * (sd_t + sd_n):
        return 0.5 * (mu_t + mu_n)
    # log N(x; t) = log N(x; n)  <=>  a x^2 + b x + c = 0
    a = 1.0 / sd_n ** 2 - 1.0 / sd_t ** 2
    b = 2.0 * (mu_t / sd_t ** 2 - mu_n / sd_n ** 2)
    c = mu_n ** 2 / sd_n ** 2 - mu_t ** 2 / sd_t ** 2 + 2.0 * np.log(sd_n / sd_t)
    roots = np.roots([a, b, c])
    roots = roots[np.isreal(roots)].real
    between = roots[(roots >= mu_n) & (roots <= mu_t)]
    return float(between[0]) if between.size else 0.5 * (mu_t + mu_n)


# -- the clustering -------------------------------------------------------------------------------

def _row_offsets(n):
    """Start of row i's pairs (i, i+1..n-1) in scipy's condensed vector."""
    i = np.arange(n, dtype=np.int64)
    return i * n - i * (i + 1) // 2


class PseudoSpeakers:
    """Average-linkage agglomerative clustering of unlabelled vectors into pseudo-speakers.

    Where to cut the tree, one of: ``threshold`` (merge while the average similarity between
    two clusters is at least this), ``num_clusters`` (cut into that many, Hyperion's
    ``get_flat_clusters(criterion='num_clusters')``), or neither, with ``training_scores``
    given to ``fit``: the threshold of ``stopping_threshold(*training_scores, rule,
    in_domain=<a seeded sample of at most max_pairs pairs of the clustered vectors>)`` when
    ``in_domain_shift``. ``max_vectors``: at most this many vectors are clustered, a seeded
    subset when there are more (the rest assigned, module doc). ``min_size``: a cluster
    smaller than this is no pseudo-speaker; its vectors get the label -1.

    Fitted: ``labels_`` (one per vector, 0..n_clusters_-1 by decreasing size, or -1),
    ``n_clusters_``, ``sizes_``, ``threshold_`` (None with num_clusters), ``n_cut_`` (clusters
    of the cut of any size, what ``num_clusters`` reproduces), ``subset_`` (the rows
    clustered), ``tree_`` (scipy's linkage matrix), ``clustered_fraction_`` (vectors with a
    label >= 0) and ``separation_``: a label-free quality figure, d' = (mean within - mean
    between) / sqrt(mean of their variances) of the similarities of pairs of clustered vectors
    in a pseudo-speaker against pairs in two (it is high by construction: compare it between
    clusterings of one set, not with a labelled set's).
    """

    def __init__(self, threshold=None, num_clusters=None, rule="eer", in_domain_shift=True,
                 max_vectors=5000, min_size=2, max_pairs=200000, random_state=0, block=None):
        self.threshold = threshold
        self.num_clusters = num_clusters
        self.rule = rule
        self.in_domain_shift = in_domain_shift
        self.max_vectors = max_vectors
        self.min_size = min_size
        self.max_pairs = max_pairs
        self.random_state = random_state
        self.block = block

    def _check_params(self, training_scores):
        given = [name for name, value in (("threshold", self.threshold),
                                          ("num_clusters", self.num_clusters),
                                          ("training_scores", training_scores))
                 if value is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of threshold, num_clusters and training_scores "
                             "(got %s)" % (", ".join(given) or "none"))
        if self.threshold is not None and not np.isfinite(self.threshold):
            raise ValueError("the clustering threshold must be finite, got %r"
                             % (self.threshold,))
        for name, low in (("num_clusters", 1), ("max_vectors", 3), ("min_size", 1),
                          ("max_pairs", 2)):
            value = getattr(self, name)
            if name == "num_clusters" and value is None:
                continue
            if not (isinstance(value, (int, np.integer)) and value >= low):
                raise ValueError("%s must be an integer >= %d, got %r" % (name, low, value))
        if self.block is not None and not (isinstance(self.block, (int, np.integer))
                                           and self.block >= 1):
            raise ValueError("block must be a positive integer, got %r" % (self.block,))
        if self.rule not in STOPPING_RULES:
            raise ValueError("unknown stopping rule %r (choose from %s)"
                             % (self.rule, ", ".join(STOPPING_RULES)))

    def fit(self, X, similarity=None, training_scores=None):
        """Cluster the rows of X under ``similarity`` (default: cosine of X centred on its
        own mean). ``training_scores``: (target, non-target) scores of held-out training
        trials under the same similarity, when the threshold comes from the stopping rule.
        Returns self."""
        self._check_params(training_scores)
        X = _finite_matrix(X, "X")
        n = X.shape[0]
        if n < 3:
            raise ValueError("clustering needs at least 3 vectors, got %d" % n)
        if similarity is None:
            similarity = cosine_similarity(X.mean(axis=0))
        rng = np.random.RandomState(self.random_state)
        if n > self.max_vectors:
            subset = np.sort(rng.choice(n, self.max_vectors, replace=False))
        else:
            subset = np.arange(n)
        condensed, top = self._condensed_distances(X[subset], similarity)
        if np.ptp(condensed) == 0:
            raise ValueError("every pair of vectors has the same similarity (identical or "
                             "degenerate vectors): nothing to cluster")
        self.threshold_ = self._threshold(training_scores, condensed, top, rng)
        from scipy.cluster import hierarchy   # slow to import (0.3 s): only the clustering needs it
        tree = hierarchy.linkage(condensed, method="average")
        if self.threshold_ is not None:
            flat = hierarchy.fcluster(tree, t=top - self.threshold_, criterion="distance")
        else:
            flat = hierarchy.fcluster(tree, t=min(int(self.num_clusters), subset.size),
                                      criterion="maxclust")
        flat = flat - 1
        self.n_cut_ = int(flat.max()) + 1
        labels = np.full(n, -1, dtype=np.int64)
        labels[subset] = flat
        if subset.size < n:
            rest = np.setdiff1d(np.arange(n), subset, assume_unique=True)
            labels[rest] = self._assign(X, subset, flat, rest, similarity)
        self.subset_ = subset
        self.tree_ = tree
        self._relabel(labels)
        self.separation_ = _separation(condensed, self.labels_[subset])
        return self

    def fit_predict(self, X, similarity=None, training_scores=None):
        return self.fit(X, similarity, training_scores).labels_

    def _rows_per_block(self, width):
        return int(self.block) if self.block is not None else max(1, _BLOCK_CELLS // width)

    def _condensed_distances(self, Xs, similarity):
        """(top - similarity of every pair i < j in scipy's condensed order, top = the largest
        similarity), computed a block of rows at a time."""
        n = Xs.shape[0]
        offsets = _row_offsets(n)
        out = np.empty(n * (n - 1) // 2)
        step = self._rows_per_block(n)
        for start in range(0, n - 1, step):
            stop = min(start + step, n - 1)
            S = _checked_similarity(similarity, Xs[start:stop], Xs[start:],
                                    (stop - start, n - start))
            for i in range(start, stop):
                out[offsets[i]:offsets[i] + n - 1 - i] = S[i - start, i - start + 1:]
        top = float(out.max())
        np.subtract(top, out, out=out)
        return out, top

    def _threshold(self, training_scores, condensed, top, rng):
        if self.threshold is not None:
            return float(self.threshold)
        if training_scores is None:
            return None
        try:
            target, nontarget = training_scores
        except (TypeError, ValueError):
            raise ValueError("training_scores must be a pair (target scores, non-target "
                             "scores)") from None
        in_domain = None
        if self.in_domain_shift:
            pick = (rng.choice(condensed.size, self.max_pairs, replace=False)
                    if condensed.size > self.max_pairs else slice(None))
            in_domain = top - condensed[pick]
        return stopping_threshold(target, nontarget, self.rule, in_domain)

    def _assign(self, X, subset, sub_labels, rest, similarity):
        """For each row in ``rest``: the cluster of highest average similarity (or -1 when a
        threshold is set and that average is below it), a block of rows at a time."""
        order = np.argsort(sub_labels, kind="stable")
        starts = np.r_[0, np.flatnonzero(np.diff(sub_labels[order])) + 1]
        sizes = np.diff(np.r_[starts, order.size])
        members = X[subset[order]]
        out = np.empty(rest.size, dtype=np.int64)
        step = self._rows_per_block(subset.size)
        for start in range(0, rest.size, step):
            rows = rest[start:start + step]
            S = _checked_similarity(similarity, X[rows], members, (rows.size, subset.size))
            average = np.add.reduceat(S, starts, axis=1) / sizes
            best = np.argmax(average, axis=1)
            if self.threshold_ is not None:
                best = np.where(average[np.arange(rows.size), best] >= self.threshold_,
                                best, -1)
            out[start:start + rows.size] = best
        return out

    def _relabel(self, labels):
        """Clusters of at least ``min_size`` numbered by decreasing size; others -1."""
        valid = labels >= 0
        counts = np.bincount(labels[valid]) if valid.any() else np.zeros(0, dtype=np.int64)
        keep = np.flatnonzero(counts >= self.min_size)
        order = keep[np.argsort(-counts[keep], kind="stable")]
        mapping = np.full(counts.size, -1, dtype=np.int64)
        mapping[order] = np.arange(order.size)
        out = np.full(labels.size, -1, dtype=np.int64)
        out[valid] = mapping[labels[valid]]
        self.labels_ = out
        self.n_clusters_ = int(order.size)
        self.sizes_ = counts[order].astype(np.int64)
        self.clustered_fraction_ = float(np.mean(out >= 0))


def _checked_similarity(similarity, A, B, shape):
    S = np.asarray(similarity(A, B), dtype=np.float64)
    if S.shape != shape:
        raise ValueError("the similarity must return a (len(A), len(B)) matrix %s, got shape %s"
                         % (shape, S.shape))
    if not np.all(np.isfinite(S)):
        raise ValueError("the similarity returned NaN or Inf")
    return S


def _separation(condensed, labels):
    """d' of the similarities within pseudo-speakers against those between two, over the
    labelled (>= 0) vectors, from the condensed distances (d' is the same with the sign
    flipped); NaN without both kinds of pair."""
    n = labels.size
    offsets = _row_offsets(n)
    keep = np.flatnonzero(labels >= 0)
    if keep.size < 3:
        return float("nan")
    # all pairs among kept vectors, one row at a time (no pair list)
    total = np.zeros(3)
    within = np.zeros(3)
    kept = np.zeros(n, dtype=bool)
    kept[keep] = True
    for i in keep[:-1]:
        row = condensed[offsets[i]:offsets[i] + n - 1 - i]
        partners = kept[i + 1:]
        values = row[partners]
        total += (values.size, values.sum(), values @ values)
        same = row[partners & (labels[i + 1:] == labels[i])]
        within += (same.size, same.sum(), same @ same)
    between = total - within
    if within[0] < 1 or between[0] < 1:
        return float("nan")
    mean_w, mean_b = within[1] / within[0], between[1] / between[0]
    var_w = max(within[2] / within[0] - mean_w ** 2, 0.0)
    var_b = max(between[2] / between[0] - mean_b ** 2, 0.0)
    spread = np.sqrt(0.5 * (var_w + var_b))
    return float((mean_b - mean_w) / spread) if spread > 0 else float("nan")


# -- folds of pseudo-speakers ---------------------------------------------------------------------

def pseudo_speaker_folds(labels, num_folds=2, min_size=4, random_state=0):
    """Speaker-disjoint folds over the pseudo-speakers of at least ``min_size`` vectors (for
    held-out trials among them): the fold of each vector, 0..num_folds-1, or -1 for vectors
    of no usable pseudo-speaker. Pseudo-speakers are dealt to the folds in a seeded order,
    so fold sizes differ by at most one pseudo-speaker."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError("labels must be a 1-D integer array")
    if not (isinstance(num_folds, (int, np.integer)) and num_folds >= 2):
        raise ValueError("num_folds must be an integer >= 2, got %r" % (num_folds,))
    counts = np.bincount(labels[labels >= 0]) if np.any(labels >= 0) else np.zeros(0, int)
    usable = np.flatnonzero(counts >= min_size)
    if usable.size < num_folds:
        raise ValueError("only %d pseudo-speakers have at least %d vectors: too few for %d "
                         "folds" % (usable.size, min_size, num_folds))
    order = np.random.RandomState(random_state).permutation(usable)
    fold_of = np.full(counts.size, -1, dtype=np.int64)
    fold_of[order] = np.arange(order.size) % num_folds
    out = np.full(labels.size, -1, dtype=np.int64)
    valid = labels >= 0
    out[valid] = fold_of[labels[valid]]
    return out


# -- training with pseudo-speakers: Hyperion's covariance blend ----------------------------------

def _plda_covariances(plda):
    """(mean, within, between) of a models.plda.PLDA: W = T^-1 T^-T, B = T^-1 diag(psi) T^-T."""
    inverse = np.linalg.inv(plda.transform_)
    return plda.mean_, inverse @ inverse.T, (inverse * plda.psi_) @ inverse.T


def blend_plda(plda_out, plda_in, weight):
    """The PLDA whose mean and within- and between-class covariances are ``weight`` x those of
    ``plda_in`` (e.g. trained on the pseudo-speakers alone) + (1 - weight) x those of
    ``plda_out`` (e.g. the training PLDA adapted by ivector-adapt-plda): Hyperion's
    ``SPLDA.weighted_avg_model`` (w_mu = w_B = w_W = weight), rebuilt as Kaldi's PLDA
    (PldaEstimator::GetOutput: W whitened by its Cholesky factor, B diagonalised)."""
    from pauc_backend.models.plda import PLDA
    if not 0.0 <= weight <= 1.0:
        raise ValueError("the blend weight must be in [0, 1], got %r" % (weight,))
    if plda_out.dim != plda_in.dim:
        raise ValueError("the two PLDAs have dimensions %d and %d" % (plda_out.dim,
                                                                      plda_in.dim))
    m0, w0, b0 = _plda_covariances(plda_out)
    m1, w1, b1 = _plda_covariances(plda_in)
    within = weight * w1 + (1.0 - weight) * w0
    between = weight * b1 + (1.0 - weight) * b0
    chol = np.linalg.cholesky(0.5 * (within + within.T))
    whiten = np.linalg.solve(chol, np.eye(chol.shape[0]))
    psi, vectors = np.linalg.eigh(0.5 * (whiten @ between @ whiten.T
                                         + (whiten @ between @ whiten.T).T))
    order = np.argsort(-psi, kind="stable")
    return PLDA.from_params(weight * m1 + (1.0 - weight) * m0, vectors[:, order].T @ whiten,
                            np.maximum(psi[order], 0.0))
