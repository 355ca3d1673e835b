"""The commit journal: what lets the next open finish a commit that a SIGKILL cut between its
renames (``commit._install`` writes it; ``finish_interrupted_commit`` redoes it).

A journal is trusted only when it is provably ours, because any directory may be shared with
other users and a journal says which files to rename onto which: it is redone only when

- it and every temp file it names are regular files (``lstat``; opened with O_NOFOLLOW), owned
  by this process's effective user, with one link, the journal not writable by group or others;
- every step renames the target's own temp file (``.<name>.pauc-<pid>@<host>-<16 hex>.tmp``,
  in the target's own directory) onto that target, and the journal found beside a file lists
  that file as a target;
- the journal beside EVERY target of the set holds the same bytes (a file planted in one
  directory cannot name steps elsewhere); a journal there that fails the checks above is
  refused too (it could hide a member of a complete set);
- no run holds the targets' locks (``output_locks``: a live writer holds all of them, on any
  host that shares the locks), waited for at most ``COMMIT_WAIT`` seconds;
- a step that rewrites its target in place (a target with other hard links: its inode is
  copied into, not renamed over) is redone only by a run that writes that target (it held the
  target's lock before it looked at the journal): such a step writes through a name into an
  inode that may live in any directory, so a journal found beside a table must not steer a
  read, or a write of another file, into it (issue 36). A read, or a writer of only the other
  targets, is refused and leaves the whole set for the rerun of the killed run.

Anything else is refused with one ERROR that names the journal and what is wrong, and nothing
is touched. A set with a journal missing beside some target is a commit cut while its
journals were being written (nothing renamed yet) or removed (everything renamed): its
journals are removed and nothing is renamed.
"""

import json
import os
import re
import secrets
import stat
import sys

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import output_locks

JOURNAL_TAG = ".pauc-commit"
TMP_TAG = ".pauc-"
COMMIT_WAIT = 10.0        # seconds to wait for a live writer's renames (they take milliseconds)
_FORMAT = "pauc-backend commit journal 2"
_MAX_BYTES = 1 << 20
_MAX_STEPS = 10000
_OUR_TEMP = re.compile(r"[0-9]{1,10}@[A-Za-z0-9.-]{1,64}-[0-9a-f]{16}\.tmp\Z")

effective_uid = os.geteuid   # whose files are ours (tests give another uid, without root)


def journal_path(target):
    """``.<name>.pauc-commit`` beside ``target``."""
    return os.path.join(os.path.dirname(target), "." + os.path.basename(target) + JOURNAL_TAG)


def tmp_prefix(path):
    """The start of every temp file name of ``path``: ``.<name>.pauc-`` beside it."""
    return os.path.join(os.path.dirname(path), "." + os.path.basename(path) + TMP_TAG)


def temp_name(path):
    """A new temp file name of ``path``: ``.<name>.pauc-<pid>@<host>-<16 hex>.tmp`` beside it
    (the host keeps another host's temp files apart from this host's processes)."""
    return tmp_prefix(path) + "%d@%s-%s.tmp" % (os.getpid(), output_locks.host_name(),
                                                 secrets.token_hex(8))


def is_own_temp(tmp, target):
    """True when ``tmp`` is a temp file name that ``temp_name(target)`` could give."""
    prefix = tmp_prefix(target)
    return tmp.startswith(prefix) and _OUR_TEMP.match(tmp[len(prefix):]) is not None


def ours(info):
    """True when the file of ``info`` (an ``os.stat_result``) belongs to this process's
    effective user."""
    return info.st_uid == effective_uid()


class _Refused(Exception):
    pass


def _refuse(journal, path, why):
    return KaldiError(
        "Refused the commit journal '%s' found beside '%s': %s. Nothing was changed. If no run "
        "of yours was killed while writing '%s', remove '%s'" % (journal, path, why, path,
                                                                 journal))


def _check_file(name, info, what):
    if stat.S_ISLNK(info.st_mode):
        raise _Refused("%s '%s' is a symbolic link" % (what, name))
    if not stat.S_ISREG(info.st_mode):
        raise _Refused("%s '%s' is not a regular file" % (what, name))
    if not ours(info):
        raise _Refused("%s '%s' belongs to user %d, not to you (user %d)" % (
            what, name, info.st_uid, effective_uid()))
    if info.st_nlink != 1:
        raise _Refused("%s '%s' has %d hard links" % (what, name, info.st_nlink))


