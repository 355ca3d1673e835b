"""Embeddings written by other toolkits, read as ``(keys, float32 matrix)`` for a Kaldi table.

Formats (what neural toolkits such as WeSpeaker, SpeechBrain or 3D-Speaker dump):

* ``npy``: one 2-D array, a vector per row; the keys come from a list (one per line).
* ``npz``: either a 2-D array and a 1-D string array of keys (found by themselves when each is
  the only one of its kind, else named), or a 2-D array and a key list, or one 1-D array per
  key (``np.savez(f, **{utt: vector})``), the array names being the keys.
* ``npy-dir``: a folder of ``<key>.npy`` files, one vector each (3D-Speaker's layout); each
  must be a regular file of at most ``NPY_DIR_FILE_BYTES`` (``kaldi_io.regular_files``: a FIFO,
  a device or a symbolic link there is one ERROR naming it, never a wait or an endless read).
* ``text``: lines ``key v1 v2 ...`` without Kaldi's brackets.

Every failure is a KaldiError naming the file and the key, row or line. Vectors holding NaN
or Inf (also float64 values beyond float32's range) are refused: Kaldi's tools would carry
them silently into every score. An .npz is read member by member: two members of one name (which
numpy would silently reduce to one), a damaged or truncated archive and an array that does not
fit in memory are errors naming the file and array.

Text (key lists and text embeddings) is split as Kaldi splits lines: at newlines only, then at
ASCII whitespace (never at Unicode spaces); values are numbers as C's strtod reads them (no
``1_000``, no non-ASCII digits); a line is at most ``lines.MAX_LINE_BYTES`` (key lists) or
``lines.MAX_LIST_LINE_BYTES`` (text embeddings). A UTF-8 byte-order mark at the start of either
is skipped, and said so: other toolkits (and Windows editors) write one, and it is no part of a
key. Keys that are VoxCeleb paths (``id10270/x6uYqmx31kE/00001.wav``) become the utterance keys of
Kaldi's egs/voxceleb/v2, as ``convert-voxceleb-trials`` writes them in trials
(``id10270-x6uYqmx31kE-00001``), unless ``map_voxceleb=False``.
"""

import io
import os
import re
import zipfile
import zlib

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import lines as line_files
from pauc_backend.kaldi_io import streams
from pauc_backend.kaldi_io.holders import check_token
from pauc_backend.kaldi_io.regular_files import read_regular
from pauc_backend.voxceleb import utterance_key

FORMATS = ("auto", "npy", "npz", "npy-dir", "text")
_TEXT_BLOCK = 4096   # lines converted at once
# <...>/id<digits>/<recording>/<segment>[.<ext>]: a VoxCeleb1/2 utterance path
_VOXCELEB_PATH = re.compile(r"(?:^|.*[/\\])id[0-9]+[/\\][^/\\]+[/\\][^/\\]+\Z", re.S)


def guess_format(source):
    """The format ``auto`` stands for: a folder is npy-dir, else the file's extension decides
    (.npy, .npz; anything else, stdin and pipes are text)."""
    if os.path.isdir(source):
        return "npy-dir"
    lower = source.lower()
    for ext in ("npy", "npz"):
        if lower.endswith("." + ext):
            return ext
    return "text"


def _skip_bom(data, start, name, log):
    """``start`` past a UTF-8 byte-order mark (said in ``log``), else ``start``."""
    if bytes(data[start:start + 3]) != line_files.UTF8_BOM:
        return start
    if log is not None:
        log("Skipped the UTF-8 byte-order mark at the start of %s (it is no part of a key)"
            % streams.printable(name))
    return start + 3


def _decode_key(raw, number, name):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise KaldiError("Line %d of %s is not valid UTF-8 (byte %d of its key %r)" % (
            number, streams.printable(name), err.start, raw[:80])) from None


