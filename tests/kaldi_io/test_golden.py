"""Reading every golden Kaldi file gives the right values; writing them back is byte-identical."""

import os

import numpy as np
import pytest

from pauc_backend.kaldi_io import (read_int32_table, read_matrix, read_plda, read_scores,
                                   read_token_table, read_token_vector_table, read_trials,
                                   read_vector, read_vector_table, write_int32_table,
                                   write_matrix, write_plda, write_scores, write_vector,
                                   write_vector_table)

SETS = ["train", "adapt", "enroll", "test"]
EXP_TABLES = ["train_sub", "train_lda", "train_lda_norm", "adapt_final", "enroll_spk_xvector",
              "enroll_final", "test_sub", "test_lda", "test_final"]


@pytest.fixture
def in_golden(golden, monkeypatch):
    monkeypatch.chdir(golden)
    return golden


def numpy_read_fv_ark(path):
    """Independent reference: walk a binary FV archive with struct-free numpy slicing."""
    raw = open(path, "rb").read()
    pos, keys, rows = 0, [], []
    while pos < len(raw):
        space = raw.index(b" ", pos)
        keys.append(raw[pos:space].decode())
        assert raw[space + 1:space + 7] == b"\0BFV \x04"
        dim = int(np.frombuffer(raw, "<i4", 1, space + 7)[0])
        rows.append(np.frombuffer(raw, "<f4", dim, space + 11))
        pos = space + 11 + 4 * dim
    return keys, np.array(rows)


