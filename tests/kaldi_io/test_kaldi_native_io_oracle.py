"""Agreement with kaldi-native-io (a C++ port of Kaldi's table code), used only as an oracle."""

import numpy as np
import pytest
from conftest import need_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pauc_backend.kaldi_io import (SequentialTableReader, TableWriter, read_int32_table,
                                   read_token_table, read_token_vector_table, read_vector_table,
                                   write_int32_table, write_token_table, write_vector_table)

knio = need_module("kaldi_native_io")


def knio_items(reader):
    """(key, copy of value) pairs: kaldi-native-io reuses a value's memory after next()."""
    return [(key, np.array(value, copy=True)) for key, value in reader]

KEYS = st.text(st.characters(min_codepoint=33, max_codepoint=0x2ff,
                             blacklist_categories=("Cc", "Zs", "Cs")), min_size=1, max_size=10)
SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def vector_tables(draw):
    keys = draw(st.lists(KEYS, max_size=8, unique=True))
    dim = draw(st.integers(0, 6))
    values = draw(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False),
                           min_size=len(keys) * dim, max_size=len(keys) * dim))
    return keys, np.array(values, dtype=np.float32).reshape(len(keys), dim)


@SETTINGS
@given(vector_tables(), st.booleans())
def test_our_archives_are_read_identically_by_kaldi_native_io(tmp_path, table, binary):
    keys, X = table
    opts = "ark,scp" if binary else "ark,scp,t"
    write_vector_table("%s:%s,%s" % (opts, tmp_path / "a.ark", tmp_path / "a.scp"), keys, X)
    for rspec in ("ark:%s" % (tmp_path / "a.ark"), "scp:%s" % (tmp_path / "a.scp")):
        pairs = knio_items(knio.SequentialFloatVectorReader(rspec))
        assert [k for k, _ in pairs] == keys
        for (_, value), row in zip(pairs, X):
            if binary:
                assert np.array_equal(value, row)
            else:
                np.testing.assert_allclose(value, row, rtol=1e-6)
    reader = knio.RandomAccessFloatVectorReader("scp:%s" % (tmp_path / "a.scp"))
    for key, row in zip(keys, X):
        value = np.array(reader[key], copy=True)
        assert np.array_equal(value, row) if binary else np.allclose(value, row, rtol=1e-6)


@SETTINGS
@given(vector_tables(), st.booleans())
def test_kaldi_native_io_archives_are_byte_identical_to_ours(tmp_path, table, binary):
    keys, X = table
    opts = "ark,scp" if binary else "ark,scp,t"
    writer = knio.FloatVectorWriter("%s:%s,%s" % (opts, tmp_path / "k.ark", tmp_path / "k.scp"))
    for key, row in zip(keys, X):
        writer.write(key, row)
    writer.close()
    got_keys, got = read_vector_table("ark:%s" % (tmp_path / "k.ark"))
    assert got_keys == keys
    write_vector_table("%s:%s,%s" % (opts, tmp_path / "o.ark", tmp_path / "o.scp"), keys, X)
    assert (tmp_path / "o.ark").read_bytes() == (tmp_path / "k.ark").read_bytes()
    assert (tmp_path / "o.scp").read_text().replace("o.ark", "k.ark") == \
        (tmp_path / "k.scp").read_text()


@SETTINGS
@given(st.lists(st.tuples(KEYS, st.lists(st.floats(allow_nan=False, allow_infinity=False),
                                           max_size=5)), max_size=5, unique_by=lambda t: t[0]))
def test_double_vector_tables_agree(tmp_path, entries):
    writer = knio.DoubleVectorWriter("ark,t:%s" % (tmp_path / "d.ark"))
    for key, values in entries:
        writer.write(key, np.array(values, dtype=np.float64))
    writer.close()
    with TableWriter("ark,t:%s" % (tmp_path / "o.ark"), "double_vector") as ours:
        for key, values in entries:
            ours.write(key, np.array(values))
    assert (tmp_path / "o.ark").read_bytes() == (tmp_path / "d.ark").read_bytes()
    got = list(SequentialTableReader("ark:%s" % (tmp_path / "d.ark"), "double_vector"))
    assert [k for k, _ in got] == [k for k, _ in entries]


