"""train-pauc-auto --adapt with pseudo-speakers, then score-pauc-auto: ETRI's speaker-sex shift
made small (30 vectors of each male training speaker labelled, 30 of each female one
unlabelled), where a PLDA trained with pseudo-speakers of the adaptation set is chosen on the
pseudo-speaker trials; the model directory must score as the in-memory model does."""

import numpy as np
import pytest

from conftest import ETRI, need, run_tool
from realdata_sides import etri_sex_shift
from pauc_backend.kaldi_io import write_vector_table
from pauc_backend.metrics import eer
from pauc_backend.models.auto import AutoBackend


OPTIONS = ["--num-folds=2", "--lda-dims=none,50", "--enroll-utts=3",
           "--candidates=plda,cosine_centred"]


@pytest.fixture(scope="module")
def shifted(tmp_path_factory):
    need(ETRI / "train")
    d = tmp_path_factory.mktemp("pseudo")
    c = etri_sex_shift(ETRI)
    write_vector_table("ark:%s" % (d / "train.ark"), c.train.keys, c.train.X)
    write_vector_table("ark:%s" % (d / "adapt.ark"), c.adapt.keys, c.adapt.X)
    with open(d / "spk2utt", "w") as f:
        for spk, utts in sorted(c.train.spk2utt().items()):
            f.write("%s %s\n" % (spk, " ".join(utts)))
    return d, c


def test_pseudo_trained_system_trains_and_scores_through_the_cli(shifted, tmp_path):
    d, c = shifted
    proc = run_tool("train-pauc-auto", *OPTIONS, "--adapt=ark:%s" % (d / "adapt.ark"),
                    "ark:%s" % (d / "train.ark"), "ark:%s" % (d / "spk2utt"), tmp_path / "m")
    assert proc.returncode == 0, proc.stderr.decode()
    err = proc.stderr.decode()
    assert "Pseudo-speakers of the adaptation set" in err and "pseudo-trained" in err
    card = (tmp_path / "m/system.txt").read_text()
    lines = dict(l.split(" ", 1) for l in card.splitlines())
    assert lines["chosen"].startswith("pseudo_"), card
    assert lines["selection_rated_by"] == "pseudo"
    assert lines["system_title"].startswith(("PLDA pooled", "blend"))
    assert "calibrated on the pseudo-speaker trials" in lines["system_title"]
    for key in ("pseudo_speakers", "pseudo_size_quantiles_0_25_50_75_100",
                "pseudo_separation_dprime", "pseudo_pauc"):
        assert key in lines, key
    assert "heldout_pauc" not in lines       # a pseudo-trained system has no training fold
    # score-pauc-auto with the chosen pseudo-trained system = the in-memory model's scores
    X, keys = c.test.X, list(c.test.keys)
    ek, tk = keys[:12], keys[12:60]
    write_vector_table("ark:%s" % (tmp_path / "e.ark"), ek, X[:12])
    write_vector_table("ark:%s" % (tmp_path / "t.ark"), tk, X[12:60])
    (tmp_path / "trials").write_text("".join("%s %s\n" % (e, t) for e in ek for t in tk))
    proc = run_tool("score-pauc-auto", tmp_path / "m", "ark:%s" % (tmp_path / "e.ark"),
                    "ark:%s" % (tmp_path / "t.ark"), tmp_path / "trials", tmp_path / "scores")
    assert proc.returncode == 0, proc.stderr.decode()
    got = np.array([float(l.split()[2]) for l in
                    (tmp_path / "scores").read_text().splitlines()])
    model = AutoBackend(candidates=("plda", "cosine_centred"), lda_dims=(0, 50), num_folds=2,
                        enroll_utts=3).fit(c.train.X, c.train.labels, X_adapt=c.adapt.X)
    assert model.describe().splitlines()[:3] == card.splitlines()[:3]
    er = np.repeat(np.arange(12), len(tk))
    tr = np.tile(np.arange(len(tk)), 12)
    want = model.score(X[:12], X[12:60], er, tr)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert got.std() > 0
    # the calibration learned on the held-out pseudo-speaker trials keeps the scores' sense:
    # a positive weight, and on the labelled female test vectors (speakers no model saw) the
    # calibrated scores put targets above non-targets far from chance
    assert np.all(model.fusion_.weights_ > 0)
    rows = np.linspace(0, X.shape[0] - 1, 300).astype(int)     # across the speakers
    labels = np.asarray(c.test.labels)[rows]
    a, b = np.triu_indices(rows.size, 1)
    s = model.score(X[rows], X[rows], a, b)
    assert eer(s[labels[a] == labels[b]], s[labels[a] != labels[b]]) < 0.2
