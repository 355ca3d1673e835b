"""train-pauc-auto: pAUCMetric (auto), a back-end chosen by cross-fitting on training speakers."""

import os

from pauc_backend.persist.auto_backend import write_model_dir
from pauc_backend.persist.auto_folds import combine, job_folds, run_fold_job
from pauc_backend.cli.framework.kaldi_cli import Progress, Tool
from pauc_backend.cli.framework.training_table import read_training_table
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io.commit import claim_outputs
from pauc_backend.kaldi_io.outputs import check_writable
from pauc_backend.cli.options import pauc as pauc_options
from pauc_backend.models.auto import params as auto_params
from pauc_backend.models.auto import AutoBackend, dim_label
from pauc_backend.models.auto.adapt import check_candidates
from pauc_backend.models.systems import help_text as systems_help
from pauc_backend.cli.framework.adapt_set import read_adapt
from pauc_backend.cli.framework.adapt_set import system_lines as adapt_system_lines
from pauc_backend.cli.framework import dev_trials as dev_options

USAGE = """
pAUCMetric (auto), the recommended back-end: chooses a whole back-end (LDA dimension,
centring, PLDA, pAUCMetrics, AS-norm, or a fusion of them) by cross-fitting on the TRAINING
speakers alone (--num-folds speaker-disjoint folds, held-out trials built as --enroll-utts
says), then retrains the choice on all of them. The vectors are RAW (as extracted). --adapt
gives unlabelled vectors of the domain you will score, --dev-* labelled trials of it.
system.txt in the model directory says what was chosen and why; score with score-pauc-auto.

Usage: train-pauc-auto [options] <train-vector-rspecifier> <train-spk2utt-rspecifier> <model-dir-out>
   or: train-pauc-auto --fold-stage=1|2|3 --fold=J --fold-jobs=NJ [options] <train-vector-rspecifier> <train-spk2utt-rspecifier> <fold-dir>
   or: train-pauc-auto --combine=<fold-dir> [options] <train-vector-rspecifier> <train-spk2utt-rspecifier> <model-dir-out>
e.g.: train-pauc-auto --enroll-utts=3 scp:data/train/xvector.scp ark:data/train/spk2utt exp/pauc_auto

The systems (--candidates; each optionally with ':as' for AS-norm against the training
speakers' means, or '+'-joined linear fusions, whose weights are also cross-fitted):
%(systems)s""" % {"systems": systems_help()}

tool = Tool("train-pauc-auto", USAGE, docs="docs/auto-backend.md")
for _param in auto_params.options():      # declared once, in models/auto/params.py
    pauc_options.register(tool, _param)
tool.check(pauc_options.check_band)
tool.register("utt2group", "", "Optional table utterance -> group (e.g. the recording stretch "
              "a segment was cut from); with --enroll-utts=0 two vectors of one group are never "
              "paired in the held-out trials, as evaluation lists often exclude such pairs")
tool.register("adapt", "", "Unlabelled vectors of the domain you will score (e.g. "
              "scp:data/sre16_major/xvector.scp), checked first (a set without speaker "
              "structure is not used: one WARNING): the centring mean comes from them, the PLDA "
              "adapted to them (0.75/0.25, as the recipes' adapt-plda) and the metric on its "
              "latent vectors are candidates (plda_adapt, pauc_latent_adapt; they replace plda "
              "and pauc_latent in the default --candidates); with speaker clusters in them "
              "(at least 10 pseudo-speakers of >= 4 vectors), trials among their "
              "pseudo-speakers rate every candidate and PLDAs trained with them are "
              "candidates too; the log and system.txt give their domain shift (rule and cost: "
              "docs/auto-backend.md)")
tool.register("adapt-utt2dur", "", "Durations in seconds of the --adapt utterances (utt2dur), "
              "for the duration quality measure of a final calibration learned on the "
              "pseudo-speaker trials of the adaptation set")
dev_options.register(tool)
tool.register("binary", True, "Write the model pieces in binary mode")
tool.register("fold-stage", 0, "0: the whole training here; 1, 2 or 3: only that stage of the "
              "cross-fitting for the folds of job --fold, written to the directory given as "
              "<model-dir-out> (the second Usage: form)", bounds=(">=0", "<=3"))
tool.register("fold", 0, "With --fold-stage: the number J of this fold job (1..--fold-jobs)",
              bounds=(">=0",))
tool.register("fold-jobs", 0, "With --fold-stage: the number of fold jobs (job J does folds J, "
              "J+NJ, ...); 0: one fold per job", bounds=(">=0",))
tool.register("combine", "", "Directory of the fold jobs' outputs: choose and train the final "
              "back-end from them (instead of cross-fitting here)")
tool.register("in-memory-mb", 256.0, "Hold a training table of at most this many MB (listed "
              "vectors x dimension x 4 bytes) in memory; a larger one is read again in blocks "
              "from its archive files, or, from a pipe or text, spooled to an unlinked "
              "temporary file in $TMPDIR (the same model either way; 0: never held). Memory: "
              "docs/auto-backend.md#memory-by-design", bounds=(">=0",))


