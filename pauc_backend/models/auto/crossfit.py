"""The state of one cross-fitting of pAUCMetric (auto): its plan (models.auto.policy), the
stages as they are decided, the store of held-out scores (models.auto.store), the scores of
the in-domain trial sets (models.auto.trialsets) and the rated rows. It runs a stage's fold
tasks (models.auto.folds), adds their results, rates each LDA dimension as soon as every fold
of it is in, has the next stage decided from its rows (the promoted dimension, the promoted
candidates: models.auto.policy) and says why, in the log and in lines for system.txt.

What ranks the screenings (``ranking``): the most in-domain source that can be trusted
(development trials, pseudo-speaker trials, else the training folds; models.auto.evidence,
models.auto.policy.ranking_source), decided once, with one WARNING for a source that is not
trusted.

It reads a frozen Settings and reports through a Reporter (models.auto.settings), never the
estimator; what it decides is its own state, which the estimator reads: ``rows_at()`` (the
rated rows, cv_results_), ``evidence()`` / ``set_evidence()`` (the rows as the selection
reads them), ``dplda_lambda`` (the discriminative PLDA's lambda, None without it), ``lines``
(what was screened and promoted and why, for system.txt)."""

import numpy as np

from pauc_backend.models.lda import LDA
from pauc_backend.models.auto.evidence import TRAINING_FOLDS, Evidence
from pauc_backend.models.auto.trialsets import TrialSetScores
from pauc_backend.models.auto.folds import (choose_dplda_lambda, dim_label, fold_task,
                                            run_fold_tasks, task_systems)
from pauc_backend.models.auto.policy import (SCREEN_CANDIDATES, SCREEN_DIMS, Stage,
                                             promotion, ranking_source, screened_dim,
                                             second_stage)
from pauc_backend.models.auto.store import HeldOutStore
from pauc_backend.models.systems import (base_system, dim_free, parse_candidate,
                                         trained_parameters)

__all__ = ["CrossFit"]


