"""train-pauc-auto beyond one machine: the folds of the cross-fitting as separate jobs.

    train-pauc-auto --fold-stage=S --fold=J [--fold-jobs=NJ] ... <fold-dir>   (S = 1, 2, 3;
                                                                              J = 1..NJ)
    train-pauc-auto --combine=<fold-dir> ... <model-dir>

Job J of NJ does folds J, J+NJ, ... (1-based; NJ defaults to the number of folds, one fold
per job). The stages are models.auto.policy's: 1 screens the LDA dimensions (the cheap systems
at each, every fold), 2 screens the candidates at the promoted dimension (every system, on
the screening folds), 3 cross-fits the promoted candidates on the other folds; a stage reads
the previous one of every fold it ran on (it is defined by its ratings) and may have nothing
to do on a fold (its output says so). --combine reads them all, chooses the candidate, learns its fusion and
retrains it on all speakers: the same computation as one process (AutoBackend.fit is these
steps), so the same system and the same model files, byte for byte.

One directory per stage and fold, written under a temporary name and renamed when complete
(a killed job leaves no half output; a rerun replaces it):

    <fold-dir>/stage<S>.fold<K>/info.json     the digest of the options and of the data, the
                                              work of the stage (LDA dims, systems, budget),
                                              per dim the held-out figures of each system,
                                              the systems whose scores are kept (rows of
                                              scores.<dim>), the sha256 of scores.<dim>, the
                                              errors of what could not be trained, and the
                                              sha256 of all of it ("content_sha256")
    <fold-dir>/stage<S>.fold<K>/scores.<dim>  float matrix (FM, binary): kept systems x
                                              held-out trials of fold K (float32 exactly)
    <fold-dir>/stage<S>.fold<K>/pseudo.<dim>  float matrix (DM, binary): every system x the
                                              pseudo-speaker trials of the adaptation set
                                              (train-pauc-auto --adapt; the in-domain trial
                                              set every fold's models score, float64 exactly),
                                              its systems and sha256 in info.json ("sets")

Every reader recomputes the digest of the options and data and refuses an output made with
other options or data (rerun the fold jobs), names any missing fold, and checks every file
it reads (its structure, the figures, the shape and values of the scores, both sha256): a
file changed after the job wrote it, or not written by a fold job at all, is one ERROR naming
it. The sha256 detect a change or a corruption; they are not a signature: whoever can rewrite
a fold directory can also recompute them, as they can replace the model directory itself.
"""

import hashlib
import io
import json
import math
import os
import shutil

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import write_matrix
from pauc_backend.kaldi_io.codec import read_matrix_obj
from pauc_backend.kaldi_io.commit import (claimed, committed_at_once, make_temp_dir,
                                          remove_stale_temp_dirs, replace_directory)
from pauc_backend.kaldi_io.regular_files import check_directory, read_regular
from pauc_backend.models import blocked
from pauc_backend.models.auto import params as auto_params
from pauc_backend.models.auto.evidence import PREFIX
from pauc_backend.models.auto.table import TrainingTable

FORMAT = 3
_MAX_INFO_BYTES = 1 << 24          # an info.json is a few kB; refuse anything absurd
_SCORES_HEADER = 15                # "\0B" "FM " and two int32 sizes: scores.<dim> is this
                                   # plus 4 bytes a score, exactly (regular_files reads it)
_FIGURES = ("pauc", "pauc_001", "eer", "min_dcf")


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
    return {name: _plain(getattr(model, name)) for name in sorted(auto_params.digest_names())}


def data_digest(X, y, groups=None):
    """sha256 of the training vectors (float32 bytes), their speaker labels and groups; X
    may be a TrainingTable (models.auto.table: y and groups are its own), held or spooled."""
    if isinstance(X, TrainingTable):
        X, y, groups = X.X, X.y, X.groups
    h = hashlib.sha256()
    X = X if blocked.is_table(X) else np.asarray(X)
    h.update(repr(X.shape).encode())
    for start in range(0, X.shape[0], 8192):            # no float32 copy of the table
        h.update(np.ascontiguousarray(X[start:start + 8192], dtype=np.float32).tobytes())
    h.update(np.ascontiguousarray(np.asarray(y).astype(np.int64)).tobytes())
    if groups is not None:
        h.update("\n".join(map(str, groups)).encode())
    return h.hexdigest()


