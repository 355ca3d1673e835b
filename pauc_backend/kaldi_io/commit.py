"""Outputs of one run committed together (Kaldi's ``Output::Close`` plus what Kaldi lacks):
temp files beside their targets, renamed into place under a journal that the next open redoes
after a SIGKILL, so every output is new or every output is old; one writer of an output at a
time. Used by ``outputs.OutputHandle``, ``tables`` (ark,scp pairs) and ``persist`` (model
directories); the design is described below."""

import contextlib
import ctypes
import errno
import os
import shutil
import signal
import stat
import sys

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import journal, output_locks
from pauc_backend.kaldi_io.journal import tmp_prefix

_CHUNK = 1 << 22  # one copy step of an in-place rewrite (streams.CHUNK_BYTES)

# Every output of one run is replaced, or none is. Each file is written to a temp file beside
# it (``journal.temp_name``: created with mode 0666 so the umask and default ACLs apply, as to
# Kaldi's fopen; a replaced file's mode and group carry over); a run's temp files are all
# written and closed before the first rename (``Tool.main`` opens an ``output_group``, so
# ``compute-vector-mean``'s mean table and its num_utts table commit together). When more than
# one file changes, a journal ``.<name>.pauc-commit`` listing every (temp, target) step is
# written (temp + fsync + rename) beside each target first (the scripts' first); then an
# ``ark,scp`` pair's old script is removed, the archives and other files are renamed, the
# scripts last, and the journals removed (the scripts' last). A SIGKILL at any moment
# therefore leaves either an incomplete set of journals (cut while writing them: nothing
# renamed; or while removing them: all renamed), which the next open of a target with a
# journal beside it removes (a read through the script finds it), or the complete set: every
# later open of one of the targets by our readers or writers first redoes the steps (renaming
# temps that are still there) and then removes the journals, so it sees all the new files. A reader that does not know journals
# (real Kaldi) can meet only a missing script in that window, an error, never an old script
# pointing into a new archive. SIGINT/SIGTERM/SIGHUP are blocked during the renames and act
# after them.
#
# Why a journal: POSIX renames one name at a time. Without a record of the whole set, a kill
# between two renames leaves some outputs new and some old - for an ark,scp pair a missing
# script at best, for a run's separate outputs (a mean table and its num_utts) a silently
# inconsistent pair - and nothing can tell the next run which temps complete which commit.
# A journal is the smallest such record; ``journal`` trusts one only when it is provably ours.
#
# Locks (``output_locks``): every file or model directory a run writes is locked from its open
# (or from the start of a tool, which claims its outputs before reading any input) to the end
# of its commit; a second writer stops at once with one ERROR. The locks also tell whether a
# journal's writer is alive (on any host sharing the locks), and a stale temp file is removed
# only by the holder of its target's lock, only if it is a regular file of ours with our name
# pattern, and, when it names this host, only if its process is gone.
#
# A directory output (a model, a fold of train-pauc-auto) is assembled in a temp directory
# beside it (``make_temp_dir``, mode 0777 less the umask) and exchanged with the old one in one
# step (``replace_directory``), under its lock.
#
# A target with other hard links is rewritten in place (its inode keeps every name, as Kaldi's
# in-place write does) from the temp, under a journal, so a SIGKILL mid-copy is redone by the
# next open; the target is opened with O_NOFOLLOW and must still be the inode seen at open.
#
# None of this needs the data on disk: a killed process loses nothing the kernel holds. Against
# a power cut or an OS crash (which Kaldi does not guard against either) set
# PAUC_BACKEND_FSYNC=true: every temp file is then fsynced before the first rename, at the
# price of the disk's write time (0.5-1.5 s on a 414 MB archive here, 2026-11-25, against
# copy-vector's 1.9 s wall); the journals and directories are fsynced either way.

def durable_outputs():
    """True when PAUC_BACKEND_FSYNC is true/1: temp files are fsynced before the renames."""
    return os.environ.get("PAUC_BACKEND_FSYNC", "").strip().lower() in ("1", "true", "yes")


_BLOCKED = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                 if hasattr(signal, name))
_group = None


# The test suite's hooks into a commit (pause before it, a signal after the N-th rename or change
# of a file): None in every real run. Only the suite's launcher (tests/hooked_tool.py) sets it,
# in the process it starts, to an object with ``before_commit()``, ``after_rename(count)`` and
# ``after_step(count)``; nothing a real run inherits (environment, files) switches them on.
test_hooks = None


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


def create_temp_file(target, mode=0o666):
    """(fd, name) of a new temp file of ``target`` beside it, opened for writing; created with
    ``mode`` (the umask and a default ACL apply, as to Kaldi's outputs), never through a link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        name = journal.temp_name(target)
        try:
            return os.open(name, flags, mode), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temp file name", journal.tmp_prefix(target))


def make_temp_dir(target):
    """A new empty directory beside ``target`` (a directory output) to assemble it in, created
    with mode 0777 so the umask and a default ACL apply (``mkdtemp`` would force 0700)."""
    for _ in range(100):
        name = journal.temp_name(target.rstrip("/"))
        try:
            os.mkdir(name, 0o777)
            return name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temp directory name", target)


def _exchange(first, second):
    """Swap two names atomically (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second),
                 rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), second)


