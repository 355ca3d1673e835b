"""Kaldi wxfilenames opened for writing (util/kaldi-io.cc's Output): files, ``-`` and
``| cmd``, and the checks a tool makes on its outputs before any work.

A plain file is locked (``output_locks``) and written to a temporary file beside it, put in
place on success (``commit``), so a failure never leaves a half-written output behind;
special files (``/dev/null``, FIFOs) are written in place; an output pipe's exit status is
checked when it is closed. The names are classified by ``streams.classify_wxfilename``.
"""

import contextlib
import errno
import os
import subprocess
import sys

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import output_locks
from pauc_backend.kaldi_io.commit import (claim_outputs, clean_stale_outputs, commit_outputs,
                                          create_temp_file, durable_outputs)
from pauc_backend.kaldi_io.streams import (CHUNK_BYTES, classify_wxfilename, exit_status_text,
                                           open_error)
from pauc_backend.process import child_environment

__all__ = ["check_writable", "check_output", "check_outputs", "OutputHandle", "open_outputs",
           "open_output"]


def check_writable(wx, directory=False):
    """Fail now, before any work, if the output ``wx`` (a wxfilename, or with ``directory`` a
    directory to be created or replaced) could not be written: its folder is missing, is not a
    folder, or is not writable; a file output that names an existing directory; another run
    is writing the file. Inside a tool's run a file output is then locked to the end of the
    run (``commit.claim_outputs``; a directory is locked while it is written, as fold jobs
    share theirs). Pipes and standard output are not checked (an output pipe's command runs
    only when it is opened). Kaldi finds these only when it opens the output, after the
    work; we look first, so a typo costs no EM iterations."""
    path = _checked_target(wx, directory)
    if path is not None and not directory:
        claim_outputs([path])


def _checked_target(wx, directory):
    """The real path of the file or directory output ``wx`` to lock once it is checked (None:
    a pipe, standard output or a special file, which are not locked)."""
    kind, what = classify_wxfilename(wx) if not directory else ("file", os.fspath(wx))
    if kind != "file":
        return None
    path = os.path.realpath(what)
    if not directory and os.path.isdir(path):
        raise KaldiError("Cannot write '%s': it is a directory" % wx)
    if directory and os.path.lexists(what) and not os.path.isdir(what):
        from pauc_backend.kaldi_io.regular_files import directory_problem
        raise KaldiError("Cannot write the directory '%s': it exists and %s" % (
            wx, directory_problem(what)))
    folder = os.path.dirname(path.rstrip("/")) or "."
    shown = os.path.dirname(os.fspath(what).rstrip("/")) or "."
    if not os.path.isdir(folder):
        what_is = "is not a directory" if os.path.exists(folder) else "does not exist"
        raise KaldiError("Cannot write '%s': the directory '%s' %s" % (wx, shown, what_is))
    if not os.access(folder, os.W_OK | os.X_OK):
        raise KaldiError("Cannot write '%s': the directory '%s' is not writable" % (wx, shown))
    if not directory and os.path.exists(path) and not os.path.isfile(path):
        return None                      # /dev/null, a FIFO: written in place, not locked
    return path


def check_output(specifier):
    """``check_writable`` for a wspecifier's archive and script files, or for a wxfilename."""
    check_outputs([specifier])


def check_outputs(specifiers):
    """``check_output`` for several outputs (wspecifiers or wxfilenames), all checked first,
    then claimed together in a fixed order (so of two runs that want some of the same outputs,
    one goes on)."""
    from pauc_backend.kaldi_io.specifiers import classify_wspecifier
    paths = []
    for specifier in specifiers:
        spec = classify_wspecifier(specifier)
        parts = [specifier] if spec is None else \
            [spec.ark, spec.scp if spec.kind == "ark,scp" else None]
        for part in parts:
            if part is not None:
                path = _checked_target(part, False)
                if path is not None:
                    paths.append(path)
    claim_outputs(paths)