def read_key_list(rxfilename, log=None):
    """Keys, one a line (the first field, so a wav.scp or utt2spk in row order also serves)."""
    data, start = line_files.read_line_file(rxfilename, what="key list", bom_error=False)
    start = _skip_bom(data, start, rxfilename, log)
    lines = bytes(data[start:]).split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    keys = []
    for number, line in enumerate(lines, 1):
        fields = line.split(None, 1)          # C-locale whitespace, as Kaldi splits
        if not fields:
            raise KaldiError("Empty line %d in key list %s" % (number,
                                                               streams.printable(rxfilename)))
        keys.append(_decode_key(fields[0], number, rxfilename))
    return keys


def map_voxceleb_keys(keys, where, log=None):
    """``keys`` with VoxCeleb paths replaced by egs/voxceleb/v2 utterance keys (``utterance_key``,
    as convert-voxceleb-trials); unchanged when none is such a path. KaldiError naming both
    when only some are, as the table and the trials would then not match."""
    joined = "\n".join(keys)
    if "/" not in joined and "\\" not in joined:         # the usual keys: one C-level scan
        return keys
    mapped = [utterance_key(k) if _VOXCELEB_PATH.match(k) else None for k in keys]
    if all(m is None for m in mapped):
        return keys
    if None in mapped:
        row = mapped.index(None)
        first = next(i for i, m in enumerate(mapped) if m is not None)
        raise KaldiError("Key %r (%s) is not a VoxCeleb path but key %r (%s) is: either every "
                         "key is one (each then becomes its egs/voxceleb/v2 utterance key, as "
                         "convert-voxceleb-trials writes it in trials) or, with "
                         "--map-voxceleb-keys=false, every key is kept as it is" % (
                             keys[row], where(row), keys[first], where(first)))
    if log is not None:
        log("Keys of %s are VoxCeleb paths: written as egs/voxceleb/v2 utterance keys, as "
            "convert-voxceleb-trials writes them in trials (%s -> %s; --map-voxceleb-keys=false "
            "keeps the paths)" % (where(0).split(" of ", 1)[-1], keys[0], mapped[0]))
    return mapped


def _check_keys(keys, where):
    """Kaldi tokens, each once; ``where(i)`` names the place of key i in messages."""
    first = {}
    for row, key in enumerate(keys):
        try:
            check_token(key)
        except KaldiError:
            raise KaldiError("Invalid key %r (%s): keys must be non-empty, without ASCII "
                             "whitespace or control characters" % (key, where(row))) from None
        if key in first:
            raise KaldiError("Duplicate key %s (%s and %s)" % (key, where(first[key]),
                                                               where(row)))
        first[key] = row


def _as_vectors(array, name, ndim=2):
    """``array`` as float32 after checking its shape and type; KaldiError naming ``name``."""
    kind = array.dtype.kind
    if kind not in "fiu":
        raise KaldiError("%s holds %s values, not numbers" % (name, array.dtype))
    if array.ndim != ndim:
        raise KaldiError("%s has shape %s; expected %s" % (
            name, array.shape, "one vector per row (2-D)" if ndim == 2 else "one vector (1-D)"))
    if array.shape[-1] == 0:
        raise KaldiError("%s holds vectors of dimension 0" % name)
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(array, dtype=np.float32)


_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, ValueError, OSError)


NPY_DIR_FILE_BYTES = 1 << 24
"""The most bytes of one ``<key>.npy`` of a folder: one vector of up to 2 million doubles."""


