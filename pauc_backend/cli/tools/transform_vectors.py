"""transform-vectors: apply a linear or affine transform to vectors (twin of transform-vec)."""

from pauc_backend.cli.framework.kaldi_cli import Tool
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import VectorChunkWriter, iter_vector_chunks, read_matrix
from pauc_backend.models.preprocessing import apply_affine, nonfinite_rows

USAGE = """
This program applies a linear or affine transform to individual vectors, e.g.
x-vectors (as transform-vec and ivector-transform).  A transform with R rows and
D columns gives y = M x; with D+1 columns the last column is an offset b,
y = M[:, :D] x + b (e.g. the LDA matrix written by train-lda).
Float32, as Kaldi (one BLAS sgemv per vector): each element within a stated bound of
transform-vec's, bit-identical where the BLAS sums in Kaldi's order.

Usage: transform-vectors [options] <transform-rxfilename> <vector-rspecifier> <vector-wspecifier>
e.g.: transform-vectors exp/transform.mat ark:exp/train_sub.ark ark,scp:exp/train_lda.ark,exp/train_lda.scp
See also: train-lda, normalize-vector-length
"""

tool = Tool("transform-vectors", USAGE, docs="docs/tool-reference.md#transform-vectors")


def run(opts, args):
    transform_rxfilename, vector_rspecifier, vector_wspecifier = args
    transform = read_matrix(transform_rxfilename)
    if transform.size and nonfinite_rows(transform).size:
        raise KaldiError("The transform in %s contains NaN or infinity" % transform_rxfilename)
    with VectorChunkWriter(vector_wspecifier) as writer:
        for chunk in iter_vector_chunks(vector_rspecifier):
            bad = nonfinite_rows(chunk.X)
            if bad.size:
                raise KaldiError("Vector for key %s in %s contains NaN or infinity"
                                 % (chunk.keys[bad[0]], vector_rspecifier))
            writer.write(chunk, apply_affine(transform, chunk.X))
    if not writer.num_written:
        raise KaldiError("No vectors read from %s (empty input); %s not written"
                         % (vector_rspecifier, vector_wspecifier))
    tool.log.log("Applied transform to %d vectors." % writer.num_written)
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=3, outputs=-1)
