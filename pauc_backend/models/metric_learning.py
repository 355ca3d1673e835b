"""pAUCMetric and TripletMetric back-ends (paper Sections III-V, Alg. 1), metric-learn style.

Both learn a PSD Mahalanobis matrix M for the score -S(x1, x2; M) = -(x1 - x2)^T M (x1 - x2)
(eq. 1) by mini-batch PPA from M = I. Three additions make the defaults work without tuning;
each can be switched off to get the paper's algorithm exactly (``scale=1``,
``average=False``, ``validation_fraction=0``, ``eta=10``):

* scale: features are multiplied internally by sqrt(2 / c2), c2 = mean squared distance
  between two training vectors, so delta, eta and mu mean the same for unit-length vectors
  (c2 = 2) and PLDA-latent ones (c2 ~ 2d); the returned M is in the caller's units.
* averaging: the returned metric is the running mean of the PPA iterates (Polyak-Ruppert),
  which removes most of the mini-batch noise of eq. 12-13 at no cost (still PSD: a mean of
  PSD matrices).
* early stopping (off by default): held-out training speakers are scored every
  ``eval_every`` iterations and the iteration with the best held-out criterion is kept;
  ``refit`` then trains on all speakers for that many iterations. It is off because the
  usual preprocessing (LDA, PLDA) is trained on the same speakers, so held-out training
  speakers favour M = I: on ETRI their pAUC falls while that of new speakers rises.
"""

import math
import signal
import threading

import numpy as np

from pauc_backend import metrics
from pauc_backend.models import blocked, ppa


def group_by_speaker(y):
    """(labels, index arrays) of the speakers in y with >= 2 vectors, and the number skipped."""
    y = np.asarray(y)
    labels, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(counts)])
    groups = [order[bounds[i]:bounds[i + 1]] for i in range(labels.size) if counts[i] >= 2]
    kept = labels[counts >= 2]
    return kept, groups, int(np.sum(counts < 2))


def _centred_sum_of_squares(X, rows=None):
    """``sum_i |x_i - mean|^2`` in double, from blocks (no float64 copy of the table)."""
    count = blocked.num_rows(X, rows)
    total = np.zeros(X.shape[1])
    for _, _, block in blocked.iter_blocks(X, rows):
        total += block.sum(axis=0)
    mean = total / count
    out = 0.0
    for _, _, block in blocked.iter_blocks(X, rows):
        block -= mean
        out += float(np.einsum("ij,ij->", block, block))
    return out


def metric_factor(M):
    """(A, eigvals, eigvecs) with A^T A = M: A = diag(sqrt(lambda)) U^T."""
    w, U = np.linalg.eigh(0.5 * (M + M.T))
    w = np.maximum(w, 0.0)
    return (U * np.sqrt(w)).T, w, U


def all_pairs_scores(Y, labels, pairs=None):
    """Target and non-target scores -S over all pairs of rows of Y (i < j)."""
    D = ppa.squared_distances(Y)
    if pairs is None:
        a, b = np.triu_indices(Y.shape[0], k=1)
        same = labels[a] == labels[b]
        pairs = (a[same], b[same], a[~same], b[~same])
    ta, tb, na, nb = pairs
    return -D[ta, tb], -D[na, nb]


