"""One whole classical + pAUCMetric back-end, trained from raw vectors (numpy, no files).

The pipeline is recipes/etri's (egs/sre16/v2 without adaptation): subtract the training mean,
LDA (Kaldi's ivector-compute-lda), then

* ``cosine``:      unit-length LDA vectors, dot product (ivector-compute-dot-products);
* ``plda``:        length-normalised (sqrt(dim)) LDA vectors, Kaldi PLDA LLR with num_utts
                   (ivector-plda-scoring);
* ``pauc_lnorm``:  pAUCMetric (paper Alg. 1) on the unit-length LDA vectors ("length-norm");
* ``pauc_latent``: pAUCMetric on the PLDA latent vectors (Plda::TransformIvector with
                   num_utts, the paper's "PLDA-based" preprocessing, Section V-B).

Enrollment vectors may be speaker means of raw vectors (``num_utts`` > 1), as ETRI's.
Every score is -S (eq. 1) or an LLR: higher means more likely the same speaker.
"""

import numpy as np

from pauc_backend.models.lda import LDA
from pauc_backend.models.metric_learning import PaucMetric, metric_factor
from pauc_backend.models.plda import PLDA
from pauc_backend.models.preprocessing import normalize_length

SYSTEMS = ("cosine", "plda", "pauc_lnorm", "pauc_latent")

# The metric options of train-pauc-metric as shipped (models.metric_learning).
DEFAULT_METRIC_PARAMS = {}


class BackendPipeline:
    """Mean + LDA(lda_dim) + PLDA + the pAUCMetrics needed by ``systems``.

    ``metric_params``: keyword arguments of PaucMetric (alpha/beta/seed are set from here too).
    ``fit_hook(X_rows)``, if given, is called with the row indices of the training vectors
    (used by the tests to check that cross-fitting never trains on held-out speakers).
    """

    def __init__(self, lda_dim=100, systems=SYSTEMS, metric_params=None, alpha=0.0,
                 beta=0.01, random_state=0):
        self.lda_dim = lda_dim
        self.systems = systems
        self.metric_params = metric_params
        self.alpha = alpha
        self.beta = beta
        self.random_state = random_state

    def _metric(self):
        params = dict(DEFAULT_METRIC_PARAMS, **(self.metric_params or {}))
        params.update(alpha=self.alpha, beta=self.beta, random_state=self.random_state)
        return PaucMetric(**params)

    def fit(self, X, y):
        """Train every piece on raw vectors X (n, D) with speaker labels y."""
        X = np.asarray(X, dtype=np.float32)
        y = np.asarray(y)
        unknown = set(self.systems) - set(SYSTEMS)
        if unknown:
            raise ValueError("unknown system(s) %s (known: %s)"
                             % (", ".join(sorted(unknown)), ", ".join(SYSTEMS)))
        # float32, as compute-vector-mean writes it and subtract-vector-mean applies it
        self.mean_ = X.astype(np.float64).mean(axis=0).astype(np.float32)
        centred = X - self.mean_
        self.lda_ = LDA(dim=int(self.lda_dim)).fit(centred, y)
        Z = self.lda_.transform(centred)
        self.plda_ = None
        if {"plda", "pauc_latent"} & set(self.systems):
            self.plda_ = PLDA().fit(normalize_length(Z)[0], y)
        self.metrics_ = {}
        if "pauc_lnorm" in self.systems:
            self.metrics_["pauc_lnorm"] = self._metric().fit(
                normalize_length(Z, scaleup=False)[0], y)
        if "pauc_latent" in self.systems:
            latent = self.plda_.transform(normalize_length(Z)[0], 1)[0]
            self.metrics_["pauc_latent"] = self._metric().fit(latent, y)
        return self

    @classmethod
    def from_parts(cls, systems, mean, lda_affine, plda=None, metrics=None):
        """A fitted pipeline from stored pieces: the float32 mean, the LDA affine matrix
        [A | b] (transform.mat), a PLDA (models.plda.PLDA) and {system: Mahalanobis M}."""
        pipe = cls(lda_dim=np.asarray(lda_affine).shape[0], systems=tuple(systems))
        pipe.mean_ = np.asarray(mean, dtype=np.float32)
        pipe.lda_ = LDA(dim=pipe.lda_dim)
        pipe.lda_.affine_matrix_ = np.asarray(lda_affine, dtype=np.float32)
        pipe.plda_ = plda
        pipe.metrics_ = {}
        for name, M in (metrics or {}).items():
            metric = PaucMetric()
            metric.metric_ = np.asarray(M, dtype=np.float64)
            metric.components_ = metric_factor(metric.metric_)[0]
            pipe.metrics_[name] = metric
        missing = [s for s in pipe.systems if s.startswith("pauc") and s not in pipe.metrics_]
        if missing or (pipe.plda_ is None and {"plda", "pauc_latent"} & set(pipe.systems)):
            raise ValueError("stored back-end lacks the pieces of %s"
                             % ", ".join(missing or ["plda"]))
        return pipe

    def features(self, X, num_utts=1):
        """Per-system feature matrices of raw vectors X (num_utts: vectors averaged per row)."""
        X = np.asarray(X, dtype=np.float32)
        Z = self.lda_.transform(X - self.mean_)
        out = {}
        unit = normalize_length(Z, scaleup=False)[0].astype(np.float64)
        if "cosine" in self.systems:
            out["cosine"] = unit
        if "pauc_lnorm" in self.systems:
            out["pauc_lnorm"] = self.metrics_["pauc_lnorm"].transform(unit)
        if self.plda_ is not None:
            U = self.plda_.transform(normalize_length(Z)[0], num_utts)[0]
            if "plda" in self.systems:
                out["plda"] = U
            if "pauc_latent" in self.systems:
                out["pauc_latent"] = self.metrics_["pauc_latent"].transform(U)
        return out

    def score(self, enroll_feats, test_feats, enroll_rows, test_rows, num_utts=1):
        """(n_trials, len(systems)) scores, columns in ``self.systems`` order, of the trials
        (enroll_feats[enroll_rows], test_feats[test_rows]); feats come from ``features``."""
        enroll_rows = np.asarray(enroll_rows, dtype=np.intp)
        test_rows = np.asarray(test_rows, dtype=np.intp)
        out = np.empty((enroll_rows.size, len(self.systems)))
        for col, system in enumerate(self.systems):
            E, T = enroll_feats[system], test_feats[system]
            if system == "plda":
                out[:, col] = self.plda_.score_pairs(E, T, enroll_rows, test_rows, num_utts)
            elif system == "cosine":
                out[:, col] = _row_dots(E, T, enroll_rows, test_rows)
            else:  # -S = -(|a|^2 + |b|^2 - 2 a.b) in the metric's projected space
                qe = np.einsum("ij,ij->i", E, E)
                qt = np.einsum("ij,ij->i", T, T)
                dots = _row_dots(E, T, enroll_rows, test_rows)
                out[:, col] = -np.maximum(qe[enroll_rows] + qt[test_rows] - 2.0 * dots, 0.0)
        return out


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
