"""Label-free score calibration: a two-component Gaussian mixture fitted to unlabelled scores.

The model (the one of Hyperion's ``UnsupGaussCalibration``, hyperion-ml/hyperion
``hyperion/np/calibration/unsup_gauss_calibration.py`` with ``gauss_calibration.py``, and of
BUT's ``twoGMMcalib_lin``, BUTSpeechFIT/VBx ``VBx/diarization_lib.py``): the scores s of trials
whose labels are unknown are a mixture

    p(s) = w N(s; m_tar, v) + (1 - w) N(s; m_non, v),

the component of higher mean being the targets, its weight w the target prior of the pool. It
is fitted by EM; with the shared variance the log-likelihood ratio of the two components is
affine in the score,

    llr(s) = log N(s; m_tar, v) - log N(s; m_non, v) = a s + b,
    a = (m_tar - m_non) / v,  b = (m_non^2 - m_tar^2) / (2 v),

Hyperion's ``GaussCalibration._compute_scale_bias`` (the calibrated score is this LLR: the
fitted w is reported, not added). VBx returns the posterior log odds llr(s) + logit(w) and,
as the AHC threshold, the score where they are 0 (where the two weighted densities cross):
``threshold(prior_)`` here.

The two originals differ in their start and both run 20 EM iterations:

* ``init="hyperion"``: m_tar = max(s), m_non = mean(s), v = var(s), w = ``init_prior`` (0.5);
* ``init="vbx"``: m = mean(s) -/+ std(s), w = 0.5, v = var(s) (also Hyperion's diarization
  ``DiarAHCPLDA._unsup_gmm_calibration``: one Gaussian split at +- one standard deviation).

Here EM runs until the mean log-likelihood per score changes by less than ``tol`` (or
``max_iter`` iterations; ``max_iter=20, tol=0`` is the originals' fixed 20). Options beyond
the originals' defaults: ``prior=p`` holds w at p instead of re-estimating it (what Hyperion's
mixtures do with ``update_pi=False``; UnsupGaussCalibration itself re-estimates the prior it
is given); ``covariance="separate"``: a variance per component (its LLR is then quadratic in
the score, not affine, and ``to_linear_calibration`` refuses it).

Degenerate data raise ValueError: non-finite or fewer than ``MIN_SCORES`` scores, all scores
equal, and data one Gaussian describes as well: the two-component fit must beat the
one-Gaussian fit by BIC (Hyperion's ``use_bic`` test in ``DiarAHCPLDA``: mean log-likelihood
gain per score above (extra parameters) log(n) / (2 n); EM may also end where the two
components coincide, a gain of 0), and neither component may hold less than one score's
weight. ``max_prior`` (0.5; None: no limit, as the originals) refuses a fit whose component
of higher mean holds more than that share of the scores: among pairs of a set of more than
two speakers the targets are a minority, and such a fit models the shape of the non-target
scores instead (a skewed bulk: benchmarks/RESULTS_calibration_anchors.md, PLDA scores of
ETRI's adaptation pairs, fitted priors 0.6-0.94 where about 0.02 of the pairs are targets).

EM runs on the scores standardised by their mean and standard deviation (the parameters are
mapped back), with a variance floor of ``var_floor`` times the scores' variance; both start
values are affine-equivariant, so the fitted LLR of a trial does not change when every score
is transformed by s -> c s + d, c > 0 (up to rounding).

Cost: O(n) memory (a few n-sized float64 temporaries) and O(n) time per EM iteration for n
scores. The caller bounds n: ``sample_pairs`` draws at most ``max_pairs`` distinct pairs of n
vectors (O(max_pairs) memory and time, never an n^2 array), which the system then scores.
"""

import math

import numpy as np

__all__ = ["GaussianMixtureCalibration", "sample_pairs", "INITS", "COVARIANCES",
           "MIN_SCORES"]