def same_bytes(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


@pytest.mark.parametrize("name", SETS)
def test_binary_ark_and_scp_read_the_reference_values(in_golden, name):
    ref_keys, ref = numpy_read_fv_ark("data/%s/xvector.ark" % name)
    for rspec in ("ark:data/%s/xvector.ark" % name, "scp:data/%s/xvector.scp" % name):
        keys, X = read_vector_table(rspec)
        assert keys == ref_keys
        assert X.dtype == np.float32 and np.array_equal(X, ref)


@pytest.mark.parametrize("name", EXP_TABLES)
def test_kaldi_written_tables_read_identically_from_ark_and_scp(in_golden, name):
    ref_keys, ref = numpy_read_fv_ark("exp/%s.ark" % name)
    keys, X = read_vector_table("scp:exp/%s.scp" % name)
    assert keys == ref_keys and np.array_equal(X, ref)


@pytest.mark.parametrize("name", SETS + ["exp/" + t for t in EXP_TABLES])
def test_ark_scp_writer_reproduces_kaldi_offsets_and_bytes(in_golden, tmp_path, name):
    stem = "data/%s/xvector" % name if name in SETS else name
    keys, X = read_vector_table("ark:%s.ark" % stem)
    out_ark = os.path.relpath(tmp_path / "out.ark")
    write_vector_table("ark,scp:%s,%s" % (out_ark, tmp_path / "out.scp"), keys, X)
    assert same_bytes(out_ark, stem + ".ark")
    written = (tmp_path / "out.scp").read_text().replace(out_ark, stem + ".ark")
    assert written == open(stem + ".scp").read()


@pytest.mark.parametrize("text_ark,binary_ark", [
    ("exp/enroll_final.txt.ark", "exp/enroll_final.ark"),
    ("exp/test_final.txt.ark", "exp/test_final.ark")])
def test_text_ark_matches_binary_to_print_precision_and_writes_back_identically(
        in_golden, tmp_path, text_ark, binary_ark):
    keys, X = read_vector_table("ark:" + text_ark)
    ref_keys, ref = read_vector_table("ark:" + binary_ark)
    assert keys == ref_keys
    np.testing.assert_allclose(X, ref, rtol=1e-6, atol=1e-12)
    write_vector_table("ark,t:%s" % (tmp_path / "t.ark"), ref_keys, ref)
    assert same_bytes(tmp_path / "t.ark", text_ark)


def test_text_subset_written_by_copy_vector_is_reproduced(in_golden, tmp_path):
    keys, X = read_vector_table("scp:head -n 10 data/train/xvector.scp |")
    assert len(keys) == 10
    write_vector_table("ark,t:%s" % (tmp_path / "s.ark"), keys, X)
    assert same_bytes(tmp_path / "s.ark", "data/train/xvector_subset10.txt.ark")


def test_mean_vec_text_and_binary_double_vectors(in_golden, tmp_path):
    text = read_vector("exp/mean.vec")
    binary = read_vector("exp/mean_bin.vec")
    assert binary.dtype == np.float64 and text.shape == binary.shape == (64,)
    np.testing.assert_allclose(text, binary, rtol=1e-6)
    write_vector(tmp_path / "m.vec", binary, binary=False)
    assert same_bytes(tmp_path / "m.vec", "exp/mean.vec")
    write_vector(tmp_path / "mb.vec", binary)
    assert same_bytes(tmp_path / "mb.vec", "exp/mean_bin.vec")


def test_transform_matrix_binary_and_text(in_golden, tmp_path):
    matrix = read_matrix("exp/transform.mat")
    assert matrix.dtype == np.float32 and matrix.shape == (32, 65)
    text = read_matrix("exp/transform.txt.mat")
    np.testing.assert_allclose(text, matrix, rtol=1e-6, atol=1e-12)
    write_matrix(tmp_path / "t.mat", matrix)
    assert same_bytes(tmp_path / "t.mat", "exp/transform.mat")
    write_matrix(tmp_path / "t.txt", matrix, binary=False)
    assert same_bytes(tmp_path / "t.txt", "exp/transform.txt.mat")
    assert read_matrix("exp/transform_tcf0.1.txt.mat").shape == (32, 65)


@pytest.mark.parametrize("binary_name,text_name", [("exp/plda", "exp/plda.txt"),
                                                   ("exp/plda_adapt", "exp/plda_adapt.txt")])
def test_plda_binary_and_text_round_trip_byte_identically(in_golden, tmp_path, binary_name,
                                                          text_name):
    mean, transform, psi = read_plda(binary_name)
    assert mean.shape == (32,) and transform.shape == (32, 32) and psi.shape == (32,)
    assert (np.diff(psi) <= 0).all() and (psi >= 0).all()
    text = read_plda(text_name)
    for a, b in zip(text, (mean, transform, psi)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
    write_plda(tmp_path / "p", mean, transform, psi)
    assert same_bytes(tmp_path / "p", binary_name)
    write_plda(tmp_path / "p.txt", mean, transform, psi, binary=False)
    assert same_bytes(tmp_path / "p.txt", text_name)


@pytest.mark.parametrize("name", ["exp/plda_direct.txt", "exp/plda_smooth0.1.txt",
                                  "exp/plda_adapt_defaults.txt"])
def test_text_plda_models_read_and_rewrite_identically(in_golden, tmp_path, name):
    mean, transform, psi = read_plda(name)
    write_plda(tmp_path / "p.txt", mean, transform, psi, binary=False)
    assert same_bytes(tmp_path / "p.txt", name)


def test_num_utts_int32_table_round_trip(in_golden, tmp_path):
    num_utts = read_int32_table("ark:exp/enroll_num_utts.ark")
    spk2utt = read_token_vector_table("ark:data/enroll/spk2utt")
    assert num_utts == {spk: len(utts) for spk, utts in spk2utt.items()}
    write_int32_table("ark,t:%s" % (tmp_path / "n.ark"), list(num_utts), list(num_utts.values()))
    assert same_bytes(tmp_path / "n.ark", "exp/enroll_num_utts.ark")


@pytest.mark.parametrize("name", ["train", "adapt", "enroll"])
def test_utt2spk_and_spk2utt_agree(in_golden, name):
    utt2spk = read_token_table("ark:data/%s/utt2spk" % name)
    spk2utt = read_token_vector_table("ark:data/%s/spk2utt" % name)
    inverted = {}
    for utt, spk in utt2spk.items():
        inverted.setdefault(spk, []).append(utt)
    assert inverted == spk2utt
    keys, _ = read_vector_table("scp:data/%s/xvector.scp" % name)
    assert sorted(keys) == sorted(utt2spk)


def test_trials_file_reads_as_three_columns(in_golden):
    key1, key2, labels = read_trials("data/trials")
    assert len(key1) == len(key2) == len(labels) == 16000
    assert (labels == "target").sum() == 400 and (labels == "nontarget").sum() == 15600
    lines = open("data/trials").read().split("\n")
    assert " ".join([key1[123], key2[123], labels[123]]) == lines[123]


def test_two_column_trials_from_a_pipe_have_no_labels(in_golden):
    key1, key2, labels = read_trials("cut -d' ' -f1,2 data/trials |")
    assert labels is None and len(key1) == 16000 and key2[-1] == "ev040-tst10"


@pytest.mark.parametrize("name", ["plda_numutts", "plda_adapt_numutts", "plda_nonumutts",
                                  "plda_missing", "plda_numutts_simplelen"])
def test_scores_round_trip_byte_identically(in_golden, tmp_path, name):
    key1, key2, scores = read_scores("scores/" + name)
    assert scores.dtype == np.float64
    write_scores(tmp_path / "s", key1, key2, scores)
    assert same_bytes(tmp_path / "s", "scores/" + name)
