"""train-pauc-auto with development trials and quality measures, score-pauc-auto with
durations (issue 34 items 2-4): the options, one ERROR for each bad input (exit 255 for an
invalid option before any input is read), a QMF model that needs durations, and its scores
against an independent computation (member scores + quality columns, by hand)."""

import numpy as np
import pytest

from conftest import run_tool
from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import write_vector_table
from pauc_backend.persist.auto_backend import read_model_dir
from pauc_backend.persist.calibration import read_calibration

FAST = ["--num-iters=40", "--batch-size=20", "--lda-dims=8", "--num-folds=3",
        "--candidates=plda,pauc_lnorm", "--dev-resamples=30", "--num-jobs=1"]


def errors(proc):
    return [line for line in proc.stderr.decode().splitlines() if line.startswith("ERROR")]


def _lines(path, rows):
    path.write_text("".join(" ".join(map(str, row)) + "\n" for row in rows))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("auto_dev")
    c = make_speaker_corpus(seed=9, dim=16, num_train_speakers=30, num_adapt_speakers=20,
                            num_eval_speakers=6, train_utts_range=(6, 12), durations=True,
                            num_dev_speakers=10)
    write_vector_table("ark:%s" % (d / "train.ark"), c.train.keys, c.train.X)
    _lines(d / "spk2utt", [(s, " ".join(u)) for s, u in sorted(c.train.spk2utt().items())])
    _lines(d / "utt2dur", zip(c.train.keys, c.train.durations))
    write_vector_table("ark:%s" % (d / "adapt.ark"), c.adapt.keys, c.adapt.X)
    _lines(d / "adapt_utt2dur", zip(c.adapt.keys, c.adapt.durations))
    enroll, test, te, tt, tgt = c.dev
    write_vector_table("ark:%s" % (d / "dev.ark"), list(enroll.keys) + list(test.keys),
                       np.vstack([enroll.X, test.X]))
    _lines(d / "dev_spk2utt", [(s, " ".join(u)) for s, u in sorted(enroll.spk2utt().items())])
    _lines(d / "dev_utt2spk", list(zip(enroll.keys, enroll.labels))
           + list(zip(test.keys, test.labels)))
    _lines(d / "dev_utt2dur", list(zip(enroll.keys, enroll.durations))
           + list(zip(test.keys, test.durations)))
    _lines(d / "dev_trials", [(a, b, "target" if t else "nontarget")
                              for a, b, t in zip(te, tt, tgt)])
    # the evaluation: enrolled speakers (means of their raw vectors), test utterances
    spk = sorted(c.enroll.spk2utt().items())
    labels = np.asarray(c.enroll.labels)
    means = np.stack([np.asarray(c.enroll.X, np.float64)[labels == s].mean(axis=0)
                      for s, _ in spk]).astype(np.float32)
    write_vector_table("ark:%s" % (d / "enroll.ark"), [s for s, _ in spk], means)
    _lines(d / "num_utts", [(s, len(u)) for s, u in spk])
    dur = dict(zip(c.enroll.keys, c.enroll.durations))
    _lines(d / "enroll_dur", [(s, "%.4f" % sum(dur[x] for x in u)) for s, u in spk])
    write_vector_table("ark:%s" % (d / "test.ark"), c.test.keys, c.test.X)
    _lines(d / "test_dur", zip(c.test.keys, c.test.durations))
    _lines(d / "trials", [(s, t) for s, _ in spk for t in c.test.keys])
    return d, c


def dev_options(d):
    return ["--dev-vectors=ark:%s" % (d / "dev.ark"), "--dev-trials=%s" % (d / "dev_trials"),
            "--dev-enroll=ark:%s" % (d / "dev_spk2utt"),
            "--dev-utt2spk=ark:%s" % (d / "dev_utt2spk")]


def train(d, out, *extra):
    return run_tool("train-pauc-auto", *FAST, *extra, "ark:%s" % (d / "train.ark"),
                    "ark:%s" % (d / "spk2utt"), out)


