"""Kaldi rxfilenames and wxfilenames (util/kaldi-io.cc): files, ``-``, pipes, ``file:offset``.

Reading loads the whole input (a plain file is memory-mapped, a pipe or stdin is read to EOF and
the pipe's exit status checked); writing goes to a temporary file renamed on success, so a failure
never leaves a half-written output behind.
"""

import contextlib
import errno
import io
import mmap
import os
import signal
import subprocess
import sys

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import output_locks
from pauc_backend.kaldi_io.commit import (claim_outputs, clean_stale_outputs, commit_outputs,
                                          create_temp_file, durable_outputs,
                                          finish_interrupted_commit)
from pauc_backend.process import child_environment

CHUNK_BYTES = 1 << 22  # the size of one read from a pipe or file
_CHUNK = CHUNK_BYTES


def _offset_split(name):
    """``file:123`` -> ("file", 123); None if the name does not end in ``:digits``."""
    if not name or not name[-1].isdigit():
        return None
    colon = name.rfind(":")
    if colon < 0 or not name[colon + 1:].isdigit() or not name[colon + 1:].isascii():
        return None
    return name[:colon], int(name[colon + 1:])


def _looks_like_specifier(name):
    if name[:1] not in ("a", "s") or ":" not in name:
        return False
    from pauc_backend.kaldi_io.specifiers import classify_rspecifier, classify_wspecifier
    return classify_rspecifier(name) is not None or classify_wspecifier(name) is not None


def classify_rxfilename(rx):
    """Kaldi's ClassifyRxfilename: ('stdin', None), ('pipe', cmd), ('offset', (path, n))
    or ('file', path)."""
    rx = "" if rx is None else os.fspath(rx)
    if rx == "" or rx == "-":
        return "stdin", None
    if "\0" in rx:  # the OS cannot take it; C++ Kaldi would silently cut the name there
        raise KaldiError("Invalid rxfilename %r: contains a NUL byte" % rx)
    if rx[0] == "|":
        raise KaldiError("Invalid rxfilename '%s': an output pipe ('| cmd') cannot be read" % rx)
    if rx[-1] == "|":
        return "pipe", rx[:-1]
    if rx[0].isspace() or rx[-1].isspace():
        raise KaldiError("Invalid rxfilename '%s': leading or trailing whitespace" % rx)
    if _looks_like_specifier(rx):
        raise KaldiError("Invalid rxfilename '%s': an rspecifier was given where a filename is "
                         "expected (scripting error?)" % rx)
    split = _offset_split(rx)
    if split is not None:
        if not split[0]:  # Kaldi opens the file "" and fails; never standard input
            raise KaldiError("Invalid rxfilename '%s': no file name before the offset" % rx)
        return "offset", split
    if "|" in rx:
        raise KaldiError("Invalid rxfilename '%s': pipe symbol in the wrong place (an input pipe "
                         "must end in '|')" % rx)
    return "file", rx


def classify_wxfilename(wx):
    """Kaldi's ClassifyWxfilename: ('stdout', None), ('pipe', cmd) or ('file', path)."""
    wx = "" if wx is None else os.fspath(wx)
    if wx == "" or wx == "-":
        return "stdout", None
    if "\0" in wx:
        raise KaldiError("Invalid wxfilename %r: contains a NUL byte" % wx)
    if wx[0] == "|":
        return "pipe", wx[1:]
    if wx[0].isspace() or wx[-1].isspace():
        raise KaldiError("Invalid wxfilename '%s': leading or trailing whitespace" % wx)
    if wx[-1] == "|":
        raise KaldiError("Invalid wxfilename '%s': an input pipe ('cmd |') cannot be written; "
                         "an output pipe is '| cmd'" % wx)
    if _looks_like_specifier(wx):
        raise KaldiError("Invalid wxfilename '%s': a wspecifier was given where a filename is "
                         "expected (scripting error?)" % wx)
    if _offset_split(wx) is not None:
        raise KaldiError("Invalid wxfilename '%s': a byte offset cannot be written to" % wx)
    if "|" in wx:
        raise KaldiError("Invalid wxfilename '%s': pipe symbol in the wrong place (an output "
                         "pipe must start with '|')" % wx)
    return "file", wx


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


