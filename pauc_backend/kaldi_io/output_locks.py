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
two runs never both hold "the" lock.

Nothing found under the lock name is ever written (issue 36): a lock file is created with
O_CREAT|O_EXCL|O_NOFOLLOW, and only a file this process has just created that way gets the
holder record (its inode is new, so no other name can lead into it). A file already there is
opened with O_NOFOLLOW|O_NONBLOCK and checked with ``fstat``: a symbolic link, a FIFO, a
directory, a device, or a file with more than one link (a hard link to a file elsewhere) is
refused with one ERROR and never locked, read into or removed. A regular file of one link is
only locked and its record read:

- held by another process: that run is writing the output (its record, written by whoever
  created the file, is quoted as untrusted text);
- free: its creator is dead (the kernel drops a dead process's locks) or released it a moment
  ago. Holding the free lock, the run removes the name (if it still names that inode) and
  starts again by creating a fresh file of its own, with its own record. The record of a run
  killed before its release is therefore never shown as the holder's for longer than that
  take-over, and never overwritten in place. A free lock file of another user that cannot be
  removed (a sticky directory) is refused, naming its owner: it is not ours to take.
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


effective_uid = os.geteuid   # whose lock files are ours (tests give another uid, without root)
_MAX_RETRIES = 1000           # lock files that vanish or change under us, before giving up


def _open(path):
    """(fd, created) of the lock file ``path``: a new file of ours (O_EXCL), or the one there;
    never through a symbolic link. FileNotFoundError when the one there went meanwhile."""
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | flags, 0o666), True
    except FileExistsError:
        pass
    try:
        return os.open(path, os.O_RDWR | flags), False
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


def _same_file(path, info):
    """True when ``path`` still names the inode of ``info``."""
    try:
        now = os.lstat(path)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino)


def _check_found(path, info):
    """KaldiError unless the lock file found at ``path`` (``info``: its fstat) may be locked:
    a regular file with one link (0: removed meanwhile, the caller tries again)."""
    if not stat.S_ISREG(info.st_mode):
        raise _refused(path, "it is not a regular file")
    if info.st_nlink > 1:
        raise _refused(path, "it has %d hard links (a lock file has one; another name of it "
                             "would lead to a file elsewhere)" % info.st_nlink)


def _take_over(path, info):
    """Remove the free lock file ``path`` (its creator is gone; we hold its lock), so that a
    fresh one of ours replaces it. KaldiError for another user's that we cannot remove."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except PermissionError:
        if info.st_uid == effective_uid():
            raise
        raise _refused(path, "it belongs to user %d, whose run that wrote it has ended, and "
                             "you cannot remove it (ask them to)" % info.st_uid) from None


def _lock_one(target, deadline, doing):
    """Lock ``target``'s lock file; the fd, or None where the filesystem has no locks."""
    path = lock_path(target)
    changes = 0
    while changes < _MAX_RETRIES:
        changes += 1                  # a busy lock does not count (it waits for the deadline)
        try:
            fd, created = _open(path)
        except FileNotFoundError:
            if not os.path.isdir(os.path.dirname(path) or "."):
                raise                 # the folder is missing: the caller says so
            continue                  # released and removed by its holder meanwhile: again
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise _refused(path, "it is a symbolic link") from None
            if err.errno == errno.EISDIR:
                raise _refused(path, "it is not a regular file") from None
            raise                 # the folder is missing or not writable: the caller says so
        try:
            info = os.fstat(fd)
            if not created:
                _check_found(path, info)
                if info.st_nlink == 0:
                    continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise _busy(target, path, fd, doing) from None
                time.sleep(_POLL)
                changes -= 1
                continue
            except OSError as err:
                if err.errno in _UNSUPPORTED:
                    _warn_unlocked(target, err)
                    if created:       # nothing to tell anyone: leave no file behind
                        _take_over(path, info)
                    return None
                if err.errno == errno.EBADF and not created:  # NFS: a write lock needs
                    raise _refused(path, "it belongs to user %d and you cannot write it, "
                                   "which a lock on this filesystem needs" % info.st_uid) \
                        from None
                raise KaldiError("Cannot lock '%s' (for '%s'): %s" % (
                    path, target, err.strerror or err)) from None
            if not _same_file(path, info):
                continue             # released and removed by its holder meanwhile: again
            if not created:          # free, so its creator is gone: replace it by ours
                _take_over(path, info)
                continue
            # our own new inode: padded to a fixed size, no truncation (ext4 flushes on it)
            os.pwrite(fd, holder_record().ljust(_RECORD_BYTES), 0)
            result, fd = fd, None
            return result
        finally:
            if fd is not None:
                os.close(fd)
    raise KaldiError("Cannot lock '%s' (for '%s'): the lock file keeps changing; is something "
                     "removing it?" % (path, target))


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