def score(d, model, out, *extra):
    return run_tool("score-pauc-auto", "--num-utts=ark,t:%s" % (d / "num_utts"), *extra, model,
                    "ark:%s" % (d / "enroll.ark"), "ark:%s" % (d / "test.ark"), d / "trials",
                    out)


def test_qmf_model_needs_durations_and_scores_as_computed_by_hand(data, tmp_path):
    """--quality-measures=duration+norm with development trials and their durations: the
    model's fusion is a QMF of durations and norms; score-pauc-auto without durations is ONE
    ERROR (no scores written); with them, the scores are the members' scores fused with the
    quality columns: min and max over the sides of log(clip(duration, 0.1, 30)) and of
    log(clip(norm / median, 0.05, 20)), the weights of the fusion file."""
    d, c = data
    proc = train(d, tmp_path / "m", "--quality-measures=duration+norm",
                 "--dev-utt2dur=ark:%s" % (d / "dev_utt2dur"), *dev_options(d))
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    card = dict(line.rstrip("\n").split(" ", 1) for line in open(tmp_path / "m/system.txt"))
    assert card["quality_measures"] == "duration,norm"
    assert card["selection_rated_by"] == "dev" and float(card["quality_norm_median"]) > 0
    proc = score(d, tmp_path / "m", tmp_path / "none")
    assert proc.returncode != 0 and len(errors(proc)) == 1, proc.stderr.decode()
    assert b"--enroll-duration" in proc.stderr and not (tmp_path / "none").exists()
    proc = score(d, tmp_path / "m", tmp_path / "scores",
                 "--enroll-duration=ark,t:%s" % (d / "enroll_dur"),
                 "--test-duration=ark,t:%s" % (d / "test_dur"))
    assert proc.returncode == 0, proc.stderr.decode()
    got = np.array([float(line.split()[2]) for line in open(tmp_path / "scores")])

    # by hand: the members' raw scores (the stored pipeline), the quality columns, the weights
    model, _ = read_model_dir(str(tmp_path / "m"))
    fusion = read_calibration(str(tmp_path / "m/fusion"))
    spk = [line.split()[0] for line in open(d / "num_utts")]
    counts = np.array([int(line.split()[1]) for line in open(d / "num_utts")])
    E = np.array([line for line in _read(d / "enroll.ark", spk)], np.float32)
    T = np.asarray(c.test.X, np.float32)
    er = np.repeat(np.arange(len(spk)), T.shape[0])
    tr = np.tile(np.arange(T.shape[0]), len(spk))
    pipe = model.pipeline_
    raw = pipe.score(pipe.features(E, counts), pipe.features(T, 1), er, tr, counts)
    ed = np.array([float(line.split()[1]) for line in open(d / "enroll_dur")])
    td = np.asarray(c.test.durations, np.float64)
    median = float(card["quality_norm_median"])
    en = np.log(np.clip(np.linalg.norm(E.astype(np.float64), axis=1) / median, 0.05, 20))
    tn = np.log(np.clip(np.linalg.norm(T.astype(np.float64), axis=1) / median, 0.05, 20))
    le, lt = np.log(np.clip(ed, 0.1, 30))[er], np.log(np.clip(td, 0.1, 30))[tr]
    q = np.column_stack([np.minimum(le, lt), np.maximum(le, lt),
                         np.minimum(en[er], tn[tr]), np.maximum(en[er], tn[tr])])
    w = fusion.fusion_.weights_
    k = raw.shape[1]
    expected = raw @ w[:k] + q @ w[k:] + fusion.offset_
    np.testing.assert_allclose(got, expected.astype(np.float32), rtol=2e-6, atol=2e-5)
    # a duration missing for a scored key: one ERROR naming it
    short = tmp_path / "short_dur"
    short.write_text("".join(list(open(d / "test_dur"))[1:]))
    proc = score(d, tmp_path / "m", tmp_path / "s2",
                 "--enroll-duration=ark,t:%s" % (d / "enroll_dur"),
                 "--test-duration=ark,t:%s" % short)
    assert proc.returncode != 0 and len(errors(proc)) == 1
    assert c.test.keys[0].encode() in proc.stderr and not (tmp_path / "s2").exists()


