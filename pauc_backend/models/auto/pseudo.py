"""Pseudo-speakers of the unlabelled adaptation set for pAUCMetric (auto): the clustering, the
in-domain trials among them, and the candidates trained with them.

The design is benchmarks/RESULTS_pseudo_speakers.md's (chosen on training-data shifts only:
ETRI male -> female TRAINING speakers, the demo's corpus with other seeds, a TIMIT split):

1. Clustering (``cluster``). Average linkage (models.pseudo_speakers.PseudoSpeakers) of the
   raw adaptation vectors under their cosine centred on their mean, cut at the stopping rule's
   threshold: the EER threshold of pairs of TRAINING vectors (a seeded subset of at most 2,000
   vectors of whole speakers, at most 20 each, centred on their own mean as the adaptation
   set is) moved into the adaptation set's own score distribution (median and interquartile
   range). Then one Hyperion-style iteration: a PLDA on the training labels + these
   pseudo-speakers, in the vectors' own space, and the set re-clustered by average linkage
   on its LLRs into the same number of clusters. Pseudo-speakers: clusters of >= 2 vectors.
   Not in an LDA space of the training speakers (the study's first design): an LDA of them
   keeps the directions that tell THEM apart, and clusters made there favour every candidate
   of that space. On the ETRI training-data shift (68 male training speakers, 25 female
   training speakers unlabelled, the other 25 as labelled in-domain trials that only
   measure: benchmarks/auto_pseudo_rating.py, RESULTS_pseudo_rating.md) the rank correlation
   between the candidates' pAUC on the pseudo-speaker trials and on the labelled in-domain
   trials was 0.66 with the iteration in the training LDA space and 0.94 in the vectors'
   own space (the male-LDA cosine over-rated by 0.12 and 0.07).
2. The guard (``build``): the pseudo-speakers are used only when the adaptation set has
   speaker structure (models.unlabelled's verdict) and at least ``MIN_PSEUDO_SPEAKERS`` (10)
   of them hold >= ``MIN_RATING_SIZE`` (4) clustered vectors (what two rating folds need; a
   judgement from the study's 6- vs 12-speaker rows, not a measured threshold).
3. The in-domain trials (``trial_set``): the pseudo-speakers of >= 4 clustered vectors dealt
   into 2 speaker-disjoint folds (models.pseudo_speakers.pseudo_speaker_folds); the trials are
   among the vectors of one fold, built like the training folds' (--enroll-utts): N > 0, each
   pseudo-speaker enrolled by the mean of min(N, size - 1) of its vectors (seeded) against
   every other vector of its fold; 0, pairs of single vectors of the fold. At most
   ``max_trials`` of them (every target up to half, a seeded sample of the non-targets).
   They are a models.auto.dev.DevTrials whose speakers are the pseudo-speakers: every fold's
   models score them as development trials (models.auto.trialsets).
4. The candidates trained with them (``fit_systems``), each a models.backend_pipeline pipeline
   scoring with Kaldi's PLDA (so the model directory holds them as any PLDA system: mean.vec
   = the adaptation set's mean, transform.mat = the re-estimated LDA, plda, cohort.ark):
   ``pseudo_pooled``: the LDA re-estimated on the training speakers (centred on their mean)
   + the pseudo-speakers (centred on the adaptation mean), a PLDA on both (pooled);
   ``pseudo_blend``: in that space, Hyperion's blend (models.pseudo_speakers.blend_plda) of
   the PLDA of the pseudo-speakers alone (weight 0.75) and the training PLDA adapted to the
   adaptation set (ivector-adapt-plda 0.75/0.25), only with >= 8x the LDA dimension of
   pseudo-speaker vectors; each also ``:as``, AS-norm against an in-domain cohort (a seeded
   subset of at most ``MAX_COHORT`` = 1,000 adaptation vectors, top asnorm_top_n).
   ``cross_fit`` trains them once per pseudo-speaker fold, on the cross-fitting subset of the
   training speakers + every pseudo-speaker but that fold's, and scores that fold's trials
   with them (and the development trials, averaged over the two folds' models); the final
   model (``train_final``) is trained on every training vector and every pseudo-speaker.

Cost, bounded whatever the corpus: the clustering (PseudoSpeakers: at most
``MAX_CLUSTERED`` = 5,000 vectors clustered, ~8 N^2 bytes, 200 MB; the rest of the
adaptation sample assigned in O(N x 5,000)), the stopping rule's 2,000 training vectors
(O(2,000^2)); at most ``max_trials`` trials among <= 5,000 clustered vectors; the
pseudo-trained models of a fold take three streamed passes over the cross-fitting subset
(LDA, pooled and training PLDA statistics) and O(d^3).
"""

