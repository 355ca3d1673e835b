"""Under CI=true nothing skips (tests/prerequisites.py): a small suite with every kind of skip
(the missing-prerequisite helpers, a bare pytest.skip, a skipif mark, a skip in a fixture, a
module skipped at collection) runs in a child pytest (one process and two xdist workers, as
.ci/run) with the hooks loaded as a plugin; with CI=true each one fails the run, without CI
they skip and the run passes. A deliberate xfail stays an xfail either way."""

import os
import subprocess
import sys

import pytest
from conftest import REPO

SUITE = {
    "test_kinds.py": '''
import pytest
from prerequisites import missing, need, need_module, need_program

@pytest.fixture
def data():
    pytest.skip("fixture data is absent")

def test_helper():
    missing("some shared data")

def test_need(tmp_path):
    need(tmp_path / "absent")

def test_program():
    need_program("no-such-program-pauc-backend")

def test_module():
    need_module("no_such_module_pauc_backend")

def test_bare():
    pytest.skip("bare skip")

@pytest.mark.skipif(True, reason="a skipif mark")
def test_mark():
    pass

def test_fixture(data):
    pass

@pytest.mark.xfail(reason="deliberate", strict=True)
def test_xfail():
    assert False

def test_runs():
    pass
''',
    "test_pass.py": '''
def test_passes():
    pass
''',
    "test_module_skip.py": '''
import pytest
pytest.importorskip("no_such_module_pauc_backend")

def test_never():
    pass
''',
}


def run_child(tmp_path, ci, workers, only=("test_kinds.py",)):
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    if ci:
        env["CI"] = "true"
    env["PYTHONPATH"] = str(REPO / "tests") + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"        # only xdist, and only when asked for
    xdist = ["-p", "xdist.plugin", "-n", str(workers)] if workers else []
    argv = [sys.executable, "-m", "pytest", "-p", "prerequisites", "-q", "-rA", "-p",
            "no:cacheprovider", *xdist, "-c", str(tmp_path / "pytest.ini"), "--rootdir",
            str(tmp_path), *[str(tmp_path / name) for name in only]]
    proc = subprocess.run(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=300)
    return proc.returncode, proc.stdout.decode(errors="replace")


@pytest.mark.parametrize("workers", [0, 2])
def test_under_ci_every_skip_fails_the_run(tmp_path, workers):
    status, out = run_child(tmp_path, True, workers)
    assert status == 1, out
    summary = out.strip().splitlines()[-1]
    assert " skipped" not in summary and "1 passed" in summary and "1 xfailed" in summary, out
    # the seven skipping tests of test_kinds.py fail (a skip in setup is an error)
    for name in ("helper", "need", "program", "module", "bare", "mark", "fixture"):
        assert ("test_kinds.py::test_%s" % name) in out, (name, out)
    assert "5 failed" in summary and "2 errors" in summary, out
    assert "CI=true: missing prerequisite: some shared data" in out
    assert "CI=true: a test may not skip (Skipped: fixture data is absent)" in out


def test_under_ci_a_module_skipped_at_collection_fails_the_run(tmp_path):
    """A skip at collection stays a skip in the summary (an error there would stop the whole
    run), and the run's status is non-zero."""
    status, out = run_child(tmp_path, True, 0, only=("test_module_skip.py", "test_pass.py"))
    assert status == 1, out
    assert "1 passed, 1 skipped" in out.strip().splitlines()[-1], out
    assert "CI=true: 1 test(s) skipped: failing the run" in out


def test_without_ci_the_same_suite_skips_and_passes(tmp_path):
    status, out = run_child(tmp_path, False, 0)
    assert status == 0, out
    summary = out.strip().splitlines()[-1]
    assert "1 passed" in summary and "7 skipped" in summary and "1 xfailed" in summary, out


@pytest.mark.parametrize("workers", [0, 2])
def test_without_ci_one_line_counts_the_skips_for_want_of_shared(tmp_path, workers):
    """Issue 42: a newcomer's green run skipped 17 % of the suite and said nothing about why.
    need()'s skip (data not beside the checkout) is counted; the other skips are not."""
    import prerequisites
    status, out = run_child(tmp_path, False, workers)
    assert status == 0, out
    notices = [l for l in out.splitlines() if "skipped for want of ../shared" in l]
    assert notices == [prerequisites.SHARED_NOTICE % (1, prerequisites.SHARED)], out
    lines = out.strip().splitlines()
    assert lines[-2] == notices[0], out             # after -rA's list, above the closing count
    assert "docs/testing.md" in notices[0]
    status, out = run_child(tmp_path, False, workers, only=("test_pass.py",))
    assert status == 0 and "for want of ../shared" not in out, out


def test_the_suite_itself_runs_under_these_hooks(request):
    """tests/conftest.py registers the hooks checked above for this very suite."""
    import conftest
    import prerequisites
    for name in ("pytest_runtest_makereport", "pytest_sessionfinish", "pytest_terminal_summary"):
        assert getattr(conftest, name) is getattr(prerequisites, name), name
    assert request.config.pluginmanager.is_registered(conftest)
