"""pAUCMetric (auto): a back-end chosen by cross-fitting on the training speakers alone.

The paper tunes nothing automatically (Section VII leaves it to future work) and its best
preprocessing differs by corpus. Here the training speakers are split into K folds
(seeded); for each fold the WHOLE back-end (mean, LDA, PLDA, the pAUCMetrics; see
models.backend_pipeline) is retrained on the other folds and scores trials among the held-out
speakers, built like the evaluation's (models.crossfit). Every candidate is then rated by its
mean held-out pAUC[alpha, beta] over the folds (the paper's criterion, eq. 5; EER and
minDCF(0.01) are reported beside it):

* each single system of models.systems at each candidate LDA dimension (capped by the
  smallest fold's training speakers - 1 and the vector dimension; 0 = no LDA). Systems of
  the raw space (raw cosine) depend on no dimension and are rated once, as "no LDA";
* linear fusions of two or more of them (BOSARIS LinearFusion, models.calibration), whose
  weights are themselves cross-fitted: the fusion scoring fold k is trained on the held-out
  scores of the other folds, so its figure is as honest as a single system's.

What is tried on which data at what budget is models.auto.policy's (a seeded subset of
speakers and vectors when the corpus is large, the LDA dimensions screened with the cheap
systems, the candidates screened with the metrics at a fraction of their iterations and the
best promoted to the full budget: successive halving); the held-out scores are kept only as
long as the rating needs them (models.auto.store); the folds run in forked processes with
``n_jobs`` (models.auto.folds; each fold is seeded, so the result does not depend on it).

The kept candidate is not simply the best mean: ``selection="1se"`` (default) keeps the
simplest candidate within one standard error (paired over folds) of the best
(models.auto.selection), so with few or out-of-domain training speakers the choice falls back to
what generalises, typically raw cosine; the log and ``describe()`` say why. The kept
candidate is retrained on all training speakers; its fusion (or, for one system, affine
calibration) weights are learned on the pooled held-out scores of all folds. ``score``
returns those fused/calibrated scores. Every parameter is declared once, in
models.auto.params (default, allowed values, help), which train-pauc-auto reads too.
"""

import dataclasses

import numpy as np

from pauc_backend.models.auto import selection
from pauc_backend.models.auto import adapt as auto_adapt, params as auto_params
from pauc_backend.models.auto.crossfit import CrossFit
from pauc_backend.models.auto.folds import dim_label
from pauc_backend.models.auto import final, pseudo_stage, qmf
from pauc_backend.models.auto.params import DEFAULT_CANDIDATES
from pauc_backend.models.auto.policy import make_plan
from pauc_backend.models.auto.settings import Reporter, Settings
from pauc_backend.models.auto.table import as_table
from pauc_backend.models.systems import base_system, candidate_title, parse_candidate

_D = auto_params.default
BASELINES = ("cosine_raw", "cosine_centred")     # with in-domain evidence (models.auto.selection)


