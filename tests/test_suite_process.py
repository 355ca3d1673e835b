"""The pytest processes themselves run as the tools do: one BLAS thread (tests/conftest.py).

With OpenBLAS's default of a thread per core, the two xdist workers' in-process model fits
spin-wait against each other on a two-core machine (one test took 132 s of CPU instead of
4 s at load 17); the tools the tests start are not affected (entry.py sets their count)."""

import os

from conftest import BLAS_THREAD_VARIABLES, need, need_module


def test_every_blas_loaded_in_this_process_runs_one_thread():
    threadpoolctl = need_module("threadpoolctl")
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401
    if any(name in os.environ for name in BLAS_THREAD_VARIABLES):
        return   # the caller chose a count: theirs to keep
    pools = [(pool["filepath"], pool["num_threads"]) for pool in threadpoolctl.threadpool_info()
             if pool["user_api"] == "blas"]
    assert len(pools) >= 2, pools            # numpy's OpenBLAS and scipy's
    assert all(threads == 1 for _, threads in pools), pools


def test_the_blas_variables_are_set_only_while_numpy_and_scipy_load():
    """os.environ (what tool_env() passes to every tool and program) holds a BLAS variable
    exactly when this process was started with it: /proc/self/environ is the environment
    the process was given, whatever it changed since."""
    initial = need("/proc/self/environ", "Linux's /proc").read_bytes().split(b"\0")
    given = {entry.split(b"=", 1)[0].decode() for entry in initial if b"=" in entry}
    for name in BLAS_THREAD_VARIABLES:
        assert (name in os.environ) == (name in given), name
