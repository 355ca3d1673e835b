"""Calibration anchors (issue 41): where should the automatic back-end learn its calibration
when the only in-domain data is an unlabelled adaptation set?

ETRI's speaker-sex shift, set up as benchmarks/etri_sex_shift.py: training = the 68 male
speakers of ETRI train/ (6,800 i-vectors); unlabelled adaptation set = the 50 female TRAINING
speakers (5,000 vectors, labels never read); measured on the female EVALUATION speakers only
(enrolled by the mean of their 3 enrollment vectors, num_utts 3, against every female test
utterance): the 14 of the "eval half" (the first 13 sorted ids are the development trials of
(e)) and all 27 (for every calibration but (e)). Fixed systems, each trained once on all the
male speakers (no LDA for the first three, as etri_sex_shift.py):

* raw cosine; cosine centred on the adaptation set's mean;
* PLDA-adp: Kaldi's PLDA of the male speakers adapted to the adaptation set (ivector-adapt-plda
  0.75/0.25, egs/sre16/v2), the scored vectors centred on its mean;
* pseudo_pooled: models/auto/pseudo.py's PLDA on the male speakers + the adaptation set's
  pseudo-speakers (LDA 100 re-estimated), what train-pauc-auto --adapt chose there.

Calibrations of each (affine LLR a s + b unless said; the supervised ones are
models.calibration.LinearFusion at prior 0.01, regularisation 1e-6, the back-end's):

(a)  the training folds: 5 speaker folds of the male set; each fold's system trained on the
     other folds, its held-out speakers enrolled by the mean of 3 vectors against their
     other vectors (models.crossfit.HeldOutTrials, enroll_utts 3), moved into the
     adaptation set's domain as train-pauc-auto --adapt does now: the fold's system centred
     on, and adapted to, the whole adaptation set (as the final system), the held-out
     vectors translated by m_a - m_k (the adaptation mean minus the mean of the vectors the
     fold's system trains on: models.auto.adapt.AdaptationSet.fold_shift; a translation
     only, no covariance map); (a0) the same folds not moved, the held-out vectors playing
     the adaptation set (centring, PLDA adaptation);
(b)  the held-out pseudo-speaker trials (models.auto.pseudo.build: the clustering, the 2
     speaker-disjoint pseudo-speaker folds and trial_set's trials, enroll_utts 3, all of
     them), what the back-end does when its pseudo-speaker stage picks a winner (each
     pseudo-speaker enrolled by the mean of up to 3 of its vectors, whatever the
     evaluation's design): fold k's trials scored (pseudo._scores) by the system trained
     with the pseudo-labels PseudoSpeakers.training_labels(k) (pseudo_pooled: without fold
     k's pseudo-speakers) and centred on, and adapted to, the adaptation set without fold
     k's vectors (PseudoSpeakers.parts / without, as models.auto.folds.SetScorer does);
     (b1) the same folds' and models' scores of at most max-pairs / 2 uniformly sampled
     pairs of single vectors per fold (sample_pairs), labelled by the clusters (the design
     of TIMIT's and VoxCeleb's trials);
(c)  models.unsupervised_calibration's two-Gaussian mixture (shared variance, fitted prior,
     EM to convergence, Hyperion's start) on the system's scores of at most 200,000 pairs of
     adaptation vectors (sample_pairs; single vector against single vector); (c20): Hyperion
     as shipped, 20 EM iterations; (d), (d20): BUT VBx's start (twoGMMcalib_lin), converged
     and as shipped; (c-prior): the prior held at the share of those pairs inside one
     pseudo-speaker; (c-sep): separate variances (quadratic LLR);
(b+c) the mixture fitted to the pseudo-speaker trial scores of (b), their labels unused;
(c-fold) the mixture on pairs of the adaptation vectors of each pseudo-speaker fold, scored
     by the system of that fold in (b) (for pseudo_pooled: not trained on them), pooled;
(e)  labelled development trials: the 13 female evaluation speakers of the development half,
     scored by the system (the upper anchor; measured on the eval half only);
(f)  diagnostic, not available to a trainer: the mixture fitted to the measured trials' own
     scores, labels unused (what is left when the pairs-to-trials transfer is perfect).

TIMIT (../shared/realdata/timit-ge2e; in-domain, no shift, single segment against single
segment): raw cosine, cosine centred on the training mean, PLDA (LDA 200, as recipes/timit);
the training set (504 speakers) plays the unlabelled adaptation set for (b)-(d); (a) 5 folds
of the training speakers (enroll_utts 0, pairs of one voiced stretch left out as the
evaluation trials leave them out, at most 300,000 trials a fold); (e) the first 31 sorted
evaluation speakers' trials, measured on the trials among the other 32 and all 63.

Measured: actDCF(0.01) (BOSARIS fast_actDCF normalised, metrics/llr.py), minDCF(0.01)
(Kaldi's compute_min_dcf.py), their ratio (issue 41 asks <= 1.3), Cllr and min Cllr (PAV;
BOSARIS cllr.m / min_cllr.m, PYLLR's translations), the EER, and the calibration error at the
EER threshold: the calibrated LLR at the score where the measured trials' miss and false
alarm rates are equal (0 for a calibration whose prior-0.5 decision is made at the EER point).
Standard errors: 200 two-way speaker bootstrap resamples (metrics/bootstrap.py's draws:
enrolled and test speakers resampled apart), the same for every row, so the difference of
actDCF against the reference row (the pseudo-speaker trials built like the evaluation's:
(b) on ETRI, (b1) on TIMIT) is paired.

Chosen on nothing: every setting (200,000 pairs, 5 folds, seeds 0, prior 0.01) was fixed
before the run; the evaluation trials choose nothing.

Output: the tables, printed and written to benchmarks/RESULTS_calibration_anchors.md with
the date, the load and the commit; a hand-written reading below the marker line
(``MARKER``) of an existing file is kept.

Usage: nice python benchmarks/calibration_anchors.py [--out=benchmarks/RESULTS_calibration_
anchors.md] [--corpora=etri,timit] [--max-pairs=200000]
"""

