"""The metric registry: every consumer follows it, and a metric is one definition.

d' is the example of a metric added by one ``Metric(...)`` line: its value against the
textbook formula written out, and its appearance in the summary, the table and the JSON
without any other change."""

import json

import numpy as np
import pytest

from pauc_backend.metrics import TrialScores
from pauc_backend.metrics.bootstrap import bootstrap_columns
from pauc_backend.metrics.equalized import equalized_summary
from pauc_backend.metrics.registry import METRICS, Setting, columns, metric, setting_of
from pauc_backend.metrics.report import format_json, format_table


def _trials(seed=3, num_tar=300, num_non=4000):
    rng = np.random.default_rng(seed)
    return rng.normal(1.5, 1.2, num_tar), rng.normal(0.0, 0.8, num_non)


def test_dprime_is_the_textbook_separation():
    tar, non = _trials()
    summary = TrialScores(tar, non).summary()
    expected = (tar.mean() - non.mean()) / np.sqrt((tar.var() + non.var()) / 2)
    assert summary["dprime"] == pytest.approx(expected, rel=1e-12)
    assert metric("dprime").higher_is_better
    header, values = format_table(summary).splitlines()
    position = header.split().index("d'")
    assert values.split()[position] == "%.4f" % expected
    assert json.loads(format_json(summary))["dprime"] == pytest.approx(expected)


def test_equal_classes_have_no_dprime_and_the_table_says_so():
    summary = TrialScores([1.0, 1.0], [1.0] * 50).summary()
    assert summary["dprime"] is None
    header, values = format_table(summary).splitlines()
    assert values.split()[header.split().index("d'")] == "n/a"


def test_summary_holds_every_registered_metric_and_nothing_else():
    tar, non = _trials()
    for llr in (False, True):
        setting = Setting((0.01, 0.05), 0.0, 0.1, llr=llr)
        summary = TrialScores(tar, non).summary(setting.p_targets, setting.alpha,
                                                setting.beta, llr=llr)
        keys = {m.key for m in METRICS if llr or not m.llr_only}
        assert keys <= set(summary)
        assert not {m.key for m in METRICS} - keys & set(summary)
        assert setting_of(summary) == setting
        header = format_table(summary).splitlines()[0].split()
        assert header == [col.label(setting) for col in columns(setting)]


def test_equalised_summary_holds_exactly_the_weighted_metrics():
    tar, non = _trials()
    scores = np.concatenate([tar, non])
    is_target = np.arange(scores.size) < tar.size
    partitions = np.arange(scores.size) % 3
    summary = equalized_summary(scores, is_target, partitions, (0.01,), 0.0, 0.1)
    weighted = {m.key for m in METRICS if m.weighted is not None and not m.llr_only}
    assert weighted <= set(summary)
    assert not ({m.key for m in METRICS} - weighted) & set(summary)


def test_bootstrap_covers_the_weighted_detection_metrics_in_registry_order():
    cols = bootstrap_columns(Setting((0.01, 0.005), llr=True))
    assert [(c.metric.key, c.p_target) for c in cols] == [
        ("eer", None), ("min_dcf", 0.01), ("min_dcf", 0.005), ("pauc", None), ("auc", None)]
    assert all(c.metric.weighted is not None for c in cols)
