"""pAUCMetric (auto): a back-end chosen by cross-fitting on the training speakers alone.

The paper tunes nothing automatically (Section VII leaves it to future work) and its best
preprocessing differs by corpus. Here the training speakers are split into K folds
(seeded); for each fold the WHOLE back-end (mean, LDA, PLDA, the pAUCMetrics; see
models.backend_pipeline) is retrained on the other folds and scores trials among the held-out
speakers, built like the evaluation's (models.crossfit). Every candidate is then rated by its
mean held-out pAUC[alpha, beta] over the folds (the paper's criterion, eq. 5; EER and
minDCF(0.01) are reported beside it):

* each single system (raw cosine, cosine, PLDA, discriminative PLDA, pAUCMetric length-norm,
  pAUCMetric PLDA-latent) at each candidate LDA dimension (capped by the smallest fold's
  training speakers - 1 and the vector dimension; 0 = no LDA, the full-dimension vectors).
  Raw cosine (unit-length raw vectors: no mean, no LDA) depends on no dimension and is rated
  once, as "no LDA";
* linear fusions of two or more of them (BOSARIS LinearFusion, models.calibration), whose
  weights are themselves cross-fitted: the fusion scoring fold k is trained on the held-out
  scores of the other folds, so its figure is as honest as a single system's.

Cost/variance controls: with ``lda_selection="cheap"`` (default) the LDA dimensions are
compared with the cheap systems (PLDA, cosine) only and the metrics and the discriminative
PLDA are cross-fitted at the best of them; ``n_jobs`` runs the folds in forked processes (each
fold is seeded, so the result does not depend on it). A member ``system:as`` is the system
after AS-norm against the training speakers' means (models.backend_pipeline). The
discriminative PLDA's L2 weight is itself cross-fitted: every fold trains the whole path
``dplda_lambdas`` and the lambda with the best mean held-out pAUC is the one every dplda
candidate uses.

The kept candidate is not simply the best mean: ``selection="1se"`` (default) keeps the
simplest candidate within one standard error (paired over folds) of the best
(models.selection), so with few or out-of-domain training speakers the choice falls back to
what generalises, typically raw cosine; the log and ``describe()`` say why. The kept
candidate is retrained on all training speakers; its fusion (or, for one system, affine
calibration) weights are learned on the pooled held-out scores of all folds. ``score``
returns those fused/calibrated scores.
"""

import itertools

import numpy as np

from pauc_backend.heartbeat import Heartbeat
from pauc_backend.models import selection
from pauc_backend.models.auto_candidates import (  # noqa: F401 (re-exported)
    DEFAULT_CANDIDATES, DEFAULT_LDA_DIMS, CrossFitPlan, dim_free, dim_label,
    parse_candidate)
from pauc_backend.models.auto_folds import choose_dplda_lambda, run_fold_tasks
from pauc_backend.models.backend_pipeline import (DPLDA_LAMBDAS, PLDA_SYSTEMS, BackendPipeline,
                                                  base_system)
from pauc_backend.models.calibration import LinearFusion, SeparableScoresError
from pauc_backend.models.crossfit import HeldOutTrials, speaker_folds, trial_figures

