"""Issue 34 item 5: the cross-fitting reads a frozen Settings and reports through a Reporter,
never the estimator, and returns what it decides. Run alone (no AutoBackend), it must rate
every candidate, choose the same lambda and write the same lines and log as the estimator's
own cross-fitting, and give the evidence its choice reads; the settings are the declared
parameters, frozen and picklable."""

import dataclasses
import pickle

import numpy as np
import pytest

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.systems import parse_candidate
from pauc_backend.models.auto import params as auto_params
from pauc_backend.models.auto.crossfit import CrossFit
from pauc_backend.models.auto.evidence import TRAINING_FOLDS
from pauc_backend.models.auto.policy import make_plan
from pauc_backend.models.auto.settings import Reporter, Settings

PARAMS = dict(lda_dims=(0, 6, 8), num_folds=4, screen_factor=2, dplda_lambdas=(100.0, 10.0),
              metric_params={"num_iters": 20, "batch_size": 20},
              candidates=("cosine_raw", "plda", "cosine_centred", "pauc_lnorm", "dplda",
                          "plda+pauc_lnorm", "cosine_raw+plda"))


@pytest.fixture(scope="module")
def data():
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=32, num_adapt_speakers=2,
                            num_eval_speakers=6, train_utts_range=(6, 12))
    return np.asarray(c.train.X, dtype=np.float32), np.asarray(c.train.labels)


def test_the_settings_fields_are_the_declared_parameters():
    names = [f.name for f in dataclasses.fields(Settings)]
    declared = [p.name for p in auto_params.PARAMS if p.kind != "callable"]
    assert names == declared + ["metric_params"]


def test_settings_are_normalised_frozen_and_picklable():
    model = AutoBackend(lda_dims="none,8", dplda_lambdas="10,1", max_trials=None,
                        metric_params={"gamma": 0.2})
    settings = Settings.of(model.get_params())
    assert settings.lda_dims == (0, 8) and settings.dplda_lambdas == (10.0, 1.0)
    assert settings.max_trials == 0
    assert settings.metric_keywords() == auto_params.metric_defaults({"gamma": 0.2})
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.num_folds = 3
    copy = pickle.loads(pickle.dumps(settings))
    assert copy == settings
    assert pickle.loads(pickle.dumps(settings.fusion(0))).keywords == \
        settings.fusion(0).keywords


def test_a_reporter_without_callables_is_silent():
    reporter = Reporter()
    reporter.log("nothing")
    reporter.note(where="x")
    reporter.begin()
    reporter.idle()
    assert reporter.task_progress("fold 1 of 2, LDA 8", 0, 1) is None
    assert reporter.pipeline_progress("final") is None
    reporter.close()


def test_task_progress_counts_the_finished_tasks():
    lines = []
    reporter = Reporter(progress=lines.append, interval=0)
    reporter.begin()
    reporter.task_progress("fold 2 of 4, LDA 8", 1, 4)(step="PLDA", fraction=0.5)
    reporter.close()
    assert len(lines) == 1 and lines[0].startswith("Progress: fold 2 of 4, LDA 8: PLDA;")
    assert "elapsed" in lines[0]


def test_the_cross_fitting_alone_decides_what_the_estimator_stores(data):
    """make_plan + CrossFit with Settings and a Reporter, no estimator anywhere: the same
    rated rows (every figure of every fold), the same lambda, the same lines for system.txt
    and the same log lines as AutoBackend.fit before its choice."""
    X, y = data
    model_log = []
    model = AutoBackend(log=model_log.append, **PARAMS).fit(X, y)

    check = AutoBackend(**PARAMS)
    check.check_params()
    settings = Settings.of(check.get_params())
    log = []
    reporter = Reporter(log=log.append)
    members = {name: parse_candidate(name) for name in settings.candidates}
    cross = CrossFit(settings, reporter, make_plan(settings, reporter, X, y, None, members))
    for stage in (1, 2, 3):
        cross.add(stage, cross.run(stage))
    assert cross.rows_at() == model.cv_results_
    # what the choice read: the training folds' evidence of the candidates rated on every fold
    (evidence,) = model.evidence_
    assert evidence.source == TRAINING_FOLDS == cross.evidence().source
    assert list(evidence.rows) == [r for r in model.cv_results_ if r["budget"] == "full"]
    assert list(cross.evidence().rows) == list(evidence.rows)
    assert all(len(r["folds"]) == 4 for r in evidence.rows)
    assert "4 speaker-disjoint folds" in evidence.trials
    assert cross.dplda_lambda is not None and cross.dplda_lambda == model.dplda_lambda_
    assert cross.lines == model.crossfit_
    assert any(line.startswith("screening ") for line in cross.lines)
    assert any(line.startswith("screened_lda_dims ") for line in cross.lines)
    # the estimator logs one line before the cross-fitting's stages and its choice after
    first = next(i for i, line in enumerate(model_log) if line.startswith("Cross-fitting:"))
    last = next(i for i, line in enumerate(model_log) if line.startswith("Chose "))
    assert log == model_log[:first] + model_log[first + 1:last]