import argparse
import datetime
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir))
sys.path.insert(0, HERE)

from etri_sex_shift import Evaluation, female, read_set  # noqa: E402
from pauc_backend.kaldi_io import read_token_table, read_vector_table  # noqa: E402
from pauc_backend.metrics.error_rates import kaldi_eer_sorted  # noqa: E402
from pauc_backend.metrics.llr import act_dcf, cllr, min_cllr  # noqa: E402
from pauc_backend.models.auto import pseudo  # noqa: E402
from pauc_backend.models.auto.adapt import AdaptationSet  # noqa: E402
from pauc_backend.models.auto.params import DEFAULT_LDA_DIMS  # noqa: E402
from pauc_backend.models.backend_pipeline import BackendPipeline, float32_mean  # noqa: E402
from pauc_backend.models.calibration import LinearFusion  # noqa: E402
from pauc_backend.models.crossfit import HeldOutTrials, speaker_folds, trial_figures  # noqa
from pauc_backend.models.unsupervised_calibration import (  # noqa: E402
    GaussianMixtureCalibration, sample_pairs)
from run_info import commit, load  # noqa: E402

TIMIT = os.path.join(HERE, os.pardir, os.pardir, "shared", "realdata", "timit-ge2e")
PRIOR, REGULARIZATION, SEED, FOLDS, RESAMPLES = 0.01, 1e-6, 0, 5, 200

MARKER = "<!-- reading: written by hand, kept by reruns -->"

CALIBRATIONS = [
    ("folds", "(a) training folds (under a shift: translated by m_a - m_k)"),
    ("folds_unmoved", "(a0) training folds, not moved"),
    ("pseudo", "(b) pseudo-speaker trials, enrolled by <= 3 vectors (cluster labels)"),
    ("pseudo_pairs", "(b1) pseudo-speaker pairs, single vs single (cluster labels)"),
    ("gm_hyperion", "(c) 2-Gaussian on adaptation pairs, Hyperion start, converged"),
    ("gm_hyperion20", "(c20) Hyperion as shipped (20 EM iterations)"),
    ("gm_vbx", "(d) VBx start, converged"),
    ("gm_vbx20", "(d20) VBx as shipped (20 iterations)"),
    ("gm_prior", "(c-prior) prior held at the pseudo-speaker pair share"),
    ("gm_separate", "(c-sep) separate variances (quadratic)"),
    ("gm_pseudo_trials", "(b+c) 2-Gaussian on the pseudo-speaker trial scores"),
    ("gm_fold_pairs", "(c-fold) 2-Gaussian on pseudo-fold pairs, fold models"),
    ("dev", "(e) labelled development trials"),
    ("gm_eval", "(f) diagnostic: 2-Gaussian on the measured trials' own scores"),
]


