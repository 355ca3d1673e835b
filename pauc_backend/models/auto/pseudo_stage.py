"""The in-domain stage of pAUCMetric (auto) with --adapt: the pseudo-speakers rate the
training folds' choice against the do-no-harm baselines and the pseudo-trained candidates,
and the winner becomes the final model (models.auto.pseudo's module doc says how and at
what cost). ``prepare_clustering`` runs in AutoBackend.prepare (so the baselines become
candidates of the cross-fitting when the guard passes), ``run`` at the end of
AutoBackend.finish."""

import numpy as np

from pauc_backend.models.auto import selection
from pauc_backend.models.auto import adapt as auto_adapt, pseudo, qmf
from pauc_backend.models.auto.evidence import pseudo_speaker_folds
from pauc_backend.models.auto.folds import dim_label

__all__ = ["prepare_clustering", "run"]


def prepare_clustering(settings, reporter, X, y, A):
    """The Clustering of the adaptation set (models.auto.pseudo.cluster), logged; None when
    it cannot be built (logged: too few vectors, a degenerate set)."""
    seed = settings.random_state
    arows, _ = auto_adapt.adapt_rows(A.shape[0], settings.max_adapt_vectors, seed)
    xrows, _ = auto_adapt.adapt_rows(X.shape[0], settings.max_vectors, seed + 3)
    lda_dim = pseudo.lda_dim_for(settings.lda_dims, X.shape[1])
    try:
        found = pseudo.cluster(X, y, xrows, A, arows, lda_dim, seed)
    except (ValueError, np.linalg.LinAlgError) as err:
        reporter.log("Pseudo-speakers: the adaptation set could not be clustered (%s): the "
                     "choice is the training folds' as without them" % err)
        return None
    found.arows, found.lda_dim = arows, lda_dim
    m = found.model
    q = np.percentile(m.sizes_, [0, 50, 100]) if m.sizes_.size else np.zeros(3)
    reporter.log("Pseudo-speakers of the adaptation set (%d vectors, %d clustered; average "
                 "linkage on their cosine centred on their mean, cut at %.4f (the training "
                 "speakers' EER threshold moved into the set's scores): %d clusters; one "
                 "iteration on the LLRs of a PLDA of the training + these pseudo-speakers; "
                 "pseudo-trained systems' LDA %s): %d pseudo-speakers of >= 2 vectors "
                 "(sizes min %g, median %g, max %g; %.1f %% of the vectors), %d of >= %d; "
                 "separation d' %.3f. %s" % (
                     arows.size, found.subset.size, found.threshold, found.first_count,
                     dim_label(lda_dim), m.n_clusters_, q[0], q[1], q[2],
                     100 * m.clustered_fraction_, found.usable, pseudo.MIN_RATING_SIZE,
                     m.separation_,
                     "They rate the candidates in domain (models/auto/pseudo.py)." if found.ok
                     else "Fewer than %d pseudo-speakers of >= %d vectors: not used (the "
                     "choice is the training folds')." % (pseudo.MIN_PSEUDO_SPEAKERS,
                                                          pseudo.MIN_RATING_SIZE)))
    return found


