"""The vector tools against the golden Kaldi outputs: bytes where Kaldi is deterministic, the LDA
matrix up to row sign, Kaldi's log lines, and one ERROR line with no output on bad input."""

import re

import numpy as np
import pytest

from conftest import run_shell, run_tool
from pauc_backend.kaldi_io import read_matrix, read_scores, read_vector_table


def stderr_of(proc):
    return proc.stderr.decode()


def messages(proc, level="LOG"):
    """The text after the ``LEVEL (...)`` header of each log line of that level."""
    return [line.split(") ", 1)[1] for line in stderr_of(proc).splitlines()
            if line.startswith(level + " (")]


def assert_scp_matches(ours, golden_scp, our_ark, golden_ark):
    expected = golden_scp.read_text().replace(golden_ark + ":", str(our_ark) + ":")
    assert ours.read_text() == expected


def assert_one_error(proc, pattern, *absent):
    text = stderr_of(proc)
    assert proc.returncode not in (0, 1), text
    errors = [line for line in text.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and re.search(pattern, errors[0]), text
    assert "Traceback" not in text
    for path in absent:
        assert not path.exists()


# -- byte-identical reproduction of exp/ ---------------------------------------------------------

def test_subtract_own_mean_reproduces_train_sub(golden, tmp_path):
    ark, scp = tmp_path / "train_sub.ark", tmp_path / "train_sub.scp"
    proc = run_tool("subtract-vector-mean", "scp:data/train/xvector.scp",
                    "ark,scp:%s,%s" % (ark, scp), cwd=golden, check=True)
    assert ark.read_bytes() == (golden / "exp/train_sub.ark").read_bytes()
    assert_scp_matches(scp, golden / "exp/train_sub.scp", ark, "exp/train_sub.ark")
    assert messages(proc) == ["Read 2338 iVectors.", "Norm of iVector mean was 17.9542",
                              "Wrote 2338 mean-subtracted iVectors"]


def test_subtract_given_mean_reproduces_test_sub(golden, tmp_path):
    ark, scp = tmp_path / "test_sub.ark", tmp_path / "test_sub.scp"
    proc = run_tool("subtract-vector-mean", "exp/mean.vec", "scp:data/test/xvector.scp",
                    "ark,scp:%s,%s" % (ark, scp), cwd=golden, check=True)
    assert ark.read_bytes() == (golden / "exp/test_sub.ark").read_bytes()
    assert_scp_matches(scp, golden / "exp/test_sub.scp", ark, "exp/test_sub.ark")
    assert messages(proc) == ["Wrote 400 mean-subtracted iVectors"]


def test_subtract_mean_false_copies(golden, tmp_path):
    out = tmp_path / "copy.ark"
    run_tool("subtract-vector-mean", "--subtract-mean=false", "ark:data/test/xvector.ark",
             "ark:%s" % out, cwd=golden, check=True)
    assert out.read_bytes() == (golden / "data/test/xvector.ark").read_bytes()


@pytest.mark.parametrize("binary, name", [([], "exp/mean.vec"),
                                          (["--binary=true"], "exp/mean_bin.vec")])
def test_global_mean_reproduces_mean_vec(golden, tmp_path, binary, name):
    out = tmp_path / "mean.vec"
    proc = run_tool("compute-vector-mean", *binary, "scp:data/adapt/xvector.scp", out,
                    cwd=golden, check=True)
    assert out.read_bytes() == (golden / name).read_bytes()
    assert proc.returncode == 0


def test_speaker_means_reproduce_enroll_arks(golden, tmp_path):
    ark, scp, num = tmp_path / "e.ark", tmp_path / "e.scp", tmp_path / "num_utts.ark"
    proc = run_tool("compute-vector-mean", "ark:data/enroll/spk2utt", "scp:data/enroll/xvector.scp",
                    "ark,scp:%s,%s" % (ark, scp), "ark,t:%s" % num, cwd=golden, check=True)
    assert ark.read_bytes() == (golden / "exp/enroll_spk_xvector.ark").read_bytes()
    assert num.read_bytes() == (golden / "exp/enroll_num_utts.ark").read_bytes()
    assert_scp_matches(scp, golden / "exp/enroll_spk_xvector.scp", ark,
                       "exp/enroll_spk_xvector.ark")
    expected = [line.split(") ", 1)[1] for line in
                (golden / "logs/enroll_speaker_mean.log").read_text().splitlines()
                if line.startswith("LOG")]
    assert messages(proc) == expected


def test_speaker_means_warn_about_missing_utterances(golden, tmp_path):
    spk2utt = tmp_path / "spk2utt"
    spk2utt.write_text("ev001 ev001-enr1 nosuch\nghost nosuch2\n")
    out = tmp_path / "e.ark"
    proc = run_tool("compute-vector-mean", "ark:%s" % spk2utt, "scp:data/enroll/xvector.scp",
                    "ark:%s" % out, cwd=golden)
    assert proc.returncode == 0
    assert messages(proc, "WARNING") == [
        "No iVector present in input for utterance nosuch",
        "No iVector present in input for utterance nosuch2",
        "Not producing output for speaker ghost since no utterances had iVectors"]
    assert messages(proc)[0] == ("Computed mean of 1 speakers (1 with no utterances), "
                                 "consisting of 1 utterances (2 absent from input).")
    keys, X = read_vector_table("ark:%s" % out)
    _, ref = read_vector_table("ark:%s" % (golden / "data/enroll/xvector.ark"))
    assert keys == ["ev001"] and np.array_equal(X[0], ref[0])


@pytest.mark.parametrize("source, target, log", [
    ("exp/train_sub.ark", "train_lda", "train_transform_vec.log"),
    ("exp/test_sub.ark", "test_lda", "test_transform_vec.log")])
def test_affine_transform_reproduces_lda_arks(golden, tmp_path, source, target, log):
    ark, scp = tmp_path / (target + ".ark"), tmp_path / (target + ".scp")
    proc = run_tool("transform-vectors", "exp/transform.mat", "ark:" + source,
                    "ark,scp:%s,%s" % (ark, scp), cwd=golden, check=True)
    assert ark.read_bytes() == (golden / "exp" / (target + ".ark")).read_bytes()
    assert_scp_matches(scp, golden / "exp" / (target + ".scp"), ark, "exp/%s.ark" % target)
    assert messages(proc) == [line.split(") ", 1)[1] for line in
                              (golden / "logs" / log).read_text().splitlines()
                              if line.startswith("LOG")]


def test_linear_transform_without_offset_column(golden, tmp_path):
    M = read_matrix(str(golden / "exp/transform.mat"))
    linear = tmp_path / "linear.txt.mat"
    linear.write_text(" [\n" + "".join("  " + "".join("%.9g " % v for v in row) + "\n"
                                       for row in M[:, :-1])[:-1] + " ]\n")
    out = tmp_path / "y.ark"
    run_tool("transform-vectors", linear, "ark:exp/test_sub.ark", "ark:%s" % out, cwd=golden,
             check=True)
    _, X = read_vector_table("ark:%s" % (golden / "exp/test_sub.ark"))
    _, Y = read_vector_table("ark:%s" % out)
    np.testing.assert_allclose(Y, X.astype(np.float64) @ M[:, :-1].T.astype(np.float64),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("options, source, target, log", [
    ([], "exp/train_lda.ark", "exp/train_lda_norm.ark", "train_normalize_length.log"),
    ([], "exp/test_lda.ark", "exp/test_final.ark", "test_normalize_length.log"),
    (["--scaleup=false"], "exp/test_lda.ark", "exp/test_lda_unitnorm.txt.ark",
     "test_normalize_length_noscaleup.log")])
def test_length_normalisation_reproduces_kaldi(golden, tmp_path, options, source, target, log):
    out = tmp_path / "out.ark"
    text = ",t" if target.endswith(".txt.ark") else ""
    proc = run_tool("normalize-vector-length", *options, "ark:" + source,
                    "ark%s:%s" % (text, out), cwd=golden, check=True)
    assert out.read_bytes() == (golden / target).read_bytes()
    assert messages(proc) == [line.split(") ", 1)[1] for line in
                              (golden / "logs" / log).read_text().splitlines()
                              if line.startswith("LOG")]


def test_normalize_false_copies_but_logs_ratios(golden, tmp_path):
    out = tmp_path / "out.ark"
    proc = run_tool("normalize-vector-length", "--normalize=false", "ark:exp/test_lda.ark",
                    "ark:%s" % out, cwd=golden, check=True)
    assert out.read_bytes() == (golden / "exp/test_lda.ark").read_bytes()
    assert messages(proc)[1].endswith("was 1.51565, standard deviation was 0.203297")


@pytest.mark.parametrize("name, stage", [("enroll_final", "compute-vector-mean ark:data/enroll/"
                                          "spk2utt scp:data/enroll/xvector.scp ark:- | "
                                          "subtract-vector-mean exp/mean.vec ark:- ark:-"),
                                         ("adapt_final", "subtract-vector-mean scp:data/adapt/"
                                          "xvector.scp ark:-")])
def test_recipe_pipelines_reproduce_final_arks(golden, tmp_path, name, stage):
    ark, scp = tmp_path / (name + ".ark"), tmp_path / (name + ".scp")
    proc = run_shell("%s | transform-vectors exp/transform.mat ark:- ark:- | "
                     "normalize-vector-length ark:- ark,scp:%s,%s" % (stage, ark, scp),
                     cwd=golden)
    assert proc.returncode == 0, stderr_of(proc)
    assert ark.read_bytes() == (golden / "exp" / (name + ".ark")).read_bytes()
    assert_scp_matches(scp, golden / "exp" / (name + ".scp"), ark, "exp/%s.ark" % name)


# -- train-lda -----------------------------------------------------------------------------------

def assert_equal_up_to_row_sign(ours, ref):
    signs = np.sign(np.sum(ours * ref, axis=1))[:, None]
    np.testing.assert_allclose(ours[:, :-1] * signs, ref[:, :-1], rtol=1e-5, atol=0)
    np.testing.assert_allclose(ours[:, -1:] * signs, ref[:, -1:], rtol=1e-5, atol=1e-12)


def test_train_lda_recipe_form_matches_transform_mat(golden, tmp_path):
    out = tmp_path / "transform.mat"
    proc = run_tool("train-lda", "--total-covariance-factor=0.0", "--dim=32",
                    "ark:subtract-vector-mean scp:data/train/xvector.scp ark:- |",
                    "ark:data/train/utt2spk", out, cwd=golden, check=True)
    assert out.read_bytes()[:15] == (golden / "exp/transform.mat").read_bytes()[:15]
    ours = read_matrix(str(out))
    assert ours.dtype == np.float32
    assert_equal_up_to_row_sign(ours.astype(np.float64),
                                read_matrix(str(golden / "exp/transform.mat")).astype(float))
    expected = [line.split(") ", 1)[1] for line in
                (golden / "logs/ivector_compute_lda.log").read_text().splitlines()
                if line.startswith("LOG (ivector-compute-lda")]
    expected[-1] = expected[-1].replace("exp/transform.mat", str(out))
    ours_log = [line.split(") ", 1)[1] for line in stderr_of(proc).splitlines()
                if line.startswith("LOG (train-lda")]
    assert ours_log == expected


def test_train_lda_sorts_unsorted_input_like_kaldi(golden, tmp_path):
    scp = tmp_path / "reversed.scp"
    scp.write_text("".join(reversed((golden / "exp/train_sub.scp").read_text()
                                    .splitlines(keepends=True))))
    out = tmp_path / "transform.mat"
    run_tool("train-lda", "--dim=32", "scp:%s" % scp, "ark:data/train/utt2spk", out,
             cwd=golden, check=True)
    assert_equal_up_to_row_sign(read_matrix(str(out)).astype(np.float64),
                                read_matrix(str(golden / "exp/transform.mat")).astype(float))


def test_train_lda_text_output_with_total_covariance_factor(golden, tmp_path):
    out = tmp_path / "transform_tcf0.1.txt.mat"
    run_tool("train-lda", "--total-covariance-factor=0.1", "--dim=32", "--binary=false",
             "ark:exp/train_sub.ark", "ark:data/train/utt2spk", out, cwd=golden, check=True)
    assert out.read_bytes()[:4] == b" [\n "
    ref = read_matrix(str(golden / "exp/transform_tcf0.1.txt.mat")).astype(np.float64)
    ours = read_matrix(str(out)).astype(np.float64)
    # Both are %.7g text: allow for the rounding of the printed digits.
    signs = np.sign(np.sum(ours * ref, axis=1))[:, None]
    np.testing.assert_allclose(ours * signs, ref, rtol=1e-6, atol=1e-14)


def test_train_lda_warns_about_duplicates_and_missing_speakers(golden, tmp_path):
    utt2spk = tmp_path / "utt2spk"
    lines = (golden / "data/train/utt2spk").read_text().splitlines()
    utt2spk.write_text("\n".join(lines[1:]) + "\n")
    out = tmp_path / "lda.mat"
    proc = run_tool("train-lda", "--dim=8",
                    "scp:cat data/train/xvector.scp data/train/xvector.scp |",
                    "ark:%s" % utt2spk, out, cwd=golden, check=True)
    warnings = messages(proc, "WARNING")
    assert warnings[0] == "utt2spk has no entry for utterance tr0001-u01, skipping it."
    assert warnings[1] == "Duplicate iVector found for utterance tr0001-u01, ignoring it."
    assert len(warnings) == 2338 + 1
    assert "Read 2337 utterances, 2339 with errors." in messages(proc)
    assert read_matrix(str(out)).shape == (8, 65)


# -- score-cosine-trials -------------------------------------------------------------------------

def test_cosine_scores_are_dot_products_of_the_given_vectors(golden, tmp_path):
    out = tmp_path / "scores"
    proc = run_tool("score-cosine-trials", "data/trials", "ark:exp/enroll_final.ark",
                    "ark:exp/test_final.ark", out, cwd=golden, check=True)
    assert messages(proc)[-1] == "Processed 16000 trials, 0 had errors."
    k1, k2, scores = read_scores(str(out))
    trials = [line.split() for line in (golden / "data/trials").read_text().splitlines()]
    assert list(k1) == [t[0] for t in trials] and list(k2) == [t[1] for t in trials]
    ekeys, E = read_vector_table("ark:%s" % (golden / "exp/enroll_final.ark"))
    tkeys, T = read_vector_table("ark:%s" % (golden / "exp/test_final.ark"))
    e = E[[ekeys.index(k) for k in k1]].astype(np.float64)
    t = T[[tkeys.index(k) for k in k2]].astype(np.float64)
    np.testing.assert_allclose(scores, np.sum(e * t, axis=1), rtol=1e-6, atol=1e-5)
    assert re.fullmatch(r"\S+ \S+ -?[0-9.e+-]+", out.read_text().splitlines()[0])

    cosine = tmp_path / "cosine"
    run_tool("score-cosine-trials", "--normalize=true", "data/trials",
             "ark:exp/enroll_final.ark", "ark:exp/test_final.ark", cosine, cwd=golden,
             check=True)
    expected = np.sum(e * t, axis=1) / np.linalg.norm(e, axis=1) / np.linalg.norm(t, axis=1)
    np.testing.assert_allclose(read_scores(str(cosine))[2], expected, atol=2e-6)


def test_cosine_scoring_skips_unknown_keys_with_warnings(golden, tmp_path):
    out = tmp_path / "scores"
    proc = run_tool("score-cosine-trials", "cut -d' ' -f1,2 data/trials_missing |",
                    "ark:exp/enroll_final.ark", "ark:exp/test_final.ark", out, cwd=golden)
    assert proc.returncode == 0
    assert len(messages(proc, "WARNING")) == 2
    assert messages(proc)[-1] == "Processed 6 trials, 2 had errors."
    assert len(out.read_text().splitlines()) == 6


def test_cosine_scoring_with_nothing_scored_is_one_error(golden, tmp_path):
    # Kaldi exits 1 with no ERROR and an empty scores file; issue 10 asks for one ERROR line
    # and no scores file written.
    trials = tmp_path / "trials"
    trials.write_text("nobody ev001-tst01\n")
    proc = run_tool("score-cosine-trials", trials, "ark:exp/enroll_final.ark",
                    "ark:exp/test_final.ark", tmp_path / "scores", cwd=golden)
    assert proc.returncode == 255
    errors = [line for line in proc.stderr.decode().splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and "None of the 1 trials" in errors[0]
    assert not (tmp_path / "scores").exists()


def test_dot_products_of_vectors_with_unequal_norms_warn_once(golden, tmp_path):
    """Issue 19 item 4d: raw vectors (norms varying by 7-10 %) without --normalize give one
    WARNING suggesting --normalize=true; length-normalised vectors, or --normalize=true, none."""
    raw = ("data/trials", "ark:exp/enroll_spk_xvector.ark", "ark:exp/test_sub.ark")
    proc = run_tool("score-cosine-trials", *raw, tmp_path / "raw", cwd=golden, check=True)
    warnings = messages(proc, "WARNING")
    assert len(warnings) == 1 and "--normalize=true" in warnings[0], warnings
    assert "0.0675 in ark:exp/enroll_spk_xvector.ark" in warnings[0]
    assert "0.0986 in ark:exp/test_sub.ark" in warnings[0]
    for args in (("--normalize=true",) + raw,
                 ("data/trials", "ark:exp/enroll_final.ark", "ark:exp/test_final.ark")):
        proc = run_tool("score-cosine-trials", *args, tmp_path / "scores", cwd=golden,
                        check=True)
        assert messages(proc, "WARNING") == []


def test_cosine_help_documents_normalize_option():
    proc = run_tool("score-cosine-trials", "--help")
    assert proc.returncode == 0
    assert b"--normalize" in proc.stdout and b"cosine similarity" in proc.stdout


# -- bad input: one ERROR line, non-zero exit, no output file ------------------------------------

def test_transform_dimension_mismatch_is_an_error(golden, tmp_path):
    out = tmp_path / "out.ark"
    proc = run_tool("transform-vectors", "exp/transform.mat", "ark:exp/train_lda.ark",
                    "ark:%s" % out, cwd=golden)
    assert_one_error(proc, r"Dimension mismatch: input vector has dimension 32 and transform "
                           r"has 65 columns\.$", out)


def test_lda_with_fewer_utterances_than_dimensions_is_an_error(golden, tmp_path):
    out = tmp_path / "lda.mat"
    proc = run_tool("train-lda", "--dim=10", "scp:head -n 40 data/train/xvector.scp |",
                    "ark:data/train/utt2spk", out, cwd=golden)
    assert_one_error(proc, "Too little data for iVector dimension", out)


def test_lda_dim_above_input_dimension_is_an_error(golden, tmp_path):
    out = tmp_path / "lda.mat"
    proc = run_tool("train-lda", "--dim=65", "ark:exp/train_sub.ark", "ark:data/train/utt2spk",
                    out, cwd=golden)
    assert_one_error(proc, "--dim=65 must be in 1..64", out)


@pytest.mark.parametrize("tool, args", [
    ("normalize-vector-length", ["ark:{nan}", "ark:{out}"]),
    ("subtract-vector-mean", ["ark:{nan}", "ark:{out}"]),
    ("subtract-vector-mean", ["exp/mean.vec", "ark:{nan}", "ark:{out}"]),
    ("transform-vectors", ["exp/transform.mat", "ark:{nan}", "ark:{out}"]),
    ("compute-vector-mean", ["ark:{nan}", "{out}"]),
    ("compute-vector-mean", ["ark:data/train/spk2utt", "ark:{nan}", "ark:{out}"]),
    ("train-lda", ["ark:{nan}", "ark:data/train/utt2spk", "{out}"]),
    ("score-cosine-trials", ["data/trials", "ark:{nan}", "ark:exp/test_final.ark", "{out}"]),
])
def test_nan_in_a_vector_is_an_error(golden, tmp_path, tool, args):
    keys, X = read_vector_table("ark:%s" % (golden / "exp/train_sub.ark"))
    X[5, 3] = np.nan
    nan = tmp_path / "nan.txt.ark"
    nan.write_text("".join("%s  [ %s]\n" % (k, "".join("%.9g " % v for v in row))
                           for k, row in zip(keys, X)))
    out = tmp_path / "out"
    proc = run_tool(tool, *[a.format(nan=nan, out=out) for a in args], cwd=golden)
    assert_one_error(proc, "%s .*contains NaN" % keys[5], out)


def test_wrong_number_of_arguments_prints_usage_and_exits_1():
    for tool in ("compute-vector-mean", "subtract-vector-mean", "transform-vectors",
                 "normalize-vector-length", "train-lda", "score-cosine-trials"):
        proc = run_tool(tool, "ark:a")
        assert proc.returncode == 1 and b"Usage:" in proc.stderr, tool


def test_global_mean_of_empty_input_is_an_error(tmp_path):
    empty = tmp_path / "empty.ark"
    empty.write_bytes(b"")
    out = tmp_path / "mean.vec"
    proc = run_tool("compute-vector-mean", "ark:%s" % empty, out)
    assert_one_error(proc, "No iVectors read", out)


def test_empty_input_is_one_error_and_writes_nothing(tmp_path):
    # issue 10: Kaldi exits 1 silently with an empty output; we say why and write nothing
    empty = tmp_path / "empty.ark"
    empty.write_bytes(b"")
    proc = run_tool("normalize-vector-length", "ark:%s" % empty, "ark:%s" % (tmp_path / "o"))
    assert_one_error(proc, "No vectors read from ark:.*empty input", tmp_path / "o")
    assert messages(proc) == []
