"""Quality measures in pAUCMetric (auto)'s final fusion / calibration (issue 34 item 3).

The kept candidate's member scores are fused (or, for one system, calibrated) by BOSARIS's
prior-weighted logistic regression (models.calibration). With quality measures the same
regression also sees, per trial, the minimum and maximum of the two sides' quality features:
a QMF exactly as train-calibration makes it (models.quality.QualityFusion; the model file is
apply-calibration's ``<LinearCalibration>`` with its measures). Two measures:

* ``duration``: seconds of speech of a side (Kaldi's utt2dur; an enrollment model's is the sum
  of its utterances'), feature log(clip(d, 0.1, 30)) as train-calibration's defaults
  (models.quality.DURATION). It needs durations of the trials the regression is learned on:
  the training vectors' (train-pauc-auto --utt2dur; the held-out trials) or, with development
  trials, theirs (--dev-utt2dur); and score-pauc-auto then needs the scored sides'
  (--enroll-duration/--test-duration).
* ``norm``: the Euclidean norm of a side's raw vector as scored (an enrollment model's mean
  vector), divided by the median norm of the raw training vectors (stored in system.txt,
  ``quality_norm_median``), feature log(clip(ratio, 0.05, 20)). It needs nothing extra: the
  vectors carry it.

Which measures (``quality_measures``): "none", an explicit set ("duration", "norm",
"duration+norm") or "auto" (default): every set the data allow ({}, {norm}, and with
durations {duration}, {duration, norm}) is cross-fitted on the trials the final calibration
is learned on, split into parts (the training folds' held-out trials: the folds; development
trials: groups of their enrolled speakers), each part's trials calibrated by the regression
learned on the other parts; the loss is the prior-weighted cross-entropy at the fusion prior
(the objective itself, Cllr's form). The simplest set (fewest measures) whose mean loss is
within one paired standard error (over the parts) of the best is kept: a measure is used only
when the held-out evidence shows it helps by more than its noise. Cost: (sets x parts)
regressions on at most max_fusion_trials trials, each a few Newton steps.
"""

import math

import numpy as np

from pauc_backend.models.calibration import LinearFusion, SeparableScoresError
from pauc_backend.models.quality import DURATION, QualityFusion, QualityMeasure

__all__ = ["MEASURES", "CHOICES", "NORM_KEY", "measure_sets", "side_norms", "norm_median",
           "quality_values", "choose_measures", "fit_calibration"]

NORM = QualityMeasure("norm", log=True, low=0.05, high=20.0)
MEASURES = {"duration": DURATION, "norm": NORM}
CHOICES = ("auto", "none", "duration", "norm", "duration+norm")
NORM_KEY = ("quality", "norm")       # where AutoBackend.features keeps the raw norms
_BLOCK = 8192                 # rows a time: 16 MB of float64 at dimension 256


def measure_sets(setting, have_durations):
    """The measure sets tried (tuples of names, simplest first); ValueError when an explicit
    set needs durations that are not given."""
    if setting == "none":
        return [()]
    if setting == "auto":
        return [(), ("norm",)] + ([("duration",), ("duration", "norm")] if have_durations
                                  else [])
    names = tuple(setting.split("+"))
    if "duration" in names and not have_durations:
        raise ValueError("quality_measures=%s needs the durations of the trials the "
                         "calibration is learned on (the training vectors', or the "
                         "development vectors' with development trials)" % setting)
    return [names]


def side_norms(X, rows=None):
    """float64 Euclidean norms of the raw vectors X (or of its ``rows``), a block at a
    time."""
    rows = np.arange(X.shape[0]) if rows is None else np.asarray(rows)
    out = np.empty(rows.size)
    for start in range(0, rows.size, _BLOCK):
        block = np.asarray(X[rows[start:start + _BLOCK]], dtype=np.float64)
        out[start:start + _BLOCK] = np.sqrt(np.einsum("ij,ij->i", block, block))
    return out


def norm_median(X):
    """The median norm of the raw training vectors (the unit of the norm measure)."""
    value = float(np.median(side_norms(X)))
    if not value > 0:
        raise ValueError("the training vectors' median norm is %g: the norm cannot be a "
                         "quality measure" % value)
    return value


