"""apply-calibration: turn scores into calibrated log-likelihood ratios with a trained model."""

import numpy as np

from pauc_backend.cli.calibration_io import join_by_key, read_calibration, read_score_files
from pauc_backend.cli.kaldi_cli import Tool, UsageError, format_float
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import write_scores

USAGE = """
Apply a calibration/fusion model from train-calibration to score files and write
"key1 key2 llr" lines. With several score files (one per fused system, in training order) the
trials of the first file are kept, in its order, and joined to the others by the key pair.

Usage: apply-calibration [options] <calibration-rxfilename> <scores-rxfilename>
         [<scores-rxfilename> ...] <scores-wxfilename>
e.g.: apply-calibration exp/calibration.mdl exp/scores_eval exp/llr_eval
""".strip("\n")

tool = Tool("apply-calibration", USAGE)


def run(opts, args):
    if len(args) < 3:
        raise UsageError("")
    model_rx, score_rxs, scores_wx = args[0], args[1:-1], args[-1]
    model = read_calibration(model_rx)
    if len(score_rxs) != model.weights_.size:
        raise KaldiError("Calibration model %s fuses %d score file(s), but %d were given"
                         % (model_rx, model.weights_.size, len(score_rxs)))
    tables = read_score_files(score_rxs)
    _, key1, key2, scores = tables[0]
    if len(tables) == 1:
        bad = np.flatnonzero(~np.isfinite(scores))
        if bad.size:
            raise KaldiError("Score of '%s %s' in %s is not finite (%s)"
                             % (key1[bad[0]], key2[bad[0]], score_rxs[0], scores[bad[0]]))
    else:
        rows, scores = join_by_key(tool.log, score_rxs[0], key1, key2, tables)
        key1, key2 = key1[rows], key2[rows]
    llr = model.transform(scores)
    write_scores(scores_wx, key1, key2, llr)
    if llr.size:
        tool.log.log("Mean llr was %s, standard deviation was %s" % (
            format_float(llr.mean()), format_float(llr.std())))
    tool.log.log("Calibrated %d trials." % llr.size)
    return 0 if llr.size else 1


def main(argv=None):
    return tool.main(run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
