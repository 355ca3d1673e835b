"""The final model of pAUCMetric (auto): the chosen candidate trained once, and its
calibration learned where the scores will live.

``train`` trains the kept candidate (models.auto.choice.Choice) once on every training vector
(held or spooled: the table is read a block at a time): a cross-fitted candidate as its
BackendPipeline, centred on and adapted to the adaptation sample when there is one; a
pseudo-trained one on every training vector and every pseudo-speaker (models.auto.pseudo).

``held_out_data`` (before the cross-fitting's stores are released) or ``final_data`` (after
the final training) gives the trials the final fusion / calibration is learned on: those of
the source that rated the choice (models.auto.selection), the most in-domain one trusted:

* development trials: the final model's scores of them (their speakers are in no training
  set);
* pseudo-speaker trials: the candidate's held-out scores of them, by models that saw none of
  their vectors, even unlabelled (the folds' models of a cross-fitted candidate, averaged,
  each adapted to the adaptation sample without the trials' fold; a pseudo-trained one's
  models of the other pseudo-speaker fold): the final model was centred on and adapted to
  those vectors, and a pseudo-trained one trained on their pseudo-speakers;
* the training folds: the pooled held-out scores of every fold (at most
  ``max_fusion_trials``: every target, a seeded sample of the non-targets).

``calibrate`` fits the fusion (BOSARIS's LinearFusion, models.calibration) with the quality
measures models.auto.qmf keeps: cross-fitted over parts of those trials (development and
pseudo-speaker trials: groups of their enrolled speakers; training folds: the folds). A
quality measure learned on the training folds alone is not applied unless asked for
(``quality_measures`` naming it): those trials are of the training domain, and a measure
learned there can rank the user's trials worse than none. Durations that the calibration
cannot use (given for trials it is not learned on) are named in one WARNING.
"""

from dataclasses import dataclass

import numpy as np

from pauc_backend.models.auto import adapt as auto_adapt, pseudo, qmf
from pauc_backend.models.auto.choice import choose
from pauc_backend.models.auto.evidence import DEV_TRIALS, PSEUDO_TRIALS, TRAINING_FOLDS
from pauc_backend.models.auto.folds import dim_label
from pauc_backend.models.auto.store import fusion_rows
from pauc_backend.models.crossfit import trial_figures
from pauc_backend.models.systems import base_system, candidate_title

__all__ = ["FinalModel", "fit", "card", "fusion_lines"]

_DURATIONS = {TRAINING_FOLDS: "durations; train-pauc-auto --utt2dur",
              PSEUDO_TRIALS: "adapt_durations; train-pauc-auto --adapt-utt2dur",
              DEV_TRIALS: "the development trials' durations; train-pauc-auto --dev-utt2dur"}


@dataclass(frozen=True)
class FinalModel:
    """The fitted final model: the ``choice`` (models.auto.choice.Choice), the ``pipeline``
    (a models.backend_pipeline.BackendPipeline), its ``lda_dim``, the ``fusion``
    (LinearFusion or QualityFusion), the ``quality`` measures' names, ``norm_median`` (the
    unit of the norm measure, or None), ``domain`` (models.domain.TrainingDomain of the
    scored vectors), ``calibration`` (what it was learned on, a sentence), ``card`` (its
    system.txt lines after the choice's: sample, calibration, adaptation)."""
    choice: object
    pipeline: object
    lda_dim: int
    fusion: object
    quality: tuple
    norm_median: object
    domain: object
    calibration: str
    card: tuple


def fit(inputs, cross, make_pipeline, reporter):
    """The FinalModel of a finished cross-fitting ``cross`` (every stage added): the choice,
    the calibration trials that need the held-out scores, the stores released, the final
    model trained once, its calibration and domain (module doc)."""
    choice = choose(cross, inputs, reporter)
    early = held_out_data(inputs, choice, cross)
    cross.release()
    inputs.table.release_subset()
    pipe, lda_dim, card = train(inputs, choice, make_pipeline, cross.dplda_lambda, reporter)
    data = early if early is not None else final_data(inputs, choice, pipe)
    fusion, names, median, lines = calibrate(inputs, data, reporter)
    domain, adapt_lines = domain_and_report(inputs, pipe, reporter)
    return FinalModel(choice, pipe, lda_dim, fusion, names, median, domain, data["what"],
                      tuple(card + lines + adapt_lines))


