"""The fold tasks of pAUCMetric (auto)'s cross-fitting (models.auto.crossfit): one LDA
dimension and one fold each, run in this process or in forked workers, and the choice of the
discriminative PLDA's lambda from their figures.

A task trains the systems of its stage on the training rows of the fold (no copy of the table:
the pipeline reads the rows it is given) and scores the fold's held-out trials; it returns the
held-out FIGURES of every system and the SCORES (float32) of the systems still needed for
fusions (models.auto.store). The same models score every in-domain trial set too (the
development trials, the pseudo-speaker trials: models.auto.trialsets averages them over the
folds), their vectors as they are (raw, in the user's domain). With an adaptation set the
fold's models are centred on, and adapted to, the same sample of it as the final model, and
the held-out training vectors are translated to it (models.auto.adapt says why a
translation and nothing more)."""

import copy
import multiprocessing

import numpy as np

from pauc_backend.models.backend_pipeline import float32_mean
from pauc_backend.models.systems import base_system, dim_free, system
from pauc_backend.process import release_free_memory
from pauc_backend.models.crossfit import trial_figures

__all__ = ["fold_task", "run_fold_tasks", "choose_dplda_lambda", "task_systems"]

_SHARED = None


def task_systems(stage, dim):
    """The systems a task of ``stage`` at ``dim`` cross-fits: dimension-free systems only at
    the stage's first dimension (their scores do not depend on it)."""
    first = stage.dims[0] if stage.dims else None
    return tuple(s for s in stage.systems if not dim_free((s,)) or dim == first)


def fold_task(cross, stage, dim, k, progress=None):
    """Train on every fold but k of the cross-fitting ``cross`` (models.auto.crossfit: its
    data, trials and folds, its ``settings`` and its ``make_pipeline``), score fold k's
    held-out trials: ({system: figures}, {system: float32 scores} of the kept ones,
    [(systems, error)] of what could not be trained, {system: development scores} (empty
    without development trials)). Systems needing the PLDA are dropped together when it
    cannot be estimated (e.g. more dimensions than vectors); the discriminative PLDA gives
    one column per lambda, "dplda@<lambda>". The fourth item is {trial set: {system:
    scores}} of the in-domain trial sets (models.auto.trialsets)."""
    release_free_memory()      # in a worker: what its parent freed is not held here too
    systems = task_systems(stage, dim)
    settings, plan = cross.settings, cross
    X, y, t = plan.X, plan.y, plan.trials[k]
    train_rows = plan.train_rows(k)
    errors = []
    pipe = None
    # what remains without the PLDA, then without the LDA (raw cosine needs neither)
    attempts = [systems]
    for keep in (lambda s: not system(base_system(s)).needs_plda, lambda s: dim_free((s,))):
        fewer = tuple(s for s in attempts[-1] if keep(s))
        if fewer and fewer != attempts[-1]:
            attempts.append(fewer)
    for attempt in attempts:
        pipe = cross.make_pipeline(dim, attempt, settings.random_state + k)
        if stage.lambdas is not None:            # the lambda chosen on the other folds
            pipe.dplda_lambdas = tuple(stage.lambdas)
        pipe.progress = progress
        try:
            lda = (cross.fold_lda(k, dim) if int(dim) > 0 and not dim_free(attempt)
                   else None)             # every dimension of fold k from one estimation
            adapt = plan.adapt
            # with n_jobs > 1 the fold's metrics train at once, in threads (a pool's worker
            # cannot fork): a task alone at the end of a stage uses two cores
            pipe.fit(X, y[train_rows], rows=train_rows, lda=lda,
                     adapt=None if adapt is None else adapt.vectors,
                     adapt_rows=None if adapt is None else adapt.rows,
                     n_jobs=settings.n_jobs, threads=True)
            break
        except (ValueError, np.linalg.LinAlgError) as err:
            lost = [s for s in attempt if system(base_system(s)).needs_plda]
            if not lost or err.__class__ is not ValueError or "PLDA" not in str(err):
                lost = [s for s in attempt if not dim_free((s,))] or attempt
            errors.append((", ".join(lost), str(err)))
            pipe = None
    if pipe is None:
        return {}, {}, errors, {name: {} for name in plan.trial_sets}
    pipe.progress = None
    if progress is not None:
        progress(step="scoring %d held-out trials" % t.is_target.size, fraction=1.0)
    sets = plan.trial_sets
    figures, kept, set_scores = {}, {}, {name: {} for name in sets}

    def rate(names, cols, set_cols):
        for j, name in enumerate(names):
            figures[name] = trial_figures(cols[:, j], t.is_target, settings.alpha, settings.beta)
            if name.split("@")[0] in stage.keep:
                kept[name] = np.ascontiguousarray(cols[:, j], dtype=np.float32)
            for which, other in set_cols.items():
                set_scores[which][name] = other[:, j]

    plain = tuple(s for s in pipe.systems if base_system(s) != "dplda")
    dplda = tuple(s for s in attempt if base_system(s) == "dplda") if pipe.dplda_ else ()
    sides = _sides(pipe, X, t, plan, k, plain + dplda)
    # the in-domain trial sets as they are (raw, in the user's domain), their LDA vectors made
    # once too, each part by the models adapted without its vectors (SetScorer)
    scorers = {name: SetScorer(pipe, trial_set, plain + dplda, plan.adapt)
               for name, trial_set in sets.items()}
    # the systems of one space at a time (their features, then their scores, rated and
    # released before the next space's: a fold of VoxCeleb's subset has 20,000 held-out
    # vectors, 80 MB a space at 512 dims, and 1.5 M trials, 12 MB a column)
    spaces = list(dict.fromkeys(system(base_system(s)).space for s in plain))
    for space in sorted(spaces, key=lambda name: name != "raw"):
        group = tuple(s for s in plain if system(base_system(s)).space == space)
        pipe.systems = group
        pipe.__dict__.pop("_cohort_feats", None)      # the cohort in this group's spaces
        rate(group, _score(pipe, t, sides),
             {name: scorer.score(group) for name, scorer in scorers.items()})
        if space == "raw":             # the raw vectors are read no more, their LDA vectors are
            sides = [None if side is None else (None, side[1]) for side in sides]
    if dplda:                          # the same pipeline, scoring with each lambda's model
        pipe.systems = dplda
        pipe.__dict__.pop("_cohort_feats", None)      # the cohort in the dplda's space
        for lam in sorted(pipe.dplda_):
            pipe.dplda_lambda = lam
            names = ["%s@%r" % (name, lam) for name in dplda]
            rate(names, _score(pipe, t, sides),
                 {name: scorer.score(dplda, lam) for name, scorer in scorers.items()})
    order = list(plain) + [name for name in figures if name not in plain]
    return ({name: figures[name] for name in order},
            {name: kept[name] for name in order if name in kept}, errors,
            {which: {name: got[name] for name in order if name in got}
             for which, got in set_scores.items()})


