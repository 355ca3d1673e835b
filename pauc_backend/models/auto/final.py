"""The final fusion / calibration of pAUCMetric (auto): on which trials it is learned, and how.

Without development trials it is learned on the pooled held-out scores of every training fold
(at most ``max_fusion_trials`` of them: every target, a seeded sample of the non-targets), as
before issue 34; with development trials (models.auto.dev) on the final model's scores of
them (the back-end retrained on every training speaker scores them once more). Either way the
quality measures (durations, embedding norms) are models.auto.qmf's: kept when the
cross-fitted calibration loss says they help, over the training folds or over groups of the
development speakers. The trials' sides are as scored: a held-out side's raw norm is that of
the vector after its move into the adaptation domain (models.auto.adapt) when there is one,
an enrollment side's duration the sum of its vectors'.
"""

import numpy as np

from pauc_backend.models.auto import qmf
from pauc_backend.models.auto.store import fusion_rows
from pauc_backend.models.crossfit import trial_figures

__all__ = ["heldout_data", "dev_data", "calibrate"]


def heldout_data(plan, members, score_dim):
    """The pooled held-out trials of every fold (at most max_fusion_trials): the members'
    scores, labels, the fold of each trial, and its sides' durations and raw norms."""
    s = plan.settings
    limit, seed = s.max_fusion_trials, s.random_state + 7
    scores, labels = plan.store.pooled(score_dim, members, limit, seed)
    fold, index = plan.store.pooled_trials(limit, seed)
    data = {"scores": scores, "labels": labels, "parts": fold, "durations": None,
            "norms": None, "what": "the pooled held-out trials of the %d training folds (%d "
            "trials)" % (s.num_folds, labels.size)}
    want_norm = any("norm" in m for m in qmf.measure_sets(s.quality_measures, True))
    sides = [np.empty(labels.size) for _ in range(4)]
    for k, t in enumerate(plan.trials):
        mine = fold == k
        e, j = t.enroll_index[index[mine]], t.test_index[index[mine]]
        if plan.durations is not None:
            d = plan.durations
            sides[0][mine] = np.array([d[r].sum() for r in t.enroll_sets])[e]
            sides[1][mine] = d[t.test_rows][j]
        if want_norm:
            sides[2][mine] = qmf.side_norms(plan.held_out(k, t.enroll_vectors(plan.X)))[e]
            sides[3][mine] = qmf.side_norms(plan.held_out(k, plan.X[t.test_rows]))[j]
    if plan.durations is not None:
        data["durations"] = (sides[0], sides[1])
    if want_norm:
        data["norms"] = (sides[2], sides[3])
    return data


def _dev_sides(dev):
    """(durations, norms) of each development trial's sides (durations None without)."""
    en, tn = dev.side_norms()
    return dev.trial_durations(), (en[dev.enroll_index], tn[dev.test_index])


def dev_data(plan, pipeline):
    """The development trials scored by the final ``pipeline``: the members' scores (at
    most max_fusion_trials trials for the regression, all of them under "all_scores"),
    labels, the enrolled speakers' group of each trial, its sides' durations and raw
    norms."""
    dev, s = plan.dev, plan.settings
    raw = pipeline.score(pipeline.features(dev.enroll_vectors(), dev.num_utts),
                         pipeline.features(dev.test_vectors(), 1), dev.enroll_index,
                         dev.test_index, dev.num_utts)
    labels = dev.is_target
    groups = dev.groups(5, s.random_state)
    keep = fusion_rows(labels, s.max_fusion_trials, s.random_state + 7)
    keep = np.arange(labels.size) if keep is None else keep
    durations, norms = _dev_sides(dev)
    return {"scores": raw[keep], "labels": labels[keep],
            "parts": np.zeros(keep.size, int) if groups is None else groups[keep],
            "durations": None if durations is None else (durations[0][keep],
                                                         durations[1][keep]),
            "norms": (norms[0][keep], norms[1][keep]),
            "what": "the development trials scored by the final model (%d trials)" % keep.size,
            "all_scores": raw}


def calibrate(plan, data):
    """The fusion/calibration of the members' scores in ``data`` with the quality measures
    models.auto.qmf keeps: {"fusion", "quality" (names), "norm_median" (None without the
    norm), "lines" (why), "final_dev" (with development trials: the final model's figures
    on them, calibrated; else None)}."""
    s, reporter = plan.settings, plan.reporter
    reporter.note(where="final fusion/calibration")
    sets = qmf.measure_sets(s.quality_measures, data["durations"] is not None)
    # the median norm of every training vector (the table, held or spooled: read in blocks)
    median = qmf.norm_median(plan.table.X) if any("norm" in m for m in sets) else None

    def quality(names):
        return qmf.quality_values(names, data["durations"], data["norms"], median)

    names, lines = qmf.choose_measures(sets, data["scores"], data["labels"], quality,
                                       data["parts"], s.fusion_prior, s.fusion_regularization,
                                       s.selection)
    eq, tq = quality(names)
    fusion = qmf.fit_calibration(names, data["scores"], data["labels"], eq, tq,
                                 s.fusion_prior, s.fusion_regularization)
    for line in lines:
        reporter.log("Final calibration on %s: %s" % (data["what"], line))
    final_dev = None
    if "all_scores" in data:
        dev = plan.dev
        if names:
            eq, tq = qmf.quality_values(names, *_dev_sides(dev), median)
            fused = fusion.transform(data["all_scores"], eq, tq)
        else:
            fused = fusion.transform(data["all_scores"])
        final_dev = trial_figures(fused, dev.is_target, s.alpha, s.beta)
        reporter.log("The final model on the development trials (calibrated on them): "
                     "pAUC[%g,%g] %.4f, EER %.2f%%, minDCF(0.01) %.4f" % (
                         s.alpha, s.beta, final_dev["pauc"], 100 * final_dev["eer"],
                         final_dev["min_dcf"]))
    return {"fusion": fusion, "quality": tuple(names),
            "norm_median": median if "norm" in names else None, "lines": lines,
            "final_dev": final_dev}
