"""pAUCMetric (auto): the automatic back-end of train-pauc-auto (``AutoBackend``,
models.auto.backend, whose module doc says how it chooses).

The package, by what each module does (imports point down this list's dependencies only;
the declarations it shares with the rest of models/ live there: models.systems,
models.crossfit):

* ``backend``: the estimator (scikit-learn style): parameters, ``fit``, scoring,
  ``describe()``;
* ``params``: every parameter declared once (default, allowed values, help), read by the
  estimator and by train-pauc-auto; ``settings``: the frozen values of one fit and where it
  reports;
* ``inputs``: what one fit reads (``FitInputs``, frozen: the table, the adaptation set and
  its sample, the development trials, the durations, the pseudo-speakers), built once;
* ``policy``, ``crossfit``, ``folds``, ``store``: the cross-fitting on the training folds
  (what is tried at what budget, the fold tasks, the held-out scores);
* ``trialsets``: in-domain trial sets (development trials, pseudo-speaker trials) scored by
  every fold's models; ``dev``: labelled development trials;
* ``adapt``, ``pseudo``: what an unlabelled adaptation set changes, and its pseudo-speakers
  (clustering, pseudo-trained systems);
* ``evidence``, ``selection``: the sources of held-out evidence and the one rule that
  chooses among every candidate on them;
* ``final``, ``qmf``: the final model, trained once, and its calibration (quality
  measures).
"""

from pauc_backend.models.auto.backend import AutoBackend
from pauc_backend.models.auto.folds import dim_label
from pauc_backend.models.auto.params import DEFAULT_CANDIDATES, DEFAULT_LDA_DIMS

__all__ = ["AutoBackend", "DEFAULT_CANDIDATES", "DEFAULT_LDA_DIMS", "dim_label"]