def _read(path, keys):
    from pauc_backend.kaldi_io import read_vector_table
    names, X = read_vector_table("ark:%s" % path)
    where = {k: i for i, k in enumerate(names)}
    return [X[where[k]] for k in keys]


def test_an_enrollment_utterance_without_a_vector_is_left_out_as_ivector_mean(data, tmp_path):
    d, _ = data
    lines = list(open(d / "dev_spk2utt"))
    lines[0] = lines[0].rstrip("\n") + " ghost-utt\n"
    (tmp_path / "s").write_text("".join(lines))
    opts = dev_options(d)
    opts[2] = "--dev-enroll=ark:%s" % (tmp_path / "s")
    proc = train(d, tmp_path / "m", "--quality-measures=none", *opts)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    warnings = [l for l in proc.stderr.decode().splitlines() if l.startswith("WARNING")]
    assert len(warnings) == 1 and "ghost-utt" in warnings[0]


def test_a_model_without_durations_does_not_need_them(data, tmp_path):
    d, _ = data
    proc = train(d, tmp_path / "m", "--quality-measures=none", *dev_options(d))
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    proc = score(d, tmp_path / "m", tmp_path / "a")
    assert proc.returncode == 0, proc.stderr.decode()
    proc = score(d, tmp_path / "m", tmp_path / "b",
                 "--enroll-duration=ark,t:%s" % (d / "enroll_dur"),
                 "--test-duration=ark,t:%s" % (d / "test_dur"))
    err = proc.stderr.decode()
    assert proc.returncode == 0 and "have no effect on its scores" in err
    warned = [line for line in err.splitlines() if "WARNING" in line]
    assert sum("have no effect" in line for line in warned) == 1     # a WARNING, once
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


def test_training_durations_give_a_qmf_on_the_held_out_trials(data, tmp_path):
    d, _ = data
    proc = train(d, tmp_path / "m", "--quality-measures=duration",
                 "--utt2dur=ark,t:%s" % (d / "utt2dur"))
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    card = dict(line.rstrip("\n").split(" ", 1) for line in open(tmp_path / "m/system.txt"))
    assert card["quality_measures"] == "duration"
    assert card["calibration_data"].startswith("the_pooled_held-out_trials")
    assert b"<QualityMeasures>" in (tmp_path / "m/fusion").read_bytes()