def train(inputs, choice, make_pipeline, dplda_lambda, reporter):
    """(the fitted pipeline of the kept candidate on every training vector, its LDA
    dimension, lines for system.txt)."""
    s, table, adapt = inputs.settings, inputs.table, inputs.adapt
    X, y = table.X, table.y
    lines = []
    if choice.is_pseudo:
        reporter.note(where="final %s on all %d training vectors and every pseudo-speaker"
                      % (choice.name, X.shape[0]))
        pipe, lda_dim = pseudo.train_final(X, y, adapt, inputs.pseudo, choice.name,
                                           s.asnorm_top_n, s.random_state)
        return pipe, lda_dim, lines
    name, dim = choice.name, choice.lda_dim
    pipe = make_pipeline(dim, choice.chosen_members, s.random_state)
    if dplda_lambda is not None:                  # only the cross-fitted lambda
        pipe.dplda_lambdas = (dplda_lambda,)
        pipe.dplda_lambda = dplda_lambda
    reporter.begin()
    pipe.progress = reporter.pipeline_progress(
        "final %s (LDA %s) on all %d speakers" % (name, dim_label(dim), table.num_speakers))
    try:
        pipe.fit(X, y, n_jobs=s.n_jobs, adapt=None if adapt is None else adapt.vectors,
                 adapt_rows=None if adapt is None else adapt.rows)
    finally:
        pipe.progress = None
    used, total = getattr(pipe, "metric_rows_", (0, 0))
    if used < total:
        lines.append("final_metric_vectors %d of %d" % (used, total))
        reporter.log("The final pAUCMetrics trained on %d of the %d training vectors (the "
                     "same seeded cap on each speaker's count; max_metric_vectors)"
                     % (used, total))
    return pipe, dim, lines


def training_folds_data(cross, members, score_dim, durations):
    """The pooled held-out trials of every training fold (at most max_fusion_trials): the
    members' scores, labels, the fold of each trial, and its sides' durations (from
    ``durations``, one per vector of the cross-fitting's X) and raw norms (the held-out
    vectors as scored)."""
    s = cross.settings
    if not cross.store.has_columns(score_dim, members):
        cross.recompute(score_dim, members)
    limit, seed = s.max_fusion_trials, s.random_state + 7
    scores, labels = cross.store.pooled(score_dim, members, limit, seed)
    fold, index = cross.store.pooled_trials(limit, seed)
    sides = [np.empty(labels.size) for _ in range(4)]
    for k, t in enumerate(cross.trials):
        mine = fold == k
        e, j = t.enroll_index[index[mine]], t.test_index[index[mine]]
        if durations is not None:
            sides[0][mine] = np.array([durations[r].sum() for r in t.enroll_sets])[e]
            sides[1][mine] = durations[t.test_rows][j]
        sides[2][mine] = qmf.side_norms(cross.held_out(k, t.enroll_vectors(cross.X)))[e]
        sides[3][mine] = qmf.side_norms(cross.held_out(k, cross.X[t.test_rows]))[j]
    return {"scores": scores, "labels": labels, "parts": fold, "source": TRAINING_FOLDS,
            "durations": None if durations is None else (sides[0], sides[1]),
            "norms": (sides[2], sides[3]),
            "what": "the pooled held-out trials of the %d training folds (%d trials)"
                    % (s.num_folds, labels.size)}


def trials_data(trials, source, scores, settings, what):
    """The in-domain trials ``trials`` (a DevTrials) with the members' ``scores`` (trials x
    members) as ``calibrate`` reads them: at most max_fusion_trials for the regression (all
    of them under "all_scores"), the enrolled speakers' group of each trial, its sides'
    durations and raw norms."""
    s = settings
    scores = np.asarray(scores, dtype=np.float64).reshape(trials.num_trials, -1)
    labels = trials.is_target
    groups = trials.groups(5, s.random_state)
    keep = fusion_rows(labels, s.max_fusion_trials, s.random_state + 7)
    keep = np.arange(labels.size) if keep is None else keep
    durations = trials.trial_durations()
    en, tn = trials.side_norms()
    norms = (en[trials.enroll_index], tn[trials.test_index])
    return {"scores": scores[keep], "labels": labels[keep], "source": source,
            "parts": np.zeros(keep.size, int) if groups is None else groups[keep],
            "durations": None if durations is None else (durations[0][keep],
                                                         durations[1][keep]),
            "norms": (norms[0][keep], norms[1][keep]), "trials": trials,
            "what": "%s (%d trials)" % (what, keep.size), "all_scores": scores}


