"""The rspecifier/wspecifier grammar and rx/wxfilename classes of util/kaldi-table.cc and
util/kaldi-io.cc, and the stream behaviours that hang off them."""

import subprocess
import sys

import numpy as np
import pytest

from pauc_backend.kaldi_io import (classify_rspecifier, classify_rxfilename,
                                   classify_wspecifier, classify_wxfilename, open_input,
                                   open_output, read_matrix, read_vector, write_matrix,
                                   write_vector_table)


@pytest.mark.parametrize("spec,kind,filename,flags", [
    ("ark:foo.ark", "ark", "foo.ark", {}),
    ("scp:foo.scp", "scp", "foo.scp", {}),
    ("ark,t:-", "ark", "-", {}),
    ("ark:", "ark", "", {}),
    ("ark,s,cs:foo.ark", "ark", "foo.ark", {"sorted": True, "called_sorted": True}),
    ("scp,p:x.scp", "scp", "x.scp", {"permissive": True}),
    ("ark,o,bg:x", "ark", "x", {"once": True, "background": True}),
    ("p,ark:x", "ark", "x", {"permissive": True}),
    ("ark s:x", "ark", "x", {"sorted": True}),
    ("ark:cmd a:b |", "ark", "cmd a:b |", {}),
])
def test_valid_rspecifiers(spec, kind, filename, flags):
    parsed = classify_rspecifier(spec)
    assert parsed.kind == kind and parsed.filename == filename
    for name, value in flags.items():
        assert getattr(parsed, name) == value


@pytest.mark.parametrize("spec,kind,ark,scp,binary", [
    ("ark:a.ark", "ark", "a.ark", None, True),
    ("ark,t:-", "ark", "-", None, False),
    ("scp:out.scp", "scp", None, "out.scp", True),
    ("ark,scp:a.ark,a.scp", "ark,scp", "a.ark", "a.scp", True),
    ("ark,scp,t:a.ark,a.scp", "ark,scp", "a.ark", "a.scp", False),
    ("t,ark,scp:a,b,c", "ark,scp", "a", "b,c", False),
    ("ark,f:| gzip -c > a.gz", "ark", "| gzip -c > a.gz", None, True),
])
def test_valid_wspecifiers(spec, kind, ark, scp, binary):
    parsed = classify_wspecifier(spec)
    assert (parsed.kind, parsed.ark, parsed.scp, parsed.binary) == (kind, ark, scp, binary)


@pytest.mark.parametrize("rx,kind,what", [
    ("-", "stdin", None), ("", "stdin", None), ("a.ark", "file", "a.ark"),
    ("a.ark:123", "offset", ("a.ark", 123)), ("gunzip -c a.gz |", "pipe", "gunzip -c a.gz "),
    ("file1", "file", "file1"), ("dir/x:y", "file", "dir/x:y"), ("./ark:x", "file", "./ark:x"),
])
def test_rxfilename_classes(rx, kind, what):
    assert classify_rxfilename(rx) == (kind, what)


@pytest.mark.parametrize("wx,kind,what", [
    ("-", "stdout", None), ("", "stdout", None), ("a.vec", "file", "a.vec"),
    ("| gzip -c > a.gz", "pipe", " gzip -c > a.gz"),
])
def test_wxfilename_classes(wx, kind, what):
    assert classify_wxfilename(wx) == (kind, what)


def test_offset_rxfilename_reads_one_object_inside_an_archive(golden):
    line = (golden / "exp/enroll_final.scp").read_text().splitlines()[3]
    key, target = line.split()
    path, offset = target.rsplit(":", 1)
    vector = read_vector("%s:%s" % (golden / path, offset))
    assert vector.dtype == np.float32 and vector.shape == (32,)


def test_matrix_range_suffix_selects_rows_and_columns(tmp_path):
    matrix = np.arange(20, dtype=np.float32).reshape(4, 5)
    write_matrix(tmp_path / "m", matrix)
    assert np.array_equal(read_matrix("%s[1:2]" % (tmp_path / "m")), matrix[1:3])
    assert np.array_equal(read_matrix("%s[1:2,0:1]" % (tmp_path / "m")), matrix[1:3, :2])
    assert np.array_equal(read_matrix("%s[:,3:]" % (tmp_path / "m")), matrix[:, 3:])


def test_open_output_to_stdout_and_open_input_from_stdin():
    code = ("import sys; sys.path.insert(0, '.'); from pauc_backend.kaldi_io import open_input, "
            "open_output\nwith open_input('-') as i, open_output('-') as o:\n"
            "    o.write(i.read()[::-1])")
    out = subprocess.run([sys.executable, "-c", code], input=b"abc", stdout=subprocess.PIPE,
                         check=True).stdout
    assert out == b"cba"


def test_output_pipe_receives_everything(tmp_path):
    with open_output("| cat > %s" % (tmp_path / "o")) as stream:
        stream.write(b"x" * 100000)
    assert (tmp_path / "o").read_bytes() == b"x" * 100000


def test_input_offset_stream_starts_at_the_offset(tmp_path):
    (tmp_path / "f").write_bytes(b"0123456789")
    with open_input("%s:4" % (tmp_path / "f")) as stream:
        assert stream.read() == b"456789"


def test_archive_path_in_scp_is_written_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    write_vector_table("ark,scp:sub/../sub/a.ark,sub/a.scp", ["k"], np.ones((1, 2)))
    assert (tmp_path / "sub/a.scp").read_text() == "k sub/../sub/a.ark:2\n"
