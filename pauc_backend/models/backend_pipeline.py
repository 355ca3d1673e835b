"""One whole classical + pAUCMetric back-end, trained from raw vectors (numpy, no files).

The pipeline is recipes/etri's (egs/sre16/v2 without adaptation): the training mean
(compute-vector-mean), LDA of the centred vectors (ivector-compute-lda; ``lda_dim=0``: no LDA,
the identity), then the systems of ``models.systems`` (their spaces and heads: raw cosine,
centred cosine, Kaldi's PLDA with num_utts, the discriminative PLDA, pAUCMetric on the
length-normalised LDA vectors and on the PLDA latent vectors). Enrollment vectors may be
speaker means of raw vectors (``num_utts`` > 1), as ETRI's. Every score is -S (eq. 1) or an
LLR: higher means more likely the same speaker.

A system name with the suffix ``:as`` (e.g. ``plda:as``) is that system's score after adaptive
symmetric score normalisation (AS-norm, models.score_norm) against a cohort of ONE raw vector
of each TRAINING speaker (seeded), with the ``asnorm_top_n`` highest cohort scores of each
side. Not the speakers' mean vectors (WeSpeaker's cohort, and ours before issue 28): the
PLDA and the metrics are trained on those same speakers, and with few of them (40 speakers,
LDA none, 80-192 dimensions) their means are what the model fitted, so their scores against
any vector are spread by the model's fit, not by the speakers: on the synthetic corpus with
40 training speakers and LDA none, PLDA's held-out pAUC[0,0.01] fell from 0.22 to 0.10 with
the cohort of means (0.06 with top-10), and stayed at 0.22 with one vector per speaker (a
user's ECAPA embeddings with 40 LibriSpeech speakers: 6.6 % -> 45.4 % EER). With 400 speakers
both cohorts helped PLDA little (0.495 means, 0.522 single vectors, 0.50 without);
tests/models/test_backend_pipeline_asnorm.py pins the property.

Memory: the training table is held once, as given (float32 as read, or spooled to disk and
read on demand: models.row_table), and never copied: ``fit(X, y, rows=...)`` trains on the
rows named (a fold's training speakers), the mean, the LDA and PLDA statistics are
accumulated from blocks of rows (models.lda, models.plda; the PLDA's from vectors projected
a block at a time), the AS-norm cohort and the discriminative PLDA's trials are gathered
rows. Only the pAUCMetrics' training vectors are projected at once: at most
``max_metric_vectors`` x lda_dim float32, and each metric's features (as many) exist only
while that metric trains (in its own worker with ``n_jobs`` > 1; models.pipeline_metrics).
"""

import numpy as np

from pauc_backend.models.systems import (NORMS, SYSTEMS, base_system, canonical,  # noqa
                                              system)
from pauc_backend.models.discriminative_plda import (DPLDA_LAMBDAS, DiscriminativePLDA,
                                                     plda_quadratic_form, sample_training_trials)
from pauc_backend.models import blocked
from pauc_backend.models.class_stats import ClassStats
from pauc_backend.models.lda import LDA
from pauc_backend.models.metric_learning import PaucMetric, metric_factor
from pauc_backend.models.pipeline_metrics import fit_metrics, metric_rows, new_metric
from pauc_backend.models.plda import PLDA
from pauc_backend.models.preprocessing import normalize_length
from pauc_backend.models.score_norm import blockwise_cohort_statistics, normalize_scores

# ivector-adapt-plda's --within-covar-scale and --between-covar-scale in egs/sre16/v2 (and the
# demo recipe); --mean-diff-scale is Kaldi's default 1.
ADAPT_SCALES = (0.75, 0.25)
_BLOCK = blocked.GATHER_ROWS


def _keys(heads=None, spaces=None, dim_free=None):
    return tuple(s.key for s in SYSTEMS if (heads is None or s.head in heads)
                 and (spaces is None or s.space in spaces)
                 and (dim_free is None or s.dim_free == dim_free))


