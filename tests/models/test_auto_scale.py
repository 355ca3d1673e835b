"""What keeps pAUCMetric (auto) bounded at VoxCeleb's size (issue 35), as properties: the final
pAUCMetrics train on a bounded, seeded sample of the training vectors (and on exactly what it
says); held-out trials scored in the order of their enrollment rows give the same bits as in
their own order; a table whose cross-fitting subset was gathered on its own gives the same
cross-fitting as the whole table."""

import numpy as np

from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.crossfit import crossfit_rows
from pauc_backend.models.auto.table import TrainingTable
from pauc_backend.models.backend_pipeline import BackendPipeline
from pauc_backend.models.blocked import row_dots
from pauc_backend.models.metric_learning import PaucMetric
from pauc_backend.models.preprocessing import normalize_length

FAST = dict(num_iters=15, batch_size=20)


def corpus(seed, speakers=80, per=(4, 30), dim=16):
    rng = np.random.default_rng(seed)
    counts = rng.integers(per[0], per[1] + 1, speakers)
    y = np.repeat(np.arange(speakers), counts)
    X = rng.standard_normal((speakers, dim))[y] * 2 + rng.standard_normal((y.size, dim)) + 1
    return X.astype(np.float32), y


def test_the_final_metrics_train_on_the_bounded_sample_they_report():
    X, y = corpus(1)
    limit = 600
    pipe = BackendPipeline(lda_dim=8, systems=("pauc_lnorm", "plda"), metric_params=FAST,
                           max_metric_vectors=limit, random_state=3).fit(X, y)
    rows, _ = crossfit_rows(y, 0, limit, 3 + 41)
    assert pipe.metric_rows_ == (rows.size, y.size) and rows.size <= limit < y.size
    assert set(y[rows]) == set(y)                      # every speaker, its count capped
    # the metric is PaucMetric trained on those rows' features (the LDA, like the PLDA, from
    # every row): the same bits
    feats = normalize_length(pipe.lda_.transform(X[rows] - pipe.mean_), scaleup=False)[0]
    alone = pipe._metric().fit(feats, y[rows])
    assert np.array_equal(pipe.metrics_["pauc_lnorm"].metric_, alone.metric_)
    # a bound the table does not reach changes nothing
    full = BackendPipeline(lda_dim=8, systems=("pauc_lnorm",), metric_params=FAST,
                           random_state=3).fit(X, y)
    same = BackendPipeline(lda_dim=8, systems=("pauc_lnorm",), metric_params=FAST,
                           max_metric_vectors=y.size, random_state=3).fit(X, y)
    assert same.metric_rows_ == (y.size, y.size)
    assert np.array_equal(full.metrics_["pauc_lnorm"].metric_,
                          same.metrics_["pauc_lnorm"].metric_)
    assert isinstance(full.metrics_["pauc_lnorm"], PaucMetric)


def test_scores_in_enrollment_order_are_the_same_bits():
    rng = np.random.default_rng(2)
    E = rng.standard_normal((3000, 256))
    T = rng.standard_normal((2500, 256))
    a, b = rng.integers(0, 3000, 40000), rng.integers(0, 2500, 40000)
    got = row_dots(E, T, a, b)                        # 40,000 trials > a block: reordered
    reference = np.einsum("ij,ij->i", E[a], T[b])
    assert np.array_equal(got, reference)


def test_a_subset_gathered_on_its_own_cross_fits_as_the_whole_table():
    """train-pauc-auto gathers the cross-fitting subset into its own array while it reads a
    large table (cli/framework/training_table.py): the plan, the trials and the fold of each
    vector are those of the table held whole."""
    X, y = corpus(3, speakers=60)
    params = dict(lda_dims=(6,), num_folds=3, candidates=("plda", "cosine_raw"),
                  metric_params=FAST, max_speakers=40, max_vectors=400, random_state=5)
    whole = AutoBackend(**params)
    plan = whole.prepare(X, y)
    rows, text = crossfit_rows(y, 40, 400, 5)
    table = TrainingTable(X, y, subset=(rows, text, (40, 400, 5)), subset_X=X[rows])
    alone = AutoBackend(**params)
    other = alone.prepare(table)
    assert other.cross.X.shape == (rows.size, X.shape[1])
    assert other.cross.subset == plan.cross.subset
    assert np.array_equal(alone.fold_of_vector_, whole.fold_of_vector_)
    for t, u in zip(plan.trials, other.trials):
        assert np.array_equal(rows[u.test_rows], t.test_rows)
        assert np.array_equal(u.enroll_index, t.enroll_index)
        assert np.array_equal(u.is_target, t.is_target)
    whole.fit(X, y)
    alone.fit(table)
    assert alone.describe() == whole.describe()
