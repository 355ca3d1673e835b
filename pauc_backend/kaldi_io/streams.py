"""Kaldi rxfilenames and wxfilenames (util/kaldi-io.cc): files, ``-``, pipes, ``file:offset``.

Both kinds of name are classified here, and inputs are read: the whole input at once (a plain
file is memory-mapped, a pipe or stdin is read to EOF and the pipe's exit status checked) or as
a stream. Outputs are opened and committed by ``outputs``.
"""

import contextlib
import io
import mmap
import os
import signal
import subprocess
import sys

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io.commit import finish_interrupted_commit
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


def printable(name):
    """How a filename is named in messages (Kaldi's PrintableRxfilename)."""
    return "standard input" if name in ("", "-", None) else os.fspath(name)


def exit_status_text(code):
    """How the exit status ``code`` of a pipe's command (negative: the signal that killed it)
    reads in a message, with the likely cause of the shell's own codes 126 and 127."""
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


def open_error(path, err, mode="reading"):
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
        raise open_error(path, err) from None
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
        raise open_error(path, err, None) from None


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
        raise KaldiError("Input pipe '%s |' failed (%s)" % (command.rstrip(),
                                                             exit_status_text(code)))
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
                                                                 exit_status_text(code)))


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
        raise open_error(path, err) from None
    with handle:
        try:       # the readers' bodies only read: an OSError there is a failing read (EIO)
            if offset:
                handle.seek(offset)
            yield handle
        except OSError as err:
            raise open_error(path, err, None) from None
