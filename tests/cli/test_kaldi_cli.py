"""The shared Kaldi command-line conventions (kaldi_cli.py), exercised through copy-vectors."""

import re
import shlex

import numpy as np
import pytest
from conftest import run_tool

from pauc_backend.cli.framework.kaldi_cli import shell_quote
from pauc_backend.kaldi_io import read_vector, write_vector

ERROR_LINE = re.compile(r"^ERROR \(copy-vectors\[pauc-backend [^\]\s]+\]:\w+\(\):[\w/.]+:\d+\) ")
KALDI_PROGRAMS = ("ivector-", "transform-vec", "copy-vector", "copy-matrix", "compute-eer")


@pytest.fixture
def vec(tmp_path):
    path = tmp_path / "v.vec"
    write_vector(path, np.arange(5, dtype=np.float32) - 1.5)
    return path


def stderr_lines(proc):
    return proc.stderr.decode().splitlines()


def test_help_exits_0_and_lists_every_option_with_its_default():
    proc = run_tool("copy-vectors", "--help")
    assert proc.returncode == 0
    text = (proc.stdout + proc.stderr).decode()
    assert "Usage: copy-vectors" in text
    for option, default in (("binary", "true"), ("change-dim", "-1"), ("scale", "1"),
                            ("config", '""'), ("print-args", "true"), ("verbose", "0"),
                            ("help", "false")):
        assert re.search(r"--%s\s+:.*default = %s\)" % (option, re.escape(default)), text), option


@pytest.mark.parametrize("args", [(), ("only-one",), ("a", "b", "c")])
def test_wrong_number_of_arguments_prints_usage_to_stderr_and_exits_1(args):
    proc = run_tool("copy-vectors", *args)
    assert proc.returncode == 1
    assert proc.stdout == b""
    assert "Usage: copy-vectors" in proc.stderr.decode()
    assert "ERROR" not in proc.stderr.decode()


def test_unknown_option_prints_usage_then_invalid_option_error():
    proc = run_tool("copy-vectors", "--foo=1", "a", "b")
    assert proc.returncode != 0 and proc.returncode != 1
    lines = stderr_lines(proc)
    assert "Usage: copy-vectors" in proc.stderr.decode()
    assert ERROR_LINE.match(lines[-1]) and lines[-1].endswith("Invalid option --foo=1")


def test_bad_boolean_value_is_an_error():
    proc = run_tool("copy-vectors", "--binary=maybe", "a", "b")
    assert proc.returncode == 255 and "Invalid option --binary=maybe" in proc.stderr.decode()


@pytest.mark.parametrize("flag,binary", [("--binary=false", False), ("--binary=F", False),
                                         ("--binary=0", False), ("--binary", True),
                                         ("--binary=TRUE", True)])
def test_boolean_option_forms(vec, tmp_path, flag, binary):
    out = tmp_path / "out.vec"
    run_tool("copy-vectors", flag, vec, out, check=True)
    assert (out.read_bytes()[:2] == b"\0B") == binary
    assert np.array_equal(read_vector(out), read_vector(vec))


def test_bare_boolean_is_followed_by_positionals(vec, tmp_path):
    proc = run_tool("copy-vectors", "--binary", vec, tmp_path / "o")
    assert proc.returncode == 0 and (tmp_path / "o").read_bytes()[:2] == b"\0B"


def test_underscore_and_dash_option_names_are_the_same(vec, tmp_path):
    for flag in ("--change_dim=3", "--change-dim=3", "--CHANGE-DIM=3"):
        run_tool("copy-vectors", flag, vec, tmp_path / "o", check=True)
        assert np.array_equal(read_vector(tmp_path / "o"), read_vector(vec)[:3])


def test_config_file_sets_options_and_the_command_line_wins(vec, tmp_path):
    config = tmp_path / "copy.conf"
    config.write_text("# options for copy-vectors\n--binary=false  # text\n\n--change-dim=2\n")
    run_tool("copy-vectors", "--config=%s" % config, vec, tmp_path / "o", check=True)
    assert (tmp_path / "o").read_bytes() == b" [ -1.5 -0.5 ]\n"
    run_tool("copy-vectors", "--config=%s" % config, "--binary=true", vec, tmp_path / "o",
             check=True)
    assert (tmp_path / "o").read_bytes()[:2] == b"\0B"


def test_missing_config_file_is_an_error(vec, tmp_path):
    proc = run_tool("copy-vectors", "--config=%s" % (tmp_path / "none.conf"), vec, tmp_path / "o")
    assert proc.returncode == 255 and "none.conf" in stderr_lines(proc)[-1]


def test_options_end_at_the_first_positional_argument(vec, tmp_path):
    proc = run_tool("copy-vectors", vec, "--binary=false", tmp_path / "o")
    assert proc.returncode == 1  # three positionals
    proc = run_tool("copy-vectors", "--", vec, tmp_path / "o")
    assert proc.returncode == 0


def test_command_line_is_echoed_unless_print_args_is_false(vec, tmp_path):
    proc = run_tool("copy-vectors", "--binary=false", vec, tmp_path / "o")
    assert stderr_lines(proc)[0] == "copy-vectors --binary=false %s %s " % (vec, tmp_path / "o")
    proc = run_tool("copy-vectors", "--print-args=false", vec, tmp_path / "o")
    assert not any(line.startswith("copy-vectors") for line in stderr_lines(proc))
    assert stderr_lines(proc)[0].startswith("LOG (copy-vectors[")


def kaldi_command_lines(golden):
    lines = set()
    for log in (golden / "logs").glob("*.log"):
        for line in log.read_text().splitlines():
            if line.startswith(KALDI_PROGRAMS) and line.endswith(" "):
                lines.add(line)
    return sorted(lines)


def test_echo_quotes_arguments_exactly_like_kaldi(golden):
    lines = kaldi_command_lines(golden)
    assert len(lines) > 20
    for line in lines:
        argv = shlex.split(line)
        assert " ".join([argv[0]] + [shell_quote(a) for a in argv[1:]]) + " " == line


def test_echo_of_pipes_and_quotes_from_the_tool_itself(golden):
    argv = ["ark:data/train/spk2utt",
            "ark:ivector-subtract-global-mean scp:data/train/xvector.scp ark:- | transform-vec "
            "exp/transform.mat ark:- ark:- | ivector-normalize-length ark:-  ark:- |",
            "cut -d' ' -f1,2 data/trials_missing |"]
    proc = run_tool("copy-vectors", *argv)
    assert proc.returncode == 1
    assert stderr_lines(proc)[0] == (
        "copy-vectors ark:data/train/spk2utt 'ark:ivector-subtract-global-mean "
        "scp:data/train/xvector.scp ark:- | transform-vec exp/transform.mat ark:- ark:- | "
        "ivector-normalize-length ark:-  ark:- |' \"cut -d' ' -f1,2 data/trials_missing |\" ")


def test_errors_are_one_kaldi_line_without_traceback(tmp_path):
    bad = tmp_path / "bad.vec"
    bad.write_bytes(b"\0BFV \x04\x05\x00\x00\x00\x00\x00")
    proc = run_tool("copy-vectors", bad, tmp_path / "o")
    assert proc.returncode == 255
    lines = stderr_lines(proc)
    assert len(lines) == 2 and lines[0].startswith("copy-vectors ")
    assert ERROR_LINE.match(lines[1]), lines[1]
    assert "bad.vec" in lines[1] and "truncated" in lines[1]
    assert "Traceback" not in proc.stderr.decode()
    assert not (tmp_path / "o").exists()
