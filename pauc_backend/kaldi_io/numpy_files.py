"""A NumPy file where a Kaldi table or object was expected: told apart by its magic bytes.

Embeddings from other toolkits often come as ``.npy`` (magic ``\\x93NUMPY``) or ``.npz`` (a
zip archive, ``PK\\x03\\x04``). Given where a Kaldi archive, script file or object goes
(``x.npy``, ``ark:x.npy``, ``scp:x.npy``, a script entry or a mean file naming one), Kaldi's
parsers would report an invalid key or line at byte 0; the readers ask ``numpy_problem``
first, so the ERROR says what the file is and that ``import-vectors`` turns it into a table.
"""

import os

from pauc_backend.errors import KaldiError

__all__ = ["numpy_kind", "numpy_problem", "check_not_numpy", "numpy_file_hint"]

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"


def numpy_kind(head):
    """"a NumPy .npy file", "a NumPy .npz file (a zip archive)" or None, from a file's first
    bytes."""
    head = bytes(head[:len(_NPY_MAGIC)])
    if head.startswith(_NPY_MAGIC):
        return "a NumPy .npy file"
    if head.startswith(_ZIP_MAGIC):
        return "a NumPy .npz file (a zip archive)"
    return None


def numpy_problem(head, name, expected):
    """The message for ``name`` (a file, or how a pipe or standard input is printed) whose
    first bytes are ``head`` when it is a NumPy file where ``expected`` ("a Kaldi archive", "a
    Kaldi script file", ...) was to be read; None otherwise."""
    kind = numpy_kind(head)
    if kind is None:
        return None
    keys = "--keys=<key list, one per line> " if kind.endswith(".npy file") else ""
    example = name if os.path.isfile(name) else "<the file>"
    return ("%s is %s, not %s: convert it to a Kaldi table with import-vectors first (e.g. "
            "import-vectors %s%s ark,scp:x.ark,x.scp), then read ark:x.ark or scp:x.scp"
            % (name, kind, expected, keys, example))


def check_not_numpy(data, offset, name, expected):
    """KaldiError (``numpy_problem``) when ``data``, read from the start of ``name``
    (``offset`` 0), begins like a NumPy file; nothing otherwise."""
    if offset == 0:
        problem = numpy_problem(data[:len(_NPY_MAGIC)], name, expected)
        if problem is not None:
            raise KaldiError(problem)


def numpy_file_hint(path, expected):
    """``numpy_problem`` of the file ``path`` (its first bytes read, if it is a regular file
    that can be read), or of its name when it ends in .npy or .npz; None otherwise."""
    head = b""
    try:
        if os.path.isfile(path):
            with open(path, "rb") as stream:
                head = stream.read(len(_NPY_MAGIC))
    except OSError:
        pass
    if not head:
        head = {".npy": _NPY_MAGIC, ".npz": _ZIP_MAGIC}.get(
            os.path.splitext(str(path))[1].lower(), b"")
    return numpy_problem(head, path, expected)
