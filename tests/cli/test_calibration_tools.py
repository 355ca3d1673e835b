"""train-calibration / apply-calibration end to end: files, key joining, errors, the model."""

import re

import numpy as np
import pytest

from conftest import run_shell, run_tool
from pauc_backend.metrics.llr import cllr, min_cllr
from pauc_backend.models.calibration import LinearCalibration, LinearFusion


def make_trials(rng, n_enroll=8, n_test=60, p_target=0.1):
    key1 = np.repeat(["spk%02d" % i for i in range(n_enroll)], n_test)
    key2 = np.tile(["utt%03d" % j for j in range(n_test)], n_enroll)
    labels = rng.random(key1.size) < p_target
    labels[:3], labels[3:6] = True, False
    return key1, key2, labels


def write_trials(path, key1, key2, labels):
    path.write_text("".join("%s %s %s\n" % (a, b, "target" if t else "nontarget")
                            for a, b, t in zip(key1, key2, labels)))


def write_score_file(path, key1, key2, scores, order=None):
    order = np.arange(len(key1)) if order is None else order
    path.write_text("".join("%s %s %.7g\n" % (key1[i], key2[i], scores[i]) for i in order))


def read_score_file(path):
    rows = [line.split() for line in path.read_text().splitlines()]
    return [r[0] for r in rows], [r[1] for r in rows], np.array([float(r[2]) for r in rows])


def float32_scores(scores):
    """What a score file holds: %.7g of the float32 value."""
    return np.array([float("%.7g" % np.float32(s)) for s in scores])


@pytest.fixture
def setup(tmp_path):
    rng = np.random.default_rng(0)
    key1, key2, labels = make_trials(rng)
    scores = float32_scores(np.where(labels, rng.normal(3, 1.5, labels.size),
                                     rng.normal(-1, 1.5, labels.size)))
    write_trials(tmp_path / "trials", key1, key2, labels)
    write_score_file(tmp_path / "scores", key1, key2, scores, rng.permutation(labels.size))
    return tmp_path, key1, key2, labels, scores


def read_model(path):
    from pauc_backend.persist.calibration import read_calibration
    return read_calibration(str(path))


@pytest.mark.parametrize("binary", ["true", "false"])
def test_trained_model_matches_the_library_fit(setup, binary):
    tmp, _, _, labels, scores = setup
    proc = run_tool("train-calibration", "--prior=0.01", "--binary=" + binary,
                    tmp / "trials", tmp / "scores", tmp / "cal.mdl")
    assert proc.returncode == 0, proc.stderr.decode()
    expected = LinearCalibration(prior=0.01).fit(scores, labels)
    model = read_model(tmp / "cal.mdl")
    rel = 1e-12 if binary == "true" else 1e-6
    assert model.weights_ == pytest.approx(expected.weights_, rel=rel)
    assert model.offset_ == pytest.approx(expected.offset_, rel=rel)
    assert model.prior == pytest.approx(0.01)
    log = proc.stderr.decode()
    assert re.search(r"LOG .* converged in \d+ iterations; objective \S+, gradient norm \S+", log)
    assert "Training on %d of %d trials" % (labels.size, labels.size) in log


def test_text_model_is_a_readable_kaldi_object(setup):
    tmp = setup[0]
    run_tool("train-calibration", "--binary=false", tmp / "trials", tmp / "scores",
             tmp / "cal.txt", check=True)
    text = (tmp / "cal.txt").read_text()
    assert re.fullmatch(r"<LinearCalibration> <Prior> 0\.5 <Weights>  \[ \S+ \]\n"
                        r"<Offset> \S+ </LinearCalibration> \n", text)
    binary = (tmp / "cal.bin")
    run_tool("train-calibration", tmp / "trials", tmp / "scores", binary, check=True)
    assert binary.read_bytes().startswith(b"\0B<LinearCalibration> <Prior> \x08")


