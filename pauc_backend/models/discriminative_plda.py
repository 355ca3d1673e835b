"""Discriminative PLDA: Kaldi's PLDA score written as a full quadratic form and fine-tuned by
prior-weighted logistic regression, starting from (and pulled towards) the PLDA solution.

Kaldi's PLDA log-likelihood ratio (``Plda::LogLikelihoodRatio``, models.plda.score_pairs) of an
enrollment e (latent vector of ``TransformIvector`` with num_utts = n) and a test t is

    s(e, t) = e' Q1 e + t' Q2 t + 2 e' P t + c                                         (1)

with diagonal Q1 = -1/2 diag(g^2 v), Q2 = 1/2 diag(1/(1 + psi) - v), P = 1/2 diag(g v) and
c = 1/2 (sum log v + sum log(1 + psi)), where g = n psi / (n psi + 1) and
v = 1 / (1 + psi / (n psi + 1)). For n = 1, Q1 = Q2: the symmetric form
s = x1'Q x1 + x2'Q x2 + 2 x1'P x2 + c of pairwise discriminative PLDA training (Burget et al.,
ICASSP 2011; Cumani, Brummer, Burget, Laface et al., IEEE TASLP 21(5) 2013).

Here Q1, Q2 and P are FULL d x d matrices, initialised at (1), and trained by minimising

    J(theta) = C_pi(theta) / H(pi) + lambda/2 ||theta - theta0||^2 / ||theta0||^2         (2)

C_pi is BOSARIS's prior-weighted cross-entropy at the target prior pi (0.01 by default; the
objective of models.calibration) over training trials, H(pi) = -pi log pi - (1-pi) log(1-pi)
is its value for a system that always says LLR = 0 (so C_pi / H(pi) is a normalised Cllr_pi),
theta0 = (Q1, Q2, P) of the PLDA and the offset c is not penalised. J is convex in theta (s is
linear in it), so the minimum does not depend on the starting point; it is found by L-BFGS
(scipy) with the closed-form gradient

    dC/dQ1 = sum_k r_k e_k e_k',  dC/dQ2 = sum_k r_k t_k t_k',  dC/dP = 2 sum_k r_k e_k t_k',
    dC/dc = sum_k r_k,  r_k = dC/ds_k

computed per distinct enrollment / test row (E' diag(.) E) and through a sparse trial matrix
(E' R T), so one evaluation costs O(#rows d^2 + #trials d), never a loop over trials. With
``symmetric`` (single-vector trials in both directions) Q1 = Q2 and P is symmetric: the
parameters are (Q, P) and the score uses their symmetric parts.
"""

import math

import numpy as np

from pauc_backend.models import blocked

__all__ = ["DiscriminativePLDA", "DPLDA_LAMBDAS", "plda_quadratic_form",
           "sample_training_trials"]

# The L2 weights of the pull to the PLDA tried by the automatic back-end's cross-fitting
# (models.auto.params dplda_lambdas, models.backend_pipeline).
DPLDA_LAMBDAS = (300.0, 100.0, 30.0, 10.0)


def plda_quadratic_form(plda, num_utts=1):
    """(Q1, Q2, P, c) of eq. (1): the PLDA's LLR for an enrollment of ``num_utts`` vectors."""
    psi = np.asarray(plda.psi_, dtype=np.float64)
    n = float(num_utts)
    gain = n * psi / (n * psi + 1.0)
    inv_var = 1.0 / (1.0 + psi / (n * psi + 1.0))
    q1 = np.diag(-0.5 * gain * gain * inv_var)
    q2 = np.diag(0.5 * (1.0 / (1.0 + psi) - inv_var))
    p = np.diag(0.5 * gain * inv_var)
    c = 0.5 * (np.log(inv_var).sum() + np.log1p(psi).sum())
    return q1, q2, p, float(c)


def _entropy(prior):
    return -prior * math.log(prior) - (1.0 - prior) * math.log1p(-prior)


