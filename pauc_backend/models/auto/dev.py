"""Labelled development trials of the user's domain for pAUCMetric (auto) (issue 34 item 2).

``DevTrials`` is a plain object (numpy arrays, no files): the raw vectors the trials use, the
enrollment models (each the mean of some of those vectors, scored with num_utts = their
count, as score-pauc-auto scores speaker means), the test side, the trials with their labels,
the speaker of each enrollment model and test vector (the clusters of the bootstrap; a model
or vector without one is its own cluster) and, optionally, each vector's duration (seconds;
an enrollment model's is the sum of its vectors', as train-calibration's QMF takes it).

How the automatic back-end uses them (models.auto.devscores, models.auto.backend):

* every fold's models (trained on the other folds of the training speakers) also score the
  development trials; a candidate's development scores are its folds' scores averaged, its
  development figures are those of these scores on the whole list, and the standard error of
  a difference between two candidates comes from paired two-way cluster-bootstrap resamples
  of the development speakers (metrics.bootstrap; the same resamples for every candidate);
* a fusion is rated with weights cross-fitted over groups of the enrolled speakers (the
  trials of a group are fused with weights learned on the other groups' trials);
* the choice is rated on them (models.auto.selection);
* the chosen back-end, retrained on every training speaker, scores them once more, and its
  final fusion / calibration (with quality measures when durations are given,
  models.auto.qmf) is learned on those scores.

Cost, bounded whatever the development set (``capped``): at most ``max_trials`` trials (every
target trial up to half of it, a seeded uniform sample of the non-targets for the rest; the
sample adds to a development pAUC the sampling error stated in models.crossfit, about 0.0025
at 150,000 non-targets and pAUC[0,0.01] 0.9, and the bootstrap resamples are of the sample,
so the standard errors the choice reads include it), scored by each fold task (one feature pass over the
enrollment models and test vectors, one scoring of the trials per system), their fold sums
held as one float64 column per system and LDA dimension while a rating needs it, and
``resamples`` bootstrap resamples per rated candidate (each O(trials)).
"""

from dataclasses import dataclass, field

import numpy as np

from pauc_backend.metrics.bootstrap import cluster_codes

__all__ = ["DevTrials"]


