"""Table readers and writers: fast paths agree with the record-by-record parser and with an
independent encoder; round trips over random keys, dims and formats; random access; pipes."""

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import (RandomAccessTableReader, SequentialTableReader, TableWriter,
                                   read_vector,
                                   read_int32_table, read_token_table, read_token_vector_table,
                                   read_vector_table, streams, write_int32_table,
                                   write_token_table, write_token_vector_table,
                                   write_vector_table)
import kaldi_reference as reference

KEY_CHARS = st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"),
                          blacklist_characters="\x85\xa0\u1680\u2000\u2028\u2029\u202f\u205f"
                                               "\u3000\x1c\x1d\x1e\x1f")
KEYS = st.text(KEY_CHARS, min_size=1, max_size=12).filter(lambda k: not any(c.isspace()
                                                                                for c in k))
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@st.composite
def tables(draw, kinds=("fv",), min_size=0):
    keys = draw(st.lists(KEYS, min_size=min_size, max_size=12, unique=True))
    dim = draw(st.integers(0, 9))
    values = np.array(draw(st.lists(
        st.floats(-1e6, 1e6, width=32, allow_subnormal=False), min_size=len(keys) * dim,
        max_size=len(keys) * dim)), dtype=np.float32).reshape(len(keys), dim)
    formats = [draw(st.sampled_from(kinds)) for _ in keys]
    seps = [draw(st.sampled_from([b"", b"", b"\n", b" \n "])) for _ in keys]
    return keys, values, formats, seps


def encode(keys, values, formats, seps):
    return b"".join(sep + reference.record(k, v, f)
                    for k, v, f, sep in zip(keys, values, formats, seps))


def expected_values(values, formats):
    out = values.copy()
    for i, kind in enumerate(formats):
        if kind == "text":  # %.9g round-trips float32 exactly
            out[i] = np.array([float("%.9g" % v) for v in values[i].tolist()], dtype=np.float32)
    return out


@pytest.fixture
def small_chunks(monkeypatch):
    """Make the streaming reader cross chunk boundaries inside records."""
    monkeypatch.setattr(streams, "_CHUNK", 37)


@SETTINGS
@given(tables(kinds=("fv",)))
def test_fast_path_on_binary_float_archives_matches_the_reference(tmp_path, table):
    keys, values, formats, seps = table
    path = tmp_path / "x.ark"
    path.write_bytes(encode(keys, values, formats, seps))
    got_keys, X = read_vector_table("ark:%s" % path)
    assert got_keys == keys
    assert X.dtype == np.float32 and np.array_equal(X.reshape(values.shape), values)


@SETTINGS
@given(tables(kinds=("fv", "dv", "text"), min_size=1))
def test_mixed_binary_double_and_text_records_read_like_kaldi(tmp_path, table):
    keys, values, formats, seps = table
    path = tmp_path / "x.ark"
    path.write_bytes(encode(keys, values, formats, seps))
    got_keys, X = read_vector_table("ark:%s" % path)
    assert got_keys == keys and np.array_equal(X, expected_values(values, formats))
    generic = list(SequentialTableReader("ark:%s" % path))
    assert [k for k, _ in generic] == keys
    assert all(np.array_equal(v, X[i]) for i, (_, v) in enumerate(generic))


@SETTINGS
@given(tables(kinds=("fv", "fv", "dv")))
def test_stream_reader_across_small_chunks_matches_file_reader(tmp_path, small_chunks, table):
    keys, values, formats, seps = table
    path = tmp_path / "x.ark"
    path.write_bytes(encode(keys, values, formats, seps))
    got_keys, X = read_vector_table("ark:cat %s |" % path)
    assert got_keys == keys and np.array_equal(X.reshape(values.shape), values)


@SETTINGS
@given(tables(), st.booleans())
def test_write_then_read_round_trips_binary_and_text(tmp_path, table, binary):
    keys, values, _, _ = table
    opts = "ark,scp" if binary else "ark,scp,t"
    ark, scp = tmp_path / "o.ark", tmp_path / "o.scp"
    write_vector_table("%s:%s,%s" % (opts, ark, scp), keys, values)
    for rspec in ("ark:%s" % ark, "scp:%s" % scp):
        got_keys, X = read_vector_table(rspec)
        assert got_keys == keys
        if binary:
            assert np.array_equal(X.reshape(values.shape), values)
        else:
            np.testing.assert_allclose(X.reshape(values.shape), values, rtol=1e-6)
    # the ark is exactly what the independent encoder makes
    if binary:
        assert ark.read_bytes() == b"".join(reference.record(k, v) for k, v in zip(keys, values))