@pytest.mark.parametrize("bad,message", [
    ("unknown_key", b"is not in"),
    ("missing_vectors", b"dev_nowhere.ark"),
    ("one_class", b"only non-target trials"),
    ("unlabelled", b"no target/nontarget column"),
    ("model_without_vectors", b"enrollment key dv0001 is not in"),
    ("missing_duration", b"No duration"),
])
def test_bad_development_input_is_one_error(data, tmp_path, bad, message):
    d, c = data
    opts = dev_options(d)
    if bad == "unknown_key":
        lines = list(open(d / "dev_trials"))
        lines[5] = "nobody %s" % lines[5].split(" ", 1)[1]
        (tmp_path / "t").write_text("".join(lines))
        opts[1] = "--dev-trials=%s" % (tmp_path / "t")
    elif bad == "missing_vectors":
        opts[0] = "--dev-vectors=ark:%s" % (tmp_path / "dev_nowhere.ark")
    elif bad == "one_class":
        (tmp_path / "t").write_text("".join(line for line in open(d / "dev_trials")
                                            if line.rstrip().endswith("nontarget")))
        opts[1] = "--dev-trials=%s" % (tmp_path / "t")
    elif bad == "unlabelled":
        (tmp_path / "t").write_text("".join(" ".join(line.split()[:2]) + "\n"
                                            for line in open(d / "dev_trials")))
        opts[1] = "--dev-trials=%s" % (tmp_path / "t")
    elif bad == "model_without_vectors":       # ivector-mean drops it, its trials are unknown
        lines = list(open(d / "dev_spk2utt"))
        lines[0] = "dv0001 ghost-1 ghost-2\n"
        (tmp_path / "s").write_text("".join(lines))
        opts[2] = "--dev-enroll=ark:%s" % (tmp_path / "s")
    else:
        (tmp_path / "u").write_text("".join(list(open(d / "dev_utt2dur"))[3:]))
        opts.append("--dev-utt2dur=ark:%s" % (tmp_path / "u"))
    proc = train(d, tmp_path / "m", *opts)
    assert proc.returncode != 0 and len(errors(proc)) == 1, proc.stderr.decode()
    assert message in proc.stderr and b"Traceback" not in proc.stderr
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("options,message", [
    (["--dev-trials=TRIALS"], "--dev-trials needs --dev-vectors"),
    (["--dev-vectors=ark:V"], "--dev-vectors needs --dev-trials"),
    (["--dev-enroll=ark:E"], "--dev-enroll needs --dev-trials"),
    (["--dev-utt2dur=ark:E"], "--dev-utt2dur needs --dev-trials"),
    (["--dev-trials=T", "--dev-vectors=ark:V", "--fold-stage=1", "--fold=1"],
     "not supported with --fold-stage"),
    (["--quality-measures=duration"], "needs the durations of the trials the calibration"),
    (["--adapt-utt2dur=ark:D"], "--adapt-utt2dur needs --adapt"),
    (["--quality-measures=duration", "--dev-trials=T", "--dev-vectors=ark:V"],
     "needs --dev-utt2dur"),
    (["--max-dev-trials=-1"], "--max-dev-trials"),
    (["--dev-resamples=5"], "--dev-resamples"),
])
def test_invalid_options_are_one_error_before_any_input(tmp_path, options, message):
    proc = run_tool("train-pauc-auto", *options, "ark:%s" % (tmp_path / "missing.ark"),
                    "ark:%s" % (tmp_path / "missing_spk2utt"), tmp_path / "m")
    assert proc.returncode == 255 and len(errors(proc)) == 1, proc.stderr.decode()
    assert message in errors(proc)[0] and "missing" not in errors(proc)[0]


def test_score_duration_options_go_together(tmp_path):
    proc = run_tool("score-pauc-auto", "--enroll-duration=ark:x", tmp_path / "m",
                    "ark:%s" % (tmp_path / "e"), "ark:%s" % (tmp_path / "t"),
                    tmp_path / "trials", tmp_path / "s")
    assert proc.returncode == 255 and len(errors(proc)) == 1
    assert "--enroll-duration needs --test-duration" in errors(proc)[0]


def test_durations_with_adapt_change_the_model_or_say_why_not(data, tmp_path):
    """--adapt with --utt2dur: the calibration is learned where it rates (here the training
    folds: this small adaptation set shows no speaker clusters), where a measure is applied
    only when asked for, so one WARNING names the training durations as unused and the model
    is the one without them; asked for (--quality-measures=duration), they are used and
    system.txt's quality_measures (first and second lines) is the one the scores need."""
    d, _ = data
    adapt = ["--adapt=ark:%s" % (d / "adapt.ark")]
    base = train(d, tmp_path / "a", *adapt)
    assert base.returncode == 0, base.stderr.decode()[-3000:]
    proc = train(d, tmp_path / "b", *adapt, "--utt2dur=ark,t:%s" % (d / "utt2dur"),
                 "--adapt-utt2dur=ark,t:%s" % (d / "adapt_utt2dur"))
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    warned = [line for line in proc.stderr.decode().splitlines() if "WARNING" in line
              and "durations" in line]
    assert len(warned) == 1 and "of the training vectors" in warned[0] \
        and "of the adaptation vectors" in warned[0] and "not used" in warned[0], warned
    assert (tmp_path / "a/fusion").read_bytes() == (tmp_path / "b/fusion").read_bytes()
    proc = train(d, tmp_path / "c", *adapt, "--utt2dur=ark,t:%s" % (d / "utt2dur"),
                 "--quality-measures=duration")
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    card = (tmp_path / "c/system.txt").read_text().splitlines()
    assert "quality measures duration" in card[1] and "quality_measures duration" in card
    assert not [line for line in proc.stderr.decode().splitlines() if "WARNING" in line
                and "durations" in line]
    model, _ = read_model_dir(str(tmp_path / "c"))
    assert model.needs_durations
