"""Synthetic speaker embeddings with the structure of real x-vectors (the data of the demo recipe).

numpy only, no files: ``make_speaker_corpus`` returns keys, labels and float32 arrays for a
labelled out-of-domain training set, an unlabelled in-domain adaptation set, and in-domain
enrollment and test sets with a full trial list. The model is the two-covariance PLDA model
(Ioffe 2006) made harder in the ways real data is:

* speaker s = mu + B^1/2 y, utterance x = s + g^1/2 W^1/2 e (y, e ~ N(0, I)), where B and W have
  decaying spectra on unrelated random rotations;
* heavy-tailed within-speaker noise: g = (nu - 2) / chi2(nu) per utterance, so x - s is
  multivariate Student-t with covariance W (a Gaussian scale mixture: some recordings are short
  or noisy);
* a domain shift for the in-domain sets: a mean shift, extra between-speaker variability on a
  rank-k_b subspace and extra within-speaker variability on a rank-k_w subspace (what Kaldi's
  PLDA adaptation is designed to absorb);
* varied utterance counts: log-normal per training speaker, uniform ranges for the others;
* optionally (``durations=True``) a duration d per utterance whose within-speaker noise grows
  as d shrinks: the utterance's whole within-speaker noise (W and the in-domain extra part,
  heavy tails included) is scaled by sqrt(m(d)), m(d) = (1 + tau/d) / (1 + tau/d_ref): a
  session part that does not shrink plus an estimation part that shrinks as 1/d, as an
  i-vector's posterior covariance does with the number of frames (Kenny et al., "PLDA for
  speaker verification with utterances of arbitrary duration", ICASSP 2013). At d_ref an
  utterance has the noise of the corpus without durations. Durations are log-uniform on
  ``duration_range`` for the in-domain sets and on ``train_duration_range`` for the
  out-of-domain training set: by default the training recordings are long (20-60 s) and the
  in-domain ones 2-60 s, the duration mismatch of NIST SRE back-ends trained on whole
  conversations and tested on short segments (what quality measure functions were designed
  for: Mandasari et al., IEEE TASLP 21(11), 2013). Durations come from a generator of their own
  (seeded from ``seed``) and scale the same noise draws, so the corpus without durations is
  unchanged.
"""

from dataclasses import dataclass, field

import numpy as np


@dataclass
class EmbeddingSet:
    """One data set: utterance ``keys``, their speaker ``labels`` and the vectors ``X`` (n x D)."""

    keys: list
    labels: list
    X: np.ndarray
    durations: np.ndarray = None    # seconds per utterance (``durations=True``), else None

    def spk2utt(self):
        """Speaker -> utterance list, both in sorted order (Kaldi's ``spk2utt``)."""
        table = {}
        for key, label in zip(self.keys, self.labels):
            table.setdefault(label, []).append(key)
        return table


@dataclass
class SyntheticCorpus:
    """The four sets, the trial list (enroll speaker, test utterance, is-target) and the truth;
    with ``num_dev_speakers`` also a development evaluation (other in-domain speakers, the same
    design) in ``dev`` = (enroll, test, trial_enroll, trial_test, trial_target), else None."""

    train: EmbeddingSet
    adapt: EmbeddingSet
    enroll: EmbeddingSet
    test: EmbeddingSet
    trial_enroll: np.ndarray
    trial_test: np.ndarray
    trial_target: np.ndarray
    truth: dict = field(default_factory=dict)
    dev: tuple = None


def random_rotation(rng, dim):
    """A random orthogonal matrix (QR of a Gaussian matrix, signs fixed by diag(R))."""
    q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
    return q * np.sign(np.diag(r))


def _factor(rotation, variances):
    """Columns of ``rotation`` scaled by sqrt(variances): a square-root factor F, F F^T = cov."""
    return rotation[:, :len(variances)] * np.sqrt(variances)


def _heavy_tailed_noise(rng, count, factor, dof):
    """Rows ~ multivariate Student-t (dof) with covariance factor factor^T (dof=inf: Gaussian)."""
    noise = rng.standard_normal((count, factor.shape[1])) @ factor.T
    if np.isfinite(dof):
        if dof <= 2:
            raise ValueError("within_dof must be > 2 (finite covariance), got %g" % dof)
        noise *= np.sqrt((dof - 2.0) / rng.chisquare(dof, size=count))[:, None]
    return noise


