"""Files a tool reads by name from a directory it was given (issue 36 item 3): the pieces of a
model directory of train-pauc-auto, the outputs of its fold jobs, a folder of .npy vectors.

Kaldi's rxfilenames may be pipes, devices or FIFOs (``streams``); a file found in a directory
may not. ``read_regular`` opens it with O_NONBLOCK (a FIFO cannot block the open), checks with
``fstat`` that what it opened (the target of a symbolic link: Kaldi users link model pieces and
whole directories) is a regular file of at most
``limit`` bytes (each caller states its cap), and reads it whole, never more than ``limit + 1``
bytes even if it grows meanwhile. Anything else is one KaldiError naming the file and what it
is: a FIFO, a device (``/dev/zero``, also behind a link), a directory, a socket, a file over
its cap, a failing read (EIO). Reading follows links safely: only the opened file's own type
and size decide, and nothing is written. ``parse_object`` and ``decode_text`` then give the Kaldi object or
the UTF-8 text of those bytes, with errors naming the file.
"""

import errno
import os
import stat

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import codec

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"),
          (stat.S_ISSOCK, "a socket"))
_CHUNK = 1 << 22


def size_text(size):
    """``size`` bytes as people read it (bytes, KiB, MiB, GiB)."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return "%.4g %s" % (size / (1 << shift), unit)
    return "%d bytes" % size


def directory_problem(path):
    """Why ``path`` is not a directory to read files from, as a phrase ("does not exist", "is a
    regular file, not a directory", "is a dangling symbolic link to X"), or None when it is
    one (a link to a directory is one)."""
    if os.path.isdir(path):
        return None
    if os.path.islink(path) and not os.path.exists(path):
        return "is a dangling symbolic link (to %s)" % os.readlink(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "does not exist"
    except OSError as err:
        return "cannot be examined (%s)" % (err.strerror or err)
    if stat.S_ISREG(info.st_mode):
        return "is a regular file, not a directory"
    kind = next((name for test, name in _KINDS if test(info.st_mode)), "a special file")
    return "is %s, not a directory" % kind


def check_directory(path, what):
    """KaldiError "<what> <path> <problem>" unless ``path`` is a directory
    (``directory_problem``)."""
    problem = directory_problem(path)
    if problem is not None:
        raise KaldiError("%s %s %s" % (what, path, problem))


def _not_regular(path, what, kind):
    return KaldiError("Cannot read %s (%s): it is %s, not a regular file" % (path, what, kind))


def open_regular(path, limit, what):
    """A descriptor of the regular file ``path`` (checked as described above; its size at most
    ``limit``). FileNotFoundError when it does not exist (the caller says what is missing);
    KaldiError for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as err:
        if err.errno == errno.ENXIO:
            raise _not_regular(path, what, "a socket") from None
        raise KaldiError("Cannot read %s (%s): %s" % (path, what, err.strerror or err)) \
            from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "special")
            raise _not_regular(path, what, kind)
        if info.st_size > limit:
            raise KaldiError("Cannot read %s (%s): it is %s, more than the %s such a file may "
                             "have" % (path, what, size_text(info.st_size), size_text(limit)))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path, limit, what):
    """The bytes of the regular file ``path`` of at most ``limit`` bytes (``what`` names it in
    messages: "the card of a model directory"); see ``open_regular``."""
    fd = open_regular(path, limit, what)
    try:
        blocks, size = [], 0
        while size <= limit:
            block = os.read(fd, min(_CHUNK, limit + 1 - size))
            if not block:
                break
            blocks.append(block)
            size += len(block)
    except OSError as err:
        raise KaldiError("Cannot read %s (%s): %s" % (path, what, err.strerror or err)) \
            from None
    finally:
        os.close(fd)
    if size > limit:
        raise KaldiError("Cannot read %s (%s): it grew past the %s such a file may have while "
                         "it was read" % (path, what, size_text(limit)))
    return b"".join(blocks)


def decode_text(data, path, what):
    """``data`` as UTF-8 text; KaldiError naming the file, line and byte otherwise."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise KaldiError("Cannot read %s (%s): line %d is not UTF-8 text (byte 0x%02x at "
                         "offset %d)" % (path, what, data.count(b"\n", 0, err.start) + 1,
                                         data[err.start], err.start)) from None


def parse_object(data, path, reader_fn):
    """The Kaldi object (binary or text, ``reader_fn(cursor, binary)``) held in ``data``, the
    bytes of ``path`` (ReadKaldiObject of a file read by ``read_regular``)."""
    try:
        return codec.object_parser(reader_fn)(codec.ByteCursor(data, 0, path))
    except MemoryError:
        raise KaldiError("Out of memory reading %s (the object it declares does not fit)"
                         % path) from None
