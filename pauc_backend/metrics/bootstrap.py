"""Two-way cluster bootstrap confidence intervals of the registered metrics (numpy only).

Why clusters: the trials of a speaker-verification list are pairs (enrollment side, test side)
that share their sides: one enrollment model meets every test segment and vice versa, so trials
are not independent and resampling them one by one understates the uncertainty. The sides are
the sampled units: Bolle, Ratha & Pankanti's subset bootstrap (Proc. AutoID 1999) resamples
users instead of scores, and Poh, Martin & Bengio (IEEE TPAMI 29(3):492-498, 2007) extend it to
a two-step bootstrap over users and samples for speaker-verification (NIST SRE 2005) DET
curves. A trial list is a crossed design (every trial sits in one enrollment cluster and one
test cluster), so we use the two-way ("pigeonhole") bootstrap of Owen (Ann. Appl. Stat. 1(2):
386-411, 2007), which resamples both factors independently:

    each resample draws E enrollment clusters out of E with replacement (multiplicity a_e) and,
    independently, T test clusters out of T (multiplicity b_t); trial (e, t) then appears
    a_e * b_t times, and every metric is computed on that repeated trial list.

A cluster is a key of the trial list's first / second column, or its speaker when an utt2spk
table is given (keys not in it are their own speaker). Intervals are percentile intervals
(Efron & Tibshirani 1993, ch. 13) at the given level over the resamples in which both classes
remain; a resample without targets or non-targets (possible only with very few clusters) is
dropped and counted.

Speed: the trials are sorted once (``weighted.SortedTrials``); a resample is two gathers, a
product and a cumulative sum over the trials plus O(#targets) work, computed from integer
multiplicities (never a re-sort, never a repeated list). Each resample has its own generator
spawned from the seed (``numpy.random.SeedSequence(seed).spawn``), so the draws, hence the
output, do not depend on how resamples are spread over worker threads.
"""

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from pauc_backend.metrics.registry import Setting, column_values, columns
from pauc_backend.metrics.weighted import SortedTrials

__all__ = ["cluster_codes", "resample_multiplicities", "bootstrap_columns",
           "bootstrap_statistics", "percentile_intervals", "confidence_summary", "ClusterBootstrap",
           "paired_bootstrap_statistics", "paired_summary"]


def cluster_codes(labels):
    """Integer code per label (0..n-1, in order of first appearance) and n."""
    labels = np.asarray(labels)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inverse.ravel()], int(first.size)


def _generators(seed, num_resamples):
    return [np.random.Generator(np.random.PCG64(child))
            for child in np.random.SeedSequence(seed).spawn(num_resamples)]


def _draw(rng, num_enroll, num_test):
    a = np.bincount(rng.integers(0, num_enroll, num_enroll), minlength=num_enroll)
    b = np.bincount(rng.integers(0, num_test, num_test), minlength=num_test)
    return a, b                    # int64: products and sums need no conversion


def resample_multiplicities(seed, num_resamples, num_enroll, num_test):
    """The (a, b) multiplicity vectors of each resample, exactly as ``bootstrap_statistics``
    draws them (for tests and for anyone reproducing a run)."""
    for rng in _generators(seed, num_resamples):
        yield _draw(rng, num_enroll, num_test)


class ClusterBootstrap:
    """Trials sorted once with their enrollment and test cluster codes."""

    def __init__(self, scores, is_target, enroll_cluster, test_cluster):
        self.sorted = SortedTrials(scores, is_target)
        self.enroll_code, self.num_enroll = cluster_codes(enroll_cluster)
        self.test_code, self.num_test = cluster_codes(test_cluster)
        if self.enroll_code.size != self.sorted.tar.size + self.sorted.non.size:
            raise ValueError("need one enrollment and one test cluster per trial")
        s = self.sorted
        # intp indices: np.take converts any other index type on every call
        self._tar_e = np.ascontiguousarray(self.enroll_code[s.order_tar], dtype=np.intp)
        self._tar_t = np.ascontiguousarray(self.test_code[s.order_tar], dtype=np.intp)
        self._non_e = np.ascontiguousarray(self.enroll_code[s.order_non], dtype=np.intp)
        self._non_t = np.ascontiguousarray(self.test_code[s.order_non], dtype=np.intp)

    def workspace(self):
        """Buffers for ``statistics`` (one per thread): no allocation per resample."""
        n = self.sorted.non.size
        return (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
                np.zeros(n + 1, dtype=np.int64))

    def statistics(self, a, b, setting, cols, work=None):
        """The values of ``cols`` (``bootstrap_columns``) in one resample (NaN: undefined),
        from multiplicities."""
        w_non, other, cum_non = self.workspace() if work is None else work
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        w_tar = a[self._tar_e] * b[self._tar_t]
        cum_tar = np.zeros(w_tar.size + 1, dtype=np.int64)
        np.cumsum(w_tar, out=cum_tar[1:])
        # mode="clip" (the indices are valid) lets np.take write into ``out`` directly
        np.take(a, self._non_e, out=w_non, mode="clip")
        np.take(b, self._non_t, out=other, mode="clip")
        np.multiply(w_non, other, out=w_non)
        np.cumsum(w_non, out=cum_non[1:])
        out = self.sorted.evaluate_cumulative(w_tar, w_non, cum_tar, cum_non, setting,
                                              integer=True,
                                              metrics=[col.metric for col in cols])
        if out is None:
            return np.full(len(cols), np.nan)
        return column_values(out, cols)


def bootstrap_columns(setting, calibration=False):
    """What the bootstrap resamples: the columns of ``setting`` whose metric has a weighted
    definition (``metrics.registry``): EER, minDCF per prior, pAUC, AUC today; the calibration
    metrics (actDCF per prior, Cllr) only when asked (``calibration`` and ``setting.llr``)."""
    return columns(setting if calibration else replace(setting, llr=False), weighted=True)


