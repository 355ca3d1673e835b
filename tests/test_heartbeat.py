"""pauc_backend.heartbeat: progress lines at least every interval, decided by an injected clock
(no timing assertion), from the watchdog during a step without notes, and after a fork."""

import os
import threading

from pauc_backend.heartbeat import Heartbeat, format_duration


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_line_is_due_once_the_interval_has_passed_since_the_last():
    clock, lines = FakeClock(), []
    hb = Heartbeat(lines.append, interval=30, clock=clock, watchdog=False)
    hb.note(where="fold 1 of 5, LDA 100", step="PLDA", fraction=0.0)
    assert lines == []
    clock.now += 29.9
    hb.note(where="fold 1 of 5, LDA 100", step="pauc_latent metric", iteration=300,
            num_iters=1000, fraction=0.25)
    assert lines == []
    clock.now += 0.1
    hb.note(where="fold 1 of 5, LDA 100", step="pauc_latent metric", iteration=301,
            num_iters=1000, fraction=0.25)
    assert lines == ["Progress: fold 1 of 5, LDA 100: pauc_latent metric, iteration 301 of "
                     "1000; elapsed 30s, estimated remaining 1m30s"]
    clock.now += 10
    hb.note(step="x", fraction=0.5)
    assert len(lines) == 1           # the next one 30 s after the last line, not the start
    hb.begin()                       # a new pass: elapsed restarts, the line stays due on time
    clock.now += 20
    hb.note(step="y", fraction=0.5)
    assert lines[-1] == "Progress: y; elapsed 20s, estimated remaining 20s"


def test_interval_zero_logs_every_note_and_an_unknown_fraction_says_so():
    lines = []
    hb = Heartbeat(lines.append, interval=0)
    hb.note(where="held-out trials of fold 1 of 3")
    hb.note(where="rating candidates", step="plda at LDA 100", fraction=0.5)
    assert len(lines) == 2
    assert lines[0].endswith("estimated remaining unknown")
    assert "Progress: rating candidates: plda at LDA 100; elapsed" in lines[1]
    hb.idle()
    assert hb.message() is None


def test_the_watchdog_repeats_the_status_during_a_step_without_notes():
    lines, seen = [], threading.Event()

    def log(line):
        lines.append(line)
        seen.set()

    hb = Heartbeat(log, interval=0.01)
    hb.note(where="fold 2 of 5, LDA 150", step="PLDA", fraction=0.4)
    try:
        assert seen.wait(60), "no line from the watchdog"
    finally:
        hb.close()
    assert lines[0].startswith("Progress: fold 2 of 5, LDA 150: PLDA; elapsed ")
    assert "estimated remaining " in lines[0]


def test_a_forked_child_logs_through_its_own_watchdog():
    read, write = os.pipe()
    hb = Heartbeat(lambda line: os.write(write, (line + "\n").encode()), interval=0.01)
    hb.note(where="parent", fraction=0.1)           # the parent's watchdog runs while forking
    pid = os.fork()
    if pid == 0:                                     # child: notes, waits for its watchdog
        try:
            hb.note(where="child", step="pauc_lnorm metric", iteration=5, num_iters=10,
                    fraction=0.5)
            threading.Event().wait(0.5)
        finally:
            os._exit(0)
    hb.close()
    _, status = os.waitpid(pid, 0)
    os.close(write)
    text = b""
    while True:
        chunk = os.read(read, 65536)
        if not chunk:
            break
        text += chunk
    os.close(read)
    assert status == 0
    child = [l for l in text.decode().splitlines() if "Progress: child" in l]
    assert child and all(l.startswith("Progress: ") for l in text.decode().splitlines())


def test_durations_read_like_a_clock():
    assert [format_duration(s) for s in (0, 12.4, 65, 3725)] == ["0s", "12s", "1m05s",
                                                                 "1h02m05s"]


def test_the_watchdog_thread_blocks_every_signal_so_signals_reach_the_main_thread():
    """A process-directed signal goes to any thread that does not block it; Python runs the
    handler only in the main thread, and only a signal given to the main thread interrupts
    its blocking wait. A pool worker whose SIGTERM went to its watchdog stayed blocked on
    its queue's lock for ever (the handler pending). The thread's mask, read from /proc."""
    import signal
    lines = []
    hb = Heartbeat(lines.append, interval=3600)
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    hb.note(where="x")                                    # starts the watchdog
    try:
        watchdog = [t for t in threading.enumerate() if t.name == "heartbeat"]
        assert len(watchdog) == 1
        with open("/proc/self/task/%d/status" % watchdog[0].native_id) as f:
            blocked = int(next(l for l in f if l.startswith("SigBlk:")).split()[1], 16)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            assert blocked & (1 << (signum - 1)), (signum, hex(blocked))
        # the thread that started it keeps its own mask
        assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
    finally:
        hb.close()