def run_digest(model, X, y, groups=None, X_adapt=None):
    """{"options": ..., "options_digest": sha256 of them, "data_digest": ...}; with an
    adaptation set (its statistics move the held-out folds, models.auto.adapt) its digest
    is among the options."""
    model.check_params()
    options = model_options(model)
    if X_adapt is not None:
        options["adapt_digest"] = data_digest(X_adapt, np.zeros(len(X_adapt), np.int64))
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


def _work(stage):
    return {"name": stage.name, "dims": [int(d) for d in stage.dims],
            "systems": list(stage.systems), "folds": [k + 1 for k in stage.folds],
            "keep": sorted(stage.keep),
            "lambdas": None if stage.lambdas is None else [float(v) for v in stage.lambdas]}


def _content_sha256(info):
    body = {k: v for k, v in info.items() if k != "content_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def write_fold_outputs(fold_dir, stage, folds, results, work, digest, binary=True):
    """One directory per fold in ``folds`` (0-based) with its ``results``
    (AutoBackend.cross_fit_stage), each committed by a rename; ``work`` is the Stage (with
    nothing to do: an output without scores, which says so)."""
    os.makedirs(fold_dir, exist_ok=True)       # mode 0777 less the umask, as Kaldi's mkdir -p
    finals = [os.path.join(fold_dir, output_name(stage, k)) for k in folds]
    with committed_at_once(), claimed(finals):   # files complete before the rename; one writer
        _write_fold_outputs(fold_dir, stage, folds, results, work, digest, binary)


def _write_fold_outputs(fold_dir, stage, folds, results, work, digest, binary=True):
    """The body of ``write_fold_outputs``, its files committed as each closes."""
    results = list(results)
    for k in folds:
        final = os.path.join(fold_dir, output_name(stage, k))
        tmp = make_temp_dir(final)
        try:
            tasks = []
            for (dim, fold), figures, columns, errors, *more in results:
                if fold != k:
                    continue
                names = sorted(columns)
                task = {"dim": int(dim), "figures": _plain(figures), "columns": names,
                        "errors": [list(e) for e in errors], "scores_sha256": None,
                        "sets": {}}
                if names:           # always binary: the scores must come back as the same
                    path = os.path.join(tmp, "scores.%d" % dim)       # floats
                    task["scores_sha256"] = _write_scores(
                        path, np.stack([columns[n] for n in names]).astype(np.float32))
                for source, got in sorted((more[0] if more else {}).items()):
                    systems = sorted(got)
                    entry = {"columns": systems, "sha256": None}
                    if systems:
                        entry["sha256"] = _write_scores(
                            os.path.join(tmp, "%s.%d" % (PREFIX[source], dim)),
                            np.stack([got[n] for n in systems]).astype(np.float64))
                    task["sets"][source] = entry
                tasks.append(task)
            info = dict(digest, format=FORMAT, stage=stage, fold=k + 1, work=_work(work),
                        tasks=tasks)
            info["content_sha256"] = _content_sha256(info)
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
        remove_stale_temp_dirs(final)  # what killed jobs left for it: superseded now


def _write_scores(path, matrix):
    """Write ``matrix`` (binary Kaldi, float32 or float64 kept exactly); its sha256."""
    write_matrix(path, matrix, binary=True)
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# -- reading ---------------------------------------------------------------------------------
class _Bad(Exception):
    """A problem with one file of a fold output (turned into one KaldiError naming it)."""


def _load_info(where):
    path = os.path.join(where, "info.json")
    try:
        raw = read_regular(path, _MAX_INFO_BYTES, "a fold output of train-pauc-auto")
    except FileNotFoundError:
        raise KaldiError("Cannot read %s: it was removed while the fold outputs were read"
                         % path) from None
    try:
        info = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise KaldiError("%s is not valid JSON (%s): not a fold output of train-pauc-auto, "
                         "or damaged; rerun the fold job" % (path, str(err)[:200])) from None
    if not isinstance(info, dict):
        raise KaldiError("%s holds a JSON %s, not an object: not a fold output of "
                         "train-pauc-auto" % (path, type(info).__name__))
    return info, path


def _need(cond, message):
    if not cond:
        raise _Bad(message)


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value)


