"""train-pauc-auto beyond one machine: the folds of the cross-fitting as separate jobs.

    train-pauc-auto --fold-stage=1 --fold=J [--fold-jobs=NJ] ... <fold-dir>   (J = 1..NJ)
    train-pauc-auto --fold-stage=2 --fold=J [--fold-jobs=NJ] ... <fold-dir>
    train-pauc-auto --combine=<fold-dir> ... <model-dir>

Job J of NJ does folds J, J+NJ, ... (1-based; NJ defaults to the number of folds, one fold
per job). Stage 1 cross-fits what does not depend on the other folds (with the cheap LDA
screening: PLDA and cosine at every LDA dimension; otherwise everything); stage 2 reads stage
1 of EVERY fold, picks the dimension as the single process does and cross-fits the other
systems there; --combine reads both, chooses the candidate, learns its fusion and retrains it
on all speakers: the same computation as one process (AutoBackend.fit is these steps), so
the same system and the same model files, byte for byte.

One directory per stage and fold, written under a temporary name and renamed when complete
(a killed job leaves no half output; a rerun replaces it):

    <fold-dir>/stage<S>.fold<K>/info.json     the digest of the options and of the data, the
                                              LDA dims and systems of the stage, per dim the
                                              systems scored (rows of scores.<dim>) and the
                                              errors of those that could not be trained
    <fold-dir>/stage<S>.fold<K>/scores.<dim>  double matrix (DM, binary: float64 exactly),
                                              systems x held-out trials of fold K

Every reader recomputes the digest and refuses an output made with other options or data
(rerun the fold jobs), and names any missing fold.
"""

import hashlib
import json
import os
import shutil

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io.commit import (claimed, committed_at_once, make_temp_dir,
                                          replace_directory)
from pauc_backend.kaldi_io import read_matrix, write_matrix

# AutoBackend parameters that do not change the result (how it runs, not what it computes).
_RUNTIME = ("n_jobs", "log", "progress", "progress_interval")


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def model_options(model):
    """The AutoBackend parameters that decide the result, as plain JSON values."""
    return {name: _plain(value) for name, value in sorted(vars(model).items())
            if not name.startswith("_") and not name.endswith("_") and name not in _RUNTIME}


def data_digest(X, y, groups=None):
    """sha256 of the training vectors (float32 bytes), their speaker labels and groups."""
    h = hashlib.sha256()
    X = np.ascontiguousarray(X, dtype=np.float32)
    h.update(repr(X.shape).encode())
    h.update(X.tobytes())
    h.update(np.ascontiguousarray(np.asarray(y).astype(np.int64)).tobytes())
    if groups is not None:
        h.update("\n".join(map(str, groups)).encode())
    return h.hexdigest()


def run_digest(model, X, y, groups=None):
    """{"options": ..., "options_digest": sha256 of them, "data_digest": ...}."""
    options = model_options(model)
    text = json.dumps(options, sort_keys=True)
    return {"options": options, "options_digest": hashlib.sha256(text.encode()).hexdigest(),
            "data_digest": data_digest(X, y, groups)}


def job_folds(job, num_jobs, num_folds):
    """0-based folds of fold job ``job`` (1-based) of ``num_jobs`` (0: one fold per job)."""
    num_jobs = num_jobs or num_folds
    if not 1 <= job <= num_jobs:
        raise KaldiError("--fold=%d is not a job number between 1 and %d" % (job, num_jobs))
    return list(range(job - 1, num_folds, num_jobs))


def output_name(stage, fold):
    return "stage%d.fold%d" % (stage, fold + 1)


def write_fold_outputs(fold_dir, stage, folds, results, work, digest, binary=True):
    """One directory per fold in ``folds`` (0-based) with its ``results``
    (AutoBackend.cross_fit_stage), each committed by a rename; ``work`` = (dims, systems)
    of the stage (nothing to do: an output without scores, which says so)."""
    os.makedirs(fold_dir, exist_ok=True)       # mode 0777 less the umask, as Kaldi's mkdir -p
    finals = [os.path.join(fold_dir, output_name(stage, k)) for k in folds]
    with committed_at_once(), claimed(finals):   # files complete before the rename; one writer
        _write_fold_outputs(fold_dir, stage, folds, results, work, digest, binary)