from dataclasses import dataclass

import numpy as np

from pauc_backend.models import pseudo_speakers as ps
from pauc_backend.models.auto.dev import DevTrials
from pauc_backend.models.backend_pipeline import ADAPT_SCALES, BackendPipeline
from pauc_backend.models.backend_pipeline import float32_mean as _mean
from pauc_backend.models.class_stats import ClassStats
from pauc_backend.models.lda import LDA
from pauc_backend.models.plda import PLDA
from pauc_backend.models.preprocessing import normalize_length
from pauc_backend.models.systems import trained_parameters

__all__ = ["Clustering", "PseudoSpeakers", "cluster", "build", "trial_set", "fit_systems",
           "pseudo_pipeline", "cross_fit", "train_final", "complexity", "title",
           "PSEUDO_SYSTEMS", "CANDIDATES", "MIN_PSEUDO_SPEAKERS", "MIN_RATING_SIZE",
           "MAX_CLUSTERED", "MAX_COHORT"]

MIN_TRAIN_SIZE = 2
MIN_RATING_SIZE = 4
MIN_PSEUDO_SPEAKERS = 10
NUM_FOLDS = 2
BLEND_WEIGHT = 0.75
BLEND_FACTOR = 8            # the blend needs >= 8 x its dimension of pseudo-speaker vectors
MAX_CLUSTERED = 5000
MAX_COHORT = 1000
STOP_VECTORS, STOP_PER_SPEAKER = 2000, 20
PSEUDO_SYSTEMS = {"pseudo_pooled": "PLDA pooled on training + pseudo-speakers (LDA "
                                   "re-estimated)",
                  "pseudo_blend": "blend 0.75 of the pseudo-speakers' PLDA and PLDA-adp (LDA "
                                  "re-estimated)"}
_BLOCK = 8192


def title(name):
    base, _, norm = name.partition(":")
    return PSEUDO_SYSTEMS[base] + (" + AS-norm (in-domain cohort)" if norm else "")


def _project(T, rows, mean, W):
    """float32 length-normalised (T[rows] - mean) W^T, a block at a time."""
    out = np.empty((rows.size, W.shape[0]), dtype=np.float32)
    for start in range(0, rows.size, _BLOCK):
        block = np.asarray(T[rows[start:start + _BLOCK]], dtype=np.float32) - mean
        out[start:start + _BLOCK] = normalize_length(block @ W.T)[0]
    return out


def _stats(parts, W=None):
    """ClassStats of several (table, rows, class indices, centre) parts: the rows centred,
    and with W projected and length-normalised (the PLDA's input), streamed by blocks."""
    stats = ClassStats()
    for T, rows, labels, centre in parts:
        for start in range(0, rows.size, _BLOCK):
            block = np.asarray(T[rows[start:start + _BLOCK]], dtype=np.float32) - centre
            if W is not None:
                block = normalize_length(block @ W.T)[0]
            stats.add(block.astype(np.float64), labels[start:start + _BLOCK])
    return stats


def _kept(labels, min_size):
    """Mask of the vectors whose pseudo-speaker holds >= min_size of them."""
    valid = labels >= 0
    if not valid.any():
        return valid
    counts = np.bincount(labels[valid])
    return valid & (counts[np.maximum(labels, 0)] >= min_size)


