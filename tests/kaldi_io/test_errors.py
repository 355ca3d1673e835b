"""Bad input is a KaldiError naming the file (key, byte offset or line) and the problem; no
partial data is ever returned silently and no half-written output is left behind."""

import os
import re

import numpy as np
import pytest

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import (SequentialTableReader, TableWriter, open_input, open_output,
                                   read_all, read_int32_table, read_matrix, read_plda,
                                   read_scores, read_token_table, read_trials, read_vector,
                                   read_vector_table, write_plda, write_vector,
                                   write_vector_table)
import kaldi_reference as reference

KEYS = ["a", "bbbb", "cc"]
VALUES = np.arange(9, dtype=np.float32).reshape(3, 3)


def archive():
    return b"".join(reference.record(k, v) for k, v in zip(KEYS, VALUES))


def record_ends():
    ends, pos = [], 0
    for key, value in zip(KEYS, VALUES):
        pos += len(reference.record(key, value))
        ends.append(pos)
    return ends


@pytest.mark.parametrize("via", ["file", "pipe"])
def test_truncated_ark_is_an_error_at_every_cut_point(tmp_path, via):
    raw = archive()
    ends = record_ends()
    path = tmp_path / "cut.ark"
    for cut in range(1, len(raw)):
        path.write_bytes(raw[:cut])
        rspec = "ark:%s" % path if via == "file" else "ark:cat %s |" % path
        if cut in ends:
            keys, X = read_vector_table(rspec)
            assert keys == KEYS[:ends.index(cut) + 1]
            continue
        with pytest.raises(KaldiError) as info:
            read_vector_table(rspec)
        message = str(info.value)
        assert "cut.ark" in message and "byte" in message, message
        index = sum(cut > end for end in ends)
        record_start = ends[index - 1] if index else 0
        if cut >= record_start + len(KEYS[index]) + 1:
            assert "key '%s'" % KEYS[index] in message, message
        offset = int(re.search(r"at byte (\d+)", message).group(1))
        assert record_start <= offset <= cut, (cut, message)


def test_truncated_ark_through_the_generic_reader_is_an_error(tmp_path):
    (tmp_path / "cut.ark").write_bytes(archive()[:-5])
    with pytest.raises(KaldiError, match=r"truncated \(expected 12 bytes of data, got 7\) "
                                         r"for key 'cc'"):
        list(SequentialTableReader("ark:%s" % (tmp_path / "cut.ark")))


def test_truncated_scp_target_names_the_key(tmp_path):
    write_vector_table("ark,scp:%s,%s" % (tmp_path / "a.ark", tmp_path / "a.scp"), KEYS, VALUES)
    raw = (tmp_path / "a.ark").read_bytes()
    (tmp_path / "a.ark").write_bytes(raw[:-2])
    with pytest.raises(KaldiError, match=r"key 'cc'.*truncated"):
        read_vector_table("scp:%s" % (tmp_path / "a.scp"))


def test_permissive_archive_stops_at_the_first_error_with_a_warning(tmp_path, capfd):
    (tmp_path / "cut.ark").write_bytes(archive()[:-5])
    keys, X = read_vector_table("ark,p:%s" % (tmp_path / "cut.ark"))
    assert keys == KEYS[:2] and np.array_equal(X, VALUES[:2])
    assert "WARNING" in capfd.readouterr().err


def test_permissive_script_skips_unreadable_entries(tmp_path, capfd):
    write_vector_table("ark,scp:%s,%s" % (tmp_path / "a.ark", tmp_path / "a.scp"), KEYS, VALUES)
    with open(tmp_path / "a.scp", "a") as scp:
        scp.write("gone %s:0\n" % (tmp_path / "gone.ark"))
    keys, X = read_vector_table("scp,p:%s" % (tmp_path / "a.scp"))
    assert keys == KEYS and np.array_equal(X, VALUES)
    assert "gone" in capfd.readouterr().err
    with pytest.raises(KaldiError, match="gone"):
        read_vector_table("scp:%s" % (tmp_path / "a.scp"))


