"""Shared test fixtures: where the golden Kaldi data and the real ETRI data live, and a tool runner.

The golden data (../shared/golden beside the checkout) was produced by the real Kaldi binaries;
its scp files hold paths relative to that folder, so tools that read them run with it as cwd.
"""

import os
import subprocess
import sys
from pathlib import Path

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _one_blas_thread_in_this_process():
    """The tests that fit models inside the pytest process (controller and each xdist worker)
    run with one BLAS thread, as our tools do (pauc_backend/cli/framework/entry.py). Two workers
    on two cores each with OpenBLAS's default of one thread per core spin-wait against each
    other: AutoBackend on 12 TIMIT speakers took 54.7 s of CPU with the default and 1.9 s with
    one thread, at load 17 (2026-11-28). OpenBLAS reads the variables once, when it is loaded,
    and numpy and scipy each load their own copy; so they are set (where unset) only while
    numpy and scipy.linalg are first imported (one a plugin loaded before this file keeps its
    count), then os.environ is as the user had it again: the tools and programs the tests
    start see the caller's environment, unchanged."""
    unset = [name for name in BLAS_THREAD_VARIABLES if name not in os.environ]
    for name in unset:
        os.environ[name] = "1"
    try:
        import numpy  # noqa: F401
        import scipy.linalg  # noqa: F401
    finally:
        for name in unset:
            del os.environ[name]


_one_blas_thread_in_this_process()

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings

# The one helper for missing prerequisites (skip; a failure under CI=true) and the CI=true hooks
# that fail the run on any skip (tests/prerequisites.py); hooks count only when named here.
from prerequisites import (in_ci, missing, need, need_module, need_program,  # noqa: F401
                           pytest_runtest_makereport, pytest_sessionfinish,
                           pytest_terminal_summary)

# The suite must give the same verdict on every run and under any machine load: property tests
# draw a fixed sequence of examples (derandomize) and have no time limits. Explore with fresh
# random examples by hand: python -m pytest --hypothesis-profile=explore
settings.register_profile("repeatable", derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("repeatable")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
GOLDEN = SHARED / "golden"
ETRI = SHARED / "realdata" / "etri"
BIN = REPO / "bin"


def tool_env():
    """Environment with bin/ first on PATH, so pipes inside rspecifiers find our tools."""
    env = dict(os.environ)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def python_example_env():
    """tool_env() for a Python program of ours that is not a tool (a README example): one BLAS
    thread where the caller set none, as each tool runs; with the default (a thread per core)
    its BLAS threads and the other xdist worker's spin-wait against each other on two cores
    (the README's first example: 20 s of CPU at load 17)."""
    env = tool_env()
    for name in BLAS_THREAD_VARIABLES:
        env.setdefault(name, "1")
    return env


HOOKED_TOOL = REPO / "tests" / "hooked_tool.py"


def tool_argv(name, *args, env=None):
    """The command line of ``bin/<name> args...``; when ``env`` sets one of the commit's test
    hooks (``PAUC_BACKEND_TEST_*``), through tests/hooked_tool.py, the only way to switch them
    on (a real run ignores those variables)."""
    if any(key.startswith("PAUC_BACKEND_TEST_") for key in (env or {})):
        return [sys.executable, str(HOOKED_TOOL), name, *map(str, args)]
    return [sys.executable, str(BIN / name), *map(str, args)]


def run_tool(name, *args, cwd=None, input=None, check=False):
    """Run ``bin/<name> args...``; return the CompletedProcess (bytes stdout/stderr)."""
    proc = subprocess.run([sys.executable, str(BIN / name), *map(str, args)], cwd=cwd,
                          input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=tool_env())
    if check and proc.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (name, proc.returncode,
                                                     proc.stderr.decode(errors="replace")))
    return proc


def run_shell(command, cwd=None, input=None):
    """Run a shell pipeline with bin/ on PATH (for pipes between tools, as in a recipe)."""
    return subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=cwd, input=input,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env())


@pytest.fixture
def golden():
    return need(GOLDEN)


@pytest.fixture
def etri():
    need(ETRI / "trials")
    return ETRI


# The modules that take minutes (real recipes, real Kaldi), longest first. With pytest-xdist's
# ``--dist loadfile`` (pyproject's addopts) each module runs whole on one worker, so its
# module-scoped fixtures (a recipe run, an egs directory) are built once; starting the long
# modules first keeps the two workers busy to the end instead of leaving one long module last.
SLOW_MODULES = (     # (CPU seconds of each, every process it started; 2026-11-28, load 5-17)
    "tests/recipes/test_kaldi_egs_recipes.py",   # 130: sre16 and sitw egs with our twins
    "tests/recipes/test_kaldi_egs_real.py",      # 118: the same egs with the real Kaldi
    "tests/recipes/test_demo_recipe.py",         # 82
    "tests/recipes/test_timit_recipe.py",        # 77
    "tests/recipes/test_etri_recipe.py",         # 49
    "tests/cli/test_pauc_auto_fold_jobs.py",     # 38
    "tests/cli/test_pauc_auto_workers.py",       # 36
    "tests/interop/test_cross_feed.py",          # 28
    "tests/recipes/test_voxceleb_recipe.py",     # 23
    "tests/test_readme.py",                      # 22: quick start, docs, examples
    "tests/cli/test_output_commit.py",           # 16
    "tests/recipes/test_recipe_auto_stage.py",   # 12
)


def pytest_configure(config):
    """See below; first, SIGINT: a shell starts a background job (``cmd &``, nohup, some CI
    runners) with SIGINT ignored, Python then leaves it ignored, and every tool the tests start
    inherits that, so the tests that interrupt a tool would see it carry on. Each pytest process
    (controller and xdist workers) gets Python's normal handler once, at start-up, so what a tool
    inherits is the default disposition, as from an interactive shell."""
    import signal
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _compile_package(config)


def _compile_package(config):
    """Byte-compile the package once per test run (in the controller, before any worker
    starts). The suite starts our tools thousands of times from this checkout; where
    PYTHONDONTWRITEBYTECODE is set (as on our CI machines) each start otherwise compiled every
    module it imports again (0.28 s -> 0.22 s per copy-vectors start). Python reads fresh
    __pycache__ files whatever that variable says; the files are ignored by git."""
    if not hasattr(config, "workerinput"):
        import compileall
        compileall.compile_dir(str(REPO / "pauc_backend"), quiet=2)


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(SLOW_MODULES)}

    def key(item):
        path = Path(str(item.fspath)).resolve().relative_to(REPO).as_posix()
        return rank.get(path, len(SLOW_MODULES))

    items.sort(key=key)  # stable: the order within a module and among the rest is kept
