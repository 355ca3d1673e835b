"""Text forms of a ``TrialScores.summary`` dict: the paper's table row and JSON.

The table has one header line and one aligned value line with a column per metric of
``metrics.registry`` that the summary holds, in the registry's order (EER, minDCF per prior,
pAUC of eq. 5, AUC, AP, d', then actDCF per prior, Cllr and minCllr for LLR scores):
percentages (EER, AP) with 2 decimals, the others with 4. A value that is undefined (a pAUC
whose band holds no non-target) is shown as ``n/a`` (``null`` in JSON).

Equalised summaries (``metrics.equalized``) hold only the metrics with a weighted definition
and add a Cprimary column (and actual Cprimary with LLRs). A summary with ``"confidence"``
(bootstrap intervals) gets a third line under the values: ``lo-hi`` in the same units for
each bootstrapped metric, ``-`` for the other columns. A summary of part of a trial list
(``"num_trials_listed"``) ends with a ``Trials`` column, ``scored/listed``.
"""

import json

from pauc_backend.metrics.registry import columns, setting_of

__all__ = ["format_table", "format_json", "pauc_label"]


def _short(value):
    return "%g" % value


def pauc_label(alpha, beta):
    return "pAUC[%s,%s]" % (_short(alpha), _short(beta))


def _columns(summary):
    """(header, value, interval) per column of the summary's metrics, in registry order;
    interval is None where the summary has no bootstrap interval for that metric."""
    confidence = summary.get("confidence") or {}
    for col in columns(setting_of(summary)):
        m = col.metric
        if m.key not in summary:
            continue
        span = None
        if m.key in confidence:
            pair = confidence[m.key]
            if m.per_prior:
                pair = pair[col.index] if pair else None
            span = "n/a" if pair is None else "%s-%s" % (m.text(pair[0]), m.text(pair[1]))
        yield col.label(setting_of(summary)), m.text(col.get(summary)), span
    if "num_trials_listed" in summary:  # compute-eer-pauc --allow-partial on part of a list
        yield ("Trials", "%d/%d" % (summary["num_target"] + summary["num_nontarget"],
                                    summary["num_trials_listed"]), None)
    if summary["eer_method"] == "equalized" and "c_primary" in summary:
        yield "Cprimary", "%.4f" % summary["c_primary"], None
        if summary.get("act_c_primary") is not None:
            yield "actCprimary", "%.4f" % summary["act_c_primary"], None


def format_table(summary):
    """Header and values (and the intervals' line with a bootstrap), columns left-aligned and
    separated by two spaces."""
    columns = list(_columns(summary))
    rows = [[name for name, _, _ in columns], [value for _, value, _ in columns]]
    if summary.get("confidence"):
        rows.append([span or "-" for _, _, span in columns])
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() + "\n"
                   for row in rows)


def format_json(summary):
    """One JSON object on one line (keys sorted), for scripts."""
    return json.dumps(summary, sort_keys=True) + "\n"
