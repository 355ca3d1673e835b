"""One writer of an output at a time: ``flock`` on a lock file ``.<name>.pauc-lock`` beside each
file or model directory a run writes, held from the open of the output to the end of its commit.

A second run that would write the same output stops at once with one ERROR that quotes what
the holder wrote into the lock file (pid, host, user, start, command: text of another process,
shown as such, never acted on). Kaldi has no such lock (two jobs writing one archive interleave
their bytes); we add it because our commit renames several files and two interleaved commits
could leave an archive of one run under the script of the other.

The lock also tells whether a commit journal's writer is alive, on any host: a live writer holds
the locks of all its targets, a killed one holds none (the kernel drops a dead process's locks).
Linux NFS clients pass ``flock`` to the server as a whole-file lock (NLM or NFSv4), so it holds
across hosts - except on mounts with ``nolock`` or ``local_lock=flock|all``, where each host sees
only its own locks: that is the documented limit (two hosts writing one output there are not
detected). Where a filesystem refuses locks altogether (ENOLCK, EOPNOTSUPP) the run goes on
unlocked after one WARNING.

Safe unlink on release: the holder removes the lock file before closing it, and whoever locks
the file checks afterwards that the name still names the inode it locked (else it retries), so
two runs never both hold "the" lock. The file is opened with O_NOFOLLOW|O_NONBLOCK and must be
a regular file: a symbolic link or a FIFO planted under the name is refused, never followed.
"""

import errno
import fcntl
import getpass
import os
import socket
import stat
import sys
import threading
import time

from pauc_backend.errors import KaldiError

LOCK_TAG = ".pauc-lock"
_RECORD_BYTES = 1024          # what a holder writes, and reads of another holder, at most
_SHOWN_CHARS = 500            # how much of another holder's record an ERROR quotes
_POLL = 0.01
_UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}

_STARTED = time.strftime("%Y-%m-%d %H:%M:%S %Z")   # about when this run started (import)
_held = {}                    # lock path -> [fd or None, count]
_mutex = threading.RLock()
_warned = set()


def _forget_in_child():
    """A forked child (a worker pool) holds no output: close its copies of the lock files, so
    a parent that dies releases its locks even while the child lingers."""
    for fd, _ in _held.values():
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
    _held.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def lock_path(target):
    """``.<name>.pauc-lock`` beside ``target`` (an absolute file or directory path)."""
    target = target.rstrip("/") or "/"
    return os.path.join(os.path.dirname(target), "." + os.path.basename(target) + LOCK_TAG)


def host_name():
    """This host's name as it appears in temp file names and lock records: letters, digits,
    '.', '-' only (at most 64 characters; "localhost" if there is none)."""
    name = "".join(c for c in socket.gethostname() if c.isascii() and (c.isalnum() or c in ".-"))
    return name[:64].strip(".-") or "localhost"