def final_scores(pipe, trials):
    """The final pipeline's member scores of a DevTrials (trials x members)."""
    raw = pipe.score(pipe.features(trials.enroll_vectors(), trials.num_utts),
                     pipe.features(trials.test_vectors(), 1), trials.enroll_index,
                     trials.test_index, trials.num_utts)
    return np.asarray(raw, dtype=np.float64).reshape(trials.num_trials, -1)


def held_out_data(inputs, choice, cross):
    """The calibration trials that need the cross-fitting's held-out scores (module doc):
    the training folds' when they rated, a pseudo-trained candidate's pseudo-speaker trials;
    None when the final model's scores are needed (taken before the stores are
    released)."""
    if choice.source == TRAINING_FOLDS:
        durations = inputs.durations
        if durations is not None:
            durations = inputs.table.of_crossfit(durations, cross.X)
        return training_folds_data(cross, choice.chosen_members, choice.score_dim, durations)
    if choice.source == PSEUDO_TRIALS:
        sets = cross.sets[PSEUDO_TRIALS]
        members, dim = choice.chosen_members, choice.score_dim
        if not sets.has(dim, members):
            cross.recompute(dim, members)
        columns = np.column_stack([sets.column(dim, m) for m in members])
        return trials_data(inputs.pseudo.trials, PSEUDO_TRIALS, columns, inputs.settings,
                           "the pseudo-speaker trials, scored by models that saw none of "
                           "their vectors")
    return None


def final_data(inputs, choice, pipe):
    """The calibration trials of an in-domain source scored by the final ``pipe``."""
    trials = inputs.trial_sets[choice.source].trials
    return trials_data(trials, choice.source, final_scores(pipe, trials), inputs.settings,
                       "the %s scored by the final model" % choice.source)


def _unused_durations(inputs, source, sets):
    """The durations given but not used by the calibration, and why (one sentence), or
    None."""
    have_train = inputs.durations is not None
    have_adapt = inputs.adapt is not None and inputs.adapt.durations is not None
    have_dev = inputs.dev is not None and inputs.dev.durations is not None
    uses = any("duration" in m for m in sets)
    unused = []
    if have_train and not (source == TRAINING_FOLDS and uses):
        unused.append("of the training vectors")
    if have_adapt and not (source == PSEUDO_TRIALS and uses):
        unused.append("of the adaptation vectors")
    if have_dev and not (source == DEV_TRIALS and uses):
        unused.append("of the development vectors")
    if not unused:
        return None
    if source == TRAINING_FOLDS and not uses:
        why = ("a quality measure learned on the training folds alone is not applied unless "
               "asked for (quality_measures=duration): those trials are of the training "
               "domain")
    else:
        why = "the calibration is learned on the %s%s" % (
            source, "" if source == TRAINING_FOLDS or uses else
            ", whose durations are not given")
    return "the durations %s are not used: %s" % (" and ".join(unused), why)


def calibrate(inputs, data, reporter):
    """The fusion/calibration of the members' scores in ``data`` with the quality measures
    models.auto.qmf keeps (module doc): (fusion, names of the measures, norm median or None,
    lines for system.txt)."""
    s = inputs.settings
    reporter.note(where="fusion weights of the chosen system, on the %s" % data["what"])
    have = data["durations"] is not None
    setting = s.quality_measures
    if data["source"] == TRAINING_FOLDS and setting == "auto":
        sets = [()]
    else:
        try:
            sets = qmf.measure_sets(setting, have)
        except ValueError:
            raise ValueError("quality_measures=%s needs the durations of the trials the "
                             "calibration is learned on, the %s: give them (%s)" % (
                                 setting, data["source"], _DURATIONS[data["source"]])) from None
    unused = _unused_durations(inputs, data["source"], sets)
    if unused:
        reporter.warn("The calibration: %s" % unused)
    median = qmf.norm_median(inputs.table.X) if any("norm" in m for m in sets) else None

    def quality(names):
        return qmf.quality_values(names, data["durations"], data["norms"], median)

    names, why = qmf.choose_measures(sets, data["scores"], data["labels"], quality,
                                     data["parts"], s.fusion_prior, s.fusion_regularization,
                                     s.selection)
    if data["source"] == TRAINING_FOLDS and setting == "auto":
        why = ["quality measures: none (learned on the training folds alone, a measure is "
               "applied only when asked for: quality_measures)"]
    eq, tq = quality(names)
    fusion = qmf.fit_calibration(names, data["scores"], data["labels"], eq, tq,
                                 s.fusion_prior, s.fusion_regularization)
    for line in why:
        reporter.log("Final calibration on %s: %s" % (data["what"], line))
    lines = ["calibration_data %s" % data["what"].replace(" ", "_")]
    lines += ["quality_choice %s" % line for line in why]
    if "all_scores" in data:
        trials = data["trials"]
        if names:
            en, tn = trials.side_norms()
            eq, tq = qmf.quality_values(names, trials.trial_durations(),
                                        (en[trials.enroll_index], tn[trials.test_index]),
                                        median)
            fused = fusion.transform(data["all_scores"], eq, tq)
        else:
            fused = fusion.transform(data["all_scores"])
        figures = trial_figures(fused, trials.is_target, s.alpha, s.beta)
        prefix = "final_dev" if data["source"] == DEV_TRIALS else "final_pseudo"
        lines += ["%s_%s %.6g" % (prefix, k, figures[k])
                  for k in ("pauc", "pauc_001", "eer", "min_dcf")]
        reporter.log("The final model on the %s (calibrated on them): pAUC[%g,%g] %.4f, "
                     "EER %.2f%%, minDCF(0.01) %.4f" % (data["source"], s.alpha, s.beta,
                                                        figures["pauc"],
                                                        100 * figures["eer"],
                                                        figures["min_dcf"]))
    return fusion, tuple(names), (median if "norm" in names else None), lines


