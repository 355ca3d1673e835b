"""The test suite's launcher of a tool with the commit's test hooks switched on (issue 36 item 5).

    python tests/hooked_tool.py <tool> [args...]

runs ``bin/<tool> args...`` in this process after setting ``kaldi_io.commit.test_hooks`` from
these variables (a real run reads none of them: ``bin/<tool>`` never goes through here):

- ``PAUC_BACKEND_TEST_SIGNAL_AFTER_RENAMES=N[:SIGNAME]``: after the N-th rename of a commit the
  process sends itself that signal (default SIGKILL);
- ``PAUC_BACKEND_TEST_SIGNAL_AFTER_STEPS=N[:SIGNAME]``: the same after the N-th change of any
  file (journals written, old script removed, renames, journals removed);
- ``PAUC_BACKEND_TEST_PAUSE_BEFORE_COMMIT=<path>``: a commit first creates ``<path>.paused``
  (holding the pid), then waits for ``<path>.go`` (at most 120 s).

``conftest.tool_argv`` uses it whenever a test gives one of these variables.
"""

import os
import runpy
import signal
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIABLES = ("PAUC_BACKEND_TEST_SIGNAL_AFTER_RENAMES", "PAUC_BACKEND_TEST_SIGNAL_AFTER_STEPS",
             "PAUC_BACKEND_TEST_PAUSE_BEFORE_COMMIT")


def _after(name):
    count, _, signame = os.environ.get(name, "").partition(":")
    return (int(count), getattr(signal, signame or "SIGKILL")) if count.isdigit() else (0, None)


class Hooks:
    """What ``kaldi_io.commit`` calls when ``commit.test_hooks`` is set."""

    def __init__(self):
        self.renames = _after(VARIABLES[0])
        self.steps = _after(VARIABLES[1])
        self.pause = os.environ.get(VARIABLES[2], "")

    def before_commit(self):
        if not self.pause:
            return
        with open(self.pause + ".paused", "w") as flag:
            flag.write("%d\n" % os.getpid())
        deadline = time.monotonic() + 120
        while not os.path.exists(self.pause + ".go") and time.monotonic() < deadline:
            time.sleep(0.01)

    def after_rename(self, count):
        if count == self.renames[0]:
            os.kill(os.getpid(), self.renames[1])

    def after_step(self, count):
        if count == self.steps[0]:
            os.kill(os.getpid(), self.steps[1])


def main():
    launcher = os.path.join(REPO, "bin", sys.argv[1])
    sys.argv = [launcher] + sys.argv[2:]
    sys.path.insert(0, REPO)
    from pauc_backend.cli.framework import entry
    entry._limit_blas_threads(os.environ)   # before numpy, as entry.main does
    from pauc_backend.kaldi_io import commit
    commit.test_hooks = Hooks()
    runpy.run_path(launcher, run_name="__main__")


if __name__ == "__main__":
    main()