def _counts(rng, num, low, high, median=None, sigma=0.5):
    """Utterance counts per speaker: log-normal around ``median`` clipped to [low, high], or
    uniform on [low, high] when no median is given."""
    if median is None:
        return rng.integers(low, high + 1, size=num)
    return np.clip(np.rint(rng.lognormal(np.log(median), sigma, size=num)), low, high).astype(int)


def duration_noise_scale(durations, tau=30.0, reference=10.0):
    """sqrt(m(d)), m(d) = (1 + tau/d) / (1 + tau/d_ref): the factor on the within-speaker noise
    of an utterance of d seconds (module docstring)."""
    return np.sqrt((1.0 + tau / np.asarray(durations, dtype=np.float64))
                   / (1.0 + tau / reference))


def _speaker_set(rng, prefix, speakers, counts, utt_format, within, dof, durations=None):
    """Utterances of ``speakers`` (rows: speaker vectors) with ``counts`` each; ``durations``
    = (generator, (low, high) seconds, tau, d_ref) gives each a duration and scales its noise."""
    width = max(4, len(str(len(speakers))))
    spk_ids = ["%s%0*d" % (prefix, width, i + 1) for i in range(len(speakers))]
    keys, labels, rows = [], [], []
    for index, (spk, num) in enumerate(zip(spk_ids, counts)):
        keys.extend(utt_format % (spk, j + 1) for j in range(num))
        labels.extend([spk] * num)
        rows.extend([index] * num)
    rows = np.asarray(rows, dtype=int)
    X = speakers[rows]
    seconds = scale = None
    if durations is not None:
        timing, (low, high), tau, reference = durations
        seconds = np.round(np.exp(timing.uniform(np.log(low), np.log(high), size=len(rows))), 2)
        scale = duration_noise_scale(seconds, tau, reference)[:, None]
    for factor in within:
        noise = _heavy_tailed_noise(rng, len(rows), factor, dof)
        X = X + (noise if scale is None else noise * scale)
    return spk_ids, EmbeddingSet(keys, labels, X.astype(np.float32), seconds)