# Derived from the registry (kept as names for the callers of earlier versions).
PLDA_SYSTEMS = tuple(s.key for s in SYSTEMS if s.needs_plda)
DIM_FREE_SYSTEMS = _keys(dim_free=True)


class BackendPipeline:
    """Mean + LDA(lda_dim) + PLDA + the pAUCMetrics needed by ``systems``.

    ``metric_params``: keyword arguments of PaucMetric (alpha/beta/seed are set from here too).
    ``systems``: keys of models.systems, optionally with ``:as`` (AS-norm, module doc).
    ``max_metric_vectors``: the pAUCMetrics train on at most this many of the training
    vectors (0: all): beyond it, on the same seeded cap on each speaker's count
    (models.crossfit.crossfit_rows); ``metric_rows_`` says how many after ``fit``.
    """

    def __init__(self, lda_dim=100, systems=tuple(s.key for s in SYSTEMS if not s.needs_adapt),
                 metric_params=None, alpha=0.0, beta=0.01, asnorm_top_n=100, enroll_utts=0,
                 dplda_lambdas=DPLDA_LAMBDAS, dplda_lambda=None, random_state=0,
                 progress=None, adapt_scales=ADAPT_SCALES, max_metric_vectors=0):
        self.lda_dim = lda_dim
        self.max_metric_vectors = max_metric_vectors
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
        self.adapt_scales = adapt_scales

    def _metric_params(self):
        """PaucMetric's keywords: ``metric_params`` with alpha, beta and the seed set here."""
        params = dict(self.metric_params or {})
        params.update(alpha=self.alpha, beta=self.beta, random_state=self.random_state)
        return params

    def _metric(self, callback=None):
        return new_metric(self._metric_params(), callback)

    def _note(self, step, fraction, **fields):
        """Tell ``progress`` (a callable of keywords step, fraction, iteration, num_iters)
        which step of ``fit`` runs and the fraction done; step None: this process is idle."""
        if self.progress is not None:
            self.progress(step=step, fraction=fraction, **fields)

    def _systems(self):
        return [system(base_system(s)) for s in self.systems]

    def _bases(self):
        return {s.key for s in self._systems()}

    # -- training ------------------------------------------------------------------------------
    def fit(self, X, y, n_jobs=1, rows=None, adapt=None, adapt_rows=None, lda=None,
            threads=False):
        """Train every piece on raw vectors X (n, D) with speaker labels y; ``rows``: the
        rows of X to use, in this order (y labels them), so a fold needs no copy of the
        table. X is an array or a table of rows read on demand (models.row_table: a
        training table spooled to disk), read a block of rows at a time. With n_jobs > 1
        the pAUCMetrics train in parallel (forked) processes, with identical results; with
        ``threads`` too, in threads of this process instead (what a pool's worker, which
        cannot fork, can do: numpy's products and eigendecompositions run outside the
        interpreter's lock, so two metrics use two cores), with identical results.
        ``lda``: the LDA of these rows at ``lda_dim`` when it is already fitted (a fold's
        every dimension at once, LDA.fit_dims), instead of fitting it here.

        ``adapt``: unlabelled in-domain raw vectors (``adapt_rows``: its rows to use; it may
        be X itself). As egs/sre16/v2 stage 8: the LDA, the PLDA and the metrics train on the
        training vectors centred on their own mean; the vectors scored afterwards are centred
        on the adaptation set's mean (``mean_``; the training mean stays as
        ``train_mean_``), and the adapted PLDA ``plda_adapt_`` (ivector-adapt-plda on the
        adaptation vectors centred on their mean, LDA-projected, length-normalised, with
        ``adapt_scales``) serves the ``latent_adapt`` systems."""
        if not blocked.is_table(X):
            X = np.asarray(X)
            if X.dtype != np.float32:
                X = X.astype(np.float32)
        rows = np.arange(X.shape[0]) if rows is None else np.asarray(rows, dtype=np.intp)
        y = np.asarray(y)
        self.systems = tuple(canonical(s) for s in self.systems)
        chosen = self._systems()
        self.__dict__.pop("_cohort_feats", None)
        metrics = [s for s in chosen if s.head == "metric"]
        metrics = list({s.key: s for s in metrics}.values())
        plda_needed = any(s.needs_plda for s in chosen)
        dplda_needed = any(s.head == "dplda" for s in chosen)
        num_steps = 1 + plda_needed + dplda_needed + len(metrics)
        self._note("mean and LDA", 0.0)
        projected = any(not s.dim_free for s in chosen)
        if int(self.lda_dim) > 0 and projected:
            # mean and scatter from blocks of rows (Kaldi's ComputeAndSubtractMean: the
            # float32 utterance mean, as compute-vector-mean writes it)
            if lda is None:
                lda = LDA(dim=int(self.lda_dim)).fit(X, y, rows=rows)
            self.mean_ = lda.mean_
            self.lda_ = _centred_lda(lda)
        else:
            self.mean_ = float32_mean(X, rows)
            self.lda_ = identity_lda(X.shape[1])
        self.train_mean_ = self.mean_
        self.plda_ = self.plda_adapt_ = None
        jobs = [(s.key, s.space) for s in metrics]
        # the metrics' training vectors (at most max_metric_vectors), projected at once: in
        # the PLDA's pass over the table when there is one (the same rows, the same bits)
        m_at = None
        if jobs:
            m_at, self.metric_rows_ = metric_rows(rows, y, self.max_metric_vectors,
                                                  int(self.random_state) + 41)
        m_rows, m_y = (rows, y) if m_at is None else (rows[m_at], y[m_at])
        Z = None
        if plda_needed:
            self._note("PLDA", 1.0 / num_steps)
            stats, Z = self._plda_stats(X, rows, y, (np.arange(rows.size) if m_at is None
                                                     else m_at) if jobs and projected else None)
            self.plda_ = PLDA().fit_stats(stats)
        adapt_mean = None
        if adapt is not None:
            adapt = np.asarray(adapt)
            adapt_rows = (np.arange(adapt.shape[0]) if adapt_rows is None
                          else np.asarray(adapt_rows, dtype=np.intp))
            adapt_mean = float32_mean(adapt, adapt_rows)
            if any(s.needs_adapt for s in chosen):
                self.plda_adapt_ = self.adapted_plda(adapt, adapt_rows, adapt_mean)
        elif any(s.needs_adapt for s in chosen):
            raise ValueError("systems %s need an adaptation set" % ", ".join(
                s.key for s in chosen if s.needs_adapt))
        # the metrics before the discriminative PLDA (independent, each with its own seed):
        # their training vectors are released before its grid of trials is made
        if Z is None and jobs and projected:
            Z = self.project(X, m_rows)
        fitted = fit_metrics(X, m_rows, Z, m_y, jobs,
                             {"latent": self.plda_, "latent_adapt": self.plda_adapt_},
                             self._metric_params(), self.progress, num_steps, dplda_needed,
                             n_jobs, threads)
        del Z
        self.metrics_ = {key: metric for (key, _), metric in zip(jobs, fitted)}
        self.dplda_ = {}
        if dplda_needed:
            self._note("discriminative PLDA", (num_steps - 1.0) / num_steps)
            self._fit_dplda(X, rows, y)
        if adapt_mean is not None:         # what scores from now on is centred in-domain
            self.mean_ = adapt_mean
        self.cohort_ = self.cohort_counts_ = None
        if any(":" in s for s in self.systems):
            self.cohort_, self.cohort_counts_ = cohort_vectors(X, rows, y,
                                                               self.random_state + 31)
        return self

    def _plda_stats(self, X, rows, y, keep=None):
        """(the PLDA's statistics (ClassStats) of the rows of X centred, LDA-projected and
        length-normalised, a block of rows at a time (PLDA.fit_stats): no projected copy of
        the table (n x LDA dimension float32: 1 GB at VoxCeleb's 1.28 M x 200); with
        ``keep`` (increasing positions in ``rows``: the metrics' sample) also the LDA
        vectors of rows[keep], taken from the same blocks, else None). The blocks are those
        of ``project`` then of ``blocked.block_rows`` of the LDA dimension, as when the whole
        projection was made first, so the statistics are the same bits; a row's projection
        is its own (apply_affine: one product per vector), so the kept vectors are
        ``project(X, rows[keep])``, bit for bit."""
        _, index = np.unique(y, return_inverse=True)
        index = index.reshape(-1)
        stats = ClassStats()
        width = self.lda_.affine_matrix_.shape[0]
        size = blocked.block_rows(width)
        pending = np.empty((size, width), dtype=np.float32)
        kept = None if keep is None else np.empty((keep.size, width), dtype=np.float32)
        have = begin = 0
        for start in range(0, rows.size, _BLOCK):
            Z = self.project(X, rows[start:start + _BLOCK])
            if kept is not None:
                a, b = np.searchsorted(keep, [start, start + Z.shape[0]])
                kept[a:b] = Z[keep[a:b] - start]
            at = 0
            while at < Z.shape[0]:
                take = min(size - have, Z.shape[0] - at)
                pending[have:have + take] = Z[at:at + take]
                have, at = have + take, at + take
                if have == size or (start + at == rows.size):
                    stats.add(normalize_length(pending[:have])[0], index[begin:begin + have])
                    begin, have = begin + have, 0
        if stats.dim_ is None:
            raise ValueError("No stats accumulated, unable to estimate PLDA.")
        return stats, kept

    def adapted_plda(self, A, rows, mean):
        """A copy of ``plda_`` adapted to A[rows] centred on ``mean``, LDA-projected and
        length-normalised (ivector-adapt-plda, ``adapt_scales``; models.plda.PLDA.adapt)."""
        feats = np.empty((rows.size, self.lda_.affine_matrix_.shape[0]), dtype=np.float32)
        for start in range(0, rows.size, _BLOCK):
            block = np.asarray(A[rows[start:start + _BLOCK]], dtype=np.float32) - mean
            feats[start:start + _BLOCK] = normalize_length(self.lda_.transform(block))[0]
        within, between = self.adapt_scales
        return PLDA.from_params(self.plda_.mean_, self.plda_.transform_, self.plda_.psi_).adapt(
            feats, 1.0, within, between)

    def project(self, X, rows=None):
        """float32 LDA vectors A (x - mean) of X (or of its ``rows``), a block at a time."""
        rows = np.arange(X.shape[0]) if rows is None else rows
        out = np.empty((rows.size, self.lda_.affine_matrix_.shape[0]), dtype=np.float32)
        for start in range(0, rows.size, _BLOCK):
            block = np.asarray(X[rows[start:start + _BLOCK]], dtype=np.float32)
            out[start:start + _BLOCK] = self.lda_.transform(block - self.mean_)
        return out

    def _fit_dplda(self, X, rows, y):
        """The discriminative PLDA path over ``dplda_lambdas`` (largest first, each fit
        warm-started from the previous one) on a seeded grid of training trials."""
        n = int(self.enroll_utts)
        sets, test_rows, valid, is_target = sample_training_trials(
            y, n, random_state=self.random_state + 17)
        test = self._base_features(X[rows[test_rows]], 1, ("plda",))["plda"]
        if n == 0:
            enroll = test
        else:
            means = X[rows[sets]].astype(np.float64).mean(axis=1).astype(np.float32)
            enroll = self._base_features(means, n, ("plda",))["plda"]
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
                   cohort_counts=None, asnorm_top_n=100, dplda=None, plda_adapt=None):
        """A fitted pipeline from stored pieces: the float32 mean, the LDA affine matrix
        [A | b] (transform.mat), a PLDA (models.plda.PLDA), {system: Mahalanobis M} and,
        with an adaptation set, the adapted PLDA."""
        pipe = cls(lda_dim=np.asarray(lda_affine).shape[0],
                   systems=tuple(canonical(s) for s in systems), asnorm_top_n=asnorm_top_n)
        pipe.cohort_ = None if cohort is None else np.asarray(cohort, dtype=np.float32)
        pipe.cohort_counts_ = None if cohort is None else np.asarray(cohort_counts)
        if any(":" in s for s in pipe.systems) and pipe.cohort_ is None:
            raise ValueError("stored back-end lacks the AS-norm cohort")
        pipe.mean_ = np.asarray(mean, dtype=np.float32)
        pipe.lda_ = LDA(dim=pipe.lda_dim)
        pipe.lda_.affine_matrix_ = np.asarray(lda_affine, dtype=np.float32)
        pipe.plda_ = plda
        pipe.plda_adapt_ = plda_adapt
        pipe.dplda_ = {}
        if dplda is not None:
            pipe.dplda_lambda = float(getattr(dplda, "regularization", 0.0))
            pipe.dplda_ = {pipe.dplda_lambda: dplda}
        pipe.metrics_ = {}
        for name, M in (metrics or {}).items():
            metric = PaucMetric()
            metric.metric_ = np.asarray(M, dtype=np.float64)
            metric.components_ = metric_factor(metric.metric_)[0]
            pipe.metrics_[canonical(name)] = metric
        chosen = pipe._systems()
        missing = [s.key for s in chosen if s.head == "metric" and s.key not in pipe.metrics_]
        if missing or (pipe.plda_ is None and any(s.needs_plda and not s.needs_adapt
                                                  for s in chosen)):
            raise ValueError("stored back-end lacks the pieces of %s"
                             % ", ".join(missing or ["plda"]))
        if pipe.plda_adapt_ is None and any(s.needs_adapt for s in chosen):
            raise ValueError("stored back-end lacks the adapted PLDA")
        if any(s.head == "dplda" for s in chosen) and not pipe.dplda_:
            raise ValueError("stored back-end lacks the discriminative PLDA")
        return pipe

    # -- features and scores ------------------------------------------------------------------
    def _base_features(self, X, num_utts, keys, Z=None):
        """{system key: features} of raw vectors X for the systems ``keys`` (no AS-norm);
        ``Z``: their LDA vectors ``lda_.transform(X - mean_)`` when already made (X is then
        only read for raw-space systems, and may be None without them)."""
        X = None if X is None else np.asarray(X, dtype=np.float32)
        chosen = [system(k) for k in keys]
        spaces = {s.space for s in chosen}
        space = {}
        if "raw" in spaces:
            space["raw"] = normalize_length(X, scaleup=False)[0].astype(np.float64)
        if spaces - {"raw"}:
            Z = self.lda_.transform(X - self.mean_) if Z is None else Z
            if "lda" in spaces:
                space["lda"] = normalize_length(Z, scaleup=False)[0].astype(np.float64)
            if "latent" in spaces and self.plda_ is not None:
                space["latent"] = self.plda_.transform(normalize_length(Z)[0], num_utts)[0]
            if "latent_adapt" in spaces and getattr(self, "plda_adapt_", None) is not None:
                space["latent_adapt"] = self.plda_adapt_.transform(normalize_length(Z)[0],
                                                                   num_utts)[0]
        out = {}
        for s in chosen:
            if s.space not in space:
                continue
            feats = space[s.space]
            out[s.key] = self.metrics_[s.key].transform(feats) if s.head == "metric" else feats
        return out

    def features(self, X, num_utts=1, Z=None):
        """Per-system features of raw vectors X (num_utts: vectors averaged per row); with
        AS-norm systems also each row's cohort statistics under the key (system, "stats").
        ``Z``: the LDA vectors of X (``lda_.transform(X - mean_)``) when already made."""
        out = self._base_features(X, num_utts, self._bases(), Z)
        normed = sorted({base_system(s) for s in self.systems if ":" in s})
        if normed:
            if not hasattr(self, "_cohort_feats"):
                self._cohort_feats = self._base_features(self.cohort_, self.cohort_counts_,
                                                         normed)
            n = out[normed[0]].shape[0]
            rows = np.arange(n)
            for base in normed:
                C = self._cohort_feats[base]
                crow = np.arange(C.shape[0])

                def block(start, stop, base=base, C=C):
                    if system(base).head in ("dot", "metric"):  # every cohort row x every row
                        return self._grid_scores(base, C, out[base], start, stop).T
                    e = np.repeat(crow, stop - start)
                    t = np.tile(rows[start:stop], C.shape[0])
                    sc = self._pair_scores(base, C, out[base], e, t, self.cohort_counts_)
                    return sc.reshape(C.shape[0], stop - start).T

                out[base, "stats"] = blockwise_cohort_statistics(
                    block, n, min(int(self.asnorm_top_n), C.shape[0]), block=512)
        return out

    def _pair_scores(self, base, E, T, enroll_rows, test_rows, num_utts):
        found = system(base)
        head = found.head
        if head == "plda":
            plda = self.plda_adapt_ if found.needs_adapt else self.plda_
            return plda.score_pairs(E, T, enroll_rows, test_rows, num_utts)
        if head == "dplda":
            return self.dplda_model().score_pairs(E, T, enroll_rows, test_rows)
        if head == "dot":
            return blocked.row_dots(E, T, enroll_rows, test_rows)
        qe = np.einsum("ij,ij->i", E, E)
        qt = np.einsum("ij,ij->i", T, T)
        dots = blocked.row_dots(E, T, enroll_rows, test_rows)
        return _metric_scores(qe[enroll_rows], qt[test_rows], dots)

    def _grid_scores(self, base, E, T, start, stop):
        """``_pair_scores`` of every row of E against rows start:stop of T, as an
        (len(E), stop - start) matrix: the same products and element-wise operations, in the
        same order, as the pair path (so the same bits), without building, hashing and
        searching the len(E) x (stop - start) pair indices (the AS-norm cohort of a
        paper-sized fold: ~5,900 cohort rows x 512 rows a block, 80 blocks a side)."""
        block = T[start:stop]
        gram = E @ block.T
        if system(base).head == "dot":
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
        for col, name in enumerate(self.systems):
            base = base_system(name)
            if base not in raw:
                raw[base] = self._pair_scores(base, enroll_feats[base], test_feats[base],
                                              enroll_rows, test_rows, num_utts)
            if ":" in name:
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


