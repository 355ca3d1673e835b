"""Quality measure functions (QMF): calibration and fusion that also see per-trial quality.

A quality measure is one number per trial side (an utterance's duration, an embedding's norm,
a cohort mean): ``QualityMeasure`` says how a side's raw value becomes a feature (durations:
the log of the value clipped to [low, high], as Hyperion's ``normalize_duration``; others: the
value itself). A trial gets the minimum and the maximum of its two sides' features, per measure
(WeSpeaker's ``score_calibration.py`` and Hyperion's ``segment_to_trial_qm`` both do: the pair
is symmetric and the worse side usually limits the trial). WeSpeaker also adds max - min and
max / min of raw durations; with log features the difference is a linear combination of min and
max and adds nothing, so we keep the two.

``QualityFusion`` learns

    llr = sum_k w_k s_k + sum_j v_j q_j [+ sum_{k,j} u_kj s_k q_j] + b

by the prior-weighted logistic regression of ``models.calibration`` (BOSARIS's objective: the
quality features are more columns of the same ``LinearFusion``), so the output stays a
calibrated log-likelihood ratio. The optional products s_k q_j (``interactions``) let the
slope depend on quality: when short recordings only dilute the target scores, the Bayes LLR of
Gaussian scores is a(q) s + b(q), whose a(q) an additive QMF cannot follow. Neither WeSpeaker
nor Hyperion uses them; they are off by default.
"""

from dataclasses import dataclass

import numpy as np

from pauc_backend.models.calibration import LinearFusion

__all__ = ["QualityMeasure", "DURATION", "QualityFusion", "side_features", "trial_features",
           "feature_names", "sum_by_model"]


@dataclass(frozen=True)
class QualityMeasure:
    """One per-side measure: ``name``, and whether its feature is log(clip(value, low, high))
    (``log=True``, for durations in seconds or frame counts) or the value itself."""
    name: str
    log: bool = False
    low: float = 0.0
    high: float = 0.0

    def __post_init__(self):
        if not self.name or any(c.isspace() for c in self.name):
            raise ValueError("a quality measure needs a name without whitespace, got %r"
                             % (self.name,))
        if self.log and not 0 < self.low <= self.high:
            raise ValueError("the clip range of the logged measure %s must satisfy "
                             "0 < low <= high, got [%g, %g]" % (self.name, self.low, self.high))

    def feature_label(self):
        return "log %s" % self.name if self.log else self.name


DURATION = QualityMeasure("duration", log=True, low=0.1, high=30.0)   # Hyperion's clip (s)


def side_features(measures, values):
    """Features (n, M) of raw per-side values (n, M): log(clip) or identity, per measure."""
    values = np.asarray(values, dtype=np.float64).reshape(-1, len(measures))
    out = np.array(values)
    for j, measure in enumerate(measures):
        if measure.log:
            column = values[:, j]
            if np.any(~(column > 0)):
                raise ValueError("%s values must be positive to take their log; got %r"
                                 % (measure.name, float(column[~(column > 0)][0])))
            out[:, j] = np.log(np.clip(column, measure.low, measure.high))
    return out


def trial_features(measures, enroll_values, test_values):
    """(n, 2M): per measure, min and max of the two sides' features (module docstring)."""
    e = side_features(measures, enroll_values)
    t = side_features(measures, test_values)
    out = np.empty((e.shape[0], 2 * len(measures)))
    np.minimum(e, t, out=out[:, 0::2])
    np.maximum(e, t, out=out[:, 1::2])
    return out


def feature_names(measures):
    """Names of ``trial_features``' columns: ``min(log duration)``, ``max(log duration)``..."""
    return [name for m in measures for name in ("min(%s)" % m.feature_label(),
                                                "max(%s)" % m.feature_label())]


def sum_by_model(model_utts, utt_values):
    """The value of an enrollment model made of several utterances: the sum of theirs (a
    model averaged over three 10 s recordings saw 30 s of speech). ``model_utts``: {model:
    [utts]} (spk2utt); ``utt_values``: {utt: value}. KeyError naming a missing utterance."""
    out = {}
    for model, utts in model_utts.items():
        missing = [u for u in utts if u not in utt_values]
        if missing:
            raise KeyError("utterance %s of model %s has no value" % (missing[0], model))
        out[model] = float(sum(utt_values[u] for u in utts))
    return out


