"""One whole classical + pAUCMetric back-end, trained from raw vectors (numpy, no files).

The pipeline is recipes/etri's (egs/sre16/v2 without adaptation): subtract the training mean,
LDA (Kaldi's ivector-compute-lda; ``lda_dim=0``: no LDA, the identity), then

* ``cosine_raw``:  unit-length RAW vectors (no mean, no LDA), dot product: what a user of
                   neural embeddings already has (score-cosine-trials --normalize=true);
* ``cosine``:      unit-length LDA vectors, dot product (ivector-compute-dot-products);
* ``plda``:        length-normalised (sqrt(dim)) LDA vectors, Kaldi PLDA LLR with num_utts
                   (ivector-plda-scoring);
* ``dplda``:       discriminative PLDA (models.discriminative_plda): the full quadratic form
                   of the PLDA score on the same latent vectors, fine-tuned from the PLDA by
                   prior-weighted logistic regression on trials among the training vectors
                   (enrollments of ``enroll_utts`` vectors, as the evaluation's), one model
                   per L2 weight in ``dplda_lambdas`` (a warm-started path; ``dplda_lambda``
                   picks the one that scores);
* ``pauc_lnorm``:  pAUCMetric (paper Alg. 1) on the unit-length LDA vectors ("length-norm");
* ``pauc_latent``: pAUCMetric on the PLDA latent vectors (Plda::TransformIvector with
                   num_utts, the paper's "PLDA-based" preprocessing, Section V-B).

Enrollment vectors may be speaker means of raw vectors (``num_utts`` > 1), as ETRI's.
Every score is -S (eq. 1) or an LLR: higher means more likely the same speaker.

A system name with the suffix ``:as`` (e.g. ``plda:as``) is that system's score after adaptive
symmetric score normalisation (AS-norm, models.score_norm) against a cohort of the TRAINING
speakers' mean vectors (raw speaker means, scored as enrollments of their size where that
matters, i.e. for PLDA), with the ``asnorm_top_n`` highest cohort scores of each side.
"""

import numpy as np

from pauc_backend.models.discriminative_plda import (DiscriminativePLDA, plda_quadratic_form,
                                                     sample_training_trials)
from pauc_backend.models.lda import LDA
from pauc_backend.models.metric_learning import PaucMetric, metric_factor
from pauc_backend.models.plda import PLDA
from pauc_backend.models.preprocessing import normalize_length
from pauc_backend.models.score_norm import blockwise_cohort_statistics, normalize_scores

SYSTEMS = ("cosine", "plda", "pauc_lnorm", "pauc_latent", "cosine_raw", "dplda")
# Systems that need the PLDA (they fail together when it cannot be trained), and systems that
# depend on neither the training mean nor the LDA.
PLDA_SYSTEMS = ("plda", "pauc_latent", "dplda")
DIM_FREE_SYSTEMS = ("cosine_raw",)
_DOT_SYSTEMS = ("cosine", "cosine_raw")       # score = dot product of the features
_QUADRATIC_SYSTEMS = ("plda", "dplda")        # score = their own quadratic form
DPLDA_LAMBDAS = (300.0, 100.0, 30.0, 10.0)
NORMS = ("as",)


def base_system(name):
    """'plda:as' -> 'plda'; ValueError for an unknown system or normalisation."""
    base, _, norm = name.partition(":")
    if base not in SYSTEMS or (norm and norm not in NORMS):
        raise ValueError("unknown system %r (known: %s, each optionally with :as)"
                         % (name, ", ".join(SYSTEMS)))
    return base

# The metric options of train-pauc-metric as shipped (models.metric_learning).
DEFAULT_METRIC_PARAMS = {}


