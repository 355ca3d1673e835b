"""train-pauc-auto's checks of its unlabelled and development inputs (issue 41 item 4, issue
42): each bad input is ONE ERROR naming the file and the place (line of a script or a trials
file, entry of an archive) or the cause, before any training, with no output directory and
no numpy warning; an adaptation set that cannot be trusted is ONE WARNING naming the cause,
and when it is not usable at all the back-end is the one trained without --adapt (every
model file the same bytes); rows left out of a usable set change the model exactly as
removing them from the file does."""

import re

import numpy as np
import pytest

from conftest import run_tool
from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import write_vector_table

QUICK = ["--num-folds=2", "--lda-dims=8", "--num-iters=20", "--candidates=plda,cosine_centred",
         "--dev-resamples=30"]
HEADER = re.compile(r"^(LOG|WARNING|ERROR) \(")


def _lines(path, rows):
    path.write_text("".join(" ".join(map(str, row)) + "\n" for row in rows))


def _messages(proc, level):
    return [line for line in proc.stderr.decode().splitlines() if line.startswith(level + " (")]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("input_checks")
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=30, num_adapt_speakers=20,
                            num_eval_speakers=6, train_utts_range=(6, 12),
                            num_dev_speakers=10)
    write_vector_table("ark:%s" % (d / "train.ark"), c.train.keys, c.train.X)
    _lines(d / "spk2utt", [(s, " ".join(u)) for s, u in sorted(c.train.spk2utt().items())])
    write_vector_table("ark,scp:%s,%s" % (d / "adapt.ark", d / "adapt.scp"), c.adapt.keys,
                       c.adapt.X)
    enroll, test, te, tt, tgt = c.dev
    write_vector_table("ark:%s" % (d / "dev.ark"), list(enroll.keys) + list(test.keys),
                       np.vstack([enroll.X, test.X]))
    _lines(d / "dev_spk2utt", [(s, " ".join(u)) for s, u in sorted(enroll.spk2utt().items())])
    _lines(d / "dev_trials", [(a, b, "target" if t else "nontarget")
                              for a, b, t in zip(te, tt, tgt)])
    return d, c


def _train(d, out, *extra):
    return run_tool("train-pauc-auto", *QUICK, *extra, "ark:%s" % (d / "train.ark"),
                    "ark:%s" % (d / "spk2utt"), out)


def _one_error(proc, out):
    errors = _messages(proc, "ERROR")
    assert proc.returncode != 0 and len(errors) == 1, proc.stderr.decode()[-3000:]
    stderr = proc.stderr.decode()
    assert "Traceback" not in stderr and "Warning:" not in stderr    # no numpy RuntimeWarning
    assert not out.exists()
    return errors[0]


# ------------------------------------------------------------------------------- --adapt
def test_a_key_listed_twice_in_adapt_is_one_error_naming_its_places(data, tmp_path):
    d, c = data
    n = len(c.adapt.keys)
    keys = list(c.adapt.keys) + [c.adapt.keys[2]]
    write_vector_table("ark:%s" % (tmp_path / "a.ark"), keys, np.vstack([c.adapt.X,
                                                                         c.adapt.X[2:3]]))
    error = _one_error(_train(d, tmp_path / "m", "--adapt=ark:%s" % (tmp_path / "a.ark")),
                       tmp_path / "m")
    assert "Duplicate key %s in --adapt=ark:%s (entries 3 and %d)" % (
        c.adapt.keys[2], tmp_path / "a.ark", n + 1) in error
    # in a script: its lines
    lines = (d / "adapt.scp").read_text().splitlines(True)
    (tmp_path / "a.scp").write_text("".join(lines[:5] + [lines[1]] + lines[5:]))
    error = _one_error(_train(d, tmp_path / "m", "--adapt=scp:%s" % (tmp_path / "a.scp")),
                       tmp_path / "m")
    assert "Duplicate key %s in --adapt=scp:%s (lines 2 and 6)" % (
        c.adapt.keys[1], tmp_path / "a.scp") in error


