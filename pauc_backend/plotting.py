"""DET and ROC plots of one or more systems (the paper's Figs. 7 and 9), with matplotlib's Agg.

matplotlib is imported inside the functions, so tools that do not plot never load it.
``systems`` is a list of ``(label, TrialScores)``. Plots are written through ``open_output``
(a temporary file renamed on success); the format comes from the extension, .png or .pdf.

- DET: miss rate against false-alarm rate, both on normal-deviate (probit) axes with ticks in
  percent; each system's Kaldi-EER operating point is a circle and its minDCF point a square.
  A curve of millions of points is thinned to the points where it moves by at least 1/2000 of
  the axis range, which is invisible at any print size.
- Legends sit below the axes, so they never hide a curve, the band or a corner.
- ROC: true-positive rate against false-positive rate on a log axis (the low-FPR end is where
  the pAUC lives), with the pAUC band [alpha, beta] shaded.
- NBER: BOSARIS's normalised Bayes error-rate plot of calibrated LLR scores
  (``metrics.llr.bayes_error_curve`` defines and computes the curves): for each system its
  actual (solid) and minimum (dashed, same colour) normalised DCF against the prior log-odds,
  the default (prior-only) line at 1 dotted, the priors of ``p_targets`` as vertical lines;
  y from 0 to 1.2, where the interesting part of a speaker detector's curves lies.
"""

import io
import os

import numpy as np
from scipy.special import ndtri

from pauc_backend.errors import KaldiError

__all__ = ["det_figure", "roc_figure", "nber_figure", "choice_figure", "plot_choice",
           "plot_det", "plot_roc", "plot_nber",
           "check_plot_name", "DET_LABELS", "ROC_LABELS", "NBER_LABELS"]

DET_LABELS = ("False alarm rate (%)", "Miss rate (%)")
ROC_LABELS = ("False positive rate", "True positive rate")
NBER_LABELS = ("Prior log-odds logit(P_tar)", "Normalised DCF")
NBER_YMAX = 1.2
_DET_TICKS = np.array([0.0001, 0.0005, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4])


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _thin(x, y, bins=2000):
    """Indices of the points where (x, y) leaves its 1/bins grid cell, plus both ends."""
    if x.size <= 2 * bins:
        return np.arange(x.size)
    span = lambda v: (v - v.min()) / max(v.max() - v.min(), 1e-300) * bins
    cell_x, cell_y = np.floor(span(x)), np.floor(span(y))
    moved = np.flatnonzero((np.diff(cell_x) != 0) | (np.diff(cell_y) != 0))
    return np.unique(np.concatenate([[0, x.size - 1], moved, moved + 1]))


def _percent(p):
    return ("%.2f" % (100 * p)).rstrip("0").rstrip(".")


# Systems differ in line style and marker as well as colour, so a grayscale print or a reader
# who does not tell colours apart can still follow each curve: 4 dash patterns x 6 markers
# give 12 distinct pairs (the first system is a plain solid line). The DET's EER and minDCF
# points use "o" and "s", which are kept out of this list.
_LINESTYLES = ("-", "--", "-.", ":")
_MARKERS = ("", "^", "v", "D", "x", "*")


def line_style(index):
    """Keyword arguments of ``Axes.plot`` that tell system ``index`` apart without colour."""
    return {"linestyle": _LINESTYLES[index % len(_LINESTYLES)],
            "marker": _MARKERS[index % len(_MARKERS)], "markersize": 5, "markevery": 0.1}


