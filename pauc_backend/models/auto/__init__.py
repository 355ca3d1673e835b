"""pAUCMetric (auto): the automatic back-end of train-pauc-auto, chosen by cross-fitting on the
training speakers (``AutoBackend``, models.auto.backend; the module doc there says how).

The package, by what each module does:

* ``backend``: the estimator (scikit-learn style): parameters, fit in steps, the choice, the
  final model, scoring and ``describe()``;
* ``params``: every parameter declared once (default, allowed values, help), read by the
  estimator and by train-pauc-auto;
* ``systems``: the systems (key, title, space, head), each defined once;
* ``policy``: what is tried on which data at what budget (the cost model, the stages);
* ``settings``: what the cross-fitting reads (``Settings``, frozen) and where it reports
  (``Reporter``), instead of the estimator;
* ``crossfit``: the state of one cross-fitting (stages decided, results added, ratings),
  returning what it decides;
* ``evidence``: held-out evidence as the choice reads it (``Evidence``: one source of
  held-out trials; today the training folds);
* ``folds``: the fold tasks, in this process or in forked workers;
* ``store``: the held-out scores, kept as long as the rating needs them;
* ``adapt``: what an unlabelled in-domain adaptation set changes;
* ``pseudo``, ``pseudo_stage``: its pseudo-speakers (clustering, pseudo-trained PLDAs, the
  in-domain stage that rates candidates on pseudo-speaker folds; issue 34 item 1).

The names below are imported on first use (PEP 562), not when the package is: the models'
pipeline (models.backend_pipeline) imports ``systems`` from here and the estimator imports
the pipeline, so an eager import here would be circular.
"""

import importlib

_EXPORTS = {
    "AutoBackend": "backend",
    "DEFAULT_CANDIDATES": "params", "DEFAULT_LDA_DIMS": "params",
    "parse_candidate": "systems", "candidate_title": "systems", "base_system": "systems",
    "dim_free": "systems",
    "dim_label": "folds",
    "Settings": "settings", "Reporter": "settings",
    "Evidence": "evidence", "TRAINING_FOLDS": "evidence",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    value = getattr(importlib.import_module("%s.%s" % (__name__, module)), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
