"""Issue 10 part 3: an output whose reader exits early (more than a pipe buffer, ~64 KB, left to
write) gives one ERROR line naming the output: not a death by SIGPIPE, not a traceback, not the
"Exception ignored ... BrokenPipeError" noise at exit, and never exit 0 with a truncated output."""

import re
import sys

import numpy as np
import pytest
from conftest import run_shell

from pauc_backend.kaldi_io import write_vector_table


@pytest.fixture
def big(tmp_path):
    """5000 vectors of dim 20: 450 KB binary, 260 KB as text (several pipe buffers)."""
    path = tmp_path / "big.ark"
    write_vector_table("ark:%s" % path, ["u%06d" % i for i in range(5000)],
                       np.ones((5000, 20), np.float32))
    return path


def check_one_error(proc, pattern):
    text = proc.stderr.decode()
    assert proc.returncode == 255, text  # our exit status (pipefail), not 141 (SIGPIPE)
    assert "Traceback" not in text and "Exception ignored" not in text, text
    errors = [l for l in text.splitlines() if l.startswith("ERROR")]
    assert len(errors) == 1 and re.search(pattern, errors[0]), text
    assert "LOG" not in text.replace(errors[0], ""), text  # no "Copied N vectors" success line


@pytest.mark.parametrize("wspecifier", ["ark,t:-", "ark:-"])
def test_stdout_reader_exiting_early_is_one_error(big, wspecifier):
    proc = run_shell("copy-vectors ark:%s %s | head -c 10 > /dev/null" % (big, wspecifier))
    check_one_error(proc, r"Failed to write standard output: its reader closed the pipe early")


def test_output_pipe_exiting_early_with_status_0_is_one_error(big, tmp_path):
    proc = run_shell("copy-vectors ark:%s 'ark:| head -c 10 > /dev/null'" % big)
    check_one_error(proc, r"Output pipe '\| head -c 10 > /dev/null' exited before reading all "
                          r"the output \(broken pipe\)")


def test_output_pipe_failing_early_names_its_status(big):
    proc = run_shell("copy-vectors ark:%s 'ark:| exit 4'" % big)
    check_one_error(proc, r"Output pipe '\| exit 4' failed \(exit status 4\)")


def test_a_broken_scp_pipe_leaves_the_existing_archive_untouched(big, tmp_path):
    out = tmp_path / "out.ark"
    out.write_bytes(b"keep")
    proc = run_shell("copy-vectors ark:%s ark,scp:%s,- | head -c 10 > /dev/null" % (big, out))
    check_one_error(proc, r"Failed to write standard output")
    assert out.read_bytes() == b"keep"
    assert not list(tmp_path.glob(".out.ark.*.tmp"))


class _GoneReader:
    """A stdout whose reader has exited: every write or flush raises EPIPE."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")


class _BufferedGone(_GoneReader):
    """Writes are buffered; the flush at the end finds the reader gone."""

    def write(self, text):
        return len(text)


def test_tool_main_turns_a_broken_stdout_into_one_error(monkeypatch, capsys):
    from pauc_backend.cli.framework.kaldi_cli import Tool
    tool = Tool("demo-tool", "Usage: demo-tool")

    def prints(opts, args):
        sys.stdout.write("result\n")

    def raises(opts, args):
        raise BrokenPipeError(32, "Broken pipe")

    for run, stdout in ((prints, _GoneReader()), (raises, _GoneReader()),
                        (prints, _BufferedGone())):
        monkeypatch.setattr(sys, "stdout", stdout)
        code = tool.main(run, ["--print-args=false"], num_args=0)
        monkeypatch.undo()
        err = capsys.readouterr().err
        lines = err.splitlines()
        assert code == 255 and len(lines) == 1, err
        assert lines[0].startswith("ERROR (demo-tool[")
        assert "Failed to write standard output: its reader closed the pipe early" in lines[0]
