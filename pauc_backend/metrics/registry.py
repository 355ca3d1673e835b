"""The metrics of an evaluation, each defined once: name, direction, formula, how to compute it.

A ``Metric`` says what a figure is (its summary/JSON ``key``, its column ``title``, whether
higher is better, its formula) and how to compute it: ``plain(trials, setting)`` from a
``TrialScores`` (the sorted scores of one list), and, when it has one, ``weighted(view,
setting)`` from a ``WeightedView`` (``weighted.SortedTrials`` with per-trial weights: the
multiplicities of a cluster-bootstrap resample, or NIST's equalising partition weights).
Everything that reports metrics iterates ``METRICS`` and its ``columns``: the summary
(``summarize``), the table and JSON of ``metrics.report``, the Kaldi-style log of
compute-eer-pauc, the bootstrap intervals and paired comparisons (``metrics.bootstrap``) and the
equalised scoring (``metrics.equalized``). Adding a metric is one ``Metric(...)`` in
``METRICS`` plus its test; a metric without ``weighted`` is reported without intervals and is
absent from equalised summaries.

A value is a float (or None where undefined, e.g. a pAUC whose band holds no non-target); a
per-prior metric (minDCF, actDCF) has one value per ``Setting.p_targets``. ``plain`` returns
``(value, details)`` where ``details`` is a dict of extra summary keys (thresholds, counts);
for a per-prior metric a list of such pairs, one per prior.
"""

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from pauc_backend.metrics.moments import mean_of

__all__ = ["Setting", "Metric", "Column", "WeightedView", "METRICS", "metric", "columns",
           "summarize", "setting_of", "weighted_values", "column_values"]


@dataclass(frozen=True)
class Setting:
    """What a summary is computed for: the priors and costs of the DCFs, the pAUC band
    [alpha, beta] of the false-positive rate (paper's eq. 5), the EER definition and whether
    the scores are calibrated LLRs (then the calibration metrics are added)."""
    p_targets: tuple = (0.01,)
    alpha: float = 0.0
    beta: float = 0.01
    c_miss: float = 1.0
    c_fa: float = 1.0
    eer_method: str = "kaldi"
    llr: bool = False

    def __post_init__(self):
        object.__setattr__(self, "p_targets", tuple(float(p) for p in self.p_targets))


@dataclass(frozen=True)
class WeightedView:
    """A sorted trial list (``weighted.SortedTrials``) with weights in sorted order and their
    cumulative sums (a leading 0); ``integer``: the weights are multiplicities."""
    sorted: object
    w_tar: np.ndarray
    w_non: np.ndarray
    cum_tar: np.ndarray
    cum_non: np.ndarray
    integer: bool

    @property
    def total_tar(self):
        return self.cum_tar[-1]

    @property
    def total_non(self):
        return self.cum_non[-1]


@dataclass(frozen=True)
class Metric:
    key: str                       # summary / JSON key
    title: str                     # column title ("minDCF" -> "minDCF(0.01)" per prior)
    higher_is_better: bool
    formula: str                   # the definition, for --help, docs and reviewers
    plain: Callable                # (TrialScores, Setting) -> (value, details) [per prior: list]
    weighted: Optional[Callable] = None    # (WeightedView, Setting) -> value [per prior: list]
    per_prior: bool = False
    percent: bool = False          # shown as a percentage with 2 decimals (else 4 decimals)
    llr_only: bool = False         # only for calibrated LLR scores (Setting.llr)
    spoken: str = ""               # its name in a LOG sentence (default: title)

    def used(self, setting):
        return setting.llr or not self.llr_only

    def text(self, value):
        """The value as the table shows it."""
        if value is None:
            return "n/a"
        return "%.2f" % (100 * value) if self.percent else "%.4f" % value