def holder_record():
    """What a holder writes into its lock file (and a journal): who, where, since when, what."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.geteuid())
    command = " ".join([os.path.basename(sys.argv[0] or "python")] + sys.argv[1:])
    record = "pid %d on host %s, user %s, started %s: %s\n" % (
        os.getpid(), host_name(), user, _STARTED, command)
    return record.encode("utf-8", "backslashreplace")[:_RECORD_BYTES]


def shown(data):
    """Untrusted bytes as one printable line: non-printables escaped, length bounded."""
    text = data.decode("utf-8", "replace").strip()
    text = "".join(c if c.isprintable() else "\\x%02x" % (ord(c) & 0xFF) for c in text)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


def _open(path):
    """(fd, writable) of the lock file ``path``, created if missing; never through a link."""
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o666), True
    except PermissionError:   # another user's lock file: locking needs only a descriptor
        return os.open(path, os.O_RDONLY | flags), False


def _refused(path, what):
    return KaldiError("Refused the lock file '%s': %s; remove it if no run is writing '%s'"
                      % (path, what, os.path.join(os.path.dirname(path),
                                                  os.path.basename(path)[1:-len(LOCK_TAG)])))


def _busy(target, path, fd, doing):
    try:
        record = shown(os.pread(fd, _RECORD_BYTES, 0))
    except OSError:
        record = ""
    said = ('its lock file \'%s\' says (text written by that run, unverified): "%s"'
            % (path, record)) if record else "its lock file '%s' is locked" % path
    return KaldiError("Cannot %s '%s': another run is writing it; %s. Wait for that run to "
                      "end%s" % (doing, target, said, ", or write elsewhere" if doing == "write"
                                 else ""))


def _lock_one(target, deadline, doing):
    """Lock ``target``'s lock file; the fd, or None where the filesystem has no locks."""
    path = lock_path(target)
    while True:
        try:
            fd, writable = _open(path)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise _refused(path, "it is a symbolic link") from None
            if err.errno == errno.EISDIR:
                raise _refused(path, "it is not a regular file") from None
            raise                 # the folder is missing or not writable: the caller says so
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise _refused(path, "it is not a regular file")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise _busy(target, path, fd, doing) from None
                os.close(fd)
                fd = None
                time.sleep(_POLL)
                continue
            except OSError as err:
                if err.errno in _UNSUPPORTED:
                    _warn_unlocked(target, err)
                    return None
                if err.errno == errno.EBADF and not writable:   # NFS: a write lock needs
                    raise _refused(path, "it belongs to user %d and you cannot write it, "
                                   "which a lock on this filesystem needs" % info.st_uid) \
                        from None
                raise KaldiError("Cannot lock '%s' (for '%s'): %s" % (
                    path, target, err.strerror or err)) from None
            try:
                now = os.lstat(path)
            except FileNotFoundError:
                now = None
            if now is None or (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
                os.close(fd)         # released and removed by its holder meanwhile: again
                fd = None
                continue
            if writable:   # padded to a fixed size: no truncation (ext4 flushes on it)
                os.pwrite(fd, holder_record().ljust(_RECORD_BYTES), 0)
            result, fd = fd, None
            return result
        finally:
            if fd is not None:
                os.close(fd)


def _warn_unlocked(target, err):
    folder = os.path.dirname(target)
    if folder in _warned:
        return
    _warned.add(folder)
    sys.stderr.write("WARNING (%s[pauc-backend]:lock():kaldi_io/output_locks.py) The filesystem "
                     "of '%s' has no file locks (%s): another run writing the same outputs at "
                     "the same time would not be detected\n" % (
                         os.path.basename(sys.argv[0] or "python"), folder,
                         err.strerror or err))
    sys.stderr.flush()


def acquire(targets, wait=0.0, doing="write"):
    """Lock every target in ``targets`` (absolute paths), in sorted order, waiting at most
    ``wait`` seconds in all for those held by another run (0: fail at once). A target this process
    already holds is counted again. Returns the list to give to ``release``; on a failure
    the locks taken so far are released and a KaldiError raised (OSError where a lock file
    cannot be created)."""
    taken = []
    deadline = time.monotonic() + wait
    with _mutex:
        try:
            for target in sorted(set(targets)):
                path = lock_path(target)
                entry = _held.get(path)
                if entry is None:
                    entry = _held[path] = [_lock_one(target, deadline, doing), 0]
                entry[1] += 1
                taken.append(path)
        except BaseException:
            release(taken)
            raise
    return taken


def holds(target):
    """True when this process holds the lock of ``target`` (False where the filesystem
    has no locks)."""
    entry = _held.get(lock_path(target))
    return entry is not None and entry[0] is not None


def release(taken):
    """Undo one ``acquire``: a lock no longer counted is removed (if its name still names it)
    and closed."""
    with _mutex:
        for path in taken:
            entry = _held.get(path)
            if entry is None:
                continue
            entry[1] -= 1
            if entry[1] > 0:
                continue
            del _held[path]
            fd = entry[0]
            if fd is None:
                continue
            try:
                info, now = os.fstat(fd), os.lstat(path)
                if (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino):
                    os.unlink(path)
            except OSError:
                pass
            os.close(fd)
