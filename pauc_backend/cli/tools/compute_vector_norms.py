"""compute-vector-norms: the 2-norm of each vector as a Kaldi BaseFloat table (a quality
measure for train-calibration/apply-calibration, as WeSpeaker's embedding magnitude)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Tool, format_float
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import TableWriter, iter_vector_chunks
from pauc_backend.metrics.moments import Float64Moments
from pauc_backend.models.preprocessing import nonfinite_rows, vector_norms

USAGE = """
Write the 2-norm of each vector (float32, summed in order as Kaldi's VectorBase::Norm(2)) as
a table of BaseFloat values, e.g. a per-side quality measure for train-calibration and
apply-calibration (--enroll-quality/--test-quality). --relative=true divides each norm by the
median norm of the table.

Usage:  compute-vector-norms [options] <vector-rspecifier> <float-wspecifier>
e.g.: compute-vector-norms scp:data/test/xvector.scp ark,t:exp/test_norms.txt
""".strip("\n")

tool = Tool("compute-vector-norms", USAGE, docs="docs/tool-reference.md#compute-vector-norms")
tool.register("relative", False, "Divide every norm by the median norm of the table (the "
              "table is held in memory: one float per vector)")


def run(opts, args):
    vector_rspecifier, norm_wspecifier = args
    moments = Float64Moments()
    held_keys, held_norms = [], []
    with TableWriter(norm_wspecifier, "float") as writer:
        for chunk in iter_vector_chunks(vector_rspecifier):
            norms = vector_norms(chunk.X)
            if not np.isfinite(norms).all():
                bad = nonfinite_rows(chunk.X)
                row = int(bad[0]) if bad.size else int(np.flatnonzero(~np.isfinite(norms))[0])
                raise KaldiError("Vector for key %s in %s contains NaN or infinity (or its norm "
                                 "overflows float)" % (chunk.keys[row], vector_rspecifier))
            if opts.relative:
                held_keys.extend(chunk.keys)
                held_norms.append(norms.astype(np.float64))
                continue
            for key, norm in zip(chunk.keys, norms.tolist()):
                writer.write(key, norm)
            moments.add(norms.astype(np.float64))
        if opts.relative and held_keys:
            norms = np.concatenate(held_norms)
            median = float(np.median(norms))
            if not median > 0:
                raise KaldiError("The median norm of %s is 0: relative norms are undefined"
                                 % vector_rspecifier)
            norms /= median
            for key, norm in zip(held_keys, norms.tolist()):
                writer.write(key, norm)
            moments.add(norms)
            tool.log.log("Norms divided by their median, %s" % format_float(median))
    if not moments.count:
        raise KaldiError("No vectors read from %s (empty input); %s not written"
                         % (vector_rspecifier, norm_wspecifier))
    tool.log.log("Wrote the norms of %d vectors: mean %s, standard deviation %s"
                 % (moments.count, format_float(moments.mean), format_float(moments.std())))
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=2, outputs=-1)


if __name__ == "__main__":
    raise SystemExit(main())
