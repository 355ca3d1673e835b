"""Linear score calibration and fusion by prior-weighted logistic regression (BOSARIS).

The model is llr = sum_k w_k s_k + b. It minimises BOSARIS's prior-weighted cross-entropy
(``train_binary_classifier`` / ``train_linear_fuser``, the objective behind the paper's Table X):

    C(w, b) = pi/N_tar sum_tar log(1 + e^{-(w.s + b + logit pi)})
            + (1 - pi)/N_non sum_non log(1 + e^{w.s + b + logit pi}) + lambda/2 ||w||^2

(natural logs; at pi = 0.5 and lambda = 0, C / log 2 is the Cllr of the calibrated scores). C is
convex; we minimise it by Newton's method with a backtracking line search on internally
standardised scores, until the Newton step is below ``tol`` (relative to the parameters).
Without regularisation the minimum does not exist when the training scores are (quasi-)linearly
separable; that raises SeparableScoresError.
"""

import numpy as np

__all__ = ["LinearCalibration", "LinearFusion", "SeparableScoresError",
           "prior_weighted_cross_entropy"]


class SeparableScoresError(ValueError):
    """The unregularised calibration has no minimum: target and non-target scores separate."""


def _logit(p):
    return float(np.log(p) - np.log1p(-p))


def _sigmoid(x, out):
    """1 / (1 + e^{-x}) into ``out`` without overflow, from e = exp(-|x|) (what
    scipy.special.expit computes; importing scipy.special costs every tool 0.2 s)."""
    e = np.exp(-np.abs(x))
    return np.divide(np.where(x >= 0, 1.0, e), 1.0 + e, out=out)


def prior_weighted_cross_entropy(weights, offset, scores, labels, prior=0.5, regularization=0.0):
    """C(w, b) and its gradient with respect to (w_1..w_K, b); ``scores`` is (n,) or (n, K).
    Summed over blocks of trials, so its temporaries are a block's."""
    scores = np.asarray(scores, dtype=np.float64)
    scores = scores.reshape(len(scores), -1)
    weights = np.asarray(weights, dtype=np.float64).ravel()
    labels = np.asarray(labels).astype(bool)
    n_tar = int(np.count_nonzero(labels))
    weight = (prior / n_tar, (1.0 - prior) / (labels.size - n_tar))
    value, gradient = 0.5 * regularization * (weights @ weights), np.zeros(weights.size + 1)
    for start in range(0, labels.size, _BLOCK):
        part_labels = labels[start:start + _BLOCK]
        a = np.where(part_labels, weight[0], weight[1])
        part = scores[start:start + _BLOCK]
        # sign * (s w + b + logit(prior)), a softplus(-m) and -a sign sigmoid(-m); the signs
        # are negations where=, not arrays
        margin = part @ weights
        margin += offset
        margin += _logit(prior)
        np.negative(margin, out=margin, where=~part_labels)
        term = np.logaddexp(0.0, -margin)
        term *= a
        value += np.sum(term)
        r = _sigmoid(-margin, out=term)
        r *= a
        np.negative(r, out=r, where=part_labels)
        gradient[:-1] += part.T @ r
        gradient[-1] += np.sum(r)
    gradient[:-1] += regularization * weights
    return float(value), gradient


_BLOCK = 1 << 18     # trials per block of the Newton sums (2 MB per float64 column)


def _standardised(scores, mean, std):
    """z = [(s - mean) / std, 1] of a block of trials, (n, K + 1)."""
    z = np.empty((scores.shape[0], scores.shape[1] + 1))
    np.divide(scores - mean, std, out=z[:, :-1])
    z[:, -1] = 1.0
    return z