INITS = ("hyperion", "vbx")
COVARIANCES = ("tied", "separate")
MIN_SCORES = 10
_LOG_2PI = math.log(2.0 * math.pi)


def sample_pairs(n, max_pairs, random_state=0):
    """(i, j), i < j: every distinct unordered pair of n items when there are at most
    ``max_pairs`` of them, else a seeded uniform sample of ``max_pairs`` distinct pairs, in
    increasing order of (i, j). Drawn as positions in the condensed (upper-triangle) order,
    mapped to (i, j) by a search among the n row starts: O(max_pairs + n) memory."""
    n, max_pairs = int(n), int(max_pairs)
    if n < 2:
        raise ValueError("pairs need at least 2 items (got %d)" % n)
    if max_pairs < 1:
        raise ValueError("max_pairs must be >= 1 (got %d)" % max_pairs)
    total = n * (n - 1) // 2
    if total <= max_pairs:
        i, j = np.triu_indices(n, k=1)
        return i.astype(np.int64), j.astype(np.int64)
    rng = np.random.default_rng(random_state)
    # numpy's Generator draws a small sample of a large range by a set (Floyd's method), a
    # large one (over 1/50 of the range) by a permutation: at most 50 x max_pairs integers
    k = np.sort(rng.choice(total, size=max_pairs, replace=False)).astype(np.int64)
    rows = np.arange(n, dtype=np.int64)
    starts = rows * n - rows * (rows + 1) // 2          # row i's first pair (i, i + 1)
    i = np.searchsorted(starts, k, side="right") - 1
    return i, k - starts[i] + i + 1


def _checked(scores):
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 2 and s.shape[1] == 1:
        s = s[:, 0]
    if s.ndim != 1:
        raise ValueError("scores must be a 1-D array (got shape %s)" % (s.shape,))
    if s.size < MIN_SCORES:
        raise ValueError("a two-Gaussian calibration needs at least %d scores (got %d)"
                         % (MIN_SCORES, s.size))
    if not np.isfinite(s).all():
        raise ValueError("scores contain NaN or infinite values (score %d)"
                         % int(np.argmin(np.isfinite(s))))
    if np.ptp(s) == 0:
        raise ValueError("all %d scores are equal (%.7g): there are no two components to fit"
                         % (s.size, s[0]))
    return s