class AutoBackend:
    """Cross-fitted choice of back-end (see the module doc); scikit-learn style.

    lda_dims: candidate LDA dimensions, 0 for none (each capped as described; duplicates
        after capping are tried once). candidates: system names or '+'-joined fusions.
        enroll_utts: 0 for utterance-vs-utterance held-out trials, N for enrollment by the
        mean of N vectors. selection: "1se" or "best" (models.selection).
    dplda_lambdas: the L2 weights of the discriminative PLDA tried by cross-fitting.
    fusion_prior / fusion_regularization: LinearFusion's prior and L2 penalty.
    max_fusion_trials: held-out trials the kept candidate's fusion is trained on (non-targets
        subsampled beyond it); max_rating_fusion_trials: the same for the cross-fitted
        fusions that only RATE candidates (cheaper; 0 = no limit).
    log: a callable taking one line, or None. progress: the same for the progress lines
        (heartbeat.Heartbeat: fold, step, iteration, elapsed, estimated remaining), at least
        one every ``progress_interval`` seconds of work (0: one at every step), also from
        forked workers.
    max_trials: held-out trials per fold at most (None: all); beyond it the targets are kept
        and the non-targets sampled in per-speaker quotas (models.crossfit, which states the
        variance this adds to the held-out pAUC).
    """

    def __init__(self, lda_dims=DEFAULT_LDA_DIMS, candidates=DEFAULT_CANDIDATES, num_folds=5,
                 enroll_utts=0, alpha=0.0, beta=0.01, metric_params=None, fusion_prior=0.01,
                 fusion_regularization=1e-6, max_utts_per_speaker=None,
                 max_fusion_trials=300000, max_rating_fusion_trials=100000,
                 lda_selection="cheap", asnorm_top_n=100, n_jobs=1,
                 selection="1se", dplda_lambdas=DPLDA_LAMBDAS, random_state=0, log=None,
                 max_trials=3000000, progress=None, progress_interval=30.0):
        self.progress = progress
        self.progress_interval = progress_interval
        self.selection = selection
        self.dplda_lambdas = dplda_lambdas
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
        self.random_state = random_state
        self.log = log
        self.max_trials = max_trials

    # -- helpers that tests may override -----------------------------------------------------
    def _make_pipeline(self, lda_dim, systems, seed):
        return BackendPipeline(lda_dim=lda_dim, systems=systems,
                               metric_params=self.metric_params, alpha=self.alpha,
                               beta=self.beta, asnorm_top_n=self.asnorm_top_n,
                               enroll_utts=int(self.enroll_utts),
                               dplda_lambdas=self.dplda_lambdas, random_state=seed)

    def _log(self, message):
        if self.log is not None:
            self.log(message)

    def _fusion(self):
        return LinearFusion(prior=self.fusion_prior, regularization=self.fusion_regularization)

    def _fit_fusion(self, scores, labels, limit=None):
        """LinearFusion on held-out scores; beyond ``max_fusion_trials`` (or ``limit``) the
        non-targets are subsampled (seeded). The objective weights each class by 1/count, so
        a uniform subsample of one class leaves it unbiased."""
        limit = self.max_fusion_trials if limit is None else limit
        if limit and labels.size > limit:
            non = np.flatnonzero(~labels)
            keep_non = max(1, int(limit) - int(labels.sum()))
            if keep_non < non.size:
                rng = np.random.default_rng(self.random_state + 7)
                rows = np.sort(np.concatenate([np.flatnonzero(labels),
                                               rng.choice(non, keep_non, replace=False)]))
                scores, labels = scores[rows], labels[rows]
        return self._fusion().fit(scores, labels)

    # -- fitting -------------------------------------------------------------------------------
    def _check(self, X, y, groups):
        X = np.asarray(X, dtype=np.float32)
        y = np.asarray(y)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError("expected a non-empty 2-D array of vectors, got shape %s"
                             % (X.shape,))
        if y.shape != (X.shape[0],):
            raise ValueError("%d vectors but %d speaker labels" % (X.shape[0], y.size))
        if not np.all(np.isfinite(X)):
            raise ValueError("vector %d contains NaN or Inf"
                             % int(np.flatnonzero(~np.all(np.isfinite(X), axis=1))[0]))
        if groups is not None and np.asarray(groups).shape != y.shape:
            raise ValueError("groups must have one entry per vector")
        if int(self.enroll_utts) < 0:
            raise ValueError("enroll_utts must be >= 0 (got %d)" % self.enroll_utts)
        if not 0.0 <= self.alpha < self.beta <= 1.0:
            raise ValueError("need 0 <= alpha < beta <= 1 (got %g, %g)" % (self.alpha,
                                                                           self.beta))
        if not len(self.lda_dims) or min(int(d) for d in self.lda_dims) < 0:
            raise ValueError("lda_dims must be a non-empty list of dimensions (0: no LDA)")
        if self.selection not in ("1se", "best"):
            raise ValueError("selection must be '1se' or 'best' (got %r)" % self.selection)
        if not len(self.dplda_lambdas) or min(float(v) for v in self.dplda_lambdas) < 0:
            raise ValueError("dplda_lambdas must be a non-empty list of weights >= 0")
        names = list(self.candidates)
        if not names:
            raise ValueError("no candidate systems")
        return X, y, {name: parse_candidate(name) for name in names}

    def fit(self, X, y, groups=None):
        """Cross-fit every candidate on raw training vectors X (n, D) with speaker labels y,
        keep one by held-out pAUC[alpha, beta] (``selection``), retrain it on all speakers.

        The same in steps, for folds run as separate jobs (train-pauc-auto --fold-stage):
        ``plan = prepare(X, y, groups)``; for stage 1 then 2, ``cross_fit_stage(plan, stage,
        folds)`` on each job's folds and ``add_fold_results(plan, stage, results)`` of all
        folds; then ``finish(plan)``. Stage 2 depends on stage 1 of every fold."""
        plan = self.prepare(X, y, groups)
        try:
            for stage in (1, 2):
                self.add_fold_results(plan, stage, self.cross_fit_stage(plan, stage))
            return self.finish(plan)
        finally:
            if self._heartbeat is not None:
                self._heartbeat.close()
            self._heartbeat = None            # a fitted model holds no thread (picklable)

    def prepare(self, X, y, groups=None):
        """Check the data, deal the speaker folds, build every fold's held-out trials; the
        plan of the cross-fitting (a CrossFitPlan). Resets the held-out scores."""
        X, y, members = self._check(X, y, groups)
        self._heartbeat = (Heartbeat(self.progress, self.progress_interval)
                           if self.progress is not None else None)
        needed = tuple(dict.fromkeys(m for mem in members.values() for m in mem))
        speakers, fold_of = speaker_folds(y, self.num_folds, self.random_state)
        spk_index = np.searchsorted(speakers, y)
        vec_fold = fold_of[spk_index]
        self.fold_of_vector_ = vec_fold      # each training vector's fold (tests, callers)
        fold_train_spk = [int(np.count_nonzero(fold_of != k)) for k in range(self.num_folds)]
        cap = min(X.shape[1], min(fold_train_spk) - 1)
        if cap < 1 and any(int(d) > 0 for d in self.lda_dims):
            raise ValueError("too few training speakers for LDA")
        dims = sorted({min(int(d), cap) if int(d) > 0 else 0 for d in self.lda_dims})
        if any(int(d) > cap for d in self.lda_dims):
            self._log("LDA dimensions capped at %d (vector dimension %d; the smallest fold "
                      "trains on %d speakers)" % (cap, X.shape[1], min(fold_train_spk)))
        self.num_speakers_ = int(speakers.size)

        # Held-out trials of each fold (independent of the LDA dimension).
        trials = []
        for k in range(self.num_folds):
            self._note(where="held-out trials of fold %d of %d" % (k + 1, self.num_folds),
                       fraction=k / self.num_folds)
            rows = np.flatnonzero(vec_fold == k)
            t = HeldOutTrials(y, rows, int(self.enroll_utts), groups,
                              self.max_utts_per_speaker, self.random_state + 1000 + k,
                              max_trials=self.max_trials)
            if t.num_target < 1 or t.num_nontarget < 1:
                raise ValueError(
                    "fold %d of %d has %d target and %d non-target held-out trials: too few "
                    "speakers or vectors per speaker (each held-out speaker needs > %d "
                    "vectors); use fewer folds" % (k + 1, self.num_folds, t.num_target,
                                                   t.num_nontarget, max(1, self.enroll_utts)))
            trials.append(t)
        self._log("Cross-fitting: %d speakers in %d folds, held-out trials per fold: %s"
                  % (speakers.size, self.num_folds, ", ".join(
                      "%d (%d target%s)" % (t.is_target.size, t.num_target,
                                            ", sampled" if t.sampled else "")
                      for t in trials)))
        if self.lda_selection not in ("cheap", "all"):
            raise ValueError("lda_selection must be 'cheap' or 'all' (got %r)"
                             % self.lda_selection)
        # With lda_selection="cheap" the dimensions are first compared with the cheap
        # systems (PLDA, cosine) only (stage 1); the metrics and the discriminative PLDA are
        # then cross-fitted at the best dimension (stage 2). Otherwise stage 1 does it all.
        cheap = tuple(s for s in needed if base_system(s) in ("plda", "cosine", "cosine_raw"))
        screen = self.lda_selection == "cheap" and len(dims) > 1 and len(cheap) < len(needed)
        if screen and dim_free(cheap):
            cheap += ("plda",)
        self.fold_scores_ = {}
        self.dplda_lambda_ = None
        return CrossFitPlan(X, y, groups, members, needed, vec_fold, trials, dims,
                            cheap if screen else None)

    def stage_work(self, plan, stage):
        """(LDA dims, systems) cross-fitted in ``stage`` (1 or 2) on every fold. Stage 2
        needs the held-out scores of stage 1 of EVERY fold (it picks the dimension)."""
        if stage not in plan.work:
            if stage == 1:
                plan.work[1] = (plan.dims, plan.cheap or plan.needed)
            elif stage == 2 and plan.cheap is None:
                plan.work[2] = ([], ())
            elif stage == 2:
                self._need_folds(plan, 1)
                rated = [r for r in self._rate_all({c: (c,) for c in plan.cheap}, plan.dims,
                                                   plan.trials, quiet=True)
                         if not dim_free(parse_candidate(r["candidate"]))]
                if not rated:
                    raise ValueError("PLDA and cosine could not be trained at any LDA "
                                     "dimension")
                best_dim = self._metric_dim(rated, plan.X.shape[1])
                have = self.fold_scores_.get((0, best_dim), {})
                plan.work[2] = ([best_dim], tuple(s for s in plan.needed if s not in have))
            else:
                raise ValueError("stage must be 1 or 2 (got %r)" % (stage,))
        return plan.work[stage]

    def _need_folds(self, plan, stage):
        missing = [k + 1 for k in range(self.num_folds) if k not in plan.done.get(stage, ())]
        if missing:
            raise ValueError("stage %d of fold%s %s not done" % (
                stage, "s" if len(missing) > 1 else "", ",".join(map(str, missing))))

    def cross_fit_stage(self, plan, stage, folds=None):
        """Held-out scores of ``stage`` on ``folds`` (0-based; None: all), in n_jobs
        processes if > 1: a list of ((dim, fold), {system: scores}, [(systems, error)]),
        dims outer, folds inner. Nothing is stored (add_fold_results does)."""
        dims, systems = self.stage_work(plan, stage)
        folds = list(range(self.num_folds)) if folds is None else sorted(folds)
        if not systems or not dims:
            return []
        tasks = [(dim, k) for dim in dims for k in folds]
        hb = self._heartbeat
        if hb is not None:
            hb.begin()
        if int(self.n_jobs) > 1 and len(tasks) > 1:
            if hb is not None:
                hb.idle()                      # the workers report
            results = run_fold_tasks(self, plan, systems, tasks, int(self.n_jobs))
        else:
            results = []
            for i, (dim, k) in enumerate(tasks):
                results.append(self.fold_scores(plan, systems, dim, k,
                                                self.task_progress(dim, k, i, len(tasks))))
        if hb is not None:
            hb.idle()
        return [(task,) + tuple(result) for task, result in zip(tasks, results)]

    def add_fold_results(self, plan, stage, results):
        """Store what cross_fit_stage returned (of one job, or of all) in fold_scores_; log
        what could not be trained and, once a stage has every fold, what was cross-fitted."""
        dims, systems = self.stage_work(plan, stage)
        failed = {}
        for (dim, k), scores, errors in results:
            self.fold_scores_.setdefault((k, dim), {}).update(scores)
            plan.done.setdefault(stage, set()).add(k)
            for what, err in errors:
                failed.setdefault((dim, what), (k, err))
        if not systems or not dims:
            plan.done[stage] = set(range(self.num_folds))
        for (dim, what), (k, err) in sorted(failed.items()):
            self._log("LDA %s: %s could not be trained (fold %d: %s); skipped"
                      % (dim_label(dim), what, k + 1, err))
        if systems and len(plan.done.get(stage, ())) == self.num_folds:
            for dim in dims:
                self._log("Cross-fitted %s at LDA %s on %d folds"
                          % (", ".join(systems), dim_label(dim), self.num_folds))

    def finish(self, plan):
        """Choose the candidate from the held-out scores of every fold and stage, learn its
        fusion on them, retrain it on all speakers; returns self."""
        self._need_folds(plan, 1)
        self.stage_work(plan, 2)
        self._need_folds(plan, 2)
        X, y, trials, members = plan.X, plan.y, plan.trials, plan.members
        best = choose_dplda_lambda(self.fold_scores_, trials, self.alpha, self.beta, self._log)
        if best is not None:
            self.dplda_lambda_ = best
        self.cv_results_ = self._rate_all(members, plan.dims, trials)
        if not self.cv_results_:
            raise ValueError("no candidate could be rated")
        self._choose(X.shape[1])
        name, dim = self.chosen_["candidate"], self.chosen_["lda_dim"]
        self.members_ = members[name]
        self.lda_dim_ = dim

        # Fusion/calibration weights on all held-out scores, then retrain on everything.
        self._note(where="fusion weights of %s" % name)
        score_dim = self.chosen_["score_dim"]
        pooled = np.concatenate([self._columns(k, score_dim, self.members_)
                                 for k in range(self.num_folds)])
        self.heldout_labels_ = [t.is_target for t in trials]
        labels = np.concatenate(self.heldout_labels_)
        self.fusion_ = self._fit_fusion(pooled, labels)
        self.pipeline_ = self._make_pipeline(dim, self.members_, self.random_state)
        if self.dplda_lambda_ is not None:          # only the cross-fitted lambda
            self.pipeline_.dplda_lambdas = (self.dplda_lambda_,)
            self.pipeline_.dplda_lambda = self.dplda_lambda_
        hb = self._heartbeat
        if hb is not None:
            hb.begin()
            where = "final %s (LDA %s) on all %d speakers" % (name, dim_label(dim),
                                                              self.num_speakers_)
            self.pipeline_.progress = lambda step=None, **f: (
                hb.note(where=where, step=step, **f) if step is not None else hb.idle())
        try:
            self.pipeline_.fit(X, y, n_jobs=self.n_jobs)
        finally:
            self.pipeline_.progress = None
            if hb is not None:
                hb.close()
            self._heartbeat = None
        self.n_features_in_ = X.shape[1]
        return self

    def _metric_dim(self, rated, dim):
        """The LDA dimension where the expensive systems are cross-fitted: that of the cheap
        system kept by the selection rule among the cheap systems' ratings (with "1se", the
        simplest dimension within one standard error of the best; models.selection)."""
        complexity = [selection.trained_parameters(parse_candidate(r["candidate"]),
                                                   r["lda_dim"], dim, self.num_speakers_)
                      for r in rated]
        kept, evidence = selection.choose(rated, complexity, self.selection)
        best = rated[evidence["best"]]
        row = rated[kept]
        if kept == evidence["best"]:
            self._log("LDA %s: %s has the best held-out pAUC of the cheap systems (%.4f); "
                      "the other systems are cross-fitted there"
                      % (dim_label(row["lda_dim"]), row["candidate"], row["pauc"]))
        else:
            diff, se = selection.paired(rated, evidence["best"], kept)
            self._log("LDA %s: %s (%.4f) is the simplest of the cheap systems within one "
                      "standard error of the best, %s at LDA %s (%.4f, %.4f +- %.4f better); "
                      "the other systems are cross-fitted there"
                      % (dim_label(row["lda_dim"]), row["candidate"], row["pauc"],
                         best["candidate"], dim_label(best["lda_dim"]), best["pauc"], diff,
                         se))
        return row["lda_dim"]

    def _choose(self, dim):
        """chosen_ from cv_results_ by the selection rule, with the reasons logged."""
        rows = self.cv_results_
        complexity = [selection.trained_parameters(parse_candidate(r["candidate"]),
                                                   r["lda_dim"], dim, self.num_speakers_)
                      for r in rows]
        chosen, evidence = selection.choose(rows, complexity, self.selection)
        self.chosen_ = dict(rows[chosen])
        reference = next((i for i, r in enumerate(rows) if r["candidate"] == "cosine_raw"),
                         None)

        def label(i):
            return "%s (LDA %s)" % (rows[i]["candidate"], dim_label(rows[i]["lda_dim"]))

        lines, self.reason_lines_ = selection.describe_choice(rows, chosen, evidence, label,
                                                              reference)
        self._log("Chose %s with LDA %s: held-out pAUC[%g,%g] %.4f, EER %.2f%%, "
                  "minDCF(0.01) %.4f" % (self.chosen_["candidate"],
                                         dim_label(self.chosen_["lda_dim"]), self.alpha,
                                         self.beta, self.chosen_["pauc"],
                                         100 * self.chosen_["eer"], self.chosen_["min_dcf"]))
        for line in lines:
            self._log(line)

    def _columns(self, k, dim, mem):
        return np.stack([self.fold_scores_[k, dim][m] for m in mem], axis=1)

    def _note(self, **fields):
        if getattr(self, "_heartbeat", None) is not None:
            self._heartbeat.note(**fields)

    def task_progress(self, dim, k, index, total, done=None):
        """The progress callable of task ``index`` of ``total`` (fold k at LDA dim): the
        fraction of the pass is (tasks done + this task's fraction) / total; ``done`` is the
        count shared by forked workers (None: ``index`` tasks are done)."""
        hb = getattr(self, "_heartbeat", None)
        if hb is None:
            return None
        where = "fold %d of %d, LDA %s" % (k + 1, self.num_folds, dim_label(dim))

        def progress(step=None, fraction=None, **fields):
            if step is None:
                return hb.idle()
            finished = index if done is None else done.value
            hb.note(where=where, step=step, fraction=(finished + 0.95 * (fraction or 0.0))
                    / total, **fields)
        return progress

    def fold_scores(self, plan, systems, dim, k, progress=None):
        """Train on every fold but k, score fold k's held-out trials: ({system: scores},
        [(systems, error)] of what could not be trained). Systems needing the PLDA are
        dropped together when it cannot be estimated (e.g. more dimensions than vectors);
        the discriminative PLDA gives one column per lambda, "dplda@<lambda>"."""
        X, y, trials = plan.X, plan.y, plan.trials
        train_rows = np.flatnonzero(plan.vec_fold != k)
        errors = []
        pipe = None
        # what remains without the PLDA, then without the LDA (raw cosine needs neither)
        attempts = [systems]
        for keep in (lambda s: base_system(s) not in PLDA_SYSTEMS, lambda s: dim_free((s,))):
            fewer = tuple(s for s in attempts[-1] if keep(s))
            if fewer and fewer != attempts[-1]:
                attempts.append(fewer)
        for attempt in attempts:
            pipe = self._make_pipeline(dim, attempt, self.random_state + k)
            pipe.progress = progress
            try:
                pipe.fit(X[train_rows], y[train_rows])
                break
            except (ValueError, np.linalg.LinAlgError) as err:
                lost = [s for s in attempt if base_system(s) in PLDA_SYSTEMS]
                if not lost or err.__class__ is not ValueError or "PLDA" not in str(err):
                    lost = [s for s in attempt if not dim_free((s,))] or attempt
                errors.append((", ".join(lost), str(err)))
                pipe = None
        if pipe is None:
            return {}, errors
        pipe.progress = None
        t = trials[k]
        if progress is not None:
            progress(step="scoring %d held-out trials" % t.is_target.size, fraction=1.0)
        fe = pipe.features(t.enroll_vectors(X), t.num_utts)
        ft = pipe.features(X[t.test_rows], 1)
        scores = pipe.score(fe, ft, t.enroll_index, t.test_index, t.num_utts)
        out = {}
        for j, system in enumerate(pipe.systems):
            if base_system(system) != "dplda":     # contiguous, as after a fork or a file
                out[system] = np.ascontiguousarray(scores[:, j])
        dplda = tuple(s for s in pipe.systems if base_system(s) == "dplda")
        if dplda:                       # the same pipeline, scoring with each lambda's model
            pipe.systems = dplda
            for lam in sorted(pipe.dplda_):
                pipe.dplda_lambda = lam
                fe = pipe.features(t.enroll_vectors(X), t.num_utts)
                ft = pipe.features(X[t.test_rows], 1)
                cols = pipe.score(fe, ft, t.enroll_index, t.test_index, t.num_utts)
                for j, system in enumerate(dplda):
                    out["%s@%r" % (system, lam)] = np.ascontiguousarray(cols[:, j])
        return out, errors

    def _rate_all(self, members, dims, trials, quiet=False):
        """Held-out figures of every candidate whose systems were cross-fitted at a dim on
        every fold. A candidate of dimension-free systems only (raw cosine) is rated once,
        at the first dim that has it, and reported as "no LDA" (lda_dim 0)."""
        results = []
        done = set()
        if getattr(self, "_heartbeat", None) is not None:
            self._heartbeat.begin()
        for step, (dim, (name, mem)) in enumerate(itertools.product(dims, members.items())):
            self._note(where="rating candidates", step="%s at LDA %s" % (
                name, dim_label(dim)), fraction=step / (len(dims) * len(members)))
            if not all(m in self.fold_scores_.get((k, dim), {}) for m in mem
                       for k in range(self.num_folds)):
                continue
            free = dim_free(mem)
            if free and name in done:
                continue
            done.add(name)
            per_fold = self._rate(dim, mem, trials)
            if per_fold is None:
                self._log("Candidate %s, LDA %s: fusion failed, skipped"
                          % (name, dim_label(dim)))
                continue
            row = {"candidate": name, "lda_dim": 0 if free else dim,
                   "score_dim": dim, "folds": per_fold}
            for key in ("pauc", "pauc_001", "eer", "min_dcf"):
                row[key] = float(np.mean([f[key] for f in per_fold]))
            results.append(row)
            if quiet:
                continue
            extra = ("" if (self.alpha, self.beta) == (0.0, 0.01)
                     else "  pAUC[0,0.01] %.4f" % row["pauc_001"])
            self._log("Held-out %-36s LDA %4s: pAUC[%g,%g] %.4f  EER %.2f%%  "
                      "minDCF(0.01) %.4f%s"
                      % (name, dim_label(row["lda_dim"]), self.alpha, self.beta,
                         row["pauc"], 100 * row["eer"], row["min_dcf"], extra))
        return results

    def _rate(self, dim, mem, trials):
        """Per-fold held-out figures of the candidate with member systems ``mem``."""
        out = []
        for k, t in enumerate(trials):
            scores = self._columns(k, dim, mem)
            if len(mem) > 1:
                others = [j for j in range(len(trials)) if j != k]
                train = np.concatenate([self._columns(j, dim, mem) for j in others])
                labels = np.concatenate([trials[j].is_target for j in others])
                try:
                    fused = self._fit_fusion(train, labels, min(
                        self.max_rating_fusion_trials or np.inf,
                        self.max_fusion_trials or np.inf)).transform(scores)
                except (SeparableScoresError, ValueError):
                    return None
            else:
                fused = scores[:, 0]
            out.append(trial_figures(fused, t.is_target, self.alpha, self.beta))
        return out

    @classmethod
    def from_parts(cls, pipeline, fusion, n_features_in):
        """A fitted back-end from a stored pipeline (BackendPipeline.from_parts) and fusion."""
        model = cls()
        model.pipeline_ = pipeline
        model.members_ = tuple(pipeline.systems)
        model.lda_dim_ = pipeline.lda_dim
        model.fusion_ = fusion
        model.n_features_in_ = int(n_features_in)
        if fusion.weights_.size != len(model.members_):
            raise ValueError("the fusion has %d weights for %d systems"
                             % (fusion.weights_.size, len(model.members_)))
        return model

    # -- scoring -------------------------------------------------------------------------------
    def features(self, X, num_utts=1):
        """What ``score_features`` needs of raw vectors X (rows averaged over num_utts)."""
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError("vectors have dimension %s but the back-end was trained on %d"
                             % (X.shape[1:] or "?", self.n_features_in_))
        return self.pipeline_.features(X, num_utts)

    def score_features(self, enroll_feats, test_feats, enroll_rows, test_rows, num_utts=1):
        """Fused/calibrated scores of trials (enroll_rows[k], test_rows[k]); num_utts is the
        count of vectors averaged into each enrollment row (scalar or per row)."""
        raw = self.pipeline_.score(enroll_feats, test_feats, enroll_rows, test_rows, num_utts)
        return self.fusion_.transform(raw)

    def score(self, enroll, test, enroll_rows, test_rows, num_utts=1):
        """Scores of trials between raw enrollment vectors (speaker means of num_utts raw
        vectors, or single vectors) and raw test vectors; higher = same speaker."""
        return self.score_features(self.features(enroll, num_utts), self.features(test, 1),
                                   enroll_rows, test_rows, num_utts)

    def describe(self):
        """A short text description of the chosen system, its cross-fitted figures and why it
        was kept (models.selection)."""
        lines = ["system %s" % "+".join(self.members_), "lda_dim %s" % dim_label(self.lda_dim_),
                 "fusion_weights %s" % " ".join("%.6g" % w for w in self.fusion_.weights_),
                 "fusion_offset %.6g" % self.fusion_.offset_,
                 "alpha %g" % self.alpha, "beta %g" % self.beta,
                 "num_folds %d" % self.num_folds, "enroll_utts %d" % self.enroll_utts,
                 "seed %d" % self.random_state,
                 "asnorm_top_n %d" % self.pipeline_.asnorm_top_n]
        if "dplda" in {base_system(m) for m in self.members_}:
            lines.append("dplda_lambda %g" % self.pipeline_.dplda_model().regularization)
        for key in ("pauc", "pauc_001", "eer", "min_dcf"):
            lines.append("heldout_%s %.6g" % (key, self.chosen_[key]))
        lines += getattr(self, "reason_lines_", [])
        return "\n".join(lines) + "\n"