def _read(journal):
    """The journal's bytes, or None if it is gone; _Refused if it cannot be ours."""
    try:
        info = os.lstat(journal)
    except FileNotFoundError:
        return None
    _check_file(journal, info, "the journal")
    if info.st_mode & 0o022:
        raise _Refused("it is writable by other users")
    if info.st_size > _MAX_BYTES:
        raise _Refused("it is %d bytes long" % info.st_size)
    try:
        fd = os.open(journal, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            raise _Refused("it was replaced while being read")
        return os.read(fd, _MAX_BYTES + 1)
    finally:
        os.close(fd)


def _steps(data):
    """The validated steps ``(tmp, target, inode or None, is_script)`` of a journal's bytes."""
    try:
        record = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):   # nested past Python's stack
        raise _Refused("it is not a journal this program writes (not JSON)") from None
    if not isinstance(record, dict) or record.get("format") != _FORMAT \
            or not isinstance(record.get("steps"), list) \
            or not 1 <= len(record["steps"]) <= _MAX_STEPS:
        raise _Refused("it is not a journal this program writes")
    steps, targets = [], set()
    for step in record["steps"]:
        if not (isinstance(step, list) and len(step) == 4 and all(isinstance(s, str)
                                                                 for s in step[:2])
                and isinstance(step[3], bool)):
            raise _Refused("a step is not [temp, target, inode, script]")
        tmp, target, inode, script = step
        if "\0" in target or not os.path.isabs(target) or os.path.normpath(target) != target \
                or target in targets:
            raise _Refused("the target '%s' is not an absolute, normal path named once"
                           % target)
        if not is_own_temp(tmp, target):
            raise _Refused("'%s' is not a temp file name of '%s' beside it" % (tmp, target))
        if inode is not None and not (isinstance(inode, list) and len(inode) == 2
                                      and all(type(n) is int for n in inode)):
            raise _Refused("a step's inode is not [device, inode]")
        targets.add(target)
        steps.append((tmp, target, tuple(inode) if inode else None, script))
    return record, steps


def write_set(steps, after_each):
    """Write the journal of ``steps`` beside each target (temp file, fsync, rename); call
    ``after_each()`` after each. Returns the journal paths; on a failure removes them."""
    record = json.dumps({"format": _FORMAT, "id": secrets.token_hex(16),
                         "holder": output_locks.holder_record().decode("utf-8", "replace"),
                         "steps": [[tmp, target, list(inode) if inode else None, script]
                                   for tmp, target, inode, script in steps]}).encode()
    written = []
    try:   # scripts' journals first (and removed last): a cut set is found through them
        for target in reversed(list(dict.fromkeys(target for _, target, _, _ in steps))):
            _write_small_file(journal_path(target), record)
            written.append(journal_path(target))
            after_each()
    except BaseException:
        remove(written)
        raise
    return written


def _write_small_file(path, data):
    tmp = temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644)
    try:
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def remove(paths, after_each=None):
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        if after_each is not None:
            after_each()


def find(path):
    """The journal beside ``path`` (as given, or with its links resolved), or None: the cheap
    test every open makes."""
    journal = journal_path(os.path.abspath(path))
    if os.path.lexists(journal):
        return journal
    real = journal_path(os.path.realpath(path))
    return real if real != journal and os.path.lexists(real) else None


def finish_interrupted_commit(path, put_in_place, fsync_directory):
    """If a commit that replaces ``path`` was cut (its journal is beside it), finish it under
    the locks of its targets: every step whose temp file is still there is redone with
    ``put_in_place(tmp, target, inode)``; then the journals are removed. KaldiError (nothing
    touched) for a journal that is not provably ours (see the module's docstring)."""
    journal = find(path)
    if journal is None:
        return
    want_all = False
    for _ in range(8):
        data, record, steps = _load(journal, path)
        if data is None:
            return
        targets = [target for _, target, _, _ in steps]
        writing = {t for t in targets if output_locks.holds(t)}   # before we lock any
        own = [t for t in targets if journal_path(t) == journal]
        if not own:
            raise _refuse(journal, path, "it names no step for the file it is beside")
        if not want_all and len(_members(journal, path, data, targets)) == len(targets):
            _todo(journal, path, steps, writing)  # refuse before touching even a lock file
        held = output_locks.acquire(targets if want_all else own, wait=COMMIT_WAIT,
                                    doing="open")
        try:
            again, record, steps = _load(journal, path)
            if again is None:
                return
            if again != data:
                continue
            members = _members(journal, path, data, targets)
            if len(members) < len(targets):          # cut while writing or removing them
                _remove_incomplete(journal, members)
                return
            if not want_all:
                want_all = True
                continue
            _redo(journal, path, _todo(journal, path, steps, writing), put_in_place)
            for directory in dict.fromkeys(os.path.dirname(t) for t in targets):
                fsync_directory(directory)
            remove([member for member, _ in members])
        finally:
            output_locks.release(held)
        _warn("Finished the commit of %s that a run left half done (killed between its "
              "renames; it was: %s)" % (", ".join("'%s'" % t for t in targets),
                                        output_locks.shown(str(record.get("holder", ""))
                                                           .encode())))
        return
    raise KaldiError("The commit journal '%s' beside '%s' keeps changing: is another run "
                     "writing '%s'?" % (journal, path, path))


