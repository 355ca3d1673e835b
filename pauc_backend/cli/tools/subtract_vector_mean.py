"""subtract-vector-mean: centre a table of vectors (twin of ivector-subtract-global-mean)."""

import os

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float
from pauc_backend.cli.framework.vector_input import streamed_sum
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import (VectorChunkWriter, classify_rxfilename, iter_vector_chunks,
                                   parse_rspecifier, read_vector, read_vector_table,
                                   write_vector_table)
from pauc_backend.models.preprocessing import (add_shift, mean_norm, mean_shift, nonfinite_rows,
                                               subtract_mean)

USAGE = """
Copies a table of vectors but subtracts the global mean as it does so.  The mean
may be specified as the first argument (a vector file, e.g. from compute-vector-mean);
if not, the mean of the input vectors is used (as ivector-subtract-global-mean).

Usage: subtract-vector-mean <vector-rspecifier> <vector-wspecifier>
or: subtract-vector-mean <mean-rxfilename> <vector-rspecifier> <vector-wspecifier>
e.g.: subtract-vector-mean scp:data/train/xvector.scp ark:-
or: subtract-vector-mean exp/mean.vec scp:data/test/xvector.scp ark,scp:exp/test_sub.ark,exp/test_sub.scp
See also: compute-vector-mean
"""

tool = Tool("subtract-vector-mean", USAGE, docs="docs/tool-reference.md#subtract-vector-mean")
tool.register("subtract-mean", True, "If true, subtract mean; if false, just copy the input.")


def subtract_given_mean(mean, mean_rxfilename, vector_rspecifier, vector_wspecifier):
    """The 3-argument form, streamed: each chunk of vectors minus the float32 mean."""
    mean32 = np.asarray(mean, dtype=np.float32)
    with VectorChunkWriter(vector_wspecifier) as writer:
        for chunk in iter_vector_chunks(vector_rspecifier):
            bad = nonfinite_rows(chunk.X)
            if bad.size:
                raise KaldiError("Vector for key %s in %s contains NaN or infinity"
                                 % (chunk.keys[bad[0]], vector_rspecifier))
            if mean.shape[0] != chunk.dim:
                raise KaldiError("Dimension mismatch: the mean in %s has dimension %d but the "
                                 "vectors in %s have dimension %d"
                                 % (mean_rxfilename, mean.shape[0], vector_rspecifier, chunk.dim))
            # float32 x - (float32) mean, as subtract_mean(X, mean), straight from the read
            # buffer's rows (no contiguous copy first)
            writer.write(chunk, np.subtract(chunk.X, mean32))
    if not writer.num_written:
        raise KaldiError("No vectors read from %s (empty input); %s not written"
                         % (vector_rspecifier, vector_wspecifier))
    tool.log.log("Wrote %d mean-subtracted iVectors" % writer.num_written)
    return 0


def rereadable(rspecifier):
    """True if the table can be read a second time (a plain file, not a pipe or stdin)."""
    spec = parse_rspecifier(rspecifier)
    kind, what = classify_rxfilename(spec.filename)
    if kind not in ("file", "offset"):
        return False
    return os.path.isfile(what[0] if kind == "offset" else what)


def subtract_own_mean_twice(opts, vector_rspecifier, vector_wspecifier):
    """The 2-argument form on a re-readable input: one streamed pass for the double sum (and
    the checks), a second one writing ``x + (float)(-1/N) * sum``; same bytes as holding it."""
    log = tool.log
    total, count, dim = streamed_sum(vector_rspecifier)
    if not count:
        raise KaldiError("No vectors read from %s (empty input); %s not written"
                         % (vector_rspecifier, vector_wspecifier))
    log.log("Read %d iVectors." % count)
    log.log("Norm of iVector mean was %s" % format_float(mean_norm(total, count)))
    shift = mean_shift(total, count)
    with VectorChunkWriter(vector_wspecifier) as writer:
        for chunk in iter_vector_chunks(vector_rspecifier):
            if chunk.dim != dim or writer.num_written + len(chunk) > count:
                raise KaldiError("%s changed while it was read twice" % vector_rspecifier)
            writer.write(chunk, add_shift(chunk.X, shift) if opts.subtract_mean else None)
        if writer.num_written != count:
            raise KaldiError("%s changed while it was read twice" % vector_rspecifier)
    log.log("Wrote %d mean-subtracted iVectors" % count)
    return 0


def run(opts, args):
    log = tool.log
    if len(args) == 3:
        mean = read_vector(args[0])
        bad = nonfinite_rows(mean[None]) if mean.size else ()
        if len(bad):
            raise KaldiError("The mean in %s contains NaN or infinity" % args[0])
    else:
        mean = None
    vector_rspecifier, vector_wspecifier = args[-2:]
    if mean is not None:
        return subtract_given_mean(mean, args[0], vector_rspecifier, vector_wspecifier)
    # No mean given: the table's own mean is needed before the first output vector.
    if rereadable(vector_rspecifier):
        return subtract_own_mean_twice(opts, vector_rspecifier, vector_wspecifier)
    keys, X = read_vector_table(vector_rspecifier)
    if not keys:
        raise KaldiError("No vectors read from %s (empty input); %s not written"
                         % (vector_rspecifier, vector_wspecifier))
    bad = nonfinite_rows(X)
    if bad.size:
        raise KaldiError("Vector for key %s in %s contains NaN or infinity"
                         % (keys[bad[0]], vector_rspecifier))
    log.log("Read %d iVectors." % len(keys))
    Y = X
    centred, total = subtract_mean(X)
    log.log("Norm of iVector mean was %s" % format_float(mean_norm(total, len(keys))))
    if opts.subtract_mean:
        Y = centred
    write_vector_table(vector_wspecifier, keys, Y)
    log.log("Wrote %d mean-subtracted iVectors" % len(keys))
    return 0 if keys else 1


def main(argv=None):
    return tool.main(run, argv, num_args=(2, 3), outputs=-1)