def _centred_lda(lda):
    """The LDA of ``lda`` (fitted on raw vectors, which it centres on its own float32 mean)
    as the transform of vectors ALREADY centred on that mean: [A | 0], what transform-vec
    applies after subtract-vector-mean (the model directory's mean.vec + transform.mat)."""
    out = LDA(dim=lda.dim)
    linear = lda.affine_matrix_[:, :-1]
    out.affine_matrix_ = np.hstack([linear, np.zeros((linear.shape[0], 1), np.float32)])
    for name in ("components_", "eigenvalues_", "num_speakers_", "num_utts_"):
        if hasattr(lda, name):
            setattr(out, name, getattr(lda, name))
    return out


def float32_mean(X, rows):
    """The float32 mean of X[rows], summed in double a block at a time."""
    total = np.zeros(X.shape[1])
    for start in range(0, rows.size, _BLOCK):
        total += np.asarray(X[rows[start:start + _BLOCK]], dtype=np.float64).sum(axis=0)
    return (total / max(1, rows.size)).astype(np.float32)


def cohort_vectors(X, rows, y, seed):
    """(float32 raw vector of one seeded draw per speaker of y (sorted labels), counts of 1):
    the AS-norm cohort (see the module doc)."""
    labels, index = np.unique(y, return_inverse=True)
    index = index.reshape(-1)
    order = np.random.RandomState(seed).permutation(index.size)
    _, where = np.unique(index[order], return_index=True)
    first = order[where]                         # each speaker's first row in the draw
    return (np.asarray(X[np.asarray(rows)[first]], dtype=np.float32),
            np.ones(labels.size, dtype=np.int64))


def _metric_scores(sq_enroll, sq_test, dots):
    """-S = -(|a|^2 + |b|^2 - 2 a.b), S floored at 0: the metrics' score in their projected
    space from squared norms and dot products (per trial, or broadcast to a grid)."""
    return -np.maximum(sq_enroll + sq_test - 2.0 * dots, 0.0)