def _load(journal, path):
    try:
        data = _read(journal)
        if data is None:
            return None, None, None
        record, steps = _steps(data)
        return data, record, steps
    except _Refused as why:
        raise _refuse(journal, path, str(why)) from None
    except OSError as err:
        raise _refuse(journal, path, "cannot read it (%s)" % (err.strerror or err)) from None


def _remove_incomplete(journal, members):
    """Remove the journals of an incomplete set: the one found (its target is locked) and
    those whose target's lock is free now."""
    for member, target in members:
        if member == journal or output_locks.holds(target):
            remove([member])
            continue
        try:
            held = output_locks.acquire([target], doing="open")
        except (KaldiError, OSError):
            continue
        try:
            remove([member])
        finally:
            output_locks.release(held)


def _members(journal, path, data, targets):
    """(journal, target) of every target whose journal holds exactly ``data``. A journal of
    ours with other bytes is another commit's (this set never got one there); one that cannot
    be checked (a link, another user's, unreadable) is refused: it might hide a member."""
    members = []
    for target in targets:
        other = journal_path(target)
        try:
            same = other == journal or _read(other) == data
        except _Refused as why:
            raise _refuse(journal, path, "beside '%s': %s" % (target, why)) from None
        except OSError as err:
            raise _refuse(journal, path, "cannot read '%s' (%s)" % (
                other, err.strerror or err)) from None
        if same:
            members.append((other, target))
    return members


def _todo(journal, path, steps, writing):
    """The steps whose temp file is still there, each checked (see the module's docstring);
    a step that rewrites its target in place is redone only by a run writing that target
    (``writing``: the targets whose locks this process held before it looked)."""
    todo = []
    try:
        for tmp, target, inode, script in steps:
            try:
                info = os.lstat(tmp)
            except FileNotFoundError:
                continue                                 # done before the kill
            _check_file(tmp, info, "the temp file")
            if inode is not None:
                now = os.lstat(target)
                if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != inode:
                    raise _Refused("'%s' is no longer the file the run rewrote in place"
                                   % target)
                if target not in writing:
                    raise _Refused(
                        "its step rewrites '%s' in place (a file with other hard links, which "
                        "may be anywhere), which only a run writing '%s' does: rerun the run "
                        "that was killed (it finishes this commit)" % (target, target))
            todo.append((tmp, target, inode, script))
    except _Refused as why:
        raise _refuse(journal, path, str(why)) from None
    except OSError as err:
        raise _refuse(journal, path, "%s: '%s'" % (err.strerror or err, err.filename)) \
            from None
    return todo


def _redo(journal, path, todo, put_in_place):
    """Do the checked steps ``todo`` (scripts unlinked first, as the writer does, so no old
    script points into a new archive)."""
    try:
        for tmp, target, inode, script in todo:
            if script and inode is None:
                try:
                    os.unlink(target)
                except FileNotFoundError:
                    pass
        for tmp, target, inode, _ in todo:
            try:
                put_in_place(tmp, target, inode)
            except FileNotFoundError:
                if os.path.lexists(tmp):
                    raise
    except OSError as err:
        raise KaldiError("Cannot finish the interrupted commit of '%s' (journal '%s'): %s" % (
            path, journal, err.strerror or err)) from None


def _warn(message):
    sys.stderr.write("WARNING (%s[pauc-backend]:commit():kaldi_io/journal.py) %s\n" % (
        os.path.basename(sys.argv[0] or "python"), message))
    sys.stderr.flush()
