"""Text forms of a ``TrialScores.summary`` dict: the paper's table row and JSON.

The table has one header line and one aligned value line with the columns of the paper's
tables: EER(%) and AP(%) with 2 decimals, minDCF per prior, pAUC (eq. 5) and AUC with 4, then
actDCF per prior, Cllr and minCllr when the summary has them. A pAUC whose band holds no
non-target is shown as ``n/a`` (``null`` in JSON).
"""

import json

__all__ = ["format_table", "format_json", "pauc_label"]


def _short(value):
    return "%g" % value


def pauc_label(alpha, beta):
    return "pAUC[%s,%s]" % (_short(alpha), _short(beta))


def _columns(summary):
    rate = 100 * summary["eer"]
    yield ("EER(%)" if summary["eer_method"] == "kaldi" else "ROCCH-EER(%)"), "%.2f" % rate
    for item in summary["min_dcf"]:
        yield "minDCF(%s)" % _short(item["p_target"]), "%.4f" % item["min_dcf"]
    pauc = summary["pauc"]
    yield (pauc_label(summary["pauc_alpha"], summary["pauc_beta"]),
           "n/a" if pauc is None else "%.4f" % pauc)
    yield "AUC", "%.4f" % summary["auc"]
    yield "AP(%)", "%.2f" % (100 * summary["average_precision"])
    for item in summary.get("act_dcf", ()):
        yield "actDCF(%s)" % _short(item["p_target"]), "%.4f" % item["act_dcf"]
    if "cllr" in summary:
        yield "Cllr", "%.4f" % summary["cllr"]
        yield "minCllr", "%.4f" % summary["min_cllr"]


def format_table(summary):
    """Two lines (header, values), columns left-aligned and separated by two spaces."""
    columns = list(_columns(summary))
    widths = [max(len(name), len(value)) for name, value in columns]
    header = "  ".join(name.ljust(w) for (name, _), w in zip(columns, widths)).rstrip()
    values = "  ".join(value.ljust(w) for (_, value), w in zip(columns, widths)).rstrip()
    return header + "\n" + values + "\n"


def format_json(summary):
    """One JSON object on one line (keys sorted), for scripts."""
    return json.dumps(summary, sort_keys=True) + "\n"
