"""Cohort score normalisation: Z-, T-, S- and adaptive S-norm (numpy only, no files).

Definitions as WeSpeaker's ``wespeaker/bin/score_norm.py`` (``get_mean_std`` and its main):
each side of a trial (the enrollment vector e, the test vector t) is scored against every vector
of a cohort; mu and sigma are the mean and the *population* standard deviation (ddof 0) of its
``top_n`` highest cohort scores (S-norm: all of the cohort), and a trial score s becomes

    z-norm:   (s - mu_e) / sigma_e
    t-norm:   (s - mu_t) / sigma_t
    s/as-norm: ((s - mu_e) / sigma_e + (s - mu_t) / sigma_t) / 2

S-norm and AS-norm share the formula; they differ only in the statistics (all C cohort scores
versus the N highest). Z- and T-norm here also honour ``top_n`` (adaptive Z/T-norm) when given.

Zero spread: a side whose selected cohort scores are all equal has sigma = 0 and no defined
normalised score; ``normalize_scores`` and ``ScoreNormalizer.fit`` raise ``ValueError`` naming
the row instead of dividing by zero (WeSpeaker would silently produce inf/nan).
"""

import numpy as np

METHODS = ("none", "z", "t", "s", "as")


def cohort_statistics(cohort_scores, top_n=None):
    """Per row of ``cohort_scores`` (n, C): mean and population std (ddof 0) of the ``top_n``
    highest scores (``None`` or ``top_n >= C``: all C). Returns two float64 arrays of length n.

    The top-N selection is a partial sort (``np.partition``), not a full sort as in WeSpeaker;
    the selected set, hence mean and std, are the same.
    """
    S = np.asarray(cohort_scores, dtype=np.float64)
    if S.ndim != 2:
        raise ValueError("cohort scores must be a 2-D array (rows x cohort), got shape %s"
                         % (S.shape,))
    num_cohort = S.shape[1]
    if num_cohort == 0:
        raise ValueError("the cohort is empty")
    if top_n is not None:
        top_n = int(top_n)
        if top_n < 1:
            raise ValueError("top_n must be at least 1, got %d" % top_n)
        if top_n < num_cohort:
            # The top_n largest values: the last top_n after partitioning at C - top_n.
            S = np.partition(S, num_cohort - top_n, axis=1)[:, num_cohort - top_n:]
    mean = S.mean(axis=1)
    std = np.sqrt(np.mean((S - mean[:, None]) ** 2, axis=1))
    return mean, std


def blockwise_cohort_statistics(score_block, num_rows, top_n=None, block=1024):
    """``cohort_statistics`` of a (num_rows, C) score matrix that is never held whole:
    ``score_block(start, stop)`` returns rows ``start:stop`` of it (one matrix product), so
    memory is ``block x C`` values at a time."""
    mean = np.empty(num_rows)
    std = np.empty(num_rows)
    for start in range(0, num_rows, block):
        stop = min(start + block, num_rows)
        mean[start:stop], std[start:stop] = cohort_statistics(score_block(start, stop), top_n)
    return mean, std


def _check_spread(std, side):
    std = np.asarray(std, dtype=np.float64)
    bad = np.flatnonzero(~(std > 0) | ~np.isfinite(std))
    if bad.size:
        raise ValueError("%s cohort statistics of row %d have standard deviation %r: its cohort "
                         "scores are constant (or not finite), so the score cannot be normalised"
                         % (side, int(bad[0]), float(std.flat[bad[0]])))
    return std


def normalize_scores(scores, method, enroll_mean=None, enroll_std=None, test_mean=None,
                     test_std=None):
    """Normalised trial scores (WeSpeaker's formula, see the module docstring).

    ``scores`` and the statistics are aligned arrays (one entry per trial, or broadcastable).
    ``method`` is one of "none", "z" (needs the enrollment statistics), "t" (the test
    statistics), "s" or "as" (both). Raises ValueError on an unknown method, missing
    statistics or a non-positive standard deviation.
    """
    if method not in METHODS:
        raise ValueError("unknown score normalisation %r (expected one of %s)"
                         % (method, ", ".join(METHODS)))
    s = np.asarray(scores, dtype=np.float64)
    if method == "none":
        return s.copy()
    use_enroll = method in ("z", "s", "as")
    use_test = method in ("t", "s", "as")
    if use_enroll and (enroll_mean is None or enroll_std is None):
        raise ValueError("%s-norm needs the enrollment-side cohort statistics" % method)
    if use_test and (test_mean is None or test_std is None):
        raise ValueError("%s-norm needs the test-side cohort statistics" % method)
    if use_enroll:
        z = (s - np.asarray(enroll_mean, dtype=np.float64)) / _check_spread(enroll_std, "enroll")
        if not use_test:
            return z
    t = (s - np.asarray(test_mean, dtype=np.float64)) / _check_spread(test_std, "test")
    if not use_enroll:
        return t
    return 0.5 * (z + t)


class ScoreNormalizer:
    """Cohort score normalisation as an estimator.

    ``fit(enroll_cohort_scores, test_cohort_scores)`` takes the (n_enroll, C) and (n_test, C)
    matrices of every enrollment / test vector scored against the cohort and stores per-vector
    ``enroll_mean_``, ``enroll_std_``, ``test_mean_``, ``test_std_`` (a side the method does
    not use may be None). ``transform(scores, enroll_rows, test_rows)`` normalises the scores
    of trials (enroll_rows[i], test_rows[i]). ``top_n`` is used by "as" (required), and by
    "z"/"t" if given; "s" always uses the whole cohort.
    """

    def __init__(self, method="as", top_n=None):
        self.method = method
        self.top_n = top_n

    def _top_n(self):
        if self.method not in METHODS:
            raise ValueError("unknown score normalisation %r (expected one of %s)"
                             % (self.method, ", ".join(METHODS)))
        if self.method == "as" and self.top_n is None:
            raise ValueError("as-norm needs top_n")
        return None if self.method == "s" else self.top_n

    def fit(self, enroll_cohort_scores=None, test_cohort_scores=None):
        top_n = self._top_n()
        self.enroll_mean_ = self.enroll_std_ = self.test_mean_ = self.test_std_ = None
        if self.method in ("z", "s", "as"):
            if enroll_cohort_scores is None:
                raise ValueError("%s-norm needs the enrollment cohort scores" % self.method)
            self.enroll_mean_, self.enroll_std_ = cohort_statistics(enroll_cohort_scores, top_n)
            _check_spread(self.enroll_std_, "enroll")
        if self.method in ("t", "s", "as"):
            if test_cohort_scores is None:
                raise ValueError("%s-norm needs the test cohort scores" % self.method)
            self.test_mean_, self.test_std_ = cohort_statistics(test_cohort_scores, top_n)
            _check_spread(self.test_std_, "test")
        return self

    def transform(self, scores, enroll_rows, test_rows):
        if self.method == "none":
            return np.asarray(scores, dtype=np.float64).copy()
        if not hasattr(self, "enroll_mean_"):
            raise ValueError("ScoreNormalizer is not fitted")
        e = np.asarray(enroll_rows, dtype=np.intp)
        t = np.asarray(test_rows, dtype=np.intp)

        def pick(values, rows):
            return None if values is None else values[rows]

        return normalize_scores(scores, self.method,
                                pick(self.enroll_mean_, e), pick(self.enroll_std_, e),
                                pick(self.test_mean_, t), pick(self.test_std_, t))
