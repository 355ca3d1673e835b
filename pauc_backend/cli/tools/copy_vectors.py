"""copy-vectors: copy a table of vectors or one vector file (Kaldi's copy-vector)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io.numpy_files import numpy_file_hint
from pauc_backend.kaldi_io import (VectorChunkWriter, classify_rspecifier, classify_wspecifier,
                                   iter_vector_chunks, read_vector, write_vector)

USAGE = """
Copy vectors, or archives of vectors (e.g. speaker vectors), as Kaldi's copy-vector.
Tables are always written as float (FV); --binary only applies to plain-file output.

Usage: copy-vectors [options] (<vector-in-rspecifier>|<vector-in-rxfilename>) (<vector-out-wspecifier>|<vector-out-wxfilename>)
 e.g.: copy-vectors --binary=false exp/mean.vec -
   copy-vectors scp:data/train/xvector.scp ark,t:-
"""

tool = Tool("copy-vectors", USAGE)
tool.register("binary", True, "Write in binary mode (only relevant if output is a wxfilename)")
tool.register("change-dim", -1, "Use this option to truncate or zero-pad the vectors.")
tool.register("scale", 1.0, "This option can be used to scale the vectors being copied "
              "(tables only, as in Kaldi).")


def resize(vector, dim):
    """Vector::Resize(dim, kCopyData): truncate or zero-pad."""
    out = np.zeros(vector.shape[:-1] + (dim,), dtype=np.float32)
    keep = min(dim, vector.shape[-1])
    out[..., :keep] = vector[..., :keep]
    return out


def run(opts, args):
    source, target = args
    in_table = classify_rspecifier(source) is not None
    if in_table != (classify_wspecifier(target) is not None):
        numpy = None if in_table else numpy_file_hint(source, "a Kaldi vector or table")
        raise KaldiError("Cannot mix archives with regular files (copying vectors)%s"
                         % ("" if numpy is None else ": " + numpy))
    if not in_table:
        if opts.scale != 1.0:
            tool.log.warning("--scale=%s is ignored when copying a single vector file (as in "
                             "Kaldi's copy-vector)" % format_float(opts.scale))
        vector = read_vector(source).astype(np.float32)
        if opts.change_dim >= 0:
            vector = resize(vector, opts.change_dim)
        write_vector(target, vector, binary=opts.binary)
        tool.log.log("Copied vector to %s" % target)
        return 0
    changed = opts.change_dim >= 0 or opts.scale != 1.0
    scale = np.float32(opts.scale)
    with VectorChunkWriter(target) as writer:
        for chunk in iter_vector_chunks(source, ragged=True):
            vectors = None
            if opts.change_dim >= 0:
                vectors = resize(chunk.X, opts.change_dim)
            if opts.scale != 1.0:
                vectors = (chunk.X if vectors is None else vectors) * scale
            writer.write(chunk, vectors)
    count = writer.num_written
    if not count:
        raise KaldiError("No vectors read from %s (empty input); %s not written"
                         % (source, target))
    if changed:
        tool.log.log("Copied %d vectors, setting dim to %d scaled by %s" % (
            count, opts.change_dim, format_float(opts.scale)))
    else:
        tool.log.log("Copied %d vectors." % count)
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=2, outputs=-1)
