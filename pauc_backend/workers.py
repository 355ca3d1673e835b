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

A pool that is stopped (an error or a signal in the parent) is terminated with a bound (issue
36): ``Pool.terminate`` first takes the task queue's lock, which an idle worker holds while it
waits for a task. A worker that died holding it (SIGKILL, the OOM killer, or a SIGTERM landing
between its acquire and the ``with`` block that would release it) left the parent blocked
there for ever. After ``TERMINATE_WAIT`` seconds the workers are killed (SIGKILL: they own no
output) and the queue locks a dead worker may hold are released (a multiprocessing lock may be
released by any process), so the termination completes; a pool still not stopped after as
long again is left to the exiting process (its threads are daemons) rather than waited for.
This reaches into ``Pool``'s private ``_pool``, ``_inqueue`` and ``_outqueue`` (CPython 3.8 to
3.13 keep them); without them the pool is terminated as before.
"""

import contextlib
import multiprocessing
import os
import signal
import threading

TERMINATE_WAIT = 5.0   # seconds Pool.terminate may take before its workers are killed

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
        if pool is not None and not _terminate(pool):
            pool = None                   # not stopped: do not wait for it in join
        raise
    finally:
        if pool is not None:
            pool.join()


def _terminate(pool):
    """``pool.terminate()``, escalated (see the module doc); True once the pool has stopped."""
    stopper = threading.Thread(target=pool.terminate, name="pool-terminate", daemon=True)
    stopper.start()
    stopper.join(TERMINATE_WAIT)
    if not stopper.is_alive():
        return True
    for worker in list(getattr(pool, "_pool", ())):
        if worker.exitcode is None:
            try:
                os.kill(worker.pid, signal.SIGKILL)
            except OSError:
                pass
    for queue, name in ((getattr(pool, "_inqueue", None), "_rlock"),
                        (getattr(pool, "_outqueue", None), "_wlock")):
        lock = getattr(queue, name, None)   # taken by a dead worker: free it for terminate
        if lock is None:
            continue
        if lock.acquire(False):             # free: leave it so
            lock.release()
            continue
        try:
            lock.release()
        except ValueError:
            pass
    stopper.join(TERMINATE_WAIT)
    return not stopper.is_alive()
