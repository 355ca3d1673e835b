"""rspecifier / wspecifier grammar (util/kaldi-table.cc: ClassifyRspecifier, ClassifyWspecifier)."""

from dataclasses import dataclass

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io.numpy_files import numpy_file_hint


@dataclass(frozen=True)
class RSpecifier:
    """``ark:x`` or ``scp:x`` with Kaldi's read options (``o,s,cs,p,bg,b,t`` and ``n`` forms)."""
    kind: str               # "ark" or "scp"
    filename: str           # an rxfilename
    once: bool = False
    sorted: bool = False
    called_sorted: bool = False
    permissive: bool = False
    background: bool = False


@dataclass(frozen=True)
class WSpecifier:
    """``ark:A``, ``scp:S`` or ``ark,scp:A,S`` with the write options ``b/t``, ``f/nf``, ``p``."""
    kind: str               # "ark", "scp" or "ark,scp"
    ark: str = None         # archive wxfilename (kinds ark and ark,scp)
    scp: str = None         # script wxfilename (ark,scp) or rxfilename (scp)
    binary: bool = True
    flush: bool = False
    permissive: bool = False


_READ_FLAGS = {"o": ("once", True), "no": ("once", False), "s": ("sorted", True),
               "ns": ("sorted", False), "cs": ("called_sorted", True),
               "ncs": ("called_sorted", False), "p": ("permissive", True),
               "np": ("permissive", False), "bg": ("background", True),
               "b": (None, None), "t": (None, None)}


def _split_options(specifier):
    if not specifier or ":" not in specifier or specifier[-1].isspace():
        return None, None
    before, after = specifier.split(":", 1)
    # Kaldi splits on "," and " " without dropping empty parts, so "ark,:x" is invalid.
    parts = before.replace(" ", ",").split(",")
    return parts, after


def classify_rspecifier(rspecifier):
    """The RSpecifier for a valid rspecifier, else None (Kaldi's kNoRspecifier)."""
    parts, filename = _split_options(rspecifier)
    if parts is None:
        return None
    kind = None
    flags = {}
    for part in parts:
        if part in ("ark", "scp"):
            if kind is not None:
                return None
            kind = part
        elif part in _READ_FLAGS:
            name, value = _READ_FLAGS[part]
            if name is not None:
                flags[name] = value
        else:
            return None
    if kind is None:
        return None
    return RSpecifier(kind, filename, **flags)


def classify_wspecifier(wspecifier):
    """The WSpecifier for a valid wspecifier, else None (Kaldi's kNoWspecifier)."""
    parts, filename = _split_options(wspecifier)
    if parts is None:
        return None
    kind = None
    binary, flush, permissive = True, False, False
    for part in parts:
        if part == "ark":
            if kind is not None:
                return None  # "scp,ark" and "ark,ark" are invalid
            kind = "ark"
        elif part == "scp":
            if kind is None:
                kind = "scp"
            elif kind == "ark":
                kind = "ark,scp"
            else:
                return None
        elif part == "b":
            binary = True
        elif part == "t":
            binary = False
        elif part == "f":
            flush = True
        elif part == "nf":
            flush = False
        elif part == "p":
            permissive = True
        else:
            return None
    if kind is None:
        return None
    if kind == "ark":
        return WSpecifier(kind, ark=filename, binary=binary, flush=flush, permissive=permissive)
    if kind == "scp":
        return WSpecifier(kind, scp=filename, binary=binary, flush=flush, permissive=permissive)
    if "," not in filename:
        return None
    ark, scp = filename.split(",", 1)
    return WSpecifier(kind, ark=ark, scp=scp, binary=binary, flush=flush, permissive=permissive)


def parse_rspecifier(rspecifier):
    """Like classify_rspecifier, but a KaldiError naming the string if it is not valid."""
    spec = classify_rspecifier(rspecifier)
    if spec is None:
        problem = numpy_file_hint(rspecifier, "a Kaldi table (rspecifier)")
        if problem is not None:
            raise KaldiError("Invalid rspecifier '%s': %s" % (rspecifier, problem))
        raise KaldiError("Invalid rspecifier '%s' (expected e.g. ark:file.ark, scp:file.scp, "
                         "'ark:cmd |', ark:-)" % rspecifier)
    return spec


def parse_wspecifier(wspecifier):
    """Like classify_wspecifier, but a KaldiError naming the string if it is not valid."""
    spec = classify_wspecifier(wspecifier)
    if spec is None:
        raise KaldiError("Invalid wspecifier '%s' (expected e.g. ark:file.ark, ark,t:-, "
                         "ark,scp:a.ark,a.scp, 'ark:| cmd')" % wspecifier)
    return spec