@pytest.mark.parametrize("kind,cause", [
    ("zeros", "200 of its 200 vectors are left out (200 all zero); no usable vector"),
    ("1e30", "200 of its 200 vectors are left out (200 with an entry above "),
])
def test_an_adaptation_set_of_which_nothing_can_be_used_is_one_error(data, tmp_path, kind,
                                                                       cause):
    d, c = data
    A = {"zeros": np.zeros((200, 16)),
         "1e30": 1e30 * np.random.default_rng(0).standard_normal((200, 16))}[kind]
    write_vector_table("ark:%s" % (tmp_path / "a.ark"), ["u%03d" % i for i in range(200)], A)
    error = _one_error(_train(d, tmp_path / "m", "--adapt=ark:%s" % (tmp_path / "a.ark")),
                       tmp_path / "m")
    assert ("--adapt=ark:%s: %s" % (tmp_path / "a.ark", cause)) in error


@pytest.fixture(scope="module")
def plain(data, tmp_path_factory):
    """The model trained without --adapt."""
    d, _ = data
    out = tmp_path_factory.mktemp("plain") / "m"
    proc = _train(d, out)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return out


def _files(model):
    return {p.name: p.read_bytes() for p in sorted(model.iterdir())}


@pytest.mark.parametrize("kind,token,cause", [
    ("identical", "identical", "its 200 vectors are one vector repeated bit for bit: no "
                               "speaker structure"),
    ("noise", "isotropic", "its vectors are spread like isotropic noise (John's sphericity "
                           "statistic of 2000 of them in 16 dimensions is z = "),
    ("line", "rank_deficient", "its vectors span only 1 dimension (the numerical rank of 300 "
                               "of them, centred; the training vectors' is 16)"),
])
def test_an_untrustworthy_adaptation_set_warns_once_and_changes_nothing(data, plain, tmp_path,
                                                                        kind, token, cause):
    d, c = data
    rng = np.random.default_rng(1)
    X = c.train.X
    if kind == "noise":
        A = X.mean(axis=0) + np.sqrt(X.var(axis=0).mean()) * rng.standard_normal((20000, 16))
    elif kind == "identical":
        A = np.repeat(X[:1], 200, axis=0)
    else:
        A = X[0] + np.outer(rng.standard_normal(300), rng.standard_normal(16))
    write_vector_table("ark:%s" % (tmp_path / "a.ark"),
                       ["u%05d" % i for i in range(A.shape[0])], A)
    proc = _train(d, tmp_path / "m", "--adapt=ark:%s" % (tmp_path / "a.ark"))
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    warnings = _messages(proc, "WARNING")
    assert len(warnings) == 1 and "Warning:" not in proc.stderr.decode(), warnings
    assert ("--adapt=ark:%s: %s" % (tmp_path / "a.ark", cause)) in warnings[0]
    assert warnings[0].endswith("not used; the back-end is trained as without --adapt")
    got, want = _files(tmp_path / "m"), _files(plain)
    card = got.pop("system.txt").decode().splitlines()
    left = 199 if kind == "identical" else 0           # the 199 copies of the first
    assert card[-3:] == ["adapt_check %s" % token, "adapt_left_out %d" % left,
                         "adapt_used false"]
    assert card[:-3] == want.pop("system.txt").decode().splitlines()
    assert got == want


def test_an_unusable_adaptation_set_with_an_adapted_candidate_is_one_error(data, tmp_path):
    d, _ = data
    A = np.random.default_rng(2).standard_normal((2000, 16))
    write_vector_table("ark:%s" % (tmp_path / "a.ark"), ["u%04d" % i for i in range(2000)], A)
    proc = run_tool("train-pauc-auto", "--num-folds=2", "--lda-dims=8",
                    "--candidates=plda_adapt", "--adapt=ark:%s" % (tmp_path / "a.ark"),
                    "ark:%s" % (d / "train.ark"), "ark:%s" % (d / "spk2utt"), tmp_path / "m")
    error = _one_error(proc, tmp_path / "m")
    assert "isotropic noise" in error
    assert "--candidates: candidate 'plda_adapt' needs an adaptation set" in error


