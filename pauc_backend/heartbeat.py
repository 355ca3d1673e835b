"""Progress lines during long training (issue 17): one at least every ``interval`` seconds.

The work says where it is with ``note(...)`` (where: "fold 2 of 5, LDA 100"; step: "pauc_latent
metric"; iteration i of n; fraction of the pass done) and a line such as

    Progress: fold 2 of 5, LDA 100: pauc_latent metric, iteration 400 of 1000; elapsed 1m05s,
    estimated remaining 3m10s

is logged when ``interval`` seconds have passed since the last one: at a note, or, during a
long step without notes (a PLDA, a large scoring), from a watchdog thread that repeats the
current status. ``interval = 0``: a line at every note and no thread (what tests use; no clock
decides anything). The remaining time is elapsed * (1 - f) / f for the fraction f of the pass
done, so it is an estimate that steadies as the pass goes on.

Forked workers: the lock that serialises the lines is held across ``fork`` (os.register_at_fork)
and renewed in the child, so a child never inherits it taken; the child starts its own
watchdog at its first note (threads do not survive a fork). The watchdog thread blocks
every signal: signals reach the main thread, where Python handles them. Each line is one ``log`` call, i.e.
one write of a whole short line to the (line-buffered) stream, so the lines of processes that
share a log file never interleave mid-line.
"""

import os
import signal
import threading
import time

_LOCK = threading.Lock()


def _renew_lock():
    global _LOCK
    _LOCK = threading.Lock()


def _before_fork():
    _LOCK.acquire()


def _after_fork_in_parent():
    _LOCK.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_renew_lock)


def format_duration(seconds):
    """12 -> '12s', 65 -> '1m05s', 3725 -> '1h02m05s'."""
    seconds = int(round(max(0.0, seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh%02dm%02ds" % (hours, minutes, secs)
    if minutes:
        return "%dm%02ds" % (minutes, secs)
    return "%ds" % secs


class Heartbeat:
    """Periodic progress lines through ``log`` (a callable taking one line); see the module doc.

    ``begin()`` starts a pass (elapsed time and the estimate count from there); ``note(...)``
    replaces the status (keyword fields: where, step, iteration, num_iters, fraction);
    ``clock`` and ``watchdog=False`` (notes alone decide, by that clock) are for tests;
    ``idle()`` silences the watchdog until the next note; ``close()`` stops it.
    """

    def __init__(self, log, interval=30.0, clock=time.monotonic, watchdog=True):
        if not interval >= 0:
            raise ValueError("progress interval must be >= 0 (got %r)" % (interval,))
        self.log = log
        self.interval = float(interval)
        self.clock = clock
        self.watchdog = watchdog
        self._fields = None
        self._start = self._last = clock()
        self._owner = None          # pid whose watchdog runs
        self._stop = None
        self.lines = 0

    def begin(self):
        """A new pass: elapsed time and the estimate count from now (the next line is still
        due ``interval`` after the last one)."""
        with _LOCK:
            self._start = self.clock()

    def note(self, **fields):
        """New status; logs it if a line is due (always with interval 0)."""
        with _LOCK:
            self._fields = fields
            if self.interval == 0 or self.clock() - self._last >= self.interval:
                self._emit()
        if self.watchdog and self.interval > 0 and self._owner != os.getpid():
            self._start_watchdog()

    def idle(self):
        with _LOCK:
            self._fields = None

    def close(self):
        with _LOCK:
            self._fields = None
            if self._stop is not None and self._owner == os.getpid():
                self._stop.set()
            self._owner = self._stop = None

    def message(self, now=None):
        """The progress line of the current status (None when idle)."""
        f = self._fields
        if f is None:
            return None
        now = self.clock() if now is None else now
        parts = [p for p in (f.get("where"), f.get("step")) if p]
        text = "Progress: " + ": ".join(parts) if parts else "Progress:"
        if f.get("iteration") is not None:
            text += ", iteration %d" % f["iteration"]
            if f.get("num_iters"):
                text += " of %d" % f["num_iters"]
        elapsed = now - self._start
        text += "; elapsed %s" % format_duration(elapsed)
        fraction = f.get("fraction")
        if fraction is not None and 0 < fraction <= 1:
            text += ", estimated remaining %s" % format_duration(
                elapsed * (1.0 - fraction) / fraction)
        else:
            text += ", estimated remaining unknown"
        return text

    def _emit(self):                     # with _LOCK held
        line = self.message()
        if line is not None:
            self._last = self.clock()
            self.lines += 1
            self.log(line)

    def _start_watchdog(self):
        stop = threading.Event()
        self._stop, self._owner = stop, os.getpid()
        thread = threading.Thread(target=self._watch, args=(stop,), daemon=True,
                                  name="heartbeat")
        # The thread blocks every signal (it inherits the mask it is started with), so the
        # kernel gives a signal to the main thread, the one where Python runs the handlers
        # and whose blocking waits a signal must interrupt. A SIGTERM that the kernel gave
        # to this thread left a pool worker blocked for ever on its queue's lock (its
        # handler pending, the main thread never woken) under a parent waiting for it.
        old = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        try:
            thread.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def _watch(self, stop):
        delay = self.interval
        while not stop.wait(max(0.01, delay)):
            with _LOCK:
                if stop.is_set():
                    return
                due = self._last + self.interval - self.clock()
                if due <= 0:
                    if self._fields is None:
                        due = self.interval     # idle: look again later
                    else:
                        self._emit()
                        due = self.interval
                delay = due
