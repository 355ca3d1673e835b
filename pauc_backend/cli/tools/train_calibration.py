"""train-calibration: learn llr = sum_k w_k s_k + b by BOSARIS's prior-weighted logistic
regression (linear calibration of one system, or fusion of several)."""

from pauc_backend.kaldi_io.joined_scores import read_joined_scores
from pauc_backend.persist.calibration import write_calibration
from pauc_backend.cli.framework.kaldi_cli import Tool, UsageError, format_float, format_vector
from pauc_backend.cli.options import quality as quality_options
from pauc_backend.errors import KaldiError
from pauc_backend.metrics.llr import act_dcf, cllr, min_cllr
from pauc_backend.models.calibration import LinearCalibration, LinearFusion
from pauc_backend.models.quality import QualityFusion

USAGE = """
Train a linear calibration (one score file) or fusion (several score files, joined by the key
pair) that maps scores to log-likelihood ratios, llr = sum_k w_k * s_k + b, by minimising the
prior-weighted cross-entropy of BOSARIS (targets weighted prior/N_tar, non-targets
(1-prior)/N_non, logit(prior) offset), optionally with an L2 penalty on w. With quality
measures (QMF) the same regression also sees per-trial quality features q (min and max over
the two sides), llr = w . s + v . q + b, and the model records which measures it used.

Usage: train-calibration [options] <trials-rxfilename> <scores-rxfilename>
         [<scores-rxfilename> ...] <calibration-wxfilename>
e.g.: train-calibration --prior=0.01 data/dev/trials exp/scores_dev exp/calibration.mdl
 QMF: train-calibration --prior=0.01 --enroll-duration=ark:data/dev/utt2dur \\
        --test-duration=ark:data/dev/utt2dur data/dev/trials exp/scores_dev exp/qmf.mdl
""".strip("\n") + "\n" + quality_options.HELP_TEXT.rstrip("\n")

tool = Tool("train-calibration", USAGE, docs="docs/quality-measures.md")
tool.register("prior", 0.5, "Target prior of the training objective (0.01 for the usual "
              "DCF operating point)", bounds=(">0", "<1"))
tool.register("regularization", 0.0, "L2 penalty lambda/2 ||w||^2 on the weights (needed when "
              "target and non-target scores are separable)", bounds=(">=0",))
tool.register("max-iters", 100, "Maximum number of Newton iterations", bounds=(">=1",))
tool.register("binary", True, "Write the calibration model in binary mode")
quality_options.register_quality_options(tool, training=True)


def run(opts, args):
    if len(args) < 3:
        raise UsageError("")
    trials_rx, score_rxs, model_wx = args[0], args[1:-1], args[-1]
    measures = quality_options.training_measures(opts)
    tables = quality_options.read_side_tables(opts) if measures else None
    scores, labels, num_trials, (keys, ids1, ids2) = read_joined_scores(
        tool.log, score_rxs, trials_rx, key_ids=True)
    num_tar, num = int(labels.sum()), labels.size
    tool.log.log("Training on %d of %d trials (%d target, %d non-target) with %d score "
                 "file(s)" % (num, num_trials, num_tar, num - num_tar, len(score_rxs)))
    if num_tar == 0 or num_tar == num:
        raise KaldiError("Calibration needs both target and non-target trials with scores; "
                         "got %d target and %d non-target" % (num_tar, num - num_tar))
    if measures:
        quality = quality_options.trial_values(tables, ids1, ids2, keys)
        del ids1, ids2
        model = QualityFusion(measures=measures, interactions=opts.quality_interactions,
                              prior=opts.prior, regularization=opts.regularization,
                              max_iter=opts.max_iters).fit(scores, labels, *quality)
        llr = model.transform(scores, *quality)
        _log_model(model, model.feature_names(scores.shape[1]), model.fusion_.weights_)
    else:
        del ids1, ids2
        cls = LinearCalibration if len(score_rxs) == 1 else LinearFusion
        model = cls(prior=opts.prior, regularization=opts.regularization,
                    max_iter=opts.max_iters).fit(scores, labels)
        _log_model(model, None, model.weights_)
        llr = model.transform(scores)
    for k in range(scores.shape[1]):
        _log_llr_metrics("Training trials, input %d (%s)" % (k + 1, score_rxs[k]),
                         scores[:, k], labels, opts.prior)
    del scores                      # one n-sized array fewer for the calibrated figures
    _log_llr_metrics("Training trials, calibrated", llr, labels, opts.prior)
    write_calibration(model_wx, model, binary=opts.binary)
    tool.log.log("Wrote calibration model to %s" % model_wx)
    return 0


def _log_model(model, names, weights):
    tool.log.log("Newton's method converged in %d iterations; objective %s, gradient norm %s"
                 % (model.n_iter_, format_float(model.objective_), format_float(model.grad_norm_)))
    if names is None:
        tool.log.log("Learned llr = w . s + b with w =%s and b = %s"
                     % (format_vector(weights), format_float(model.offset_)))
    else:
        tool.log.log("Learned llr = w . [%s] + b with w =%s and b = %s"
                     % (", ".join(names), format_vector(weights), format_float(model.offset_)))


def _log_llr_metrics(what, values, labels, prior):
    """LOG Cllr, actDCF and minCllr of one score column (its two classes copied once and
    sorted in place, so the metrics need no further copies)."""
    tar, non = values[labels], values[~labels]
    tar.sort()
    non.sort()
    tool.log.log("%s: Cllr %s, actDCF(%s) %s, minCllr %s" % (
        what, format_float(cllr(tar, non)), format_float(prior),
        format_float(act_dcf(tar, non, prior)), format_float(min_cllr(tar, non))))


def main(argv=None):
    return tool.main(run, argv, outputs=-1)


if __name__ == "__main__":
    raise SystemExit(main())