class BackendPipeline:
    """Mean + LDA(lda_dim) + PLDA + the pAUCMetrics needed by ``systems``.

    ``metric_params``: keyword arguments of PaucMetric (alpha/beta/seed are set from here too).
    ``systems``: names of SYSTEMS, optionally with ``:as`` (AS-norm, see the module doc).
    """

    def __init__(self, lda_dim=100, systems=SYSTEMS, metric_params=None, alpha=0.0,
                 beta=0.01, asnorm_top_n=100, enroll_utts=0, dplda_lambdas=DPLDA_LAMBDAS,
                 dplda_lambda=None, random_state=0, progress=None):
        self.lda_dim = lda_dim
        self.progress = progress
        self.enroll_utts = enroll_utts
        self.dplda_lambdas = dplda_lambdas
        self.dplda_lambda = dplda_lambda
        self.asnorm_top_n = asnorm_top_n
        self.systems = systems
        self.metric_params = metric_params
        self.alpha = alpha
        self.beta = beta
        self.random_state = random_state

    def _metric(self, callback=None):
        params = dict(DEFAULT_METRIC_PARAMS, **(self.metric_params or {}))
        params.update(alpha=self.alpha, beta=self.beta, random_state=self.random_state,
                      callback=callback)
        return PaucMetric(**params)

    def _note(self, step, fraction, **fields):
        """Tell ``progress`` (a callable of keywords step, fraction, iteration, num_iters)
        which step of ``fit`` runs and the fraction done; step None: this process is idle."""
        if self.progress is not None:
            self.progress(step=step, fraction=fraction, **fields)

    def _metric_callback(self, name, index, count, num_steps):
        """Per-iteration progress of the metric ``name`` (number ``index`` of ``count``)."""
        if self.progress is None:
            return None
        num_iters = int(self._metric().num_iters)

        def callback(record):
            it = record["iteration"]
            self._note("%s metric" % name, (num_steps - count + index + min(1.0, it / num_iters))
                       / num_steps, iteration=it, num_iters=num_iters)
        return callback

    def fit(self, X, y, n_jobs=1):
        """Train every piece on raw vectors X (n, D) with speaker labels y; with n_jobs > 1
        the two pAUCMetrics train in parallel (forked) processes, with identical results."""
        X = np.asarray(X, dtype=np.float32)
        y = np.asarray(y)
        bases = self._bases()
        self.__dict__.pop("_cohort_feats", None)
        num_metrics = len({"pauc_lnorm", "pauc_latent"} & bases)
        num_steps = (1 + bool(set(PLDA_SYSTEMS) & bases) + ("dplda" in bases)
                     + num_metrics)
        self._note("mean and LDA", 0.0)
        # float32, as compute-vector-mean writes it and subtract-vector-mean applies it
        self.mean_ = X.astype(np.float64).mean(axis=0).astype(np.float32)
        centred = X - self.mean_
        if int(self.lda_dim) > 0 and bases - set(DIM_FREE_SYSTEMS):
            self.lda_ = LDA(dim=int(self.lda_dim)).fit(centred, y)
        else:
            self.lda_ = identity_lda(X.shape[1])
        Z = self.lda_.transform(centred)
        self.plda_ = None
        if set(PLDA_SYSTEMS) & bases:
            self._note("PLDA", 1.0 / num_steps)
            self.plda_ = PLDA().fit(normalize_length(Z)[0], y)
        self.dplda_ = {}
        if "dplda" in bases:
            self._note("discriminative PLDA", (num_steps - num_metrics - 1.0) / num_steps)
            self._fit_dplda(X, y)
        jobs = []
        if "pauc_lnorm" in bases:
            jobs.append(("pauc_lnorm", normalize_length(Z, scaleup=False)[0]))
        if "pauc_latent" in bases:
            jobs.append(("pauc_latent", self.plda_.transform(normalize_length(Z)[0], 1)[0]))
        if int(n_jobs) > 1 and len(jobs) > 1:
            from pauc_backend.workers import fork_pool
            global _SHARED
            _SHARED = (self, y, jobs, num_steps)
            if self.progress is not None:     # the workers report, this process waits
                self.progress(step=None, fraction=None)
            try:
                with fork_pool(len(jobs)) as pool:
                    fitted = pool.map(_fit_metric, range(len(jobs)))
            finally:
                _SHARED = None
        else:
            fitted = [self._metric(self._metric_callback(name, i, len(jobs), num_steps))
                      .fit(feats, y) for i, (name, feats) in enumerate(jobs)]
        for metric in fitted:
            metric.callback = None
        self.metrics_ = {name: metric for (name, _), metric in zip(jobs, fitted)}
        self.cohort_ = self.cohort_counts_ = None
        if any(":" in s for s in self.systems):
            labels, index, counts = np.unique(y, return_inverse=True, return_counts=True)
            sums = np.zeros((labels.size, X.shape[1]))
            np.add.at(sums, index.reshape(-1), X.astype(np.float64))
            self.cohort_ = (sums / counts[:, None]).astype(np.float32)
            self.cohort_counts_ = counts
        return self

    def _bases(self):
        return {base_system(s) for s in self.systems}

    def _fit_dplda(self, X, y):
        """The discriminative PLDA path over ``dplda_lambdas`` (largest first, each fit
        warm-started from the previous one) on a seeded grid of training trials."""
        n = int(self.enroll_utts)
        sets, test_rows, valid, is_target = sample_training_trials(
            y, n, random_state=self.random_state + 17)
        test = self._base_features(X[test_rows], 1, {"plda"})["plda"]
        if n == 0:
            enroll = test
        else:
            means = X[sets].astype(np.float64).mean(axis=1).astype(np.float32)
            enroll = self._base_features(means, n, {"plda"})["plda"]
        init = plda_quadratic_form(self.plda_, max(1, n))
        previous = None
        for lam in sorted({float(v) for v in self.dplda_lambdas}, reverse=True):
            previous = DiscriminativePLDA(regularization=lam).fit(
                enroll, test, valid, is_target, init, symmetric=(n == 0), start=previous)
            self.dplda_[lam] = previous

    def dplda_model(self):
        """The discriminative PLDA that scores: the one of ``dplda_lambda``, or of the
        largest lambda when that is None."""
        lam = max(self.dplda_) if self.dplda_lambda is None else float(self.dplda_lambda)
        if lam not in self.dplda_:
            raise ValueError("no discriminative PLDA was trained with lambda %g (have %s)"
                             % (lam, ", ".join("%g" % v for v in sorted(self.dplda_))))
        return self.dplda_[lam]

    @classmethod
    def from_parts(cls, systems, mean, lda_affine, plda=None, metrics=None, cohort=None,
                   cohort_counts=None, asnorm_top_n=100, dplda=None):
        """A fitted pipeline from stored pieces: the float32 mean, the LDA affine matrix
        [A | b] (transform.mat), a PLDA (models.plda.PLDA) and {system: Mahalanobis M}."""
        pipe = cls(lda_dim=np.asarray(lda_affine).shape[0], systems=tuple(systems),
                   asnorm_top_n=asnorm_top_n)
        pipe.cohort_ = None if cohort is None else np.asarray(cohort, dtype=np.float32)
        pipe.cohort_counts_ = None if cohort is None else np.asarray(cohort_counts)
        if any(":" in s for s in pipe.systems) and pipe.cohort_ is None:
            raise ValueError("stored back-end lacks the AS-norm cohort")
        pipe.mean_ = np.asarray(mean, dtype=np.float32)
        pipe.lda_ = LDA(dim=pipe.lda_dim)
        pipe.lda_.affine_matrix_ = np.asarray(lda_affine, dtype=np.float32)
        pipe.plda_ = plda
        pipe.dplda_ = {}
        if dplda is not None:
            pipe.dplda_lambda = float(getattr(dplda, "regularization", 0.0))
            pipe.dplda_ = {pipe.dplda_lambda: dplda}
        pipe.metrics_ = {}
        for name, M in (metrics or {}).items():
            metric = PaucMetric()
            metric.metric_ = np.asarray(M, dtype=np.float64)
            metric.components_ = metric_factor(metric.metric_)[0]
            pipe.metrics_[name] = metric
        bases = pipe._bases()
        missing = [s for s in bases if s.startswith("pauc") and s not in pipe.metrics_]
        if missing or (pipe.plda_ is None and set(PLDA_SYSTEMS) & bases):
            raise ValueError("stored back-end lacks the pieces of %s"
                             % ", ".join(missing or ["plda"]))
        if "dplda" in bases and not pipe.dplda_:
            raise ValueError("stored back-end lacks the discriminative PLDA")
        return pipe

    def _base_features(self, X, num_utts, bases):
        X = np.asarray(X, dtype=np.float32)
        out = {}
        if "cosine_raw" in bases:
            out["cosine_raw"] = normalize_length(X, scaleup=False)[0].astype(np.float64)
        if not bases - {"cosine_raw"}:
            return out
        Z = self.lda_.transform(X - self.mean_)
        unit = normalize_length(Z, scaleup=False)[0].astype(np.float64)
        if "cosine" in bases:
            out["cosine"] = unit
        if "pauc_lnorm" in bases:
            out["pauc_lnorm"] = self.metrics_["pauc_lnorm"].transform(unit)
        if self.plda_ is not None and set(PLDA_SYSTEMS) & bases:
            U = self.plda_.transform(normalize_length(Z)[0], num_utts)[0]
            for name in ("plda", "dplda"):
                if name in bases:
                    out[name] = U
            if "pauc_latent" in bases:
                out["pauc_latent"] = self.metrics_["pauc_latent"].transform(U)
        return out

    def features(self, X, num_utts=1):
        """Per-system features of raw vectors X (num_utts: vectors averaged per row); with
        AS-norm systems also each row's cohort statistics under the key (system, "stats")."""
        bases = self._bases()
        out = self._base_features(X, num_utts, bases)
        normed = {base_system(s) for s in self.systems if ":" in s}
        if normed:
            if not hasattr(self, "_cohort_feats"):
                self._cohort_feats = self._base_features(self.cohort_, self.cohort_counts_,
                                                         normed)
            n = out[next(iter(normed))].shape[0]
            rows = np.arange(n)
            for base in normed:
                C = self._cohort_feats[base]
                crow = np.arange(C.shape[0])

                def block(start, stop, base=base, C=C):
                    if base not in _QUADRATIC_SYSTEMS:  # every cohort row x every row
                        return self._grid_scores(base, C, out[base], start, stop).T
                    e = np.repeat(crow, stop - start)
                    t = np.tile(rows[start:stop], C.shape[0])
                    sc = self._pair_scores(base, C, out[base], e, t, self.cohort_counts_)
                    return sc.reshape(C.shape[0], stop - start).T

                out[base, "stats"] = blockwise_cohort_statistics(
                    block, n, min(int(self.asnorm_top_n), C.shape[0]), block=512)
        return out

    def _pair_scores(self, base, E, T, enroll_rows, test_rows, num_utts):
        if base == "plda":
            return self.plda_.score_pairs(E, T, enroll_rows, test_rows, num_utts)
        if base == "dplda":
            return self.dplda_model().score_pairs(E, T, enroll_rows, test_rows)
        if base in _DOT_SYSTEMS:
            return _row_dots(E, T, enroll_rows, test_rows)
        qe = np.einsum("ij,ij->i", E, E)
        qt = np.einsum("ij,ij->i", T, T)
        dots = _row_dots(E, T, enroll_rows, test_rows)
        return _metric_scores(qe[enroll_rows], qt[test_rows], dots)

    def _grid_scores(self, base, E, T, start, stop):
        """``_pair_scores`` of every row of E against rows start:stop of T, as an
        (len(E), stop - start) matrix: the same products and element-wise operations, in the
        same order, as the pair path (so the same bits), without building, hashing and
        searching the len(E) x (stop - start) pair indices (the AS-norm cohort of a
        paper-sized fold: ~5,900 cohort rows x 512 rows a block, 80 blocks a side)."""
        block = T[start:stop]
        gram = E @ block.T
        if base in _DOT_SYSTEMS:
            return gram
        qe = np.einsum("ij,ij->i", E, E)
        qt = np.einsum("ij,ij->i", block, block)
        return _metric_scores(qe[:, None], qt[None, :], gram)

    def score(self, enroll_feats, test_feats, enroll_rows, test_rows, num_utts=1):
        """(n_trials, len(systems)) scores, columns in ``self.systems`` order, of the trials
        (enroll_feats[enroll_rows], test_feats[test_rows]); feats come from ``features``."""
        enroll_rows = np.asarray(enroll_rows, dtype=np.intp)
        test_rows = np.asarray(test_rows, dtype=np.intp)
        out = np.empty((enroll_rows.size, len(self.systems)))
        raw = {}
        for col, system in enumerate(self.systems):
            base = base_system(system)
            if base not in raw:
                raw[base] = self._pair_scores(base, enroll_feats[base], test_feats[base],
                                              enroll_rows, test_rows, num_utts)
            if ":" in system:
                em, es = enroll_feats[base, "stats"]
                tm, ts = test_feats[base, "stats"]
                out[:, col] = normalize_scores(raw[base], "as", em[enroll_rows],
                                               es[enroll_rows], tm[test_rows], ts[test_rows])
            else:
                out[:, col] = raw[base]
        return out


