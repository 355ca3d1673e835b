"""pAUCMetric (auto): a back-end chosen on held-out evidence and trained once.

The paper tunes nothing automatically (Section VII leaves it to future work) and its best
preprocessing differs by corpus. Here the training speakers are split into K folds (seeded);
for each fold the WHOLE back-end (mean, LDA, PLDA, the pAUCMetrics; models.backend_pipeline)
is retrained on the other folds and scores trials among the held-out speakers, built like the
evaluation's, and every in-domain trial set there is (models.auto.crossfit). The candidates
are each system of models.systems at each candidate LDA dimension and linear fusions of them
(their weights cross-fitted too), screened and promoted by successive halving
(models.auto.policy), plus, with an unlabelled adaptation set, the systems trained with its
pseudo-speakers (models.auto.pseudo).

The choice (models.auto.selection, one rule): the most in-domain source that can be trusted
rates every candidate it can (labelled development trials, else pseudo-speaker trials, else
the training folds); on an in-domain source a candidate must beat the do-no-harm baselines
(the centred and the raw cosine) by more than their paired standard error; among the rest the
simplest within one standard error of the best is kept (``selection="1se"``). The kept
candidate is trained once on every training vector, and its fusion or calibration learned on
the trials of the source that rated it (models.auto.final). ``score`` returns those
calibrated scores. What one fit reads is built once (models.auto.inputs); every stage returns
its values, which only this estimator stores. Every parameter is declared once, in
models.auto.params (default, allowed values, help), which train-pauc-auto reads too.
"""

from dataclasses import dataclass

import numpy as np

from pauc_backend.models.auto import final, inputs as auto_inputs, params as auto_params, qmf
from pauc_backend.models.auto.crossfit import CrossFit
from pauc_backend.models.auto.evidence import TRAINING_FOLDS
from pauc_backend.models.auto.folds import dim_label
from pauc_backend.models.auto.policy import make_plan
from pauc_backend.models.auto.settings import Reporter, Settings
from pauc_backend.models.systems import candidate_title

_D = auto_params.default
_NORMALISED = ("lda_dims", "candidates", "dplda_lambdas", "max_trials", "max_utts_per_speaker",
               "max_fusion_trials", "max_rating_fusion_trials", "max_speakers", "max_vectors",
               "max_adapt_vectors", "max_dev_trials", "max_metric_vectors")


@dataclass(frozen=True)
class Fit:
    """One fit in progress: its ``inputs`` (models.auto.inputs.FitInputs), the ``cross``-
    fitting (models.auto.crossfit.CrossFit) and the ``reporter``."""
    inputs: object
    cross: object
    reporter: object

    @property
    def trials(self):
        """The held-out trials of each fold (what the fold jobs' outputs hold scores of)."""
        return self.cross.trials


