"""Issue 42 item 3: the normalised Bayes error-rate (NBER) plot of calibrated scores, from
plot-det-roc --output-nber and compute-eer-pauc --llr --nber-plot: the figure holds the
metrics layer's curves, the tools write valid PNG/PDF files, and --help states the grid."""

import json

import numpy as np
import pytest
from conftest import run_tool

from pauc_backend import plotting
from pauc_backend.metrics import TrialScores
from pauc_backend.metrics.llr import NBER_LOG_ODDS, bayes_error_curve


@pytest.fixture(scope="module")
def llr_files(tmp_path_factory):
    """Two systems' LLR files on one trial list: one calibrated-looking, one overconfident."""
    d = tmp_path_factory.mktemp("nber")
    rng = np.random.default_rng(11)
    labels = rng.random(3000) < 0.1
    good = np.round(np.where(labels, rng.normal(3, 2.4, 3000), rng.normal(-3, 2.4, 3000)), 3)
    with open(d / "trials", "w") as t, open(d / "good", "w") as a, open(d / "bold", "w") as b:
        for i, (label, score) in enumerate(zip(labels, good)):
            t.write("e%d t%d %s\n" % (i, i, "target" if label else "nontarget"))
            a.write("e%d t%d %.3f\n" % (i, i, score))
            b.write("e%d t%d %.3f\n" % (i, i, 4 * score))
    return d, labels, good


def png_pixels(path):
    from matplotlib.image import imread
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return imread(str(path))


def test_the_figure_draws_the_metrics_curves_of_each_system(llr_files):
    _, labels, good = llr_files
    systems = [("good", TrialScores.from_trials(good, labels)),
               ("bold", TrialScores.from_trials(4 * good, labels))]
    figure = plotting.nber_figure(systems, p_targets=(0.01,))
    ax = figure.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    for label, trials in systems:
        curve = bayes_error_curve(trials)
        actual, minimum = lines[label + ": actual (actDCF)"], lines[label + ": minimum (minDCF)"]
        np.testing.assert_array_equal(actual.get_xdata(), NBER_LOG_ODDS)
        np.testing.assert_array_equal(actual.get_ydata(), curve.act_dcf)
        np.testing.assert_array_equal(minimum.get_ydata(), curve.min_dcf)
        assert minimum.get_color() == actual.get_color() and minimum.get_linestyle() == "--"
    assert list(lines["default: the prior alone"].get_ydata()) == [1, 1]
    marks = [line for line in ax.get_lines() if not line.get_label().startswith(("good", "bold",
                                                                                  "default"))]
    assert [m.get_xdata()[0] for m in marks] == [pytest.approx(np.log(0.01 / 0.99))]
    assert ax.get_xlim() == (-10, 5) and ax.get_ylim() == (0, 1.2)
    # the overconfident system loses to calibration where the calibrated one does not
    good_curve, bold_curve = (bayes_error_curve(t) for _, t in systems)
    np.testing.assert_allclose(good_curve.min_dcf, bold_curve.min_dcf)
    assert np.max(bold_curve.act_dcf - bold_curve.min_dcf) > 2 * np.max(
        good_curve.act_dcf - good_curve.min_dcf)


def test_plot_det_roc_writes_the_nber_png(llr_files, tmp_path):
    d, _, _ = llr_files
    out = tmp_path / "nber.png"
    proc = run_tool("plot-det-roc", "--output=%s" % (tmp_path / "det.png"),
                    "--output-nber=%s" % out, d / "trials", "good:%s" % (d / "good"),
                    "bold:%s" % (d / "bold"))
    assert proc.returncode == 0, proc.stderr.decode()
    pixels = png_pixels(out)
    assert pixels.shape[0] > 300 and pixels.shape[1] > 300
    assert pixels[..., :3].std() > 0.05                    # something is drawn
    assert b"Wrote the normalised Bayes error-rate plot to" in proc.stderr


def test_compute_eer_pauc_llr_writes_the_nber_pdf_of_what_it_reports(llr_files, tmp_path):
    d, labels, good = llr_files
    out = tmp_path / "nber.pdf"
    proc = run_tool("compute-eer-pauc", "--llr", "--report=json", "--p-target=0.01,0.001",
                    "--nber-plot=%s" % out, d / "good", d / "trials")
    assert proc.returncode == 0, proc.stderr.decode()
    pdf = out.read_bytes()
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")
    summary = json.loads(proc.stdout)
    priors = np.array([0.01, 0.001])
    curve = bayes_error_curve(TrialScores.from_trials(good, labels),
                              np.sort(np.log(priors / (1 - priors))))[1:]
    reported_min = sorted((r["p_target"], r["min_dcf"]) for r in summary["min_dcf"])
    reported_act = sorted((r["p_target"], r["act_dcf"]) for r in summary["act_dcf"])
    np.testing.assert_allclose(curve[1], [v for _, v in reported_min], rtol=1e-9)
    np.testing.assert_allclose(curve[0], [v for _, v in reported_act], rtol=1e-9)


def test_nber_plot_without_llr_is_one_error_before_any_input(tmp_path):
    out = tmp_path / "nber.png"
    proc = run_tool("compute-eer-pauc", "--nber-plot=%s" % out, tmp_path / "missing",
                    tmp_path / "missing_trials")
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode == 255 and len(errors) == 1, proc.stderr.decode()
    assert "--nber-plot=%s needs --llr=true" % out in errors[0]
    assert "missing" not in errors[0].split("needs")[1] and not out.exists()


@pytest.mark.parametrize("tool,option", [("plot-det-roc", "--output-nber"),
                                         ("compute-eer-pauc", "--nber-plot")])
def test_help_states_the_grid_and_the_range(tool, option):
    text = run_tool(tool, "--help").stdout.decode()
    line = next(l for l in text.splitlines() if l.startswith("  " + option + " "))
    for words in ("logit(P_tar) from -10 to 5 in steps of 0.1", "y from 0 to 1.2",
                  "line at 1"):
        assert words in line, (words, line)