def domain_and_report(inputs, pipe, reporter):
    """(the TrainingDomain of the scored vectors, lines for system.txt saying what the
    adaptation set changed, models.auto.adapt)."""
    X, y, adapt = inputs.table.X, inputs.table.y, inputs.adapt
    domain, train_domain = auto_adapt.domain_of(X, y, adapt)
    if adapt is None:
        return domain, []
    lines = auto_adapt.adaptation_report(train_domain, domain, pipe, adapt)
    reporter.log("Adaptation set (%s): centring mean from it%s; its domain shift "
                 "(models.domain): %s" % (
                     adapt.subset, ", PLDA adapted to it" if getattr(pipe, "plda_adapt_", None)
                     is not None else "", ", ".join(line.replace(" ", " = ")
                                                    for line in lines[1:])))
    return domain, lines


def fusion_lines(fusion, quality, norm_median):
    """system.txt's lines of a fusion/calibration and its quality measures."""
    lines = ["fusion_weights %s" % " ".join("%.6g" % w for w in fusion.weights_),
             "fusion_offset %.6g" % fusion.offset_,
             "quality_measures %s" % (",".join(quality) or "none")]
    if quality:
        lines.append("quality_weights %s" % " ".join("%.6g" % w
                                                     for w in fusion.quality_weights_))
    if "norm" in quality:
        lines.append("quality_norm_median %.9g" % norm_median)
    return lines


def card(model, settings, inputs, crossfit_lines):
    """The lines of system.txt of a FinalModel: the system and its calibration first (what
    scores), then the parameters, why it was kept (models.auto.selection.explain), what the
    calibration and the adaptation set changed, the pseudo-speakers, and what the
    cross-fitting screened and promoted."""
    choice, pipe = model.choice, model.pipeline
    members = tuple(pipe.systems)
    title = pseudo.title(choice.name) if choice.is_pseudo else candidate_title(members)
    lines = ["system %s" % "+".join(members),
             "system_title %s; calibrated on %s, quality measures %s" % (
                 title, model.calibration, ",".join(model.quality) or "none"),
             "chosen %s" % choice.name,
             "lda_dim %s" % dim_label(model.lda_dim)]
    lines += fusion_lines(model.fusion, model.quality, model.norm_median)
    lines += ["alpha %g" % settings.alpha, "beta %g" % settings.beta,
              "num_folds %d" % settings.num_folds, "enroll_utts %d" % settings.enroll_utts,
              "seed %d" % settings.random_state, "asnorm_top_n %d" % pipe.asnorm_top_n]
    if "dplda" in {base_system(m) for m in members}:
        lines.append("dplda_lambda %g" % pipe.dplda_model().regularization)
    lines += list(choice.card) + list(model.card)
    if inputs.adapt is not None and inputs.adapt.verdict is not None:
        check = inputs.adapt.verdict
        lines += ["adapt_check %s" % check.token,
                  "adapt_left_out %d" % (check.figures["vectors"] - check.figures["kept"])]
    if inputs.pseudo is not None:
        lines += inputs.pseudo.clustering.lines()
    return lines + list(crossfit_lines)