@dataclass
class DevTrials:
    """Labelled development trials (module doc). ``vectors`` (n, D) raw; ``enroll``: per
    enrollment model, the rows of ``vectors`` averaged into it; ``test``: per test item, its
    row; ``enroll_index``/``test_index``/``is_target``: per trial; ``enroll_speaker``
    (per model) and ``test_speaker`` (per test item): cluster labels of the bootstrap (None:
    each model / item its own); ``durations``: per vector, seconds (None: none);
    ``sampled``: the sentence saying how the trials were capped ("" when not)."""
    vectors: np.ndarray
    enroll: list
    test: np.ndarray
    enroll_index: np.ndarray
    test_index: np.ndarray
    is_target: np.ndarray
    enroll_speaker: np.ndarray = None
    test_speaker: np.ndarray = None
    durations: np.ndarray = None
    sampled: str = ""
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    # -- checks ------------------------------------------------------------------------------
    def check(self, dim):
        """The trials as the back-end reads them; ValueError naming the problem."""
        X = np.asarray(self.vectors)
        if X.dtype != np.float32:
            X = X.astype(np.float32)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] != dim:
            raise ValueError("development vectors must be a non-empty (n, %d) array (the "
                             "training dimension), got shape %s" % (dim, X.shape))
        from pauc_backend.models import blocked
        bad = blocked.first_nonfinite(X)
        if bad is not None:
            raise ValueError("development vector %d contains NaN or Inf" % bad)
        self.vectors = X
        self.enroll = [np.asarray(rows, dtype=np.intp).reshape(-1) for rows in self.enroll]
        self.test = np.asarray(self.test, dtype=np.intp).reshape(-1)
        if not self.enroll or any(r.size == 0 for r in self.enroll):
            raise ValueError("every development enrollment model needs at least one vector")
        rows = np.concatenate(self.enroll + [self.test])
        if rows.size and (rows.min() < 0 or rows.max() >= X.shape[0]):
            raise ValueError("a development enrollment or test row is outside the vectors")
        self.enroll_index = np.asarray(self.enroll_index, dtype=np.intp).reshape(-1)
        self.test_index = np.asarray(self.test_index, dtype=np.intp).reshape(-1)
        self.is_target = np.asarray(self.is_target, dtype=bool).reshape(-1)
        n = self.is_target.size
        if self.enroll_index.size != n or self.test_index.size != n:
            raise ValueError("the development trials need one enrollment index, test index "
                             "and label each")
        if n and (self.enroll_index.min() < 0 or self.enroll_index.max() >= len(self.enroll)
                  or self.test_index.min() < 0 or self.test_index.max() >= self.test.size):
            raise ValueError("a development trial names an enrollment model or test item "
                             "that does not exist")
        targets = int(self.is_target.sum())
        if targets == 0 or targets == n:
            raise ValueError("the development trials need target and non-target trials (got "
                             "%d target and %d non-target)" % (targets, n - targets))
        for name, labels, size in (("enroll_speaker", self.enroll_speaker, len(self.enroll)),
                                   ("test_speaker", self.test_speaker, self.test.size)):
            if labels is not None and np.asarray(labels).shape != (size,):
                raise ValueError("%s needs one label per %s" % (
                    name, "enrollment model" if name.startswith("enroll") else "test item"))
        if self.durations is not None:
            d = np.asarray(self.durations, dtype=np.float64).reshape(-1)
            if d.size != X.shape[0] or not np.all(np.isfinite(d) & (d > 0)):
                raise ValueError("development durations need one positive finite value per "
                                 "vector")
            self.durations = d
        self._cache.clear()
        return self

    # -- what the scoring needs ---------------------------------------------------------------
    @property
    def num_trials(self):
        return int(self.is_target.size)

    @property
    def num_target(self):
        return int(self.is_target.sum())

    @property
    def num_utts(self):
        """Vectors averaged into each enrollment model (int64 array)."""
        return np.array([r.size for r in self.enroll], dtype=np.int64)

    def enroll_vectors(self):
        """float32 means of each enrollment model's raw vectors (a plain copy of single
        rows), as HeldOutTrials.enroll_vectors and ivector-mean."""
        if "enroll" not in self._cache:
            X = self.vectors
            if all(r.size == 1 for r in self.enroll):
                E = np.asarray(X[np.concatenate(self.enroll)], dtype=np.float32)
            else:
                E = np.stack([np.asarray(X[r], dtype=np.float64).mean(axis=0)
                              for r in self.enroll]).astype(np.float32)
            self._cache["enroll"] = E
        return self._cache["enroll"]

    def test_vectors(self):
        return np.asarray(self.vectors[self.test], dtype=np.float32)

    def clusters(self):
        """(enrollment cluster code per trial, test cluster code per trial): the speakers of
        the two-way bootstrap."""
        if "clusters" not in self._cache:
            e = (np.arange(len(self.enroll)) if self.enroll_speaker is None
                 else np.asarray(self.enroll_speaker))[self.enroll_index]
            t = (np.arange(self.test.size) if self.test_speaker is None
                 else np.asarray(self.test_speaker))[self.test_index]
            # one code space for both sides is not needed: the two factors resample apart
            self._cache["clusters"] = (cluster_codes(e.astype(str))[0],
                                       cluster_codes(t.astype(str))[0])
        return self._cache["clusters"]

    def groups(self, count=5, seed=0):
        """Per trial, its group (0..G-1) for cross-fitting a fusion: the enrolled speakers
        (clusters) dealt into G = min(count, their number) groups, shuffled (seeded); None
        with fewer than 2 enrolled speakers."""
        codes = self.clusters()[0]
        num = int(codes.max()) + 1
        g = min(int(count), num)
        if g < 2:
            return None
        order = np.random.default_rng([int(seed), 34]).permutation(num)
        of = np.empty(num, dtype=np.intp)
        of[order] = np.arange(num) % g
        return of[codes]

    def trial_durations(self):
        """(enrollment side, test side) durations of each trial (an enrollment model's is the
        sum of its vectors'), or None without durations."""
        if self.durations is None:
            return None
        d = self.durations
        enroll = np.array([d[r].sum() for r in self.enroll])
        return enroll[self.enroll_index], d[self.test][self.test_index]

    def side_norms(self):
        """(enrollment model norms, test vector norms) of the raw vectors as scored."""
        return (np.linalg.norm(self.enroll_vectors().astype(np.float64), axis=1),
                np.linalg.norm(self.test_vectors().astype(np.float64), axis=1))

    # -- the cap -----------------------------------------------------------------------------
    def capped(self, max_trials, seed):
        """These trials, or (more than ``max_trials``; 0: no cap) every target trial up to
        half of it and a seeded uniform sample of the non-targets for the rest (the trials
        keep their order); ``sampled`` says so."""
        n = self.num_trials
        if not max_trials or n <= max_trials:
            return self
        rng = np.random.default_rng([int(seed), 35])
        tar, non = np.flatnonzero(self.is_target), np.flatnonzero(~self.is_target)
        half = int(max_trials) // 2
        if tar.size > half:
            tar = rng.choice(tar, half, replace=False)
        non = rng.choice(non, min(non.size, int(max_trials) - tar.size), replace=False)
        keep = np.sort(np.concatenate([tar, non]))
        out = DevTrials(self.vectors, self.enroll, self.test, self.enroll_index[keep],
                        self.test_index[keep], self.is_target[keep], self.enroll_speaker,
                        self.test_speaker, self.durations,
                        "a seeded sample of %d of the %d trials (every target up to half)"
                        % (keep.size, n))
        return out

    def describe(self):
        """One sentence: the trials, the models and the speakers."""
        e, t = self.clusters()
        text = ("%d trials (%d target) of %d enrollment models (%s) against %d test vectors; "
                "bootstrap clusters: %d enrolled and %d test speakers" % (
                    self.num_trials, self.num_target, len(self.enroll),
                    "single vectors" if all(r.size == 1 for r in self.enroll)
                    else "means of %d-%d vectors" % (min(r.size for r in self.enroll),
                                                     max(r.size for r in self.enroll)),
                    self.test.size, int(e.max()) + 1, int(t.max()) + 1))
        return text + ("; " + self.sampled if self.sampled else "")
