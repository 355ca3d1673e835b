"""NIST's equalised scoring over trial partitions, and Cprimary (numpy only).

NIST SRE16 onwards partition the trials (e.g. language x gender x number of enrollment
segments) and report metrics of *equalised* miss and false-alarm rates: at every threshold,
the unweighted mean over partitions of each partition's rate, so a large partition does not
dominate. The NIST SRE scoring software (O. Sadjadi; ``compute_equalized_min_cost``,
``compute_partition_weights``, ``compute_equalized_act_cost``) does it by giving each trial the
weight 1 / (number of trials of its class in its partition) (a class absent from a partition
contributes nothing to that class's mean) and computing FNR/FPR from weighted cumulative sums
(``compute_pmiss_pfa_rbst``). We do the same (``weighted.SortedTrials`` with real weights);
every reported metric comes from those equalised rates:

* EER: the scorer's ``compute_eer`` (interpolated crossing of FNR and FPR);
* minDCF: minimum over the sorted trials of the cost of the equalised rates (``compute_c_norm``);
* pAUC (paper's eq. 5) and AUC: eq. 5 over the FPR band of the equalised ROC, i.e. the mean
  equalised TPR (ties count 1/2) over the band, the band taken exactly;
* actDCF (LLR scores): the equalised Pmiss / Pfa at the Bayes threshold
  (``compute_equalized_act_cost``), normalised as ``metrics.llr.act_dcf``.

Cprimary (SRE16 evaluation plan): the mean of the normalised minimum (or actual) costs at
P_target 0.01 and 0.005 (c_miss = c_fa = 1), of the equalised rates; ``add_c_primary`` adds it
to a summary whenever both priors were evaluated.

Ties keep the trial-list order (stable sort), where the NIST scorer's ``np.argsort`` leaves them
in an unspecified order; without tied scores across classes the two agree.
"""

import numpy as np

from pauc_backend.metrics.bootstrap import cluster_codes
from pauc_backend.metrics.registry import Setting, metric
from pauc_backend.metrics.weighted import SortedTrials

__all__ = ["partition_weights", "equalized_summary", "add_c_primary", "C_PRIMARY_PRIORS"]

C_PRIMARY_PRIORS = (0.01, 0.005)


def partition_weights(partitions, is_target):
    """Per trial: 1 / (number of trials of its class in its partition)."""
    codes, num = cluster_codes(partitions)
    is_target = np.asarray(is_target, dtype=bool)
    num_tar = np.bincount(codes[is_target], minlength=num)
    num_non = np.bincount(codes[~is_target], minlength=num)
    count = np.where(is_target, num_tar[codes], num_non[codes])
    return 1.0 / count, num, int((num_tar > 0).sum()), int((num_non > 0).sum())


def equalized_summary(scores, is_target, partitions, p_targets=(0.01,), alpha=0.0, beta=0.01,
                      c_miss=1.0, c_fa=1.0, llr=False):
    """Equalised metrics as a dict shaped like ``TrialScores.summary``: every registered metric
    with a weighted definition (``metrics.registry``); the others (AP, Cllr, ...) are absent."""
    scores = np.asarray(scores, dtype=np.float64)
    is_target = np.asarray(is_target, dtype=bool)
    weights, num_parts, parts_tar, parts_non = partition_weights(partitions, is_target)
    trials = SortedTrials(scores, is_target)
    setting = Setting(p_targets, alpha, beta, c_miss, c_fa, "equalized", llr)
    out = trials.evaluate(weights[trials.order_tar], weights[trials.order_non], setting,
                          integer=False)
    if out is None:
        raise ValueError("equalised scoring needs target and non-target trials")
    summary = {"num_target": int(is_target.sum()), "num_nontarget": int((~is_target).sum()),
               "num_partitions": num_parts, "num_partitions_with_targets": parts_tar,
               "num_partitions_with_nontargets": parts_non, "eer_threshold": None,
               "eer_method": "equalized", "pauc_alpha": float(alpha), "pauc_beta": float(beta)}
    for key, value in out.items():
        if metric(key).per_prior:
            value = [{"p_target": p, key: item} for p, item in zip(setting.p_targets, value)]
        summary[key] = value
    for item in summary["min_dcf"]:
        item.update(c_miss=c_miss, c_fa=c_fa, threshold=None)
    return summary


def add_c_primary(summary):
    """Add ``c_primary`` (and ``act_c_primary`` with actDCF) when the summary holds minDCF at
    both P_target 0.01 and 0.005 with unit costs; returns the summary."""
    def at(items, key):
        found = {item["p_target"]: item[key] for item in items
                 if item.get("c_miss", 1) == 1 and item.get("c_fa", 1) == 1}
        if all(p in found for p in C_PRIMARY_PRIORS):
            return float(np.mean([found[p] for p in C_PRIMARY_PRIORS]))
        return None

    value = at(summary["min_dcf"], "min_dcf")
    if value is not None:
        summary["c_primary"] = value
        if "act_dcf" in summary:
            costs = {item["p_target"]: item for item in summary["min_dcf"]}
            acts = [dict(item, c_miss=costs[item["p_target"]]["c_miss"],
                         c_fa=costs[item["p_target"]]["c_fa"]) for item in summary["act_dcf"]]
            summary["act_c_primary"] = at(acts, "act_dcf")
    return summary
