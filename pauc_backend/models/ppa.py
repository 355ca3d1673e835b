"""One mini-batch of pAUCMetric / TripletMetric: sampling, weights, gradient, PPA step (paper Alg. 1).

Nothing here loops over the J*R pairs of eq. 10: p_j and p_r come from sorted distance arrays
(``searchsorted``), N0 from a partial selection, and the weighted sum of outer products
sum_ab w_ab (x_a - x_b)(x_a - x_b)^T from the graph Laplacian X^T (Deg - W) X.
"""

import math
from collections import namedtuple

import numpy as np

BatchStats = namedtuple("BatchStats", "gradient hinge target_mean pauc num_targets num_negatives")
BatchStats.__doc__ = """Outcome of one batch at the current metric.

gradient: P + gamma P_P (eqs. 12-13; triplet version for TripletMetric), d x d.
hinge: the mean hinge loss (eq. 8, or the triplet hinge of eq. 17).
target_mean: (1/J) sum_j S_j^+ (the gamma term of eq. 7 without gamma).
pauc: the training pAUC of eq. 5 over P and N0 (for triplets: the fraction of satisfied
    triplets, ties counted 1/2).
"""


def phi_plus(v, lam):
    """phi_lambda^+(v) = (sqrt(v^2 + 4 lambda) + v) / 2 (Alg. 1), without cancellation for v < 0."""
    v = np.asarray(v, dtype=np.float64)
    root = np.sqrt(v * v + 4.0 * lam)
    out = np.empty_like(v)
    pos = v >= 0
    out[pos] = 0.5 * (root[pos] + v[pos])
    neg = ~pos
    # (root + v)/2 = 2 lam / (root - v): exact rewrite, stable when v is very negative.
    out[neg] = 2.0 * lam / (root[neg] - v[neg]) if lam > 0 else 0.0
    return out


def ppa_step(M, gradient, eta, mu):
    """M <- phi^+_{eta mu}(M - eta (gradient + mu I)) (Alg. 1); returns (M, eigvals, eigvecs).

    The eigenvalues of the result are phi^+(v) >= 0, so M stays symmetric PSD (PD if mu > 0).
    """
    d = M.shape[0]
    X = M - eta * gradient
    X[np.diag_indices(d)] -= eta * mu
    X = 0.5 * (X + X.T)
    v, U = np.linalg.eigh(X)
    w = phi_plus(v, eta * mu)
    M_new = (U * w) @ U.T
    return 0.5 * (M_new + M_new.T), w, U


def sample_batch(groups, s, rng):
    """Row indices of a batch: s speakers, two distinct utterances each, as rows (2i, 2i+1).

    ``groups`` is a list of index arrays (one per speaker with >= 2 utterances). Vectorised:
    the second utterance is drawn among the n-1 others of the speaker.
    """
    members, starts, sizes = _flat_groups(groups)
    speakers = rng.choice(len(groups), size=s, replace=False)
    n = sizes[speakers]
    u = rng.random((s, 2))
    first = np.minimum((u[:, 0] * n).astype(np.int64), n - 1)
    second = np.minimum((u[:, 1] * (n - 1)).astype(np.int64), n - 2)
    second += second >= first
    out = np.empty(2 * s, dtype=np.int64)
    out[0::2] = members[starts[speakers] + first]
    out[1::2] = members[starts[speakers] + second]
    return out


_GROUP_CACHE = {}
_CACHED_GROUPS = 4      # metrics trained at once in threads each keep their own entry