@pytest.mark.parametrize("bad,problem", [
    (b"k \0BXV \x04\x01\x00\x00\x00\x00\x00\x80?", "expected token FV or DV, got XV"),
    (b"k \0BFV \x08\x01\x00\x00\x00\x00\x00\x80?", "expected size byte 4"),
    (b"k \0XFV \x04\x01\x00\x00\x00\x00\x00\x80?", r"\\0 not followed by B"),
    (b"k \0BFV \x04\xff\xff\xff\xff", "negative size"),
    (b"k\0BFV \x04\x01\x00\x00\x00\x00\x00\x80?", "contains a control character"),
    (b"k\x01 \0BFV \x04\x01\x00\x00\x00\x00\x00\x80?", "contains a control character"),
    (b"k  [ 1 2 ]\nj  [ 1 ]\n", "different dimensions: 'k' has dim 2 but 'j' has dim 1"),
])
def test_corrupt_records_are_errors(tmp_path, bad, problem):
    (tmp_path / "bad.ark").write_bytes(reference.record("ok", [1.0]) * 0 + bad)
    for rspec in ("ark:%s" % (tmp_path / "bad.ark"), "ark:cat %s |" % (tmp_path / "bad.ark")):
        with pytest.raises(KaldiError, match=problem):
            read_vector_table(rspec)


def test_non_utf8_key_is_an_error_naming_the_byte_offset(tmp_path):
    raw = reference.record("good", [1.0]) + b"b\xffd" + reference.record("", [2.0])
    (tmp_path / "k.ark").write_bytes(raw)
    offset = len(reference.record("good", [1.0])) + 1
    for rspec in ("ark:%s" % (tmp_path / "k.ark"), "ark:cat %s |" % (tmp_path / "k.ark")):
        with pytest.raises(KaldiError, match=r"not valid UTF-8\) at byte %d of" % offset):
            read_vector_table(rspec)
    (tmp_path / "u2s").write_bytes(b"utt1 spk\xe9\n")
    with pytest.raises(KaldiError, match="not valid UTF-8"):
        read_token_table("ark:%s" % (tmp_path / "u2s"))


@pytest.mark.parametrize("rspec,problem", [
    ("ark:/no/such/file.ark", r"Failed to open '/no/such/file.ark' for reading: No such file"),
    ("scp:/no/such/file.scp", "/no/such/file.scp"),
    ("ark:false |", r"Input pipe 'false \|' failed \(exit status 1\)"),
    ("ark:exit 3 |", r"exit status 3"),
])
def test_missing_inputs_and_failing_pipes(rspec, problem):
    with pytest.raises(KaldiError, match=problem):
        read_vector_table(rspec)
    with pytest.raises(KaldiError, match=problem):
        list(SequentialTableReader(rspec))


def test_pipe_that_writes_good_data_then_fails_returns_nothing(tmp_path):
    write_vector_table("ark:%s" % (tmp_path / "a.ark"), KEYS, VALUES)
    rspec = "ark:cat %s; exit 1 |" % (tmp_path / "a.ark")
    with pytest.raises(KaldiError, match="exit status 1"):
        read_vector_table(rspec)
    with pytest.raises(KaldiError, match="exit status 1"):
        list(SequentialTableReader(rspec))
    with pytest.raises(KaldiError, match="exit status 1"):
        read_vector("cat %s; exit 1 |" % (tmp_path / "a.ark"))


def test_open_input_checks_the_exit_status_of_a_pipe():
    with pytest.raises(KaldiError, match="exit status 2"):
        with open_input("echo hi; exit 2 |") as stream:
            assert stream.read() == b"hi\n"
    with open_input("printf 'a:b' |") as stream:
        assert stream.read() == b"a:b"


