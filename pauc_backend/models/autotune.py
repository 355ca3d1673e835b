"""Hyper-parameter search for PaucMetric/TripletMetric on held-out training speakers.

The paper leaves automatic tuning to future work (Section VII). Here: the defaults first, then
random settings of delta, gamma, mu and eta drawn around them (log-uniform; ranges that cover
the paper's stable region of Section VI-F, in the units fixed by ``scale='auto'``), each
scored by the best held-out criterion reached with early stopping on the same speaker split.
"""

import math

import numpy as np

SEARCH_SPACE = {
    "delta": (0.25, 4.0),      # log-uniform
    "gamma": (0.02, 1.5),      # log-uniform
    "mu": (1e-4, 3e-2),        # log-uniform
    "eta": (0.1, 5.0),         # log-uniform
}


def candidate_settings(num_trials, seed):
    """The first candidate is None (the estimator's own values), then random draws."""
    rng = np.random.default_rng(seed)
    out = [None]
    for _ in range(num_trials - 1):
        out.append({name: float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
                    for name, (lo, hi) in SEARCH_SPACE.items()})
    return out


def auto_tune(model, X, y, num_trials=12, log=None, rows=None):
    """Try ``num_trials`` settings of (delta, gamma, mu, eta) with early stopping on held-out
    speakers (model.validation_fraction, or 0.2 if 0) and return the best as a dict.
    ``rows``: as in ``fit``, the rows of X to use (no copy of X)."""
    base = model.get_params()
    fraction = base["validation_fraction"] or 0.2
    results = []
    for trial, setting in enumerate(candidate_settings(num_trials, base["random_state"]), 1):
        params = {name: base[name] for name in SEARCH_SPACE} if setting is None else setting
        probe = type(model)(**dict(base, **params, validation_fraction=fraction, refit=False,
                                   callback=None))
        probe.fit(X, y, rows=rows)
        if not hasattr(probe, "best_validation_"):
            raise ValueError("auto-tune needs at least 4 speakers with 2 or more vectors, so "
                             "that some can be held out")
        results.append((probe.best_validation_, -trial, params, probe.best_iteration_))
        if log is not None:
            log("Auto-tune trial %d/%d: delta=%.4g gamma=%.4g mu=%.4g eta=%.4g -> held-out "
                "%s %.5g at iteration %d" % (trial, num_trials, params["delta"],
                                             params["gamma"], params["mu"], params["eta"],
                                             base["criterion"], probe.best_validation_,
                                             probe.best_iteration_))
    best = max(results, key=lambda r: (r[0], r[1]))
    if log is not None:
        log("Auto-tune chose delta=%.4g gamma=%.4g mu=%.4g eta=%.4g" % tuple(
            best[2][name] for name in ("delta", "gamma", "mu", "eta")))
    return dict(best[2])
