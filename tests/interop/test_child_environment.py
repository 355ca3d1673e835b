"""Programs started inside our tools' pipes inherit the caller's environment unchanged.

Kaldi's float output depends on OpenBLAS's thread count (ivector-compute-plda on the ETRI
i-vectors writes different bytes with 1 and 2 threads), so if our tools set
OPENBLAS_NUM_THREADS=1 for their children, a Kaldi program inside our rspecifier pipe wrote a
different model than when run alone. The test runs both with the same environment: the user's
(no BLAS variable: OpenBLAS picks its default) and with OPENBLAS_NUM_THREADS=2 set.
"""

import pytest

from real_kaldi import Runner, corpus, find_kaldi_root, kaldi_env, kaldi_pipeline

BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@pytest.fixture(scope="module")
def kaldi_root():
    return find_kaldi_root()


def user_env(root, threads):
    env = kaldi_env(root)
    for name in BLAS_VARIABLES:
        env.pop(name, None)
    if threads is not None:
        env["OPENBLAS_NUM_THREADS"] = threads
    return env


@pytest.mark.parametrize("threads", [None, "2"])
def test_children_see_the_callers_environment(threads, kaldi_root, tmp_path_factory, tmp_path):
    c = corpus("golden", tmp_path_factory)
    r = Runner(kaldi_root, c.dir, user_env(kaldi_root, threads))
    r.run("copy-vectors", "ark:env > %s/env; copy-vector scp:test.scp ark:- |" % tmp_path,
          "ark:/dev/null")
    seen = dict(line.split("=", 1) for line in (tmp_path / "env").read_text().splitlines()
                if "=" in line)
    for name in BLAS_VARIABLES:
        assert seen.get(name) == r.env.get(name), name


@pytest.mark.parametrize("name", ["etri", "timit"])
@pytest.mark.parametrize("threads", [None, "2"])
def test_kaldi_in_our_pipe_writes_what_it_writes_alone(name, threads, kaldi_root,
                                                       tmp_path_factory, tmp_path):
    c = corpus(name, tmp_path_factory)
    kaldi_pipeline(c, kaldi_root)
    r = Runner(kaldi_root, c.dir, user_env(kaldi_root, threads))
    train = ["ark:train.spk2utt", "ark:%s/train_norm.ark" % c.kaldi]
    r.run("ivector-compute-plda", *train, tmp_path / "alone")
    r.run("copy-plda", "ivector-compute-plda %s - |" % " ".join(train), tmp_path / "piped")
    assert (tmp_path / "piped").read_bytes() == (tmp_path / "alone").read_bytes()