def identity_lda(dim):
    """An LDA object whose transform is the identity [I | 0] (``lda_dim=0``: no LDA); applied
    by transform-vec it returns its input bit for bit."""
    lda = LDA(dim=dim)
    lda.affine_matrix_ = np.hstack([np.eye(dim), np.zeros((dim, 1))]).astype(np.float32)
    return lda


_SHARED = None


def _fit_metric(index):
    """One pAUCMetric of BackendPipeline.fit in a forked worker process."""
    pipe, y, jobs, num_steps = _SHARED
    name, feats = jobs[index]
    # Both metrics train at once: each reports as if it were the first of one.
    metric = pipe._metric(pipe._metric_callback(name, 0, 1, num_steps - len(jobs) + 1))
    try:
        metric.fit(feats, y)
    finally:
        if pipe.progress is not None:         # this worker is done: no more lines from it
            pipe.progress(step=None, fraction=None)
    metric.callback = None
    return metric


def _metric_scores(sq_enroll, sq_test, dots):
    """-S = -(|a|^2 + |b|^2 - 2 a.b), S floored at 0: the metrics' score in their projected
    space from squared norms and dot products (per trial, or broadcast to a grid)."""
    return -np.maximum(sq_enroll + sq_test - 2.0 * dots, 0.0)


def _row_dots(E, T, enroll_rows, test_rows, block=1 << 16):
    """E[enroll_rows[k]] . T[test_rows[k]] for each k: a dense Gram block when the distinct
    rows are few (the usual every-model-against-every-test design), else blocked gathers."""
    used_e = np.unique(enroll_rows)
    used_t = np.unique(test_rows)
    n = enroll_rows.size
    if used_e.size * used_t.size <= 8 * n + 65536:
        gram = E[used_e] @ T[used_t].T
        return gram[np.searchsorted(used_e, enroll_rows), np.searchsorted(used_t, test_rows)]
    out = np.empty(n)
    for start in range(0, n, block):
        stop = start + block
        out[start:stop] = np.einsum("ij,ij->i", E[enroll_rows[start:stop]],
                                    T[test_rows[start:stop]])
    return out