def quality_values(names, durations, norms, median):
    """(enrollment side (n, M), test side (n, M)) raw quality values of ``names``, from
    ``durations`` (enroll, test) seconds per trial (None without) and ``norms`` (enroll,
    test) raw norms per trial, relative to ``median``."""
    enroll, test = [], []
    for name in names:
        if name == "duration":
            enroll.append(durations[0])
            test.append(durations[1])
        else:
            enroll.append(np.asarray(norms[0], dtype=np.float64) / median)
            test.append(np.asarray(norms[1], dtype=np.float64) / median)
    n = len(norms[0]) if norms is not None else len(durations[0])
    if not names:
        return np.zeros((n, 0)), np.zeros((n, 0))
    return np.column_stack(enroll), np.column_stack(test)


def fit_calibration(names, scores, labels, enroll_q, test_q, prior, regularization):
    """The fusion/calibration of ``scores`` (n, K) with the measures ``names``: a
    LinearFusion without any, else a QualityFusion (models.quality)."""
    if not names:
        return LinearFusion(prior=prior, regularization=regularization).fit(scores, labels)
    return QualityFusion(measures=tuple(MEASURES[n] for n in names), prior=prior,
                         regularization=regularization).fit(scores, labels, enroll_q, test_q)


def _apply(model, names, scores, enroll_q, test_q):
    if not names:
        return model.transform(scores)
    return model.transform(scores, enroll_q, test_q)


def _loss(llr, labels, prior):
    """BOSARIS's prior-weighted cross-entropy of LLRs (natural logs), the regression's
    objective without its penalty."""
    shift = math.log(prior) - math.log1p(-prior)
    tar, non = llr[labels] + shift, llr[~labels] + shift
    return float(prior * np.mean(np.logaddexp(0.0, -tar))
                 + (1 - prior) * np.mean(np.logaddexp(0.0, non)))


def choose_measures(sets, scores, labels, quality, parts, prior, regularization, rule="1se"):
    """(kept set, lines saying why): each set's loss cross-fitted over ``parts`` (a part id
    per trial; module doc). ``quality(names)`` gives (enroll, test) values of a set.
    Without two parts that each hold both classes, the simplest set is kept."""
    scores = np.asarray(scores, dtype=np.float64).reshape(len(labels), -1)
    ids = [p for p in np.unique(parts)
           if labels[parts == p].any() and (~labels[parts == p]).any()]
    if len(sets) == 1 or len(ids) < 2:
        return sets[0], (["quality measures: %s (%s)" % (
            "+".join(sets[0]) or "none", "as asked" if len(sets) == 1 else
            "fewer than two parts with both classes to compare the sets on")])
    losses = []
    for names in sets:
        enroll_q, test_q = quality(names)
        per = []
        for p in ids:
            held = parts == p
            try:
                model = fit_calibration(names, scores[~held], labels[~held], enroll_q[~held],
                                        test_q[~held], prior, regularization)
                per.append(_loss(_apply(model, names, scores[held], enroll_q[held],
                                        test_q[held]), labels[held], prior))
            except (SeparableScoresError, ValueError):
                per.append(np.nan)
        losses.append(per)
    L = np.array(losses)
    ok = [i for i in range(len(sets)) if np.all(np.isfinite(L[i]))]
    if not ok:
        return sets[0], ["quality measures: none (no set could be cross-fitted)"]
    means = L.mean(axis=1)
    best = min(ok, key=lambda i: (means[i], i))

    def se(i):
        d = L[i] - L[best]
        return float(np.std(d, ddof=1) / math.sqrt(d.size))

    kept = best if rule == "best" else min(
        (i for i in ok if means[i] - means[best] <= se(i) + 1e-12),
        key=lambda i: (len(sets[i]), means[i], i))
    lines = ["quality measures: %s (cross-fitted prior-weighted cross-entropy over %d parts: "
             "%s; %s)" % ("+".join(sets[kept]) or "none", len(ids), ", ".join(
                 "%s %.5f%s" % ("+".join(s) or "none", means[i],
                                "" if i in ok else " (failed)") for i, s in enumerate(sets)),
                          "the best" if kept == best else
                          "the simplest within one paired SE of the best, %s: only %.5f +- "
                          "%.5f above it" % ("+".join(sets[best]) or "none",
                                             means[kept] - means[best], se(kept)))]
    return sets[kept], lines