def _sides(pipe, X, t, plan, k, systems):
    """The held-out vectors of fold k as scored, (enrollment, test), each with its LDA
    vectors when a system needs them (made once for every space); the test side None when
    it is the enrollment side (single vectors against single vectors, the same rows)."""
    projected = not dim_free(systems)
    enroll = _side(pipe, plan.held_out(k, t.enroll_vectors(X)), projected)
    if t.num_utts == 1 and np.array_equal(np.concatenate(t.enroll_sets), t.test_rows):
        return [enroll, None]
    return [enroll, _side(pipe, plan.held_out(k, X[t.test_rows]), projected)]


class SetScorer:
    """The scores of an in-domain trial set (models.auto.inputs.TrialSet) by a fold's fitted
    ``pipe``: its vectors as they are, their LDA vectors made once. A set with parts (the
    pseudo-speaker trials) is scored part by part, each by a copy of the pipe centred on and
    adapted to the adaptation rows of the part (the adaptation sample without the part's own
    vectors: no vector of a trial takes part, even unlabelled, in the models that score
    it)."""

    def __init__(self, pipe, trial_set, systems, adapt):
        self.trials = trial_set.trials
        projected = not dim_free(systems)
        parts = trial_set.parts if adapt is not None else ()
        if not parts:
            parts = ((None, None),)
        self.parts = []
        for rows, adapt_rows in parts:
            p = pipe if adapt_rows is None else _readapted(pipe, adapt.vectors, adapt_rows)
            sides = [_side(p, self.trials.enroll_vectors(), projected),
                     _side(p, self.trials.test_vectors(), projected)]
            self.parts.append((rows, p, sides))

    def score(self, systems, dplda_lambda=None):
        """(trials, systems) scores of ``systems`` (the pipe's, one space)."""
        t = self.trials
        out = np.empty((t.num_trials, len(systems)))
        for rows, pipe, sides in self.parts:
            pipe.systems = tuple(systems)
            pipe.__dict__.pop("_cohort_feats", None)      # the cohort in this space
            if dplda_lambda is not None:
                pipe.dplda_lambda = dplda_lambda
            part = t if rows is None else _Trials(t.num_utts, t.enroll_index[rows],
                                                  t.test_index[rows])
            got = np.asarray(_score(pipe, part, sides), dtype=np.float64)
            out[slice(None) if rows is None else rows] = got.reshape(-1, len(systems))
        return out