def _load(source, what, data=None):
    """np.load of an rxfilename (or of ``data``, its bytes already read): a file is read in
    place, a pipe or stdin through memory. An .npz archive is checked for two members of one
    name."""
    kind, path = streams.classify_rxfilename(source)
    where = streams.printable(source)
    try:
        if data is not None:
            loaded = np.load(io.BytesIO(data), allow_pickle=False)
        elif kind == "file":
            loaded = np.load(path, allow_pickle=False)
        elif kind == "offset":
            data, start = streams.read_all(source)
            loaded = np.load(io.BytesIO(bytes(data[start:])), allow_pickle=False)
        else:
            loaded = np.load(io.BytesIO(_read_numpy_stream(source, what)), allow_pickle=False)
    except OSError as err:
        if isinstance(err, FileNotFoundError) or err.strerror:
            raise
        raise KaldiError("Cannot read %s as %s: %s" % (where, what, err)) from None
    except zipfile.BadZipFile as err:
        raise KaldiError("Cannot read %s as %s: %s (a truncated or damaged .npz?)" % (
            where, what, err)) from None
    except (ValueError, EOFError) as err:
        raise KaldiError("Cannot read %s as %s: %s" % (where, what, err)) from None
    except MemoryError:
        raise KaldiError("Out of memory reading %s as %s (the array it declares does not fit)"
                         % (where, what)) from None
    if isinstance(loaded, np.lib.npyio.NpzFile):
        _check_members(loaded, where)
    return loaded


def _read_numpy_stream(source, what):
    """The bytes of an .npy or .npz arriving on a pipe or stdin: an .npy up to the size its
    header declares (a writer that goes on is not waited for), an .npz to its end; anything else
    is an error after its first bytes (``/dev/zero`` behind a pipe is not read for ever)."""
    where = streams.printable(source)
    with streams.open_input(source) as stream:
        head = stream.read(1 << 16)
        if head.startswith(b"\x93NUMPY"):
            header = io.BytesIO(head)
            try:
                version = np.lib.format.read_magic(header)
                read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0) else
                               np.lib.format.read_array_header_2_0)
                shape, _, dtype = read_header(header)
            except (ValueError, EOFError) as err:
                raise KaldiError("Cannot read %s as %s: %s" % (where, what, err)) from None
            size = header.tell() + int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
            return head + stream.read(max(size - len(head), 0))
        if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
            return head + stream.read()
    raise KaldiError("Cannot read %s as %s: it starts with %r, neither an .npy (\\x93NUMPY) nor "
                     "an .npz (a zip archive)" % (where, what, head[:8]))


def _check_members(npz, where):
    """KaldiError if two members of ``npz`` give one array name (``x.npy`` twice, or ``x`` and
    ``x.npy``): numpy would return one of them and silently drop the other."""
    seen = {}
    for member, name in zip(npz.zip.namelist(), npz.files):
        if name in seen:
            npz.close()
            raise KaldiError("%s holds two arrays named '%s' (members '%s' and '%s' of the zip "
                             "archive): numpy would read one and silently drop the other; write "
                             "each array once (np.savez refuses duplicate names)" % (
                                 where, name, seen[name], member))
        seen[name] = member


def _array(npz, name, source, pickled=False):
    """Array ``name`` of ``npz``; with ``pickled`` None for an array of pickled objects (else a
    KaldiError saying how to save it). A damaged member is a KaldiError naming it."""
    where = streams.printable(source)
    try:
        return npz[name]
    except KeyError:
        raise KaldiError("No array '%s' in %s (it holds %s)" % (
            name, where, ", ".join(npz.files) or "nothing")) from None
    except MemoryError:
        raise KaldiError("Out of memory reading array '%s' of %s (the shape it declares does "
                         "not fit)" % (name, where)) from None
    except _DAMAGED as err:
        if isinstance(err, ValueError) and "pickle" in str(err):   # an object array
            if pickled:
                return None
            raise KaldiError("Array '%s' in %s cannot be read without unpickling (%s); save "
                             "keys as a string array, np.array(keys, dtype=str)" % (
                                 name, where, err)) from None
        raise KaldiError("Cannot read array '%s' of %s: %s (a truncated or damaged .npz?)" % (
            name, where, err or type(err).__name__)) from None