def _compact(labels):
    return np.unique(labels, return_inverse=True)[1].reshape(-1)


def pooled_plda(X, y_idx, rows, train_mean, A, arows, alabels, adapt_mean, W):
    """PLDA of the training vectors (classes y_idx) + the pseudo-speakers (labels >= 0)."""
    keep = alabels >= 0
    parts = [(X, rows, y_idx, train_mean),
             (A, arows[keep], int(y_idx.max()) + 1 + _compact(alabels[keep]), adapt_mean)]
    return PLDA().fit_stats(_stats(parts, W))


def fit_systems(X, y, rows, A, arows, alabels, lda_dim, adapt_mean, names):
    """{name: (mean, W, PLDA)} of the pseudo-trained systems ``names`` (their base keys;
    module doc, 3) from training vectors X[rows] labelled y[rows] and the adaptation vectors
    A[arows] with pseudo-labels ``alabels`` (-1 or clusters below 2 vectors: unused). A
    system that cannot be trained (too few data) is left out."""
    alabels = np.where(_kept(alabels, MIN_TRAIN_SIZE), alabels, -1)
    keep = alabels >= 0
    y_idx = _compact(y[rows])
    train_mean = _mean(X, rows)
    pseudo_idx = int(y_idx.max()) + 1 + _compact(alabels[keep]) if keep.any() else None
    if keep.sum() < 2:
        return {}
    W = np.eye(X.shape[1], dtype=np.float32)
    if lda_dim:
        classes = int(y_idx.max()) + 1 + int(pseudo_idx.max() - y_idx.max())
        dim = min(int(lda_dim), classes - 1, X.shape[1])
        lda = LDA(dim=dim).fit_stats(_stats([(X, rows, y_idx, train_mean),
                                             (A, arows[keep], pseudo_idx, adapt_mean)]))
        W = lda.affine_matrix_[:, :-1].astype(np.float32)
    out = {}
    pooled = PLDA().fit_stats(_stats([(X, rows, y_idx, train_mean),
                                      (A, arows[keep], pseudo_idx, adapt_mean)], W))
    if "pseudo_pooled" in names:
        out["pseudo_pooled"] = pooled
    if "pseudo_blend" in names and keep.sum() >= BLEND_FACTOR * W.shape[0]:
        try:
            inside = PLDA().fit_stats(_stats([(A, arows[keep], _compact(alabels[keep]),
                                               adapt_mean)], W))
            male = PLDA().fit_stats(_stats([(X, rows, y_idx, train_mean)], W))
            adapted = male.adapt(_project(A, arows, adapt_mean, W), 1.0, *ADAPT_SCALES)
            out["pseudo_blend"] = ps.blend_plda(adapted, inside, BLEND_WEIGHT)
        except (ValueError, np.linalg.LinAlgError):
            pass
    return {name: (adapt_mean, W, plda) for name, plda in out.items()}


def pseudo_pipeline(name, part, A, cohort_rows, asnorm_top_n):
    """The BackendPipeline scoring the pseudo-trained ``name`` (``pseudo_pooled:as``...)
    from ``fit_systems``'s (mean, W, PLDA): Kaldi's PLDA after the adaptation mean and W;
    with ``:as`` AS-norm against the raw cohort A[cohort_rows]."""
    mean, W, plda = part
    normed = name.endswith(":as")
    affine = np.hstack([W, np.zeros((W.shape[0], 1), np.float32)]).astype(np.float32)
    cohort = np.asarray(A[cohort_rows], dtype=np.float32) if normed else None
    return BackendPipeline.from_parts(
        ("plda:as",) if normed else ("plda",), mean, affine, plda, cohort=cohort,
        cohort_counts=None if cohort is None else np.ones(cohort.shape[0], np.int64),
        asnorm_top_n=asnorm_top_n)


