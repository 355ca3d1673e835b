"""Float-vector tables read in bounded chunks (kaldi_io.vector_stream) agree with the whole-table
reader: same keys, same bits, same errors, wherever the chunk and read boundaries fall."""

import io
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import (VectorChunkWriter, iter_vector_chunks, read_vector_table,
                                   write_vector_table)
from pauc_backend.kaldi_io.vector_stream import iter_archive_chunks


class Trickle(io.RawIOBase):
    """A stream without a descriptor that hands out at most ``step`` bytes a read."""

    def __init__(self, data, step):
        self.data, self.pos, self.step = data, 0, step

    def readable(self):
        return True

    def readinto(self, view):
        count = min(len(view), self.step, len(self.data) - self.pos)
        view[:count] = self.data[self.pos:self.pos + count]
        self.pos += count
        return count


def fv_record(key, row, sep=b" "):
    row = np.asarray(row, dtype="<f4")
    return key.encode() + sep + b"\0BFV \x04" + struct.pack("<i", row.size) + row.tobytes()


def dv_record(key, row):
    row = np.asarray(row, dtype="<f8")
    return key.encode() + b" \0BDV \x08" + struct.pack("<i", row.size) + row.tobytes()


def text_record(key, row):
    return ("%s  [ %s]\n" % (key, "".join("%.7g " % v for v in row))).encode()


def collect(chunks):
    keys, rows = [], []
    for chunk in chunks:
        assert chunk.X.ndim == 2 and len(chunk.keys) == chunk.X.shape[0]
        keys += chunk.keys
        rows += [np.array(row, dtype=np.float32) for row in chunk.X]
    return keys, rows


def whole(path):
    """The whole-table reader's answer: (keys, rows) or the error message."""
    try:
        keys, X = read_vector_table("ark:%s" % path, ragged=True)
    except KaldiError as err:
        return str(err)
    return keys, [np.asarray(row, dtype=np.float32) for row in X]


def chunked(data, name, step=None, chunk_bytes=64):
    stream = Trickle(data, step or len(data) or 1)
    try:
        return collect(iter_archive_chunks(stream, name, chunk_bytes=chunk_bytes))
    except KaldiError as err:
        return str(err)


def same(got, expected):
    if isinstance(expected, str) or isinstance(got, str):
        assert got == expected
        return
    assert got[0] == expected[0]
    assert len(got[1]) == len(expected[1])
    for a, b in zip(got[1], expected[1]):
        assert a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


records = st.lists(
    st.tuples(st.text(st.sampled_from("abcXYZ019-_"), min_size=1, max_size=6),
              st.integers(0, 4),
              st.sampled_from(["fv", "fv", "fv", "fv_tab", "dv", "text"])),
    min_size=0, max_size=12)