def _flat_groups(groups):
    """(members, starts, sizes) of ``groups``, cached by identity (the entry holds the list,
    so its id cannot be reused while cached); safe in threads (one dict operation each)."""
    key = id(groups)
    cached = _GROUP_CACHE.get(key)
    if cached is None or cached[0] is not groups:
        sizes = np.array([len(g) for g in groups], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        members = np.concatenate(groups).astype(np.int64)
        cached = (groups, (members, starts, sizes))
        if len(_GROUP_CACHE) >= _CACHED_GROUPS:
            _GROUP_CACHE.clear()
        _GROUP_CACHE[key] = cached
    return cached[1]


def squared_distances(Y):
    """All squared Euclidean distances between rows of Y (n x n), via the Gram matrix.

    ||y_a||^2 + ||y_b||^2 - 2 y_a.y_b, built in place (one n x n array), clipped at 0. The Gram
    matrix is ``Y @ Y.T`` (numpy gives it to BLAS syrk: one triangle, half the products of a
    general product, exactly symmetric), then scaled by -2 (a power of two: exact).
    """
    D = Y @ Y.T
    D *= -2.0
    q = np.diag(D) * -0.5
    D += q[:, None]
    D += q[None, :]
    np.maximum(D, 0.0, out=D)
    return D


_PAIR_CACHE = {}


def nontarget_pairs(s):
    """(a, b) of the K = 2s^2 - 2s non-target pairs of a batch, a < b, in row-major order."""
    return _nontarget_pair_indices(s)[:2]


def _nontarget_pair_indices(s):
    """(a, b, a * 2s + b): the pairs and their flat positions in a 2s x 2s array (cached;
    safe in threads)."""
    cached = _PAIR_CACHE.get(s)
    if cached is None:
        a, b = np.triu_indices(2 * s, k=1)
        keep = (a // 2) != (b // 2)
        a, b = a[keep].astype(np.int64), b[keep].astype(np.int64)
        cached = (a, b, a * (2 * s) + b)
        if len(_PAIR_CACHE) >= _CACHED_GROUPS:
            _PAIR_CACHE.clear()
        _PAIR_CACHE[s] = cached
    return cached


def n0_bounds(K, alpha, beta):
    """(k_alpha, k_beta) = (ceil(K alpha), floor(K beta)) of eq. 4, with at least one negative."""
    k_alpha = int(math.ceil(K * alpha - 1e-9))
    k_beta = int(math.floor(K * beta + 1e-9))
    k_beta = min(max(k_beta, k_alpha + 1), K)
    k_alpha = min(k_alpha, k_beta - 1)
    return k_alpha, k_beta


def select_ranks(values, lo, hi):
    """Indices of the elements ranked lo+1..hi (1-based) in ascending order of (value, index).

    Equal to ``np.argsort(values, kind='stable')[lo:hi]`` as a set, in O(K) with np.partition;
    ties at the boundaries go to the lower index, as a stable sort would.
    """
    K = values.shape[0]
    if lo == 0 and hi == K:
        return np.arange(K)
    kth = [k for k in (lo - 1, hi - 1) if 0 <= k < K]
    part = np.partition(values, kth)
    chosen = _first_k(values, hi, part[hi - 1])
    if lo > 0:
        below = _first_k(values, lo, part[lo - 1])
        mask = np.zeros(K, dtype=bool)
        mask[chosen] = True
        mask[below] = False
        chosen = np.flatnonzero(mask)
    return chosen


def _first_k(values, k, kth_value):
    """Indices of the k smallest values (ties at the k-th value broken by lower index)."""
    strictly = np.flatnonzero(values < kth_value)
    ties = np.flatnonzero(values == kth_value)
    return np.concatenate([strictly, ties[:k - strictly.size]])


def pauc_weights(s_pos, s_neg, delta):
    """p_j, p_r (eq. 10), the mean hinge (eq. 8) and the pAUC (eq. 5) from distances.

    Pi(j, r) = [delta + S_j > S_r] strictly, counted with searchsorted on sorted arrays:
    O((J + R) log(J + R)) instead of O(J R).
    """
    J, R = s_pos.size, s_neg.size
    t = delta + s_pos
    neg_sorted = np.sort(s_neg)
    count_j = np.searchsorted(neg_sorted, t, side="left")      # #{r: S_r < delta + S_j}
    t_sorted = np.sort(t)
    count_r = J - np.searchsorted(t_sorted, s_neg, side="right")  # #{j: delta + S_j > S_r}
    prefix = np.concatenate([[0.0], np.cumsum(neg_sorted)])
    hinge = float(np.sum(count_j * t - prefix[count_j])) / (J * R)
    below = np.searchsorted(neg_sorted, s_pos, side="left")
    upto = np.searchsorted(neg_sorted, s_pos, side="right")
    # I(S_j > S_r) + 1/2 I(S_j == S_r): (#r < S_j) + 1/2 (#r == S_j)
    wrong = np.sum(below) + 0.5 * np.sum(upto - below)
    pauc = 1.0 - float(wrong) / (J * R)
    return count_j / R, count_r / J, hinge, pauc


def laplacian_scatter(X, a, b, w):
    """sum_k w_k (x_{a_k} - x_{b_k})(x_{a_k} - x_{b_k})^T = X^T (Deg - W) X, W_ab = W_ba = w_k.

    W is sparse (J + R entries), so this costs O((J + R) d + n d^2) instead of O(J R d^2).
    """
    import scipy.sparse  # here, so that scoring tools do not pay for the import

    n = X.shape[0]
    deg = np.bincount(a, weights=w, minlength=n) + np.bincount(b, weights=w, minlength=n)
    W = scipy.sparse.csr_matrix((w, (a, b)), shape=(n, n))
    LX = deg[:, None] * X - W @ X - W.T @ X
    return X.T @ LX


def pauc_batch(X, Y, alpha, beta, delta, gamma):
    """BatchStats of one pAUCMetric batch (eqs. 4-13); X are the 2s inputs, Y = X A^T."""
    s = X.shape[0] // 2
    D = squared_distances(Y)
    ta = np.arange(0, 2 * s, 2)
    s_pos = D[ta, ta + 1]
    na, nb, flat = _nontarget_pair_indices(s)
    s_all_neg = np.take(D, flat)                       # D[na, nb], without 2-d fancy indexing
    k_alpha, k_beta = n0_bounds(s_all_neg.size, alpha, beta)
    n0 = select_ranks(s_all_neg, k_alpha, k_beta)
    s_neg = s_all_neg[n0]
    p_j, p_r, hinge, pauc = pauc_weights(s_pos, s_neg, delta)
    J, R = s, n0.size
    a = np.concatenate([ta, na[n0]])
    b = np.concatenate([ta + 1, nb[n0]])
    w = np.concatenate([(p_j + gamma) / J, -p_r / R])
    keep = w != 0
    grad = laplacian_scatter(X, a[keep], b[keep], w[keep])
    return BatchStats(grad, hinge, float(np.mean(s_pos)), pauc, J, R)


def triplet_batch(X, Y, delta, gamma):
    """BatchStats of one TripletMetric batch (eq. 17): anchors x_a, partner x_p, every other
    speaker's vector as x_n; 2s(2s-2) triplets, hinge max(0, delta - S(a,n) + S(a,p)).

    Every anchor meets every other speaker's vector, so the active triplets form a dense n x n
    0/1 matrix P (P_an = Pi(a, n)) and the negative part of the gradient is
    sum_an P_an (x_a - x_n)(x_a - x_n)^T = X^T (diag(P 1 + P^T 1) - P - P^T) X: O(n^2 d) in a few
    n x n passes, the sum ``laplacian_scatter`` would form from the pairs.
    """
    n = X.shape[0]
    s = n // 2
    D = squared_distances(Y)
    idx = np.arange(n)
    partner = idx ^ 1
    s_ap = D[idx, partner].copy()
    # Same-speaker columns (self, partner) are no negatives: +inf fails every comparison below.
    D[idx, idx] = np.inf
    D[idx, partner] = np.inf
    T = n * (n - 2)
    wrong = np.count_nonzero(s_ap[:, None] > D) + 0.5 * np.count_nonzero(s_ap[:, None] == D)
    pauc = 1.0 - float(wrong) / T
    margin = np.subtract((delta + s_ap)[:, None], D, out=D)   # > 0 where delta + S_ap > S_an
    P = np.greater(margin, 0.0, out=np.empty_like(margin), casting="unsafe")  # Pi(a, n), strict
    hinge = float(np.sum(np.maximum(margin, 0.0, out=margin))) / T
    count = P.sum(axis=1)
    G = X.T @ (P @ X)                                       # X^T P X
    negatives = (X.T * (count + P.sum(axis=0))) @ X - G - G.T
    ta = np.arange(0, n, 2)
    w_pos = (count[ta] + count[ta + 1]) / T + gamma / s
    diff = X[ta] - X[ta + 1]
    grad = (diff.T * w_pos) @ diff - negatives / T
    return BatchStats(grad, hinge, float(np.mean(s_ap[ta])), pauc, s, T)
