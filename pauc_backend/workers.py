"""Forked worker pools that end quietly (issue 17).

A worker forked from a tool inherits the tool's signal handlers (``cli.framework.entry`` makes SIGTERM
and SIGHUP raise, to unwind and remove half-written outputs). ``multiprocessing.Pool`` stops
its workers with SIGTERM -- at the end of every ``with Pool()`` block and when the parent is
interrupted -- so each worker printed a Python traceback. Here the workers exit on
SIGTERM/SIGHUP by SystemExit (silently; they own no output) and ignore SIGINT (a Ctrl-C
reaches the whole process group; the parent alone unwinds and stops them). The signals stay
blocked from before the fork until the worker has reset its handlers, so no signal can land
on an inherited handler in between. A pool that finishes is closed and joined, not
terminated.
"""

import contextlib
import multiprocessing
import signal

_HANDLED = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT")
                 if hasattr(signal, name))


def _exit_quietly(signum, frame):
    # SystemExit unwinds (releasing the pool queue's lock a worker may hold, which an
    # instant death would leave taken, hanging the parent's Pool.terminate) and
    # multiprocessing exits on it without a traceback.
    raise SystemExit(128 + signum)


def _quiet_worker(initializer=None, initargs=()):
    for signum in _HANDLED:
        signal.signal(signum, signal.SIG_IGN if signum == signal.SIGINT else _exit_quietly)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HANDLED)
    if initializer is not None:
        initializer(*initargs)


@contextlib.contextmanager
def fork_pool(processes, initializer=None, initargs=()):
    """A fork-context ``Pool`` of quiet workers; closed and joined on success, terminated
    (SIGTERM, which the workers take silently) on any exception or signal."""
    ctx = multiprocessing.get_context("fork")
    pool = None
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _HANDLED)
    try:
        pool = ctx.Pool(int(processes), initializer=_quiet_worker,
                        initargs=(initializer, initargs))
        signal.pthread_sigmask(signal.SIG_SETMASK, old)   # a pending signal lands here
        yield pool
        pool.close()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        if pool is not None:
            pool.terminate()
        raise
    finally:
        if pool is not None:
            pool.join()