@dataclass(frozen=True)
class Column:
    """One reported figure: a metric, and its prior for a per-prior metric."""
    metric: Metric
    p_target: Optional[float] = None
    index: int = 0                 # position of the prior in Setting.p_targets

    def label(self, setting):
        m = self.metric
        if m.per_prior:
            return "%s(%g)" % (m.title, self.p_target)
        if m.key == "pauc":
            return "pAUC[%g,%g]" % (setting.alpha, setting.beta)
        if m.key == "eer" and setting.eer_method == "rocch":
            return "ROCCH-EER(%)"
        return m.title + ("(%)" if m.percent else "")

    def get(self, summary):
        """This column's value in a summary dict (None when absent or undefined)."""
        value = summary.get(self.metric.key)
        if self.metric.per_prior:
            return None if value is None else value[self.index][self.metric.key]
        return value


# -- the definitions ---------------------------------------------------------------------------

def _eer(trials, s):
    rate, threshold = trials.eer(s.eer_method)
    return rate, {"eer_threshold": threshold, "eer_method": s.eer_method}


def _weighted_eer(v, s):
    if v.integer:
        return v.sorted.kaldi_eer(v.cum_tar, v.cum_non, v.total_tar, v.total_non)
    return v.sorted.nist_eer(v.w_tar, v.w_non, v.total_tar, v.total_non)


def _min_dcf(trials, s):
    results = trials.min_dcf(list(s.p_targets), s.c_miss, s.c_fa)
    return [(r.min_dcf, {"c_miss": s.c_miss, "c_fa": s.c_fa, "threshold": r.threshold})
            for r in results]


def _weighted_min_dcf(v, s):
    return v.sorted.min_dcf(v.w_tar, v.cum_tar, v.cum_non, v.total_tar, v.total_non,
                             s.p_targets, s.c_miss, s.c_fa, v.integer)


def _pauc(trials, s):
    try:
        value, count = trials.pauc(s.alpha, s.beta)
    except ValueError:
        value, count = None, 0
    return value, {"pauc_num_nontargets": count, "pauc_alpha": float(s.alpha),
                   "pauc_beta": float(s.beta),
                   "pauc_mcclish": trials.pauc_mcclish(s.alpha, s.beta)}


def _weighted_pauc(v, s):
    return v.sorted.pauc(v.cum_tar, v.cum_non, v.total_tar, v.total_non, s.alpha, s.beta,
                          v.integer)


def _weighted_auc(v, s):
    return v.sorted.auc(v.w_tar, v.cum_non, v.total_tar, v.total_non)


def _weighted_act_dcf(v, s):
    return v.sorted.act_dcf(v.w_tar, v.w_non, s.p_targets, s.c_miss, s.c_fa)


def _act_dcf(trials, s):
    values = np.atleast_1d(trials.act_dcf(list(s.p_targets), s.c_miss, s.c_fa))
    return [(float(value), {}) for value in values]


def _weighted_cllr(v, s):
    return v.sorted.cllr(v.w_tar, v.w_non)


def _cllr(trials, s):
    return trials.cllr(), {}


def _min_cllr(trials, s):
    return trials.min_cllr(), {}


def _dprime(trials, s):
    return _dprime_of(trials.tar, None, trials.non, None), {}


def _dprime_of(tar, w_tar, non, w_non):
    """(mean_tar - mean_non) / sqrt((var_tar + var_non) / 2), weighted means and (population)
    variances; None when both variances are 0."""
    m_t, v_t = _moments(tar, w_tar)
    m_n, v_n = _moments(non, w_non)
    spread = np.sqrt((v_t + v_n) / 2)
    return float((m_t - m_n) / spread) if spread > 0 else None


def _moments(x, w):
    mean = np.average(x, weights=w)
    if w is None:       # (x - mean) ** 2 averaged block by block: no n-sized temporary
        return mean, mean_of(x, lambda block: np.square(np.subtract(block, mean)))
    spread = np.subtract(x, mean)
    np.square(spread, out=spread)           # (x - mean) ** 2, one temporary instead of two
    return mean, np.average(spread, weights=w)