def _check_task(task, work, allowed):
    """The structure and values of one task of info.json (a _Bad naming the problem)."""
    _need(isinstance(task, dict), "a task is not an object")
    _need(task.get("dim") in work["dims"], "a task has LDA dimension %r, not one of this "
          "stage's %s" % (task.get("dim"), work["dims"]))
    figures = task.get("figures")
    _need(isinstance(figures, dict), "the task at LDA %s has no figures object"
          % task["dim"])
    for name, fig in figures.items():
        _need(name.split("@")[0] in allowed, "LDA %s: figures of %r, not a system of this "
              "stage" % (task["dim"], name))
        _need(isinstance(fig, dict) and set(fig) == set(_FIGURES)
              and all(_number(fig[f]) for f in _FIGURES),
              "LDA %s: the figures of %s are not the four finite numbers %s"
              % (task["dim"], name, ", ".join(_FIGURES)))
        _need(all(0.0 <= fig[f] <= 1.0 for f in ("pauc", "pauc_001", "eer"))
              and fig["min_dcf"] >= 0.0, "LDA %s: the figures of %s are out of range"
              % (task["dim"], name))
    columns = task.get("columns")
    _need(isinstance(columns, list) and all(isinstance(c, str) and c in figures
                                            for c in columns)
          and len(set(columns)) == len(columns),
          "LDA %s: the kept score columns %r are not systems with figures"
          % (task["dim"], columns))
    errors = task.get("errors")
    _need(isinstance(errors, list) and all(isinstance(e, list) and len(e) == 2 and all(
        isinstance(x, str) for x in e) for e in errors),
        "LDA %s: the errors are not a list of [systems, message]" % task["dim"])
    _need(task.get("scores_sha256") is None if not columns else
          isinstance(task.get("scores_sha256"), str),
          "LDA %s: the sha256 of the scores is missing" % task["dim"])
    sets = task.get("sets")
    _need(isinstance(sets, dict) and all(
        name in PREFIX and isinstance(e, dict) and isinstance(e.get("columns"), list)
        and all(isinstance(c, str) and c.split("@")[0] in allowed for c in e["columns"])
        and (e.get("sha256") is None if not e["columns"] else isinstance(e.get("sha256"), str))
        for name, e in sets.items()),
        "LDA %s: the in-domain trial sets' scores are not described as this stage's systems "
        "with a sha256" % task["dim"])


def _read_scores(where, task, num_trials):
    """The kept columns of one task: {system: float32 scores}, checked against the sha256
    recorded in info.json, the number of systems and trials, and finiteness."""
    return _read_matrix(os.path.join(where, "scores.%d" % task["dim"]), task["columns"],
                        task["scores_sha256"], num_trials, np.float32, "held-out trials")


def _read_sets(where, task, sets):
    """{source: {system: float64 scores}} of the in-domain trial sets of one task (``sets``:
    {source: number of trials}, the sets this run scores), checked as ``_read_scores``."""
    theirs = task["sets"]
    _need(set(theirs) == set(sets), "LDA %s: scores of the in-domain trial sets %s, this run "
          "has %s" % (task["dim"], sorted(theirs), sorted(sets)))
    return {source: {} if not e["columns"] else _read_matrix(
        os.path.join(where, "%s.%d" % (PREFIX[source], task["dim"])), e["columns"],
        e["sha256"], sets[source], np.float64, "trials of the %s" % source)
        for source, e in theirs.items()}


