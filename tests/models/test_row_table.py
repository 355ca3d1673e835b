"""A training table spooled to an unlinked temporary file (models.row_table, issue 35) reads as
the array it holds, and the passes of the final training give the same bits from it as from
the array: LDA, PLDA statistics, the domain statistics, the whole BackendPipeline."""

import os

import numpy as np
import pytest

from pauc_backend.models.backend_pipeline import BackendPipeline
from pauc_backend.models.domain import TrainingDomain
from pauc_backend.models.lda import LDA
from pauc_backend.models.row_table import SpooledRows


def spooled(X, order=None):
    """X written to a SpooledRows in the order ``order`` (default: reversed blocks)."""
    table = SpooledRows(X.shape[0], X.shape[1], "a test table")
    order = np.arange(X.shape[0])[::-1] if order is None else order
    for start in range(0, order.size, 777):
        part = order[start:start + 777]
        table.write(part, X[part])
    return table


def corpus(seed, speakers=60, per=(3, 20), dim=12):
    rng = np.random.default_rng(seed)
    counts = rng.integers(per[0], per[1] + 1, speakers)
    y = np.repeat(np.arange(speakers), counts)
    X = rng.standard_normal((speakers, dim))[y] * 2 + rng.standard_normal((y.size, dim)) + 3
    return X.astype(np.float32), y


def test_reads_as_the_array_it_holds():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20000, 5)).astype(np.float32)
    with spooled(X, rng.permutation(20000)) as table:
        assert table.shape == X.shape and len(table) == 20000 and table.ndim == 2
        assert table.dtype == np.float32 and table.nbytes == X.nbytes
        assert np.array_equal(table[:], X) and np.array_equal(table[5], X[5])
        assert np.array_equal(table[100:9000:7], X[100:9000:7])
        index = rng.integers(0, 20000, (40, 3))              # any shape, order, repeats
        assert np.array_equal(table[index], X[index])
        sparse = np.sort(rng.choice(20000, 3000, replace=False))
        assert np.array_equal(table[sparse], X[sparse])
        rows = rng.permutation(20000)[:5000]
        view = table.view(rows)
        assert view.shape == (5000, 5) and np.array_equal(view[:], X[rows])
        assert np.array_equal(view.view(np.arange(10))[:], X[rows[:10]])
        with pytest.raises(IndexError):
            table[np.array([20000])]


def test_the_file_is_unlinked_and_a_failure_names_the_directory(tmp_path):
    table = SpooledRows(10, 3, "a test table", directory=str(tmp_path))
    assert os.listdir(tmp_path) == []                        # nothing to find or steer
    table.close()
    with pytest.raises(ValueError, match="cannot create the temporary file of a test table "
                                         "in %s" % tmp_path):
        SpooledRows(10, 3, "a test table", directory=str(tmp_path / "missing"))


def test_the_final_training_gives_the_same_bits_from_a_spooled_table():
    """BackendPipeline.fit (mean, LDA, PLDA, discriminative PLDA, the metrics, the AS-norm
    cohort) and TrainingDomain.fit read a spooled table as they read the array."""
    X, y = corpus(2)
    systems = ("plda", "dplda", "pauc_lnorm", "pauc_latent:as", "cosine_centred")
    params = dict(lda_dim=6, systems=systems, metric_params=dict(num_iters=20, batch_size=20),
                  dplda_lambdas=(1.0,), asnorm_top_n=10)
    with spooled(X) as table:
        ref = BackendPipeline(**params).fit(X, y)
        got = BackendPipeline(**params).fit(table, y)
        for name in ("mean_", "cohort_"):
            assert np.array_equal(getattr(got, name), getattr(ref, name)), name
        assert np.array_equal(got.lda_.affine_matrix_, ref.lda_.affine_matrix_)
        for name in ("mean_", "transform_", "psi_"):
            assert np.array_equal(getattr(got.plda_, name), getattr(ref.plda_, name)), name
        for key in ref.metrics_:
            assert np.array_equal(got.metrics_[key].metric_, ref.metrics_[key].metric_), key
        for name in ("quad_enroll_", "quad_test_", "cross_", "offset_"):
            assert np.array_equal(getattr(got.dplda_model(), name),
                                  getattr(ref.dplda_model(), name)), name
        a, b = TrainingDomain().fit(X, y), TrainingDomain().fit(table, y)
        assert np.array_equal(a.mean_, b.mean_) and np.array_equal(a.whitener_, b.whitener_)
        rows = np.flatnonzero(y % 3 > 0)
        a, b = LDA(dim=4).fit(X, y[rows], rows=rows), LDA(dim=4).fit(table, y[rows], rows=rows)
        assert np.array_equal(a.affine_matrix_, b.affine_matrix_)