class AutoBackend:
    """Choice and training of a back-end on held-out evidence (see the module doc);
    scikit-learn style. Parameters: models.auto.params (``help(...params)``, or
    train-pauc-auto --help), each declared with its default and allowed values;
    ``metric_params``: keyword arguments of PaucMetric.

    Learned: ``cv_results_`` (one dict per candidate rated on the training folds and
    budget: "candidate", "lda_dim", "budget", mean "pauc", "pauc_001", "eer", "min_dcf" and
    "folds", the held-out figures of each fold), ``set_results_`` ({in-domain source: its
    rows, each with "candidate", "lda_dim", the figures on the whole list and "folds", the
    bootstrap resamples}), ``candidates_`` ((candidate, lda_dim) of every candidate of the
    choice), ``evidence_`` (the models.auto.evidence.Evidence of each source, rows aligned
    with candidates_), ``choice_`` (models.auto.choice.Choice), ``chosen_`` (the kept
    candidate's row: its training folds' one, else its rating source's), ``members_``,
    ``lda_dim_``, ``pipeline_``, ``fusion_``, ``quality_``, ``quality_norm_median_``,
    ``domain_``, ``fold_of_vector_``, ``dplda_lambda_``, ``crossfit_`` (what was screened and
    promoted, lines), ``heldout_labels_``, ``settings_``, ``card_`` (the lines of
    describe())."""

    def __init__(self, lda_dims=_D("lda_dims"), candidates=_D("candidates"),
                 num_folds=_D("num_folds"), enroll_utts=_D("enroll_utts"), alpha=_D("alpha"),
                 beta=_D("beta"), metric_params=None, fusion_prior=_D("fusion_prior"),
                 fusion_regularization=_D("fusion_regularization"),
                 max_utts_per_speaker=_D("max_utts_per_speaker"),
                 max_fusion_trials=_D("max_fusion_trials"),
                 max_rating_fusion_trials=_D("max_rating_fusion_trials"),
                 lda_selection=_D("lda_selection"), asnorm_top_n=_D("asnorm_top_n"),
                 n_jobs=_D("n_jobs"), selection=_D("selection"),
                 dplda_lambdas=_D("dplda_lambdas"), random_state=_D("random_state"),
                 log=None, max_trials=_D("max_trials"), progress=None,
                 progress_interval=_D("progress_interval"), max_speakers=_D("max_speakers"),
                 max_vectors=_D("max_vectors"), screen_factor=_D("screen_factor"),
                 max_adapt_vectors=_D("max_adapt_vectors"), max_dev_trials=_D("max_dev_trials"),
                 dev_resamples=_D("dev_resamples"), quality_measures=_D("quality_measures"),
                 max_metric_vectors=_D("max_metric_vectors"), warn=None):
        values = dict(locals())
        for name in self._param_names():
            setattr(self, name, values[name])

    # -- scikit-learn conventions ---------------------------------------------------------------
    @classmethod
    def _param_names(cls):
        return [p.name for p in auto_params.PARAMS] + ["metric_params"]

    def get_params(self, deep=True):
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        for name, value in params.items():
            if name not in self._param_names():
                raise ValueError("unknown parameter %r" % name)
            setattr(self, name, value)
        return self

    def check_params(self):
        """ValueError naming the first parameter outside its declared values
        (models.auto.params); returns the normalised values."""
        values = self.get_params()
        auto_params.check(values)
        for name in _NORMALISED:
            setattr(self, name, auto_params.normalised(name, getattr(self, name)))
        return values

    def _make_pipeline(self, lda_dim, systems, seed):
        """The BackendPipeline of a fold task or of the final model (Settings.pipeline of
        this fit; tests may override)."""
        settings = getattr(self, "settings_", None) or Settings.of(self.get_params())
        return settings.pipeline(lda_dim, systems, seed)

    # -- fitting -----------------------------------------------------------------------------
    def fit(self, X, y=None, groups=None, X_adapt=None, dev=None, durations=None,
            adapt_durations=None, adapt_check=None):
        """Choose and train the back-end on raw training vectors X (n, D) with speaker
        labels y (or a models.auto.table.TrainingTable). ``X_adapt``: unlabelled raw vectors
        of the domain to be scored (models.auto.adapt, .pseudo); ``dev``: labelled
        development trials of that domain (models.auto.dev.DevTrials); ``durations`` /
        ``adapt_durations``: seconds of each training / adaptation vector (utt2dur), for the
        quality measures of the calibration (models.auto.qmf); ``adapt_check``: X_adapt's
        models.unlabelled examination when the caller made it (X_adapt then holds its kept
        rows; without it the set is examined here).

        The same in steps, for folds run as separate jobs (train-pauc-auto --fold-stage):
        ``fit = prepare(...)``; for each stage 1..3, ``cross_fit_stage(fit, stage, folds)``
        on each job's folds and ``add_fold_results(fit, stage, results)`` of all folds; then
        ``finish(fit)``."""
        state = self.prepare(X, y, groups, X_adapt, dev, durations, adapt_durations,
                             adapt_check)
        try:
            for stage in (1, 2, 3):
                self.add_fold_results(state, stage, self.cross_fit_stage(state, stage))
            return self.finish(state)
        finally:
            self._close()

    def _close(self):
        """Stop the progress lines' thread (a fitted model holds none); the log stays."""
        if getattr(self, "_reporter", None) is not None:
            self._reporter.close()

    def prepare(self, X, y=None, groups=None, X_adapt=None, dev=None, durations=None,
                adapt_durations=None, adapt_check=None):
        """Check the data and the parameters and build what the fit reads
        (models.auto.inputs), deal the speaker folds and their held-out trials
        (models.auto.policy); returns the Fit."""
        self.check_params()
        self._close()
        reporter = self._reporter = Reporter(self.log, self.progress, self.progress_interval,
                                             self.warn)
        inputs = auto_inputs.build(Settings.of(self.get_params()), reporter, X, y, groups,
                                   X_adapt, dev, durations, adapt_durations, adapt_check)
        for line in inputs.notes:
            reporter.log(line)
        self.settings_ = settings = inputs.settings
        self.n_features_in_ = inputs.table.shape[1]
        Xc, yc, gc, rows, subset = inputs.crossfit_data()
        plan = make_plan(settings, reporter, Xc, yc, gc, inputs.members, (rows, subset),
                         inputs.table.num_speakers, inputs.adapt, inputs.trial_sets)
        cross = CrossFit(settings, reporter, plan, self._make_pipeline)
        self.num_speakers_ = plan.num_speakers
        self.fold_of_vector_ = inputs.table.fold_of_vector(plan.fold_of_vector, Xc)
        reporter.log("Cross-fitting: %d speakers in %d folds (%s), held-out trials per fold: "
                     "%s%s" % (int(np.unique(yc[plan.fold_of_vector >= 0]).size),
                               settings.num_folds, subset, ", ".join(
                                   "%d (%d target%s)" % (t.is_target.size, t.num_target,
                                                         ", sampled" if t.sampled else "")
                                   for t in plan.trials), "".join(
                                   "; the %s: %s" % (name, trial_set.trials.describe())
                                   for name, trial_set in inputs.trial_sets.items())))
        return Fit(inputs, cross, reporter)

    def stage_work(self, state, stage):
        """The Stage (models.auto.policy) cross-fitted in ``stage`` (1, 2 or 3) on every
        fold; stages 2 and 3 need every fold of the previous stage (models.auto.crossfit)."""
        return state.cross.stage_work(stage)

    def cross_fit_stage(self, state, stage, folds=None):
        """Held-out results of ``stage`` on ``folds`` (0-based; None: all), in n_jobs
        processes if > 1: an iterator of ((dim, fold), figures, kept scores, errors,
        in-domain scores), dims outer, folds inner. Nothing is stored (add_fold_results
        does)."""
        return state.cross.run(stage, folds)

    def add_fold_results(self, state, stage, results):
        """Add what cross_fit_stage returned (of one job, or of all): each LDA dimension is
        rated as soon as every fold of it is in, and what the rating no longer needs is
        released."""
        state.cross.add(stage, results)

    def finish(self, state):
        """Choose among every candidate on every source (models.auto.choice), train the
        kept one once and calibrate it (models.auto.final); returns self."""
        cross = state.cross
        for stage in (1, 2, 3):
            cross.stage_work(stage)
            cross.need_folds(stage)
        self.cv_results_ = cross.rows_at()
        self.dplda_lambda_ = cross.dplda_lambda
        self.crossfit_ = list(cross.lines)
        self.heldout_labels_ = list(cross.store.labels)
        try:
            model = final.fit(state.inputs, cross, self._make_pipeline, state.reporter)
        finally:
            self._close()
        choice = model.choice
        self.choice_ = choice
        self.candidates_ = list(choice.labels)
        self.evidence_ = list(choice.evidence)
        self.set_results_ = {e.source: [dict(r, candidate=c, lda_dim=d) for (c, d), r in
                                        zip(choice.labels, e.rows) if r is not None]
                             for e in choice.evidence if e.estimate == "bootstrap"}
        self.chosen_ = dict(choice.row(TRAINING_FOLDS) or choice.row(choice.source),
                            candidate=choice.name, lda_dim=choice.lda_dim)
        self.pipeline_ = model.pipeline
        self.members_ = tuple(model.pipeline.systems)
        self.lda_dim_ = model.lda_dim
        self.fusion_ = model.fusion
        self.quality_ = model.quality
        self.quality_norm_median_ = model.norm_median
        self.domain_ = model.domain
        self.card_ = final.card(model, self.settings_, state.inputs, cross.lines)
        state.reporter.log("Final back-end: %s" % self.card_[1].split(" ", 1)[1])
        return self

    @classmethod
    def from_parts(cls, pipeline, fusion, n_features_in, norm_median=None):
        """A fitted back-end from a stored pipeline (BackendPipeline.from_parts) and fusion
        (a LinearFusion, or a QualityFusion of models.quality whose measures are
        models.auto.qmf's; ``norm_median``: the unit of the norm measure)."""
        model = cls()
        model.pipeline_ = pipeline
        model.members_ = tuple(pipeline.systems)
        model.lda_dim_ = pipeline.lda_dim
        model.fusion_ = fusion
        model.n_features_in_ = int(n_features_in)
        if fusion.weights_.size != len(model.members_):
            raise ValueError("the fusion has %d weights for %d systems"
                             % (fusion.weights_.size, len(model.members_)))
        model.quality_ = tuple(m.name for m in getattr(fusion, "measures", ()))
        for m in getattr(fusion, "measures", ()):
            if qmf.MEASURES.get(m.name) != m:
                raise ValueError("the fusion's quality measure %s (log %s, clip [%g, %g]) is "
                                 "not one the automatic back-end makes" % (m.name, m.log,
                                                                          m.low, m.high))
        if "norm" in model.quality_ and not (norm_median and norm_median > 0):
            raise ValueError("the fusion uses the norm measure but no positive median norm "
                             "is given")
        model.quality_norm_median_ = norm_median if "norm" in model.quality_ else None
        model.card_ = (["system %s" % "+".join(model.members_),
                        "system_title %s" % candidate_title(model.members_),
                        "lda_dim %s" % dim_label(model.lda_dim_)]
                       + final.fusion_lines(fusion, model.quality_, model.quality_norm_median_))
        return model

    # -- scoring -------------------------------------------------------------------------------
    @property
    def needs_durations(self):
        """True when the calibration uses the durations of the scored sides (QMF)."""
        return "duration" in getattr(self, "quality_", ())

    def features(self, X, num_utts=1):
        """What ``score_features`` needs of raw vectors X (rows averaged over num_utts)."""
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError("vectors have dimension %s but the back-end was trained on %d"
                             % (X.shape[1:] or "?", self.n_features_in_))
        out = self.pipeline_.features(X, num_utts)
        if "norm" in self.quality_:
            out[qmf.NORM_KEY] = qmf.side_norms(X)
        return out

    def score_features(self, enroll_feats, test_feats, enroll_rows, test_rows, num_utts=1,
                       enroll_duration=None, test_duration=None):
        """Fused/calibrated scores of trials (enroll_rows[k], test_rows[k]); num_utts is the
        count of vectors averaged into each enrollment row (scalar or per row). With the
        duration measure (``needs_durations``) ``enroll_duration``/``test_duration`` give
        the seconds of each enrollment/test row (an enrollment model's: the sum of its
        utterances')."""
        raw = self.pipeline_.score(enroll_feats, test_feats, enroll_rows, test_rows, num_utts)
        names = self.quality_
        if not names:
            return self.fusion_.transform(raw)
        durations = norms = None
        if "duration" in names:
            if enroll_duration is None or test_duration is None:
                raise ValueError("the calibration of this back-end uses the durations of the "
                                 "trial sides (QMF): give enroll_duration and test_duration")
            durations = (np.asarray(enroll_duration, dtype=np.float64)[enroll_rows],
                         np.asarray(test_duration, dtype=np.float64)[test_rows])
        if "norm" in names:
            norms = (enroll_feats[qmf.NORM_KEY][enroll_rows], test_feats[qmf.NORM_KEY][test_rows])
        eq, tq = qmf.quality_values(names, durations, norms, self.quality_norm_median_)
        return self.fusion_.transform(raw, eq, tq)

    def score(self, enroll, test, enroll_rows, test_rows, num_utts=1, enroll_duration=None,
              test_duration=None):
        """Scores of trials between raw enrollment vectors (speaker means of num_utts raw
        vectors, or single vectors) and raw test vectors; higher = same speaker. Durations
        as ``score_features``."""
        return self.score_features(self.features(enroll, num_utts), self.features(test, 1),
                                   enroll_rows, test_rows, num_utts, enroll_duration,
                                   test_duration)

    def describe(self):
        """system.txt: the chosen system and its calibration first, then why it was kept
        (every source's figures), what the calibration and the adaptation set changed, and
        what the cross-fitting screened and promoted ("key value" lines)."""
        return "\n".join(self.card_) + "\n"