@SETTINGS
@given(tables(min_size=1))
def test_scp_offsets_point_at_each_object(tmp_path, table):
    keys, values, _, _ = table
    ark, scp = tmp_path / "o.ark", tmp_path / "o.scp"
    write_vector_table("ark,scp:%s,%s" % (ark, scp), keys, values)
    raw = ark.read_bytes()
    assert len(scp.read_text().splitlines()) == len(keys)
    for line, key, row in zip(scp.read_text().splitlines(), keys, values):
        got_key, target = line.split(" ", 1)
        path, offset = target.rsplit(":", 1)
        assert got_key == key and path == str(ark)
        assert raw[int(offset):int(offset) + len(reference.fv(row))] == reference.fv(row)


def test_variable_key_lengths_and_long_runs_take_every_path(tmp_path):
    rng = np.random.default_rng(3)
    keys = ["u%d" % i for i in range(3000)]  # lengths 2..5, runs of equal length
    keys[1500] = "a-much-longer-key"
    values = rng.standard_normal((len(keys), 7)).astype(np.float32)
    write_vector_table("ark:%s" % (tmp_path / "v.ark"), keys, values)
    for rspec in ("ark:%s" % (tmp_path / "v.ark"), "ark:cat %s |" % (tmp_path / "v.ark")):
        got_keys, X = read_vector_table(rspec)
        assert got_keys == keys and np.array_equal(X, values)


def test_archives_read_from_stdin(tmp_path):
    keys = ["a", "b"]
    write_vector_table("ark:%s" % (tmp_path / "v.ark"), keys, np.eye(2, dtype=np.float32))
    code = ("import sys; sys.path.insert(0, %r); from pauc_backend.kaldi_io import "
            "read_vector_table; k, X = read_vector_table('ark:-'); print(k, X.tolist())"
            % os.getcwd())
    out = subprocess.run([sys.executable, "-c", code], stdin=open(tmp_path / "v.ark", "rb"),
                         stdout=subprocess.PIPE, check=True).stdout
    assert out == b"['a', 'b'] [[1.0, 0.0], [0.0, 1.0]]\n"


def test_writer_to_stdout_and_output_pipe(tmp_path):
    code = ("import sys, numpy as np; sys.path.insert(0, %r); from pauc_backend.kaldi_io import "
            "write_vector_table; write_vector_table(sys.argv[1], ['k'], np.ones((1, 2), "
            "np.float32))" % os.getcwd())
    out = subprocess.run([sys.executable, "-c", code, "ark,t:-"], stdout=subprocess.PIPE,
                         check=True).stdout
    assert out == b"k  [ 1 1 ]\n"
    subprocess.run([sys.executable, "-c", code, "ark:| cat > %s" % (tmp_path / "p.ark")],
                   check=True)
    assert (tmp_path / "p.ark").read_bytes() == reference.record("k", [1, 1])


def test_double_vector_table_converts_to_float(tmp_path):
    (tmp_path / "d.ark").write_bytes(reference.record("x", [0.1, 2.5], "dv"))
    keys, X = read_vector_table("ark:%s" % (tmp_path / "d.ark"))
    assert X.dtype == np.float32 and X.tolist() == [[np.float32(0.1), 2.5]]
    ((key, value),) = SequentialTableReader("ark:%s" % (tmp_path / "d.ark"), "double_vector")
    assert value.dtype == np.float64 and value.tolist() == [0.1, 2.5]


def test_empty_archive_gives_no_rows(tmp_path):
    (tmp_path / "e.ark").write_bytes(b"")
    keys, X = read_vector_table("ark:%s" % (tmp_path / "e.ark"))
    assert keys == [] and X.shape[0] == 0


def test_random_access_by_key_from_ark_and_scp(tmp_path):
    keys = ["b", "a", "c"]
    values = np.arange(6, dtype=np.float32).reshape(3, 2)
    write_vector_table("ark,scp:%s,%s" % (tmp_path / "r.ark", tmp_path / "r.scp"), keys, values)
    for rspec in ("ark:%s" % (tmp_path / "r.ark"), "scp:%s" % (tmp_path / "r.scp"),
                  "ark,s,cs:%s" % (tmp_path / "r.ark")):
        with RandomAccessTableReader(rspec) as reader:
            assert "a" in reader and "zz" not in reader
            assert reader["c"].tolist() == [4, 5] and reader["b"].tolist() == [0, 1]
            assert reader.get("zz") is None
            with pytest.raises(KaldiError, match="Key 'zz' not present"):
                reader["zz"]
            assert sorted(reader.keys()) == ["a", "b", "c"]


def test_random_access_permissive_script_treats_broken_entries_as_absent(tmp_path):
    write_vector_table("ark,scp:%s,%s" % (tmp_path / "r.ark", tmp_path / "r.scp"), ["a"],
                       np.ones((1, 3), np.float32))
    with open(tmp_path / "r.scp", "a") as scp:
        scp.write("b %s:0\n" % (tmp_path / "missing.ark"))
    reader = RandomAccessTableReader("scp,p:%s" % (tmp_path / "r.scp"))
    assert "a" in reader and "b" not in reader
    strict = RandomAccessTableReader("scp:%s" % (tmp_path / "r.scp"))
    assert "b" in strict  # Kaldi: HasKey on a script does not open the file unless permissive
    with pytest.raises(KaldiError, match="missing.ark"):
        strict["b"]