def _read_npz(source, keys, keys_name, vectors_name):
    npz = _load(source, "an .npz archive")
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise KaldiError("%s is an .npy file, not .npz (use --format=npz only for .npz)"
                         % streams.printable(source))
    with npz:
        where = streams.printable(source)
        if vectors_name or keys_name or keys is not None:   # only the arrays asked for
            if not vectors_name:
                arrays = _arrays(npz, source, skip=keys_name)
                found = [n for n, a in arrays.items() if _numeric(a) and a.ndim == 2]
                if len(found) != 1:
                    raise KaldiError("%s holds %s 2-D arrays (%s): name the vectors with "
                                     "--npz-vectors" % (where, len(found) or "no",
                                                        _describe(arrays)))
                vectors_name = found[0]
            X = _as_vectors(_array(npz, vectors_name, source),
                            "Array '%s' in %s" % (vectors_name, where))
            if keys is None:
                keys = _npz_keys(npz, source, keys_name, vectors_name)
            return keys, X, "array '%s' of %s" % (vectors_name, where)
        arrays = _arrays(npz, source)
        strings = [n for n, a in arrays.items() if a is not None and a.dtype.kind in "US"]
        matrices = [n for n, a in arrays.items() if _numeric(a) and a.ndim == 2]
        if len(matrices) == 1 and len(strings) == 1:
            X = _as_vectors(arrays[matrices[0]], "Array '%s' in %s" % (matrices[0], where))
            return (_npz_keys(npz, source, strings[0], matrices[0]), X,
                    "array '%s' of %s" % (matrices[0], where))
        if arrays and all(_numeric(a) and a.ndim == 1 for a in arrays.values()):
            return _per_key_arrays(arrays, where)
        raise KaldiError("Cannot tell the keys and vectors apart in %s (arrays: %s): expected a "
                         "2-D array with a 1-D string array of keys, or one 1-D array per key; "
                         "otherwise name them with --npz-vectors and --npz-keys (or give "
                         "--keys)" % (where, _describe(arrays)))


def _arrays(npz, source, skip=""):
    """Every array of ``npz`` (but ``skip``) by name, in file order; None for one that only
    unpickling could read."""
    return {name: _array(npz, name, source, pickled=True) for name in npz.files if name != skip}


def _numeric(array):
    return array is not None and array.dtype.kind in "fiu"


def _describe(arrays):
    return ", ".join("%s %s" % (n, "(pickled objects)" if a is None else
                                "strings" if a.dtype.kind in "US" else
                                "%s%s" % (a.dtype, list(a.shape)))
                     for n, a in arrays.items()) or "none"


def _npz_keys(npz, source, keys_name, vectors_name):
    where = streams.printable(source)
    if not keys_name:
        arrays = _arrays(npz, source, skip=vectors_name)
        found = [n for n, a in arrays.items() if a is not None and a.dtype.kind in "US"]
        if len(found) != 1:
            raise KaldiError("%s holds %s string arrays besides '%s' (%s): give the keys with "
                             "--npz-keys or --keys" % (where, len(found) or "no", vectors_name,
                                                       _describe(arrays)))
        keys_name = found[0]
    array = _array(npz, keys_name, source)
    if array.dtype.kind not in "US" or array.ndim != 1:
        raise KaldiError("Array '%s' in %s is not a 1-D array of strings (%s, shape %s)" % (
            keys_name, where, array.dtype, array.shape))
    if array.dtype.kind == "S":
        try:
            array = np.char.decode(array, "utf-8")
        except UnicodeDecodeError:
            row = next(i for i, k in enumerate(array.tolist()) if not _is_utf8(k))
            raise KaldiError("Key %d of array '%s' in %s is not valid UTF-8: %r" % (
                row + 1, keys_name, where, array[row][:80])) from None
    return array.tolist()


def _is_utf8(raw):
    try:
        raw.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _per_key_arrays(arrays, where):
    keys = list(arrays)
    vectors = [_as_vectors(a, "Array '%s' in %s" % (k, where), ndim=1)
               for k, a in arrays.items()]
    _same_dimension(keys, vectors, where)
    return keys, np.stack(vectors), "%s (one array per key)" % where


