"""transform-plda-latent: vectors into the PLDA latent space (Plda::TransformIvector).

The paper's PLDA-based preprocessing (Section V-B and its footnote): u = transform (x - mean),
scaled by sqrt(d / sum_i u_i^2 / (psi_i + 1/n)).
"""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float
from pauc_backend.cli.options.plda import read_plda_model, register_plda_options
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import VectorChunkWriter, iter_vector_chunks, read_int32_table
from pauc_backend.models.preprocessing import nonfinite_rows

USAGE = """
Maps vectors into the space of a PLDA model (within-class covariance unit, between-class
covariance diagonal), with the length normalisation that ivector-plda-scoring applies before
scoring, and writes them as float vectors.

Usage: transform-plda-latent [options] <plda> <vector-rspecifier> <vector-wspecifier>
e.g.: transform-plda-latent --num-utts=ark:exp/enroll_num_utts.ark exp/plda ark:exp/enroll.ark ark:exp/enroll_latent.ark
"""

tool = Tool("transform-plda-latent", USAGE)
register_plda_options(tool)
_BLOCK = 512  # vectors transformed at once


class SeenKeys:
    """The keys of a table read so far, as one sorted numpy bytes array (a few bytes a key,
    not a Python object each); ``add(chunk)`` refuses a key seen before, naming the first
    repeat in table order."""

    def __init__(self, message):
        self.message = message
        self.sorted = np.zeros(0, "S1")

    def add(self, chunk):
        if chunk.key_array is not None:
            width = chunk.key_array.shape[1]
            new = np.ascontiguousarray(chunk.key_array).view("S%d" % max(width, 1)).ravel()
        else:
            new = np.array(chunk.key_bytes(), dtype=np.bytes_)
        new = np.sort(new)
        place = np.searchsorted(self.sorted, new)
        clash = self.sorted[np.minimum(place, max(len(self.sorted) - 1, 0))] == new \
            if len(self.sorted) else np.zeros(len(new), bool)
        if clash.any() or (new[1:] == new[:-1]).any():
            before = set(self.sorted.tolist())
            for key in chunk.key_bytes():  # the first repeat in table order
                if key in before:
                    raise KaldiError(self.message % key.decode())
                before.add(key)
        self.sorted = np.insert(self.sorted.astype(new.dtype if new.dtype.itemsize >
                                                   self.sorted.dtype.itemsize
                                                   else self.sorted.dtype), place, new)


def run(opts, args):
    """Streamed: each chunk of vectors is transformed and written before the next is read
    (only the keys seen so far are kept, to refuse a duplicate key as before)."""
    plda_rxfilename, vector_rspecifier, vector_wspecifier = args
    log = tool.log
    plda = read_plda_model(plda_rxfilename)
    table = read_int32_table(opts.num_utts) if opts.num_utts else None
    seen = SeenKeys("Duplicate vector found for key %s")
    num_errors, factor_sum = 0, 0.0
    with VectorChunkWriter(vector_wspecifier) as writer:
        for chunk in iter_vector_chunks(vector_rspecifier):
            seen.add(chunk)
            keys = chunk.keys
            if chunk.dim != plda.dim:
                raise KaldiError("Vectors in %s have dimension %d but the PLDA model has "
                                 "dimension %d" % (vector_rspecifier, chunk.dim, plda.dim))
            bad = nonfinite_rows(chunk.X)
            if bad.size:
                raise KaldiError("Vector %s in %s contains NaN or Inf"
                                 % (keys[int(bad[0])], vector_rspecifier))
            keep, num_utts = None, np.ones(len(keys), dtype=np.int64)
            if table is not None:
                found = [table.get(key) for key in keys]
                for key, n in zip(keys, found):
                    if n is None:
                        log.warning("Number of utterances not given for speaker %s" % key)
                    elif n < 1:
                        raise KaldiError("Number of utterances for speaker %s in %s is %d, "
                                         "must be >= 1" % (key, opts.num_utts, n))
                keep = [row for row, n in enumerate(found) if n is not None]
                num_errors += len(keys) - len(keep)
                num_utts = np.array([found[row] for row in keep], dtype=np.int64)
                if not keep:
                    continue
            X = chunk.X if keep is None else chunk.X[keep]
            U = np.empty((X.shape[0], plda.dim), np.float32)
            for begin in range(0, X.shape[0], _BLOCK):  # float64 temporaries stay small
                block = slice(begin, begin + _BLOCK)
                U[block], factors = plda.transform(
                    X[block], num_utts[block], normalize_length=opts.normalize_length,
                    simple_length_norm=opts.simple_length_normalization)
                factor_sum = float(np.cumsum(np.concatenate(
                    [[factor_sum], factors.astype(np.float32).astype(np.float64)]))[-1])
            writer.write(chunk, U, keep)
    count = writer.num_written
    if not count:
        raise KaldiError("No vectors read from %s (empty input); %s not written"
                         % (vector_rspecifier, vector_wspecifier))
    log.log("Transformed %d vectors into the PLDA space, errors on %d; average "
            "renormalization scale was %s" % (count, num_errors, format_float(factor_sum / count)))
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=3, outputs=-1)
