"""train-pauc-metric: learn a pAUCMetric/TripletMetric Mahalanobis matrix (paper Alg. 1)."""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import Progress, Tool, format_float
from pauc_backend.cli.options import pauc as pauc_options
from pauc_backend.cli.framework.speaker_tables import as_spk2utt, gather_speakers
from pauc_backend.cli.framework.vector_input import check_finite
from pauc_backend.errors import KaldiError
from pauc_backend.heartbeat import Heartbeat
from pauc_backend.kaldi_io import read_token_vector_table, read_vector_table, write_matrix
from pauc_backend.models.metric_learning import PaucMetric, TripletMetric, group_by_speaker

USAGE = """
Learns the matrix M of the squared Mahalanobis distance S = (x1-x2)^T M (x1-x2) that maximises
the partial AUC over the false-alarm range [--pauc-alpha, --pauc-beta] of same/different
speaker pairs (pAUCMetric; --loss=triplet: TripletMetric), by mini-batch proximal point
iterations from M = I. Speakers are read from spk2utt (or utt2spk); speakers with one vector
are skipped. The metric is written as a double matrix (DM, d x d); score with
score-pauc-trials.

Usage: train-pauc-metric [options] <spk2utt-rspecifier> <vector-rspecifier> <metric-wxfilename>
e.g.: train-pauc-metric --write-transform=exp/metric.mat ark:data/train/spk2utt ark:exp/train_latent.ark exp/metric
"""

tool = Tool("train-pauc-metric", USAGE, docs="docs/tool-reference.md#train-pauc-metric")
tool.register("loss", "pauc", "Loss: pauc (pAUCMetric, tetrad constraints, eq. 8) or triplet "
              "(TripletMetric, eq. 17)", choices=("pauc", "triplet"))
pauc_options.register_band(tool, "of the pAUC the metric maximises")
pauc_options.register_metric(tool)          # declared once, in models/auto/params.py
tool.register("seed", 0, "Seed of the random batches and held-out speakers")
tool.register("auto-tune", False, "Search margin, gamma, mu and eta on held-out speakers first")
tool.register("auto-tune-trials", 12, "Number of settings tried by --auto-tune", bounds=(">=1",))
tool.register("log-every", 100, "Log the objective (eq. 7) and training pAUC this often",
              bounds=(">=0",))
tool.register("progress-interval", 30.0, "Log a progress line (stage, iteration, elapsed, "
              "estimated remaining) at least this often, in seconds of work (0: every "
              "iteration)", bounds=(">=0",))
tool.register("write-transform", "", "Also write A (A^T A = M) as a float matrix, for "
              "transform-vectors")
tool.register("binary", True, "Write output in binary mode")


def make_estimator(opts, callback=None):
    cls = {"pauc": PaucMetric, "triplet": TripletMetric}[opts.loss]
    model = cls(alpha=opts.pauc_alpha, beta=opts.pauc_beta,
                **pauc_options.metric_keywords(opts), random_state=opts.seed,
                callback=callback)
    try:
        model.check_params()
    except ValueError as err:
        raise KaldiError("Bad option: %s" % err) from None
    return model


def run(opts, args):
    spk2utt_rspecifier, vector_rspecifier, metric_wxfilename = args
    log = tool.log
    progress = Progress(opts.num_iters, "train-pauc-metric")

    window = []
    heartbeat = Heartbeat(lambda line: log.log(line, depth=3), opts.progress_interval)

    def callback(record):
        progress.update(1, "%s pAUC %.3f" % (record["stage"], record["train_pauc"]))
        heartbeat.note(step="%s metric, %s" % (opts.loss, record["stage"]),
                       iteration=record["iteration"], num_iters=opts.num_iters,
                       fraction=record["iteration"] / max(1, opts.num_iters))
        window.append((record["objective"], record["train_pauc"]))
        it = record["iteration"]
        if "validation" in record and it % opts.log_every == 0:
            log.log("Iteration %d: held-out EER %s%%, pAUC %s" % (
                it, format_float(100 * record["validation_eer"]),
                format_float(record["validation_pauc"])))
        if it % opts.log_every == 0:
            mean = np.mean(window, axis=0)
            log.log("Iterations %d-%d (%s): mean objective (eq. 7) %s, mean training pAUC %s"
                    % (it - len(window) + 1, it, record["stage"], format_float(mean[0]),
                       format_float(mean[1])))
            window.clear()

    model = make_estimator(opts, callback)
    spk2utt = read_token_vector_table(spk2utt_rspecifier)
    keys, X = read_vector_table(vector_rspecifier)
    position = {key: row for row, key in enumerate(keys)}
    spk2utt, spk2utt_name = as_spk2utt(log, spk2utt, spk2utt_rspecifier, position)
    speakers = gather_speakers(log, spk2utt, position, spk2utt_name, vector_rspecifier)
    rows, labels = speakers.rows, speakers.labels
    if not rows.size:
        raise KaldiError("No speaker in %s has a vector in %s"
                         % (spk2utt_rspecifier, vector_rspecifier))
    check_finite(keys, X, vector_rspecifier, rows)
    kept, _, num_single = group_by_speaker(labels)
    if num_single:
        counts = np.bincount(labels)
        for spk in np.flatnonzero(counts == 1):
            log.warning("Skipping speaker %s: only one utterance" % speakers.speakers[spk])
    if kept.size < 2:
        raise KaldiError("Need at least 2 speakers with 2 or more utterances, found %d "
                         "(%d with one utterance)" % (kept.size, num_single))
    if kept.size < opts.batch_size:
        log.warning("Only %d usable speakers: batch size reduced from %d to %d"
                    % (kept.size, opts.batch_size, kept.size))
    log.log("Training %s metric on %d vectors of dimension %d from %d speakers (%d skipped "
            "with one utterance)" % (opts.loss, int(np.isin(labels, kept).sum()), X.shape[1],
                                     kept.size, num_single))
    heartbeat.begin()
    if opts.auto_tune:
        from pauc_backend.models.autotune import auto_tune
        heartbeat.note(step="auto-tune: %d settings" % opts.auto_tune_trials)
        best = auto_tune(model, X, labels, opts.auto_tune_trials, log=log.log, rows=rows)
        model.set_params(**best)
        heartbeat.begin()
    try:
        model.fit(X, labels, rows=rows)
    finally:
        heartbeat.close()
    progress.close()
    if opts.validation_fraction > 0 and hasattr(model, "best_validation_"):
        log.log("Best held-out %s at iteration %d (%s)%s" % (
            model.criterion, model.best_iteration_, format_float(model.best_validation_),
            "; retrained on all speakers" if opts.refit else ""))
    log.log("Scale factor %s; trace of M is %s" % (
        format_float(model.scale_), format_float(np.trace(model.metric_))))
    write_matrix(metric_wxfilename, model.metric_.astype(np.float64), binary=opts.binary)
    if opts.write_transform:
        write_matrix(opts.write_transform, model.components_.astype(np.float32),
                     binary=opts.binary)
    log.log("Wrote metric to %s" % metric_wxfilename)
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=3, outputs=-1)
