"""Issue 10 part 4: with 6-9 systems the legends hid the pAUC band (ROC) and the low-false-alarm
corner (DET); they now sit outside the axes, below the x label, and hide no data."""


import numpy as np
import pytest

from pauc_backend import plotting
from pauc_backend.metrics import TrialScores


def systems(count):
    rng = np.random.default_rng(1)
    return [("System %d with a long name" % i,
             TrialScores(rng.normal(1 + 0.3 * i, 1, 300), rng.normal(0, 1, 5000)))
            for i in range(count)]


@pytest.mark.parametrize("count", [1, 6, 9])
@pytest.mark.parametrize("kind", ["det", "roc"])
def test_legend_is_below_the_axes_and_their_labels_and_inside_the_saved_image(kind, count):
    if kind == "det":
        figure = plotting.det_figure(systems(count))
    else:
        figure = plotting.roc_figure(systems(count), alpha=0.001, beta=0.05)
    try:
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        ax = figure.axes[0]
        legend = ax.get_legend()
        assert len(legend.get_lines()) == count
        box = legend.get_window_extent(renderer)
        axes_box = ax.get_window_extent(renderer)
        labels_box = ax.xaxis.get_tightbbox(renderer)
        # entirely below the plotting area and below the tick labels and the x label
        assert box.y1 < axes_box.y0 and box.y1 <= labels_box.y0 + 0.5
        assert not box.overlaps(axes_box)
        # the tight bounding box used when saving holds the whole legend
        tight = figure.get_tightbbox(renderer)
        inches = box.transformed(figure.dpi_scale_trans.inverted())
        assert tight.y0 <= inches.y0 + 1e-6 and tight.x0 <= inches.x0 + 1e-6
        assert inches.x1 <= tight.x1 + 1e-6
    finally:
        plotting._pyplot().close(figure)


def test_saved_png_grows_to_hold_a_long_legend(tmp_path):
    sizes = []
    for count in (1, 9):
        path = tmp_path / ("roc%d.png" % count)
        plotting.plot_roc(systems(count), str(path), alpha=0.001, beta=0.05)
        data = path.read_bytes()
        sizes.append(int.from_bytes(data[20:24], "big"))  # PNG IHDR height
    assert sizes[1] > sizes[0] + 100  # 8 more legend lines below the plot


@pytest.mark.parametrize("kind", ["det", "roc"])
def test_nine_systems_differ_in_dash_pattern_or_marker_not_only_in_colour(kind):
    """Issue 20: a grayscale print keeps 9 curves apart (checked by eye on a rendered PNG too)."""
    figure = (plotting.det_figure(systems(9)) if kind == "det"
              else plotting.roc_figure(systems(9), alpha=0.001, beta=0.05))
    try:
        legend_lines = figure.axes[0].get_legend().get_lines()
        styles = {(line.get_linestyle(), line.get_marker()) for line in legend_lines}
        assert len(styles) == 9
    finally:
        import matplotlib.pyplot as plt
        plt.close(figure)


def test_line_styles_are_distinct_for_twelve_systems():
    pairs = {(s["linestyle"], s["marker"]) for s in map(plotting.line_style, range(12))}
    assert len(pairs) == 12