class _Trials:
    """The trials ``_score`` reads: the models' vector counts, the trials' indices."""

    def __init__(self, num_utts, enroll_index, test_index):
        self.num_utts, self.enroll_index, self.test_index = num_utts, enroll_index, test_index


def _readapted(pipe, A, rows):
    """A copy of the fitted ``pipe`` centred on A[rows] and, if it has one, with its PLDA
    adapted to them (BackendPipeline.adapted_plda) instead of to its whole adaptation set."""
    other = copy.copy(pipe)
    other.mean_ = float32_mean(A, rows)
    if getattr(pipe, "plda_adapt_", None) is not None:
        other.plda_adapt_ = pipe.adapted_plda(A, rows, other.mean_)
    other.__dict__.pop("_cohort_feats", None)
    return other


def _side(pipe, vectors, projected):
    """(float32 vectors, as BackendPipeline.features reads them; their LDA vectors or None)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors, (pipe.lda_.transform(vectors - pipe.mean_) if projected else None)


def _score(pipe, t, sides):
    """(trials, systems) scores of the trials ``t`` (a fold's held-out trials, or an
    in-domain trial set: both give num_utts, enroll_index, test_index) from their sides."""
    (enroll, Z_enroll), test = sides
    fe = pipe.features(enroll, t.num_utts, Z_enroll)
    ft = fe if test is None else pipe.features(test[0], 1, test[1])
    return pipe.score(fe, ft, t.enroll_index, t.test_index, t.num_utts)


def run_fold_tasks(cross, stage, tasks, n_jobs):
    """``fold_task`` of each (dim, fold) task, in ``n_jobs`` forked processes (the data
    reach them by fork, not by pickling), results in task order as they come (an iterator),
    so the caller can rate and release a dimension while later ones run; each worker
    reports its own progress."""
    from pauc_backend.workers import fork_pool
    global _SHARED
    done = multiprocessing.get_context("fork").Value("i", 0)
    _SHARED = (cross, stage, tasks, done)
    try:
        with fork_pool(n_jobs) as pool:
            for result in pool.imap(_fold_task, range(len(tasks))):
                yield result
    finally:
        _SHARED = None


def _fold_task(index):
    """Task ``index`` (dim, fold) in a forked worker."""
    cross, stage, tasks, done = _SHARED
    dim, k = tasks[index]
    progress = cross.task_progress(dim, k, index, len(tasks), done)
    try:
        return fold_task(cross, stage, dim, k, progress)
    finally:
        with done.get_lock():
            done.value += 1
        if progress is not None:
            progress(step=None)           # idle until the next task


def choose_dplda_lambda(store, dim, log, alpha, beta, folds, choose=True):
    """Pick the discriminative PLDA's lambda by mean held-out pAUC of dplda alone at ``dim``
    on ``folds`` (``choose`` False: the one lambda there is, already chosen) and store its
    figures and columns as "dplda" (and "dplda:as"); drop the others. Returns the lambda,
    None without dplda."""
    names = sorted({name for (_, name) in store.figures if name.startswith("dplda@")})
    if not names:
        return None
    lambdas = sorted({float(n.split("@")[1]) for n in names}, reverse=True)
    rated = []
    for lam in lambdas:
        per_fold = store.fold_figures(dim, "dplda@%r" % lam, folds)
        rated.append((float(np.mean([f["pauc"] for f in per_fold])), lam))
        if choose:
            log("Held-out dplda lambda %-8g LDA %s: pAUC[%g,%g] %.4f  EER %.2f%%  "
                "minDCF(0.01) %.4f" % (lam, dim_label(dim), alpha, beta, rated[-1][0],
                                       100 * np.mean([f["eer"] for f in per_fold]),
                                       np.mean([f["min_dcf"] for f in per_fold])))
    top = max(value for value, _ in rated)
    best = next(lam for value, lam in rated if value == top)   # ties: the larger lambda
    if choose:
        log("Discriminative PLDA: lambda %g has the best held-out pAUC" % best)
    for name in names:
        if float(name.split("@")[1]) == best:
            store.alias(dim, name, name.split("@")[0])
    store.drop(dim, names)
    return best


def dim_label(dim):
    return "none" if not dim else "%d" % dim