class CrossFit:
    """One cross-fitting on ``plan`` (models.auto.policy.make_plan) with ``settings``,
    reporting to ``reporter`` (models.auto.settings); ``make_pipeline(lda_dim, systems,
    seed)`` builds each fold task's pipeline (default ``settings.pipeline``). The plan's
    attributes are this object's (X, y, members, trials, dims, stages, done, ...)."""

    def __init__(self, settings, reporter, plan, make_pipeline=None):
        self.settings = settings
        self.reporter = reporter
        self.make_pipeline = make_pipeline or settings.pipeline
        self.plan = plan
        self.__dict__.update(vars(plan))
        self.dim = plan.X.shape[1]
        self.store = HeldOutStore([t.is_target for t in plan.trials], settings.alpha,
                                  settings.beta)
        self.rows = {}               # (candidate, lda_dim, budget) -> row of cv_results_
        self.screen_rows = []        # the cheap systems at each dimension, candidates or not
        # the in-domain trial sets (models.auto.trialsets): their fold sums and rated rows,
        # keyed as ``rows`` and aligned with ``screen_rows``
        self.sets = {name: TrialSetScores(name, trial_set.trials, settings.alpha,
                                          settings.beta, settings.dev_resamples,
                                          settings.random_state)
                     for name, trial_set in plan.trial_sets.items()}
        self.set_rows = {name: {} for name in self.sets}
        self.screen_set_rows = {name: [] for name in self.sets}
        self._ranking = None
        self.dplda_lambda = None     # the discriminative PLDA's, once chosen
        self.lines = ["crossfit_data %s" % plan.subset]      # for system.txt (crossfit_)

    def train_rows(self, fold):
        return self.plan.train_rows(fold)

    def held_out(self, fold, vectors):
        return self.plan.held_out(fold, vectors)

    def fold_lda(self, fold, dim):
        """The LDA of fold ``fold``'s training rows at ``dim`` (> 0): every dimension of a
        fold from one estimation (LDA.fit_path: its statistics and eigendecompositions do not
        depend on the dimension; the same bits as a fit at ``dim``), made on first use in
        this process (a forked worker makes its own) and kept: two D x D matrices a fold."""
        paths = self.__dict__.setdefault("_lda_paths", {})
        if fold not in paths:
            rows = self.train_rows(fold)
            paths[fold] = LDA.fit_path(self.X, self.y[rows], rows=rows)
        return paths[fold].lda(dim)

    # -- stages ------------------------------------------------------------------------------
    def stage_work(self, stage):
        """The Stage cross-fitted in ``stage`` (1, 2 or 3) on every fold. Stages 2 and 3 need
        every fold of the previous stage: they are chosen from its ratings (the promoted LDA
        dimension, the promoted candidates)."""
        if stage not in (1, 2, 3):
            raise ValueError("stage must be 1, 2 or 3 (got %r)" % (stage,))
        if stage not in self.stages:
            self.stage_work(stage - 1)
            self.need_folds(stage - 1)
            previous = self.stages[stage - 1]
            if stage == 2 and previous.name == SCREEN_DIMS:
                dim, line = self._screened_dim()
                self.lines.append(line)
                self.stages[2] = second_stage(self.settings, self, dim)
            elif previous.name == SCREEN_CANDIDATES:
                self.stages[stage], line = self._promote(previous)
                self.lines.append(line)
            else:
                self.stages[stage] = Stage("nothing left", [], ())
        return self.stages[stage]

    def need_folds(self, stage):
        work = self.stage_work(stage)
        missing = [k + 1 for k in (work.folds if work.systems and work.dims else ())
                   if k not in self.done.get(stage, ())]
        if missing:
            raise ValueError("stage %d of fold%s %s not done" % (
                stage, "s" if len(missing) > 1 else "", ",".join(map(str, missing))))

    def run(self, stage, folds=None):
        """Held-out results of ``stage`` on ``folds`` (0-based; None: all), in n_jobs
        processes if > 1: an iterator of ((dim, fold), figures, kept scores, errors), dims
        outer, folds inner, as they come. Nothing is stored (``add`` does)."""
        settings, reporter = self.settings, self.reporter
        work = self.stage_work(stage)
        folds = [k for k in (settings.every_fold if folds is None else sorted(folds))
                 if k in work.folds]
        tasks = [(dim, k) for dim in work.dims for k in folds] if work.systems else []
        reporter.begin()
        if int(settings.n_jobs) > 1 and len(tasks) > 1:
            reporter.idle()                    # the workers report
            results = run_fold_tasks(self, work, tasks, int(settings.n_jobs))
        else:
            results = (fold_task(self, work, dim, k, self.task_progress(dim, k, i, len(tasks)))
                       for i, (dim, k) in enumerate(tasks))
        # every result is drawn, the last one too: the pool's iterator must run to its end,
        # where the pool is closed and joined (zip(tasks, results) left it suspended after
        # the last task, so the pool was terminated when the iterator was collected: a
        # SIGTERM to idle workers in every run)
        for i, result in enumerate(results):
            yield (tasks[i],) + tuple(result)
        reporter.idle()

    def task_progress(self, dim, k, index, total, done=None):
        """The progress callable of task ``index`` of ``total`` (fold k at LDA dim;
        Reporter.task_progress), None without progress lines."""
        return self.reporter.task_progress("fold %d of %d, LDA %s" % (
            k + 1, self.settings.num_folds, dim_label(dim)), index, total, done)

    def add(self, stage, results):
        """Store the results of ``run`` (of one job, or of all); rate each dimension as soon
        as every fold of it is in; log what could not be trained."""
        work = self.stage_work(stage)
        failed, seen = {}, {}
        for item in results:
            (dim, k), figures, columns, errors = item[:4]
            self.store.add(dim, k, figures, columns)
            for name, cols in (item[4] if len(item) > 4 else {}).items():
                self.sets[name].add(dim, k, cols)
            self.done.setdefault(stage, set()).add(k)
            seen.setdefault(dim, set()).add(k)
            for what, err in errors:
                failed.setdefault((dim, what), (k, err))
            if seen[dim] >= set(work.folds):
                self._dimension_done(work, dim)
        if not work.systems or not work.dims:
            self.done[stage] = set(self.settings.every_fold)
        for (dim, what), (k, err) in sorted(failed.items()):
            self.reporter.log("LDA %s: %s could not be trained (fold %d: %s); skipped"
                              % (dim_label(dim), what, k + 1, err))

    def _dimension_done(self, work, dim):
        s, log = self.settings, self.reporter.log
        log("Cross-fitted %s at LDA %s on %s"
            % (", ".join(task_systems(work, dim)), dim_label(dim),
               "%d folds" % s.num_folds if len(work.folds) == s.num_folds else
               "fold%s %s of %d" % ("s" if len(work.folds) > 1 else "",
                                    ",".join(str(k + 1) for k in work.folds), s.num_folds)))
        if any(base_system(name) == "dplda" for name in work.systems):
            best = choose_dplda_lambda(self.store, dim, log, s.alpha, s.beta, work.folds,
                                       work.lambdas is None)
            if best is not None:
                self.dplda_lambda = best
                for scores in self.sets.values():   # the same lambda's in-domain scores
                    names = [n for n in scores.names_at(dim) if "@" in n]
                    for name in names:
                        if float(name.split("@")[1]) == best:
                            scores.alias(dim, name, name.split("@")[0])
                    scores.drop(dim, names)
        self._rate(dim, work)
        if work.name == SCREEN_DIMS:
            for name in work.systems:     # the screened systems, candidates or not
                if not dim_free((name,)) and self.store.has_figures(dim, name):
                    self.screen_rows.append(_row(name, dim, dim, "full",
                                                 self.store.fold_figures(dim, name)))
                    for which in self.sets:
                        self.screen_set_rows[which].append(
                            self.set_row(which, name, (name,), dim, dim, "full"))
            self.store.release(dim, keep=work.keep)
            for scores in self.sets.values():
                scores.release(dim, keep=work.keep)

    # -- rating ------------------------------------------------------------------------------
    def _rate(self, dim, work):
        """Rate every candidate at ``dim`` whose figures (or, for a fusion, scores) are in on
        every fold ("full"), else, once, on the folds of a candidate screening ("screen").
        The fusions are rated in ``n_jobs`` forked processes (the store reaches them by the
        fork); the rows are the same whatever ``n_jobs``."""
        s, reporter, store = self.settings, self.reporter, self.store
        every = s.every_fold
        todo = []
        for name, mem in self.members.items():
            free = dim_free(mem)
            for budget, folds in (("full", every), ("screen", tuple(work.folds))):
                key = (name, 0 if free else dim, budget)
                if budget == "screen" and (work.name != SCREEN_CANDIDATES or free or (
                        name, 0 if free else dim, "full") in self.rows):
                    continue
                if key not in self.rows and store.can_rate(dim, mem, folds):
                    todo.append((name, key, folds))
                    break
                if key in self.rows:
                    break
        reporter.begin()
        for i, (name, _, _) in enumerate(todo):
            reporter.note(where="rating candidates", step="%s at LDA %s"
                          % (name, dim_label(dim)), fraction=i / len(todo))
        results = _rate_all(self, dim, todo)
        for (name, key, folds), per_fold in zip(todo, results):
            if per_fold is None:
                reporter.log("Candidate %s, LDA %s: fusion failed, skipped"
                             % (name, dim_label(dim)))
                continue
            row = self.rows[key] = _row(name, key[1], dim, key[2], per_fold)
            extra = ("" if (s.alpha, s.beta) == (0.0, 0.01)
                     else "  pAUC[0,0.01] %.4f" % row["pauc_001"])
            reporter.log("Held-out %-36s LDA %4s: pAUC[%g,%g] %.4f  EER %.2f%%  minDCF(0.01) "
                         "%.4f%s%s" % (name, dim_label(row["lda_dim"]), s.alpha, s.beta,
                                       row["pauc"], 100 * row["eer"], row["min_dcf"], extra,
                                       "" if key[2] == "full" else "  (screening: folds %s)"
                                       % ",".join(str(k + 1) for k in folds)))
            for which in self.sets:
                got = self.set_rows[which][key] = self.set_row(
                    which, name, self.members[name], key[1], dim, key[2])
                if got is None:
                    reporter.log("%s %-24s LDA %4s: fusion cannot be trained on them (too "
                                 "few enrolled speakers, or separable scores): not rated "
                                 "there" % (which.capitalize(), name, dim_label(key[1])))
                else:
                    reporter.log("%s %-24s LDA %4s: pAUC[%g,%g] %.4f  EER %.2f%%  "
                                 "minDCF(0.01) %.4f  (models of %d fold%s averaged)" % (
                                     which.capitalize(), name, dim_label(key[1]), s.alpha,
                                     s.beta, got["pauc"], 100 * got["eer"], got["min_dcf"],
                                     got["model_folds"],
                                     "" if got["model_folds"] == 1 else "s"))

    def set_row(self, which, name, members, lda_dim, score_dim, budget):
        """The row of a candidate on the in-domain trial set ``which``
        (models.auto.trialsets): its figures on the whole list, per bootstrap resample under
        "folds"; None when it cannot be rated there."""
        s = self.settings
        limit = s.rating_fusion_limit
        scores = self.sets[which]
        rated = scores.rate(score_dim, members,
                            s.fusion(0 if limit == float("inf") else int(limit)))
        if rated is None:
            return None
        point, resampled = rated
        row = {"candidate": name, "lda_dim": lda_dim, "score_dim": score_dim,
               "budget": budget, "folds": resampled,
               "model_folds": scores.num_folds(score_dim, members)}
        row.update(point)
        return row

    def rows_at(self, dims=None):
        """Rated rows (at ``dims``, dimension-free ones always) in a stable order: dimension,
        then candidate, then budget (screening first)."""
        order = {name: i for i, name in enumerate(self.members)}
        rows = [r for r in self.rows.values()
                if dims is None or r["lda_dim"] in dims
                or dim_free(parse_candidate(r["candidate"]))]
        return sorted(rows, key=lambda r: (self.dims.index(r["score_dim"])
                                           if r["score_dim"] in self.dims else -1,
                                           order[r["candidate"]], r["budget"] == "full"))

    # -- promotions --------------------------------------------------------------------------
    def ranking(self):
        """The source that ranks the screenings (module doc), decided on first use (raw
        cosine and the centred cosine are rated in the first stage)."""
        if self._ranking is None:
            self._ranking, untrusted = ranking_source(
                {name: list(self.set_rows[name].values()) + self.screen_set_rows[name]
                 for name in self.sets})
            for why in untrusted:
                self.reporter.warn("%s; they rate no candidate" % why)
            self.reporter.log("The %s rank the candidates of the screenings" % self._ranking)
        return self._ranking

    def _screened_dim(self):
        """The LDA dimension promoted by the screening of stage 1 (policy.screened_dim, on
        the cheap systems' rows from the ranking source) and the line for system.txt."""
        rated = self.screen_rows
        if not rated:
            raise ValueError("PLDA and cosine could not be trained at any LDA dimension")
        source = self.ranking()
        if source == TRAINING_FOLDS:
            evidence = self.evidence(rated)
        else:
            keep = [i for i, d in enumerate(self.screen_set_rows[source]) if d is not None]
            rated = [rated[i] for i in keep]
            evidence = self.set_evidence(source, [self.screen_set_rows[source][i]
                                                  for i in keep])
        dim, why = screened_dim(rated, evidence, self.complexity(rated),
                                self.settings.selection, source)
        self.reporter.log("LDA %s: %s; the other systems are cross-fitted there"
                          % (dim_label(dim), why))
        return dim, "screened_lda_dims %s with %s; promoted LDA %s: %s" % (
            ",".join(dim_label(d) for d in self.dims), ",".join(self.stages[1].systems),
            dim_label(dim), why)

    def evidence(self, rows=None):
        """The Evidence of the training folds (models.auto.evidence) of ``rows`` (None: the
        candidates rated on every fold so far; None rows: not rated)."""
        if rows is None:
            rows = [r for r in self.rows_at() if r["budget"] == "full"]
        s = self.settings
        design = ("single vectors against single vectors" if not s.enroll_utts else
                  "speakers enrolled by the mean of %d vectors against single vectors"
                  % int(s.enroll_utts))
        return Evidence(TRAINING_FOLDS, rows, "%d speaker-disjoint folds of the training "
                        "speakers (%s); each fold's trials (%s) scored by the back-end "
                        "retrained on the other folds" % (s.num_folds, self.subset,
                                                          design)).check()

    def set_evidence(self, which, rows):
        """The Evidence of the in-domain trial set ``which`` of ``rows`` (None: not
        rated)."""
        scores = self.sets[which]
        return Evidence(which, rows, "%s; a cross-fitted candidate's scores averaged over "
                        "its folds' models, %d paired cluster-bootstrap resamples of the "
                        "speakers" % (scores.trials.describe(), len(scores.draws)),
                        "bootstrap").check()

    def complexity(self, rows):
        """The trained parameters of each row's candidate (models.systems.trained_parameters;
        with an adaptation set the centred cosine at LDA none learns none)."""
        return [trained_parameters(parse_candidate(r["candidate"]), r["lda_dim"],
                                   self.dim, self.num_speakers, self.adapt is not None)
                for r in rows]

    def _promote(self, screen):
        """The stage after the candidate screening ``screen`` (policy.promotion) and the
        line for system.txt that says what was promoted."""
        source = self.ranking()
        free = tuple(m for m in self.needed if dim_free((m,))
                     and not self.store.has_figures(screen.dims[0], m))
        stage, line = promotion(
            self.settings, self, screen, self.rows_at(dims=set(screen.dims)), self.rows,
            source, None if source == TRAINING_FOLDS else self.set_rows[source], free,
            None if self.dplda_lambda is None else (self.dplda_lambda,))
        self.reporter.log("Screening: " + line)
        return stage, "screening " + line

    def release(self):
        """Drop every held-out score, in-domain score and cross-fitting datum (the choice is
        made; cv_results_ and the rows stay)."""
        self.store.clear()
        for scores in self.sets.values():
            scores.clear()
        self.release_data()

    def release_data(self):
        """Drop what only the cross-fitting reads (the subset's vectors, the held-out trials,
        the folds' LDA estimations) once the choice is made: the final model trains on the
        whole table (models.auto.table), so its peak need not carry them."""
        for holder in (self, self.plan):
            holder.X = holder.trials = holder.groups = None
        self.__dict__.pop("_lda_paths", None)

    def recompute(self, dim, members):
        """The held-out scores of ``members`` at ``dim`` when the store released them (a
        cheap system screened at another dimension): the same fold tasks again (seeded, so
        the same scores)."""
        stage = Stage("held-out scores of the chosen candidate", [dim], tuple(members),
                      keep=frozenset(members))
        for k in self.settings.every_fold:
            _, columns, _, set_columns = fold_task(self, stage, dim, k)
            self.store.add(dim, k, {}, columns)
            for name, cols in set_columns.items():
                self.sets[name].add(dim, k, cols)


