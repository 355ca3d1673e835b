"""The model tools against their real Kaldi twins, on the same inputs.

train-lda, train-plda and adapt-plda solve eigenproblems: Kaldi with its own tridiagonal QR
(SpMatrix::Eig) on scatter matrices summed by BLAS (dsyrk/dspr, whose summation order is the
library's), we with numpy. Each eigenvector's sign is arbitrary and the last bits of every
double differ, so the models are compared as values: up to the sign of each row, with the
tolerances stated in each test (a few orders of magnitude above the differences observed on
these data, far below anything that changes a score's printed digits). copy-plda does no
summation (format conversion and the elementwise smoothing of Plda::SmoothWithinClassCovariance)
and must match byte for byte.
"""

import numpy as np
import pytest

from real_kaldi import Runner, corpus, find_kaldi_root, kaldi_env, kaldi_pipeline
from pauc_backend.kaldi_io import read_matrix, read_plda

CORPORA = ("golden", "etri", "timit")


@pytest.fixture(scope="module")
def kaldi_root():
    return find_kaldi_root()


@pytest.fixture(params=CORPORA)
def setup(request, kaldi_root, tmp_path_factory, tmp_path):
    c = corpus(request.param, tmp_path_factory)
    kaldi_pipeline(c, kaldi_root)
    return c, Runner(kaldi_root, c.dir, kaldi_env(kaldi_root, blas_threads=1)), tmp_path


def row_signs(ours, theirs):
    return np.where(np.sum(ours * theirs, axis=1) < 0, -1.0, 1.0)[:, None]


def assert_rows_close(ours, theirs, rtol, what):
    """Equal up to the sign of each row, within rtol of each row's largest element."""
    aligned = ours * row_signs(ours, theirs)
    scale = np.abs(theirs).max(axis=1, keepdims=True)
    excess = (np.abs(aligned - theirs) / scale).max()
    assert excess <= rtol, "%s: %.3g relative to the row's largest element" % (what, excess)


def assert_plda_close(ours_file, kaldi_file, axis_signs=None):
    """PLDA (mean, transform, psi): psi and the mean to 1e-8 relative (double-precision
    eigenvalues and averages, observed <= 3e-13), the transform's rows up to sign to 1e-8 of
    their largest element (observed <= 2e-12)."""
    mean, transform, psi = read_plda(str(ours_file))
    k_mean, k_transform, k_psi = read_plda(str(kaldi_file))
    assert np.allclose(mean, k_mean, rtol=1e-8, atol=1e-8 * np.abs(k_mean).max())
    assert np.allclose(psi, k_psi, rtol=1e-8, atol=0)
    assert np.all(np.diff(k_psi) <= 0) and np.all(np.diff(psi) <= 0)  # both sorted decreasing
    assert_rows_close(transform, k_transform, 1e-8, "PLDA transform")


def test_train_lda(setup):
    """LDA matrices (float32, [A | -A m]): rows equal up to sign within 1e-5 of the row's
    largest element: float32 output (6e-8) of double eigenvectors whose last bits depend on
    BLAS summation order, amplified by small eigen-gaps (observed <= 4e-11)."""
    c, r, tmp = setup
    k = c.kaldi
    configs = [("0.0", c.lda_dim)] + ([("0.1", 16)] if c.name == "golden" else [])
    for tcf, dim in configs:
        args = ["--total-covariance-factor=" + tcf, "--dim=%d" % dim,
                "ark:%s/train_sub.ark" % k, "ark:train.utt2spk"]
        r.run("ivector-compute-lda", *args, tmp / "kaldi.mat")
        r.run("train-lda", *args, tmp / "ours.mat")
        ours, theirs = read_matrix(str(tmp / "ours.mat")), read_matrix(str(tmp / "kaldi.mat"))
        assert ours.shape == theirs.shape == (dim, theirs.shape[1])
        assert ours.dtype == np.float32
        assert_rows_close(ours.astype(np.float64), theirs.astype(np.float64), 1e-5,
                          "LDA tcf=%s" % tcf)


def test_train_plda(setup):
    c, r, tmp = setup
    args = ["ark:train.spk2utt", "ark:%s/train_norm.ark" % c.kaldi]
    r.run("train-plda", *args, tmp / "plda")
    assert_plda_close(tmp / "plda", c.kaldi / "plda")
    # Fewer iterations and text output: the same model, in Kaldi's text format.
    r.run("ivector-compute-plda", "--num-em-iters=3", "--binary=false", *args, tmp / "k3.txt")
    r.run("train-plda", "--num-em-iters=3", "--binary=false", *args, tmp / "o3.txt")
    assert (tmp / "o3.txt").read_bytes()[:7] == (tmp / "k3.txt").read_bytes()[:7] == b"<Plda> "
    assert_plda_close(tmp / "o3.txt", tmp / "k3.txt")


def test_adapt_plda(setup):
    c, r, tmp = setup
    k = c.kaldi
    for opts in (["--within-covar-scale=0.75", "--between-covar-scale=0.25"],
                 ["--mean-diff-scale=0.5"]):
        args = opts + ["%s/plda" % k, "ark:%s/adapt_norm.ark" % k]
        r.run("ivector-adapt-plda", *args, tmp / "kaldi")
        r.run("adapt-plda", *args, tmp / "ours")
        assert_plda_close(tmp / "ours", tmp / "kaldi")


def test_copy_plda(setup):
    c, r, tmp = setup
    k = c.kaldi
    for i, args in enumerate((["--binary=false", "%s/plda" % k],
                              ["%s/plda.txt" % k],
                              ["--smoothing=0.1", "--binary=false", "%s/plda_adapt" % k],
                              ["--smoothing=0.25", "%s/plda.txt" % k])):
        r.run("ivector-copy-plda", *args, tmp / ("kaldi%d" % i))
        r.run("copy-plda", *args, tmp / ("ours%d" % i))
        assert (tmp / ("ours%d" % i)).read_bytes() == (tmp / ("kaldi%d" % i)).read_bytes(), args