class GaussianMixtureCalibration:
    """Unsupervised calibration of one score: the two-Gaussian mixture of the module doc.

    Parameters: ``init`` ("hyperion" or "vbx"), ``init_prior`` (Hyperion's start weight of the
    target component), ``prior`` (None: the target weight is estimated, as both originals do;
    a float in (0, 1): held at that value), ``covariance`` ("tied": shared variance, affine
    LLR; "separate"), ``max_iter``, ``tol`` (on the mean log-likelihood per score of the
    standardised scores), ``var_floor`` (relative to the scores' variance), ``max_prior``
    (None or the largest target weight accepted).

    Fitted: ``mean_target_``, ``mean_nontarget_``, ``var_target_``, ``var_nontarget_`` (equal
    when tied), ``prior_`` (the target weight), ``weights_`` / ``offset_`` (the affine LLR,
    tied only; as models.calibration.LinearCalibration), ``n_iter_``, ``converged_``,
    ``log_likelihood_`` (mean per score, of the scores as given), ``bic_gain_`` (the
    two-component fit's mean log-likelihood gain over one Gaussian minus the BIC penalty;
    > 0), ``n_scores_``.
    """

    def __init__(self, init="hyperion", init_prior=0.5, prior=None, covariance="tied",
                 max_iter=500, tol=1e-9, var_floor=1e-3, max_prior=0.5):
        self.init = init
        self.init_prior = init_prior
        self.prior = prior
        self.covariance = covariance
        self.max_iter = max_iter
        self.tol = tol
        self.var_floor = var_floor
        self.max_prior = max_prior

    def _check_params(self):
        if self.init not in INITS:
            raise ValueError("init must be one of %s (got %r)" % (", ".join(INITS), self.init))
        if self.covariance not in COVARIANCES:
            raise ValueError("covariance must be one of %s (got %r)"
                             % (", ".join(COVARIANCES), self.covariance))
        optional = tuple(n for n in ("prior", "max_prior") if getattr(self, n) is not None)
        for name in ("init_prior",) + optional:
            value = getattr(self, name)
            if not 0.0 < float(value) < 1.0:
                raise ValueError("%s must lie strictly between 0 and 1 (got %r)"
                                 % (name, value))
        if int(self.max_iter) < 1:
            raise ValueError("max_iter must be >= 1 (got %r)" % (self.max_iter,))
        if not float(self.tol) >= 0.0:
            raise ValueError("tol must be >= 0 (got %r)" % (self.tol,))
        if not 0.0 < float(self.var_floor) < 1.0:
            raise ValueError("var_floor must lie strictly between 0 and 1 (got %r)"
                             % (self.var_floor,))

    def _start(self, z):
        """(means [tar, non], variances [tar, non], target weight) on standardised z."""
        if self.init == "hyperion":
            means = np.array([z.max(), 0.0])
            w = float(self.init_prior)
        else:
            means = np.array([1.0, -1.0])
            w = 0.5
        if self.prior is not None:
            w = float(self.prior)
        return means, np.ones(2), w

    @staticmethod
    def _e_step(z, sums, means, variances, w):
        """(mean log-likelihood per score, target responsibility of each score). With
        t(z) = log w N(z; m_tar, v_tar) - log (1 - w) N(z; m_non, v_non) (affine when tied),
        p(z) = (1 - w) N(z; m_non, v_non) (1 + e^t): the non-target term's mean comes from
        the sums of z and z^2, so the pass over the scores is t, softplus(t), sigmoid(t)."""
        n, total, total2 = sums
        (mt, mn), (vt, vn) = means, variances
        quad = 0.5 / vn - 0.5 / vt
        t = z * (mt / vt - mn / vn)
        if quad:
            t += quad * z * z
        t += (0.5 * mn * mn / vn - 0.5 * mt * mt / vt - 0.5 * math.log(vt / vn)
              + math.log(w) - math.log1p(-w))
        e = np.exp(-np.abs(t))
        softplus = np.maximum(t, 0.0)
        softplus += np.log1p(e)
        mean_ll = (math.log1p(-w) - 0.5 * (_LOG_2PI + math.log(vn))
                   - 0.5 * (total2 - 2.0 * mn * total + n * mn * mn) / (n * vn)
                   + float(softplus.mean()))
        r = np.where(t >= 0, 1.0, e)
        r /= 1.0 + e
        return mean_ll, r

    def fit(self, scores):
        """Fit the mixture to unlabelled scores (n,) by EM; returns self."""
        self._check_params()
        s = _checked(scores)
        centre, scale = float(s.mean()), float(s.std())
        z = (s - centre) / scale
        z2 = z * z
        n = z.size
        sums = (n, float(z.sum()), float(z2.sum()))
        floor = float(self.var_floor)
        means, variances, w = self._start(z)
        fixed = self.prior is not None
        previous = -np.inf
        converged = False
        n_iter = 0
        while n_iter < int(self.max_iter):
            mean_ll, r = self._e_step(z, sums, means, variances, w)
            counts = np.array([r.sum(), 0.0])
            counts[1] = n - counts[0]
            if counts.min() < 1.0:
                raise ValueError(
                    "the two-Gaussian fit left a component with less than one score's weight "
                    "(%.3g of %d): the scores look like one component, there is no target "
                    "component to calibrate on" % (counts.min(), n))
            first = r @ z
            second = r @ z2
            means = np.array([first, sums[1] - first]) / counts
            spread = np.array([second, sums[2] - second]) - counts * means ** 2
            if self.covariance == "tied":
                variances = np.full(2, max(spread.sum() / n, floor))
            else:
                variances = np.maximum(spread / counts, floor)
            if not fixed:
                w = float(counts[0] / n)
            n_iter += 1
            if abs(mean_ll - previous) < float(self.tol):
                converged = True
                break
            previous = mean_ll
        if means[0] < means[1]:       # the target component is the one of higher mean
            means, variances, w = means[::-1], variances[::-1], 1.0 - w
            if fixed:
                raise ValueError("with the prior held at %g the component of higher mean "
                                 "took the non-target weight: the fit is not usable"
                                 % float(self.prior))
        mean_ll = self._e_step(z, sums, means, variances, w)[0]
        one_gaussian = -0.5 * (_LOG_2PI + 1.0)        # z has mean 0 and variance 1
        extra = (1 if self.covariance == "tied" else 2) + (0 if fixed else 1)
        self.bic_gain_ = mean_ll - one_gaussian - extra * math.log(n) / (2.0 * n)
        if not self.bic_gain_ > 0:
            raise ValueError(
                "one Gaussian describes the %d scores as well as two (BIC gain %.3g per "
                "score <= 0): there is no target component to calibrate on"
                % (n, self.bic_gain_))
        if self.max_prior is not None and w > float(self.max_prior):
            raise ValueError(
                "the component of higher mean holds %.3g of the %d scores (more than "
                "max_prior %g): it models the bulk of the scores, not a minority of targets"
                % (w, n, float(self.max_prior)))
        self.mean_target_ = centre + scale * float(means[0])
        self.mean_nontarget_ = centre + scale * float(means[1])
        self.var_target_ = scale ** 2 * float(variances[0])
        self.var_nontarget_ = scale ** 2 * float(variances[1])
        self.prior_ = float(w)
        self.n_iter_ = n_iter
        self.converged_ = converged
        self.log_likelihood_ = mean_ll - math.log(scale)
        self.n_scores_ = n
        if self.covariance == "tied":
            v = self.var_target_
            slope = (self.mean_target_ - self.mean_nontarget_) / v
            self.weights_ = np.array([slope])
            # b = (m_non^2 - m_tar^2) / (2 v) = -a (m_tar + m_non) / 2
            self.offset_ = float(-slope * 0.5 * (self.mean_target_ + self.mean_nontarget_))
        else:
            self.weights_ = self.offset_ = None
        return self

    def transform(self, scores):
        """The LLR log N(s; target) - log N(s; non-target) of each score."""
        s = np.asarray(scores, dtype=np.float64)
        if self.covariance == "tied":
            return s * self.weights_[0] + self.offset_
        vt, vn = self.var_target_, self.var_nontarget_
        return (-0.5 * math.log(vt / vn) - 0.5 * (s - self.mean_target_) ** 2 / vt
                + 0.5 * (s - self.mean_nontarget_) ** 2 / vn)

    def threshold(self, p_target=None):
        """The score (tied only) where the LLR is the Bayes threshold -logit(p_target);
        ``p_target=None``: the fitted prior, where the weighted densities cross (VBx's AHC
        threshold)."""
        if self.covariance != "tied":
            raise ValueError("a threshold of the quadratic (separate-variance) LLR is not "
                             "unique; use covariance='tied'")
        p = self.prior_ if p_target is None else float(p_target)
        if not 0.0 < p < 1.0:
            raise ValueError("p_target must lie strictly between 0 and 1 (got %r)" % p)
        return float((math.log1p(-p) - math.log(p) - self.offset_) / self.weights_[0])

    def to_linear_calibration(self, prior=0.01):
        """The fitted affine LLR as a models.calibration.LinearCalibration (what the
        back-end's calibration files store); ``prior``: the objective's prior recorded with
        it."""
        from pauc_backend.models.calibration import LinearCalibration
        if self.covariance != "tied":
            raise ValueError("the separate-variance LLR is quadratic, not a linear calibration")
        return LinearCalibration.from_params(self.weights_, self.offset_, prior=prior)