def printable(name):
    """How a filename is named in messages (Kaldi's PrintableRxfilename)."""
    return "standard input" if name in ("", "-", None) else os.fspath(name)


def _status_text(code):
    if code < 0:
        try:
            return "killed by signal %s" % signal.Signals(-code).name
        except ValueError:
            return "killed by signal %d" % -code
    # The shell's own codes (POSIX, sh -c): the pipe never ran the intended program.
    if code == 127:
        return ("exit status 127: a command of the pipe was not found; check its name and "
                "that its folder is on PATH (a recipe's path.sh)")
    if code == 126:
        return "exit status 126: a command of the pipe is not executable (permissions?)"
    return "exit status %d" % code


def _open_failed(path, err, mode="reading"):
    """The KaldiError of a failed open (``mode``: "reading", "writing"), or read (None)."""
    doing = "read '%s'" % path if mode is None else "open '%s' for %s" % (path, mode)
    return KaldiError("Failed to %s: %s" % (doing, err.strerror or err))


# -- reading -------------------------------------------------------------------------------------

def _stdin():
    """Standard input as a binary stream; a closed one (``<&-``) reads as empty, as in Kaldi."""
    stdin = sys.stdin
    return io.BytesIO(b"") if stdin is None else stdin.buffer


def read_stream_fully(stream):
    """Read a pipe/stdin to EOF into one bytearray (no per-chunk join)."""
    raw = getattr(stream, "raw", None)
    fileno = None
    try:
        fileno = stream.fileno()
    except (AttributeError, OSError, ValueError):
        pass
    if fileno is None:
        return stream.read()
    # Whatever the buffered layer already holds, then read the descriptor directly.
    buf = bytearray()
    if raw is not None:
        pending = stream.peek(0) if hasattr(stream, "peek") else b""
        if pending:
            buf += stream.read(len(pending))
    size = len(buf)
    cap = max(_CHUNK, size * 2)
    buf.extend(bytes(cap - size))
    view = memoryview(buf)
    while True:
        if size == cap:
            view.release()
            cap *= 2
            buf.extend(bytes(cap - size))
            view = memoryview(buf)
        n = os.readv(fileno, [view[size:]])
        if n == 0:
            break
        size += n
    view.release()
    del buf[size:]
    return buf


def _map_file(path):
    finish_interrupted_commit(path)
    try:
        handle = open(path, "rb")
    except OSError as err:
        raise _open_failed(path, err) from None
    with handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            if size == 0 or not os.path.isfile(path):
                return _read_rest(handle, path)
            # MAP_POPULATE maps the whole page cache at once instead of faulting page by page.
            flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
            return mmap.mmap(handle.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
        except (OSError, ValueError):
            return _read_rest(handle, path)


def _read_rest(handle, path):
    """The rest of the open file ``handle`` (a failing read, EIO, names ``path``)."""
    try:
        return handle.read()
    except OSError as err:
        raise _open_failed(path, err, None) from None


def run_input_pipe(command, name=None):
    """Run ``command`` (``/bin/sh -c`` like popen), return all its stdout; error if it fails."""
    try:
        proc = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE,
                                env=child_environment())
    except OSError as err:
        raise KaldiError("Failed to run input pipe '%s |': %s" % (command.rstrip(), err)) from None
    try:
        data = read_stream_fully(proc.stdout)
    finally:
        proc.stdout.close()
        code = proc.wait()
    if code != 0:
        raise KaldiError("Input pipe '%s |' failed (%s)" % (command.rstrip(), _status_text(code)))
    return data


def read_all(rx):
    """The whole content of an rxfilename as ``(buffer, start)``: bytes, bytearray or mmap.

    ``start`` is the offset for ``file:123``, else 0. Pipes are read to EOF and their exit status
    checked; stdin is read to EOF.
    """
    kind, what = classify_rxfilename(rx)
    if kind == "stdin":
        return read_stream_fully(_stdin()), 0
    if kind == "pipe":
        return run_input_pipe(what), 0
    if kind == "offset":
        path, offset = what
        data = _map_file(path)
        if offset > len(data):
            raise KaldiError("Failed to read '%s': offset %d is beyond the end of the file (%d "
                             "bytes)" % (rx, offset, len(data)))
        return data, offset
    return _map_file(what), 0