def test_applied_llrs_are_the_affine_map_of_the_scores_in_input_order(setup):
    tmp, key1, key2, _, scores = setup
    run_tool("train-calibration", tmp / "trials", tmp / "scores", tmp / "cal.mdl", check=True)
    proc = run_tool("apply-calibration", tmp / "cal.mdl", tmp / "scores", tmp / "llr")
    assert proc.returncode == 0, proc.stderr.decode()
    in_k1, in_k2, in_scores = read_score_file(tmp / "scores")
    out_k1, out_k2, llr = read_score_file(tmp / "llr")
    assert (out_k1, out_k2) == (in_k1, in_k2)
    model = read_model(tmp / "cal.mdl")
    expected = model.weights_[0] * in_scores + model.offset_
    assert llr == pytest.approx(expected, rel=1e-6, abs=1e-6)
    assert "Calibrated %d trials." % len(in_k1) in proc.stderr.decode()


def test_model_and_scores_pass_through_pipes(setup):
    tmp = setup[0]
    proc = run_shell("train-calibration trials scores - | apply-calibration - 'cat scores |' - "
                     "| sort > llr_piped && train-calibration trials scores cal.mdl && "
                     "apply-calibration cal.mdl scores - | sort > llr", cwd=tmp)
    assert proc.returncode == 0, proc.stderr.decode()
    assert (tmp / "llr_piped").read_text() == (tmp / "llr").read_text() != ""


def test_fusion_joins_shuffled_files_by_key_and_matches_the_library(tmp_path):
    rng = np.random.default_rng(1)
    key1, key2, labels = make_trials(rng)
    truth = np.where(labels, rng.normal(2, 2, labels.size), rng.normal(-2, 2, labels.size))
    systems = [float32_scores(truth + rng.normal(0, s, labels.size)) for s in (1.0, 2.0)]
    write_trials(tmp_path / "trials", key1, key2, labels)
    write_score_file(tmp_path / "a", key1, key2, systems[0])
    write_score_file(tmp_path / "b", key1, key2, systems[1], rng.permutation(labels.size))
    proc = run_tool("train-calibration", tmp_path / "trials", tmp_path / "a", tmp_path / "b",
                    tmp_path / "fusion.mdl")
    assert proc.returncode == 0, proc.stderr.decode()
    expected = LinearFusion().fit(np.column_stack(systems), labels)
    model = read_model(tmp_path / "fusion.mdl")
    assert model.weights_ == pytest.approx(expected.weights_, rel=1e-10)
    assert model.offset_ == pytest.approx(expected.offset_, rel=1e-10)

    proc = run_tool("apply-calibration", tmp_path / "fusion.mdl", tmp_path / "a",
                    tmp_path / "b", tmp_path / "llr")
    assert proc.returncode == 0, proc.stderr.decode()
    out_k1, out_k2, llr = read_score_file(tmp_path / "llr")
    assert out_k1 == list(key1) and out_k2 == list(key2)
    assert llr == pytest.approx(expected.transform(np.column_stack(systems)), rel=1e-6,
                                abs=1e-6)
    fused = cllr(llr[labels], llr[~labels])
    for system in systems:
        single = LinearCalibration().fit(system, labels).transform(system)
        assert fused < cllr(single[labels], single[~labels])


def test_trials_without_scores_are_counted_and_stray_scores_warned(setup):
    tmp, key1, key2, labels, scores = setup
    keep = np.arange(labels.size) >= 10
    write_score_file(tmp / "partial", np.append(key1[keep], "ghost"),
                     np.append(key2[keep], "x"), np.append(scores[keep], 1.0))
    proc = run_tool("train-calibration", tmp / "trials", tmp / "partial", tmp / "cal.mdl")
    log = proc.stderr.decode()
    assert proc.returncode == 0, log
    assert re.search(r"WARNING .* 1 scores in \S+ have no trial in \S+ \(e\.g\. 'ghost x'\)", log)
    assert re.search(r"WARNING .* 10 of %d trials in \S+ have no score in \S+" % labels.size, log)
    assert "Training on %d of %d trials" % (labels.size - 10, labels.size) in log
    expected = LinearCalibration().fit(scores[keep], labels[keep])
    assert read_model(tmp / "cal.mdl").weights_ == pytest.approx(expected.weights_, rel=1e-10)


def single_error(proc):
    lines = proc.stderr.decode().splitlines()
    errors = [line for line in lines if line.startswith("ERROR")]
    assert proc.returncode == 255 and len(errors) == 1, proc.stderr.decode()
    return errors[0]


