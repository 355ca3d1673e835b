"""BaseFloat tables (BasicHolder<float>: utt2dur, quality measures): Kaldi's text and binary
forms, and errors that name the line of a hand-made table (issue 29)."""

import struct

import numpy as np
import pytest

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_float_table, write_float_table


def test_text_table_is_kaldi_basic_type_output_and_reads_utt2dur(tmp_path):
    write_float_table("ark,t:" + str(tmp_path / "t"), ["a", "b", "c"], [3.52, 1e-7, 12345678])
    # WriteBasicType<float> in text: os << f << " " (6 significant digits), then '\n'
    assert (tmp_path / "t").read_bytes() == b"a 3.52 \nb 1e-07 \nc 1.23457e+07 \n"
    (tmp_path / "utt2dur").write_text("u1 3.52\nu2\t 10\n\nu3 0.5   \n")   # as Kaldi writes it
    assert read_float_table("ark:" + str(tmp_path / "utt2dur")) == {"u1": 3.52, "u2": 10.0,
                                                                    "u3": 0.5}


def test_binary_table_and_script_round_trip(tmp_path):
    values = np.float32([3.5, -2.25, 1e30])
    write_float_table("ark,scp:%s,%s" % (tmp_path / "b.ark", tmp_path / "b.scp"),
                      ["x", "y", "z"], values)
    data = (tmp_path / "b.ark").read_bytes()
    assert data.startswith(b"x \0B\x04" + struct.pack("<f", 3.5) + b"y ")
    for spec in ("ark:" + str(tmp_path / "b.ark"), "scp:" + str(tmp_path / "b.scp")):
        table = read_float_table(spec)
        assert list(table) == ["x", "y", "z"]
        np.testing.assert_array_equal(np.float32(list(table.values())), values)


@pytest.mark.parametrize("content, line, problem", [
    (b"a 1\nb 2\nc x\n", 3, "got x, not a number"),
    (b"a 1\nb\n", 2, "found the end of the line"),
    (b"a 1 2\n", 1, "expected one number, got more (2)"),
    (b"a 1\nb 1_0\n", 2, "got 1_0, not a number"),
])
def test_malformed_text_table_names_key_line_and_file(tmp_path, content, line, problem):
    (tmp_path / "bad").write_bytes(content)
    with pytest.raises(KaldiError) as err:
        read_float_table("ark:" + str(tmp_path / "bad"))
    message = str(err.value)
    assert "on line %d of %s" % (line, tmp_path / "bad") in message and problem in message
    assert "key '%s'" % content.splitlines()[line - 1].split()[0].decode() in message


def test_duplicate_key_is_an_error(tmp_path):
    (tmp_path / "dup").write_text("a 1\na 2\n")
    with pytest.raises(KaldiError, match="Duplicate key 'a'"):
        read_float_table("ark:" + str(tmp_path / "dup"))