def release(data):
    """Close what ``read_all`` returned, if it can be closed (an mmap): its pages go now, not at
    garbage collection. A view of it still exported (a numpy array on the map) keeps it open
    (BufferError), and the map then goes with the last view."""
    if hasattr(data, "close"):
        try:
            data.close()
        except BufferError:
            pass


def iter_line_chunks(rx, chunk_bytes=_CHUNK, count_lines=True):
    """An rxfilename read in pieces of about ``chunk_bytes`` that end at a newline (the last may
    not): yields ``(piece, number of its first line)`` (None without ``count_lines``). Memory
    does not grow with the input; a failing input pipe is an error once read to its end."""
    with open_input(rx) as stream:
        carry = b""
        line = 1 if count_lines else None
        while True:
            block = stream.read(chunk_bytes)
            if not block:
                break
            data = carry + block if carry else block
            cut = data.rfind(b"\n") + 1
            if cut == 0:                  # a line longer than a chunk: read on
                carry = data
                continue
            piece, carry = data[:cut], data[cut:]
            yield piece, line
            if count_lines:
                line += piece.count(b"\n")
        if carry:
            yield carry, line


class _PipeInput:
    def __init__(self, command):
        self.command = command
        try:
            self.proc = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE,
                                         env=child_environment())
        except OSError as err:
            raise KaldiError("Failed to run input pipe '%s |': %s" % (
                command.rstrip(), err)) from None

    def close(self):
        """Wait for the command; KaldiError if it failed (a SIGPIPE after we stopped reading
        early is not its fault)."""
        self.proc.stdout.close()
        code = self.proc.wait()
        if code not in (0, -signal.SIGPIPE, 128 + signal.SIGPIPE):
            raise KaldiError("Input pipe '%s |' failed (%s)" % (self.command.rstrip(),
                                                                 _status_text(code)))


@contextlib.contextmanager
def open_input(rx):
    """A binary readable stream for an rxfilename (``-``/``""`` stdin, ``cmd |``, ``file:123``)."""
    kind, what = classify_rxfilename(rx)
    if kind == "stdin":
        yield _stdin()
        return
    if kind == "pipe":
        pipe = _PipeInput(what)
        try:
            yield pipe.proc.stdout
        except Exception as err:
            # A failing command explains bad data better than the parse error it caused.
            pipe.close()
            raise err
        except BaseException:
            pipe.proc.stdout.close()
            pipe.proc.wait()
            raise
        pipe.close()
        return
    path, offset = what if kind == "offset" else (what, 0)
    finish_interrupted_commit(path)
    try:
        handle = open(path, "rb")
    except OSError as err:
        raise _open_failed(path, err) from None
    with handle:
        try:       # the readers' bodies only read: an OSError there is a failing read (EIO)
            if offset:
                handle.seek(offset)
            yield handle
        except OSError as err:
            raise _open_failed(path, err, None) from None


# -- writing -------------------------------------------------------------------------------------

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
                                              bufsize=_CHUNK, env=child_environment())
            except OSError as err:
                raise KaldiError("Failed to run output pipe '| %s': %s" % (what, err)) from None
            self.stream = self._proc.stdin
        else:
            self.path = os.path.realpath(what)
            if os.path.exists(self.path) and not os.path.isfile(self.path):
                try:
                    self.stream = open(self.path, "wb", buffering=_CHUNK)
                except OSError as err:
                    raise _open_failed(wx, err, "writing") from None
                return
            try:
                self._lock = output_locks.acquire([self.path])
            except OSError as err:
                if err.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EROFS):
                    raise _open_failed(wx, err, "writing") from None   # the folder's fault
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
            raise _open_failed(wx, err, "writing") from None
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
            self.stream = os.fdopen(fd, "wb", buffering=_CHUNK)
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
                return KaldiError("Output pipe '%s' failed (%s)" % (self.wx, _status_text(code)))
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
                raise KaldiError("Output pipe '%s' failed (%s)" % (self.wx, _status_text(code)))
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
