"""train-pauc-auto --adapt and score-pauc-auto's domain check (issue 28).

The model directory stores the training-domain statistics (models.domain); score-pauc-auto
prints ONE WARNING naming --adapt when the vectors it scores lie beyond OUT_OF_DOMAIN_SHIFT:
the synthetic demo's in-domain enrollment and test vectors against a back-end trained on its
out-of-domain training set do; the same scored by a back-end trained with --adapt=<its adapt/
set>, and ETRI's and TIMIT's evaluation vectors against back-ends trained on their own
training speakers, do not. A model directory without the statistics (an older version's)
scores with a LOG and no warning."""

import os
import re

import numpy as np
import pytest

from conftest import SHARED, run_tool
from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import write_vector_table
from pauc_backend.models.auto import AutoBackend
from pauc_backend.persist.auto_backend import write_model_dir

from prerequisites import need
from realdata_sides import evaluation_sides, read_set, speaker_means

HEADER = re.compile(r"^(LOG|WARNING|ERROR) \(([^\[\s]+)\[[^\]]*\]:\S*\) (.*)$")
REALDATA = SHARED / "realdata"
# the domain check does not depend on the system chosen: the cheapest choice
QUICK = dict(candidates=("cosine_centred",), lda_dims=(0,), num_folds=2)


def _messages(proc, level):
    return [m.group(3) for m in map(HEADER.match, proc.stderr.decode().splitlines())
            if m and m.group(1) == level]


def _score(tmp_path, model_dir, enroll_keys, E, test_keys, T):
    write_vector_table("ark:%s" % (tmp_path / "enroll.ark"), enroll_keys, E)
    write_vector_table("ark:%s" % (tmp_path / "test.ark"), test_keys, T)
    (tmp_path / "trials").write_text("".join("%s %s\n" % (e, t) for e in enroll_keys[:20]
                                             for t in test_keys[:30]))
    proc = run_tool("score-pauc-auto", model_dir, "ark:%s" % (tmp_path / "enroll.ark"),
                    "ark:%s" % (tmp_path / "test.ark"), tmp_path / "trials",
                    tmp_path / "scores", check=True)
    assert len((tmp_path / "scores").read_text().splitlines()) == \
        min(20, len(enroll_keys)) * min(30, len(test_keys))
    return proc


@pytest.fixture(scope="module")
def demo():
    return make_speaker_corpus(seed=777, dim=80)       # make-synthetic-vectors' defaults


def test_demo_test_vectors_warn_once_naming_adapt_and_not_after_adapt(demo, tmp_path):
    X, y = demo.train.X, np.array(demo.train.labels)
    speakers, means = speaker_means(demo.enroll.X, demo.enroll.labels)
    means = means.astype(np.float32)
    write_model_dir(str(tmp_path / "plain"), AutoBackend(**QUICK).fit(X, y))
    proc = _score(tmp_path, tmp_path / "plain", speakers, means, demo.test.keys, demo.test.X)
    warnings = _messages(proc, "WARNING")
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("The scored vectors look out of the training domain: their "
                                  "mean lies ")
    assert "train-pauc-auto --adapt=" in warnings[0]
    # the scores are LLRs calibrated on training-domain trials: the warning says so
    assert "calibration was learned on training-domain trials" in warnings[0]
    shift = float(re.search(r"mean lies ([0-9.]+) ", warnings[0]).group(1))
    assert shift > 0.4
    # the remedy: the same vectors against a back-end given the unlabelled adapt/ set
    adapted = AutoBackend(**QUICK).fit(X, y, X_adapt=demo.adapt.X)
    write_model_dir(str(tmp_path / "adapted"), adapted)
    proc = _score(tmp_path, tmp_path / "adapted", speakers, means, demo.test.keys,
                  demo.test.X)
    assert _messages(proc, "WARNING") == []
    assert any(m.startswith("Domain check: their mean lies ") for m in _messages(proc, "LOG"))


