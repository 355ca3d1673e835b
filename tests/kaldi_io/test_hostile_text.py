"""Hostile text in the readers (issue 26 items 5 and 7): lines and tokens are bounded, a UTF-8
byte-order mark never becomes part of a key, lines split at ASCII whitespace only (as Kaldi's
getline and SplitStringToVector), and numbers are read as C's strtod reads them (no ``1_000``,
no non-ASCII digits), in every parser of numbers from text. Each failure is one KaldiError
naming the file and the line, key or byte.

Endless inputs (``/dev/zero``) are run through the tools under a memory limit in
tests/cli/test_hostile_inputs.py; here the bounds are met with files just over them.
"""

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import kaldi_reference as encoder
from pauc_backend.embedding_files import read_embeddings, read_key_list
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import (archive, codec, lines, numbers, read_int32_table, read_matrix,
                                   read_scores, read_script, read_token_table,
                                   read_token_vector_table, read_trials, read_vector,
                                   read_vector_table, trials)
from pauc_backend.kaldi_io.codec import ByteCursor
from pauc_backend.kaldi_io.holders import HOLDERS, check_token
from pauc_backend.kaldi_io.keyed import KeySpace, PairTable

BOM = b"\xef\xbb\xbf"


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def error_of(fn, *args):
    with pytest.raises(KaldiError) as info:
        fn(*args)
    return str(info.value)


def keyed_floats(path):
    return np.concatenate([chunk.floats(2) for chunk in trials.iter_fields(path, (3,),
                                                                            "scores file")])


# -- bounded lines -------------------------------------------------------------------------

@pytest.mark.parametrize("via", ["file", "pipe"])
def test_a_line_longer_than_the_bound_is_an_error_naming_file_and_line(tmp_path, via):
    long = b"1" * lines.MAX_LINE_BYTES + b" target\n"
    for first, fn in ((b"x y target\n", read_trials),
                      (b"x y target\n", lambda rx: PairTable.read(rx, KeySpace(), "label")),
                      (b"x\n", read_key_list), (b"x x.ark:3\n", read_script),
                      (b"1 target\n", numbers.read_score_labels)):
        path = write(tmp_path, "t", first + long + first)
        rx = path if via == "file" else "cat %s |" % path
        message = error_of(fn, rx)
        assert "Line 2 of" in message and path in message and "1 MiB" in message, message


def test_lines_at_the_bound_are_read(tmp_path):
    key = b"k" * (lines.MAX_LINE_BYTES - 2)         # with " x": a line of exactly the bound
    for rx in ("%s", "cat %s |"):
        path = write(tmp_path, "keys", b"a\n" + key + b" x\nb")
        assert read_key_list(rx % path) == ["a", key.decode(), "b"]
    data = b"ab\n" + b"c" * 10 + b"\n"
    assert lines.first_long_line(data, 0, len(data), 10) == -1
    assert lines.first_long_line(data, 0, len(data), 9) == 3
    assert lines.first_long_line(b"abc", 0, 3, 2) == 0