def make_speaker_corpus(seed=777, dim=80, num_train_speakers=400, train_utts_median=10,
                        train_utts_range=(3, 40), num_adapt_speakers=150,
                        adapt_utts_range=(2, 10), num_eval_speakers=80,
                        enroll_utts_range=(1, 5), test_utts_range=(3, 9),
                        between_scale=3.0, between_decay=None, within_range=(0.8, 2.5),
                        within_dof=5.0, mean_scale=2.0, shift_scale=1.0,
                        extra_between=(1.5, 0.3), extra_between_rank=None,
                        extra_within=(4.0, 1.0), extra_within_rank=None, durations=False,
                        duration_range=(2.0, 60.0), train_duration_range=(20.0, 60.0),
                        duration_tau=30.0, duration_reference=10.0, num_dev_speakers=0):
    """Draw a corpus; every random number comes from ``np.random.default_rng(seed)``.

    Between-speaker variances are ``between_scale * exp(-k / between_decay) + 0.05``
    (``between_decay`` defaults to dim / 6); within-speaker variances decay log-linearly from
    ``within_range[1]`` to ``within_range[0]``. The in-domain extra variabilities have
    eigenvalues ``linspace(*extra_between, extra_between_rank)`` and
    ``linspace(*extra_within, extra_within_rank)`` (ranks default to min(8, dim) and
    min(12, dim)). Trials: every evaluation speaker against
    every test utterance, sorted by speaker then utterance. With ``durations`` every set has
    ``durations`` (seconds, rounded to 10 ms as an utt2dur file holds them) and noise scaled
    as the module docstring says (tau = ``duration_tau``, d_ref = ``duration_reference``).
    ``num_dev_speakers`` > 0 adds a development evaluation of other in-domain speakers (keys
    ``dv0001-enr1``, ``dv0001-tst01``; for calibrating without touching the evaluation trials),
    drawn after everything else, so the other sets do not change.
    """
    if dim < 2:
        raise ValueError("dim must be at least 2, got %d" % dim)
    for name, value in (("num_train_speakers", num_train_speakers),
                        ("num_adapt_speakers", num_adapt_speakers),
                        ("num_eval_speakers", num_eval_speakers)):
        if value < 2:
            raise ValueError("%s must be at least 2, got %d" % (name, value))
    for name, (low, high) in (("train_utts_range", train_utts_range),
                              ("adapt_utts_range", adapt_utts_range),
                              ("enroll_utts_range", enroll_utts_range),
                              ("test_utts_range", test_utts_range)):
        if not 1 <= low <= high:
            raise ValueError("%s must satisfy 1 <= low <= high, got %s" % (name, (low, high)))
    for name, (low, high) in (("duration_range", duration_range),
                              ("train_duration_range", train_duration_range)):
        if not 0 < low <= high:
            raise ValueError("%s must satisfy 0 < low <= high, got %s" % (name, (low, high)))
    if num_dev_speakers == 1 or num_dev_speakers < 0:
        raise ValueError("num_dev_speakers must be 0 or at least 2, got %d" % num_dev_speakers)
    if not (duration_tau >= 0 and duration_reference > 0):
        raise ValueError("duration_tau must be >= 0 and duration_reference > 0, got %r, %r"
                         % (duration_tau, duration_reference))
    if train_utts_range[0] < 2:
        raise ValueError("training speakers need at least 2 utterances (PLDA, LDA)")
    extra_between_rank = min(8, dim) if extra_between_rank is None else extra_between_rank
    extra_within_rank = min(12, dim) if extra_within_rank is None else extra_within_rank
    if extra_between_rank > dim or extra_within_rank > dim:
        raise ValueError("the extra in-domain ranks must not exceed dim")
    rng = np.random.default_rng(seed)
    timing = np.random.default_rng([seed, 1]) if durations else None

    def timed(duration_range_of_set):
        if timing is None:
            return None
        return timing, duration_range_of_set, duration_tau, duration_reference

    decay = dim / 6.0 if between_decay is None else between_decay
    between_var = between_scale * np.exp(-np.arange(dim) / decay) + 0.05
    within_var = np.geomspace(within_range[1], within_range[0], dim)
    between = _factor(random_rotation(rng, dim), between_var)
    within = _factor(random_rotation(rng, dim), within_var)
    mu = rng.normal(0.0, mean_scale, dim)
    shift = rng.normal(0.0, shift_scale, dim)
    extra_b = _factor(random_rotation(rng, dim), np.linspace(*extra_between, extra_between_rank))
    extra_w = _factor(random_rotation(rng, dim), np.linspace(*extra_within, extra_within_rank))

    def out_of_domain_speakers(num):
        return mu + rng.standard_normal((num, dim)) @ between.T

    def in_domain_speakers(num):
        return (out_of_domain_speakers(num) + shift
                + rng.standard_normal((num, extra_b.shape[1])) @ extra_b.T)

    counts = _counts(rng, num_train_speakers, *train_utts_range, median=train_utts_median)
    _, train = _speaker_set(rng, "tr", out_of_domain_speakers(num_train_speakers), counts,
                            "%s-u%02d", [within], within_dof, timed(train_duration_range))
    counts = _counts(rng, num_adapt_speakers, *adapt_utts_range)
    _, adapt = _speaker_set(rng, "ad", in_domain_speakers(num_adapt_speakers), counts,
                            "%s-u%02d", [within, extra_w], within_dof, timed(duration_range))

    def evaluation(prefix, speakers):
        counts = _counts(rng, len(speakers), *enroll_utts_range)
        spk_ids, enroll = _speaker_set(rng, prefix, speakers, counts, "%s-enr%d",
                                       [within, extra_w], within_dof, timed(duration_range))
        counts = _counts(rng, len(speakers), *test_utts_range)
        _, test = _speaker_set(rng, prefix, speakers, counts, "%s-tst%02d",
                               [within, extra_w], within_dof, timed(duration_range))
        test_keys = np.asarray(test.keys)
        trial_enroll = np.repeat(np.asarray(spk_ids), len(test_keys))
        trial_test = np.tile(test_keys, len(spk_ids))
        trial_target = trial_enroll == np.tile(np.asarray(test.labels), len(spk_ids))
        return enroll, test, trial_enroll, trial_test, trial_target

    enroll, test, trial_enroll, trial_test, trial_target = evaluation(
        "ev", in_domain_speakers(num_eval_speakers))
    dev = (evaluation("dv", in_domain_speakers(num_dev_speakers)) if num_dev_speakers > 0
           else None)
    truth = {"seed": seed, "mu": mu, "between": between @ between.T,
             "within": within @ within.T, "within_dof": within_dof, "shift": shift,
             "extra_between": extra_b @ extra_b.T, "extra_within": extra_w @ extra_w.T}
    if durations:
        truth.update(duration_range=tuple(duration_range),
                     train_duration_range=tuple(train_duration_range), duration_tau=duration_tau,
                     duration_reference=duration_reference)
    return SyntheticCorpus(train, adapt, enroll, test, trial_enroll, trial_test, trial_target,
                           truth, dev)
