"""pAUCMetric (auto) with unlabelled in-domain vectors (an adaptation set), and its domain
statistics (numpy only).

With an adaptation set (AutoBackend.fit ``X_adapt``, train-pauc-auto --adapt), as Kaldi's
egs/sre16/v2 uses SRE16 major:

* the vectors scored are centred on the adaptation set's mean instead of the training mean
  (the training vectors still train the LDA, the PLDA and the metrics centred on their own
  mean);
* the adapted PLDA (ivector-adapt-plda, 0.75/0.25) and the pAUCMetric on its latent vectors
  (the paper's PLDA-adp rows) are candidates: by default every PLDA-latent member of the
  default candidates is replaced by its adapted counterpart (``adapted_candidates``), since
  the cross-fitting cannot see the shift that adaptation corrects (below);
* cost: the adaptation set enters only the final model (one mean, one pass of a d x d
  covariance); beyond ``max_adapt_vectors`` a seeded subset of that many is used.

What the cross-fitting can and cannot see. Its held-out trials are training speakers, so by
itself it sees how well each candidate separates speakers OF THE TRAINING DOMAIN, and not a
shift between the training domain and the vectors scored later (a mean or covariance offset:
what the adaptation set corrects). With an adaptation set each held-out fold is first moved
into its domain (``coral_map``: the fold's mean and total covariance made the adaptation
set's by one linear map, so speakers stay speakers and the labels still hold), then prepared
as the evaluation vectors will be: its own (unlabelled, moved) vectors play the adaptation
set (the centring mean from them, the PLDA adapted to them), and the candidates are rated on
trials among them. So the rating sees the shift in the mean and in the total covariance; it
cannot see how the covariance shift divides between speakers and within speakers (the map
scales both alike), a shift that is not linear, or vectors scored later that differ from the
adaptation set. The final model takes the mean and the adaptation from the real adaptation
set. An adaptation set of fewer vectors than twice their dimension is too small for its
covariance: the folds are then not moved (logged).

Domain statistics: ``domain_of`` gives the models.domain.TrainingDomain the model directory
stores (training mean and within-speaker whitening of the raw training vectors; with an
adaptation set, its mean and the same whitening, since that is where the scored vectors are
centred), so that score-pauc-auto can warn when the vectors it scores are out of domain.
"""

import numpy as np

from pauc_backend.models.systems import adapted_candidate, needs_adapt, parse_candidate
from pauc_backend.models.domain import TrainingDomain

__all__ = ["adapted_candidates", "check_candidates", "adapt_rows", "domain_of",
           "adaptation_report"]


def adapted_candidates(candidates):
    """The default candidates with an adaptation set: each PLDA-latent member replaced by its
    adapted counterpart, the discriminative-PLDA ones left out (no adapted counterpart)."""
    out = []
    for name in candidates:
        swapped = adapted_candidate(name)
        if swapped is not None and swapped not in out:
            out.append(swapped)
    return tuple(out)


def check_candidates(candidates, adapted):
    """ValueError when a candidate needs the adaptation set and there is none."""
    if adapted:
        return
    for name in candidates:
        if needs_adapt(parse_candidate(name)):
            raise ValueError("candidate %r needs an adaptation set (X_adapt; train-pauc-auto "
                             "--adapt)" % name)


def adapt_rows(num_vectors, limit, seed):
    """(rows of the adaptation set used, sorted; a sentence saying so): all of them, or a
    seeded subset of ``limit`` (0: no limit)."""
    if not limit or num_vectors <= limit:
        return np.arange(num_vectors), "all %d vectors" % num_vectors
    rows = np.sort(np.random.RandomState(seed + 29).choice(num_vectors, int(limit),
                                                           replace=False))
    return rows, "a seeded subset of %d of %d vectors" % (limit, num_vectors)