def det_figure(systems, p_target=0.01, c_miss=1, c_fa=1, title=None):
    """A matplotlib Figure with the DET curves of ``systems``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 6))
    # Axis ranges down to half the resolution 1/K (false alarms) and 1/J (misses).
    low_x = float(np.clip(min(0.5 / t.num_non for _, t in systems), 1e-4, 0.01))
    low_y = float(np.clip(min(0.5 / t.num_tar for _, t in systems), 1e-4, 0.01))
    high = 0.5
    for index, (label, trials) in enumerate(systems):
        curve = trials.det_curve()
        pfa = np.clip(curve.pfa, low_x / 2, 1 - low_x / 2)
        pmiss = np.clip(curve.pmiss, low_y / 2, 1 - low_y / 2)
        keep = _thin(ndtri(pfa), ndtri(pmiss))
        rate, threshold = trials.eer("kaldi")
        dcf = trials.min_dcf(p_target, c_miss, c_fa)
        line, = ax.plot(ndtri(pfa[keep]), ndtri(pmiss[keep]), **line_style(index),
                        label="%s (EER %.2f%%, minDCF %.4f)" % (label, 100 * rate, dcf.min_dcf))
        eer_pmiss = np.searchsorted(trials.tar, threshold, side="left") / trials.num_tar
        eer_pfa = 1 - np.searchsorted(trials.non, threshold, side="left") / trials.num_non
        for (x, y), marker in (((eer_pfa, eer_pmiss), "o"), ((dcf.pfa, dcf.pmiss), "s")):
            ax.plot(ndtri(np.clip(x, low_x / 2, 1 - low_x / 2)),
                    ndtri(np.clip(y, low_y / 2, 1 - low_y / 2)), marker,
                    color=line.get_color(), markerfacecolor="none" if marker == "s" else None)
    for low, set_ticks, set_labels, set_lim in (
            (low_x, ax.set_xticks, ax.set_xticklabels, ax.set_xlim),
            (low_y, ax.set_yticks, ax.set_yticklabels, ax.set_ylim)):
        ticks = _DET_TICKS[(_DET_TICKS >= low) & (_DET_TICKS <= high)]
        set_ticks(ndtri(ticks))
        set_labels([_percent(t) for t in ticks])
        set_lim(ndtri(low), ndtri(high))
    diagonal = ndtri(max(low_x, low_y)), ndtri(high)
    ax.plot(diagonal, diagonal, ":", color="0.6", lw=0.8)
    _finish_axes(ax, DET_LABELS, title or "DET curve",
                 title="o: EER point, \u25a1: minDCF (p-target %g)" % p_target,
                 title_fontsize="small")
    return fig


def roc_figure(systems, alpha=0.0, beta=0.01, title=None):
    """A matplotlib Figure with the ROC curves of ``systems`` and the pAUC band shaded."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 5))
    low = max(1e-5, min(0.5 / t.num_non for _, t in systems))
    ax.axvspan(max(float(alpha), low), float(beta), color="0.9", zorder=0,
               label="pAUC band [%g, %g]" % (float(alpha), float(beta)))
    for index, (label, trials) in enumerate(systems):
        curve = trials.det_curve()
        fpr, tpr = curve.pfa[::-1], 1 - curve.pmiss[::-1]
        keep = _thin(np.log10(np.maximum(fpr, low)), tpr)
        try:
            value = "pAUC %.4f" % trials.pauc(alpha, beta)[0]
        except ValueError:
            value = "pAUC n/a"
        ax.plot(np.maximum(fpr[keep], low), tpr[keep], **line_style(index),
                label="%s (%s, AUC %.4f)" % (label, value, trials.auc()))
    ax.set_xscale("log")
    ax.set_xlim(low, 1)
    ax.set_ylim(0, 1.01)
    _finish_axes(ax, ROC_LABELS, title or "ROC curve")
    return fig


def nber_figure(systems, p_targets=(), c_miss=1.0, c_fa=1.0, prior_log_odds=None,
                title=None):
    """A matplotlib Figure with the normalised Bayes error-rate curves of ``systems`` (their
    scores read as calibrated LLRs); ``p_targets`` with ``c_miss``/``c_fa`` are marked at their
    effective prior's log-odds, log(p c_miss / ((1 - p) c_fa))."""
    from pauc_backend.metrics.llr import NBER_LOG_ODDS, bayes_error_curve
    plt = _pyplot()
    grid = NBER_LOG_ODDS if prior_log_odds is None else prior_log_odds
    fig, ax = plt.subplots(figsize=(6, 5))
    for index, (label, trials) in enumerate(systems):
        curve = bayes_error_curve(trials, grid)
        style = line_style(index)
        line, = ax.plot(curve.prior_log_odds, curve.act_dcf, linestyle="-",
                        marker=style["marker"], markersize=4, markevery=0.1,
                        label="%s: actual (actDCF)" % label)
        ax.plot(curve.prior_log_odds, curve.min_dcf, linestyle="--", color=line.get_color(),
                label="%s: minimum (minDCF)" % label)
    ax.axhline(1.0, linestyle=":", color="k", lw=1, label="default: the prior alone")
    for p in p_targets:
        x = float(np.log(p * c_miss) - np.log((1 - p) * c_fa))
        ax.axvline(x, color="0.6", lw=0.8)
        ax.annotate("P_tar %g" % p, (x, NBER_YMAX), xytext=(2, -10),
                    textcoords="offset points", fontsize="x-small", color="0.4")
    ax.set_xlim(float(grid[0]), float(grid[-1]))
    ax.set_ylim(0, NBER_YMAX)
    _finish_axes(ax, NBER_LABELS, title or "Normalised Bayes error rate")
    return fig