@pytest.mark.parametrize("text,problem", [
    (b"[1 2]", 'expected "\\[" but got \\[1'),
    (b" [ 1 2", "end of input before"),
    (b" [ 1\n 2 ]\n", "newline found"),
    (b" [ 1 abc ]\n", "expecting numeric data, got abc"),
    (b" [ +1 ]\n", "expecting numeric data, got \\+1"),
    (b" [ 1.5x ]\n", "bad number 1.5x"),
    (b"", "end of input"),
])
def test_bad_text_vectors_are_rejected_like_kaldi(tmp_path, text, problem):
    (tmp_path / "v").write_bytes(text)
    with pytest.raises(KaldiError, match=problem):
        read_vector(tmp_path / "v")


def test_text_vectors_kaldi_accepts(tmp_path, capfd):
    cases = {b" [ 0 1e-05 ]\n": [0, 1e-05], b"[ ]": [], b"[]": [], b"\n [ -3\t4 ]\r\n": [-3, 4]}
    for text, expected in cases.items():
        (tmp_path / "v").write_bytes(text)
        assert read_vector(tmp_path / "v").tolist() == expected
    (tmp_path / "v").write_bytes(b" [ inf NaN -inf Infinity 2 ]\n")
    value = read_vector(tmp_path / "v")
    assert np.isposinf(value[0]) and np.isnan(value[1]) and np.isneginf(value[2])
    assert np.isposinf(value[3]) and value[4] == 2
    assert "WARNING" in capfd.readouterr().err


def test_text_matrix_rows_must_have_equal_length(tmp_path):
    (tmp_path / "m").write_bytes(b" [\n  1 2 \n  3 ]\n")
    with pytest.raises(KaldiError, match="inconsistent number of columns"):
        read_matrix(tmp_path / "m")


def test_plda_needs_whitespace_after_its_end_token(golden, tmp_path):
    raw = (golden / "exp/plda.txt").read_bytes()
    assert raw.endswith(b"</Plda> ")
    (tmp_path / "p").write_bytes(raw[:-1])
    with pytest.raises(KaldiError, match="expected whitespace after it"):
        read_plda(tmp_path / "p")
    (tmp_path / "p").write_bytes(b"\0B" + (golden / "exp/plda").read_bytes()[2:-1])
    with pytest.raises(KaldiError, match="</Plda>"):
        read_plda(tmp_path / "p")


def test_plda_with_wrong_token_or_shapes_is_an_error(golden, tmp_path):
    (tmp_path / "p").write_bytes(b"<Lda> [ 1 ]\n")
    with pytest.raises(KaldiError, match="Expected token <Plda>, got <Lda>"):
        read_plda(tmp_path / "p")
    with pytest.raises(KaldiError, match="not consistent"):
        write_plda(tmp_path / "q", np.zeros(2), np.eye(3), np.ones(2))
    assert not (tmp_path / "q").exists()


def test_reading_a_matrix_as_a_vector_is_an_error(golden):
    with pytest.raises(KaldiError, match="expected token FV or DV, got FM"):
        read_vector(golden / "exp/transform.mat")


@pytest.mark.parametrize("content,problem", [
    (b"k 5.5\n", "expected newline"),
    (b"k\n5\n", "found newline but expected a number"),
    (b"k five\n", "Failed to read int32: got five"),
    (b"k 1\nk 2\n", "Duplicate key 'k'"),
    (b"k 99999999999\n", "does not fit in int32"),
])
def test_bad_int32_tables(tmp_path, content, problem):
    (tmp_path / "n.ark").write_bytes(content)
    with pytest.raises(KaldiError, match=problem):
        read_int32_table("ark:%s" % (tmp_path / "n.ark"))


def test_bad_script_line_names_its_number(tmp_path):
    (tmp_path / "x.scp").write_text("a a.ark:1\nlonely\n")
    with pytest.raises(KaldiError, match="Invalid line 2 in script file"):
        read_vector_table("scp:%s" % (tmp_path / "x.scp"))