def test_rows_left_out_warn_once_and_train_as_without_them(data, tmp_path):
    d, c = data
    n = len(c.adapt.keys)
    write_vector_table("ark:%s" % (tmp_path / "bad.ark"), list(c.adapt.keys) + ["z1", "z2"],
                       np.vstack([c.adapt.X, np.zeros((2, 16))]))
    proc = _train(d, tmp_path / "m", "--adapt=ark:%s" % (tmp_path / "bad.ark"))
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    warnings = _messages(proc, "WARNING")
    assert len(warnings) == 1 and ("2 of its %d vectors are left out (2 all zero)" % (n + 2)
                                   in warnings[0]), warnings
    assert any("Read %d adaptation vectors" % n in line for line in _messages(proc, "LOG"))
    proc = _train(d, tmp_path / "clean", "--adapt=ark:%s" % (d / "adapt.ark"))
    assert proc.returncode == 0 and _messages(proc, "WARNING") == []
    got, want = _files(tmp_path / "m"), _files(tmp_path / "clean")
    card = got.pop("system.txt").decode().splitlines()
    clean = want.pop("system.txt").decode().splitlines()
    assert "adapt_left_out 2" in card and "adapt_left_out 0" in clean
    assert [line for line in card if not line.startswith("adapt_left_out")] == \
        [line for line in clean if not line.startswith("adapt_left_out")]
    assert got == want


# --------------------------------------------------------------- development vectors, trials
def _dev(d, trials=None, vectors=None):
    return ["--dev-vectors=ark:%s" % (vectors or d / "dev.ark"),
            "--dev-trials=%s" % (trials or d / "dev_trials"),
            "--dev-enroll=ark:%s" % (d / "dev_spk2utt")]


def test_a_development_vector_listed_twice_is_one_error_naming_its_entries(data, tmp_path):
    d, c = data
    enroll, test = c.dev[0], c.dev[1]
    keys = list(enroll.keys) + list(test.keys)
    X = np.vstack([enroll.X, test.X])
    write_vector_table("ark:%s" % (tmp_path / "v.ark"), keys + [keys[4]], np.vstack([X, X[4:5]]))
    error = _one_error(_train(d, tmp_path / "m", *_dev(d, vectors=tmp_path / "v.ark")),
                       tmp_path / "m")
    assert "Duplicate key %s in --dev-vectors=ark:%s (entries 5 and %d)" % (
        keys[4], tmp_path / "v.ark", len(keys) + 1) in error


@pytest.mark.parametrize("label,suffix", [("same", ")"), ("other", ", once as target and "
                                                                    "once as nontarget: "
                                                                    "contradictory labels)")])
def test_a_development_trial_listed_twice_is_one_error_naming_its_lines(data, tmp_path, label,
                                                                         suffix):
    d, _ = data
    lines = (d / "dev_trials").read_text().splitlines(True)
    key1, key2, value = lines[3].split()
    if label == "other":
        value = "nontarget" if value == "target" else "target"
    (tmp_path / "t").write_text("".join(lines) + "%s %s %s\n" % (key1, key2, value))
    error = _one_error(_train(d, tmp_path / "m", *_dev(d, trials=tmp_path / "t")),
                       tmp_path / "m")
    assert error.endswith("Trial '%s %s' appears twice in development trials file %s (lines 4 "
                          "and %d%s" % (key1, key2, tmp_path / "t", len(lines) + 1, suffix))


@pytest.mark.parametrize("targets,nontargets,cap", [(1, 1, 0), (3, 99, 0), (10, 300, 100)])
def test_development_trials_that_cannot_rate_are_one_error_before_training(
        data, tmp_path, targets, nontargets, cap):
    """pAUC[0, 0.01] needs >= 100 non-targets among the trials rated (at most
    --max-dev-trials: every target up to half of it, the non-targets filling the rest)."""
    d, _ = data
    lines = (d / "dev_trials").read_text().splitlines(True)
    tar = [line for line in lines if line.split()[2] == "target"][:targets]
    non = [line for line in lines if line.split()[2] == "nontarget"][:nontargets]
    (tmp_path / "t").write_text("".join(tar + non))
    extra = ["--max-dev-trials=%d" % cap] if cap else []
    proc = _train(d, tmp_path / "m", *extra, *_dev(d, trials=tmp_path / "t"))
    error = _one_error(proc, tmp_path / "m")
    rated = cap - min(targets, cap // 2) if cap else nontargets
    assert ("Development trials file %s cannot rate the candidates: its %d non-target trial%s"
            % (tmp_path / "t", rated, "" if rated == 1 else "s")) in error
    assert ("leave%s the false-positive band [0, 0.01] of the pAUC (--pauc-alpha, --pauc-beta) "
            "empty" % ("s" if rated == 1 else "")) in error
    assert error.endswith("the band needs at least 100 non-target trials")
    assert ("--max-dev-trials=%d" % cap in error) == bool(cap)
    assert "Cross-fitting" not in proc.stderr.decode()          # before any training
