"""Outputs of one run committed together (Kaldi's ``Output::Close`` plus what Kaldi lacks):
temp files beside their targets, renamed into place under a journal that the next open redoes
after a SIGKILL, so every output is new or every output is old. Used by ``streams.OutputHandle``
and ``tables`` (ark,scp pairs); the design is described below."""

import contextlib
import json
import os
import signal
import sys
import tempfile
import time

from pauc_backend.errors import KaldiError

_CHUNK = 1 << 22  # one copy step of an in-place rewrite (streams.CHUNK_BYTES)

# Every output of one run is replaced, or none is. Each file is written to a temp file beside
# it; a run's temp files are all written and closed before the first rename
# (``Tool.main`` opens an ``output_group``, so ``compute-vector-mean``'s mean table and its
# num_utts table commit together). When more than one file changes, a journal
# ``.<name>.pauc-commit`` listing every (temp, target) step is written (temp + fsync + rename)
# beside each target first; then an ``ark,scp`` pair's old script is removed, the archives and
# other files are renamed, the scripts last, and the journals removed. A SIGKILL at any moment
# therefore leaves either no journal (nothing renamed: the old files, plus temp files that the
# next writer removes with a WARNING) or a journal: every later open of one of the targets by
# our readers or writers first redoes the steps (renaming temps that are still there) and then
# removes the journals, so it sees all the new files. A reader that does not know journals (real
# Kaldi) can meet only a missing script in that window, an error, never an old script pointing
# into a new archive. SIGINT/SIGTERM/SIGHUP are blocked during the renames and act after them.
#
# A target with other hard links is rewritten in place (its inode keeps every name, as Kaldi's
# in-place write does) from the temp, under a journal, so a SIGKILL mid-copy is redone
# by the next open. The replaced file's mode and group carry over to the new file.
#
# None of this needs the data on disk: a killed process loses nothing the kernel holds. Against
# a power cut or an OS crash (which Kaldi does not guard against either) set
# PAUC_BACKEND_FSYNC=true: every temp file is then fsynced before the first rename, at the
# price of the disk's write time (0.5-1.5 s on a 414 MB archive here, 2026-11-25, against
# copy-vector's 1.9 s wall); the journals and directories are fsynced either way.


def durable_outputs():
    """True when PAUC_BACKEND_FSYNC is true/1: temp files are fsynced before the renames."""
    return os.environ.get("PAUC_BACKEND_FSYNC", "").strip().lower() in ("1", "true", "yes")

_TMP_TAG = ".pauc-"
_JOURNAL_TAG = ".pauc-commit"
_BLOCKED = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                 if hasattr(signal, name))
_group = None


def _test_hook(text):
    """``N`` or ``N:SIGNAME`` (tests only): after the N-th rename of a commit the process sends
    itself that signal (default SIGKILL). Read once, at import."""
    count, _, name = text.partition(":")
    return (int(count), getattr(signal, name or "SIGKILL")) if count.isdigit() else (0, None)


_SIGNAL_AFTER, _HOOK_SIGNAL = _test_hook(os.environ.get("PAUC_BACKEND_TEST_SIGNAL_AFTER_RENAMES",
                                                        ""))


def tmp_prefix(path):
    """The start of every temp file name of ``path``: ``.<name>.pauc-`` beside it."""
    return os.path.join(os.path.dirname(path), "." + os.path.basename(path) + _TMP_TAG)


def _journal_path(path):
    return os.path.join(os.path.dirname(path), "." + os.path.basename(path) + _JOURNAL_TAG)


def _warn(message):
    sys.stderr.write("WARNING (%s[pauc-backend]:commit():kaldi_io/streams.py) %s\n" % (
        os.path.basename(sys.argv[0] or "python"), message))
    sys.stderr.flush()