def pipe_scorer(pipe):
    """score(E, counts, T, e, t): the pipeline's first column."""
    def score(E, counts, T, e, t):
        counts = np.broadcast_to(np.asarray(counts, dtype=np.float64), (E.shape[0],))
        return pipe.score(pipe.features(E, counts), pipe.features(T, 1), e, t,
                          counts)[:, 0]
    return score


# -- calibrations --------------------------------------------------------------------------------

class Calibrated:
    """A calibration: ``llr(scores)``, the data it was fitted on (``what``) or why it failed."""

    def __init__(self, llr=None, what="", error=None):
        self.llr, self.what, self.error = llr, what, error


def supervised(scores, labels, what):
    try:
        model = LinearFusion(prior=PRIOR, regularization=REGULARIZATION).fit(
            np.asarray(scores)[:, None], np.asarray(labels, bool))
    except ValueError as err:
        return Calibrated(error=str(err))
    return Calibrated(lambda s: model.transform(np.asarray(s)[:, None]),
                      "%s (%d trials, %d target)" % (what, len(labels), int(np.sum(labels))))


def mixture(scores, what, **params):
    try:
        model = GaussianMixtureCalibration(**params).fit(scores)
    except ValueError as err:
        return Calibrated(error=str(err).split(":")[0])
    return Calibrated(model.transform, "%s (%d scores; fitted prior %.4f, %d iterations%s)"
                      % (what, len(scores), model.prior_, model.n_iter_,
                         "" if model.converged_ else ", not converged"))


def mixtures(scores, what, same=None):
    """The label-free variants (c)-(d) of one score pool; ``same``: which pairs lie inside
    one pseudo-speaker (for c-prior)."""
    out = {"gm_hyperion": mixture(scores, what),
           "gm_hyperion20": mixture(scores, what, max_iter=20, tol=0.0),
           "gm_vbx": mixture(scores, what, init="vbx"),
           "gm_vbx20": mixture(scores, what, init="vbx", max_iter=20, tol=0.0),
           "gm_separate": mixture(scores, what, covariance="separate")}
    if same is not None:
        share = float(np.mean(same))
        out["gm_prior"] = (mixture(scores, what + ", prior %.4f" % share, prior=share)
                           if 0 < share < 1 else Calibrated(error="no pair in a pseudo-speaker"))
    return out


# -- measuring -----------------------------------------------------------------------------------

def raw_figures(scores, target):
    f = trial_figures(scores, target, 0.0, 0.01)
    tar, non = np.sort(scores[target]), np.sort(scores[~target])
    eer, threshold = kaldi_eer_sorted(tar.astype(np.float32), non.astype(np.float32))
    return {"min_dcf": f["min_dcf"], "eer": eer, "eer_threshold": float(threshold),
            "min_cllr": min_cllr(tar, non)}


def calibrated_figures(cal, scores, target, raw):
    if cal.error is not None:
        return None
    llr = np.asarray(cal.llr(scores), dtype=np.float64)
    a = act_dcf(llr[target], llr[~target], PRIOR)
    return {"act_dcf": a, "ratio": a / raw["min_dcf"] if raw["min_dcf"] > 0 else np.inf,
            "cllr": cllr(llr[target], llr[~target]),
            "llr_at_eer": float(np.asarray(cal.llr(np.array([raw["eer_threshold"]])))[0])}


# -- ETRI ----------------------------------------------------------------------------------------