class Clustering:
    """What ``cluster`` found: ``labels`` (per adaptation row used; -1 = no pseudo-speaker
    of >= 2 vectors), ``subset`` (positions among them that were clustered), ``model`` (the
    final PseudoSpeakers), ``threshold`` (the first cut's), ``usable`` (pseudo-speakers of
    >= 4 vectors), ``ok`` (the guard), ``lines()`` for system.txt."""

    def __init__(self, labels, model, threshold, first_count):
        self.labels, self.model, self.threshold = labels, model, threshold
        self.subset = model.subset_
        sizes = model.sizes_
        self.usable = int(np.sum(sizes >= MIN_RATING_SIZE))
        self.ok = self.usable >= MIN_PSEUDO_SPEAKERS
        self.first_count = first_count

    def lines(self):
        m = self.model
        q = (np.percentile(m.sizes_, [0, 25, 50, 75, 100]) if m.sizes_.size
             else np.zeros(5))
        return ["pseudo_speakers %d" % m.n_clusters_,
                "pseudo_speakers_of_4_or_more %d" % self.usable,
                "pseudo_size_quantiles_0_25_50_75_100 %s" % " ".join("%g" % v for v in q),
                "pseudo_clustered_fraction %.4f" % m.clustered_fraction_,
                "pseudo_vectors_clustered %d" % self.subset.size,
                "pseudo_first_cut_threshold %.6g" % self.threshold,
                "pseudo_first_cut_clusters %d" % self.first_count,
                "pseudo_separation_dprime %.4f" % m.separation_,
                "pseudo_used %s" % ("yes" if self.ok else
                                    "no_fewer_than_%d_of_%d_or_more_vectors"
                                    % (MIN_PSEUDO_SPEAKERS, MIN_RATING_SIZE))]


def _stop_scores(X, y, rows, seed):
    """Target and non-target cosine scores of pairs of a seeded subset of training vectors
    (whole speakers, <= 20 each, <= 2,000), centred on that subset's mean."""
    rng = np.random.RandomState(seed + 41)
    yy = y[rows]
    speakers, index = np.unique(yy, return_inverse=True)
    chosen = []
    for s in rng.permutation(speakers.size):
        mine = np.flatnonzero(index == s)
        take = min(mine.size, STOP_PER_SPEAKER, STOP_VECTORS - len(chosen))
        if take < 2:
            if len(chosen) >= STOP_VECTORS - 1:
                break
            continue
        chosen.extend(rng.choice(mine, take, replace=False))
    sel = rows[np.sort(np.asarray(chosen, dtype=np.int64))]
    V = np.asarray(X[sel], dtype=np.float64)
    return ps.labelled_pair_scores(V, y[sel], ps.cosine_similarity(V.mean(axis=0)),
                                   max_vectors=STOP_VECTORS, max_per_speaker=STOP_PER_SPEAKER,
                                   random_state=seed)


def cluster(X, y, rows, A, arows, seed):
    """The pseudo-speakers of A[arows] (module doc, 1), the training vectors X[rows] (labels
    y[rows]) giving the stopping rule and the iteration's PLDA. Returns a Clustering."""
    Aa = np.asarray(A[arows], dtype=np.float64)
    adapt_mean = Aa.mean(axis=0).astype(np.float32)
    first = ps.PseudoSpeakers(min_size=1, max_vectors=MAX_CLUSTERED, random_state=seed).fit(
        Aa, ps.cosine_similarity(adapt_mean), _stop_scores(X, y, rows, seed))
    # the iteration's PLDA in the vectors' own space: an LDA of the training speakers would
    # keep the directions that tell THEM apart, and clusters made there favour every
    # candidate of that space (module doc, 1)
    W = np.eye(X.shape[1], dtype=np.float32)
    plda = pooled_plda(X, _compact(y[rows]), rows, _mean(X, rows), A, arows,
                       np.where(_kept(first.labels_, MIN_TRAIN_SIZE), first.labels_, -1),
                       adapt_mean, W)
    ZA = _project(A, arows, adapt_mean, W)
    second = ps.PseudoSpeakers(num_clusters=first.n_cut_, min_size=MIN_TRAIN_SIZE,
                               max_vectors=MAX_CLUSTERED, random_state=seed).fit(
        ZA, ps.plda_similarity(plda))
    return Clustering(second.labels_, second, first.threshold_, first.n_cut_)


