"""read_token_table's numpy path for canonical ``key token\\n`` files (issue 27: 1.28 M-line
utt2spk files) gives what the record parser gives, and leaves every other file to it.

The reference is the record parser itself (SequentialTableReader), whose behaviour on these
inputs is pinned by test_tables.py and test_errors.py; a file outside the canonical form must
give the parser's table or its error, whichever the parser gives."""

import pytest

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_token_table, tables


def parsed(rspecifier):
    """The record parser's table, or its error message."""
    try:
        table = {}
        for key, value in tables.SequentialTableReader(rspecifier, "token"):
            if key in table:
                raise KaldiError("Duplicate key '%s' in %s" % (key, rspecifier))
            table[key] = value
        return table
    except KaldiError as err:
        return str(err)


def read(rspecifier):
    try:
        return read_token_table(rspecifier)
    except KaldiError as err:
        return str(err)


CANONICAL = [b"u1 s1\nu2 s2\nu3 s1\n", "u\xe9 sp\xe9aker\n".encode(), b"a b\n",
             "u1 s\u00a01\n".encode()]  # a no-break space is not a separator for Kaldi
OTHER = [b"u1  s1\nu2 s2\n", b"u1\ts1\n", b"u1 s1\nu2 s2", b"u1 s1\r\nu2 s2\r\n",
         b" u1 s1\n", b"u1 s1 \n", b"u1 s1\n\nu2 s2\n", b"u1 s1 x\nu2\n", b"u1\nu2 s2 s3\n",
         b"u1 s1\nu1 s2\n", b"u1 \xff\xfe\n", b"u1 s\x011\n", b"", b"\n", b"u1 s1\nu2\n"]


@pytest.mark.parametrize("data", CANONICAL + OTHER)
def test_same_table_or_error_as_the_record_parser(tmp_path, data):
    path = tmp_path / "utt2spk"
    path.write_bytes(data)
    rspecifier = "ark:%s" % path
    expected = parsed(rspecifier)
    got = read(rspecifier)
    assert got == expected
    if isinstance(expected, dict):
        assert list(got.items()) == list(expected.items())  # file order


@pytest.mark.parametrize("data", CANONICAL)
def test_canonical_files_take_the_numpy_path(tmp_path, data):
    path = tmp_path / "utt2spk"
    path.write_bytes(data)
    assert tables._canonical_token_table("ark:%s" % path) is not None


@pytest.mark.parametrize("data", OTHER)
def test_other_files_are_left_to_the_record_parser(tmp_path, data):
    path = tmp_path / "utt2spk"
    path.write_bytes(data)
    assert tables._canonical_token_table("ark:%s" % path) is None