def _read_matrix(path, columns, sha256, num_trials, dtype, what):
    """One binary Kaldi matrix of ``columns`` x ``num_trials`` values of ``dtype``, checked
    against its sha256, its shape and finiteness: {system: scores}."""
    width = np.dtype(dtype).itemsize
    size = _SCORES_HEADER + width * len(columns) * num_trials   # FM/DM, binary, exactly
    try:
        data = read_regular(path, size, "the scores of %d systems x %d %s" % (
            len(columns), num_trials, what))
    except FileNotFoundError:
        raise _Bad("%s is missing" % os.path.basename(path)) from None
    _need(hashlib.sha256(data).hexdigest() == sha256,
          "%s does not match the sha256 recorded in info.json: changed after the fold job "
          "wrote it" % os.path.basename(path))
    _need(data[:2] == b"\0B", "%s is not a binary Kaldi matrix" % os.path.basename(path))
    try:
        M = read_matrix_obj(io.BytesIO(data[2:]), True)
    except Exception as err:            # noqa: BLE001 - any failure is a bad file here
        raise _Bad("%s is not a readable matrix (%s)" % (os.path.basename(path), err))
    M = np.asarray(M)
    _need(M.dtype == dtype and M.shape == (len(columns), num_trials),
          "%s has shape %s, expected %d systems x %d %s (%s)"
          % (os.path.basename(path), M.shape, len(columns), num_trials, what,
             "float" if dtype == np.float32 else "double"))
    _need(bool(np.all(np.isfinite(M))), "%s holds NaN or infinite scores"
          % os.path.basename(path))
    return {name: M[i].copy() for i, name in enumerate(columns)}


def read_fold_outputs(fold_dir, stage, num_folds, work, digest, trials=None, sets=None):
    """The results of ``stage`` of every fold, as cross_fit_stage returns them (dims outer,
    folds inner); ``trials``: each fold's HeldOutTrials (None: the scores are not read, only
    the figures); ``sets``: {source: number of trials} of the in-domain trial sets, whose
    scores are always read. KaldiError for a missing fold, one from another configuration,
    stage or fold, or any damaged or changed file, naming it."""
    check_directory(fold_dir, "Fold directory")
    missing = [k + 1 for k in work.folds   # anything there is read (or named) below
               if not os.path.lexists(os.path.join(fold_dir, output_name(stage, k),
                                                   "info.json"))]
    if missing:
        raise KaldiError(
            "Missing output of stage %d of fold%s %s in %s (expected %s/info.json): run "
            "train-pauc-auto --fold-stage=%d for every fold job first" % (
                stage, "s" if len(missing) > 1 else "", ",".join(map(str, missing)),
                fold_dir, os.path.join(fold_dir, output_name(stage, missing[0] - 1)), stage))
    expected = _work(work)
    allowed = set(work.systems)
    by_task = {}
    for k in work.folds:
        where = os.path.join(fold_dir, output_name(stage, k))
        info, path = _load_info(where)
        check_digest(info, digest, where)
        if info.get("format") != FORMAT:
            raise KaldiError("%s is of format %r, this train-pauc-auto writes and reads %d: "
                             "rerun the fold jobs" % (path, info.get("format"), FORMAT))
        if info.get("content_sha256") != _content_sha256(info):
            raise KaldiError("%s does not match its own sha256 (content_sha256): changed "
                             "after the fold job wrote it; rerun the fold job" % path)
        if (info.get("stage"), info.get("fold")) != (stage, k + 1):
            raise KaldiError(
                "%s holds stage %s of fold %s, not stage %d of fold %d (directories renamed "
                "or swapped?): rerun the fold jobs" % (where, info.get("stage"),
                                                       info.get("fold"), stage, k + 1))
        theirs = info.get("work")
        if theirs != expected:
            differ = [key for key in sorted(expected) if not isinstance(theirs, dict)
                      or theirs.get(key) != expected[key]]
            raise KaldiError(
                "%s cross-fitted other work than this run needs (%s): %s (the outputs of "
                "the previous stage changed after this one ran?): rerun the fold jobs" % (
                    where, ", ".join(differ), "; ".join(
                        "%s %s there, %s here" % (key, json.dumps(
                            theirs.get(key) if isinstance(theirs, dict) else None),
                            json.dumps(expected[key])) for key in differ)))
        tasks = info.get("tasks")
        try:
            _need(isinstance(tasks, list), "no list of tasks")
            for task in tasks:
                _check_task(task, expected, allowed)
                columns = {}
                if task["columns"] and trials is not None:
                    columns = _read_scores(where, task, trials[k].is_target.size)
                set_scores = _read_sets(where, task, sets or {})
                _need((task["dim"], k) not in by_task, "LDA %s appears twice" % task["dim"])
                by_task[task["dim"], k] = ((task["dim"], k), task["figures"], columns,
                                           [tuple(e) for e in task["errors"]], set_scores)
        except _Bad as err:
            raise KaldiError("%s: %s; rerun the fold job" % (path, err)) from None
    order = [(int(d), k) for d in work.dims for k in work.folds] if work.systems else []
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
        theirs = info.get("options") if isinstance(info.get("options"), dict) else {}
        diff = ["%s=%s (this run: %s)" % (name, json.dumps(theirs.get(name)),
                                          json.dumps(value))
                for name, value in sorted(digest["options"].items())
                if theirs.get(name) != value]
        raise KaldiError("%s was made with different options: %s; rerun the fold jobs with "
                         "the options of this run" % (where, "; ".join(diff) or "?"))