def _same_dimension(keys, vectors, where):
    dim = vectors[0].shape[0]
    for key, vector in zip(keys, vectors):
        if vector.shape[0] != dim:
            raise KaldiError("Vector %s in %s has dimension %d but %s has dimension %d" % (
                key, where, vector.shape[0], keys[0], dim))


def _read_npy_dir(folder):
    names = sorted(n for n in os.listdir(folder) if n.endswith(".npy"))
    if not names:
        raise KaldiError("No .npy files in folder %s" % folder)
    keys = [n[:-len(".npy")] for n in names]
    vectors = []
    for name in names:
        path = os.path.join(folder, name)
        try:
            data = read_regular(path, NPY_DIR_FILE_BYTES, "a vector of a folder of .npy files")
        except FileNotFoundError:
            raise KaldiError("%s was removed while the folder was read" % path) from None
        array = _load(path, "an .npy file", data)
        if isinstance(array, np.lib.npyio.NpzFile):
            raise KaldiError("%s is an .npz archive, not .npy" % path)
        if array.ndim == 2 and array.shape[0] == 1:   # a (1, D) batch of one
            array = array[0]
        vectors.append(_as_vectors(array, path, ndim=1))
    _same_dimension(keys, vectors, "folder " + folder)
    return keys, np.stack(vectors)


def _read_text(source, log=None):
    """``key v1 v2 ...`` lines: every line the same number of values (see the module doc)."""
    keys, blocks = [], []
    dim = None
    where = streams.printable(source)
    pending = []

    def convert(pending, first_line):
        values = [v for _, v in pending]
        for offset, row in enumerate(values):     # what Python's float reads but strtod not
            joined = b"".join(row)
            if b"_" in joined or not joined.isascii():
                token = next(t for t in row if b"_" in t or not t.isascii())
                raise _not_a_number(first_line + offset, where, token)
        try:
            blocks.append(np.array(values, dtype=np.float64).astype(np.float32))
        except ValueError:
            for offset, row in enumerate(values):
                for token in row:
                    try:
                        float(token)
                    except ValueError:
                        raise _not_a_number(first_line + offset, where, token) from None
            raise

    number = 0
    first_line = 1
    for piece, first in line_files.iter_line_chunks(
            source, max_line=line_files.MAX_LIST_LINE_BYTES, what="text embeddings file",
            bom_error=False):
        lines = piece.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        if first == 1 and lines:
            lines[0] = lines[0][_skip_bom(lines[0], 0, source, log):]
        for line in lines:
            number += 1
            fields = line.split()                 # C-locale whitespace, as Kaldi splits
            if not fields:
                raise KaldiError("Empty line %d in %s (lines are 'key v1 v2 ...')"
                                 % (number, where))
            if b"[" in fields or b"]" in fields or any(f.startswith(b"[") for f in fields):
                raise KaldiError("Line %d of %s has Kaldi's brackets: that is a Kaldi text "
                                 "archive, read it with copy-vectors ark,t:%s <wspecifier>"
                                 % (number, where, source))
            key = _decode_key(fields[0], number, source)
            if dim is None:
                dim = len(fields) - 1
                if dim == 0:
                    raise KaldiError("Line %d of %s holds a key and no values" % (number,
                                                                                  where))
            elif len(fields) - 1 != dim:
                raise KaldiError("Line %d of %s (key %s) has %d values but line 1 has %d" % (
                    number, where, key, len(fields) - 1, dim))
            keys.append(key)
            pending.append((key, fields[1:]))
            if len(pending) == _TEXT_BLOCK:
                convert(pending, first_line)
                first_line += len(pending)
                pending = []
    if pending:
        convert(pending, first_line)
    if not keys:
        return keys, np.zeros((0, 0), dtype=np.float32)
    return keys, np.concatenate(blocks)


