"""The folds of pAUCMetric (auto)'s cross-fitting (models.auto_backend): running (dim, fold)
tasks in forked worker processes, and choosing the discriminative PLDA's lambda from the
held-out scores of every fold."""

import multiprocessing

import numpy as np

from pauc_backend.models.auto_candidates import dim_label
from pauc_backend.models.crossfit import trial_figures

__all__ = ["run_fold_tasks", "choose_dplda_lambda"]

_SHARED = None


def run_fold_tasks(model, plan, systems, tasks, n_jobs):
    """``model.fold_scores`` of each (dim, fold) task, in ``n_jobs`` forked processes (the
    data reach them by fork, not by pickling); each worker reports its own progress."""
    from pauc_backend.workers import fork_pool
    global _SHARED
    done = multiprocessing.get_context("fork").Value("i", 0)
    _SHARED = (model, plan, systems, tasks, done)
    try:
        with fork_pool(n_jobs) as pool:
            return pool.map(_fold_task, range(len(tasks)))
    finally:
        _SHARED = None


def _fold_task(index):
    """Task ``index`` (dim, fold) in a forked worker."""
    model, plan, systems, tasks, done = _SHARED
    dim, k = tasks[index]
    progress = model.task_progress(dim, k, index, len(tasks), done)
    try:
        return model.fold_scores(plan, systems, dim, k, progress)
    finally:
        with done.get_lock():
            done.value += 1
        if progress is not None:
            progress(step=None)           # idle until the next task


def choose_dplda_lambda(fold_scores, trials, alpha, beta, log):
    """Pick the discriminative PLDA's lambda by mean held-out pAUC of dplda alone at the
    dimension where it was cross-fitted; alias its columns in ``fold_scores`` ({(fold, dim):
    {system: scores}}) as "dplda" (and ":as"). Returns the lambda, None without dplda."""
    best = None
    keys = sorted({key for key, cols in fold_scores.items()
                   if any(name.startswith("dplda@") for name in cols)})
    for dim in sorted({d for _, d in keys}):
        cols = fold_scores[0, dim]
        lambdas = sorted({float(n.split("@")[1]) for n in cols if n.startswith("dplda@")},
                         reverse=True)
        rated = []
        for lam in lambdas:
            per_fold = [trial_figures(fold_scores[k, dim]["dplda@%r" % lam],
                                      t.is_target, alpha, beta)
                        for k, t in enumerate(trials)]
            rated.append((float(np.mean([f["pauc"] for f in per_fold])), lam))
            log("Held-out dplda lambda %-8g LDA %s: pAUC[%g,%g] %.4f  EER %.2f%%  "
                "minDCF(0.01) %.4f" % (lam, dim_label(dim), alpha, beta, rated[-1][0],
                                       100 * np.mean([f["eer"] for f in per_fold]),
                                       np.mean([f["min_dcf"] for f in per_fold])))
        top = max(value for value, _ in rated)
        best = next(lam for value, lam in rated if value == top)   # ties: larger lambda
        log("Discriminative PLDA: lambda %g has the best held-out pAUC" % best)
        for k in range(len(trials)):
            cols = fold_scores[k, dim]
            for name in list(cols):
                if "@" in name and float(name.split("@")[1]) == best:
                    cols[name.split("@")[0]] = cols[name]
            for name in [n for n in cols if "@" in n]:
                del cols[name]
    return best