def run(est, plan, found):
    """The in-domain stage on the fitted ``est`` (its final model is the training folds'
    choice): rate, choose, and when another candidate wins, replace ``pipeline_``,
    ``members_``, ``lda_dim_``, ``fusion_`` (and what describe() reports)."""
    s, reporter = plan.settings, plan.reporter
    # the rating folds read the cross-fitting subset (models.auto.table: the table's rows,
    # or the subset's own array when the table is spooled; the cross-fitting released its
    # copy, the table still names it), the final retraining the whole table
    X, y, _, xrows, _ = plan.table.crossfit(s.max_speakers, s.max_vectors, s.random_state)
    A = plan.adapt
    adapt_mean = np.asarray(est.pipeline_.mean_, dtype=np.float32)
    cname = pseudo.choice_key("+".join(est.members_), est.lda_dim_)
    weights = np.asarray(est.fusion_.weights_, dtype=np.float64)
    rows, complexity, data = pseudo.rate(
        X, y, xrows, A, found.arows, found, found.lda_dim, adapt_mean,
        ("+".join(est.members_), est.lda_dim_, est.pipeline_, weights), s,
        est.num_speakers_)
    trials = sum(int(d[1].size) for d in data.values()) // max(1, len(data))
    evidence = pseudo_speaker_folds(rows, pseudo.describe_rating(trials, found))
    baselines = [i for i, r in enumerate(rows) if r["candidate"] in pseudo_baselines()]
    chosen, verdict = selection.choose([evidence], complexity, s.selection, baselines)

    def label(i):
        r = rows[i]
        return "%s (LDA %s)" % (r["candidate"], dim_label(r["lda_dim"]))

    lines, card = selection.explain([evidence], chosen, verdict, label)
    training = {(r["candidate"], r["lda_dim"]): r for r in est.cv_results_
                if r["budget"] == "full"}
    side = []
    for i, r in enumerate(rows):
        t = training.get((r["candidate"].partition("@")[0], r["lda_dim"]))
        side.append("in_domain_candidate %s lda %s pseudo_pauc %.6g pseudo_pauc_se %.6g "
                    "pseudo_eer %.6g training_folds_pauc %s" % (
                        r["candidate"], dim_label(r["lda_dim"]), r["pauc"],
                        evidence.standard_errors()[i], r["eer"],
                        "%.6g" % t["pauc"] if t is not None else "none"))
        reporter.log("In-domain candidate %s: pseudo-speaker folds pAUC[%g,%g] %.4f (fold SE "
                     "%.4f), EER %.2f%%; training folds %s" % (
                         label(i), s.alpha, s.beta, r["pauc"], evidence.standard_errors()[i],
                         100 * r["eer"], "%.4f" % t["pauc"] if t is not None else
                         "not rated (trained with pseudo-speakers)"))
    for line in lines:
        reporter.log("In-domain stage: " + line)
    winner = rows[chosen]["candidate"]
    est.pseudo_lines_ = (found.lines() + ["in_domain_" + line for line in card] + side
                         + ["in_domain_choice %s" % winner])
    est.pseudo_results_ = rows
    if winner == cname:
        reporter.log("In-domain stage: the training folds' choice %s is kept" % cname)
        return est
    _replace(est, plan, found, winner, data[winner], adapt_mean)
    reporter.log("In-domain stage: the final model is %s (trained on all %d training "
                 "vectors%s), calibrated on its held-out pseudo-speaker trials" % (
                     winner, plan.table.shape[0], " and every pseudo-speaker"
                     if winner.startswith("pseudo") else ""))
    return est


def pseudo_baselines():
    return ("cosine_raw", "cosine_centred")


def _replace(est, plan, found, winner, data, adapt_mean):
    s = plan.settings
    # every training vector: the table read a block at a time (models.auto.pseudo's _mean
    # and _stats; held or spooled, the same bits), never an n x D copy
    X, y, A = plan.table.X, plan.table.y, plan.adapt
    if winner.startswith("pseudo"):
        base = winner.partition(":")[0]
        parts = pseudo.fit_systems(X, y, np.arange(X.shape[0]), A, found.arows,
                                   found.labels, found.lda_dim, adapt_mean, {base})
        if base not in parts:
            raise ValueError("the pseudo-trained %s could not be trained on all the data"
                             % winner)
        cohort = found.arows[pseudo.cohort_rows(found.labels, s.random_state)]
        pipe = pseudo.pseudo_pipeline(winner, parts[base], A, cohort, s.asnorm_top_n)
        est.pseudo_title_ = pseudo.title(winner)
        lda_dim = parts[base][1].shape[0] if found.lda_dim else 0
    else:
        pipe = pseudo.baseline_pipelines(X.shape[1], adapt_mean)[winner]
        lda_dim = 0
    scores, labels = data
    row = next((r for r in est.cv_results_ if r["budget"] == "full"
                and r["candidate"] == winner and r["lda_dim"] == lda_dim), None)
    est.chosen_ = dict(row) if row is not None else dict(
        candidate=winner, lda_dim=lda_dim, pauc=float("nan"), pauc_001=float("nan"),
        eer=float("nan"), min_dcf=float("nan"))
    est.pipeline_ = pipe
    est.members_ = tuple(pipe.systems)
    est.lda_dim_ = lda_dim
    est.fusion_ = qmf.fit_calibration((), scores[:, None], labels, None, None,
                                      s.fusion_prior, s.fusion_regularization)
    est.quality_ = ()
    est.quality_norm_median_ = None
    est.quality_lines_ = ["none: the in-domain stage's winner is calibrated on its "
                          "pseudo-speaker trials without quality measures"]
    est.calibration_data_ = ("the held-out trials of the pseudo-speaker folds (%d)"
                             % labels.size)
    est.final_dev_ = None