def _alive(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _fsync_directory(directory):
    try:
        fd = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class output_group:
    """Defer the renames of every file output committed inside the block to its end: all are
    put in place together on success, all temp files removed on an exception or a signal."""

    def __enter__(self):
        global _group
        self._outer, self.handles = _group, []
        _group = self
        return self

    def __exit__(self, exc_type, exc, tb):
        global _group
        _group = self._outer
        handles, self.handles = self.handles, []
        if exc_type is None:
            commit_outputs(handles)
        else:
            for handle in handles:
                handle.abort()


@contextlib.contextmanager
def committed_at_once():
    """Files written inside the block commit as each closes, not at the end of an enclosing
    ``output_group``: for files inside a temp directory that is itself renamed into place
    afterwards (model directories), which must be complete before that rename."""
    global _group
    outer, _group = _group, None
    try:
        yield
    finally:
        _group = outer


def commit_outputs(handles):
    """Prepare ``handles`` (temps closed, pipes checked) and put them in place together, or
    hand them to the open ``output_group``; on a failure every one is aborted."""
    try:
        for handle in handles:
            handle.prepare()
    except BaseException:
        for handle in handles:
            handle.abort()
        raise
    pending = [h for h in handles if h.pending]
    if _group is not None:
        _group.handles.extend(pending)
        return
    try:
        _install(pending)
    except OSError as err:
        for handle in pending:
            handle.abort()
        raise KaldiError("Failed to write '%s': %s" % (
            err.filename or pending[0].wx, err.strerror or err)) from None


def _install(handles):
    """Rename (or copy in place) prepared temps onto their targets, scripts last (see above)."""
    if not handles:
        return
    steps = sorted(handles, key=lambda h: h.script_of is not None)
    journal = len(steps) > 1 or steps[0].in_place
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
    try:
        journals = []
        if journal:
            record = json.dumps({"pid": os.getpid(), "steps": [
                [h._tmp, h.path, h.in_place] for h in steps]}).encode()
            for target in dict.fromkeys(h.path for h in steps):
                path = _journal_path(target)
                _write_small_file(path, record)
                journals.append(path)
            for directory in dict.fromkeys(os.path.dirname(p) for p in journals):
                _fsync_directory(directory)
            for handle in steps:   # no old script may point into a new archive
                if handle.script_of is not None and handle.script_of in steps \
                        and not handle.in_place:
                    try:
                        os.unlink(handle.path)
                    except FileNotFoundError:
                        pass
        for count, handle in enumerate(steps, 1):
            _put_in_place(handle._tmp, handle.path, handle.in_place)
            handle._tmp = None
            if count == _SIGNAL_AFTER:
                os.kill(os.getpid(), _HOOK_SIGNAL)
        for directory in dict.fromkeys(os.path.dirname(h.path) for h in steps):
            _fsync_directory(directory)
        for path in journals:
            os.unlink(path)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def _write_small_file(path, data):
    fd, tmp = tempfile.mkstemp(prefix=tmp_prefix(path) + "%d-" % os.getpid(), suffix=".tmp",
                               dir=os.path.dirname(path))
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _put_in_place(tmp, path, in_place):
    """One commit step; redoable: a step whose temp is gone was done."""
    if not in_place:
        os.replace(tmp, path)
        return
    with open(tmp, "rb") as source, open(path, "r+b") as target:
        target.truncate(0)
        while True:
            block = source.read(_CHUNK)
            if not block:
                break
            target.write(block)
        target.flush()
        os.fsync(target.fileno())
    os.unlink(tmp)


def finish_interrupted_commit(path, wait_seconds=60.0):
    """If a commit that replaces ``path`` was interrupted (its journal is still there), redo
    its remaining steps so ``path`` and its companions are all new. A commit whose process is
    alive is waited for."""
    journal = _journal_path(os.path.abspath(path))
    if not os.path.lexists(journal):
        real = _journal_path(os.path.realpath(path))
        if real == journal or not os.path.lexists(real):
            return
        journal = real
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            with open(journal, "rb") as stream:
                record = json.loads(stream.read().decode())
            pid, steps = int(record["pid"]), record["steps"]
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError):
            raise KaldiError("Unreadable commit journal '%s': remove it and rerun the command "
                             "that wrote '%s'" % (journal, path)) from None
        if not _alive(pid) or pid == os.getpid():
            break
        if time.monotonic() > deadline:
            raise KaldiError("Process %d has been committing '%s' for over %g s (journal '%s')"
                             % (pid, path, wait_seconds, journal))
        time.sleep(0.01)
    redone = []
    try:
        for tmp, target, in_place in steps:
            if os.path.lexists(tmp):
                _put_in_place(tmp, target, in_place)
                redone.append(target)
        for target in dict.fromkeys(t for _, t, _ in steps):
            try:
                os.unlink(_journal_path(target))
            except FileNotFoundError:
                pass
    except OSError as err:
        raise KaldiError("Cannot finish the interrupted commit of '%s' (journal '%s'): %s" % (
            path, journal, err.strerror or err)) from None
    _warn("Finished the commit of %s that process %d left half done (killed between its "
          "renames)" % (", ".join("'%s'" % t for _, t, _ in steps), pid))


def clean_stale_outputs(path):
    """Before writing ``path``: finish its interrupted commit, and remove (with a WARNING) the
    temp files of ours that a killed process left beside it."""
    finish_interrupted_commit(path)
    prefix = tmp_prefix(path)
    directory = os.path.dirname(path) or "."
    start = os.path.basename(prefix)
    try:
        names = [n for n in os.listdir(directory) if n.startswith(start) and n.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        pid = name[len(start):].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        stale = os.path.join(directory, name)
        try:
            os.unlink(stale)
        except OSError:
            continue
        _warn("Removed '%s', a temporary file left by process %s (killed before it "
              "committed its outputs)" % (stale, pid))