def test_text_vector_longer_than_the_bound_is_an_error(tmp_path):
    body = b"1 " * (lines.MAX_LIST_LINE_BYTES // 2 + 1)
    path = write(tmp_path, "v.ark", b"a [ " + body + b"]\n")
    assert "no ']' within 16 MiB" in error_of(read_vector_table, "ark:" + path)
    path = write(tmp_path, "e.txt", b"a " + body + b"\n")
    message = error_of(read_embeddings, path)
    assert "Line 1 of text embeddings file" in message and "16 MiB" in message


def test_key_longer_than_the_bound_is_an_error(tmp_path):
    path = write(tmp_path, "k.ark", b"k" * (lines.MAX_LINE_BYTES + 5) + b" 3\n")
    message = error_of(read_int32_table, "ark:" + path)
    assert "key: longer than 1 MiB" in message and "k.ark at byte 0" in message


# -- byte-order marks ----------------------------------------------------------------------

def test_a_byte_order_mark_in_a_kaldi_line_file_is_an_error(tmp_path):
    trials_path = write(tmp_path, "trials", BOM + b"a b target\nc d nontarget\n")
    scores_path = write(tmp_path, "scores", BOM + b"a b 1\nc d 2\n")
    script = write(tmp_path, "x.scp", BOM + b"a x.ark:3\n")
    piped = write(tmp_path, "piped", BOM + b"1 target\n2 nontarget\n")
    for fn, path in ((read_trials, trials_path), (read_scores, scores_path),
                     (lambda rx: PairTable.read(rx, KeySpace(), "label"), trials_path),
                     (read_script, script), (numbers.read_score_labels, piped)):
        message = error_of(fn, path)
        assert "byte-order mark" in message and path in message, message
    table = write(tmp_path, "utt2spk", BOM + b"u1 s1\nu2 s2\n")
    message = error_of(read_token_table, "ark:" + table)
    assert "byte-order mark" in message and "utt2spk" in message


def test_a_byte_order_mark_in_import_vectors_inputs_is_skipped_and_said(tmp_path):
    said = []
    keys = write(tmp_path, "keys", BOM + b"u1\nu2\n")
    assert read_key_list(keys, said.append) == ["u1", "u2"]
    text = write(tmp_path, "e.txt", BOM + b"u1 1 2\nu2 3 4\n")
    got_keys, X, _ = read_embeddings(text, log=said.append)
    assert got_keys == ["u1", "u2"] and X.tolist() == [[1, 2], [3, 4]]
    assert len(said) == 2 and all("byte-order mark" in m for m in said)


# -- ASCII whitespace only -----------------------------------------------------------------

UNICODE_SPACES = ["\u00a0", "\u2028", "\u3000", "\u0085", "\u1680", "\u2009"]


@pytest.mark.parametrize("space", UNICODE_SPACES)
def test_keys_split_at_ascii_whitespace_only(tmp_path, space):
    """Kaldi's getline and SplitStringToVector (C isspace) keep these inside the key; Python's
    str.split and splitlines would cut there."""
    key = "u" + space + "x"
    keys = write(tmp_path, "keys", ("a\n%s other\n" % key).encode())
    assert read_key_list(keys) == ["a", key]
    text = write(tmp_path, "e.txt", ("a 1 2\n%s 3 4\n" % key).encode())
    got, X, _ = read_embeddings(text)
    assert got == ["a", key] and X.shape == (2, 2)
    check_token(key)                                   # Kaldi's IsToken accepts it
    trials_path = write(tmp_path, "trials", ("%s b target\n" % key).encode())
    assert read_trials(trials_path)[0].tolist() == [key]


def test_ascii_control_characters_are_not_tokens():
    for bad in ("a b", "a\tb", "a\x1fb", "a\x7fb", ""):
        with pytest.raises(KaldiError):
            check_token(bad)


# -- numbers as C reads them ---------------------------------------------------------------

PYTHON_ONLY_NUMBERS = ["1_000", "1e1_0", "\u0661", "1\u0661", "\uff11.5"]


def number_parsers(tmp_path, token):
    """Every parser of a number from text, each given ``token`` as one value."""
    t = token.encode()
    return {
        "text vector": lambda: codec.read_vector_obj(ByteCursor(b" [ 1 " + t + b" ]\n"), False),
        "text matrix": lambda: read_matrix(write(tmp_path, "m", b" [\n  1 " + t + b" ]\n")),
        "text vector file": lambda: read_vector(write(tmp_path, "v", b" [ " + t + b" ]\n")),
        "float (PLDA text)": lambda: codec.read_float(ByteCursor(t + b" "), False),
        "scores (keyed)": lambda: keyed_floats(write(tmp_path, "s", b"a b " + t + b"\n")),
        "scores (read_scores)": lambda: read_scores(write(tmp_path, "s", b"a b " + t + b"\n")),
        "scores (piped)": lambda: numbers.read_score_labels(
            write(tmp_path, "p", t + b" target\n1 nontarget\n")),
        "num_utts (int32)": lambda: read_int32_table("ark:" + write(tmp_path, "n", b"s " + t
                                                                    + b"\n")),
        "text embeddings": lambda: read_embeddings(write(tmp_path, "e.txt",
                                                         b"a 1 " + t + b"\n")),
    }


@pytest.mark.parametrize("token", PYTHON_ONLY_NUMBERS)
def test_numbers_only_python_reads_are_errors_in_every_parser(tmp_path, token):
    for name, parse in number_parsers(tmp_path, token).items():
        with pytest.raises(KaldiError) as info:
            parse()
        assert info.value.args[0], name


def test_plain_numbers_still_read_in_every_parser(tmp_path):
    for name, parse in number_parsers(tmp_path, "25").items():
        if name == "scores (piped)":
            assert parse()[0].tolist() == [25, 1]
            continue
        parse()


def test_bad_score_names_file_and_line(tmp_path):
    path = write(tmp_path, "s", b"a b 1\nc d 1_000\n")
    for fn in (read_scores, keyed_floats):
        message = error_of(fn, path)
        assert "Bad score '1_000' on line 2 of %s" % path in message, message
    path = write(tmp_path, "e.txt", b"a 1 2\nb 3 1_0\n")
    assert "Line 2 of %s: '1_0' is not a number" % path in error_of(read_embeddings, path)


# -- archives parsed while they arrive -----------------------------------------------------

class Trickle(io.RawIOBase):
    """A stream that hands out at most ``step`` bytes a read (a slow pipe)."""

    def __init__(self, data, step):
        self.data, self.pos, self.step = data, 0, step

    def readable(self):
        return True

    def readinto(self, buffer):
        chunk = self.data[self.pos:self.pos + min(len(buffer), self.step)]
        buffer[:len(chunk)] = chunk
        self.pos += len(chunk)
        return len(chunk)


def records(fn):
    try:
        return "ok", [(k, np.asarray(v).tolist() if hasattr(v, "shape") else v, o)
                      for k, v, o in fn()]
    except KaldiError as err:
        return "error", str(err)


@st.composite
def text_tables(draw):
    holder = draw(st.sampled_from(["int32", "token", "token_vector", "vector"]))
    keys = draw(st.lists(st.text("abc-_0", min_size=1, max_size=4), min_size=1, max_size=4))
    values = {"int32": lambda: b"%d \n" % draw(st.integers(-5, 99)),
              "token": lambda: b"s%d\n" % draw(st.integers(0, 9)),
              "token_vector": lambda: b" ".join(b"u%d" % i for i in range(draw(
                  st.integers(0, 3)))) + b"\n",
              "vector": lambda: encoder.record("x", [1.5, -2])[2:]}[holder]
    raw = b"".join(k.encode() + b" " + values() for k in keys)
    return holder, raw


MUTATIONS = [b" ", b"\0", b"\n", b"\t", b"[", b"]", b"\xef\xbb\xbf", b"\xc3", b"1_0"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=text_tables(), cut=st.integers(0, 60), insert=st.sampled_from(MUTATIONS),
       step=st.integers(1, 9))
@example(table=("int32", b"a 12 \nb 3 \n"), cut=3, insert=b"", step=1)
@example(table=("vector", b"a  [ 1 2 ]\r\nb  [ 3 ]\n"), cut=0, insert=b"", step=2)
def test_archive_parsed_while_it_arrives_reads_as_the_whole_archive(table, cut, insert, step):
    """Whatever the pieces a pipe delivers, the stream parser gives the records (and byte
    offsets) of the whole-buffer parser, or an error at the same byte."""
    holder, raw = table
    raw = raw[:cut] + insert + raw[cut:]
    whole = records(lambda: archive.iter_archive(raw, 0, "x.ark", HOLDERS[holder]))
    stream = io.BufferedReader(Trickle(raw, step), buffer_size=step)
    piece = records(lambda: archive.iter_archive_stream(stream, "x.ark", HOLDERS[holder],
                                                        chunk_bytes=step))
    assert piece[0] == whole[0], (raw, whole, piece)
    if whole[0] == "ok":
        assert piece == whole
    else:
        assert piece[1].split("(reading")[-1] == whole[1].split("(reading")[-1], (piece, whole)


def test_an_endless_record_fails_once_it_passes_the_bound():
    """Memory then holds at most the bound and a few reads, not the stream."""

    class Endless(io.RawIOBase):
        served = 0

        def readable(self):
            return True

        def readinto(self, buffer):
            buffer[:] = b"a" * len(buffer)
            Endless.served += len(buffer)
            return len(buffer)

    for holder in ("token", "vector"):
        Endless.served = 0
        stream = io.BufferedReader(Endless())
        with pytest.raises(KaldiError, match="key: longer than 1 MiB"):
            list(archive.iter_archive_stream(stream, "endless |", HOLDERS[holder],
                                             chunk_bytes=1 << 16))
        assert Endless.served < 4 * lines.MAX_LIST_LINE_BYTES
    assert read_token_vector_table  # the spk2utt form is run through train-plda (cli tests)