def etri_systems(Xm, ym, Xf, clustering, lda_dim):
    """{name: function(train rows, centring/adaptation vectors A, pseudo-labels of A or None)
    -> fitted BackendPipeline}: each system trained on Xm[rows]; pseudo_pooled with the
    pseudo-labels given (of A's vectors), or with None the clustering's of all of Xf, centred
    on A's mean either way."""
    def raw(rows, A, labels):
        return BackendPipeline(lda_dim=0, systems=("cosine_raw",)).fit(Xm, ym[rows], rows=rows)

    def centred(rows, A, labels):
        return BackendPipeline(lda_dim=0, systems=("cosine_centred",)).fit(
            Xm, ym[rows], rows=rows, adapt=A)

    def plda_adp(rows, A, labels):
        return BackendPipeline(lda_dim=0, systems=("plda_adapt",), enroll_utts=3).fit(
            Xm, ym[rows], rows=rows, adapt=A)

    def pooled(rows, A, labels):
        P, labels = (Xf, clustering.labels) if labels is None else (A, labels)
        prows = np.arange(P.shape[0])
        parts = pseudo.fit_systems(Xm, ym, rows, P, prows, labels, lda_dim,
                                   float32_mean(P, prows), {"pseudo_pooled"})
        mean, W, plda = parts["pseudo_pooled"]
        return pseudo.pseudo_pipeline("pseudo_pooled", (float32_mean(A, np.arange(len(A))),
                                                        W, plda), P, None, 100)

    return {"raw cosine": raw, "cosine centred on the adaptation mean": centred,
            "PLDA-adp": plda_adp, "pseudo_pooled (PLDA on male + pseudo-speakers, LDA %d)"
            % lda_dim: pooled}


def adaptation_set(A):
    """models.auto.adapt.AdaptationSet of all of A (no sample: limit 0)."""
    return AdaptationSet.of(A, A.shape[1], 0, SEED)


def pseudo_speakers(X, y, A, log, what):
    """models.auto.pseudo.build's PseudoSpeakers of the adaptation vectors A (training X, y
    giving the stopping rule and the iteration's PLDA): the clustering, the 2 pseudo-speaker
    folds and all their trials (enroll_utts 3, no cap); None (logged) when the guard says
    no."""
    t0 = time.process_time()
    found, text = pseudo.build(X, y, np.arange(y.size), adaptation_set(A), DEFAULT_LDA_DIMS,
                               3, 0, SEED)
    log("%s: %s; %.0f s CPU" % (what, text, time.process_time() - t0))
    if found is not None:
        t = found.trials
        log("  pseudo-speaker trials: %d (%d target) in %d folds" % (
            t.num_trials, t.num_target, pseudo.NUM_FOLDS))
    return found


def fold_scores(make, X, y, enroll_utts, A=None, max_trials=None, groups=None):
    """Pooled held-out scores and labels of 5 speaker folds: (moved, unmoved) when an
    adaptation set A is given, else (unmoved, None). Unmoved: the fold's system centred on
    (adapted to) its held-out vectors; moved: centred on (adapted to) A, the held-out vectors
    translated by m_a - m_k (AdaptationSet.fold_shift)."""
    speakers, fold = speaker_folds(y, FOLDS, SEED)
    of_vector = fold[np.searchsorted(speakers, y)]
    adapt = None if A is None else adaptation_set(A)
    out = {"moved": ([], []), "unmoved": ([], [])}
    for k in range(FOLDS):
        held = np.flatnonzero(of_vector == k)
        train = np.flatnonzero(of_vector != k)
        t = HeldOutTrials(y, held, enroll_utts=enroll_utts, random_state=SEED + k,
                          max_trials=max_trials, groups=groups)
        E, T = t.enroll_vectors(X), np.asarray(X[t.test_rows], dtype=np.float32)
        counts = np.full(E.shape[0], t.num_utts)
        versions = [("unmoved", E, T, X[held])]
        if adapt is not None:
            shift = adapt.fold_shift(X, train)
            versions.append(("moved", (E + shift).astype(np.float32),
                             (T + shift).astype(np.float32), A))
        for key, e, tt, own in versions:
            s = pipe_scorer(make(train, own, None))(e, counts, tt, t.enroll_index,
                                                    t.test_index)
            out[key][0].append(s)
            out[key][1].append(t.is_target)
    return {k: (np.concatenate(v[0]), np.concatenate(v[1])) for k, v in out.items() if v[0]}