METRICS = (
    Metric("eer", "EER", False, "equal error rate: Kaldi compute-eer (or the ROCCH-EER)",
           _eer, _weighted_eer, percent=True, spoken="equal error rate"),
    Metric("min_dcf", "minDCF", False, "min over thresholds of (c_miss Pmiss P + c_fa Pfa "
           "(1-P)) / min(c_miss P, c_fa (1-P)), as sid/compute_min_dcf.py",
           _min_dcf, _weighted_min_dcf, per_prior=True),
    Metric("pauc", "pAUC", True, "paper's eq. 5: mean TPR over the non-targets ranked in the "
           "FPR band [alpha, beta], ties 1/2", _pauc, _weighted_pauc),
    Metric("auc", "AUC", True, "Mann-Whitney: P(target > non-target), ties 1/2",
           lambda t, s: (t.auc(), {}), _weighted_auc),
    Metric("average_precision", "AP", True, "mean precision at each target's rank",
           lambda t, s: (t.average_precision(), {}), percent=True,
           spoken="average precision"),
    Metric("dprime", "d'", True, "(mean_tar - mean_non) / sqrt((var_tar + var_non) / 2)",
           _dprime),
    Metric("act_dcf", "actDCF", False, "normalised DCF at the Bayes threshold "
           "-log(P_eff / (1 - P_eff)) of LLR scores", _act_dcf, _weighted_act_dcf, per_prior=True,
           llr_only=True),
    Metric("cllr", "Cllr", False, "mean log2(1 + exp(-llr)) over targets and "
           "log2(1 + exp(llr)) over non-targets, averaged over the classes",
           _cllr, _weighted_cllr, llr_only=True),
    Metric("min_cllr", "minCllr", False, "Cllr after the optimal monotone (PAV) recalibration",
           _min_cllr, llr_only=True),
)


def metric(key):
    """The registered metric with this key."""
    for item in METRICS:
        if item.key == key:
            return item
    raise KeyError(key)


def columns(setting, weighted=False, metrics=None):
    """The reported columns of ``setting``, in registry order (per-prior metrics once per
    prior); ``weighted``: only the metrics with a weighted definition."""
    out = []
    for m in metrics if metrics is not None else METRICS:
        if not m.used(setting) or (weighted and m.weighted is None):
            continue
        if m.per_prior:
            out.extend(Column(m, p, i) for i, p in enumerate(setting.p_targets))
        else:
            out.append(Column(m))
    return out


def setting_of(summary):
    """The Setting a summary dict was computed for (from its own keys)."""
    return Setting(tuple(item["p_target"] for item in summary["min_dcf"]),
                   summary["pauc_alpha"], summary["pauc_beta"],
                   *(summary["min_dcf"][0].get(cost, 1.0) if summary["min_dcf"] else 1.0
                     for cost in ("c_miss", "c_fa")),
                   summary["eer_method"], "act_dcf" in summary or "cllr" in summary)


def summarize(trials, setting):
    """Every metric of ``setting`` as the JSON-ready summary dict of ``TrialScores.summary``:
    ``num_target``, ``num_nontarget``, each metric's key with its value (a list of
    ``{"p_target", key, details...}`` for a per-prior metric) and each metric's details."""
    out = {"num_target": trials.num_tar, "num_nontarget": trials.num_non}
    for m in METRICS:
        if not m.used(setting):
            continue
        result = m.plain(trials, setting)
        if m.per_prior:
            out[m.key] = [dict({"p_target": p, m.key: value}, **details)
                          for p, (value, details) in zip(setting.p_targets, result)]
        else:
            value, details = result
            out[m.key] = value
            out.update(details)
    return out


def weighted_values(view, setting, metrics=None):
    """``{key: value}`` (a list per prior for a per-prior metric) of the metrics with a
    weighted definition, on ``view``."""
    return {m.key: m.weighted(view, setting)
            for m in (metrics if metrics is not None else METRICS)
            if m.used(setting) and m.weighted is not None}


def column_values(values, cols):
    """The values of ``weighted_values`` in the order of ``cols``, NaN where undefined."""
    row = []
    for col in cols:
        value = values[col.metric.key]
        if col.metric.per_prior:
            value = value[col.index]
        row.append(np.nan if value is None else value)
    return np.array(row, dtype=np.float64)


