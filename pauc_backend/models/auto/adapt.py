"""pAUCMetric (auto) with unlabelled in-domain vectors (an adaptation set): what it changes and
what the cross-fitting sees of it (numpy only).

With an adaptation set (AutoBackend.fit ``X_adapt``, train-pauc-auto --adapt), as Kaldi's
egs/sre16/v2 uses SRE16 major:

* the vectors scored are centred on the adaptation set's mean instead of the training mean
  (the training vectors still train the LDA, the PLDA and the metrics centred on their own
  mean);
* the adapted PLDA (ivector-adapt-plda, 0.75/0.25) and the pAUCMetric on its latent vectors
  (the paper's PLDA-adp rows) are candidates: by default every PLDA-latent member of the
  default candidates is replaced by its adapted counterpart (``adapted_candidates``);
* its pseudo-speakers (models.auto.pseudo) give in-domain trials that rate every candidate,
  and pseudo-trained candidates;
* cost: one seeded sample of at most ``max_adapt_vectors`` of its vectors (``AdaptationSet``,
  drawn once per fit) gives the mean, the adapted PLDA's covariance (one pass, d x d) and the
  pseudo-speakers.

What the training folds see of it (``AdaptationSet.fold_shift``). Every fold's models are
centred on, and adapted to, the same sample of the adaptation set as the final model. The
held-out training vectors of fold k are translated by one vector, m_a - m_k (m_a the
adaptation mean, m_k the mean of the vectors fold k's models train on): so a centred system
sees each held-out vector exactly as it would without an adaptation set (x - m_k), while the
raw-space systems see the held-out speakers placed around the adaptation mean, and the
adapted systems score them with the adapted PLDA. Nothing depends on which speakers a fold
holds: a translation keeps every direction that tells speakers apart. (A map of the
covariance, e.g. CORAL's C_a^(1/2) C_h^(-1/2), is not used: estimated from a few dozen
speakers, either total covariance is dominated by those speakers' own between-speaker
directions, and whitening by it flattens exactly the directions that tell them apart; on ETRI
it put raw cosine's fold pAUC[0,0.01] at 0.04 where it is 0.35.) So the training folds rate
the candidates in the training domain; the in-domain sources (pseudo-speaker and development
trials, models.auto.selection) rate them in the user's.

Domain statistics: ``domain_of`` gives the models.domain.TrainingDomain the model directory
stores (training mean and within-speaker whitening of the raw training vectors; with an
adaptation set, its mean and the same whitening, since that is where the scored vectors are
centred), so that score-pauc-auto can warn when the vectors it scores are out of domain.
"""

from dataclasses import dataclass

import numpy as np

from pauc_backend.models import blocked
from pauc_backend.models.backend_pipeline import float32_mean
from pauc_backend.models.domain import TrainingDomain
from pauc_backend.models.preprocessing import normalize_length
from pauc_backend.models.systems import adapted_candidate, needs_adapt, parse_candidate

__all__ = ["AdaptationSet", "adapted_candidates", "check_candidates", "sample_rows",
           "domain_of", "adaptation_report"]

_BLOCK = 65536


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


def sample_rows(num_vectors, limit, seed):
    """(rows used, sorted; a sentence saying so): all of them, or a seeded subset of
    ``limit`` (0: no limit)."""
    if not limit or num_vectors <= limit:
        return np.arange(num_vectors), "all %d vectors" % num_vectors
    rows = np.sort(np.random.RandomState(seed + 29).choice(num_vectors, int(limit),
                                                           replace=False))
    return rows, "a seeded subset of %d of %d vectors" % (limit, num_vectors)


