"""Kaldi rxfilenames and wxfilenames (util/kaldi-io.cc): files, ``-``, pipes, ``file:offset``.

Reading loads the whole input (a plain file is memory-mapped, a pipe or stdin is read to EOF and
the pipe's exit status checked); writing goes to a temporary file renamed on success, so a failure
never leaves a half-written output behind.
"""

import contextlib
import io
import json
import mmap
import os
import signal
import subprocess
import sys
import tempfile
import time

from pauc_backend.errors import KaldiError
from pauc_backend.process import child_environment

CHUNK_BYTES = 1 << 22  # the size of one read from a pipe or file
_CHUNK = CHUNK_BYTES


def _current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


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
    folder, or is not writable; a file output that names an existing directory. Pipes and
    standard output are not checked (an output pipe's command runs only when it is opened).
    Kaldi finds these only when it opens the output, after the work; we look first, so a
    typo costs no EM iterations."""
    kind, what = classify_wxfilename(wx) if not directory else ("file", os.fspath(wx))
    if kind != "file":
        return
    path = os.path.realpath(what)
    if not directory and os.path.isdir(path):
        raise KaldiError("Cannot write '%s': it is a directory" % wx)
    folder = os.path.dirname(path.rstrip("/")) or "."
    shown = os.path.dirname(os.fspath(what).rstrip("/")) or "."
    if not os.path.isdir(folder):
        what_is = "is not a directory" if os.path.exists(folder) else "does not exist"
        raise KaldiError("Cannot write '%s': the directory '%s' %s" % (wx, shown, what_is))
    if not os.access(folder, os.W_OK | os.X_OK):
        raise KaldiError("Cannot write '%s': the directory '%s' is not writable" % (wx, shown))


def check_output(specifier):
    """``check_writable`` for a wspecifier's archive and script files, or for a wxfilename."""
    from pauc_backend.kaldi_io.specifiers import classify_wspecifier
    spec = classify_wspecifier(specifier)
    if spec is None:
        check_writable(specifier)
        return
    for part in (spec.ark, spec.scp if spec.kind == "ark,scp" else None):
        if part is not None:
            check_writable(part)


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
    return KaldiError("Failed to open '%s' for %s: %s" % (path, mode, err.strerror or err))


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
                return handle.read()
            # MAP_POPULATE maps the whole page cache at once instead of faulting page by page.
            flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
            return mmap.mmap(handle.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
        except (OSError, ValueError):
            return handle.read()


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
        if offset:
            handle.seek(offset)
        yield handle


# -- writing -------------------------------------------------------------------------------------

class OutputHandle:
    """An open wxfilename: ``stream`` to write to, then ``commit()`` or ``abort()``.

    Plain files are written to a temporary file in the same directory (``.<name>.pauc-<pid>-*.tmp``)
    and put in place by ``commit()`` (now, or with every other output of the run when an
    ``output_group`` is open; see "Committing" below); special files (``/dev/null``, FIFOs) are
    written in place; ``| cmd`` is checked on commit.
    """

    def __init__(self, wx):
        self.wx = wx = os.fspath(wx)
        self.kind, what = classify_wxfilename(wx)
        self._tmp = None
        self._proc = None
        self.in_place = False   # the target has other hard links: its inode is rewritten
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
            clean_stale_outputs(self.path)
            directory = os.path.dirname(self.path) or "."
            try:
                fd, self._tmp = tempfile.mkstemp(
                    prefix=_tmp_prefix(self.path) + "%d-" % os.getpid(), suffix=".tmp",
                    dir=directory)
            except OSError as err:
                raise _open_failed(wx, err, "writing") from None
            mode = 0o666 & ~_UMASK
            try:
                old = os.stat(self.path)
            except OSError:
                old = None
            if old is not None:   # the replaced file's permissions (and group) carry over
                mode = old.st_mode & 0o7777
                self.in_place = old.st_nlink > 1
                try:
                    os.fchown(fd, -1, old.st_gid)
                except OSError:
                    pass
            os.fchmod(fd, mode)
            self.stream = os.fdopen(fd, "wb", buffering=_CHUNK)

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
        if self._tmp is not None:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None


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


# -- committing ----------------------------------------------------------------------------------
#
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


def _tmp_prefix(path):
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
    fd, tmp = tempfile.mkstemp(prefix=_tmp_prefix(path) + "%d-" % os.getpid(), suffix=".tmp",
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
    prefix = _tmp_prefix(path)
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
