"""The console entry point of every tool: the one place that changes process-wide state.

A tool's ``main(argv)`` is a library call (tests run it inside pytest): it must leave signal
dispositions, the environment and the working directory as it found them. What a Kaldi binary
gets from being a separate process is set up here instead, before the tool module is imported:

- one BLAS thread for this process, as Kaldi's binaries run (recipes get parallelism from jobs;
  multi-threaded OpenBLAS spun on a loaded 2-core box: train-plda 19.8 s vs 2.5 s). The
  variables are set only if the user has not set them, and only for this process: commands we
  start in pipes (``"ark:ivector-compute-plda ... |"``) get the user's environment unchanged,
  through ``pauc_backend.process.child_environment``;
- SIGTERM and SIGHUP unwind like SIGINT, so half-written outputs (hidden ``.<name>.*.tmp``
  files) are removed, and the process then dies by the same signal, as its parent expects;
- an interrupt while the tool is still importing numpy exits 130 without a traceback;
- a reader that closes our standard output early gives one ERROR line (from ``Tool.main``)
  and no "Exception ignored" noise at exit.

Every console script and every ``bin/<tool>`` launcher calls ``main()``; the tool is named by
the program's file name (``copy-vectors`` runs ``pauc_backend.cli.tools.copy_vectors.main``).
"""

import importlib
import os
import signal
import sys

from pauc_backend import process

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_UNWINDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                           if hasattr(signal, name))


class Terminated(BaseException):
    """Raised by the SIGTERM/SIGHUP handler so ``finally`` blocks and output aborts run."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum, frame):
    raise Terminated(signum)


def _limit_blas_threads(environ):
    """Set each BLAS thread variable the user left unset to 1, for this process only."""
    for variable in BLAS_THREAD_VARIABLES:
        if variable not in environ:
            environ[variable] = "1"
            process.mark_private(variable)


def _tool_module(name):
    return "pauc_backend.cli.tools." + name.replace("-", "_")


def main(name=None, argv=None):
    """Run tool ``name`` (default: this program's file name) and exit with its status."""
    name = name or os.path.basename(sys.argv[0])
    for signum in _UNWINDING_SIGNALS:
        signal.signal(signum, _raise_terminated)
    try:
        _limit_blas_threads(os.environ)
        try:
            module = importlib.import_module(_tool_module(name))
        except ModuleNotFoundError as err:
            if err.name != _tool_module(name):
                raise
            sys.stderr.write("ERROR (%s[pauc-backend]:main()) no pauc-backend tool is called "
                             "'%s'\n" % (name, name))
            return _exit(255)
        code = module.main(argv)
    except KeyboardInterrupt:
        code = 130
    except Terminated as stop:
        _quiet_stdout()
        signal.signal(stop.signum, signal.SIG_DFL)
        os.kill(os.getpid(), stop.signum)
        code = 128 + stop.signum  # only reached if the signal is blocked
    return _exit(code)


def _quiet_stdout():
    """Flush stdout; if its reader has gone, point it at /dev/null so exit prints nothing."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError, OSError):
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass


def _exit(code):
    _quiet_stdout()
    sys.exit(code)