@dataclass(frozen=True)
class AdaptationSet:
    """The adaptation set of one fit: ``vectors`` (n, D) float32 as given, ``rows`` (the
    seeded sample used, ``sample_rows``), ``subset`` (its sentence), ``mean`` (float32 mean of
    the sample, as compute-vector-mean), ``durations`` (seconds per vector, or None),
    ``verdict`` (models.unlabelled's: what the set can be used for, and why not)."""
    vectors: np.ndarray
    rows: np.ndarray
    subset: str
    mean: np.ndarray
    durations: object = None
    verdict: object = None

    @classmethod
    def of(cls, A, dim, limit, seed, durations=None, verdict=None, kept=None):
        """The adaptation set A checked (float32, dimension ``dim``, finite), its sample drawn
        once among the rows ``kept`` (all by default; the examination's, models.unlabelled);
        ``verdict``: that examination (an AdaptCheck). ValueError naming the problem."""
        A = np.asarray(A)
        if A.dtype != np.float32:
            A = A.astype(np.float32)
        if A.ndim != 2 or A.shape[0] < 2:
            raise ValueError("the adaptation set needs at least 2 vectors (got shape %s)"
                             % (A.shape,))
        if A.shape[1] != dim:
            raise ValueError("adaptation vectors have dimension %d but the training vectors "
                             "%d" % (A.shape[1], dim))
        kept = np.arange(A.shape[0]) if kept is None else np.asarray(kept)
        bad = blocked.first_nonfinite(A[kept])
        if bad is not None:
            raise ValueError("adaptation vector %d contains NaN or Inf" % kept[bad])
        if durations is not None:
            durations = np.asarray(durations, dtype=np.float64).reshape(-1)
            if durations.size != A.shape[0] or not np.all(np.isfinite(durations)
                                                           & (durations > 0)):
                raise ValueError("adaptation durations need one positive finite value per "
                                 "adaptation vector")
        rows, subset = sample_rows(kept.size, limit, seed)
        rows = kept[rows]
        if kept.size < A.shape[0]:
            subset += " of the %d kept of %d" % (kept.size, A.shape[0])
        return cls(A, rows, subset, float32_mean(A, rows), durations, verdict)

    @property
    def size(self):
        return int(self.rows.size)

    def fold_shift(self, X, train_rows):
        """The translation m_a - m_k of fold k's held-out vectors (module doc): ``train_rows``
        are the rows of X its models train on (m_k: their float32 mean, as the models'
        own)."""
        return (self.mean.astype(np.float64)
                - float32_mean(X, train_rows).astype(np.float64)).astype(np.float32)


def domain_of(X, y, adapt=None):
    """(TrainingDomain of the model, TrainingDomain of the training vectors): the training
    one fitted on raw X with labels y; the model's is it, or with an AdaptationSet its mean
    with the training whitening."""
    train = TrainingDomain().fit(X, y)
    if adapt is None:
        return train, train
    return TrainingDomain.from_params(adapt.mean.astype(np.float64), train.whitener_), train


def _plda_shift(plda, pipe, A, rows, mean):
    """Shift of A[rows] in a PLDA's space (models.domain; the vectors centred on ``mean``,
    LDA-projected and length-normalised as the PLDA sees them)."""
    domain = TrainingDomain.from_plda(plda)
    acc = domain.accumulator()
    for start in range(0, rows.size, 8192):
        block = np.asarray(A[rows[start:start + 8192]], dtype=np.float32) - mean
        domain.add(acc, normalize_length(pipe.lda_.transform(block))[0])
    return acc.value()


def adaptation_report(train_domain, domain, pipe, adapt):
    """Lines ("key value") saying what the adaptation set changed, for system.txt and the
    log: its size, its shift (models.domain) from the training domain before and from the
    model's domain after (raw space: the mean is now its own, so what remains is sampling
    noise), and in the PLDA space when the model has one (the training PLDA on the vectors
    centred on the training mean; the adapted PLDA on them centred on their own mean)."""
    A, rows = adapt.vectors, adapt.rows
    lines = ["adapt_vectors %s" % adapt.subset.replace(" ", "_"),
             "adapt_shift_raw_before %.4f" % train_domain.shift(A[rows]),
             "adapt_shift_raw_after %.4f" % domain.shift(A[rows])]
    if getattr(pipe, "train_mean_", None) is not None and pipe.plda_ is not None:
        lines.append("adapt_shift_plda_before %.4f" % _plda_shift(
            pipe.plda_, pipe, A, rows, pipe.train_mean_))
        adapted = getattr(pipe, "plda_adapt_", None)
        if adapted is not None:
            lines.append("adapt_shift_plda_adapt_after %.4f" % _plda_shift(
                adapted, pipe, A, rows, pipe.mean_))
    return lines