def test_duplicate_keys_in_random_access_archive_are_an_error(tmp_path):
    (tmp_path / "d.ark").write_bytes(reference.record("a", [1]) + reference.record("a", [2]))
    with pytest.raises(KaldiError, match="Duplicate key 'a'"):
        RandomAccessTableReader("ark:%s" % (tmp_path / "d.ark"))["a"]


def test_matrix_tables_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    mats = {"m1": rng.standard_normal((2, 3)).astype(np.float32),
            "m2": np.zeros((0, 0), np.float32)}
    for opts in ("ark", "ark,t"):
        with TableWriter("%s:%s" % (opts, tmp_path / "m.ark"), "matrix") as writer:
            for key, value in mats.items():
                writer.write(key, value)
        got = dict(SequentialTableReader("ark:%s" % (tmp_path / "m.ark"), "matrix"))
        assert list(got) == list(mats)
        for key in mats:
            np.testing.assert_allclose(got[key].reshape(mats[key].shape), mats[key], rtol=1e-6)


@SETTINGS
@given(st.dictionaries(KEYS, st.integers(-2 ** 31, 2 ** 31 - 1), max_size=8), st.booleans())
def test_int32_tables_round_trip(tmp_path, table, binary):
    wspec = "ark%s:%s" % ("" if binary else ",t", tmp_path / "n.ark")
    write_int32_table(wspec, list(table), list(table.values()))
    assert read_int32_table("ark:%s" % (tmp_path / "n.ark")) == table
    if not binary:
        assert (tmp_path / "n.ark").read_text() == "".join("%s %d \n" % kv for kv in
                                                            table.items())


@SETTINGS
@given(st.dictionaries(KEYS, st.lists(KEYS, max_size=4), max_size=6))
def test_token_and_token_vector_tables_round_trip(tmp_path, table):
    write_token_vector_table("ark:%s" % (tmp_path / "s2u"), table)
    assert read_token_vector_table("ark:%s" % (tmp_path / "s2u")) == table
    flat = {k: v[0] for k, v in table.items() if v}
    write_token_table("ark:%s" % (tmp_path / "u2s"), flat)
    assert read_token_table("ark:%s" % (tmp_path / "u2s")) == flat
    assert (tmp_path / "u2s").read_text() == "".join("%s %s\n" % kv for kv in flat.items())


def test_script_wspecifier_writes_each_object_to_its_file(tmp_path):
    (tmp_path / "out.scp").write_text("a %s\nb %s\n" % (tmp_path / "a.vec", tmp_path / "b.vec"))
    with TableWriter("scp:%s" % (tmp_path / "out.scp")) as writer:
        writer.write("a", np.ones(2, np.float32))
        writer.write("b", np.zeros(1, np.float32))
    assert (tmp_path / "a.vec").read_bytes() == reference.fv([1, 1])
    with pytest.raises(KaldiError, match="Key 'c' is not in the script file"):
        with TableWriter("scp:%s" % (tmp_path / "out.scp")) as writer:
            writer.write("c", np.ones(2, np.float32))
    with TableWriter("scp,p:%s" % (tmp_path / "out.scp")) as writer:
        writer.write("c", np.ones(2, np.float32))  # permissive: skipped
    assert not (tmp_path / "c").exists()


def test_flush_and_other_options_are_accepted(tmp_path):
    for wopts in ("ark,f", "ark,nf", "ark,b", "b,ark", "ark,t,f"):
        write_vector_table("%s:%s" % (wopts, tmp_path / "o.ark"), ["k"], np.ones((1, 1)))
        for ropts in ("ark,o", "ark,s,cs", "ark,bg", "ark,p", "ark,no,ns,ncs,np", "ark,b,t"):
            keys, X = read_vector_table("%s:%s" % (ropts, tmp_path / "o.ark"))
            assert keys == ["k"] and X.tolist() == [[1.0]]