_SHARED = None


def _rate_all(cross, dim, todo):
    """Per-fold figures of each (candidate, key, folds) of ``todo`` (None: a fusion that
    cannot be trained); the fusions in forked processes when n_jobs > 1."""
    s = cross.settings
    limit, fusion, seed = s.rating_fusion_limit, s.fusion(0), s.random_state + 7
    n_jobs = int(s.n_jobs)
    jobs = [(cross.members[name], dim, folds) for name, _, folds in todo]
    fusions = [i for i, (mem, _, _) in enumerate(jobs) if len(mem) > 1]
    out = [None] * len(jobs)
    if n_jobs > 1 and len(fusions) > 1:
        from pauc_backend.workers import fork_pool
        global _SHARED
        _SHARED = (cross.store, jobs, fusion, limit, seed)
        try:
            with fork_pool(min(n_jobs, len(fusions))) as pool:
                for i, per_fold in zip(fusions, pool.map(_rate_one, fusions)):
                    out[i] = per_fold
        finally:
            _SHARED = None
    for i, (mem, _, folds) in enumerate(jobs):
        if out[i] is None and (len(mem) == 1 or n_jobs <= 1 or len(fusions) <= 1):
            out[i] = cross.store.rate(dim, mem, fusion, limit, seed, folds)
    return out


def _rate_one(index):
    store, jobs, fusion, limit, seed = _SHARED
    mem, dim, folds = jobs[index]
    return store.rate(dim, mem, fusion, limit, seed, folds)


def _row(name, lda_dim, score_dim, budget, per_fold):
    """A row of cv_results_: the candidate, where it was rated (``score_dim``: the LDA
    dimension of the scores; ``lda_dim`` 0 for a dimension-free one), the budget, the
    figures of each fold and their means."""
    row = {"candidate": name, "lda_dim": lda_dim, "score_dim": score_dim, "budget": budget,
           "folds": per_fold}
    for fig in ("pauc", "pauc_001", "eer", "min_dcf"):
        row[fig] = float(np.mean([f[fig] for f in per_fold]))
    return row