def test_old_model_dir_without_domain_statistics_scores_without_a_check(demo, tmp_path):
    X, y = demo.train.X, np.array(demo.train.labels)
    model_dir = tmp_path / "old"
    write_model_dir(str(model_dir), AutoBackend(**QUICK).fit(X, y))
    for name in ("domain_mean.vec", "domain_whitener.mat"):
        os.remove(str(model_dir / name))
    proc = _score(tmp_path, model_dir, demo.test.keys[:10], demo.test.X[:10], demo.test.keys,
                  demo.test.X)
    assert _messages(proc, "WARNING") == []
    assert any("no training-domain statistics" in m for m in _messages(proc, "LOG"))


@pytest.mark.parametrize("corpus", ["etri", "timit-ge2e"])
def test_etri_and_timit_evaluation_vectors_do_not_warn(tmp_path, corpus):
    root = REALDATA / corpus
    need(root)
    _, X, y = read_set(root / "train")
    write_model_dir(str(tmp_path / "m"), AutoBackend(**QUICK).fit(X, y))
    speakers, means, test_keys, test = evaluation_sides(root, corpus)
    proc = _score(tmp_path, tmp_path / "m", speakers, means, test_keys, test)
    assert _messages(proc, "WARNING") == []


# ------------------------------------------------------------------ train-pauc-auto --adapt
@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("adapt")
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=30, num_adapt_speakers=20,
                            num_eval_speakers=6, train_utts_range=(6, 12))
    write_vector_table("ark:%s" % (d / "train.ark"), c.train.keys, c.train.X)
    write_vector_table("ark:%s" % (d / "adapt.ark"), c.adapt.keys, c.adapt.X)
    write_vector_table("ark:%s" % (d / "adapt8.ark"), c.adapt.keys, c.adapt.X[:, :8])
    with open(d / "spk2utt", "w") as f:
        for spk, utts in sorted(c.train.spk2utt().items()):
            f.write("%s %s\n" % (spk, " ".join(utts)))
    return d, c


def _train(d, out, *extra):
    return run_tool("train-pauc-auto", "--num-folds=2", "--lda-dims=8", "--num-iters=30",
                    *extra, "ark:%s" % (d / "train.ark"), "ark:%s" % (d / "spk2utt"), out)


def test_train_with_adapt_logs_the_shift_and_writes_what_it_changed(small, tmp_path):
    d, c = small
    proc = _train(d, tmp_path / "m", "--candidates=plda_adapt,cosine_centred",
                  "--adapt=ark:%s" % (d / "adapt.ark"))
    assert proc.returncode == 0, proc.stderr.decode()
    logs = _messages(proc, "LOG")
    line = next(m for m in logs if m.startswith("Read %d adaptation vectors" % len(c.adapt.keys)))
    assert "their mean lies " in line and "within-speaker standard deviations" in line
    card = (tmp_path / "m/system.txt").read_text()
    assert "adapt_vectors all_%d_vectors\n" % len(c.adapt.keys) in card
    for key in ("adapt_shift_raw_before", "adapt_shift_raw_after"):
        assert re.search(r"^%s [0-9.]+$" % key, card, re.M), card
    assert (tmp_path / "m/domain_mean.vec").exists()
    assert any(m.startswith("Adaptation set (all ") for m in logs)


def test_adapt_errors_are_one_error_and_no_model(small, tmp_path):
    d, _ = small
    proc = _train(d, tmp_path / "m", "--adapt=ark:%s" % (d / "adapt8.ark"))
    errs = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode != 0 and len(errs) == 1 and "--adapt" in errs[0]
    assert "dimension 8" in errs[0] and not (tmp_path / "m").exists()
    proc = _train(d, tmp_path / "m", "--candidates=plda_adapt")
    errs = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode == 255 and len(errs) == 1 and "--adapt" in errs[0], errs
    assert not (tmp_path / "m").exists()


def test_model_dir_without_system_txt_says_what_to_do(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m/plda").write_text("not a model\n")
    (tmp_path / "e.ark").write_text("")
    proc = run_tool("score-pauc-auto", tmp_path / "m", "ark:%s" % (tmp_path / "e.ark"),
                    "ark:%s" % (tmp_path / "e.ark"), tmp_path / "trials", tmp_path / "out")
    errs = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode != 0 and len(errs) == 1, proc.stderr.decode()
    assert "has no system.txt" in errs[0] and "train-pauc-auto" in errs[0]
    assert "score-plda-trials" in errs[0] and not (tmp_path / "out").exists()