class AutoBackend:
    """Cross-fitted choice of back-end (see the module doc); scikit-learn style.

    Parameters: see models.auto.params (``help(pauc_backend.models.auto.params)``, or
    train-pauc-auto --help), where each is declared with its default and allowed values.
    ``metric_params``: keyword arguments of PaucMetric (defaults:
    models.auto.params.METRIC_OPTIONS, PaucMetric's own but 500 iterations).

    Learned: ``cv_results_`` (one dict per rated candidate and budget: "candidate",
    "lda_dim", "budget", mean "pauc", "pauc_001", "eer", "min_dcf" and "folds", the held-out
    figures of each fold k = 0..K-1), ``chosen_`` (its row), ``fold_of_vector_`` (the fold
    of each training vector, -1 outside the cross-fitting subset), ``members_``,
    ``lda_dim_``, ``fusion_``, ``pipeline_``, ``crossfit_`` (what was screened, promoted and
    why, as text lines), ``dplda_lambda_`` (the discriminative PLDA's, None without it),
    ``settings_`` (the frozen parameters of the fit, models.auto.settings), ``evidence_``
    (what the choice read: a list of models.auto.evidence.Evidence, today the training
    folds' rows of the candidates rated on every fold, those of cv_results_).
    """

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
                 max_metric_vectors=_D("max_metric_vectors")):
        self.lda_dims = lda_dims
        self.candidates = candidates
        self.num_folds = num_folds
        self.enroll_utts = enroll_utts
        self.alpha = alpha
        self.beta = beta
        self.metric_params = metric_params
        self.fusion_prior = fusion_prior
        self.fusion_regularization = fusion_regularization
        self.max_utts_per_speaker = max_utts_per_speaker
        self.max_fusion_trials = max_fusion_trials
        self.max_rating_fusion_trials = max_rating_fusion_trials
        self.lda_selection = lda_selection
        self.asnorm_top_n = asnorm_top_n
        self.n_jobs = n_jobs
        self.selection = selection
        self.dplda_lambdas = dplda_lambdas
        self.random_state = random_state
        self.log = log
        self.max_trials = max_trials
        self.progress = progress
        self.progress_interval = progress_interval
        self.max_speakers = max_speakers
        self.max_vectors = max_vectors
        self.screen_factor = screen_factor
        self.max_adapt_vectors = max_adapt_vectors
        self.max_dev_trials = max_dev_trials
        self.dev_resamples = dev_resamples
        self.quality_measures = quality_measures
        self.max_metric_vectors = max_metric_vectors

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
        for name in ("lda_dims", "candidates", "dplda_lambdas", "max_trials",
                     "max_utts_per_speaker", "max_fusion_trials", "max_rating_fusion_trials",
                     "max_speakers", "max_vectors", "max_adapt_vectors", "max_dev_trials",
                     "max_metric_vectors"):
            setattr(self, name, auto_params.normalised(name, getattr(self, name)))
        return values

    # -- helpers -----------------------------------------------------------------------------
    def _make_pipeline(self, lda_dim, systems, seed):
        """The BackendPipeline of a fold task or of the final model (Settings.pipeline of
        this fit, or of the parameters before one; tests may override)."""
        settings = getattr(self, "settings_", None) or Settings.of(self.get_params())
        return settings.pipeline(lda_dim, systems, seed)

    def _check(self, X, y, groups, adapted=False, in_domain=False):
        """(the TrainingTable of the data, checked (models.auto.table), {candidate: its
        members}); ValueError naming a bad parameter or piece of data."""
        table = as_table(X, y, groups)
        self.check_params()
        names = list(self.candidates)
        if adapted and tuple(names) == tuple(DEFAULT_CANDIDATES):
            names = list(auto_adapt.adapted_candidates(names))
        auto_adapt.check_candidates(names, adapted)
        if in_domain:        # the do-no-harm baselines are always candidates (selection)
            have = {parse_candidate(name) for name in names}
            names += [b for b in BASELINES if (b,) not in have]
        return table, {name: parse_candidate(name) for name in names}

    # -- fitting -----------------------------------------------------------------------------
    def fit(self, X, y=None, groups=None, X_adapt=None, dev=None, durations=None):
        """Cross-fit every candidate on raw training vectors X (n, D) with speaker labels y,
        keep one by held-out pAUC[alpha, beta] (``selection``), retrain it on all speakers.
        X may also be a models.auto.table.TrainingTable (y and groups then come from it:
        train-pauc-auto's table, held in memory or spooled to disk).
        ``X_adapt``: unlabelled raw vectors of the domain to be scored (models.auto.adapt:
        the centring mean, the adapted PLDA and what the cross-fitting can see).
        ``dev``: labelled development trials of that domain (models.auto.dev.DevTrials):
        they rate the candidates, the do-no-harm baselines are always among them
        (models.auto.selection), and the final fusion/calibration is learned on the final
        model's scores of them. ``durations``: seconds of each training vector (utt2dur),
        for the quality measures of the final calibration (models.auto.qmf).

        The same in steps, for folds run as separate jobs (train-pauc-auto --fold-stage):
        ``plan = prepare(X, y, groups)``; for each stage 1..3, ``cross_fit_stage(plan,
        stage, folds)`` on each job's folds and ``add_fold_results(plan, stage, results)``
        of all folds; then ``finish(plan)``. A stage depends on the previous one of every
        fold (it is defined by its ratings)."""
        plan = self.prepare(X, y, groups, X_adapt, dev, durations)
        try:
            for stage in (1, 2, 3):
                self.add_fold_results(plan, stage, self.cross_fit_stage(plan, stage))
            return self.finish(plan)
        finally:
            self._close()

    def _close(self):
        """Stop the progress lines' thread (a fitted model holds none); the log stays."""
        if getattr(self, "_reporter", None) is not None:
            self._reporter.close()

    def prepare(self, X, y=None, groups=None, X_adapt=None, dev=None, durations=None):
        """Check the data and the parameters, choose the cross-fitting subset, deal the
        speaker folds, build every fold's held-out trials (models.auto.policy); returns the
        plan. Resets the store of held-out scores. X, dev, durations: as ``fit``
        (durations: of the table's rows; default: a TrainingTable's own)."""
        # evidence from the user's domain (development trials; the pseudo-speakers of issue
        # 34 item 1 will be the other): the do-no-harm baselines become candidates
        in_domain = dev is not None
        table, members = self._check(X, y, groups, X_adapt is not None, in_domain)
        if X_adapt is not None:
            X_adapt = auto_adapt.check_adapt(X_adapt, table.shape[1])
        if durations is None:
            durations = table.durations
        if durations is not None:
            durations = np.asarray(durations, dtype=np.float64).reshape(-1)
            if durations.size != table.shape[0] or not np.all(np.isfinite(durations)
                                                               & (durations > 0)):
                raise ValueError("durations need one positive finite value per training "
                                 "vector")
        settings = Settings.of(self.get_params())
        if dev is not None:
            dev = dataclasses.replace(dev).check(table.shape[1]).capped(
                settings.max_dev_trials, settings.random_state)
        if in_domain and 0 not in settings.lda_dims:   # the centred cosine baseline: LDA none
            settings = dataclasses.replace(settings, lda_dims=(0,) + settings.lda_dims)
        qmf.measure_sets(settings.quality_measures,
                         (dev.durations if dev is not None else durations) is not None)
        self.settings_ = settings
        self._close()
        reporter = self._reporter = Reporter(self.log, self.progress, self.progress_interval)
        self.n_features_in_ = table.shape[1]
        found = None
        if X_adapt is not None:       # pseudo-speakers (models.auto.pseudo): in-domain evidence
            if dev is None:           # (reads the table's rows it samples, held or spooled)
                found = pseudo_stage.prepare_clustering(settings, reporter, table.X, table.y,
                                                        X_adapt)
            else:
                reporter.log("Pseudo-speakers: not built (the development trials rate)")
        if found is not None and found.ok and not in_domain:
            have = set(members.values())
            members.update({b: (b,) for b in BASELINES if (b,) not in have})
            if 0 not in settings.lda_dims:
                settings = dataclasses.replace(settings, lda_dims=(0,) + settings.lda_dims)
            self.settings_ = settings
            reporter.log("Raw cosine and the centred cosine at LDA none are candidates (do "
                         "no harm: models/auto/selection.py)")
        X, y, groups, rows, subset = table.crossfit(settings.max_speakers, settings.max_vectors,
                                                    settings.random_state)
        plan = make_plan(settings, reporter, X, y, groups, members, (rows, subset),
                         table.num_speakers)
        plan.table, plan.adapt = table, X_adapt
        plan.pseudo = found
        plan.dev = dev
        # the held-out trials' sides are rows of the cross-fitting's X: their durations too
        plan.durations = None if durations is None else table.of_crossfit(durations, X)
        if X_adapt is not None:        # each held-out fold moved into the adaptation domain
            rows, _ = auto_adapt.adapt_rows(X_adapt.shape[0], settings.max_adapt_vectors,
                                            settings.random_state)
            if rows.size >= 2 * X.shape[1]:
                plan.fold_maps = [auto_adapt.coral_map(X, plan.adapt_rows(k), X_adapt, rows)
                                  for k in settings.every_fold]
            else:
                reporter.log("The adaptation set has %d vectors, fewer than twice their "
                             "dimension (%d): too few for its covariance, so the held-out "
                             "folds are not moved into its domain (only its mean and the "
                             "adapted PLDA are used)" % (rows.size, X.shape[1]))
        plan = CrossFit(settings, reporter, plan, self._make_pipeline)
        self.num_speakers_ = plan.num_speakers
        self.fold_of_vector_ = table.fold_of_vector(plan.fold_of_vector, X)
        self._take_decisions(plan)
        reporter.log("Cross-fitting: %d speakers in %d folds (%s), held-out trials per fold: "
                     "%s" % (int(np.unique(y[plan.fold_of_vector >= 0]).size),
                             settings.num_folds, plan.subset, ", ".join(
                                 "%d (%d target%s)" % (t.is_target.size, t.num_target,
                                                       ", sampled" if t.sampled else "")
                                 for t in plan.trials)))
        if dev is not None:
            reporter.log("Development trials rate the candidates: %s; raw cosine and the "
                         "centred cosine at LDA none are always candidates (do no harm: "
                         "models/auto/selection.py)%s" % (
                             dev.describe(), "" if 0 in self.lda_dims else
                             "; LDA none added to the dimensions for the centred cosine"))
        return plan

    def _take_decisions(self, plan):
        """What the cross-fitting ``plan`` decided so far, stored: ``dplda_lambda_``,
        ``crossfit_``."""
        self.dplda_lambda_ = plan.dplda_lambda
        self.crossfit_ = list(plan.lines)

    def stage_work(self, plan, stage):
        """The Stage (models.auto.policy) cross-fitted in ``stage`` (1, 2 or 3) on every
        fold; stages 2 and 3 need every fold of the previous stage (models.auto.crossfit)."""
        return plan.stage_work(stage)

    def cross_fit_stage(self, plan, stage, folds=None):
        """Held-out results of ``stage`` on ``folds`` (0-based; None: all), in n_jobs
        processes if > 1: an iterator of ((dim, fold), figures, kept scores, errors,
        development scores), dims outer, folds inner. Nothing is stored (add_fold_results
        does)."""
        return plan.run(stage, folds)

    def add_fold_results(self, plan, stage, results):
        """Add what cross_fit_stage returned (of one job, or of all): each LDA dimension is
        rated as soon as every fold of it is in, and what the rating no longer needs is
        released."""
        plan.add(stage, results)
        self._take_decisions(plan)

    # -- the choice and the final model -------------------------------------------------------
    def finish(self, plan):
        """Choose among the candidates rated at the full budget (models.auto.selection, on every
        source of evidence), release the stores, retrain the chosen one on all speakers,
        learn its fusion/calibration (with quality measures, models.auto.qmf) on the pooled
        held-out scores or, with development trials, on the final model's scores of them;
        returns self."""
        for stage in (1, 2, 3):
            plan.stage_work(stage)
            plan.need_folds(stage)
        X, y = plan.table.X, plan.table.y       # every training vector (held or spooled)
        settings, reporter = plan.settings, plan.reporter
        self.n_features_in_ = X.shape[1]
        self._take_decisions(plan)
        self.cv_results_ = plan.rows_at()
        full = [r for r in self.cv_results_ if r["budget"] == "full"]
        if not full:
            raise ValueError("no candidate could be rated")
        self.evidence_ = self._evidence(plan, full)
        self._choose(self.evidence_, plan)
        name, dim = self.chosen_["candidate"], self.chosen_["lda_dim"]
        self.members_ = plan.members[name]
        self.lda_dim_ = dim

        calibration = None
        if plan.dev is None:      # the calibration data: every fold's held-out scores
            reporter.note(where="fusion weights of %s" % name)
            score_dim = self.chosen_["score_dim"]
            if not plan.store.has_columns(score_dim, self.members_):
                plan.recompute(score_dim, self.members_)
            calibration = final.heldout_data(plan, self.members_, score_dim)
        self.heldout_labels_ = list(plan.store.labels)
        plan.store.clear()
        if plan.dev_scores is not None:
            plan.dev_scores.clear()
        plan.release_data()
        if not plan.table.in_memory:    # a spooled table's subset: re-read from the spool by
            plan.table.subset_X = None  # the in-domain stage if it runs, not held meanwhile
        self.pipeline_ = self._make_pipeline(dim, self.members_, settings.random_state)
        if self.dplda_lambda_ is not None:          # only the cross-fitted lambda
            self.pipeline_.dplda_lambdas = (self.dplda_lambda_,)
            self.pipeline_.dplda_lambda = self.dplda_lambda_
        reporter.begin()
        self.pipeline_.progress = reporter.pipeline_progress(
            "final %s (LDA %s) on all %d speakers" % (name, dim_label(dim), self.num_speakers_))
        A = plan.adapt
        rows = subset = None
        if A is not None:
            rows, subset = auto_adapt.adapt_rows(A.shape[0], settings.max_adapt_vectors,
                                                 settings.random_state)
        try:
            self.pipeline_.fit(X, y, n_jobs=settings.n_jobs, adapt=A, adapt_rows=rows)
        finally:
            self.pipeline_.progress = None
            self._close()
        used, total = getattr(self.pipeline_, "metric_rows_", (0, 0))
        self.sample_lines_ = []
        if used < total:
            self.sample_lines_ = ["final_metric_vectors %d of %d" % (used, total)]
            reporter.log("The final pAUCMetrics trained on %d of the %d training vectors (the "
                         "same seeded cap on each speaker's count; max_metric_vectors)"
                         % (used, total))
        self.domain_, train_domain = auto_adapt.domain_of(X, y, A, rows)
        self.adapt_lines_ = []
        if A is not None:
            self.adapt_lines_ = auto_adapt.adaptation_report(train_domain, self.domain_,
                                                             self.pipeline_, A, rows, subset)
            reporter.log("Adaptation set (%s): centring mean from it%s; its domain shift "
                         "(models.domain): %s" % (
                             subset, ", PLDA adapted to it" if self.pipeline_.plda_adapt_
                             is not None else "", ", ".join(
                                 line.replace(" ", " = ") for line in self.adapt_lines_[1:])))
        if plan.dev is not None:
            calibration = final.dev_data(plan, self.pipeline_)
        fitted = final.calibrate(plan, calibration)
        self.fusion_ = fitted["fusion"]
        self.quality_ = fitted["quality"]
        self.quality_norm_median_ = fitted["norm_median"]
        self.quality_lines_ = fitted["lines"]
        self.calibration_data_ = calibration["what"]
        self.final_dev_ = fitted["final_dev"]
        self.pseudo_lines_, self.pseudo_title_ = [], None
        found = getattr(plan, "pseudo", None)
        if found is not None:
            if found.ok and plan.dev is None:
                try:
                    pseudo_stage.run(self, plan, found)
                except (ValueError, np.linalg.LinAlgError) as err:
                    plan.reporter.log("In-domain stage failed (%s): the training folds' "
                                      "choice is kept" % err)
                    self.pseudo_lines_ = found.lines() + ["in_domain_choice failed"]
            else:
                self.pseudo_lines_ = found.lines()
        return self

    def _evidence(self, plan, full):
        """The sources the choice reads (models.auto.evidence) for the candidates ``full``:
        the training folds, and the development trials when given (the candidates they
        could not rate are left out of the choice, logged)."""
        if plan.dev_scores is None:
            return [plan.evidence(full)]
        dev = [plan.dev_rows.get((r["candidate"], r["lda_dim"], "full")) for r in full]
        keep = [i for i, d in enumerate(dev) if d is not None]
        if not keep:
            raise ValueError("no candidate could be rated on the development trials")
        for i in sorted(set(range(len(full))) - set(keep)):
            plan.reporter.log("%s (LDA %s) has no development figures: not a candidate of "
                              "the choice" % (full[i]["candidate"],
                                              dim_label(full[i]["lda_dim"])))
        self.dev_results_ = [{k: v for k, v in d.items() if k != "folds"}
                             for d in plan.dev_rows.values() if d is not None]
        return [plan.evidence([full[i] for i in keep]),
                plan.dev_evidence([dev[i] for i in keep])]

    def _choose(self, evidence, plan):
        """chosen_ by the selection rule from the ``evidence`` (a list of Evidence: the
        training folds' full-budget rows, and the development trials' when given), with the
        reasons logged."""
        settings = plan.settings
        rows = list(evidence[0].rows)
        chosen, verdict = selection.choose(evidence, plan.complexity(rows), settings.selection)
        self.chosen_ = dict(rows[chosen])
        self.verdict_ = verdict

        def label(i):
            return "%s (LDA %s)" % (rows[i]["candidate"], dim_label(rows[i]["lda_dim"]))

        lines, self.reason_lines_ = selection.explain(evidence, chosen, verdict, label)
        plan.reporter.log("Chose %s with LDA %s: held-out pAUC[%g,%g] %.4f, EER %.2f%%, "
                          "minDCF(0.01) %.4f%s" % (
                              self.chosen_["candidate"], dim_label(self.chosen_["lda_dim"]),
                              settings.alpha, settings.beta, self.chosen_["pauc"],
                              100 * self.chosen_["eer"], self.chosen_["min_dcf"], "".join(
                                  "; %s pAUC %.4f, EER %.2f%%, minDCF(0.01) %.4f" % (
                                      e.source, e.rows[chosen]["pauc"],
                                      100 * e.rows[chosen]["eer"], e.rows[chosen]["min_dcf"])
                                  for e in evidence[1:] if "eer" in e.rows[chosen])))
        for line in lines:
            plan.reporter.log(line)

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
        if "norm" in getattr(self, "quality_", ()):
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
        names = getattr(self, "quality_", ())
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
        """A short text description of the chosen system, its cross-fitted figures, why it
        was kept (models.auto.selection), its calibration's quality measures (models.auto.qmf)
        and what the cross-fitting screened and promoted."""
        lines = ["system %s" % "+".join(self.members_),
                 "system_title %s" % (getattr(self, "pseudo_title_", None)
                                      or candidate_title(self.members_)),
                 "lda_dim %s" % dim_label(self.lda_dim_),
                 "fusion_weights %s" % " ".join("%.6g" % w for w in self.fusion_.weights_),
                 "fusion_offset %.6g" % self.fusion_.offset_]
        names = getattr(self, "quality_", ())
        lines.append("quality_measures %s" % (",".join(names) or "none"))
        if names:
            lines.append("quality_weights %s" % " ".join(
                "%.6g" % w for w in self.fusion_.quality_weights_))
        if "norm" in names:
            lines.append("quality_norm_median %.9g" % self.quality_norm_median_)
        lines += ["alpha %g" % self.alpha, "beta %g" % self.beta,
                  "num_folds %d" % self.num_folds, "enroll_utts %d" % self.enroll_utts,
                  "seed %d" % self.random_state,
                  "asnorm_top_n %d" % self.pipeline_.asnorm_top_n]
        if "dplda" in {base_system(m) for m in self.members_}:
            lines.append("dplda_lambda %g" % self.pipeline_.dplda_model().regularization)
        for key in ("pauc", "pauc_001", "eer", "min_dcf"):   # none: not on training folds
            value = self.chosen_[key]
            lines.append("heldout_%s %s" % (key, "%.6g" % value if np.isfinite(value)
                                             else "none"))
        lines += getattr(self, "sample_lines_", [])
        lines += getattr(self, "reason_lines_", [])
        if getattr(self, "final_dev_", None) is not None:
            lines += ["final_dev_%s %.6g" % (k, self.final_dev_[k])
                      for k in ("pauc", "pauc_001", "eer", "min_dcf")]
        lines += ["calibration_data %s" % self.calibration_data_.replace(" ", "_")]\
            if getattr(self, "calibration_data_", None) else []
        lines += ["quality_choice %s" % line for line in getattr(self, "quality_lines_", [])]
        lines += getattr(self, "adapt_lines_", [])
        lines += getattr(self, "pseudo_lines_", [])
        lines += getattr(self, "crossfit_", [])
        return "\n".join(lines) + "\n"