def _write_fold_outputs(fold_dir, stage, folds, results, work, digest, binary=True):
    """The body of ``write_fold_outputs``, its files committed as each closes."""
    if not os.path.isdir(fold_dir):
        os.makedirs(fold_dir, exist_ok=True)
    dims, systems = work
    for k in folds:
        final = os.path.join(fold_dir, output_name(stage, k))
        tmp = make_temp_dir(final)
        try:
            tasks = []
            for (dim, fold), scores, errors in results:
                if fold != k:
                    continue
                names = list(scores)
                if names:
                    write_matrix(os.path.join(tmp, "scores.%d" % dim),
                                 np.stack([np.asarray(scores[n], dtype=np.float64)
                                           for n in names]), binary=binary)
                tasks.append({"dim": int(dim), "systems": names,
                              "errors": [list(e) for e in errors]})
            info = dict(digest, stage=stage, fold=k + 1, dims=[int(d) for d in dims],
                        systems=list(systems), tasks=tasks)
            with open(os.path.join(tmp, "info.json"), "w") as f:
                json.dump(info, f, indent=1, sort_keys=True)
                f.write("\n")
            if os.path.isdir(final):
                replace_directory(tmp, final)
            else:
                os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def read_fold_outputs(fold_dir, stage, num_folds, work, digest):
    """The results of ``stage`` of every fold, as cross_fit_stage returns them (dims outer,
    folds inner); KaldiError for a missing fold or one from another configuration."""
    dims, systems = work
    missing = [k + 1 for k in range(num_folds)
               if not os.path.isfile(os.path.join(fold_dir, output_name(stage, k),
                                                  "info.json"))]
    if missing:
        raise KaldiError(
            "Missing output of stage %d of fold%s %s in %s (expected %s/info.json): run "
            "train-pauc-auto --fold-stage=%d for every fold job first" % (
                stage, "s" if len(missing) > 1 else "", ",".join(map(str, missing)),
                fold_dir, os.path.join(fold_dir, output_name(stage, missing[0] - 1)), stage))
    by_task = {}
    for k in range(num_folds):
        where = os.path.join(fold_dir, output_name(stage, k))
        try:
            with open(os.path.join(where, "info.json")) as f:
                info = json.load(f)
        except (OSError, ValueError) as err:
            raise KaldiError("Cannot read %s/info.json: %s" % (where, err)) from None
        check_digest(info, digest, where)
        if (info.get("stage"), info.get("fold")) != (stage, k + 1) or \
                info.get("dims") != [int(d) for d in dims] or \
                info.get("systems") != list(systems):
            raise KaldiError(
                "%s cross-fitted %s at LDA %s, but this run needs %s at LDA %s (the outputs "
                "of stage 1 changed after stage 2 ran?): rerun the fold jobs" % (
                    where, ",".join(info.get("systems") or []), info.get("dims"),
                    ",".join(systems), [int(d) for d in dims]))
        for task in info["tasks"]:
            scores = {}
            if task["systems"]:
                M = np.asarray(read_matrix(os.path.join(where, "scores.%d" % task["dim"])),
                               dtype=np.float64)
                if M.shape[0] != len(task["systems"]):
                    raise KaldiError("%s/scores.%d has %d rows for %d systems" % (
                        where, task["dim"], M.shape[0], len(task["systems"])))
                scores = {name: M[i].copy() for i, name in enumerate(task["systems"])}
            by_task[task["dim"], k] = ((task["dim"], k), scores,
                                       [tuple(e) for e in task["errors"]])
    order = [(int(d), k) for d in dims for k in range(num_folds)]
    absent = [t for t in order if t not in by_task]
    if absent:
        raise KaldiError("%s has no scores at LDA %d" % (
            os.path.join(fold_dir, output_name(stage, absent[0][1])), absent[0][0]))
    return [by_task[t] for t in order]


def check_digest(info, digest, where):
    """KaldiError naming what differs when ``info`` was made with other data or options."""
    if info.get("data_digest") != digest["data_digest"]:
        raise KaldiError("%s was made from different training data (vectors, speakers or "
                         "groups; digest %s, this run %s): rerun the fold jobs on these data"
                         % (where, str(info.get("data_digest"))[:12],
                            digest["data_digest"][:12]))
    if info.get("options_digest") != digest["options_digest"]:
        theirs = info.get("options") or {}
        diff = ["%s=%s (this run: %s)" % (name, json.dumps(theirs.get(name)),
                                          json.dumps(value))
                for name, value in sorted(digest["options"].items())
                if theirs.get(name) != value]
        raise KaldiError("%s was made with different options: %s; rerun the fold jobs with "
                         "the options of this run" % (where, "; ".join(diff) or "?"))


def run_fold_job(model, X, y, groups, stage, folds, fold_dir, log=None):
    """Stage ``stage`` of the cross-fitting on ``folds`` (0-based), written to fold_dir."""
    digest = run_digest(model, X, y, groups)
    try:
        plan = model.prepare(X, y, groups)
        if stage == 2 and plan.cheap is not None:     # stage 2 depends on stage 1
            model.add_fold_results(plan, 1, read_fold_outputs(
                fold_dir, 1, model.num_folds, model.stage_work(plan, 1), digest))
        work = model.stage_work(plan, stage)
        results = model.cross_fit_stage(plan, stage, folds)
    except ValueError as err:
        raise KaldiError("Cannot cross-fit: %s" % err) from None
    write_fold_outputs(fold_dir, stage, folds, results, work, digest)
    if log is not None:
        log("Wrote stage %d of fold%s %s of %d to %s (%s at LDA %s)" % (
            stage, "s" if len(folds) > 1 else "", ",".join(str(k + 1) for k in folds),
            model.num_folds, fold_dir, ", ".join(work[1]) or "nothing to cross-fit",
            ",".join(map(str, work[0])) or "-"))


def combine(model, X, y, groups, fold_dir):
    """AutoBackend.fit from the fold outputs in fold_dir: the same fitted model."""
    digest = run_digest(model, X, y, groups)
    try:
        plan = model.prepare(X, y, groups)
        for stage in (1, 2):
            work = model.stage_work(plan, stage)
            if work[1]:
                results = read_fold_outputs(fold_dir, stage, model.num_folds, work, digest)
            else:
                results = []
            model.add_fold_results(plan, stage, results)
        return model.finish(plan)
    except ValueError as err:
        raise KaldiError("Cannot choose a back-end: %s" % err) from None