def replace_directory(tmp, path):
    """Put the complete directory ``tmp`` in place of the directory ``path`` (existing or
    not): one atomic exchange where the filesystem has it, else two renames; the old
    directory is then removed."""
    try:
        old = os.lstat(path)
    except FileNotFoundError:
        os.rename(tmp, path)
        return
    if stat.S_ISDIR(old.st_mode) and _exchange(tmp, path):
        shutil.rmtree(tmp, ignore_errors=True)
        return
    aside = journal.temp_name(path.rstrip("/"))
    os.rename(path, aside)
    os.rename(tmp, path)
    if stat.S_ISDIR(old.st_mode):
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.unlink(aside)


class output_group:
    """Defer the renames of every file output committed inside the block to its end: all are
    put in place together on success, all temp files removed on an exception or a signal.
    Outputs claimed inside the block (``claim_outputs``) stay locked to its end."""

    def __enter__(self):
        global _group
        self._outer, self.handles, self.claims = _group, [], []
        _group = self
        return self

    def __exit__(self, exc_type, exc, tb):
        global _group
        _group = self._outer
        handles, self.handles = self.handles, []
        try:
            if exc_type is None:
                commit_outputs(handles)
            else:
                for handle in handles:
                    handle.abort()
        finally:
            claims, self.claims = self.claims, []
            output_locks.release(claims)


def claim_outputs(targets):
    """Inside a tool's run (an ``output_group`` is open), lock the file or directory outputs
    ``targets`` (absolute paths) now, to the end of the run: a second run writing one of them
    stops before reading any input. Outside a group, nothing (each output locks as it opens)."""
    if _group is not None and targets:
        _group.claims.extend(_acquire(targets))


def _acquire(targets):
    try:
        return output_locks.acquire(targets)
    except OSError as err:
        raise KaldiError("Cannot create the lock file '%s' of an output: %s" % (
            err.filename, err.strerror or err)) from None


@contextlib.contextmanager
def claimed(targets):
    """Hold the locks of ``targets`` (paths; a model directory) for the block; a target
    whose folder does not exist is left to fail when it is written."""
    paths = [os.path.realpath(t) for t in targets]
    held = _acquire([p for p in paths if os.path.isdir(os.path.dirname(p))])
    try:
        yield
    finally:
        output_locks.release(held)


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
        cut = any(h.journaled for h in pending)
        raise KaldiError("Failed to write '%s': %s%s" % (
            err.filename or pending[0].wx, err.strerror or err,
            " (the commit is half done: the next read or write of '%s' finishes it)"
            % pending[0].wx if cut else "")) from None
    except BaseException:   # a signal held during the renames, acting now: all were done
        for handle in pending:
            handle.abort()
        raise
    finally:
        for handle in handles:
            handle.release()


class _Steps:
    """Counts a commit's changes of files for the test hooks."""

    def __init__(self):
        self.count = 0

    def __call__(self):
        self.count += 1
        if test_hooks is not None:
            test_hooks.after_step(self.count)


def _install(handles):
    """Rename (or copy in place) prepared temps onto their targets, scripts last (see above)."""
    if not handles:
        return
    steps = sorted(handles, key=lambda h: h.script_of is not None)
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
    try:
        if test_hooks is not None:
            test_hooks.before_commit()
        step = _Steps()
        journals = []
        if len(steps) > 1 or steps[0].in_place:
            journals = journal.write_set([
                (h._tmp, h.path, h.inode if h.in_place else None,
                 h.script_of is not None and h.script_of in steps) for h in steps], step)
            for handle in steps:
                handle.journaled = True
            for directory in dict.fromkeys(os.path.dirname(p) for p in journals):
                _fsync_directory(directory)
            for handle in steps:   # no old script may point into a new archive
                if handle.script_of is not None and handle.script_of in steps \
                        and not handle.in_place:
                    try:
                        os.unlink(handle.path)
                    except FileNotFoundError:
                        pass
                    step()
        for count, handle in enumerate(steps, 1):
            _put_in_place(handle._tmp, handle.path, handle.inode if handle.in_place else None)
            handle._tmp = None
            if test_hooks is not None:
                test_hooks.after_rename(count)
            step()
        for directory in dict.fromkeys(os.path.dirname(h.path) for h in steps):
            _fsync_directory(directory)
        journal.remove(journals[::-1], step)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def _put_in_place(tmp, path, inode):
    """One commit step; redoable: a step whose temp is gone was done. ``inode``: (device,
    inode) of a target rewritten in place (it has other hard links), else None: renamed."""
    if inode is None:
        os.replace(tmp, path)
        return
    flags = os.O_NOFOLLOW | os.O_CLOEXEC
    source = os.open(tmp, os.O_RDONLY | flags)
    try:
        target = os.open(path, os.O_WRONLY | flags)
        try:
            now = os.fstat(target)
            if (now.st_dev, now.st_ino) != tuple(inode):
                raise OSError(errno.ESTALE, "it was replaced by another file while the run "
                              "wrote it", path)
            os.ftruncate(target, 0)
            while True:
                block = os.read(source, _CHUNK)
                if not block:
                    break
                view = memoryview(block)
                while view:
                    view = view[os.write(target, view):]
            os.fsync(target)
        finally:
            os.close(target)
    finally:
        os.close(source)
    os.unlink(tmp)


