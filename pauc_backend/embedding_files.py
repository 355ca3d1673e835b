"""Embeddings written by other toolkits, read as ``(keys, float32 matrix)`` for a Kaldi table.

Formats (what neural toolkits such as WeSpeaker, SpeechBrain or 3D-Speaker dump):

* ``npy``: one 2-D array, a vector per row; the keys come from a list (one per line).
* ``npz``: either a 2-D array and a 1-D string array of keys (found by themselves when each is
  the only one of its kind, else named), or a 2-D array and a key list, or one 1-D array per
  key (``np.savez(f, **{utt: vector})``), the array names being the keys.
* ``npy-dir``: a folder of ``<key>.npy`` files, one vector each (3D-Speaker's layout).
* ``text``: lines ``key v1 v2 ...`` without Kaldi's brackets.

Every failure is a KaldiError naming the file and the key, row or line. Vectors holding NaN
or Inf (also float64 values beyond float32's range) are refused: Kaldi's tools would carry
them silently into every score.
"""

import io
import os

import numpy as np

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import streams
from pauc_backend.kaldi_io.holders import check_token

FORMATS = ("auto", "npy", "npz", "npy-dir", "text")
_TEXT_BLOCK = 4096   # lines converted at once


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


def read_key_list(rxfilename):
    """Keys, one a line (the first field, so a wav.scp or utt2spk in row order also serves)."""
    data, start = streams.read_all(rxfilename)
    try:
        text = bytes(data[start:]).decode("utf-8")
    except UnicodeDecodeError as err:
        raise KaldiError("Key list %s is not valid UTF-8 (byte %d)" % (
            streams.printable(rxfilename), err.start)) from None
    keys = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            raise KaldiError("Empty line %d in key list %s" % (number,
                                                               streams.printable(rxfilename)))
        keys.append(fields[0])
    return keys


def _check_keys(keys, where):
    """Kaldi tokens, each once; ``where(i)`` names the place of key i in messages."""
    first = {}
    for row, key in enumerate(keys):
        try:
            check_token(key)
        except KaldiError:
            raise KaldiError("Invalid key %r (%s): keys must be non-empty and without "
                             "whitespace" % (key, where(row))) from None
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


def _load(source, what):
    """np.load of an rxfilename: a file is read in place, a pipe or stdin through memory."""
    kind, path = streams.classify_rxfilename(source)
    try:
        if kind == "file":
            return np.load(path, allow_pickle=False)
        data, start = streams.read_all(source)
        return np.load(io.BytesIO(bytes(data[start:])), allow_pickle=False)
    except OSError as err:
        if isinstance(err, FileNotFoundError) or err.strerror:
            raise
        raise KaldiError("Cannot read %s as %s: %s" % (streams.printable(source), what,
                                                      err)) from None
    except (ValueError, EOFError) as err:
        raise KaldiError("Cannot read %s as %s: %s" % (streams.printable(source), what,
                                                      err)) from None


def _array(npz, name, source):
    try:
        return npz[name]
    except KeyError:
        raise KaldiError("No array '%s' in %s (it holds %s)" % (
            name, streams.printable(source), ", ".join(npz.files) or "nothing")) from None
    except ValueError as err:  # a pickled object array
        raise KaldiError("Array '%s' in %s cannot be read without unpickling (%s); save keys "
                         "as a string array, np.array(keys, dtype=str)" % (
                             name, streams.printable(source), err)) from None


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
    arrays = {}
    for name in npz.files:
        if name == skip:
            continue
        try:
            arrays[name] = npz[name]
        except ValueError:
            arrays[name] = None
    return arrays


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
        array = np.char.decode(array, "utf-8")
    return array.tolist()


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
        array = _load(path, "an .npy file")
        if isinstance(array, np.lib.npyio.NpzFile):
            raise KaldiError("%s is an .npz archive, not .npy" % path)
        if array.ndim == 2 and array.shape[0] == 1:   # a (1, D) batch of one
            array = array[0]
        vectors.append(_as_vectors(array, path, ndim=1))
    _same_dimension(keys, vectors, "folder " + folder)
    return keys, np.stack(vectors)