def _not_a_number(line, where, token):
    return KaldiError("Line %d of %s: '%s' is not a number (lines are 'key v1 v2 ...', numbers "
                      "as C's strtod reads them: no '_', no non-ASCII digits)" % (
                          line, where, token.decode("utf-8", "replace")))


def read_embeddings(source, fmt="auto", key_list=None, npz_keys="", npz_vectors="",
                    map_voxceleb=True, log=None):
    """``(keys, X float32, description)`` of an embeddings file (see the module doc).

    ``key_list``: an rxfilename of keys in row order (needed for npy, optional for npz);
    ``npz_keys``/``npz_vectors``: array names in an npz when they cannot be told apart;
    ``map_voxceleb``: VoxCeleb path keys become egs/voxceleb/v2 keys; ``log``: called with a
    message for what was changed on the way (a byte-order mark skipped, keys mapped).
    """
    try:
        return _read_embeddings(source, fmt, key_list, npz_keys, npz_vectors, map_voxceleb,
                                log)
    except MemoryError:
        raise KaldiError("Out of memory reading the embeddings of %s%s" % (
            streams.printable(source), "" if key_list is None else
            " (keys from %s)" % streams.printable(key_list))) from None


def _read_embeddings(source, fmt, key_list, npz_keys, npz_vectors, map_voxceleb, log):
    if fmt == "auto":
        fmt = guess_format(source)
    if fmt not in FORMATS[1:]:
        raise KaldiError("Unknown embeddings format '%s' (one of %s)" % (fmt,
                                                                        ", ".join(FORMATS)))
    if fmt != "npz" and (npz_keys or npz_vectors):
        raise KaldiError("--npz-keys and --npz-vectors only apply to .npz input (format %s)"
                         % fmt)
    if key_list is not None and fmt in ("text", "npy-dir"):
        raise KaldiError("--keys does not apply to %s input, which names its keys itself"
                         % fmt)
    keys = read_key_list(key_list, log) if key_list is not None else None
    if keys is not None:
        list_line = lambda row: "line %d of %s" % (row + 1, key_list)  # noqa: E731
        if map_voxceleb:
            keys = map_voxceleb_keys(keys, list_line, log)
        _check_keys(keys, list_line)
    where = streams.printable(source)
    if fmt == "npy":
        if keys is None:
            raise KaldiError("An .npy array has no keys: give them with --keys=<list>")
        array = _load(source, "an .npy file")
        if isinstance(array, np.lib.npyio.NpzFile):
            array.close()
            raise KaldiError("%s is an .npz archive, not .npy (use --format=npz)" % where)
        X = _as_vectors(array, where)
        description = where
    elif fmt == "npz":
        keys, X, description = _read_npz(source, keys, npz_keys, npz_vectors)
    elif fmt == "npy-dir":
        if not os.path.isdir(source):
            raise KaldiError("%s is not a folder (format npy-dir)" % source)
        keys, X = _read_npy_dir(source)
        description = "folder " + source
    else:
        keys, X = _read_text(source, log)
        description = where
    if key_list is not None and len(keys) != len(X):
        raise KaldiError("%d keys in %s but %d vectors in %s" % (len(keys), key_list, len(X),
                                                                 description))
    if len(keys) != len(X):
        raise KaldiError("%d keys but %d vectors in %s" % (len(keys), len(X), description))
    if key_list is None:
        row_name = "line %d" if fmt == "text" else "entry %d"
        entry = lambda row: (row_name % (row + 1)) + " of " + description  # noqa: E731
        if map_voxceleb:
            keys = map_voxceleb_keys(keys, entry, log)
        _check_keys(keys, entry)
    bad = np.flatnonzero(~np.isfinite(X).all(axis=1)) if len(X) else []
    if len(bad):
        row = int(bad[0])
        raise KaldiError("Vector %s (%s %d of %s) contains NaN or Inf%s" % (
            keys[row], "line" if fmt == "text" else "row", row + 1, description,
            "" if fmt == "text" else " (or a value beyond float32's range)"))
    return keys, X, description