@pytest.mark.parametrize("content,problem", [
    (b"a b target\nc d e f\n", "Bad line 2 .*expected 3 fields.*got 4"),
    (b"a b\nc d target\n", "Bad line 2 .*expected 2 fields.*got 3"),
    (b"a b\n\nc d\n", "Bad line 2 .*got 0"),
    (b"a\n", "Bad line 1 .*expected 2 or 3 fields.*got 1"),
    (b"a b\nc \xff\n", "Line 2 .* not valid UTF-8"),
])
def test_bad_trials_lines_name_the_file_and_line(tmp_path, content, problem):
    (tmp_path / "trials").write_bytes(content)
    with pytest.raises(KaldiError, match=problem):
        read_trials(tmp_path / "trials")


def test_bad_scores_name_the_line(tmp_path):
    (tmp_path / "s").write_bytes(b"a b 1.5\nc d x1\n")
    with pytest.raises(KaldiError, match="Bad score 'x1' on line 2"):
        read_scores(tmp_path / "s")
    (tmp_path / "s").write_bytes(b"a b\n")
    with pytest.raises(KaldiError, match="expected 3 fields"):
        read_scores(tmp_path / "s")


def test_failed_writes_leave_no_file_and_keep_the_old_one(tmp_path):
    target = tmp_path / "out.ark"
    target.write_bytes(b"old")
    with pytest.raises(KaldiError, match="Invalid key 'has space'"):
        write_vector_table("ark,scp:%s,%s" % (target, tmp_path / "o.scp"), ["ok", "has space"],
                           np.zeros((2, 1)))
    with pytest.raises(RuntimeError):
        with TableWriter("ark,scp:%s,%s" % (target, tmp_path / "o.scp")) as writer:
            writer.write("k", np.ones(2, np.float32))
            raise RuntimeError("interrupted")
    with pytest.raises(RuntimeError):
        with open_output(target) as stream:
            stream.write(b"partial")
            raise RuntimeError("interrupted")
    assert target.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["out.ark"]


def test_written_files_get_normal_permissions(tmp_path):
    write_vector(tmp_path / "v", np.ones(1))
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(tmp_path / "v").st_mode & 0o777 == 0o666 & ~umask


def test_writing_to_special_files_does_not_replace_them(tmp_path):
    write_vector("/dev/null", np.ones(3))
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


@pytest.mark.parametrize("wx,problem", [
    ("| exit 4", "exit status 4"),
    ("/no/such/dir/x.vec", "Failed to open '/no/such/dir/x.vec' for writing"),
    ("x.vec:12", "byte offset cannot be written"),
    ("ark:x.vec", "wspecifier was given where a filename is expected"),
    ("cat |", "input pipe"),
    (" x", "leading or trailing whitespace"),
])
def test_bad_or_failing_outputs(wx, problem):
    with pytest.raises(KaldiError, match=problem):
        write_vector(wx, np.ones(3))


@pytest.mark.parametrize("rx,problem", [
    ("| cat", "output pipe"), ("ark:x", "rspecifier was given"), ("x |y", "wrong place"),
    ("x ", "whitespace")])
def test_bad_rxfilenames(rx, problem):
    with pytest.raises(KaldiError, match=problem):
        read_all(rx)


@pytest.mark.parametrize("spec", ["foo.ark", "scp,ark:a", "ark,ark:a", "ark:a ", "ark,:a",
                                  "ark,scp:a", "ark,xyz:a", "t:a"])
def test_invalid_wspecifiers(spec):
    with pytest.raises(KaldiError, match="Invalid wspecifier"):
        write_vector_table(spec, ["k"], np.ones((1, 1)))


@pytest.mark.parametrize("spec", ["foo.ark", "ark,scp:a", "ark,f:a", "scp,scp:a", "ark:a\t"])
def test_invalid_rspecifiers(spec):
    with pytest.raises(KaldiError, match="Invalid rspecifier"):
        read_vector_table(spec)