@SETTINGS
@given(st.dictionaries(KEYS, st.integers(-2 ** 31, 2 ** 31 - 1), max_size=6), st.booleans())
def test_int32_tables_agree_byte_for_byte(tmp_path, table, binary):
    opts = "ark" if binary else "ark,t"
    writer = knio.Int32Writer("%s:%s" % (opts, tmp_path / "k.ark"))
    for key, value in table.items():
        writer.write(key, value)
    writer.close()
    write_int32_table("%s:%s" % (opts, tmp_path / "o.ark"), list(table), list(table.values()))
    assert (tmp_path / "o.ark").read_bytes() == (tmp_path / "k.ark").read_bytes()
    assert read_int32_table("ark:%s" % (tmp_path / "k.ark")) == table


@SETTINGS
@given(st.dictionaries(KEYS, st.lists(KEYS, min_size=1, max_size=4), max_size=5))
def test_token_tables_read_what_kaldi_native_io_writes(tmp_path, table):
    writer = knio.TokenVectorWriter("ark:%s" % (tmp_path / "s2u"))
    for key, value in table.items():
        writer.write(key, value)
    writer.close()
    # kaldi-native-io drops Kaldi's trailing space (TokenVectorHolder::Write writes "tok ");
    # reading must accept both.
    assert read_token_vector_table("ark:%s" % (tmp_path / "s2u")) == table
    writer = knio.TokenWriter("ark:%s" % (tmp_path / "u2s"))
    for key, value in table.items():
        writer.write(key, value[0])
    writer.close()
    assert read_token_table("ark:%s" % (tmp_path / "u2s")) == {k: v[0] for k, v in
                                                               table.items()}
    write_token_table("ark:%s" % (tmp_path / "o"), {k: v[0] for k, v in table.items()})
    assert (tmp_path / "o").read_bytes() == (tmp_path / "u2s").read_bytes()


@pytest.mark.parametrize("method", ["kAutomaticMethod", "kSpeechFeature", "kTwoByteAuto",
                                    "kOneByteAuto"])
def test_compressed_matrices_decode_like_kaldi(tmp_path, method):
    rng = np.random.default_rng(7)
    mats = {"a": rng.standard_normal((12, 5)).astype(np.float32) * 3,
            "b": rng.uniform(-1, 4, (3, 2)).astype(np.float32)}
    writer = knio.CompressedMatrixWriter("ark:%s" % (tmp_path / "c.ark"))
    for key, value in mats.items():
        writer.write(key, value, getattr(knio.CompressionMethod, method))
    writer.close()
    theirs = dict(knio_items(knio.SequentialFloatMatrixReader("ark:%s" % (tmp_path / "c.ark"))))
    ours = dict(SequentialTableReader("ark:%s" % (tmp_path / "c.ark"), "matrix"))
    assert list(ours) == list(theirs)
    for key in mats:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-6, atol=1e-6)
        span = mats[key].max() - mats[key].min()
        assert np.abs(ours[key] - mats[key]).max() <= span / 100  # compression error bound


def test_float_matrix_tables_agree(tmp_path):
    rng = np.random.default_rng(1)
    mats = {"m%d" % i: rng.standard_normal((i, 3)).astype(np.float32) for i in range(1, 4)}
    for opts in ("ark", "ark,t"):
        writer = knio.FloatMatrixWriter("%s:%s" % (opts, tmp_path / "k.ark"))
        for key, value in mats.items():
            writer.write(key, value)
        writer.close()
        with TableWriter("%s:%s" % (opts, tmp_path / "o.ark"), "matrix") as ours:
            for key, value in mats.items():
                ours.write(key, value)
        assert (tmp_path / "o.ark").read_bytes() == (tmp_path / "k.ark").read_bytes()
