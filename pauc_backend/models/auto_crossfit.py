"""The state of one cross-fitting of pAUCMetric (auto): its plan (models.auto_policy), the
stages as they are decided, the store of held-out scores (models.auto_store) and the rated
rows. It runs a stage's fold tasks (models.auto_folds), adds their results, rates each LDA
dimension as soon as every fold of it is in, decides the next stage (the promoted dimension,
the promoted candidates) and says why, in the log and in lines for system.txt."""

import numpy as np

from pauc_backend.models import selection
from pauc_backend.models.auto_folds import (choose_dplda_lambda, dim_label, fold_task,
                                            run_fold_tasks)
from pauc_backend.models.auto_policy import Stage, promoted_stage, second_stage
from pauc_backend.models.auto_store import HeldOutStore
from pauc_backend.models.auto_systems import base_system, dim_free, parse_candidate, system

__all__ = ["CrossFit"]

_SCREEN_DIMS = "screen LDA dimensions"


class CrossFit:
    """One cross-fitting of the estimator ``est`` (an AutoBackend) on ``plan``: the plan's
    attributes are this object's (X, y, members, trials, dims, stages, done, ...)."""

    def __init__(self, est, plan):
        self.est = est
        self.plan = plan
        self.__dict__.update(vars(plan))
        self.store = HeldOutStore([t.is_target for t in plan.trials], est.alpha, est.beta)
        self.rows = {}               # (candidate, lda_dim, budget) -> row of cv_results_
        self.screen_rows = []        # the cheap systems at each dimension, candidates or not

    def train_rows(self, fold):
        return self.plan.train_rows(fold)

    # -- stages ------------------------------------------------------------------------------
    def stage_work(self, stage):
        """The Stage cross-fitted in ``stage`` (1, 2 or 3) on every fold. Stages 2 and 3 need
        every fold of the previous stage: they are chosen from its ratings (the promoted LDA
        dimension, the promoted candidates)."""
        if stage not in (1, 2, 3):
            raise ValueError("stage must be 1, 2 or 3 (got %r)" % (stage,))
        if stage not in self.stages:
            self.need_folds(stage - 1)
            self.stage_work(stage - 1)
            previous = self.stages[stage - 1]
            if stage == 2 and previous.name == _SCREEN_DIMS:
                self.stages[2] = second_stage(self.est, self, self._screened_dim())
            elif previous.budget == "screen":
                self.stages[stage] = self._promote(previous)
            else:
                self.stages[stage] = Stage("nothing left", [], ())
        return self.stages[stage]

    def need_folds(self, stage):
        missing = [k + 1 for k in range(self.est.num_folds)
                   if k not in self.done.get(stage, ())]
        if missing:
            raise ValueError("stage %d of fold%s %s not done" % (
                stage, "s" if len(missing) > 1 else "", ",".join(map(str, missing))))

    def run(self, stage, folds=None):
        """Held-out results of ``stage`` on ``folds`` (0-based; None: all), in n_jobs
        processes if > 1: an iterator of ((dim, fold), figures, kept scores, errors), dims
        outer, folds inner, as they come. Nothing is stored (``add`` does)."""
        est = self.est
        work = self.stage_work(stage)
        folds = list(range(est.num_folds)) if folds is None else sorted(folds)
        tasks = [(dim, k) for dim in work.dims for k in folds] if work.systems else []
        hb = est._heartbeat
        if hb is not None:
            hb.begin()
        if int(est.n_jobs) > 1 and len(tasks) > 1:
            if hb is not None:
                hb.idle()                      # the workers report
            results = run_fold_tasks(est, self, work, tasks, int(est.n_jobs))
        else:
            results = (fold_task(est, self, work, dim, k,
                                 est.task_progress(dim, k, i, len(tasks)))
                       for i, (dim, k) in enumerate(tasks))
        for task, result in zip(tasks, results):
            yield (task,) + tuple(result)
        if hb is not None:
            hb.idle()

    def add(self, stage, results):
        """Store the results of ``run`` (of one job, or of all); rate each dimension as soon
        as every fold of it is in; log what could not be trained."""
        work = self.stage_work(stage)
        failed, seen = {}, {}
        for (dim, k), figures, columns, errors in results:
            self.store.add(dim, k, figures, columns)
            self.done.setdefault(stage, set()).add(k)
            seen.setdefault(dim, set()).add(k)
            for what, err in errors:
                failed.setdefault((dim, what), (k, err))
            if len(seen[dim]) == self.est.num_folds:
                self._dimension_done(work, dim)
        if not work.systems or not work.dims:
            self.done[stage] = set(range(self.est.num_folds))
        for (dim, what), (k, err) in sorted(failed.items()):
            self.est._log("LDA %s: %s could not be trained (fold %d: %s); skipped"
                          % (dim_label(dim), what, k + 1, err))

    def _dimension_done(self, work, dim):
        est = self.est
        est._log("Cross-fitted %s at LDA %s on %d folds%s"
                 % (", ".join(work.systems), dim_label(dim), est.num_folds,
                    "" if work.iters is None else " (pAUCMetrics at %d iterations: the "
                    "screening budget)" % work.iters))
        if any(base_system(s) == "dplda" for s in work.systems):
            best = choose_dplda_lambda(self.store, dim, est._log, est.alpha, est.beta)
            if best is not None:
                est.dplda_lambda_ = best
        self._rate(dim, work.budget)
        if work.name == _SCREEN_DIMS:
            for name in work.systems:     # the screened systems, candidates or not
                if not dim_free((name,)) and self.store.has_figures(dim, name):
                    self.screen_rows.append(_row(name, dim, dim, "full",
                                                 self.store.fold_figures(dim, name)))
            self.store.release(dim, keep=work.keep)

    # -- rating ------------------------------------------------------------------------------
    def _rate(self, dim, budget):
        """Rate every candidate whose figures (or, for a fusion, scores) are all in at
        ``dim``, once per budget; a candidate without a metric is at its full budget."""
        est, store = self.est, self.store
        limit = min(est.max_rating_fusion_trials or np.inf, est.max_fusion_trials or np.inf)
        names = list(self.members)
        if est._heartbeat is not None:
            est._heartbeat.begin()
        for i, name in enumerate(names):
            mem = self.members[name]
            free = dim_free(mem)
            metric = any(system(base_system(m)).head == "metric" for m in mem)
            row_budget = budget if metric else "full"
            key = (name, 0 if free else dim, row_budget)
            if key in self.rows or not store.can_rate(dim, mem):
                continue
            est._note(where="rating candidates", step="%s at LDA %s" % (name, dim_label(dim)),
                      fraction=i / len(names))
            per_fold = store.rate(dim, mem, est._fusion(0), limit, est.random_state + 7)
            if per_fold is None:
                est._log("Candidate %s, LDA %s: fusion failed, skipped"
                         % (name, dim_label(dim)))
                continue
            row = self.rows[key] = _row(name, 0 if free else dim, dim, row_budget, per_fold)
            extra = ("" if (est.alpha, est.beta) == (0.0, 0.01)
                     else "  pAUC[0,0.01] %.4f" % row["pauc_001"])
            est._log("Held-out %-36s LDA %4s: pAUC[%g,%g] %.4f  EER %.2f%%  minDCF(0.01) "
                     "%.4f%s%s" % (name, dim_label(row["lda_dim"]), est.alpha, est.beta,
                                   row["pauc"], 100 * row["eer"], row["min_dcf"], extra,
                                   "  (screening budget)" if row_budget == "screen" else ""))

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
    def _screened_dim(self):
        """The LDA dimension where the other systems are cross-fitted: that of the cheap
        system kept by the selection rule among the cheap systems' ratings (with "1se", the
        simplest dimension within one standard error of the best; models.selection)."""
        est, rated = self.est, self.screen_rows
        if not rated:
            raise ValueError("PLDA and cosine could not be trained at any LDA dimension")
        kept, evidence = selection.choose(rated, est._complexity(rated), est.selection)
        best, row = rated[evidence["best"]], rated[kept]
        if kept == evidence["best"]:
            why = ("%s has the best held-out pAUC of the cheap systems (%.4f)"
                   % (row["candidate"], row["pauc"]))
        else:
            diff, se = selection.paired(rated, evidence["best"], kept)
            why = ("%s (%.4f) is the simplest of the cheap systems within one standard error "
                   "of the best, %s at LDA %s (%.4f, %.4f +- %.4f better)"
                   % (row["candidate"], row["pauc"], best["candidate"],
                      dim_label(best["lda_dim"]), best["pauc"], diff, se))
        est._log("LDA %s: %s; the other systems are cross-fitted there"
                 % (dim_label(row["lda_dim"]), why))
        est.crossfit_.append("screened_lda_dims %s with %s; promoted LDA %s: %s" % (
            ",".join(dim_label(d) for d in self.dims), ",".join(self.stages[1].systems),
            dim_label(row["lda_dim"]), why))
        return row["lda_dim"]

    def _promote(self, screen):
        """Successive halving: the best 1/screen_factor of the candidates rated at the
        screened dimension(s), by mean held-out pAUC, are promoted; the metrics they need are
        cross-fitted at the full budget in the next stage (none: nothing is)."""
        est = self.est
        rows = [r for r in self.rows_at(dims=set(screen.dims))
                if not dim_free(parse_candidate(r["candidate"]))]
        count = max(1, -(-len(rows) // int(est.screen_factor)))
        top = sorted(rows, key=lambda r: -r["pauc"])[:count]
        promoted = [r for r in top if r["budget"] == "screen"]
        names = tuple(dict.fromkeys(r["candidate"] for r in promoted))
        line = ("%d candidates rated at LDA %s, the pAUCMetrics at %d of %d iterations; "
                "the best %d (1/%d) by held-out pAUC: %s" % (
                    len(rows), ",".join(dim_label(d) for d in screen.dims), screen.iters,
                    est._metric_iters(), count, int(est.screen_factor),
                    ", ".join(r["candidate"] for r in top)))
        line += ("; promoted to the full budget: %s" % ", ".join(names) if names else
                 "; none needs a pAUCMetric: no metric is trained at the full budget")
        est._log("Screening: " + line)
        est.crossfit_.append("screening " + line)
        for dim in screen.dims:      # the screening budget's metrics are superseded
            self.store.drop(dim, [s for s in screen.systems
                                  if system(base_system(s)).head == "metric"])
        return promoted_stage(est, self, names, sorted({r["score_dim"] for r in promoted}))

    def recompute(self, dim, members):
        """The held-out scores of ``members`` at ``dim`` when the store released them (a
        cheap system screened at another dimension): the same fold tasks again (seeded, so
        the same scores)."""
        stage = Stage("held-out scores of the chosen candidate", [dim], tuple(members),
                      keep=frozenset(members))
        for k in range(self.est.num_folds):
            _, columns, _ = fold_task(self.est, self, stage, dim, k)
            self.store.add(dim, k, {}, columns)


def _row(name, lda_dim, score_dim, budget, per_fold):
    """A row of cv_results_: the candidate, where it was rated (``score_dim``: the LDA
    dimension of the scores; ``lda_dim`` 0 for a dimension-free one), the budget, the
    figures of each fold and their means."""
    row = {"candidate": name, "lda_dim": lda_dim, "score_dim": score_dim, "budget": budget,
           "folds": per_fold}
    for fig in ("pauc", "pauc_001", "eer", "min_dcf"):
        row[fig] = float(np.mean([f[fig] for f in per_fold]))
    return row
