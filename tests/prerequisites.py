"""The one way a test gives up for a missing prerequisite, and CI's rule that nothing skips.

A test that cannot run without something outside the repository (``../shared`` data, real
Kaldi, a program such as perl, an optional module) calls ``missing(why)`` (or ``need(path)``,
``need_program(name)``, ``need_module(name)``): on a developer's machine that is a skip, under
``CI=true`` (what ``.ci/run`` sets) a failure naming what is missing.

Under ``CI=true`` the hooks below (registered by tests/conftest.py) also turn ANY skip of a test
into a failure, whatever raised it (a bare ``pytest.skip``, a ``skipif`` mark, a skip in a
fixture), and end the session with a non-zero status when anything was still counted as
skipped (a module skipped at collection): a green CI run means every test ran. A deliberate
``xfail`` is not a skip.

Without ``CI`` a run that skipped tests for want of ``../shared`` (a ``need`` of data beside the
checkout, or the Kaldi kit it holds) ends with one line counting them and saying where
../shared was looked for and where docs/testing.md says what it holds, so a green run with
hundreds of skips explains itself.
"""

import importlib
import os
import shutil
from pathlib import Path

import pytest

__all__ = ["in_ci", "missing", "need", "need_program", "need_module", "SHARED_NOTICE"]

SHARED = Path(__file__).resolve().parents[2] / "shared"
# What the skips for want of ../shared say: need()'s reason, and the Kaldi kit's (interop).
_SHARED_REASONS = ("is not beside the checkout", "../shared/kaldi-ref")
SHARED_NOTICE = ("%d test(s) skipped for want of ../shared (golden Kaldi outputs, real corpora, "
                 "the Kaldi kit), looked for at %s: docs/testing.md says what it holds; "
                 "-rs lists them")


def in_ci():
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def missing(why):
    """Give up the test for a missing prerequisite: skip, or fail under CI=true."""
    if in_ci():
        pytest.fail("CI=true: missing prerequisite: %s" % why, pytrace=False)
    pytest.skip(why)


def need(path, what=None):
    """``path`` (shared data beside the checkout), or ``missing``."""
    path = Path(path)
    if not path.exists():
        missing("%s is not beside the checkout" % (what or path))
    return path


def need_program(name):
    """The full path of program ``name`` on PATH, or ``missing``."""
    found = shutil.which(name)
    if found is None:
        missing("the program %s is not on PATH" % name)
    return found


def need_module(name):
    """The imported module ``name``, or ``missing`` (instead of ``pytest.importorskip``)."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        problem = str(err)
    missing("the Python module %s cannot be imported (%s)" % (name, problem))


def _skip_reason(report):
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true a skipped test (setup or call) is reported as failed."""
    outcome = yield
    report = outcome.get_result()
    if in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = "CI=true: a test may not skip (%s)" % _skip_reason(report)


def pytest_sessionfinish(session, exitstatus):
    """Under CI=true a run that counted a skip fails: a module skipped at collection (e.g.
    importorskip; left a skip there, since a collection error would stop the whole run), or
    any skip the hook above did not see."""
    if not in_ci() or hasattr(session.config, "workerinput"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if reporter is not None:
            reporter.write_line("CI=true: %d test(s) skipped: failing the run" % len(skipped),
                                red=True)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line counting the tests skipped for want of ../shared (module doc), after the short
    summary of -ra/-rs (which lists each skip), just above the closing count."""
    yield
    skipped = terminalreporter.stats.get("skipped", [])
    count = sum(any(mark in _skip_reason(report) for mark in _SHARED_REASONS)
                for report in skipped)
    if count:
        terminalreporter.write_line(SHARED_NOTICE % (count, SHARED), yellow=True, bold=True)