class OutputHandle:
    """An open wxfilename: ``stream`` to write to, then ``commit()`` or ``abort()``.

    Plain files are locked (``output_locks``) and written to a temporary file in the same
    directory (``.<name>.pauc-<pid>@<host>-*.tmp``), put in place by ``commit()`` (now, or
    with every other output of the run when an ``output_group`` is open; see
    ``kaldi_io/commit.py``) and unlocked then; special files (``/dev/null``, FIFOs) are
    written in place; ``| cmd`` is checked on commit.
    """

    def __init__(self, wx):
        self.wx = wx = os.fspath(wx)
        self.kind, what = classify_wxfilename(wx)
        self._tmp = None
        self._proc = None
        self._lock = []
        self.in_place = False   # the target has other hard links: its inode is rewritten
        self.inode = None       # (device, inode) of the target that is rewritten in place
        self.journaled = False  # its commit's journal is complete: the next open finishes it
        self.script_of = None   # the archive handle this script's lines point into (ark,scp)
        self.bytes_written = 0
        if self.kind == "stdout":
            self.stream = sys.stdout.buffer
        elif self.kind == "pipe":
            try:
                self._proc = subprocess.Popen(what, shell=True, stdin=subprocess.PIPE,
                                              bufsize=CHUNK_BYTES, env=child_environment())
            except OSError as err:
                raise KaldiError("Failed to run output pipe '| %s': %s" % (what, err)) from None
            self.stream = self._proc.stdin
        else:
            self.path = os.path.realpath(what)
            if os.path.exists(self.path) and not os.path.isfile(self.path):
                try:
                    self.stream = open(self.path, "wb", buffering=CHUNK_BYTES)
                except OSError as err:
                    raise open_error(wx, err, "writing") from None
                return
            try:
                self._lock = output_locks.acquire([self.path])
            except OSError as err:
                if err.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EROFS):
                    raise open_error(wx, err, "writing") from None   # the folder's fault
                raise KaldiError("Failed to open '%s' for writing: cannot open its lock file "
                                 "'%s': %s" % (wx, err.filename, err.strerror or err)) \
                    from None
            try:
                self._open_temp(wx)
            except BaseException:
                self.release()
                raise

    def _open_temp(self, wx):
        """After the lock: finish or clean what a killed run left, open the temp file."""
        clean_stale_outputs(self.path)
        try:
            fd, self._tmp = create_temp_file(self.path)
        except OSError as err:
            raise open_error(wx, err, "writing") from None
        try:
            try:
                old = os.stat(self.path)
            except OSError:
                old = None
            if old is not None:   # the replaced file's permissions (and group) carry over
                self.in_place = old.st_nlink > 1
                self.inode = (old.st_dev, old.st_ino)
                try:
                    os.fchown(fd, -1, old.st_gid)
                except OSError:
                    pass
                os.fchmod(fd, old.st_mode & 0o7777)
            self.stream = os.fdopen(fd, "wb", buffering=CHUNK_BYTES)
        except BaseException:
            os.close(fd)
            os.unlink(self._tmp)
            self._tmp = None
            raise

    def write(self, data):
        """Write all of ``data``: a buffered pipe writer may accept only part of it when the
        reader has gone (and drop the rest silently), so loop until all is taken or EPIPE."""
        view = memoryview(data).cast("B")
        size = view.nbytes
        try:
            while view.nbytes:
                count = self.stream.write(view)
                if not count:
                    raise BrokenPipeError()
                view = view[count:]
        except BrokenPipeError:
            raise self._broken_pipe() from None
        except OSError as err:
            raise KaldiError("Failed to write %s: %s" % (self._name(), err.strerror or err)) \
                from None
        finally:
            view.release()
        self.bytes_written += size

    def flush(self):
        """Push buffered bytes to the file or pipe now (a streaming writer, after a chunk)."""
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise self._broken_pipe() from None
        except OSError as err:
            raise KaldiError("Failed to write %s: %s" % (self._name(), err.strerror or err)) \
                from None

    def _name(self):
        return "standard output" if self.kind == "stdout" else "'%s'" % self.wx

    def _broken_pipe(self):
        """The KaldiError for a reader that closed our output early (EPIPE; SIGPIPE ignored)."""
        if self.kind == "pipe":
            try:
                self.stream.close()
            except OSError:
                pass
            code = self._proc.wait()
            if code != 0:
                return KaldiError("Output pipe '%s' failed (%s)"
                                  % (self.wx, exit_status_text(code)))
            return KaldiError("Output pipe '%s' exited before reading all the output (broken "
                              "pipe): the output is incomplete" % self.wx)
        return KaldiError("Failed to write %s: its reader closed the pipe early (broken pipe): "
                          "the output is incomplete" % self._name())

    def prepare(self):
        """Finish everything but the rename: stdout flushed, a pipe's command checked, a temp
        file flushed (fsynced under PAUC_BACKEND_FSYNC) and closed. KaldiError (and the handle
        aborted) on failure."""
        if self.kind == "stdout":
            try:
                self.stream.flush()
            except BrokenPipeError:
                raise self._broken_pipe() from None
            return
        if self.kind == "pipe":
            try:
                self.stream.close()
            except BrokenPipeError:
                raise self._broken_pipe() from None
            code = self._proc.wait()
            if code != 0:
                raise KaldiError("Output pipe '%s' failed (%s)" % (self.wx, exit_status_text(code)))
            return
        try:
            if self.stream.closed:
                return
            self.stream.flush()
            if self._tmp is not None and durable_outputs():
                os.fsync(self.stream.fileno())
            self.stream.close()
        except OSError as err:
            self.abort()
            raise KaldiError("Failed to write '%s': %s" % (self.wx, err.strerror or err)) from None

    @property
    def pending(self):
        """True while a prepared temp file waits to be put in place."""
        return self._tmp is not None

    def commit(self):
        """``prepare()``, then put the file in place: now, or with the run's ``output_group``."""
        commit_outputs([self])

    def abort(self):
        if self.kind == "stdout":
            try:
                self.stream.flush()
            except OSError:
                pass
            return
        try:
            self.stream.close()
        except OSError:
            pass
        if self._proc is not None:
            self._proc.wait()
        if self._tmp is not None and not self.journaled:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
        self._tmp = None
        self.release()

    def release(self):
        """Unlock the output (after its commit or abort)."""
        lock, self._lock = self._lock, []
        output_locks.release(lock)


def open_outputs(wxs):
    """``OutputHandle``s of the wxfilenames ``wxs``, in that order, opened (so locked) in the
    order of their real paths, as ``check_outputs`` claims them; all or none."""
    def order(i):
        kind, what = classify_wxfilename(wxs[i])
        return os.path.realpath(what) if kind == "file" else ""
    handles = {}
    try:
        for i in sorted(range(len(wxs)), key=order):
            handles[i] = OutputHandle(wxs[i])
    except BaseException:
        for handle in handles.values():
            handle.abort()
        raise
    return [handles[i] for i in range(len(wxs))]


@contextlib.contextmanager
def open_output(wx):
    """A binary writable stream for a wxfilename; committed (renamed / pipe checked) on success."""
    handle = OutputHandle(wx)
    try:
        yield handle.stream
        handle.commit()
    except BaseException:  # a failure or a signal (SIGTERM unwinds too) before the rename
        handle.abort()
        raise