def finish_interrupted_commit(path):
    """If a commit that replaces ``path`` was interrupted (its journal is still there), redo
    its remaining steps so ``path`` and its companions are all new (``journal``); the journal
    of a run that is still committing is waited for, a bounded time."""
    journal.finish_interrupted_commit(path, _put_in_place, _fsync_directory)


def clean_stale_outputs(path):
    """Before writing ``path`` (whose lock this process holds): finish its interrupted commit,
    and remove (with a WARNING) the temp files of ours that a killed run left beside it (its
    own and its journal's)."""
    finish_interrupted_commit(path)
    locked = output_locks.holds(path)
    directory = os.path.dirname(path) or "."
    starts = [os.path.basename(tmp_prefix(p)) for p in (path, journal.journal_path(path))]
    here = output_locks.host_name()
    try:
        names = [entry.name for entry in os.scandir(directory)
                 if entry.name.startswith(tuple(starts)) and entry.name.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        start = starts[0] if name.startswith(starts[0]) else starts[1]
        owner = _stale_owner(name[len(start):], here, locked)
        if owner is None:
            continue
        stale = os.path.join(directory, name)
        try:
            info = os.lstat(stale)
            if not (stat.S_ISREG(info.st_mode) and journal.ours(info) and info.st_nlink == 1):
                continue
            os.unlink(stale)
        except OSError:
            continue
        _warn("Removed '%s', a temporary file left by %s (killed before it committed its "
              "outputs)" % (stale, owner))


def remove_stale_temp_dirs(target):
    """After the directory output ``target`` (a model directory, a fold output of
    train-pauc-auto) is in place, while this process holds its lock: remove, with a WARNING,
    the temp directories that killed writers of it left beside it. Removed is only what is
    provably ours and dead: a directory (``lstat``: not a link) owned by our effective user,
    whose name is exactly a temp name of ``target`` (``.<name>.pauc-<pid>@<host>-<16 hex>.tmp``,
    ``journal.is_own_temp``), of a process of this host that is not alive, while we hold the
    target's lock (which its writer held). Whatever it held (a half-written directory, a
    complete one never renamed in, the old one set aside by ``replace_directory``'s fallback)
    is superseded by ``target`` now. Another host's are left (its process cannot be asked, and
    on mounts whose locks are per host the lock proves nothing); so is anything else."""
    directory = os.path.dirname(target) or "."
    if not output_locks.holds(os.path.join(os.path.realpath(directory),
                                           os.path.basename(target))):
        return
    start = os.path.basename(tmp_prefix(target))
    here = output_locks.host_name()
    try:
        names = [entry.name for entry in os.scandir(directory) if entry.name.startswith(start)]
    except OSError:
        return
    for name in names:
        stale = os.path.join(directory, name)
        if not journal.is_own_temp(stale, target):
            continue
        pid, _, rest = name[len(start):].partition("@")
        if rest.rsplit("-", 1)[0] != here or _alive(int(pid)):
            continue
        try:
            info = os.lstat(stale)
            if not (stat.S_ISDIR(info.st_mode) and journal.ours(info)):
                continue
            shutil.rmtree(stale)      # fd-based on Linux: links inside are not followed
        except OSError:
            continue
        _warn("Removed '%s', a temporary directory left by process %s (killed before it "
              "committed its output)" % (stale, pid))


def _stale_owner(rest, here, locked):
    """Who left the temp file whose name ends in ``rest`` (``<pid>@<host>-<x>.tmp``, or
    ``<pid>-<x>.tmp`` of older versions, of this host), if it is stale; else None. With the
    target's lock held (``locked``) no writer that locks is alive on any host sharing the
    locks; a process of this host is still asked (a run of an older version did not lock).
    Without the lock (a filesystem without locks) another host's temp files are kept."""
    pid, at, tail = rest.partition("@")
    host = here
    if at:
        host, dash, _ = tail.rpartition("-")
        if not dash or not host:
            return None
    else:
        pid = rest.split("-", 1)[0]
    if not pid.isdigit() or not 0 < int(pid) < 1 << 31:
        return None
    if host == here:
        return None if _alive(int(pid)) else "process %s" % pid
    if not locked:
        return None
    return "process %s on host %s" % (pid, output_locks.shown(host.encode()))


def _warn(message):
    sys.stderr.write("WARNING (%s[pauc-backend]:commit():kaldi_io/commit.py) %s\n" % (
        os.path.basename(sys.argv[0] or "python"), message))
    sys.stderr.flush()