def choice_figure(rows, title=None):
    """The automatic back-end's choice (plot-auto-choice): one panel per source of evidence,
    each rated candidate's pAUC with its standard-error bar, the candidates in the order of
    the rating source's pAUC (best at the top), the chosen one a filled star, the baselines
    open squares; the rating source's panel says so. ``rows``: dicts with "source",
    "candidate", "lda_dim", "pauc", "se", "role" (a set of chosen, baseline, rating)."""
    plt = _pyplot()
    sources = list(dict.fromkeys(r["source"] for r in rows))
    rating = next((r["source"] for r in rows if "rating" in r["role"]), sources[0])
    label = lambda r: "%s (LDA %s)" % (r["candidate"], r["lda_dim"])  # noqa: E731
    order = [label(r) for r in sorted((r for r in rows if r["source"] == rating),
                                      key=lambda r: r["pauc"])]
    for r in rows:
        if label(r) not in order:
            order.insert(0, label(r))
    position = {name: i for i, name in enumerate(order)}
    fig, axes = plt.subplots(1, len(sources), sharey=True, squeeze=False,
                             figsize=(3.2 * len(sources) + 3.0, 0.22 * len(order) + 1.6))
    for ax, source in zip(axes[0], sources):
        mine = [r for r in rows if r["source"] == source]
        y = np.array([position[label(r)] for r in mine])
        x = np.array([r["pauc"] for r in mine])
        err = np.array([r["se"] for r in mine])
        ax.errorbar(x, y, xerr=err, fmt="o", markersize=3, color="0.35", ecolor="0.6",
                    capsize=2, label="candidate +- SE")
        for marker, role, name in (("s", "baseline", "baseline"), ("*", "chosen", "chosen")):
            keep = np.array([role in r["role"] for r in mine], dtype=bool)
            if keep.any():
                ax.plot(x[keep], y[keep], marker, markersize=9 if role == "chosen" else 7,
                        markerfacecolor="none" if role == "baseline" else "C3",
                        markeredgecolor="C0" if role == "baseline" else "C3",
                        linestyle="none", label=name)
        ax.set_title("%s%s" % (source, " (rates)" if source == rating else ""), fontsize=9)
        ax.set_xlabel("pAUC")
        ax.grid(True, axis="x", alpha=0.3)
    axes[0][0].set_yticks(range(len(order)))
    axes[0][0].set_yticklabels(order, fontsize=7)
    _legend_below(axes[0][-1], ncol=3)
    if title:
        fig.suptitle(title)
    return fig


def plot_choice(rows, wxfilename, title=None):
    _save(choice_figure(rows, title), wxfilename)


def _finish_axes(ax, labels, heading, **legend):
    """The axis labels (x, y), a light grid, the ``heading`` and the legend below the axes
    (``legend``: _legend_below's keywords, e.g. the legend's own title)."""
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.grid(True, color="0.85")
    ax.set_title(heading)
    _legend_below(ax, **legend)


def _legend_below(ax, **kwargs):
    """The legend under the axes, below the tick labels and x label, where it hides no data
    (inside, 6-9 systems covered the pAUC band of the ROC and the low-false-alarm corner of
    the DET). Saving with ``bbox_inches="tight"`` grows the image to hold it."""
    renderer = ax.figure.canvas.get_renderer()
    below = ax.xaxis.get_tightbbox(renderer)  # tick labels and x label, in pixels
    bottom = ax.transAxes.inverted().transform((0, below.y0))[1]
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, bottom - 0.02), borderaxespad=0,
              fontsize="small", **kwargs)


def check_plot_name(wxfilename):
    """The plot format from the file name (png or pdf); KaldiError for anything else."""
    extension = os.path.splitext(wxfilename)[1].lower().lstrip(".")
    if extension not in ("png", "pdf"):
        raise KaldiError("Plot file %s: the name must end in .png or .pdf" % wxfilename)
    return extension


def _save(fig, wxfilename):
    from pauc_backend.kaldi_io import open_output
    extension = check_plot_name(wxfilename)
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format=extension, dpi=150, bbox_inches="tight")
    finally:
        _pyplot().close(fig)
    with open_output(wxfilename) as stream:
        stream.write(buffer.getvalue())


def plot_det(systems, wxfilename, p_target=0.01, c_miss=1, c_fa=1, title=None):
    """Write the DET plot of ``systems`` to ``wxfilename`` (.png or .pdf)."""
    _save(det_figure(systems, p_target, c_miss, c_fa, title), wxfilename)


def plot_roc(systems, wxfilename, alpha=0.0, beta=0.01, title=None):
    """Write the ROC plot of ``systems`` with the [alpha, beta] band to ``wxfilename``."""
    _save(roc_figure(systems, alpha, beta, title), wxfilename)


def plot_nber(systems, wxfilename, p_targets=(), c_miss=1.0, c_fa=1.0, title=None):
    """Write the normalised Bayes error-rate plot of ``systems`` to ``wxfilename``."""
    _save(nber_figure(systems, p_targets, c_miss, c_fa, title=title), wxfilename)