def pseudo_sources(make, A, found, max_pairs):
    """(b), (b1) and (c-fold): the scores and labels of the pseudo-speaker trials (each fold's
    scored by its own system), and pooled scores and cluster labels of uniformly sampled
    pairs within each fold, by the same systems. Fold k's system: ``make(A's vectors but
    fold k's, their pseudo-labels without fold k's pseudo-speakers)``."""
    t = found.trials
    labels = found.clustering.labels
    scores = np.full(t.num_trials, np.nan)
    pair_scores, pair_target = [], []
    for k, (rows, arows) in enumerate(found.parts(np.arange(A.shape[0]))):
        pipe = make(A[arows], found.training_labels(k)[arows])
        scores[rows] = pseudo._scores(pipe, t, rows)
        mine = np.flatnonzero(found.fold == k)
        i, j = sample_pairs(mine.size, max_pairs // pseudo.NUM_FOLDS, SEED + k)
        V = np.asarray(A[mine], dtype=np.float32)
        pair_scores.append(pipe_scorer(pipe)(V, np.ones(V.shape[0]), V, i, j))
        pair_target.append(labels[mine[i]] == labels[mine[j]])
    return (scores, np.asarray(t.is_target, bool), np.concatenate(pair_scores),
            np.concatenate(pair_target))


def adaptation_pairs(scorer, A, labels, max_pairs):
    i, j = sample_pairs(A.shape[0], max_pairs, SEED)
    V = np.asarray(A, dtype=np.float32)
    same = (labels[i] == labels[j]) & (labels[i] >= 0)
    return scorer(V, np.ones(V.shape[0]), V, i, j), same


def calibrate_system(name, make, final, X, y, A, found, dev, max_pairs, enroll_utts,
                     move, fold_kw, log):
    """Every calibration of one system: {key: Calibrated}; ``final``: the scorer of the system
    trained on all of X, centred on A; ``found``: the PseudoSpeakers of A or None; ``move``:
    the training folds also moved into A's domain (a shift), as train-pauc-auto --adapt
    does."""
    cal = {}
    t0 = time.process_time()
    folds = fold_scores(make, X, y, enroll_utts, A if move else None, **fold_kw)
    if "moved" in folds:
        cal["folds"] = supervised(*folds["moved"], "held-out trials of 5 male folds, moved")
        cal["folds_unmoved"] = supervised(*folds["unmoved"], "the same, not moved")
    else:
        cal["folds"] = supervised(*folds["unmoved"], "held-out trials of 5 training folds")
    log("  %s: folds %.0f s CPU" % (name, time.process_time() - t0))
    if found is not None:
        s, tgt, fold_pairs, pair_tgt = pseudo_sources(
            lambda B, labels: make(np.arange(X.shape[0]), B, labels), A, found, max_pairs)
        cal["pseudo"] = supervised(s, tgt, "held-out pseudo-speaker trials")
        cal["pseudo_pairs"] = supervised(fold_pairs, pair_tgt, "pairs within each "
                                         "pseudo-speaker fold, cluster labels")
        cal["gm_pseudo_trials"] = mixture(s, "pseudo-speaker trial scores, labels unused")
        cal["gm_fold_pairs"] = mixture(fold_pairs, "pairs within each pseudo-speaker fold")
        log("  %s: pseudo-speaker sources %.0f s CPU" % (name, time.process_time() - t0))
    labels = (found.clustering.labels if found is not None
              else np.full(A.shape[0], -1, dtype=np.int64))
    pairs, same = adaptation_pairs(final, A, labels, max_pairs)
    cal.update(mixtures(pairs, "adaptation pairs", same if found is not None else None))
    dev_scores, dev_target = dev(final)
    cal["dev"] = supervised(dev_scores, dev_target, "development trials")
    log("  %s: all calibrations %.0f s CPU" % (name, time.process_time() - t0))
    return cal


def speaker_bootstrap(raw_scores, target, enroll_cluster, test_cluster, llrs):
    """Two-way cluster bootstrap (metrics/bootstrap.py's draws: enrolled speakers and test
    speakers resampled apart) of actDCF(0.01) of each calibration in ``llrs`` and of
    minDCF(0.01): {key: actDCF per resample}, minDCF per resample (NaN when a class is
    lost)."""
    from pauc_backend.metrics.bootstrap import cluster_codes, resample_multiplicities
    e_code, num_e = cluster_codes(enroll_cluster)
    t_code, num_t = cluster_codes(test_cluster)
    order = np.argsort(raw_scores, kind="stable")
    tar_sorted = target[order]
    theta = np.log1p(-PRIOR) - np.log(PRIOR)
    miss = {k: np.flatnonzero(target & (llr < theta)) for k, llr in llrs.items()}
    fa = {k: np.flatnonzero(~target & (llr >= theta)) for k, llr in llrs.items()}
    acts = {k: np.full(RESAMPLES, np.nan) for k in llrs}
    mins = np.full(RESAMPLES, np.nan)
    for r, (a, b) in enumerate(resample_multiplicities(SEED, RESAMPLES, num_e, num_t)):
        w = (a[e_code] * b[t_code]).astype(np.float64)
        w_tar, w_non = w[target].sum(), w[~target].sum()
        if w_tar == 0 or w_non == 0:
            continue
        ws = w[order]
        cum_tar = np.cumsum(np.where(tar_sorted, ws, 0.0))
        cum_non = np.cumsum(np.where(tar_sorted, 0.0, ws))
        mins[r] = np.min(PRIOR * cum_tar / w_tar + (1 - PRIOR) * (1 - cum_non / w_non)) / PRIOR
        for k in llrs:
            acts[k][r] = (PRIOR * w[miss[k]].sum() / w_tar
                          + (1 - PRIOR) * w[fa[k]].sum() / w_non) / PRIOR
    return acts, mins


def measure(name, cal, sets, reference, log):
    """{set: (raw figures, {key: (Calibrated, calibrated figures or None)})}, with ``gm_eval``
    per set and the speaker-bootstrap SEs of actDCF, of the ratio and of the paired
    difference of actDCF against the calibration ``reference`` (the pseudo-speaker trials
    of the evaluation's design)."""
    out = {}
    for where, (scores, target, ec, tc) in sets.items():
        raw = raw_figures(scores, target)
        rows = {}
        for key, c in cal.items():
            if key == "dev" and where != "eval half":
                continue
            rows[key] = (c, calibrated_figures(c, scores, target, raw))
        c = mixture(scores, "the measured trials' scores")
        rows["gm_eval"] = (c, calibrated_figures(c, scores, target, raw))
        llrs = {k: np.asarray(c.llr(scores), np.float64) for k, (c, f) in rows.items() if f}
        acts, mins = speaker_bootstrap(scores, target, ec, tc, llrs)
        for k, a in acts.items():
            f = rows[k][1]
            f["act_se"] = float(np.nanstd(a))
            f["ratio_se"] = float(np.nanstd(a / mins))
            f["is_ref"] = k == reference
            if reference in acts and k != reference:
                f["diff_b"] = f["act_dcf"] - rows[reference][1]["act_dcf"]
                f["diff_b_se"] = float(np.nanstd(a - acts[reference]))
        out[where] = (raw, rows)
        log("  %s on %s: minDCF %.4f; %s" % (name, where, raw["min_dcf"], ", ".join(
            "%s %.3f" % (k, f["act_dcf"]) for k, (c, f) in rows.items() if f)))
    return out


def run_etri(max_pairs, log):
    train, enroll, test = read_set("train"), read_set("enroll"), read_set("test")
    _, X, y = train
    male = ~female(y)
    Xm, ym, Xf = X[male], y[male], X[female(y)]
    speakers = sorted(set(enroll[2][female(enroll[2])]))
    half = len(speakers) // 2
    evals = {"eval half": Evaluation(enroll, test, speakers[half:]),
             "all 27": Evaluation(enroll, test, speakers)}
    dev_eval = Evaluation(enroll, test, speakers[:half])
    found = pseudo_speakers(Xm, ym, Xf, log, "ETRI: %d male vectors, %d adaptation vectors"
                            % (ym.size, Xf.shape[0]))
    if found is None:
        raise RuntimeError("ETRI: no pseudo-speakers (pseudo_pooled needs them)")
    clustering = found.clustering
    results = []
    for name, make in etri_systems(Xm, ym, Xf, clustering, found.lda_dim).items():
        final = pipe_scorer(make(np.arange(ym.size), Xf, None))

        def dev(scorer):
            d = dev_eval
            return scorer(d.models, d.counts, d.test, d.e, d.t), d.target
        cal = calibrate_system(name, make, final, Xm, ym, Xf, found, dev, max_pairs, 3,
                               True, {}, log)
        sets = {k: (np.asarray(final(v.models, v.counts, v.test, v.e, v.t), np.float64),
                    v.target, np.array(v.speakers)[v.e], v.test_speaker[v.t])
                for k, v in evals.items()}
        results.append((name, measure(name, cal, sets, "pseudo", log)))
    info = ("ETRI male -> female: 68 male training speakers (6,800 vectors), 5,000 unlabelled "
            "female adaptation vectors (%d pseudo-speakers, %d of >= 4 vectors), eval half "
            "%d trials (%d target), all 27: %d trials (%d target), development half %d "
            "trials (%d target)" % (clustering.model.n_clusters_, clustering.usable,
                                    evals["eval half"].target.size,
                                    evals["eval half"].target.sum(),
                                    evals["all 27"].target.size, evals["all 27"].target.sum(),
                                    dev_eval.target.size, dev_eval.target.sum()))
    return info, results


# -- TIMIT ---------------------------------------------------------------------------------------

def read_timit(name):
    keys, X = read_vector_table("ark:%s" % os.path.join(TIMIT, name, "xvector.ark"))
    utt2spk = read_token_table("ark:%s" % os.path.join(TIMIT, name, "utt2spk"))
    return np.asarray(keys), X.astype(np.float32), np.array([utt2spk[k] for k in keys])


def stretch_groups(keys, speakers):
    """Segments 2i and 2i+1 of a speaker come from one voiced stretch."""
    return np.array(["%s-%d" % (s, int(k.rsplit("seg", 1)[1]) // 2)
                     for k, s in zip(keys, speakers)])


def run_timit(max_pairs, log):
    keys, X, y = read_timit("train")
    ekeys, E, ey = read_timit("eval")
    where = {k: i for i, k in enumerate(ekeys)}
    a, b, target = [], [], []
    with open(os.path.join(TIMIT, "eval", "trials")) as f:
        for line in f:
            u, v, lab = line.split()
            a.append(where[u])
            b.append(where[v])
            target.append(lab == "target")
    a, b, target = np.array(a), np.array(b), np.array(target)
    speakers = sorted(set(ey))
    half = len(speakers) // 2
    dev_spk, eval_spk = set(speakers[:half]), set(speakers[half:])
    in_dev = np.array([s in dev_spk for s in ey])
    in_eval = np.array([s in eval_spk for s in ey])
    masks = {"eval half": in_eval[a] & in_eval[b], "all 63": np.ones(a.size, bool)}
    dev_mask = in_dev[a] & in_dev[b]
    groups = stretch_groups(keys, y)

    def system(kind):
        fitted = {}

        def make(rows, A, labels):
            """The system on X[rows] (A and labels unused: nothing here is centred on or
            adapted to the unlabelled set), fitted once per set of rows."""
            key = rows.tobytes()
            if key not in fitted:
                pipe = (BackendPipeline(lda_dim=200, systems=("plda",)) if kind == "plda"
                        else BackendPipeline(lda_dim=0, systems=(kind,)))
                fitted[key] = pipe.fit(X, y[rows], rows=rows)
            return fitted[key]
        return make

    found = pseudo_speakers(X, y, X, log, "TIMIT: %d training vectors as the unlabelled set"
                            % y.size)
    clustering = None if found is None else found.clustering
    results = []
    for name, kind in (("raw cosine", "cosine_raw"),
                       ("cosine centred on the training mean", "cosine_centred"),
                       ("PLDA (LDA 200)", "plda")):
        make = system(kind)
        final = pipe_scorer(make(np.arange(y.size), X, None))
        ones = np.ones(E.shape[0])

        def dev(scorer):
            return scorer(E, ones, E, a[dev_mask], b[dev_mask]), target[dev_mask]
        cal = calibrate_system(name, make, final, X, y, X, found, dev, max_pairs, 0,
                               False, {"max_trials": 300000, "groups": groups}, log)
        scores = np.asarray(final(E, ones, E, a, b), np.float64)
        sets = {k: (scores[m], target[m], ey[a[m]], ey[b[m]]) for k, m in masks.items()}
        results.append((name, measure(name, cal, sets, "pseudo_pairs", log)))
    info = ("TIMIT (in-domain): 504 training speakers (7,430 vectors, also the unlabelled set: "
            "%s), evaluation trials among the other 32 speakers "
            "%d (%d target), all 63: %d (%d target), development trials among the first 31: "
            "%d (%d target)" % ("no pseudo-speakers" if clustering is None else
                                "%d pseudo-speakers, %d of >= 4" % (
                                    clustering.model.n_clusters_, clustering.usable),
                                masks["eval half"].sum(), target[masks["eval half"]].sum(),
                                a.size, target.sum(), dev_mask.sum(), target[dev_mask].sum()))
    return info, results


# -- report --------------------------------------------------------------------------------------

def table(results):
    lines = []
    for name, sets in results:
        where = list(sets)
        head = "; ".join("%s: minDCF %.4f, min Cllr %.4f, EER %.2f %%" % (
            w, sets[w][0]["min_dcf"], sets[w][0]["min_cllr"], 100 * sets[w][0]["eer"])
            for w in where)
        lines += ["", "**%s** (%s)" % (name, head), "",
                  "| calibration | " + " | ".join(
                      "actDCF %s | ratio %s | actDCF - ref %s | Cllr %s | LLR@EER %s"
                      % ((w,) * 5) for w in where) + " | fitted on |",
                  "|---|" + "---|" * (5 * len(where) + 1)]
        for key, title in CALIBRATIONS:
            cells, whats = [], []
            for w in where:
                got = sets[w][1].get(key)
                if got is None:
                    cells.append("- | - | - | - | -")
                    continue
                c, f = got
                what = c.what if c.error is None else "fails: " + c.error
                if what not in whats:
                    whats.append(what)
                if f is None:
                    cells.append("- | - | - | - | -")
                    continue
                diff = ("%+.4f (%.4f)" % (f["diff_b"], f["diff_b_se"])
                        if "diff_b" in f else "ref" if f.get("is_ref") else "-")
                cells.append("%.4f (%.4f) | **%.2f** (%.2f) | %s | %.4f | %+.2f" % (
                    f["act_dcf"], f["act_se"], f["ratio"], f["ratio_se"], diff, f["cllr"],
                    f["llr_at_eer"]))
            if not whats:
                continue
            lines.append("| %s | %s | %s |" % (title, " | ".join(cells), " / ".join(whats)))
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS_calibration_anchors.md"))
    ap.add_argument("--corpora", default="etri,timit")
    ap.add_argument("--max-pairs", type=int, default=200000)
    args = ap.parse_args(argv)
    started, cpu0, load_before = time.time(), time.process_time(), load()
    log = lambda text: print(text, flush=True)       # noqa: E731
    parts = []
    for corpus in [c.strip() for c in args.corpora.split(",") if c.strip()]:
        run = {"etri": run_etri, "timit": run_timit}[corpus]
        parts.append(run(args.max_pairs, log))
    lines = ["# Calibration anchors: where the automatic back-end learns its calibration",
             "", "Written by `benchmarks/calibration_anchors.py` (its docstring says what is "
             "trained and calibrated on what). Run %s, commit %s, %.0f s wall, %.0f s CPU; "
             "load before: `%s`; after: `%s`." % (
                 datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), commit(),
                 time.time() - started, time.process_time() - cpu0, load_before, load()),
             "", "Chosen on nothing: every setting was fixed before the run; the measured "
             "trials choose nothing. ratio = actDCF(0.01) / minDCF(0.01) (issue 41: <= 1.3). "
             "LLR@EER: the calibrated LLR at the measured trials' EER threshold (nats; 0 = the "
             "prior-0.5 decision at the EER point). In brackets: standard errors over %d "
             "two-way speaker bootstrap resamples (enrolled and test speakers resampled apart, "
             "the same resamples for every row, so actDCF - ref is paired; ref: the "
             "pseudo-speaker trials built like the evaluation's, (b) on ETRI, (b1) on "
             "TIMIT). (f) is a "
             "diagnostic no trainer can have." % RESAMPLES]
    for info, results in parts:
        lines += ["", "## " + info.split(":")[0], "", info + "."] + table(results)
    text = "\n".join(lines) + "\n"
    print(text)
    # a hand-written reading below the marker survives a rerun
    if os.path.exists(args.out):
        with open(args.out) as f:
            old = f.read()
        if MARKER in old:
            text += "\n" + old[old.index(MARKER):]
    with open(args.out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
