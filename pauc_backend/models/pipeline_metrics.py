"""The pAUCMetrics of a BackendPipeline (models.backend_pipeline), trained on its vectors.

Each metric system (models.systems, head "metric") trains a PaucMetric (models.metric_learning)
on the training vectors in its space: ``raw`` (length-normalised raw vectors, no scale-up),
``lda`` (the length-normalised LDA vectors A (x - mean)), ``latent`` / ``latent_adapt`` (the
PLDA's latent vectors of the length-normalised LDA vectors: ivector-plda-scoring's
TransformIvector with num_utts 1, of the PLDA or of the adapted PLDA). The vectors are at most
``max_metric_vectors`` of the table (``metric_rows``), the LDA vectors Z of them made once by
the caller; each metric's features exist only while it trains. Every function here takes what
it needs as arguments and returns what it makes.

The metrics are independent (each with its own seed): ``fit_metrics`` trains them one after
another, in forked worker processes (workers.fork_pool) or in threads of this process
(metric_learning.fit_at_once), with the same bits.
"""

import numpy as np

from pauc_backend.models import blocked
from pauc_backend.models.crossfit import crossfit_rows
from pauc_backend.models.metric_learning import PaucMetric, fit_at_once
from pauc_backend.models.preprocessing import normalize_length

_BLOCK = blocked.GATHER_ROWS


def new_metric(params, callback=None):
    """A PaucMetric of the keywords ``params`` reporting each iteration to ``callback``."""
    params = dict(params)
    params.update(callback=callback)
    return PaucMetric(**params)


def metric_callback(progress, params, name, index, count, num_steps, end=None):
    """Per-iteration progress of the metric ``name`` (number ``index`` of ``count``, the
    metrics ending at step ``end`` of ``num_steps``, default the last), told to ``progress``
    (a callable of keywords step, fraction, iteration, num_iters); None without one."""
    if progress is None:
        return None
    num_iters = int(new_metric(params).num_iters)
    end = num_steps if end is None else end

    def callback(record):
        it = record["iteration"]
        progress(step="%s metric" % name, fraction=(end - count + index
                                                    + min(1.0, it / num_iters)) / num_steps,
                 iteration=it, num_iters=num_iters)
    return callback


def metric_rows(rows, y, limit, seed):
    """(the positions in ``rows`` (and ``y``) of the vectors the pAUCMetrics train on,
    increasing: None for all of them, or beyond ``limit`` (0: no limit) the same seeded cap on
    each speaker's count as the cross-fitting subset (models.crossfit.crossfit_rows, ``seed``);
    (how many they are, rows.size)). Their mini-batches draw num_iters x batch_size speakers,
    two vectors each, whatever the table's size."""
    limit = int(limit or 0)
    if not limit or rows.size <= limit:
        return None, (rows.size, rows.size)
    keep, _ = crossfit_rows(y, 0, limit, int(seed))
    return keep, (keep.size, rows.size)


def training_space(space, X, rows, Z, plda, in_place=False):
    """The training vectors in ``space`` (float32) of X[rows], whose LDA vectors are Z, for a
    metric trained there (``plda``: the PLDA of a latent space), a block of rows at a time
    (each row's arithmetic is its own: the same bits whatever the blocks); ``in_place``:
    written over Z (its last use)."""
    if space == "raw":
        out = np.empty((rows.size, X.shape[1]), dtype=np.float32)
        for start in range(0, rows.size, _BLOCK):
            out[start:start + _BLOCK] = normalize_length(
                np.asarray(X[rows[start:start + _BLOCK]], dtype=np.float32),
                scaleup=False)[0]
        return out
    out = Z if in_place else np.empty(Z.shape, dtype=np.float32)
    for start in range(0, Z.shape[0], _BLOCK):
        block = Z[start:start + _BLOCK]
        out[start:start + _BLOCK] = (
            normalize_length(block, scaleup=False)[0] if space == "lda"
            else plda.transform(normalize_length(block)[0], 1)[0])
    return out


def fit_metrics(X, rows, Z, y, jobs, pldas, params, progress=None, num_steps=1, after=0,
                n_jobs=1, threads=False):
    """The PaucMetrics (keywords ``params``) of ``jobs`` ((system key, space) each), in that
    order, trained on X[rows] labelled y, whose LDA vectors are Z (None when no job needs
    them; the last job's features are written over it); ``pldas``: {space: PLDA} of the
    latent spaces. ``progress`` is told each iteration (``metric_callback``): the metrics
    are the steps before the last ``after`` of ``num_steps``. With n_jobs > 1 and several
    jobs they train at once, in forked processes, or with ``threads`` in threads of this
    process (numpy's products run outside the interpreter's lock); the same bits either
    way. The returned metrics have no callback."""
    if threads and int(n_jobs) > 1 and len(jobs) > 1:
        fitted = _fit_in_threads(X, rows, Z, y, jobs, pldas, params, progress, num_steps,
                                 after)
    elif int(n_jobs) > 1 and len(jobs) > 1:
        from pauc_backend.workers import fork_pool
        global _SHARED
        _SHARED = (X, rows, Z, y, jobs, pldas, params, progress, num_steps, after)
        if progress is not None:     # the workers report, this process waits
            progress(step=None, fraction=None)
        try:
            with fork_pool(len(jobs)) as pool:
                fitted = pool.map(_fit_metric, range(len(jobs)))
        finally:
            _SHARED = None
    else:
        fitted = []
        for i, (key, space) in enumerate(jobs):     # the last one over Z itself
            feats = training_space(space, X, rows, Z, pldas.get(space), i == len(jobs) - 1)
            fitted.append(new_metric(params, metric_callback(
                progress, params, key, i, len(jobs), num_steps, num_steps - after)).fit(
                    feats, y))
            del feats
    for metric in fitted:
        metric.callback = None
    return fitted


def _fit_in_threads(X, rows, Z, y, jobs, pldas, params, progress, num_steps, after):
    """The metrics of ``jobs`` trained at once, one thread each (the last in this one).
    Their features are made first, the last one's over Z itself (its last use), so two
    metrics hold what one at a time holds at most: Z and one more array."""
    feats = [training_space(space, X, rows, Z, pldas.get(space), i == len(jobs) - 1)
             for i, (_, space) in enumerate(jobs)]
    # each reports as if it were the only one (they train at once)
    steps = num_steps - len(jobs) + 1
    metrics = [new_metric(params, metric_callback(progress, params, key, 0, 1, steps,
                                                  steps - after))
               for key, _ in jobs]
    return fit_at_once(metrics, feats, y)


_SHARED = None


def _fit_metric(index):
    """One metric of ``fit_metrics`` in a forked worker process: its features are made here,
    from the parent's LDA vectors (shared by the fork, not copied)."""
    X, rows, Z, y, jobs, pldas, params, progress, num_steps, after = _SHARED
    key, space = jobs[index]
    # Both metrics train at once: each reports as if it were the only one.
    steps = num_steps - len(jobs) + 1
    metric = new_metric(params, metric_callback(progress, params, key, 0, 1, steps,
                                                steps - after))
    try:
        metric.fit(training_space(space, X, rows, Z, pldas.get(space)), y)
    finally:
        if progress is not None:         # this worker is done: no more lines from it
            progress(step=None, fraction=None)
    metric.callback = None
    return metric