def sample_training_trials(y, enroll_utts=0, max_enroll=250, max_test=800, random_state=0):
    """A grid of trials among training vectors with speaker labels y, for fitting eq. (2).

    Speakers are visited in a random (seeded) order and each gives at most its share of the
    ``max_test`` test vectors (and, with enroll_utts = n, of the ``max_enroll`` enrollment
    sets: disjoint random sets of n of its other vectors, averaged by the caller and scored
    with num_utts = n). Every enrollment meets every test vector, except a vector inside the
    set; with enroll_utts = 0 the enrollments ARE the test vectors and each unordered pair is
    one trial (the upper triangle). A grid keeps the objective in dense matrix products.
    A share is at least 2 test vectors (a target trial needs two), so at most ``max_test``
    speakers take part, the first of that order: the grid then has at most 2 x max_test
    test vectors, whatever the number of training speakers (at the paper's 5,900 speakers
    of a fold it had 11,800, a 139 M-trial grid, 5.7 s and several GB an evaluation).
    Returns (enroll_sets (m, n) rows of y, test_rows (k,), valid (m, k) bool,
    is_target (m, k) bool).
    """
    y = np.asarray(y)
    rng = np.random.default_rng(random_state)
    _, spk = np.unique(y, return_inverse=True)
    spk = spk.reshape(-1)
    order = np.argsort(spk, kind="stable")
    counts = np.bincount(spk)
    starts = np.concatenate([[0], np.cumsum(counts)])
    n = int(enroll_utts)
    usable = np.flatnonzero(counts > max(1, n))
    if usable.size < 2:
        raise ValueError("need at least 2 training speakers with more than %d vectors"
                         % max(1, n))
    visited = rng.permutation(usable)[:max(2, int(max_test))]
    per_test = max(2, -(-int(max_test) // visited.size))
    per_enroll = max(1, -(-int(max_enroll) // visited.size))
    tests, sets = [], []
    for s in visited:                                 # one step per speaker
        mine = rng.permutation(order[starts[s]:starts[s + 1]])
        if n == 0:
            tests.append(mine[:per_test])
            continue
        m = min(per_enroll, (mine.size - 1) // n)
        sets.append(mine[:m * n].reshape(m, n))
        tests.append(mine[m * n:m * n + per_test])
    test_rows = np.concatenate(tests)
    if n == 0:
        sets = test_rows[:, None]
        valid = np.triu(np.ones((test_rows.size, test_rows.size), bool), k=1)
    else:
        sets = np.concatenate(sets)
        valid = np.ones((sets.shape[0], test_rows.size), bool)   # tests are outside the sets
    is_target = spk[sets[:, 0]][:, None] == spk[test_rows][None, :]
    return sets, test_rows, valid, is_target & valid


class DiscriminativePLDA:
    """The quadratic form (1) trained by (2); scikit-learn style.

    regularization: lambda of (2). prior: pi of C_pi. After ``fit``: ``quad_enroll_`` (Q1),
    ``quad_test_`` (Q2), ``cross_`` (P), ``offset_`` (c), ``n_iter_``, ``objective_``.
    """

    def __init__(self, regularization=100.0, prior=0.01, max_iter=50, tol=1e-6):
        self.regularization = regularization
        self.prior = prior
        self.max_iter = max_iter
        self.tol = tol

    @classmethod
    def from_params(cls, quad_enroll, quad_test, cross, offset):
        """A fitted model from stored parameters."""
        model = cls()
        model.quad_enroll_ = np.asarray(quad_enroll, dtype=np.float64)
        model.quad_test_ = np.asarray(quad_test, dtype=np.float64)
        model.cross_ = np.asarray(cross, dtype=np.float64)
        model.offset_ = float(offset)
        d = model.cross_.shape[0]
        for M in (model.quad_enroll_, model.quad_test_, model.cross_):
            if M.shape != (d, d) or not np.all(np.isfinite(M)):
                raise ValueError("discriminative PLDA parameters must be finite %d x %d "
                                 "matrices" % (d, d))
        if not math.isfinite(model.offset_):
            raise ValueError("discriminative PLDA offset is not finite")
        return model

    @property
    def dim(self):
        return self.cross_.shape[0]

    # -- the objective (2) ----------------------------------------------------------------
    def _problem(self, E, T, valid, is_target, init, symmetric):
        same = T is E
        E = np.asarray(E, dtype=np.float64)
        T = E if same else np.asarray(T, dtype=np.float64)
        valid = np.asarray(valid, dtype=bool)
        labels = np.asarray(is_target, dtype=bool) & valid
        if valid.shape != (E.shape[0], T.shape[0]) or labels.shape != valid.shape:
            raise ValueError("valid and is_target must be (%d, %d) grids"
                             % (E.shape[0], T.shape[0]))
        n_tar = int(labels.sum())
        n_non = int(valid.sum()) - n_tar
        if n_tar == 0 or n_non == 0:
            raise ValueError("discriminative PLDA needs target and non-target trials")
        prior = float(self.prior)
        sign = np.where(labels, 1.0, -1.0)
        weight = np.where(labels, prior / n_tar, (1.0 - prior) / n_non) * valid
        weight /= _entropy(prior)
        logit = math.log(prior) - math.log1p(-prior)
        q1, q2, p, c = init
        d = E.shape[1]
        blocks = [q1, p] if symmetric else [q1, q2, p]
        theta0 = np.concatenate([np.asarray(b, dtype=np.float64).ravel() for b in blocks]
                                + [[c]])
        norm0 = float(theta0[:-1] @ theta0[:-1]) or 1.0
        lam = float(self.regularization)

        def unpack(theta):
            mats = [theta[i * d * d:(i + 1) * d * d].reshape(d, d)
                    for i in range(len(blocks))]
            if symmetric:
                q = 0.5 * (mats[0] + mats[0].T)
                pp = 0.5 * (mats[1] + mats[1].T)
                return q, q, pp, theta[-1]
            return mats[0], mats[1], mats[2], theta[-1]

        same_sides = symmetric and T is E      # single vectors both ways: qt is qe

        def objective(theta):
            Q1, Q2, P, off = unpack(theta)
            qe = np.einsum("ij,ij->i", E @ Q1, E)
            qt = qe if same_sides else np.einsum("ij,ij->i", T @ Q2, T)
            S = (E @ P) @ T.T
            S *= 2.0
            S += qe[:, None]
            S += qt[None, :]
            S += off + logit
            S *= sign                                   # the margins m
            # softplus(-m) = max(-m, 0) + log1p(e) and sigmoid(-m) = (e if m >= 0 else 1)
            # / (1 + e), both from one e = exp(-|m|) (one exp per trial, not three)
            e = np.exp(-np.abs(S))
            R = np.where(S >= 0.0, e, 1.0)
            R /= 1.0 + e
            np.maximum(-S, 0.0, out=S)
            S += np.log1p(e, out=e)                     # softplus(-m)
            value = float(np.vdot(weight, S))
            R *= -weight * sign                         # dJ/ds per trial
            ge, gt = R.sum(axis=1), R.sum(axis=0)
            dP = 2.0 * (E.T @ (R @ T))
            dQ1 = E.T @ (ge[:, None] * E)
            dQ2 = T.T @ (gt[:, None] * T)
            if symmetric:
                grads = [dQ1 + dQ2, 0.5 * (dP + dP.T)]
                grads[0] = 0.5 * (grads[0] + grads[0].T)
            else:
                grads = [dQ1, dQ2, dP]
            grad = np.concatenate([g.ravel() for g in grads] + [[ge.sum()]])
            diff = theta[:-1] - theta0[:-1]
            value += 0.5 * lam * float(diff @ diff) / norm0
            grad[:-1] += lam * diff / norm0
            return value, grad

        return objective, theta0, unpack

    def objective_function(self, E, T, valid, is_target, init, symmetric=False):
        """(f, theta0) with f(theta) -> (J, dJ/dtheta) of eq. (2) over the grid of trials
        (E[i], T[j]) where valid[i, j] (for tests and checks)."""
        f, theta0, _ = self._problem(E, T, valid, is_target, init, symmetric)
        return f, theta0

    def fit(self, E, T, valid, is_target, init, symmetric=False, start=None):
        """Minimise (2) over the grid of trials (E[i], T[j]) where valid[i, j] (labels
        is_target, e.g. from sample_training_trials); ``init`` is (Q1, Q2, P, c) of the PLDA
        (plda_quadratic_form), also the centre of the penalty; ``start``, a fitted model to
        warm-start from (the minimum is the same: J is convex)."""
        from scipy.optimize import minimize

        if not self.regularization >= 0:
            raise ValueError("regularization must be >= 0 (got %r)" % self.regularization)
        if not 0.0 < self.prior < 1.0:
            raise ValueError("prior must lie strictly between 0 and 1 (got %r)" % self.prior)
        f, theta0, unpack = self._problem(E, T, valid, is_target, init, symmetric)
        x0 = theta0
        if start is not None:
            parts = [start.quad_enroll_, start.cross_] if symmetric else [
                start.quad_enroll_, start.quad_test_, start.cross_]
            x0 = np.concatenate([b.ravel() for b in parts] + [[start.offset_]])
        at_theta0 = []                  # J(theta0), when the optimiser evaluates it

        def g(theta):
            out = f(theta)
            if not at_theta0 and np.array_equal(theta, theta0):
                at_theta0.append(out[0])
            return out

        result = minimize(g, x0, jac=True, method="L-BFGS-B",
                          options={"maxiter": int(self.max_iter), "gtol": float(self.tol),
                                   "ftol": 1e-12})
        Q1, Q2, P, c = unpack(result.x)
        self.quad_enroll_, self.quad_test_, self.cross_ = Q1.copy(), Q2.copy(), P.copy()
        self.offset_ = float(c)
        self.n_iter_ = int(result.nit)
        self.objective_ = float(result.fun)
        self.initial_objective_ = float(at_theta0[0] if at_theta0 else f(theta0)[0])
        return self

    # -- scoring ----------------------------------------------------------------------------
    def score_pairs(self, E, T, enroll_index, test_index, block_size=None):
        """Eq. (1) for trials (E[enroll_index[k]], T[test_index[k]]): per-row quadratic terms
        once, the cross term as a dense grid when the distinct rows are few, else in blocks
        of ``block_size`` trials (blocked.row_dots: ~2 MB of gathered rows a side)."""
        E = np.asarray(E, dtype=np.float64)
        T = np.asarray(T, dtype=np.float64)
        ei = np.asarray(enroll_index, dtype=np.intp)
        ti = np.asarray(test_index, dtype=np.intp)
        qe = np.einsum("ij,ij->i", E @ self.quad_enroll_, E)
        qt = np.einsum("ij,ij->i", T @ self.quad_test_, T)
        cross = blocked.row_dots(E @ self.cross_, T, ei, ti, block=block_size)
        return qe[ei] + qt[ti] + 2.0 * cross + self.offset_
