"""A tool's main() is a library call: it leaves signal dispositions, the environment and the
working directory as it found them. What a separate process needs (one BLAS thread, SIGTERM and
SIGHUP cleanup, quiet interrupts) is done by the console entry point, checked here in
subprocesses so that nothing in this pytest process changes."""

import importlib
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import BIN, REPO, run_tool, tool_env

from pauc_backend.kaldi_io import write_vector_table

TOOLS = sorted(path.name for path in BIN.iterdir() if not path.name.startswith("."))
ALL_SIGNALS = sorted(signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP}, key=int)


def test_every_console_script_is_a_bin_launcher_and_goes_through_the_entry_point():
    scripts = {}
    section = False
    for line in (REPO / "pyproject.toml").read_text().splitlines():
        if line.startswith("["):
            section = line.strip() == "[project.scripts]"
        elif section and "=" in line:
            name, target = (part.strip().strip('"') for part in line.split("=", 1))
            scripts[name] = target
    assert sorted(scripts) == TOOLS
    assert set(scripts.values()) == {"pauc_backend.cli.framework.entry:main"}
    for name in TOOLS:
        assert "from pauc_backend.cli.framework.entry import main" in (BIN / name).read_text()


def snapshot():
    return ({int(s): signal.getsignal(s) for s in ALL_SIGNALS}, dict(os.environ), os.getcwd())


@pytest.mark.parametrize("tool", TOOLS)
def test_main_in_process_leaves_signals_environment_and_cwd_unchanged(tool, tmp_path, capsys):
    module = importlib.import_module("pauc_backend.cli.tools." + tool.replace("-", "_"))
    before = snapshot()
    calls = [["--help"], ["--no-such-option=1", "x"], [], ["--print-args=false"] + ["x"] * 9,
             # a real run that fails on a missing input after its options were parsed
             ["--print-args=false"] + [str(tmp_path / "missing")] * 2]
    for argv in calls:
        code = module.main(argv)
        assert isinstance(code, int)
        assert snapshot() == before, (tool, argv)
    assert module.main(["--help"]) == 0
    assert "Standard options:" in capsys.readouterr().out  # every help has this header


def _python(code, cwd, env=None, **kwargs):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd,
                          env=env or tool_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, **kwargs)


@pytest.fixture
def small_ark(tmp_path):
    keys = ["utt%05d" % i for i in range(2000)]
    write_vector_table("ark:%s" % (tmp_path / "in.ark"), keys,
                       np.arange(2000 * 50, dtype=np.float32).reshape(2000, 50))
    return tmp_path


def _environment_seen_by_child(tmp_path, extra):
    env = {k: v for k, v in tool_env().items() if k not in (
        "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env.update(extra)
    proc = run_tool_with_env("copy-vectors", env, "ark:env > child.env; cat in.ark |",
                             "ark:out.ark", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    return dict(line.split("=", 1) for line in (tmp_path / "child.env").read_text().splitlines()
                if "=" in line)


def run_tool_with_env(name, env, *args, cwd=None):
    return subprocess.run([sys.executable, str(BIN / name), *args], cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_commands_in_our_pipes_inherit_the_users_blas_settings(small_ark):
    child = _environment_seen_by_child(small_ark, {})
    assert not {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"} & set(child)
    child = _environment_seen_by_child(small_ark, {"OPENBLAS_NUM_THREADS": "2"})
    assert child["OPENBLAS_NUM_THREADS"] == "2" and "OMP_NUM_THREADS" not in child


def test_the_tool_itself_runs_one_blas_thread_unless_told_otherwise(tmp_path):
    probe = """
        import os, sys
        from pauc_backend.cli.framework import entry
        entry._limit_blas_threads(os.environ)
        from pauc_backend.process import child_environment
        print(os.environ.get("OPENBLAS_NUM_THREADS"), os.environ.get("MKL_NUM_THREADS"),
              "OPENBLAS_NUM_THREADS" in child_environment())
    """
    env = {k: v for k, v in tool_env().items() if not k.endswith("_NUM_THREADS")}
    assert _python(probe, tmp_path, env).stdout.split() == [b"1", b"1", b"False"]
    env["OPENBLAS_NUM_THREADS"] = "3"
    assert _python(probe, tmp_path, env).stdout.split()[0] == b"3"


# A signal arriving while the output is half written: the hidden temporary file is removed, an
# existing output keeps its old content, and the process dies by that signal.
SIGNAL_MID_WRITE = """
    import os, signal, builtins
    from pauc_backend.cli.framework import entry
    real_fdopen = os.fdopen
    class Writer:
        def __init__(self, f): self.f, self.n = f, 0
        def write(self, data):
            self.n += 1
            out = self.f.write(data)
            if self.n == 1:
                os.kill(os.getpid(), signal.%s)
            return out
        def __getattr__(self, name): return getattr(self.f, name)
    os.fdopen = lambda *a, **k: Writer(real_fdopen(*a, **k))
    entry.main("copy-vectors", ["--print-args=false", "ark:in.ark", "ark:out.ark"])
"""


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_while_writing_leaves_no_temporary_file_and_the_old_output(small_ark, name):
    (small_ark / "out.ark").write_bytes(b"old")
    proc = _python(SIGNAL_MID_WRITE % name, small_ark)
    if name == "SIGINT":
        assert proc.returncode == 130
    else:
        assert proc.returncode == -getattr(signal, name), proc.stderr.decode()
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    assert sorted(p.name for p in small_ark.iterdir()) == ["in.ark", "out.ark"]
    assert (small_ark / "out.ark").read_bytes() == b"old"


def test_an_interrupt_while_importing_exits_130_without_a_traceback(tmp_path):
    interrupt_numpy_import = """
        import sys
        class Interrupt:
            def find_spec(self, name, path=None, target=None):
                if name == "numpy":
                    raise KeyboardInterrupt
        sys.meta_path.insert(0, Interrupt())
        from pauc_backend.cli.framework import entry
        entry.main("train-plda", ["--help"])
    """
    proc = _python(interrupt_numpy_import, tmp_path)
    assert proc.returncode == 130 and proc.stderr == b"", proc.stderr.decode()


def test_an_unknown_program_name_is_one_error_line(tmp_path):
    proc = _python("from pauc_backend.cli.framework import entry; entry.main('no-such-tool')", tmp_path)
    assert proc.returncode == 255
    assert proc.stderr.decode().count("\n") == 1 and "no-such-tool" in proc.stderr.decode()


def test_bin_launchers_run_from_any_directory(tmp_path):
    proc = run_tool("copy-vectors", "--help", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith(b"Copy vectors")