class QualityFusion:
    """Calibration/fusion of score columns with quality measures (module docstring).

    ``measures``: a sequence of ``QualityMeasure``; ``interactions``: add the products of each
    score column with each quality feature; ``prior``, ``regularization``, ``max_iter``,
    ``tol``: as ``LinearFusion``. Fitted: ``weights_`` (K score weights), ``quality_weights_``
    (2M), ``interaction_weights_`` (K x 2M, zeros without interactions), ``offset_``,
    ``fusion_`` (the LinearFusion over every feature column), ``n_iter_``, ``objective_``.
    """

    def __init__(self, measures=(DURATION,), interactions=False, prior=0.5, regularization=0.0,
                 max_iter=100, tol=1e-10):
        self.measures = measures
        self.interactions = interactions
        self.prior = prior
        self.regularization = regularization
        self.max_iter = max_iter
        self.tol = tol

    def feature_names(self, num_scores=1):
        names = ["score %d" % (k + 1) for k in range(num_scores)]
        quality = feature_names(tuple(self.measures))
        names += quality
        if self.interactions:
            names += ["score %d * %s" % (k + 1, q) for k in range(num_scores) for q in quality]
        return names

    def features(self, scores, enroll_quality, test_quality):
        """The (n, K + 2M [+ 2MK]) columns the logistic regression sees."""
        measures = tuple(self.measures)
        if not measures:
            raise ValueError("QualityFusion needs at least one quality measure")
        scores = np.asarray(scores, dtype=np.float64)
        scores = scores.reshape(scores.shape[0], -1)
        enroll_quality = np.asarray(enroll_quality, dtype=np.float64)
        test_quality = np.asarray(test_quality, dtype=np.float64)
        for name, q in (("enroll_quality", enroll_quality), ("test_quality", test_quality)):
            if q.reshape(q.shape[0], -1).shape != (scores.shape[0], len(measures)):
                raise ValueError("%s must have shape (%d, %d) (a value per trial and measure), "
                                 "got %s" % (name, scores.shape[0], len(measures), q.shape))
            if not np.isfinite(q).all():
                raise ValueError("%s contains NaN or infinite values" % name)
        quality = trial_features(measures, enroll_quality, test_quality)
        columns = [scores, quality]
        if self.interactions:
            columns.append((scores[:, :, None] * quality[:, None, :]).reshape(scores.shape[0],
                                                                                -1))
        return np.hstack(columns)

    def fit(self, scores, labels, enroll_quality, test_quality):
        """Learn the weights from scores (n,) or (n, K), labels and each side's raw quality
        values (n, M) (or (n,) for one measure)."""
        scores = np.asarray(scores, dtype=np.float64)
        num_scores = 1 if scores.ndim == 1 else scores.shape[1]
        X = self.features(scores, enroll_quality, test_quality)
        names = self.feature_names(num_scores)
        constant = (X.max(axis=0) == X.min(axis=0))[num_scores:]
        if constant.any():
            j = num_scores + int(np.argmax(constant))
            raise ValueError("quality feature %s is constant (%.7g) over the training trials: "
                             "it carries no information to calibrate with (e.g. every "
                             "recording has the same duration)" % (names[j], X[0, j]))
        self.fusion_ = LinearFusion(prior=self.prior, regularization=self.regularization,
                                    max_iter=self.max_iter, tol=self.tol).fit(X, labels)
        self._unpack(num_scores)
        self.n_iter_ = self.fusion_.n_iter_
        self.objective_ = self.fusion_.objective_
        self.grad_norm_ = self.fusion_.grad_norm_
        return self

    def _unpack(self, num_scores):
        w = self.fusion_.weights_
        num_q = 2 * len(self.measures)
        self.n_scores_ = num_scores
        self.weights_ = w[:num_scores]
        self.quality_weights_ = w[num_scores:num_scores + num_q]
        self.interaction_weights_ = (w[num_scores + num_q:].reshape(num_scores, num_q)
                                     if self.interactions else np.zeros((num_scores, num_q)))
        self.offset_ = self.fusion_.offset_

    def transform(self, scores, enroll_quality, test_quality):
        """Calibrated LLRs (n,) of scores and each side's raw quality values."""
        scores = np.asarray(scores, dtype=np.float64)
        scores = scores.reshape(scores.shape[0], -1)
        if scores.shape[1] != self.n_scores_:
            raise ValueError("the model fuses %d score columns, got %d"
                             % (self.n_scores_, scores.shape[1]))
        return self.fusion_.transform(self.features(scores, enroll_quality, test_quality))

    @classmethod
    def from_params(cls, measures, interactions, num_scores, weights, offset, prior=0.5):
        """A fitted model from stored parameters (``weights`` over every feature column)."""
        model = cls(measures=tuple(measures), interactions=interactions, prior=prior)
        expected = num_scores * (1 + (2 * len(measures) if interactions else 0)) \
            + 2 * len(measures)
        weights = np.asarray(weights, dtype=np.float64).ravel()
        if weights.size != expected:
            raise ValueError("a quality fusion of %d score(s) and %d measure(s)%s has %d "
                             "weights, got %d" % (num_scores, len(measures),
                                                  " with interactions" if interactions else "",
                                                  expected, weights.size))
        model.fusion_ = LinearFusion.from_params(weights, offset, prior=prior)
        model._unpack(num_scores)
        return model