def _previous(model, plan, fold_dir, stage, digest):
    """Add the outputs of every fold of the stages before ``stage`` (figures only for all
    but the rating of fusions: their scores are read where a stage keeps them)."""
    for before in range(1, stage):
        work = model.stage_work(plan, before)
        results = []
        if work.systems and work.dims:        # a stage with nothing to do needs no output
            results = read_fold_outputs(fold_dir, before, model.num_folds, work, digest,
                                        plan.trials, {name: t.trials.num_trials for name, t
                                                      in plan.inputs.trial_sets.items()})
        model.add_fold_results(plan, before, results)


def run_fold_job(model, X, y, groups, stage, folds, fold_dir, log=None, X_adapt=None,
                 adapt_check=None):
    """Stage ``stage`` of the cross-fitting on ``folds`` (0-based), written to fold_dir."""
    digest = run_digest(model, X, y, groups, X_adapt)
    try:
        plan = model.prepare(X, y, groups, X_adapt, adapt_check=adapt_check)
        _previous(model, plan, fold_dir, stage, digest)
        work = model.stage_work(plan, stage)
        results = list(model.cross_fit_stage(plan, stage, folds))
    except ValueError as err:
        raise KaldiError("Cannot cross-fit: %s" % err) from None
    finally:
        model._close()
    write_fold_outputs(fold_dir, stage, folds, results, work, digest)
    if log is not None:
        log("Wrote stage %d of fold%s %s of %d to %s (%s: %s at LDA %s)" % (
            stage, "s" if len(folds) > 1 else "", ",".join(str(k + 1) for k in folds),
            model.num_folds, fold_dir, work.name, ", ".join(work.systems)
            or "nothing to cross-fit", ",".join(map(str, work.dims)) or "-"))


def combine(model, X, y, groups, fold_dir, X_adapt=None, durations=None,
            adapt_durations=None, adapt_check=None):
    """AutoBackend.fit from the fold outputs in fold_dir: the same fitted model
    (``durations``, ``adapt_durations``: of the training and adaptation vectors, for the
    final calibration only)."""
    digest = run_digest(model, X, y, groups, X_adapt)
    try:
        plan = model.prepare(X, y, groups, X_adapt, durations=durations,
                             adapt_durations=adapt_durations, adapt_check=adapt_check)
        _previous(model, plan, fold_dir, 4, digest)
        return model.finish(plan)
    except ValueError as err:
        raise KaldiError("Cannot choose a back-end: %s" % err) from None
    finally:
        model._close()