def test_scripts_mixing_archives_files_and_pipes(tmp_path):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((4, 3)).astype(np.float32)
    write_vector_table("ark,scp:%s,%s" % (tmp_path / "a.ark", tmp_path / "a.scp"), ["a", "b"],
                       X[:2])
    write_vector_table("ark,scp:%s,%s" % (tmp_path / "bb.ark", tmp_path / "b.scp"), ["c"],
                       X[2:3])
    (tmp_path / "d.vec").write_bytes(reference.fv(X[3]))
    lines = (tmp_path / "b.scp").read_text() + (tmp_path / "a.scp").read_text()
    lines += "d\t%s \n" % (tmp_path / "d.vec")
    lines += "e cat %s |\n" % (tmp_path / "d.vec")
    (tmp_path / "mix.scp").write_text(lines)
    keys, got = read_vector_table("scp:%s" % (tmp_path / "mix.scp"))
    assert keys == ["c", "a", "b", "d", "e"]
    assert np.array_equal(got, X[[2, 0, 1, 3, 3]])
    two = (tmp_path / "b.scp").read_text() + (tmp_path / "a.scp").read_text()
    (tmp_path / "two.scp").write_text(two)
    keys, got = read_vector_table("scp:%s" % (tmp_path / "two.scp"))
    assert keys == ["c", "a", "b"] and np.array_equal(got, X[[2, 0, 1]])


def test_script_from_stdin_pipe_is_read_once(tmp_path):
    write_vector_table("ark,scp:%s,%s" % (tmp_path / "a.ark", tmp_path / "a.scp"), ["x", "y"],
                       np.eye(2, dtype=np.float32))
    keys, got = read_vector_table("scp:cat %s |" % (tmp_path / "a.scp"))
    assert keys == ["x", "y"] and np.array_equal(got, np.eye(2))
    (tmp_path / "p.scp").write_text("x cat %s |\n" % (tmp_path / "a.ark"))
    with pytest.raises(KaldiError, match="key 'x'|'x'"):
        read_vector_table("scp:cat %s |" % (tmp_path / "p.scp"))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_row_gather_matches_one_frombuffer_per_row(data):
    from pauc_backend.kaldi_io import archive
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    buf = rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()
    dim = data.draw(st.integers(1, 5))
    count = data.draw(st.integers(1, 200))
    if data.draw(st.booleans()):  # arbitrary offsets, any alignment
        offsets = rng.integers(0, len(buf) - 4 * dim, count)
    else:  # runs of equal steps, as in an archive with keys of a few lengths
        steps = np.repeat(rng.integers(4 * dim, 4 * dim + 7, 4), count)[:count]
        offsets = np.concatenate([[1], 1 + np.cumsum(steps)[:-1]])
        offsets = offsets[offsets + 4 * dim <= len(buf)]
    expected = np.array([np.frombuffer(buf, "<f4", dim, int(o)) for o in offsets])
    got = archive.gather_rows(buf, offsets, dim)
    assert np.array_equal(got.view(np.uint32), expected.reshape(-1, dim).view(np.uint32))


@pytest.mark.parametrize("binary", [True, False])
def test_writer_blocks_keep_offsets_continuous(tmp_path, monkeypatch, binary):
    from pauc_backend.kaldi_io import tables
    monkeypatch.setattr(tables, "_WRITE_BLOCK", 7)
    keys = ["k%d" % i for i in range(50)]
    values = np.random.default_rng(2).standard_normal((50, 3)).astype(np.float32)
    opts = "ark,scp" if binary else "ark,scp,t"
    write_vector_table("%s:%s,%s" % (opts, tmp_path / "a.ark", tmp_path / "a.scp"), keys, values)
    if binary:
        assert (tmp_path / "a.ark").read_bytes() == b"".join(
            reference.record(k, v) for k, v in zip(keys, values))
    assert len((tmp_path / "a.scp").read_text().splitlines()) == len(keys)
    for line, key, row in zip((tmp_path / "a.scp").read_text().splitlines(), keys, values):
        assert line.startswith(key + " ")
        np.testing.assert_allclose(read_vector(line.split()[1]), row, rtol=1e-6)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.text(st.characters(min_codepoint=33, max_codepoint=126),
                                  min_size=1, max_size=8),
                          st.sampled_from(["a.ark", "d:x/a.ark", "b.ark", "a.ark:", "cmd |"]),
                          st.integers(0, 10 ** 17)), min_size=1, max_size=12),
       st.sampled_from([" ", "\t", "  "]), st.booleans())
def test_vectorised_script_parser_agrees_with_the_line_parser(entries, sep, final_newline):
    from pauc_backend.kaldi_io import scripts
    text = "\n".join("%s%s%s:%d" % (key, sep, path, offset) for key, path, offset in entries)
    data = (text + ("\n" if final_newline else "")).encode()
    keys, targets = scripts.parse_script(data, 0, "x.scp")
    fast = scripts.parse_offset_script(data, 0)
    split = scripts.split_targets(targets)
    paths = {path for _, path, _ in entries}
    if fast is None:  # only the cases the fast parser leaves to the line parser
        assert len(paths) > 1 or "cmd |" in paths or \
            any(len(str(offset)) > 15 for _, _, offset in entries)
        return
    fast_keys, path, offsets = fast
    assert fast_keys == keys
    assert split is not None and set(split[0]) == {path}
    assert offsets.tolist() == split[1].tolist()