def bootstrap_statistics(boot, num_resamples, seed=0, setting=Setting(), workers=2):
    """(num_resamples, len(bootstrap_columns(setting))) array, one row per resample."""
    return paired_bootstrap_statistics([boot], num_resamples, seed, setting, workers)[0]


def paired_bootstrap_statistics(boots, num_resamples, seed=0, setting=Setting(), workers=2,
                                calibration=False):
    """``bootstrap_statistics`` of several systems scored on the SAME trials (one
    ClusterBootstrap each, built with the same enrollment and test clusters): each resample's
    multiplicities (a, b) are drawn once and applied to every system, so the differences
    between systems are paired. Returns one array per system (columns
    ``bootstrap_columns(setting, calibration)``); the first equals ``bootstrap_statistics`` of
    that system alone."""
    cols = bootstrap_columns(setting, calibration)
    first = boots[0]
    for other in boots[1:]:
        if (other.num_enroll, other.num_test) != (first.num_enroll, first.num_test) or not (
                np.array_equal(other.enroll_code, first.enroll_code)
                and np.array_equal(other.test_code, first.test_code)):
            raise ValueError("paired bootstrap: the systems' trials have different clusters")
    rngs = _generators(seed, num_resamples)
    all_stats = [np.empty((num_resamples, len(cols))) for _ in boots]

    def work(rows):
        buffers = [boot.workspace() for boot in boots]
        for r in rows:
            a, b = _draw(rngs[r], first.num_enroll, first.num_test)
            for boot, stats, work_space in zip(boots, all_stats, buffers):
                stats[r] = boot.statistics(a, b, setting, cols, work_space)

    chunks = [range(start, num_resamples, max(1, workers)) for start in range(max(1, workers))]
    if workers > 1 and num_resamples > 1:
        with ThreadPoolExecutor(workers) as pool:      # numpy releases the GIL in the gathers
            list(pool.map(work, chunks))
    else:
        work(range(num_resamples))
    return all_stats


def percentile_intervals(stats, level=0.95):
    """Percentile intervals per column: (lo, hi) arrays (NaN for a column never defined) and
    the number of resamples used (rows without NaN in their first column, the EER)."""
    if not 0 < level < 1:
        raise ValueError("confidence level must lie strictly between 0 and 1, got %s" % level)
    stats = np.asarray(stats, dtype=np.float64)
    q = [(1 - level) / 2, (1 + level) / 2]
    lo = np.full(stats.shape[1], np.nan)
    hi = np.full(stats.shape[1], np.nan)
    for col in range(stats.shape[1]):
        values = stats[:, col][~np.isnan(stats[:, col])]
        if values.size:
            lo[col], hi[col] = np.quantile(values, q)
    return lo, hi, int((~np.isnan(stats[:, 0])).sum())


def confidence_summary(stats, level, setting=Setting()):
    """``(confidence, used)``: the ``"confidence"`` object of compute-eer-pauc's JSON report
    (``level``, ``resamples`` and, per bootstrapped metric, its ``[lo, hi]`` or None; a list
    of them, one per prior, for a per-prior metric) and the number of resamples in which
    both classes remained."""
    lo, hi, used = percentile_intervals(stats, level)
    out = {"level": float(level), "resamples": int(stats.shape[0])}
    for index, col in enumerate(bootstrap_columns(setting)):
        pair = None if np.isnan(lo[index]) else [float(lo[index]), float(hi[index])]
        if col.metric.per_prior:
            out.setdefault(col.metric.key, []).append(pair)
        else:
            out[col.metric.key] = pair
    return out, used


def paired_summary(stats_a, stats_b, point_a, point_b, setting=Setting(), level=0.95,
                   calibration=False):
    """Paired comparison of system B against A from ``paired_bootstrap_statistics``.

    For each bootstrapped column (``bootstrap_columns(setting)``: EER, each minDCF, pAUC,
    AUC): the point values of A and B (``point_*``: the full-list summaries of
    ``TrialScores.summary``), the relative difference (B - A) / A, its percentile interval over
    the resamples where both are defined, and the share of those resamples in which B is
    better (by the metric's direction; a tie counts one half). Returns a list of dicts, one
    per column.
    """
    stats_a = np.asarray(stats_a, dtype=np.float64)
    stats_b = np.asarray(stats_b, dtype=np.float64)
    q = [(1 - level) / 2, (1 + level) / 2]
    out = []
    for index, col in enumerate(bootstrap_columns(setting, calibration)):
        a, b = stats_a[:, index], stats_b[:, index]
        ok = ~np.isnan(a) & ~np.isnan(b)
        value_a, value_b = col.get(point_a), col.get(point_b)
        value_a = np.nan if value_a is None else float(value_a)
        value_b = np.nan if value_b is None else float(value_b)
        item = {"metric": col.metric.key, "a": value_a, "b": value_b,
                "resamples": int(ok.sum())}
        if col.metric.per_prior:
            item["p_target"] = float(col.p_target)
        item["relative"] = (float(value_b / value_a - 1.0) if value_a and np.isfinite(value_a)
                            else None)
        a, b = a[ok], b[ok]
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = b / a - 1.0
        rel = rel[np.isfinite(rel)]
        item["interval"] = [float(v) for v in np.quantile(rel, q)] if rel.size else None
        if a.size:
            better = (b > a) if col.metric.higher_is_better else (b < a)
            item["b_better"] = float((np.count_nonzero(better)
                                      + 0.5 * np.count_nonzero(b == a)) / a.size)
        else:
            item["b_better"] = None
        out.append(item)
    return out
