"""apply-calibration: turn scores into calibrated log-likelihood ratios with a trained model."""

import numpy as np

from pauc_backend.persist.calibration import read_calibration
from pauc_backend.cli.framework.kaldi_cli import Tool, UsageError, format_float
from pauc_backend.cli.options import quality as quality_options
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import format_scores, open_output
from pauc_backend.kaldi_io.keyed import KeySpace, PairTable, iter_join
from pauc_backend.metrics.moments import Float64Moments

USAGE = """
Apply a calibration/fusion model from train-calibration to score files and write
"key1 key2 llr" lines. With several score files (one per fused system, in training order) the
trials of the first file are kept, in its order, and joined to the others by the key pair.
A model trained with quality measures (QMF) needs the same measures' tables for these trials.

Usage: apply-calibration [options] <calibration-rxfilename> <scores-rxfilename>
         [<scores-rxfilename> ...] <scores-wxfilename>
e.g.: apply-calibration exp/calibration.mdl exp/scores_eval exp/llr_eval
 QMF: apply-calibration --enroll-duration=ark:exp/enroll_spk2dur \\
        --test-duration=ark:data/test/utt2dur exp/qmf.mdl exp/scores_eval exp/llr_eval
""".strip("\n") + "\n" + quality_options.HELP_TEXT.rstrip("\n")

tool = Tool("apply-calibration", USAGE, docs="docs/quality-measures.md")
quality_options.register_quality_options(tool, training=False)


def run(opts, args):
    if len(args) < 3:
        raise UsageError("")
    model_rx, score_rxs, scores_wx = args[0], args[1:-1], args[-1]
    model = read_calibration(model_rx)
    measures = list(getattr(model, "measures", ()))
    quality_options.check_model_measures(opts, measures, model_rx)
    if len(score_rxs) != model.weights_.size:
        raise KaldiError("Calibration model %s fuses %d score file(s), but %d were given"
                         % (model_rx, model.weights_.size, len(score_rxs)))
    tables = quality_options.read_side_tables(opts) if measures else None
    keys = KeySpace()
    others = [PairTable.read(rx, keys, "score") for rx in score_rxs[1:]]
    moments = Float64Moments()
    with open_output(scores_wx) as out:
        for joined in iter_join(tool.log, score_rxs[0], keys, others):
            scores = np.column_stack([joined.base] + joined.values)
            _check_finite(scores, joined, score_rxs)
            if measures:
                llr = model.transform(scores, *_chunk_quality(tables, joined))
            else:
                llr = model.transform(scores)
            out.write(format_scores(joined.chunk.tokens(0)[joined.rows],
                                    joined.chunk.tokens(1)[joined.rows], llr))
            moments.add(llr)
        if not moments.count:
            raise KaldiError("No scores to calibrate in %s" % " ".join(score_rxs))
    tool.log.log("Mean llr was %s, standard deviation was %s" % (
        format_float(moments.mean), format_float(moments.std())))
    tool.log.log("Calibrated %d trials." % moments.count)
    return 0


def _chunk_quality(tables, joined):
    """(enroll (n, M), test (n, M)) quality values of a joined chunk's trials."""
    out = []
    for column, side in ((0, "enroll"), (1, "test")):
        values = []
        for table in tables[side]:
            rows = table.index.lookup_chunk(joined.chunk, column)[joined.rows]
            values.append(table.gather(rows, lambda i, c=column: joined.chunk.token(
                c, int(joined.rows[i]))))
        out.append(np.column_stack(values))
    return out


def _check_finite(scores, joined, score_rxs):
    bad = ~np.isfinite(scores)
    if bad.any():
        row, column = np.argwhere(bad)[0]
        line = joined.rows[row]
        raise KaldiError("Score of '%s %s' in %s is not finite (%s)" % (
            joined.chunk.token(0, line), joined.chunk.token(1, line), score_rxs[column],
            scores[row, column]))


def main(argv=None):
    return tool.main(run, argv, outputs=-1)


if __name__ == "__main__":
    raise SystemExit(main())