def test_duplicate_trial_is_an_error_and_writes_no_model(setup):
    tmp = setup[0]
    lines = (tmp / "trials").read_text().splitlines()
    (tmp / "trials").write_text("\n".join(lines + [lines[5]]) + "\n")
    proc = run_tool("train-calibration", tmp / "trials", tmp / "scores", tmp / "cal.mdl")
    assert "Duplicate key pair '%s'" % " ".join(lines[5].split()[:2]) in single_error(proc)
    assert not (tmp / "cal.mdl").exists()


def test_duplicate_score_is_an_error(setup):
    tmp = setup[0]
    lines = (tmp / "scores").read_text().splitlines()
    (tmp / "scores").write_text("\n".join(lines + [lines[0]]) + "\n")
    proc = run_tool("train-calibration", tmp / "trials", tmp / "scores", tmp / "cal.mdl")
    assert "Duplicate key pair" in single_error(proc)


def test_separable_scores_are_an_error_suggesting_regularization(tmp_path):
    key1, key2 = np.array(["a", "a", "b", "b"]), np.array(["x", "y", "x", "y"])
    labels = np.array([True, False, False, True])
    write_trials(tmp_path / "trials", key1, key2, labels)
    write_score_file(tmp_path / "scores", key1, key2, np.array([2.0, -1.0, 0.5, 3.0]))
    proc = run_tool("train-calibration", tmp_path / "trials", tmp_path / "scores",
                    tmp_path / "cal.mdl")
    assert "--regularization" in single_error(proc)
    assert not (tmp_path / "cal.mdl").exists()
    proc = run_tool("train-calibration", "--regularization=0.1", tmp_path / "trials",
                    tmp_path / "scores", tmp_path / "cal.mdl")
    assert proc.returncode == 0, proc.stderr.decode()
    assert np.isfinite(read_model(tmp_path / "cal.mdl").weights_).all()


def test_unlabelled_trials_are_an_error(setup):
    tmp, key1, key2 = setup[:3]
    (tmp / "trials2").write_text("".join("%s %s\n" % kk for kk in zip(key1, key2)))
    proc = run_tool("train-calibration", tmp / "trials2", tmp / "scores", tmp / "cal.mdl")
    assert "no target/nontarget column" in single_error(proc)


def test_unknown_label_and_bad_prior_are_errors(setup):
    tmp = setup[0]
    lines = (tmp / "trials").read_text().splitlines()
    lines[4] = lines[4].rsplit(" ", 1)[0] + " maybe"
    (tmp / "trials3").write_text("\n".join(lines) + "\n")
    proc = run_tool("train-calibration", tmp / "trials3", tmp / "scores", tmp / "cal.mdl")
    assert "line 5: label 'maybe' is neither target nor nontarget" in single_error(proc)
    proc = run_tool("train-calibration", "--prior=1.5", tmp / "trials", tmp / "scores",
                    tmp / "cal.mdl")
    assert "Invalid value --prior=1.5: must be > 0 and < 1" in single_error(proc)


def test_wrong_number_of_score_files_is_an_error(setup):
    tmp = setup[0]
    run_tool("train-calibration", tmp / "trials", tmp / "scores", tmp / "cal.mdl", check=True)
    proc = run_tool("apply-calibration", tmp / "cal.mdl", tmp / "scores", tmp / "scores",
                    tmp / "llr")
    assert "fuses 1 score file(s), but 2 were given" in single_error(proc)
    assert not (tmp / "llr").exists()


def test_corrupt_model_is_an_error(setup):
    tmp = setup[0]
    (tmp / "bad.mdl").write_text("<LinearCalibration> <Prior> 0.5 <Offset> 1 </LinearCalibration> ")
    proc = run_tool("apply-calibration", tmp / "bad.mdl", tmp / "scores", tmp / "llr")
    assert "<Weights>" in single_error(proc)


def test_missing_arguments_print_the_usage(setup):
    proc = run_tool("train-calibration", setup[0] / "trials", setup[0] / "scores")
    assert proc.returncode == 1 and b"Usage: train-calibration" in proc.stderr


