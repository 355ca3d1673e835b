"""The bounded-memory training table (issue 35) with the in-domain evidence of issue 34.

A table spooled to disk (--in-memory-mb=0, read from a pipe in another order than spk2utt
lists it) must give the same model directory, byte for byte, as the table held, when the
cross-fitting subset is a proper subset (its own array when spooled, rows of the table when
held) and the run uses the training durations on the held-out trials (--utt2dur, QMF),
development trials, or the pseudo-speaker in-domain stage of --adapt with a pseudo-trained
winner (its final retraining reads the whole table). The durations follow the table's rows:
the held CLI model's calibration is the in-memory AutoBackend's on the same arrays."""

import filecmp
import os

import numpy as np
import pytest
from conftest import ETRI, need, run_tool
from realdata_sides import etri_sex_shift

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import write_vector_table
from pauc_backend.models.auto import AutoBackend


def _lines(path, rows):
    path.write_text("".join(" ".join(map(str, row)) + "\n" for row in rows))


def _same_files(a, b):
    names = sorted(os.listdir(a))
    assert names == sorted(os.listdir(b))
    _, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
    assert not mismatch and not errors, mismatch + errors
    return names


def _proper_subset(card):
    """The cross-fitting read fewer vectors than the table has (system.txt)."""
    line = card["crossfit_data"]
    return "vectors of each (seeded)" in line and \
        int(line.split()[-2]) < int(card["train_vectors"])


def _held_and_spooled(d, tmp_path, options):
    """Train held (from the file) and spooled (from a shuffled pipe); both logs."""
    logs = []
    for name, vectors, extra in (
            ("held", "ark:%s" % (d / "train.ark"), []),
            ("spooled", "ark:cat %s |" % (d / "shuffled.ark"), ["--in-memory-mb=0"])):
        proc = run_tool("train-pauc-auto", *options, *extra, vectors,
                        "ark:%s" % (d / "spk2utt"), tmp_path / name)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
        logs.append(proc.stderr.decode())
    assert "spooled to an unlinked" not in logs[0] and "spooled to an unlinked" in logs[1]
    return logs


def _corpus_files(d, c):
    """train.ark (spk2utt order), shuffled.ark (another order), spk2utt; the training
    arrays in spk2utt order (keys, X, speaker labels)."""
    spk2utt = sorted(c.train.spk2utt().items())
    _lines(d / "spk2utt", [(s, " ".join(u)) for s, u in spk2utt])
    row = {k: i for i, k in enumerate(c.train.keys)}
    keys = [u for _, utts in spk2utt for u in utts]
    order = np.array([row[k] for k in keys])
    X, labels = c.train.X[order], np.array([s for s, utts in spk2utt for _ in utts])
    write_vector_table("ark:%s" % (d / "train.ark"), keys, X)
    shuffle = np.random.default_rng(3).permutation(len(keys))
    write_vector_table("ark:%s" % (d / "shuffled.ark"), [keys[i] for i in shuffle],
                       X[shuffle])
    return keys, X, labels, order


@pytest.fixture(scope="module")
def timed(tmp_path_factory):
    d = tmp_path_factory.mktemp("table_dev")
    c = make_speaker_corpus(seed=9, dim=16, num_train_speakers=30, num_adapt_speakers=20,
                            num_eval_speakers=6, train_utts_range=(6, 12), durations=True,
                            num_dev_speakers=10)
    keys, X, labels, order = _corpus_files(d, c)
    # utt2dur in yet another order than the table and spk2utt
    dur = np.asarray(c.train.durations)[order]
    back = np.random.default_rng(4).permutation(len(keys))
    _lines(d / "utt2dur", [(keys[i], "%.2f" % dur[i]) for i in back])
    enroll, test, te, tt, tgt = c.dev
    write_vector_table("ark:%s" % (d / "dev.ark"), list(enroll.keys) + list(test.keys),
                       np.vstack([enroll.X, test.X]))
    _lines(d / "dev_spk2utt", [(s, " ".join(u)) for s, u in sorted(enroll.spk2utt().items())])
    _lines(d / "dev_utt2spk", list(zip(enroll.keys, enroll.labels))
           + list(zip(test.keys, test.labels)))
    _lines(d / "dev_trials", [(a, b, "target" if t else "nontarget")
                              for a, b, t in zip(te, tt, tgt)])
    return d, X, labels, np.array(["%.2f" % v for v in dur], dtype=np.float64)