def _read_text(source):
    """``key v1 v2 ...`` lines: every line the same number of values."""
    keys, blocks = [], []
    dim = None
    where = streams.printable(source)
    pending = []

    def convert(pending, first_line):
        values = [v for _, v in pending]
        try:
            blocks.append(np.array(values, dtype=np.float64).astype(np.float32))
        except ValueError:
            for offset, (_, row) in enumerate(pending):
                for token in row:
                    try:
                        float(token)
                    except ValueError:
                        raise KaldiError("Line %d of %s: '%s' is not a number (lines are "
                                         "'key v1 v2 ...')" % (first_line + offset, where,
                                                               token)) from None
            raise

    number = 0
    first_line = 1
    for piece, first in streams.iter_line_chunks(source):
        try:
            text = piece.decode("utf-8")
        except UnicodeDecodeError as err:
            raise KaldiError("Line %d of %s is not valid UTF-8" % (
                first + piece.count(b"\n", 0, err.start), where)) from None
        for line in text.splitlines():
            number += 1
            fields = line.split()
            if not fields:
                raise KaldiError("Empty line %d in %s (lines are 'key v1 v2 ...')"
                                 % (number, where))
            if "[" in fields or "]" in fields or any(f.startswith("[") for f in fields):
                raise KaldiError("Line %d of %s has Kaldi's brackets: that is a Kaldi text "
                                 "archive, read it with copy-vectors ark,t:%s <wspecifier>"
                                 % (number, where, source))
            if dim is None:
                dim = len(fields) - 1
                if dim == 0:
                    raise KaldiError("Line %d of %s holds a key and no values" % (number,
                                                                                  where))
            elif len(fields) - 1 != dim:
                raise KaldiError("Line %d of %s (key %s) has %d values but line 1 has %d" % (
                    number, where, fields[0], len(fields) - 1, dim))
            keys.append(fields[0])
            pending.append((fields[0], fields[1:]))
            if len(pending) == _TEXT_BLOCK:
                convert(pending, first_line)
                first_line += len(pending)
                pending = []
    if pending:
        convert(pending, first_line)
    if not keys:
        return keys, np.zeros((0, 0), dtype=np.float32)
    return keys, np.concatenate(blocks)


def read_embeddings(source, fmt="auto", key_list=None, npz_keys="", npz_vectors=""):
    """``(keys, X float32, description)`` of an embeddings file (see the module doc).

    ``key_list``: an rxfilename of keys in row order (needed for npy, optional for npz);
    ``npz_keys``/``npz_vectors``: array names in an npz when they cannot be told apart.
    """
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
    keys = read_key_list(key_list) if key_list is not None else None
    if keys is not None:
        _check_keys(keys, lambda row: "line %d of %s" % (row + 1, key_list))
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
        keys, X = _read_text(source)
        description = where
    if key_list is not None and len(keys) != len(X):
        raise KaldiError("%d keys in %s but %d vectors in %s" % (len(keys), key_list, len(X),
                                                                 description))
    if len(keys) != len(X):
        raise KaldiError("%d keys but %d vectors in %s" % (len(keys), len(X), description))
    if key_list is None:
        row_name = "line %d" if fmt == "text" else "entry %d"
        _check_keys(keys, lambda row: (row_name % (row + 1)) + " of " + description)
    bad = np.flatnonzero(~np.isfinite(X).all(axis=1)) if len(X) else []
    if len(bad):
        row = int(bad[0])
        raise KaldiError("Vector %s (%s %d of %s) contains NaN or Inf%s" % (
            keys[row], "line" if fmt == "text" else "row", row + 1, description,
            "" if fmt == "text" else " (or a value beyond float32's range)"))
    return keys, X, description