class _PPAMetric:
    """Shared machinery of PaucMetric and TripletMetric; subclasses define ``_batch``."""

    _loss = None

    def __init__(self, alpha=0.0, beta=0.01, delta=1.5, gamma=0.5, mu=1e-3, eta=1.0,
                 batch_size=500, num_iters=1000, scale="auto", average=True,
                 validation_fraction=0.0,
                 eval_every=10, patience=30, refit=True, criterion="pauc",
                 max_validation_vectors=1000, random_state=0, callback=None):
        self.alpha = alpha
        self.beta = beta
        self.delta = delta
        self.gamma = gamma
        self.mu = mu
        self.eta = eta
        self.batch_size = batch_size
        self.num_iters = num_iters
        self.scale = scale
        self.average = average
        self.validation_fraction = validation_fraction
        self.eval_every = eval_every
        self.patience = patience
        self.refit = refit
        self.criterion = criterion
        self.max_validation_vectors = max_validation_vectors
        self.random_state = random_state
        self.callback = callback

    _PARAMS = ("alpha", "beta", "delta", "gamma", "mu", "eta", "batch_size", "num_iters",
               "scale", "average", "validation_fraction", "eval_every", "patience", "refit",
               "criterion", "max_validation_vectors", "random_state", "callback")

    def get_params(self, deep=True):
        """Constructor arguments (scikit-learn convention)."""
        return {name: getattr(self, name) for name in self._PARAMS}

    def set_params(self, **params):
        """Set constructor arguments; returns self (scikit-learn convention)."""
        for name, value in params.items():
            if name not in self._PARAMS:
                raise ValueError("unknown parameter %r" % name)
            setattr(self, name, value)
        return self

    # -- checks ------------------------------------------------------------------------------
    def check_params(self):
        """ValueError naming the first bad hyper-parameter."""
        if not 0.0 <= self.alpha < self.beta <= 1.0:
            raise ValueError("need 0 <= alpha < beta <= 1 (got alpha=%g, beta=%g)"
                             % (self.alpha, self.beta))
        for name in ("delta", "gamma", "mu"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError("%s must be finite and >= 0 (got %g)" % (name, value))
        if not (self.eta > 0 and math.isfinite(self.eta)):
            raise ValueError("eta must be finite and > 0 (got %g)" % self.eta)
        if int(self.batch_size) < 2:
            raise ValueError("batch size must be >= 2 speakers (got %d)" % self.batch_size)
        if int(self.num_iters) < 1:
            raise ValueError("num_iters must be >= 1 (got %d)" % self.num_iters)
        if not 0.0 <= self.validation_fraction < 1.0:
            raise ValueError("validation_fraction must be in [0, 1) (got %g)"
                             % self.validation_fraction)
        if int(self.eval_every) < 1:
            raise ValueError("eval_every must be >= 1 (got %d)" % self.eval_every)
        if int(self.patience) < 0:
            raise ValueError("patience must be >= 0 (got %d)" % self.patience)
        if self.criterion not in ("pauc", "eer"):
            raise ValueError("criterion must be 'pauc' or 'eer' (got %r)" % self.criterion)
        if not (self.scale == "auto" or (isinstance(self.scale, (int, float))
                                          and self.scale > 0)):
            raise ValueError("scale must be 'auto' or a positive number (got %r)" % self.scale)

    def _check_data(self, X, y, rows=None):
        """X as given (float32 or float64, never copied; other types become float64)."""
        X = np.asarray(X)
        if not np.issubdtype(X.dtype, np.floating):
            X = X.astype(np.float64)
        count = X.shape[0] if rows is None or X.ndim != 2 else len(rows)
        if X.ndim != 2 or count == 0 or X.shape[1] == 0:
            raise ValueError("expected a non-empty 2-D array of vectors, got shape %s"
                             % ((count,) + X.shape[1:],))
        if len(y) != count:
            raise ValueError("%d vectors but %d labels" % (count, len(y)))
        if blocked.first_nonfinite(X, rows) is not None:
            raise ValueError("the vectors contain NaN or Inf")
        return X

    # -- training ----------------------------------------------------------------------------
    def _objective(self, stats, w):
        """Eq. 7 with eq. 8 on the batch: hinge + gamma/J sum S_j + mu (tr M - logdet M)."""
        value = stats.hinge + self.gamma * stats.target_mean
        if self.mu > 0:
            value += self.mu * (np.sum(w) - np.sum(np.log(w)))
        return float(value)

    def _run(self, take, d, groups, num_iters, rng, validation=None, stage="train"):
        """PPA iterations from M = I; returns (M, best_iteration, history). ``take(idx)``
        gives the scaled float64 vectors of positions idx (one mini-batch at a time)."""
        s = min(int(self.batch_size), len(groups))
        M = np.eye(d)
        M_mean = np.zeros((d, d))
        w, U = np.ones(d), np.eye(d)
        best = (-np.inf, 0, M)
        history = []
        since_best = 0
        for it in range(1, num_iters + 1):
            rows = ppa.sample_batch(groups, s, rng)
            Xb = take(rows)
            Yb = Xb @ (U * np.sqrt(w))
            stats = self._batch(Xb, Yb)
            objective = self._objective(stats, w)
            M, w, U = ppa.ppa_step(M, stats.gradient, self.eta, self.mu)
            M_mean += (M - M_mean) / it
            record = {"iteration": it, "objective": objective, "train_pauc": stats.pauc,
                      "stage": stage}
            if validation is not None and (it % self.eval_every == 0 or it == num_iters):
                M_out = M_mean if self.average else M
                value, eer, pauc = self._validate(validation, M_out)
                record.update(validation=value, validation_eer=eer, validation_pauc=pauc)
                if value > best[0]:
                    best = (value, it, M_out.copy())
                    since_best = 0
                else:
                    since_best += 1
            history.append(record)
            if self.callback is not None:
                self.callback(record)
            if validation is not None and self.patience and since_best >= self.patience:
                break
        if validation is None:
            return (M_mean if self.average else M), num_iters, history
        return best[2], best[1], history

    def _validate(self, validation, M):
        Xv, pairs = validation
        A, _, _ = metric_factor(M)
        tar, non = all_pairs_scores(Xv @ A.T, None, pairs)
        eer = metrics.eer(tar, non)
        pauc = metrics.pauc(tar, non, self.alpha, self.beta)
        return (pauc if self.criterion == "pauc" else -eer), eer, pauc

    def fit(self, X, y, rows=None):
        """Learn M from vectors X (n x d) with speaker labels y (Alg. 1); returns self.

        ``rows`` (optional): the rows of X to use, in this order (y labels those rows).
        X is held as given (float32 as read is kept float32) and never copied whole: the
        scale is computed in double from blocks, and each mini-batch (and the held-out set)
        is gathered and upcast on its own, ``float64(x) * sqrt(factor)``, the same numbers a
        float64 copy of the scaled table would hold.
        """
        self.check_params()
        if rows is not None:
            rows = np.asarray(rows, dtype=np.intp)
        X = self._check_data(X, y, rows)
        y = np.asarray(y)
        labels, groups, skipped = group_by_speaker(y)
        self.num_skipped_speakers_ = skipped
        self.num_speakers_ = len(groups)
        if len(groups) < 2:
            raise ValueError("need at least 2 speakers with >= 2 vectors each (found %d)"
                             % len(groups))
        if self.scale == "auto":
            c2 = 2.0 * _centred_sum_of_squares(X, rows) / (len(y) - 1)
            if not c2 > 0:
                raise ValueError("all vectors are identical; cannot learn a metric")
            factor = 2.0 / c2
        else:
            factor = float(self.scale)
        self.scale_ = factor
        root = math.sqrt(factor)

        def take(idx):
            return X[idx if rows is None else rows[idx]].astype(np.float64) * root

        d = X.shape[1]
        rng = np.random.default_rng(self.random_state)
        num_val = int(round(self.validation_fraction * len(groups)))
        self.history_ = []
        if self.validation_fraction > 0 and num_val >= 2 and len(groups) - num_val >= 2:
            perm = rng.permutation(len(groups))
            val_groups = [groups[i] for i in perm[:num_val]]
            train_groups = [groups[i] for i in perm[num_val:]]
            val_rows = self._validation_rows(val_groups, rng)
            val_labels = np.repeat(np.arange(len(val_groups)),
                                   [len(r) for r in val_rows])
            a, b = np.triu_indices(val_labels.size, k=1)
            same = val_labels[a] == val_labels[b]
            validation = (take(np.concatenate(val_rows)), (a[same], b[same], a[~same], b[~same]))
            M, best_iter, history = self._run(take, d, train_groups, int(self.num_iters), rng,
                                              validation, stage="validate")
            self.history_ += history
            self.best_iteration_ = best_iter
            self.best_validation_ = max(h["validation"] for h in history if "validation" in h)
            if self.refit:
                M, _, history = self._run(take, d, groups, best_iter, rng, stage="refit")
                self.history_ += history
        else:
            M, best_iter, self.history_ = self._run(take, d, groups, int(self.num_iters), rng)
            self.best_iteration_ = best_iter
        self.batch_size_ = min(int(self.batch_size), len(groups))
        self.metric_ = M * factor
        self.components_, _, _ = metric_factor(self.metric_)
        return self

    def _validation_rows(self, val_groups, rng):
        per_speaker = max(2, self.max_validation_vectors // max(1, len(val_groups)))
        return [g if len(g) <= per_speaker else np.sort(rng.choice(g, per_speaker,
                                                                   replace=False))
                for g in val_groups]

    # -- metric-learn API --------------------------------------------------------------------
    def get_mahalanobis_matrix(self):
        """The learned M (d x d, PSD), in the units of the training vectors."""
        return self.metric_

    def transform(self, X):
        """x -> A x with A^T A = M, so squared Euclidean distances become S (eq. 18)."""
        return np.asarray(X, dtype=np.float64) @ self.components_.T

    def pair_distance(self, pairs):
        """S(x1, x2; M) (eq. 1, squared) for pairs of shape (n, 2, d).

        metric-learn returns the square root; the squared form is the paper's and is
        monotone in it, so rankings, EER and pAUC are the same.
        """
        pairs = np.asarray(pairs, dtype=np.float64)
        diff = self.transform(pairs[:, 0] - pairs[:, 1])
        return np.sum(diff * diff, axis=1)

    def pair_score(self, pairs):
        """-S(x1, x2; M): higher means more likely the same speaker."""
        return -self.pair_distance(pairs)


def fit_at_once(metrics, features, y):
    """Each of ``metrics`` fitted on its ``features`` (labels ``y``), all at once: one thread
    each, the last in this one (numpy's products and eigendecompositions run outside the
    interpreter's lock, so two metrics use two cores; each has its own seed: the same
    metrics as one after the other). An error of any is raised here; returns the metrics."""
    results = [None] * len(metrics)

    def fit_one(i):
        try:
            results[i] = metrics[i].fit(features[i], y)
        except BaseException as err:          # re-raised in the calling thread
            results[i] = err

    threads = [threading.Thread(target=fit_one, args=(i,), daemon=True,
                                name="pauc-metric-%d" % i) for i in range(len(metrics) - 1)]
    # signals blocked in the threads (they inherit the mask): the main thread, where Python
    # runs the handlers, takes them (pauc_backend.heartbeat says why)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        for thread in threads:
            thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    fit_one(len(metrics) - 1)
    for thread in threads:
        thread.join()
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


class PaucMetric(_PPAMetric):
    """pAUCMetric: maximise the pAUC over FPR [alpha, beta] of same/different-speaker pairs
    (eqs. 5-13) with tetrad constraints, by mini-batch PPA (Alg. 1)."""

    _loss = "pauc"

    def _batch(self, Xb, Yb):
        return ppa.pauc_batch(Xb, Yb, self.alpha, self.beta, self.delta, self.gamma)


class TripletMetric(_PPAMetric):
    """TripletMetric (Section III-D): the same machinery with the triplet constraints of
    eq. 17 (anchor, its partner, every other speaker's vector as negative)."""

    _loss = "triplet"

    def _batch(self, Xb, Yb):
        return ppa.triplet_batch(Xb, Yb, self.delta, self.gamma)
