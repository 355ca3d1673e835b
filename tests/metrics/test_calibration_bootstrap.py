"""actDCF and Cllr in the paired bootstrap (compare-systems --llr): each resample's weighted
value is the plain value of the trial list repeated by its multiplicities (brute force)."""

import numpy as np
import pytest

from pauc_backend.metrics.bootstrap import (ClusterBootstrap, bootstrap_columns,
                                            paired_bootstrap_statistics,
                                            resample_multiplicities)
from pauc_backend.metrics.llr import act_dcf, cllr
from pauc_backend.metrics.registry import Setting


def test_calibration_columns_only_when_asked_for_llr_scores():
    setting = Setting((0.01, 0.05), llr=True)
    assert [c.metric.key for c in bootstrap_columns(setting)] == ["eer", "min_dcf", "min_dcf",
                                                                  "pauc", "auc"]
    keys = [(c.metric.key, c.p_target) for c in bootstrap_columns(setting, calibration=True)]
    assert keys[-3:] == [("act_dcf", 0.01), ("act_dcf", 0.05), ("cllr", None)]
    assert bootstrap_columns(Setting(), calibration=True) == bootstrap_columns(Setting())


def test_resampled_act_dcf_and_cllr_are_those_of_the_repeated_trial_list():
    rng = np.random.default_rng(0)
    num_enroll, num_test = 12, 40
    e = np.repeat(np.arange(num_enroll), num_test)
    t = np.tile(np.arange(num_test), num_enroll)
    target = (t % num_enroll) == e
    llr = np.where(target, rng.normal(3, 2, e.size), rng.normal(-3, 2, e.size))
    setting = Setting((0.01, 0.1), llr=True)
    boot = ClusterBootstrap(llr, target, e, t)
    cols = bootstrap_columns(setting, calibration=True)
    stats = paired_bootstrap_statistics([boot], 6, seed=3, setting=setting, workers=1,
                                        calibration=True)[0]
    for row, (a, b) in zip(stats, resample_multiplicities(3, 6, num_enroll, num_test)):
        repeat = a[e] * b[t]
        rep, y = np.repeat(llr, repeat), np.repeat(target, repeat)
        if not y.any() or y.all():
            continue
        tar, non = np.sort(rep[y]), np.sort(rep[~y])
        values = dict(zip([(c.metric.key, c.p_target) for c in cols], row))
        assert values[("cllr", None)] == pytest.approx(cllr(tar, non), rel=1e-10)
        for p in (0.01, 0.1):
            assert values[("act_dcf", p)] == pytest.approx(act_dcf(tar, non, p), rel=1e-10)