def coral_map(X, rows, A, adapt_rows, floor=1e-3):
    """The affine map f(x) = m_a + C_a^(1/2) C_h^(-1/2) (x - m_h) that gives the vectors
    X[rows] (a held-out fold) the mean m_a and total covariance C_a of the adaptation set
    A[adapt_rows] (CORAL, Sun et al. 2016; symmetric square roots, eigenvalues below
    ``floor`` x their mean raised to it, as models.domain does). Linear, so a speaker's
    vectors stay together and a mean of vectors maps to the mean of the mapped ones.
    Returns (m_h, M, m_a): f(x) = (x - m_h) M^T + m_a."""
    def moments(T, r):
        total = np.zeros(T.shape[1])
        scatter = np.zeros((T.shape[1], T.shape[1]))
        for start in range(0, r.size, 65536):
            block = np.asarray(T[r[start:start + 65536]], dtype=np.float64)
            total += block.sum(axis=0)
            scatter += block.T @ block
        mean = total / r.size
        return mean, scatter / r.size - np.outer(mean, mean)

    def power(C, p):
        values, vectors = np.linalg.eigh(0.5 * (C + C.T))
        values = np.maximum(values, floor * max(values.mean(), np.finfo(float).tiny))
        return (vectors * values ** p) @ vectors.T

    m_h, C_h = moments(X, np.asarray(rows))
    m_a, C_a = moments(A, np.asarray(adapt_rows))
    return m_h, power(C_a, 0.5) @ power(C_h, -0.5), m_a


def apply_map(fmap, X):
    """float32 f(X) of ``coral_map``'s (m_h, M, m_a)."""
    m_h, M, m_a = fmap
    return ((np.asarray(X, dtype=np.float64) - m_h) @ M.T + m_a).astype(np.float32)


def check_adapt(A, dim):
    """The adaptation set as a float32 array; ValueError naming the problem."""
    A = np.asarray(A)
    if A.dtype != np.float32:
        A = A.astype(np.float32)
    if A.ndim != 2 or A.shape[0] < 2:
        raise ValueError("the adaptation set needs at least 2 vectors (got shape %s)"
                         % (A.shape,))
    if A.shape[1] != dim:
        raise ValueError("adaptation vectors have dimension %d but the training vectors %d"
                         % (A.shape[1], dim))
    from pauc_backend.models import blocked
    bad = blocked.first_nonfinite(A)
    if bad is not None:
        raise ValueError("adaptation vector %d contains NaN or Inf" % bad)
    return A


def domain_of(X, y, A=None, rows=None):
    """(TrainingDomain of the model, TrainingDomain of the training vectors): the training
    one fitted on raw X with labels y; the model's is it, or with an adaptation set A[rows]
    its mean with the training whitening."""
    train = TrainingDomain().fit(X, y)
    if A is None:
        return train, train
    total = np.zeros(A.shape[1])
    for start in range(0, rows.size, 65536):
        total += np.asarray(A[rows[start:start + 65536]], dtype=np.float64).sum(axis=0)
    return TrainingDomain.from_params(total / rows.size, train.whitener_), train


def _plda_shift(plda, pipe, A, rows, mean):
    """Shift of A[rows] in a PLDA's space (models.domain; the vectors centred on ``mean``,
    LDA-projected and length-normalised as the PLDA sees them)."""
    from pauc_backend.models.preprocessing import normalize_length
    domain = TrainingDomain.from_plda(plda)
    acc = domain.accumulator()
    for start in range(0, rows.size, 8192):
        block = np.asarray(A[rows[start:start + 8192]], dtype=np.float32) - mean
        domain.add(acc, normalize_length(pipe.lda_.transform(block))[0])
    return acc.value()


def adaptation_report(train_domain, domain, pipe, A, rows, subset):
    """Lines ("key value") saying what the adaptation set changed, for system.txt and the
    log: its size, its shift (models.domain) from the training domain before and from the
    model's domain after (raw space: the mean is now its own, so what remains is sampling
    noise), and in the PLDA space when the model has one (the training PLDA on the vectors
    centred on the training mean; the adapted PLDA on them centred on their own mean)."""
    lines = ["adapt_vectors %s" % subset.replace(" ", "_"),
             "adapt_shift_raw_before %.4f" % train_domain.shift(A[rows]),
             "adapt_shift_raw_after %.4f" % domain.shift(A[rows])]
    if pipe.plda_ is not None and pipe.lda_ is not None:
        lines.append("adapt_shift_plda_before %.4f" % _plda_shift(
            pipe.plda_, pipe, A, rows, pipe.train_mean_))
        adapted = getattr(pipe, "plda_adapt_", None)
        if adapted is not None:
            lines.append("adapt_shift_plda_adapt_after %.4f" % _plda_shift(
                adapted, pipe, A, rows, pipe.mean_))
    return lines
