"""Text forms of a ``TrialScores.summary`` dict: the paper's table row and JSON.

The table has one header line and one aligned value line with the columns of the paper's
tables: EER(%) and AP(%) with 2 decimals, minDCF per prior, pAUC (eq. 5) and AUC with 4, then
actDCF per prior, Cllr and minCllr when the summary has them. A pAUC whose band holds no
non-target is shown as ``n/a`` (``null`` in JSON).

Equalised summaries (``metrics.equalized``) have no AP, Cllr or minCllr column and add a
Cprimary column (and actual Cprimary with LLRs). A summary with ``"confidence"`` (bootstrap
intervals) gets a third line under the values: ``lo-hi`` in the same units for EER, each
minDCF, pAUC and AUC, ``-`` for the other columns.
"""

import json

__all__ = ["format_table", "format_json", "pauc_label"]


def _short(value):
    return "%g" % value


def pauc_label(alpha, beta):
    return "pAUC[%s,%s]" % (_short(alpha), _short(beta))


def _columns(summary):
    """(header, value, interval) per column; interval is None where there is none."""
    confidence = summary.get("confidence") or {}

    def span(pair, scale, digits):
        if pair is None:
            return "n/a"
        return "%.*f-%.*f" % (digits, scale * pair[0], digits, scale * pair[1])

    def interval(key, scale, digits):
        return span(confidence[key], scale, digits) if confidence else None

    rate = 100 * summary["eer"]
    yield (("ROCCH-EER(%)" if summary["eer_method"] == "rocch" else "EER(%)"), "%.2f" % rate,
           interval("eer", 100, 2))
    for index, item in enumerate(summary["min_dcf"]):
        yield ("minDCF(%s)" % _short(item["p_target"]), "%.4f" % item["min_dcf"],
               span(confidence["min_dcf"][index], 1, 4) if confidence else None)
    pauc = summary["pauc"]
    yield (pauc_label(summary["pauc_alpha"], summary["pauc_beta"]),
           "n/a" if pauc is None else "%.4f" % pauc, interval("pauc", 1, 4))
    yield "AUC", "%.4f" % summary["auc"], interval("auc", 1, 4)
    if "average_precision" in summary:
        yield "AP(%)", "%.2f" % (100 * summary["average_precision"]), None
    for item in summary.get("act_dcf", ()):
        yield "actDCF(%s)" % _short(item["p_target"]), "%.4f" % item["act_dcf"], None
    if "cllr" in summary:
        yield "Cllr", "%.4f" % summary["cllr"], None
        yield "minCllr", "%.4f" % summary["min_cllr"], None
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