CANDIDATES = tuple(n + norm for n in PSEUDO_SYSTEMS for norm in ("", ":as"))


def is_pseudo(name):
    """True for a pseudo-trained candidate's name."""
    return name.partition(":")[0] in PSEUDO_SYSTEMS


@dataclass(frozen=True)
class PseudoSpeakers:
    """What ``build`` found: the ``clustering``, the LDA dimension of the pseudo-trained
    systems (``lda_dim``), the pseudo-speaker fold of each position of the adaptation sample
    (``fold``: 0, 1 or -1), the in-domain ``trials`` (a DevTrials of the clustered vectors),
    the fold of each trial (``trial_fold``) and of the ``trials.vectors`` rows as positions of
    the adaptation sample (``positions``)."""
    clustering: object
    lda_dim: int
    fold: np.ndarray
    trials: DevTrials
    trial_fold: np.ndarray
    positions: np.ndarray

    def training_labels(self, k):
        """The pseudo-labels that may train fold k's models: every pseudo-speaker's but
        those dealt to fold k (-1: not a training label)."""
        labels = self.clustering.labels
        held = np.unique(labels[self.fold == k])
        return np.where(np.isin(labels, held[held >= 0]), -1, labels)

    def without(self, k):
        """Mask of the adaptation sample's positions that may enter fold k's models, even
        unlabelled (centring, PLDA adaptation, cohort): all but the vectors of fold k's
        trials."""
        return self.fold != k

    def parts(self, adapt_rows):
        """((trial rows of fold k, the adaptation rows its models may use), ...) of the
        trials of each fold (models.auto.inputs.TrialSet)."""
        return tuple((np.flatnonzero(self.trial_fold == k), adapt_rows[self.without(k)])
                     for k in range(NUM_FOLDS))

    def describe(self):
        t = self.trials
        return ("%d trials (%d target) among the %d pseudo-speakers of >= %d clustered vectors "
                "in 2 speaker-disjoint folds; the cross-fitted candidates score them with "
                "every training fold's models averaged, the pseudo-trained ones with the "
                "models of the other pseudo-speaker fold%s" % (
                    t.num_trials, t.num_target, self.clustering.usable, MIN_RATING_SIZE,
                    "; " + t.sampled if t.sampled else ""))


def build(X, y, rows, adapt, lda_dims, enroll_utts, max_trials, seed):
    """(PseudoSpeakers or None, sentence saying what was found or why not) of the adaptation
    set ``adapt`` (models.auto.adapt.AdaptationSet), the training vectors X[rows] (labels
    y[rows]) giving the stopping rule and the iteration's PLDA."""
    lda_dim = lda_dim_for(lda_dims, X.shape[1])
    try:
        found = cluster(X, y, rows, adapt.vectors, adapt.rows, seed)
    except (ValueError, np.linalg.LinAlgError) as err:
        return None, "the adaptation set could not be clustered (%s)" % err
    m = found.model
    q = np.percentile(m.sizes_, [0, 50, 100]) if m.sizes_.size else np.zeros(3)
    text = ("%d vectors clustered (average linkage on their cosine centred on their mean, cut "
            "at %.4f, the training speakers' EER threshold moved into the set's scores: %d "
            "clusters; one iteration on the LLRs of a PLDA of the training + these "
            "pseudo-speakers): %d pseudo-speakers of >= 2 vectors (sizes min %g, median %g, "
            "max %g; %.1f %% of the vectors), %d of >= %d; separation d' %.3f" % (
                found.subset.size, found.threshold, found.first_count, m.n_clusters_, q[0],
                q[1], q[2], 100 * m.clustered_fraction_, found.usable, MIN_RATING_SIZE,
                m.separation_))
    if not found.ok:
        return None, text + ("; fewer than %d pseudo-speakers of >= %d vectors: not used"
                             % (MIN_PSEUDO_SPEAKERS, MIN_RATING_SIZE))
    labels = np.full(found.labels.size, -1, dtype=np.int64)
    labels[found.subset] = found.labels[found.subset]
    fold = ps.pseudo_speaker_folds(labels, NUM_FOLDS, MIN_RATING_SIZE, seed)
    trials, trial_fold, positions = trial_set(adapt.vectors, adapt.rows, labels, fold,
                                              enroll_utts, max_trials, seed,
                                              adapt.durations)
    return PseudoSpeakers(found, lda_dim, fold, trials, trial_fold, positions), text