def _cosine_scores(etri, path):
    """Cosine scores (train-mean subtracted, length-normalised; speaker mean of enrollment)."""
    from pauc_backend.kaldi_io import read_token_vector_table, read_vector_table
    _, train = read_vector_table("ark:%s/train/xvector.ark" % etri)
    enroll_keys, enroll = read_vector_table("ark:%s/enroll/xvector.ark" % etri)
    test_keys, test = read_vector_table("ark:%s/test/xvector.ark" % etri)
    mean = train.mean(axis=0, dtype=np.float64)
    row = {k: i for i, k in enumerate(enroll_keys)}
    spk2utt = read_token_vector_table("ark:%s/enroll/spk2utt" % etri)
    speakers = list(spk2utt)
    models = np.array([enroll[[row[u] for u in spk2utt[s]]].mean(axis=0) for s in speakers])

    def unit(x):
        x = x - mean
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    models, test = unit(models), unit(test)
    key1, key2, labels = [], [], []
    for line in open("%s/trials" % etri):
        a, b, lab = line.split()
        key1.append(a), key2.append(b), labels.append(lab == "target")
    spk_row = {s: i for i, s in enumerate(speakers)}
    utt_row = {u: i for i, u in enumerate(test_keys)}
    i1 = np.array([spk_row[k] for k in key1])
    i2 = np.array([utt_row[k] for k in key2])
    scores = np.einsum("ij,ij->i", models[i1], test[i2])
    write_score_file(path, key1, key2, scores)
    return np.array(key1), np.array(labels), float32_scores(scores)


def test_etri_calibration_trained_on_half_the_speakers_helps_the_other_half(etri, tmp_path):
    key1, labels, scores = _cosine_scores(etri, tmp_path / "scores")
    speakers = sorted(set(key1))
    train = np.isin(key1, speakers[:len(speakers) // 2])
    lines = (etri / "trials").read_text().splitlines(keepends=True)
    (tmp_path / "trials_cal").write_text("".join(l for l, t in zip(lines, train) if t))
    (tmp_path / "trials_eval").write_text("".join(l for l, t in zip(lines, train) if not t))
    run_tool("train-calibration", "--prior=0.01", tmp_path / "trials_cal", tmp_path / "scores",
             tmp_path / "cal.mdl", check=True)
    run_tool("apply-calibration", tmp_path / "cal.mdl", tmp_path / "scores", tmp_path / "llr",
             check=True)
    _, _, llr = read_score_file(tmp_path / "llr")
    held_out = ~train
    tar, non = llr[held_out & labels], llr[held_out & ~labels]
    raw_tar, raw_non = scores[held_out & labels], scores[held_out & ~labels]
    assert min_cllr(raw_tar, raw_non) <= cllr(tar, non) < 0.5 * cllr(raw_tar, raw_non)


class _Log:
    def __init__(self):
        self.warnings = []

    def warning(self, message):
        self.warnings.append(message)


@pytest.mark.parametrize("collide", [False, True])
def test_key_join_is_exact_even_when_every_hash_collides(monkeypatch, collide):
    from pauc_backend.kaldi_io import joined_scores as calibration_io
    if collide:
        monkeypatch.setattr(calibration_io, "_string_hash",
                            lambda strings, salt: np.zeros(len(strings), dtype=np.uint64))
    rng = np.random.default_rng(3)
    key1, key2, _ = make_trials(rng, n_enroll=5, n_test=40)
    key2 = np.char.add(key2, "\u00e9")  # non-ASCII keys join too
    scores = rng.normal(size=key1.size)
    order = rng.permutation(key1.size)[20:]
    table = ("s", np.append(key1[order], "x"), np.append(key2[order], "y"),
             np.append(scores[order], 0.0))
    log = _Log()
    rows, joined = calibration_io.join_by_key(log, "trials", key1, key2, [table])
    assert np.array_equal(np.sort(rows), np.sort(order))
    assert np.array_equal(joined[:, 0], scores[rows])
    assert log.warnings[0].startswith("1 scores in s have no trial in trials (e.g. 'x y')")
    assert log.warnings[1].startswith("20 of 200 trials in trials have no score in s")
    duplicated = ("s", np.append(key1, key1[7]), np.append(key2, key2[7]),
                  np.append(scores, 1.0))
    with pytest.raises(Exception, match="Duplicate key pair '%s %s' in s" % (key1[7], key2[7])):
        calibration_io.join_by_key(log, "trials", key1, key2, [duplicated])