def _block_terms(theta, z, a, labels, shift, derivatives):
    """One block's share of the prior-weighted cross-entropy of ``LinearFusion.fit`` in the
    standardised coordinates z (``_standardised``), a the per-trial class weights: (C,
    gradient, Hessian), or (C,)."""
    # softplus(-m) = max(-m, 0) + log1p(e) and sigmoid(-m) from one e = exp(-|m|), m the
    # margin times the label sign (a negation where= non-target).
    margin = z @ theta
    margin += shift
    np.negative(margin, out=margin, where=~labels)
    e = np.exp(-np.abs(margin))
    loss = np.log1p(e)
    loss += np.maximum(-margin, 0.0)
    value = a @ loss
    if not derivatives:
        return (value,)
    p = np.where(margin >= 0, e, 1.0)
    p /= 1.0 + e
    ap = a * p
    np.negative(ap, out=ap, where=labels)                     # -sign a p
    gradient = z.T @ ap
    np.negative(ap, out=ap, where=labels)
    ap *= 1.0 - p                                             # a p (1 - p)
    return value, gradient, (z.T * ap) @ z


class LinearFusion:
    """Fuse K score columns into one LLR: llr = scores @ weights_ + offset_ (BOSARIS fusion).

    ``prior`` is the target prior pi of the objective (0.5 by default; 0.01 for the paper's
    operating point); ``regularization`` is lambda, an L2 penalty on the weights that makes
    separable training data solvable.
    """

    _expected_columns = None

    def __init__(self, prior=0.5, regularization=0.0, max_iter=100, tol=1e-10):
        self.prior = prior
        self.regularization = regularization
        self.max_iter = max_iter
        self.tol = tol

    # -- fitting -------------------------------------------------------------------------------
    def _validate(self, scores, labels):
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim == 1:
            scores = scores[:, None]
        if scores.ndim != 2 or scores.shape[0] == 0:
            raise ValueError("scores must be a non-empty (n,) or (n, K) array, got shape %s"
                             % (scores.shape,))
        if self._expected_columns is not None and scores.shape[1] != self._expected_columns:
            raise ValueError("%s takes one score per trial, got %d columns (use LinearFusion)"
                             % (type(self).__name__, scores.shape[1]))
        labels = np.asarray(labels)
        if labels.shape != (scores.shape[0],):
            raise ValueError("labels must have shape (%d,), got %s" % (scores.shape[0],
                                                                       labels.shape))
        if labels.dtype != bool:
            if not np.all((labels == 0) | (labels == 1)):
                raise ValueError("labels must be boolean or 0/1")
            labels = labels.astype(bool)
        if not np.isfinite(scores).all():
            raise ValueError("scores contain NaN or infinite values")
        n_tar = int(np.count_nonzero(labels))
        if n_tar == 0 or n_tar == labels.size:
            raise ValueError("calibration needs both target and non-target trials (got %d "
                             "target, %d non-target)" % (n_tar, labels.size - n_tar))
        if not 0.0 < self.prior < 1.0:
            raise ValueError("prior must lie strictly between 0 and 1, got %r" % (self.prior,))
        if self.regularization < 0:
            raise ValueError("regularization must be >= 0, got %r" % (self.regularization,))
        return scores, labels

    def _check_separation(self, projection, labels):
        """Raise if the 1-D projection of the scores puts every target at or above every
        non-target (or below): then the weights can grow without bound."""
        if self.regularization > 0 or np.ptp(projection) == 0:
            return
        tar, non = projection[labels], projection[~labels]
        if tar.min() >= non.max() or tar.max() <= non.min():
            raise SeparableScoresError(
                "the training scores are (quasi-)linearly separable: every target score lies "
                "on one side of every non-target score, so the unregularised calibration has no "
                "finite solution (its weights grow without bound); use a regularization > 0 "
                "(--regularization)")

    def fit(self, scores, labels):
        """Learn ``weights_`` and ``offset_`` from scores (n,) or (n, K) and boolean labels."""
        scores, labels = self._validate(scores, labels)
        num_cols = scores.shape[1]
        mean, std = scores.mean(axis=0), scores.std(axis=0)
        if np.any(std == 0):
            raise ValueError("score column %d is constant (%.7g) over all trials; it cannot be "
                             "calibrated" % (int(np.argmax(std == 0)) + 1,
                                             mean[np.argmax(std == 0)]))
        for k in range(num_cols):        # standardising is monotone: same answer
            self._check_separation(scores[:, k], labels)

        weight = (self.prior / np.count_nonzero(labels),
                  (1.0 - self.prior) / np.count_nonzero(~labels))
        shift = _logit(self.prior)
        penalty = np.append(self.regularization / std ** 2, 0.0)

        def block(start):
            part_labels = labels[start:start + _BLOCK]
            return (_standardised(scores[start:start + _BLOCK], mean, std),
                    np.where(part_labels, weight[0], weight[1]), part_labels)

        # One block (up to _BLOCK trials) is standardised once for all Newton steps; more are
        # standardised at each step, so the temporaries stay a block's, not n-sized.
        single = block(0) if scores.shape[0] <= _BLOCK else None

        def evaluate(theta, derivatives=True):
            value, gradient = 0.0, np.zeros(num_cols + 1)
            hessian = np.zeros((num_cols + 1, num_cols + 1))
            for start in range(0, scores.shape[0], _BLOCK):
                part = _block_terms(theta, *(single or block(start)), shift, derivatives)
                value += part[0]
                if derivatives:
                    gradient += part[1]
                    hessian += part[2]
            value += 0.5 * theta @ (penalty * theta)
            if not derivatives:
                return value
            return value, gradient + penalty * theta, hessian + np.diag(penalty)

        theta = np.zeros(num_cols + 1)
        value, gradient, hessian = evaluate(theta)
        converged = False
        n_iter = 0
        while n_iter < self.max_iter:
            step = -np.linalg.lstsq(hessian, gradient, rcond=1e-13)[0]
            slope = gradient @ step
            if not slope < 0:
                if not np.any(gradient):
                    converged = True
                    break
                step, slope = -gradient, -(gradient @ gradient)
            final = np.linalg.norm(step) <= self.tol * max(1.0, np.linalg.norm(theta))
            # The full step is evaluated with derivatives (it is usually accepted); when the
            # predicted decrease is within rounding of C the line search cannot judge a step,
            # but there the quadratic model is exact, so the full step is taken.
            t = 1.0
            new = evaluate(theta + step)
            if not final and -slope > 1e-12 * value and not new[0] <= value + 1e-4 * slope:
                while t >= 1e-12:
                    t *= 0.5
                    if evaluate(theta + t * step, False) <= value + 1e-4 * t * slope:
                        new = evaluate(theta + t * step)
                        break
            n_iter += 1
            if t < 1e-12:
                break
            theta = theta + t * step
            value, gradient, hessian = new
            if final:
                converged = True
                break
            if num_cols > 1:
                self._check_separation(scores @ (theta[:num_cols] / std), labels)
            if not np.all(np.isfinite(theta)) or np.linalg.norm(theta[:num_cols]) > 1e8:
                break
        if not converged:
            raise SeparableScoresError(
                "calibration did not converge in %d Newton iterations (gradient norm %.3g, "
                "weights %s); the training scores may be (quasi-)separable: use a "
                "regularization > 0 (--regularization)"
                % (n_iter, np.linalg.norm(gradient), np.array2string(theta[:num_cols] / std)))

        self.weights_ = theta[:num_cols] / std
        self.offset_ = float(theta[num_cols] - self.weights_ @ mean)
        self.n_iter_ = n_iter
        self.n_features_in_ = num_cols
        self.objective_, grad = prior_weighted_cross_entropy(
            self.weights_, self.offset_, scores, labels, self.prior, self.regularization)
        self.grad_norm_ = float(np.linalg.norm(grad))
        return self

    # -- applying ------------------------------------------------------------------------------
    def transform(self, scores):
        """Calibrated LLRs (n,) of scores (n, K) (or (n,) when K = 1)."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim == 1 and self.weights_.size == 1:
            scores = scores[:, None]
        if scores.ndim != 2 or scores.shape[1] != self.weights_.size:
            raise ValueError("the model fuses %d score columns, got scores of shape %s"
                             % (self.weights_.size, scores.shape))
        return scores @ self.weights_ + self.offset_

    @classmethod
    def from_params(cls, weights, offset, prior=0.5):
        """A fitted model from stored parameters (as read back from a calibration file)."""
        model = cls(prior=prior)
        model.weights_ = np.asarray(weights, dtype=np.float64).ravel()
        model.offset_ = float(offset)
        model.n_features_in_ = model.weights_.size
        return model


class LinearCalibration(LinearFusion):
    """Affine calibration of one score: llr = weights_[0] * score + offset_ (BOSARIS)."""

    _expected_columns = 1