FAST = ["--num-iters=30", "--batch-size=20", "--lda-dims=0,8", "--num-folds=3",
        "--candidates=plda,pauc_lnorm,cosine_raw:as", "--num-jobs=1", "--max-vectors=150",
        "--dplda-lambdas=1"]


def test_training_durations_follow_the_table_rows_held_or_spooled(timed, tmp_path):
    """--utt2dur without development trials: the held-out trials' sides get their vectors'
    durations (the subset's rows when spooled); the held model's QMF calibration is the
    in-memory AutoBackend's on the arrays in spk2utt order with their durations."""
    d, X, labels, dur = timed
    options = FAST + ["--quality-measures=duration", "--utt2dur=ark:%s" % (d / "utt2dur")]
    _held_and_spooled(d, tmp_path, options)
    names = _same_files(tmp_path / "held", tmp_path / "spooled")
    assert "system.txt" in names
    card = dict(l.split(" ", 1) for l in (tmp_path / "held/system.txt").read_text()
                .splitlines())
    assert card["quality_measures"] == "duration"
    assert _proper_subset(card)
    model = AutoBackend(metric_params={"num_iters": 30, "batch_size": 20}, lda_dims=(0, 8),
                        num_folds=3,
                        candidates=("plda", "pauc_lnorm", "cosine_raw:as"), n_jobs=1,
                        max_vectors=150, dplda_lambdas=(1.0,),
                        quality_measures="duration").fit(X, labels, durations=dur)
    want = dict(l.split(" ", 1) for l in model.describe().splitlines())
    for key in ("system", "fusion_weights", "fusion_offset", "quality_weights"):
        assert card[key] == want[key], key


def test_development_trials_held_or_spooled(timed, tmp_path):
    d = timed[0]
    options = FAST + ["--dev-resamples=30", "--dev-vectors=ark:%s" % (d / "dev.ark"),
                      "--dev-trials=%s" % (d / "dev_trials"),
                      "--dev-enroll=ark:%s" % (d / "dev_spk2utt"),
                      "--dev-utt2spk=ark:%s" % (d / "dev_utt2spk")]
    _held_and_spooled(d, tmp_path, options)
    _same_files(tmp_path / "held", tmp_path / "spooled")
    card = (tmp_path / "spooled/system.txt").read_text()
    assert "selection_rated_by dev" in card and "final_dev_pauc" in card


def test_pseudo_trained_winner_held_or_spooled(tmp_path_factory, tmp_path):
    """--adapt with a pseudo-trained winner: its pseudo-speaker folds' models read the
    cross-fitting subset and its final training the whole table, spooled alike."""
    need(ETRI / "train")
    d = tmp_path_factory.mktemp("table_pseudo")
    c = etri_sex_shift(ETRI)
    _corpus_files(d, c)
    write_vector_table("ark:%s" % (d / "adapt.ark"), c.adapt.keys, c.adapt.X)
    options = ["--num-folds=2", "--lda-dims=none,50", "--enroll-utts=3",
               "--candidates=plda,cosine_centred", "--max-vectors=1500",
               "--adapt=ark:%s" % (d / "adapt.ark")]
    logs = _held_and_spooled(d, tmp_path, options)
    _same_files(tmp_path / "held", tmp_path / "spooled")
    assert all("pseudo-trained" in log for log in logs)
    card = dict(l.split(" ", 1) for l in (tmp_path / "spooled/system.txt").read_text()
                .splitlines())
    assert card["chosen"].startswith("pseudo_"), card
    assert _proper_subset(card), card["crossfit_data"]
