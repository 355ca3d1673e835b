"""plot-det-roc and pauc_backend.plotting: valid PNG/PDF files, the expected axes and marks."""

import struct

import numpy as np
import pytest
from conftest import run_tool

from pauc_backend import plotting
from pauc_backend.metrics import TrialScores
from scipy.special import ndtri


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_two_systems_give_a_png_det_and_a_pdf_roc(golden, tmp_path):
    det, roc = tmp_path / "det.png", tmp_path / "roc.pdf"
    proc = run_tool("plot-det-roc", "--output=%s" % det, "--output-roc=%s" % roc,
                    "--title=Golden", "data/trials", "PLDA:scores/plda_numutts",
                    "Adapted:scores/plda_adapt_numutts", cwd=golden)
    assert proc.returncode == 0, proc.stderr.decode()
    width, height = png_size(det.read_bytes())
    assert width > 300 and height > 300
    pdf = roc.read_bytes()
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")
    assert b"PLDA: 400 target and 15600 non-target scores, EER 5.5%" in proc.stderr


def fixed_systems():
    rng = np.random.default_rng(0)
    return [("A", TrialScores(rng.normal(2, 1, 300), rng.normal(0, 1, 6000))),
            ("B", TrialScores(rng.normal(1, 1, 300), rng.normal(0, 1, 6000)))]


def test_det_figure_has_probit_axes_in_percent_and_marks_eer_and_min_dcf():
    figure = plotting.det_figure(fixed_systems(), p_target=0.01)
    ax = figure.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == plotting.DET_LABELS
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert "1" in labels and "10" in labels and "40" in labels
    # ticks sit at the normal deviates of their percentages
    np.testing.assert_allclose(ax.get_xticks()[labels.index("10")], ndtri(0.1))
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0].startswith("A (EER ") and "minDCF" in legend[0]
    markers = [line.get_marker() for line in ax.get_lines()]
    assert markers.count("o") == 2 and markers.count("s") == 2
    plotting._pyplot().close(figure)


def test_roc_figure_shades_the_pauc_band():
    figure = plotting.roc_figure(fixed_systems(), alpha=0.001, beta=0.05)
    ax = figure.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == plotting.ROC_LABELS
    assert ax.get_xscale() == "log"
    band = [p for p in ax.patches if p.get_label().startswith("pAUC band")]
    assert len(band) == 1
    vertices = band[0].get_patch_transform().transform(band[0].get_path().vertices)
    assert (vertices[:, 0].min(), vertices[:, 0].max()) == pytest.approx((0.001, 0.05))
    plotting._pyplot().close(figure)


def test_a_curve_of_many_points_is_thinned_but_keeps_its_ends():
    x = np.linspace(0, 1, 100000) ** 2
    keep = plotting._thin(x, 1 - x)
    assert 2000 <= keep.size < 20000 and keep[0] == 0 and keep[-1] == x.size - 1


@pytest.mark.parametrize("args, code", [
    (["data/trials"], 1),
    (["data/trials", "scores/plda_numutts"], 255),
    (["--output=det.svg", "data/trials", "A:scores/plda_numutts"], 255),
    (["data/trials", "A:scores/no_such_file"], 255),
])
def test_bad_command_lines(golden, args, code):
    proc = run_tool("plot-det-roc", *args, cwd=golden)
    assert proc.returncode == code
