"""What the cross-fitting of pAUCMetric (auto) reads, and where it reports.

The cross-fitting (models.auto.policy, .crossfit, .folds) never sees the estimator. It takes

* ``Settings``: the estimator's parameters, normalised, frozen once per fit
  (``Settings.of(AutoBackend.get_params())`` after ``check_params``). Its fields are the
  parameters declared in models.auto.params (every one but the ``log`` and ``progress``
  callables) and ``metric_params`` (the pAUCMetric keywords with their declared defaults, as
  ``(name, value)`` pairs); no field is declared here, so a parameter is still declared once.
  Plain values: picklable, and inherited by forked workers;
* a ``Reporter``: the log line, the progress notes (a Heartbeat when the estimator has a
  ``progress`` callable), and the progress callables of the fold tasks and of the final
  training;
* a pipeline factory ``make_pipeline(lda_dim, systems, seed)`` (``Settings.pipeline``, or
  the estimator's ``_make_pipeline``, which tests override),

and returns what it decides (the promoted LDA dimension and candidates, the discriminative
PLDA's lambda, the rated rows, the lines for system.txt), which AutoBackend stores.
"""

import functools
import warnings
from dataclasses import dataclass, fields

from pauc_backend.heartbeat import Heartbeat
from pauc_backend.models.auto import params
from pauc_backend.models.auto.store import fit_fusion

__all__ = ["Settings", "Reporter"]


def _declared(cls):
    """``cls`` as a frozen dataclass whose fields are the parameters of models.auto.params
    (but the callables), in their order, then ``metric_params``."""
    cls.__annotations__ = {p.name: object for p in params.PARAMS if p.kind != "callable"}
    cls.__annotations__["metric_params"] = tuple
    return dataclass(frozen=True)(cls)


@_declared
class Settings:
    """The parameters of one fit of AutoBackend, normalised and frozen (see the module doc):
    ``settings.num_folds``, ``settings.alpha``, ... as declared in models.auto.params."""

    @classmethod
    def of(cls, values):
        """The settings of ``values`` ({parameter: value}, e.g. AutoBackend.get_params()):
        lists as tuples and ``zero`` limits as 0 (models.auto.params.normalised), the
        metric's keywords completed with their defaults. Not checked here
        (AutoBackend.check_params does)."""
        kwargs = {f.name: params.normalised(f.name, values[f.name]) for f in fields(cls)
                  if f.name != "metric_params"}
        kwargs["metric_params"] = tuple(
            params.metric_defaults(values.get("metric_params")).items())
        return cls(**kwargs)

    def metric_keywords(self):
        """The pAUCMetric keywords (a new dict)."""
        return dict(self.metric_params)

    @property
    def every_fold(self):
        return tuple(range(self.num_folds))

    def pipeline(self, lda_dim, systems, seed):
        """The BackendPipeline of a fold task or of the final model."""
        from pauc_backend.models.backend_pipeline import BackendPipeline
        return BackendPipeline(lda_dim=lda_dim, systems=systems,
                               metric_params=self.metric_keywords(), alpha=self.alpha,
                               beta=self.beta, asnorm_top_n=self.asnorm_top_n,
                               enroll_utts=int(self.enroll_utts),
                               dplda_lambdas=self.dplda_lambdas, random_state=seed,
                               max_metric_vectors=self.max_metric_vectors)

    def fusion(self, limit):
        """``fusion(scores, labels)``: the LinearFusion of held-out scores
        (models.auto.store.fit_fusion) on at most ``limit`` trials (0: all)."""
        return functools.partial(fit_fusion, prior=self.fusion_prior,
                                 regularization=self.fusion_regularization, limit=limit,
                                 seed=self.random_state + 7)

    @property
    def rating_fusion_limit(self):
        """Held-out trials a fusion that only rates a candidate is trained on (inf: all)."""
        return min(self.max_rating_fusion_trials or float("inf"),
                   self.max_fusion_trials or float("inf"))


def _silent(message):
    return None


def _warn(message):
    warnings.warn(message, stacklevel=3)


class Reporter:
    """Where the cross-fitting reports (see the module doc).

    ``log(line)``: one LOG line (the estimator's ``log`` itself, so the line names the
    module that logs it; silent without one). ``warn(line)``: one WARNING (the estimator's
    ``warn``; without one, Python's warnings.warn). With a ``progress`` callable, progress notes
    go through a Heartbeat (a line at least every ``interval`` seconds of work):
    ``note(**fields)``, ``begin()`` (a pass starts), ``idle()`` (the workers report),
    ``task_progress(where, index, total, done)`` (the progress callable of one fold task),
    ``pipeline_progress(where)`` (that of the final training); without one they do nothing
    and return None. ``close()`` stops the heartbeat's thread; ``log`` keeps working.
    """

    def __init__(self, log=None, progress=None, interval=30.0, warn=None):
        self.log = log if log is not None else _silent
        self.warn = warn if warn is not None else _warn
        self.heartbeat = Heartbeat(progress, interval) if progress is not None else None

    def note(self, **fields):
        if self.heartbeat is not None:
            self.heartbeat.note(**fields)

    def begin(self):
        if self.heartbeat is not None:
            self.heartbeat.begin()

    def idle(self):
        if self.heartbeat is not None:
            self.heartbeat.idle()

    def task_progress(self, where, index, total, done=None):
        """The progress callable of task ``index`` of ``total`` (at ``where``): the fraction
        of the pass is (tasks done + this task's fraction) / total; ``done`` is the count
        shared by forked workers (None: ``index`` tasks are done)."""
        hb = self.heartbeat
        if hb is None:
            return None

        def progress(step=None, fraction=None, **fields):
            if step is None:
                return hb.idle()
            finished = index if done is None else done.value
            hb.note(where=where, step=step, fraction=(finished + 0.95 * (fraction or 0.0))
                    / total, **fields)
        return progress

    def pipeline_progress(self, where):
        """The progress callable of a pipeline trained outside the fold tasks (the final
        model), None without a heartbeat."""
        hb = self.heartbeat
        if hb is None:
            return None
        return lambda step=None, **f: (hb.note(where=where, step=step, **f)
                                       if step is not None else hb.idle())

    def close(self):
        if self.heartbeat is not None:
            self.heartbeat.close()
        self.heartbeat = None            # no thread left (a fitted model is picklable)