@settings(max_examples=60, deadline=None)
@given(records, st.data())
def test_chunk_boundaries_anywhere_give_the_whole_reader_s_answer(tmp_path_factory, recs, data):
    rng = np.random.default_rng(len(recs))
    parts = []
    for key, dim, kind in recs:
        row = rng.standard_normal(dim).astype(np.float32)
        if kind.startswith("fv"):
            parts.append(fv_record(key, row, b"\t" if kind == "fv_tab" else b" "))
        else:
            parts.append((dv_record if kind == "dv" else text_record)(key, row))
    blob = b"".join(parts)
    if data.draw(st.booleans()) and blob:  # cut it: a truncated archive
        blob = blob[:data.draw(st.integers(0, len(blob) - 1))]
    path = tmp_path_factory.mktemp("ark") / "a.ark"
    path.write_bytes(blob)
    expected = whole(path)
    for step in {1, 3, 17, len(blob) + 1}:
        same(chunked(blob, str(path), step), expected)
    # every buffer size from the smallest up to the whole archive: a refill at every byte
    for chunk_bytes in range(64, len(blob) + 65, max(1, len(blob) // 40)):
        same(chunked(blob, str(path), None, chunk_bytes), expected)


@pytest.mark.parametrize("key_lengths", [[5], [5, 6], [3, 3, 3, 7]])
def test_long_fixed_stride_runs_at_every_cut(tmp_path, key_lengths):
    """Runs of one key length (the zero-copy path) cut by the buffer at every byte."""
    rng = np.random.default_rng(1)
    keys = ["k" * (key_lengths[i % len(key_lengths)] - 1) + chr(65 + i % 26) for i in range(300)]
    X = rng.standard_normal((300, 3)).astype(np.float32)
    blob = b"".join(fv_record(k, x) for k, x in zip(keys, X))
    path = tmp_path / "a.ark"
    path.write_bytes(blob)
    expected = whole(path)
    for chunk_bytes in range(64, 64 + 3 * len(fv_record(keys[0], X[0])) + 7):
        same(chunked(blob, str(path), None, chunk_bytes), expected)
    same(chunked(blob, str(path), 1000, 5000), expected)


def test_ragged_dims_are_the_same_error_as_the_whole_reader(tmp_path):
    path = tmp_path / "a.ark"
    path.write_bytes(b"".join(fv_record("u%d" % i, np.ones(4 if i < 200 else 5))
                              for i in range(300)))
    with pytest.raises(KaldiError) as whole_err:
        read_vector_table("ark:%s" % path)
    with pytest.raises(KaldiError) as chunk_err:
        collect(iter_vector_chunks("ark:%s" % path, chunk_bytes=256))
    assert str(chunk_err.value) == str(whole_err.value)
    assert "'u0' has dim 4 but 'u200' has dim 5" in str(chunk_err.value)
    keys, rows = collect(iter_vector_chunks("ark:%s" % path, ragged=True, chunk_bytes=256))
    assert len(keys) == 300 and rows[199].size == 4 and rows[200].size == 5


def test_scripts_stream_in_script_order(tmp_path):
    rng = np.random.default_rng(3)
    keys = ["spk%d-utt%d" % (i % 7, i) for i in range(5000)]
    X = rng.standard_normal((5000, 6)).astype(np.float32)
    write_vector_table("ark,scp:%s,%s" % (tmp_path / "a.ark", tmp_path / "a.scp"), keys, X)
    lines = (tmp_path / "a.scp").read_text().splitlines()
    order = rng.permutation(len(lines))
    (tmp_path / "b.scp").write_text("".join(lines[i] + "\n" for i in order))
    for rs in ("scp:%s" % (tmp_path / "a.scp"), "scp:%s" % (tmp_path / "b.scp")):
        expected = read_vector_table(rs)
        got = collect(iter_vector_chunks(rs))
        assert got[0] == expected[0]
        assert np.array_equal(np.array(got[1]), expected[1])


@pytest.mark.parametrize("wspec", ["ark", "ark,t", "ark,scp"])
def test_chunk_writer_writes_what_write_vector_table_writes(tmp_path, wspec):
    rng = np.random.default_rng(4)
    keys = ["u%05d" % i for i in range(3000)] + ["longer-key-%d" % i for i in range(50)]
    X = rng.standard_normal((len(keys), 5)).astype(np.float32)
    write_vector_table("ark:%s" % (tmp_path / "in.ark"), keys, X)

    def target(name):
        if wspec == "ark,scp":
            return "ark,scp:%s,%s" % (tmp_path / (name + ".ark"), tmp_path / (name + ".scp"))
        return "%s:%s" % (wspec, tmp_path / (name + ".ark"))
    write_vector_table(target("whole"), keys, X * np.float32(2))
    with VectorChunkWriter(target("chunks")) as writer:
        for chunk in iter_vector_chunks("ark:%s" % (tmp_path / "in.ark"), chunk_bytes=4096):
            writer.write(chunk, chunk.X * np.float32(2))
    assert (tmp_path / "chunks.ark").read_bytes() == (tmp_path / "whole.ark").read_bytes()
    if wspec == "ark,scp":
        assert (tmp_path / "chunks.scp").read_text() == \
            (tmp_path / "whole.scp").read_text().replace("whole.ark", "chunks.ark")


def test_empty_input_leaves_the_output_untouched(tmp_path):
    (tmp_path / "empty.ark").write_bytes(b"")
    (tmp_path / "out.ark").write_bytes(b"old")
    with VectorChunkWriter("ark:%s" % (tmp_path / "out.ark")) as writer:
        for chunk in iter_vector_chunks("ark:%s" % (tmp_path / "empty.ark")):
            writer.write(chunk)
    assert writer.num_written == 0 and (tmp_path / "out.ark").read_bytes() == b"old"


def test_an_archive_at_a_byte_offset_reports_file_offsets(tmp_path):
    good = fv_record("a", [1.0, 2.0])
    path = tmp_path / "a.ark"
    path.write_bytes(b"junk" + good + b"b \0BFV \x04" + struct.pack("<i", 2) + b"\0\0")
    rs = "ark:%s:4" % path
    with pytest.raises(KaldiError) as whole_err:
        read_vector_table(rs)
    with pytest.raises(KaldiError) as chunk_err:
        collect(iter_vector_chunks(rs))
    assert str(chunk_err.value) == str(whole_err.value)
