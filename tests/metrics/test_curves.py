"""DET/ROC points against per-threshold counting and scikit-learn; the ROCCH is the convex hull."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import roc_curve as sk_roc_curve

from pauc_backend.metrics import TrialScores, det_curve, roc_curve, rocch
from pauc_backend.metrics.report import format_json, format_table

small_lists = st.lists(st.integers(-10, 10), min_size=1, max_size=40)


@settings(max_examples=100, deadline=None)
@given(small_lists, small_lists)
def test_det_points_count_errors_at_every_distinct_threshold(tar, non):
    tar, non = np.array(tar, float), np.array(non, float)
    curve = det_curve(tar, non)
    expected = np.concatenate([np.unique(np.concatenate([tar, non])), [np.inf]])
    np.testing.assert_array_equal(curve.thresholds, expected)
    np.testing.assert_array_equal(curve.pmiss, [(tar < t).mean() for t in expected])
    np.testing.assert_allclose(curve.pfa, [(non >= t).mean() for t in expected], atol=1e-15)


@pytest.mark.parametrize("seed", range(4))
def test_roc_points_are_scikit_learns_without_dropping(seed):
    rng = np.random.default_rng(seed)
    tar, non = np.round(rng.normal(1, 1, 70), 1), np.round(rng.normal(0, 1, 500), 1)
    fpr, tpr, thresholds = sk_roc_curve(np.r_[np.ones(70), np.zeros(500)], np.r_[tar, non],
                                        drop_intermediate=False)
    ours = roc_curve(tar, non)
    np.testing.assert_allclose(ours.fpr, fpr, atol=1e-15)
    np.testing.assert_allclose(ours.tpr, tpr, atol=1e-15)
    np.testing.assert_array_equal(ours.thresholds[1:], thresholds[1:])
    assert ours.thresholds[0] == np.inf


def lower_hull(points):
    """Monotone-chain lower-left hull of (pfa, pmiss) points, from pfa = 0 to pfa = 1."""
    hull = []
    for p in sorted(set(points)):
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) <= 0:
                hull.pop()
            else:
                break
        hull.append(p)
    return hull


@settings(max_examples=100, deadline=None)
@given(small_lists, small_lists)
def test_rocch_vertices_are_the_lower_convex_hull_of_the_det_points(tar, non):
    tar, non = np.array(tar, float), np.array(non, float)
    curve = det_curve(tar, non)
    # Work in counts (exact integers), then compare rates.
    points = [(round(x * len(non)), round(y * len(tar))) for x, y in zip(curve.pfa, curve.pmiss)]
    hull = lower_hull(points)
    # BOSARIS's chain runs from (Pfa, Pmiss) = (0, 1) down the Pfa = 0 axis, along the lower
    # hull, and ends at (1, 0): cut the hull where Pfa first reaches 1.
    expected = hull[:next(i for i, p in enumerate(hull) if p[0] == len(non)) + 1]
    if expected[0] != (0, len(tar)):
        expected.insert(0, (0, len(tar)))
    pmiss, pfa = rocch(tar, non)
    ours = [(int(x), int(y)) for x, y in zip(np.round(pfa * len(non)), np.round(pmiss * len(tar)))]
    assert ours[::-1] == expected
    assert pmiss[0] == 0 and pfa[0] == 1 and pmiss[-1] == 1 and pfa[-1] == 0


def test_summary_and_its_table_and_json_forms():
    rng = np.random.default_rng(9)
    trials = TrialScores(rng.normal(2, 1, 200), rng.normal(0, 1, 5000))
    summary = trials.summary([0.01, 0.001], 0.0, 0.01, llr=True)
    assert summary["pauc_num_nontargets"] == 50
    assert [item["p_target"] for item in summary["min_dcf"]] == [0.01, 0.001]
    header, values = format_table(summary).splitlines()
    assert header.split() == ["EER(%)", "minDCF(0.01)", "minDCF(0.001)", "pAUC[0,0.01]", "AUC",
                              "AP(%)", "d'", "actDCF(0.01)", "actDCF(0.001)", "Cllr",
                              "minCllr"]
    assert values.split()[0] == "%.2f" % (100 * summary["eer"])
    # columns line up: every value starts where its header starts
    starts = [i for i in range(len(header))
              if header[i] != " " and (i == 0 or header[i - 1] == " ")]
    assert all(values[i] != " " and (i == 0 or values[i - 1] == " ") for i in starts)
    import json
    assert json.loads(format_json(summary)) == json.loads(json.dumps(summary))


def test_summary_reports_an_empty_band_as_missing():
    summary = TrialScores([1.0, 2.0], [0.0] * 50).summary([0.01], 0.0, 0.01)
    assert summary["pauc"] is None and summary["pauc_num_nontargets"] == 0
    assert "n/a" in format_table(summary)