@tool.check
def _options(opts):
    """The fold-job options together, and every estimator parameter (lists, the pAUC band,
    the metric's options) as the estimator checks it: one ERROR before any input."""
    if opts.fold_stage and opts.combine:
        raise KaldiError("--fold-stage and --combine exclude each other")
    if opts.adapt_utt2dur and not opts.adapt:
        raise KaldiError("Invalid options: --adapt-utt2dur needs --adapt (the durations of "
                         "its utterances)")
    if opts.fold_stage and not opts.fold:
        raise KaldiError("--fold-stage=%d needs --fold=J (the job number, from 1)"
                         % opts.fold_stage)
    if opts.fold and not opts.fold_stage:
        raise KaldiError("--fold=%d needs --fold-stage=1 or 2 or 3" % opts.fold)
    if opts.fold_stage:
        job_folds(opts.fold, opts.fold_jobs, max(2, opts.num_folds))   # the job number
    dev_options.check_options(opts)
    model = make_estimator(opts)
    try:
        check_candidates(model.candidates, bool(opts.adapt))
    except ValueError as err:
        raise KaldiError("Bad option: --candidates: %s" % str(err).replace(
            "(X_adapt; train-pauc-auto --adapt)", "(give --adapt=<unlabelled in-domain "
            "vectors>)")) from None


def make_estimator(opts, log=None, progress=None, warn=None):
    """The AutoBackend of the options; KaldiError naming a bad one."""
    try:
        kwargs = auto_params.from_options(opts)
        model = AutoBackend(log=log, progress=progress, warn=warn, **kwargs)
        model.check_params()
    except ValueError as err:
        raise KaldiError("Bad option: %s" % _option_names(err)) from None
    return model


def _option_names(err):
    """The estimator's message with its parameter names as the options' (alpha=... ->
    --pauc-alpha=...)."""
    text = str(err)
    for p in auto_params.options():
        if text.startswith(p.name + "="):
            return "--%s=%s" % (p.option, text[len(p.name) + 1:])
    return text


def run(opts, args):
    vector_rspecifier, spk2utt_rspecifier, model_dir = args
    check_writable(model_dir, directory=True)
    if not opts.fold_stage:
        # one run writes a model directory: a second stops here, before reading any input
        # (fold jobs share their fold directory; each locks its own outputs as it writes)
        claim_outputs([os.path.realpath(model_dir)])
    log = tool.log
    progress = Progress(1, "train-pauc-auto")

    def log_line(message):
        progress.update(0, message[:60])
        log.log(message, depth=2)

    model = make_estimator(opts, log_line, lambda line: log.log(line, depth=3),
                           lambda line: log.warning(line, depth=3))
    # one pass over the vectors: the cross-fitting subset gathered, the table held or spooled;
    # groups and durations in the table's row order
    table = read_training_table(log, vector_rspecifier, spk2utt_rspecifier, (
        model.max_speakers, model.max_vectors, model.random_state), opts.in_memory_mb,
        opts.utt2group, opts.utt2dur)
    log.log("Read %d vectors of dimension %d from %d speakers"
            % (table.shape + (table.num_speakers,)))
    A, adapt_check, adapt_keys = (read_adapt(opts.adapt, table, log, model) if opts.adapt
                                  else (None, None, None))
    adapt_durations = None
    if opts.adapt_utt2dur and A is not None:
        adapt_durations = dev_options.read_durations(opts.adapt_utt2dur, adapt_keys,
                                                     "adaptation utterance")
    dev = dev_options.read_dev_trials(opts, table.shape[1], log) if opts.dev_trials else None
    if opts.fold_stage:
        folds = job_folds(opts.fold, opts.fold_jobs, opts.num_folds)
        if not folds:
            log.log("Job %d of %d has no fold (--num-folds=%d): nothing to do"
                    % (opts.fold, opts.fold_jobs, opts.num_folds))
            return 0
        run_fold_job(model, table, None, None, opts.fold_stage, folds, model_dir,
                     log=log.log, X_adapt=A, adapt_check=adapt_check)
        progress.close()
        return 0
    if opts.combine:
        combine(model, table, None, None, opts.combine, X_adapt=A,
                durations=table.durations, adapt_durations=adapt_durations,
                adapt_check=adapt_check)
    else:
        try:
            model.fit(table, X_adapt=A, dev=dev, durations=table.durations,
                      adapt_durations=adapt_durations, adapt_check=adapt_check)
        except ValueError as err:
            raise KaldiError("Cannot choose a back-end: %s" % err) from None
    progress.close()
    write_model_dir(model_dir, model, binary=opts.binary,
                    extra_lines=["train_vectors %d" % table.shape[0],
                                 "train_speakers %d" % table.num_speakers]
                    + (adapt_system_lines(adapt_check) if A is None and adapt_check else []))
    log.log("Wrote %s: %s, LDA %s (%s)" % (
        model_dir, "+".join(model.members_), dim_label(model.lda_dim_),
        model.card_[1].split(" ", 1)[1]))
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=3)