def _pairs(n, rng, count):
    """Up to ``count`` distinct pairs (i < j) of range(n), uniformly, in random order (all of
    them, in order, when there are fewer)."""
    total = n * (n - 1) // 2
    if total <= count:
        return np.triu_indices(n, 1)
    flat = rng.permutation(rng.choice(total, count, replace=False))
    starts = np.cumsum(np.concatenate([[0], np.arange(n - 1, 0, -1)]))   # row by row
    i = np.searchsorted(starts, flat, side="right") - 1
    return i, flat - starts[i] + i + 1


def _single_vector_trials(lab, budget, rng):
    """(i, j) pairs of single vectors among one fold's vectors (pseudo-labels ``lab``): every
    pair when there are at most ``budget`` (0: no cap), else every target pair up to half of
    it and a uniform sample of the non-target pairs for the rest."""
    n = lab.size
    if not budget or n * (n - 1) // 2 <= budget:
        return _pairs(n, rng, n * n)
    ti, tj = [], []
    for c in np.unique(lab):
        members = np.flatnonzero(lab == c)
        a, b = np.triu_indices(members.size, 1)
        ti.append(members[a])
        tj.append(members[b])
    ti, tj = np.concatenate(ti), np.concatenate(tj)
    if ti.size > budget // 2:
        keep = np.sort(rng.choice(ti.size, budget // 2, replace=False))
        ti, tj = ti[keep], tj[keep]
    need = budget - ti.size
    ni, nj = _pairs(n, rng, min(n * (n - 1) // 2, 2 * need))
    non = lab[ni] != lab[nj]
    return (np.concatenate([ti, ni[non][:need]]), np.concatenate([tj, nj[non][:need]]))


def trial_set(A, arows, labels, fold, enroll_utts, max_trials, seed, durations=None):
    """(DevTrials, fold of each trial, position of each of its vectors in the adaptation
    sample): the trials among the pseudo-speakers of each fold (module doc, 3), at most
    ``max_trials`` (0: all) of them."""
    rng = np.random.default_rng([int(seed), 53])
    positions = np.flatnonzero(fold >= 0)
    index = np.full(fold.size, -1, dtype=np.int64)
    index[positions] = np.arange(positions.size)
    enroll, enroll_speaker, test, test_speaker = [], [], [], []
    e_idx, t_idx, fold_of = [], [], []
    for k in range(NUM_FOLDS):
        mine = positions[fold[positions] == k]
        lab = labels[mine]
        e0, t0 = len(enroll), len(test)
        if enroll_utts:                # models: means of N vectors; tests: the others
            tests = []
            for c in np.unique(lab):
                members = rng.permutation(mine[lab == c])
                n = min(int(enroll_utts), members.size - 1)
                enroll.append(index[members[:n]])
                enroll_speaker.append(c)
                tests.extend(members[n:])
            tests = np.asarray(tests)
            test.extend(index[tests])
            test_speaker.extend(labels[tests])
            num_models = len(enroll) - e0
            e = e0 + np.repeat(np.arange(num_models), tests.size)
            t = t0 + np.tile(np.arange(tests.size), num_models)
            if max_trials and e.size > max_trials // NUM_FOLDS:
                target = np.asarray(enroll_speaker)[e] == np.asarray(test_speaker)[t]
                keep = _capped(target, max_trials // NUM_FOLDS, rng)
                e, t = e[keep], t[keep]
        else:                          # single vectors against single vectors
            enroll.extend([index[r]] for r in mine)
            enroll_speaker.extend(lab)
            test.extend(index[mine])
            test_speaker.extend(lab)
            i, j = _single_vector_trials(lab, max_trials // NUM_FOLDS if max_trials else 0,
                                         rng)
            e, t = e0 + np.asarray(i), t0 + np.asarray(j)
        order = np.lexsort((t, e))
        e_idx.append(e[order])
        t_idx.append(t[order])
        fold_of.append(np.full(e.size, k))
    e_idx, t_idx = np.concatenate(e_idx), np.concatenate(t_idx)
    enroll_speaker, test_speaker = np.asarray(enroll_speaker), np.asarray(test_speaker)
    vectors = np.asarray(A[arows[positions]], dtype=np.float32)
    capped = sum(f.size for f in fold_of) < _full_count(labels, fold, enroll_utts)
    trials = DevTrials(vectors, [np.asarray(r, dtype=np.intp) for r in enroll],
                       np.asarray(test, dtype=np.intp), e_idx, t_idx,
                       enroll_speaker[e_idx] == test_speaker[t_idx], enroll_speaker,
                       test_speaker, None if durations is None
                       else np.asarray(durations)[arows[positions]],
                       "a seeded sample of them (every target up to half)" if capped else "")
    return trials.check(vectors.shape[1]), np.concatenate(fold_of), positions


def _capped(target, budget, rng):
    """Rows kept of trials with labels ``target``: every target up to half of ``budget``,
    a uniform sample of the non-targets for the rest (sorted)."""
    tar, non = np.flatnonzero(target), np.flatnonzero(~target)
    if tar.size > budget // 2:
        tar = rng.choice(tar, budget // 2, replace=False)
    non = rng.choice(non, min(non.size, budget - tar.size), replace=False)
    return np.sort(np.concatenate([tar, non]))


def _full_count(labels, fold, enroll_utts):
    """The number of trials of ``trial_set`` without a cap."""
    total = 0
    for k in range(NUM_FOLDS):
        lab = labels[fold == k]
        if enroll_utts:
            sizes = np.bincount(np.unique(lab, return_inverse=True)[1].reshape(-1))
            tests = int(np.sum(sizes - np.minimum(int(enroll_utts), sizes - 1)))
            total += sizes.size * tests
        else:
            total += lab.size * (lab.size - 1) // 2
    return total


def _scores(pipe, trials, rows):
    """The scores of ``pipe`` of the trials ``rows`` of a DevTrials."""
    E, T = trials.enroll_vectors(), trials.test_vectors()
    counts = trials.num_utts
    raw = pipe.score(pipe.features(E, counts), pipe.features(T, 1), trials.enroll_index[rows],
                     trials.test_index[rows], counts)
    return np.asarray(raw, dtype=np.float64).reshape(len(rows), -1)[:, 0]


def _pipelines(X, y, rows, adapt, labels, lda_dim, asnorm_top_n, seed, names, keep=None):
    """{name: pipeline} of the pseudo-trained ``names`` trained on X[rows] and the
    pseudo-labels ``labels`` (per adaptation sample position; -1: none), centred on, adapted
    to and normalised with the positions ``keep`` of the adaptation sample only (all by
    default)."""
    bases = {n.partition(":")[0] for n in names}
    keep = np.ones(adapt.rows.size, bool) if keep is None else keep
    arows, labels = adapt.rows[keep], labels[keep]
    mean = _mean(adapt.vectors, arows) if not keep.all() else adapt.mean
    parts = fit_systems(X, y, rows, adapt.vectors, arows, labels, lda_dim, mean, bases)
    cohort = arows[cohort_rows(labels, seed, labels >= 0)]
    return {n: pseudo_pipeline(n, parts[n.partition(":")[0]], adapt.vectors, cohort,
                               asnorm_top_n)
            for n in names if n.partition(":")[0] in parts}


def cross_fit(X, y, rows, adapt, pseudo, asnorm_top_n, seed, dev=None):
    """{candidate: {"pseudo": scores of the pseudo-speaker trials, "dev": of the development
    trials or None}} of every pseudo-trained candidate that could be trained on both folds
    (module doc, 4); a fold's trials scored by the models that never saw its
    pseudo-speakers."""
    t = pseudo.trials
    out = {}
    for k in range(NUM_FOLDS):
        try:
            pipes = _pipelines(X, y, rows, adapt, pseudo.training_labels(k), pseudo.lda_dim,
                               asnorm_top_n, seed, CANDIDATES, pseudo.without(k))
        except (ValueError, np.linalg.LinAlgError):
            pipes = {}
        mine = np.flatnonzero(pseudo.trial_fold == k)
        for name in CANDIDATES:
            got = out.setdefault(name, {"pseudo": np.full(t.num_trials, np.nan),
                                        "dev": None if dev is None else
                                        np.zeros(dev.num_trials), "folds": 0})
            if name not in pipes:
                continue
            got["pseudo"][mine] = _scores(pipes[name], t, mine)
            if dev is not None:
                got["dev"] += _scores(pipes[name], dev, np.arange(dev.num_trials))
            got["folds"] += 1
    return {name: {"pseudo": got["pseudo"], "dev": None if dev is None else
                   got["dev"] / NUM_FOLDS}
            for name, got in out.items() if got["folds"] == NUM_FOLDS}


def train_final(X, y, adapt, pseudo, name, asnorm_top_n, seed):
    """(BackendPipeline, LDA dimension) of the pseudo-trained ``name`` on every row of X and
    every pseudo-speaker; ValueError when it cannot be trained."""
    pipes = _pipelines(X, y, np.arange(X.shape[0]), adapt, pseudo.clustering.labels,
                       pseudo.lda_dim, asnorm_top_n, seed, (name,))
    if name not in pipes:
        raise ValueError("the pseudo-trained %s could not be trained on all the data" % name)
    pipe = pipes[name]
    return pipe, pipe.lda_.affine_matrix_.shape[0] if pseudo.lda_dim else 0


def complexity(name, lda_dim, dim, num_speakers):
    """Trained parameters of a pseudo-trained candidate (models.auto.selection's order): a
    PLDA at its LDA dimension (+1: it learns from the pseudo-speakers too), the blend's
    second PLDA, the AS-norm cohort."""
    width = lda_dim or dim
    count = trained_parameters(("plda",), lda_dim, dim, num_speakers) + 1
    count += width * (width + 1) if name.startswith("pseudo_blend") else 0
    return count + (MAX_COHORT * dim if name.endswith(":as") else 0)


def cohort_rows(labels, seed, allowed=None):
    """A seeded subset of <= MAX_COHORT positions (among ``allowed``, default all) of the
    adaptation rows used: the in-domain AS-norm cohort."""
    pool = np.arange(labels.size) if allowed is None else np.flatnonzero(allowed)
    if pool.size > MAX_COHORT:
        pool = np.sort(np.random.RandomState(seed + 61).choice(pool, MAX_COHORT,
                                                               replace=False))
    return pool


def lda_dim_for(lda_dims, dim):
    """The LDA dimension of the pseudo-trained systems: the candidate dimension (>0) closest
    to half the vector dimension (the study's scenarios: 100 of 200, 50 of 80, 150 of 256),
    at most dim; 0 (no LDA) when there is none. Their LDA, re-estimated on the training
    speakers + the pseudo-speakers, is further capped by those classes - 1 (fit_systems);
    the clustering's iteration (training speakers only) by the training speakers - 1."""
    dims = [int(d) for d in lda_dims if 0 < int(d) <= dim]
    return min(dims, key=lambda d: (abs(d - dim / 2.0), d)) if dims else 0
