"""train-pauc-auto: pAUCMetric (auto), a back-end chosen by cross-fitting on training speakers."""

import os

from pauc_backend.persist.auto_backend import write_model_dir
from pauc_backend.persist.auto_folds import combine, job_folds, run_fold_job
from pauc_backend.cli.framework.kaldi_cli import Progress, Tool
from pauc_backend.cli.framework.training_table import read_training_table
from pauc_backend.cli.framework.vector_input import check_finite
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_vector_table
from pauc_backend.kaldi_io.commit import claim_outputs
from pauc_backend.kaldi_io.streams import check_writable
from pauc_backend.cli.options import pauc as pauc_options
from pauc_backend.models.auto import params as auto_params
from pauc_backend.models.auto import AutoBackend, dim_label
from pauc_backend.models.auto.adapt import check_candidates
from pauc_backend.models.systems import help_text as systems_help
from pauc_backend.models.domain import TrainingDomain, is_out_of_domain
from pauc_backend.cli.framework.domain_check import describe_shift
from pauc_backend.cli.framework import dev_trials as dev_options

USAGE = """
Chooses a whole speaker-verification back-end from TRAINING data alone and trains it.
The training speakers are split into --num-folds folds (seeded); for each fold the whole
back-end (mean, LDA, PLDA, pAUCMetric on length-normalised and on PLDA-latent vectors) is
retrained on the other folds and scores trials among the held-out speakers, built like your
evaluation trials: --enroll-utts=0 pairs single vectors (utterance against utterance, as
VoxCeleb1-O or TIMIT), --enroll-utts=N enrolls each held-out speaker by the mean of N raw
vectors (as ETRI's 3) and tries it against every other held-out vector. The systems
(--candidates; each optionally with ':as' for AS-norm against the training speakers' means,
or '+'-joined linear fusions, whose weights are also cross-fitted):
%(systems)s
Each candidate at each LDA dimension (--lda-dims, 0 or none = no LDA; each capped by the
vector dimension and the smallest fold's speakers - 1) is rated by its mean held-out pAUC
over [--pauc-alpha, --pauc-beta]; the log lists every candidate's held-out pAUC, EER and
minDCF(0.01). --selection=1se keeps the SIMPLEST candidate (fewest trained parameters) whose
held-out pAUC is within one standard error (paired over folds) of the best, so with few or
out-of-domain training speakers it falls back to what generalises (often cosine_raw); the log
and system.txt say why (chosen vs best or runner-up vs raw cosine, with fold SEs).
The discriminative PLDA's L2 weight is chosen among --dplda-lambdas by the same folds.
The kept candidate is retrained on all speakers; its fusion/calibration weights come from the
pooled held-out scores.

Cost of choosing (bounded whatever the corpus; only the final training grows with it,
linearly in the vectors): the cross-fitting uses at most --max-speakers speakers and
--max-vectors vectors (seeded subsets beyond), at most --max-trials held-out trials per fold,
and halves the candidates in up to three stages (successive halving, the held-out folds as
the resource): 1. the LDA dimensions are screened with the cheap systems (PLDA and the
cosines: closed-form training; AS-norm only of raw cosine, scored once) on every fold, and
the one kept by --selection among them is promoted; 2. there, every candidate is screened on the first
m = max(2, ceil(--num-folds / --screen-factor)) folds; 3. the best 1/--screen-factor of them
are cross-fitted on the other folds (their systems only; a fold's models are trained once).
The choice is among the candidates rated on every fold. Per fold: len(--lda-dims) LDA+PLDA
fits and scorings; at one dimension, on m folds, the two metrics (--num-iters iterations of
--batch-size speakers) and the discriminative PLDA, on the others what the promoted need.
With fewer than 2 m folds there is no candidate screening. The log and system.txt say what
was screened on what and what was promoted, and why.

Memory (n listed vectors of dimension D, S speakers, K folds, d <= the largest LDA dimension,
J = --num-jobs): the vectors are read once (a pipe is fine). Held: the speaker table (about
200 bytes a listed utterance, and a few index arrays of 8 bytes a vector); the table itself
(n D 4 bytes) only when that is at most --in-memory-mb, else it is spooled as it is read to
an unlinked file in $TMPDIR (n D 4 bytes of disk) that the final training reads a block at a
time; the cross-fitting subset, gathered on the way (at most --max-vectors x D x 4 bytes);
the held-out trials (at most K x --max-trials x 17 bytes) and the scores the rating still
needs (at most 13 columns x K x --max-trials x 4 bytes); in each of J processes one fold's
training (D x D and S x D doubles of statistics; the metrics' projected vectors, (K-1)/K of
the subset x d x 4 bytes, twice while a metric trains) and its held-out scoring, one space at
a time (the fold's vectors' LDA vectors, made once, 4 bytes a dimension; the features of one
space, 8 bytes a dimension; and 8 bytes a trial a system); then, with the cross-fitting's
data released, the final model: its statistics, the pAUCMetrics' sample (at most --max-metric-vectors x d x 4 bytes, twice while a metric
trains but the last), the discriminative PLDA's trial grid and the AS-norm cohort (S x D x 4
bytes). With in-domain evidence also: --utt2dur's durations (8 bytes a vector); the
development vectors and at most --max-dev-trials trials, scored in each fold task as its
held-out trials are; the adaptation set and its pseudo-speakers (at most 5,000 clustered,
~8 N^2 bytes), a pseudo-trained winner retrained on the table a block at a time. Beyond the
speaker table nothing grows with n (docs/auto-backend.md).

What cross-fitting cannot see: its held-out speakers are training speakers, so a shift
between the training domain and the vectors you will score is invisible to it. Give
--adapt=<unlabelled vectors of that domain>: the scored vectors are then centred on their
mean, the adapted PLDA (0.75/0.25) and pAUCMetric on its latent vectors replace the PLDA ones
among the default candidates, and each held-out fold is moved into the adaptation set's
domain (its mean and total covariance, one linear map) before it is rated; the log and
system.txt give the adaptation set's size and domain shift (models/domain.py) before and
after. Without it, score-pauc-auto warns when the scored vectors look out of domain.
With --adapt (and no development trials) the adaptation set is also clustered into
pseudo-speakers (models/auto/pseudo.py; design and measurements:
benchmarks/RESULTS_pseudo_speakers.md): average linkage on the cosine of its vectors centred
on their mean, cut at the training speakers' EER threshold moved into its own scores, then
once more on the LLRs of a PLDA of the training + these pseudo-speakers. With at least 10
pseudo-speakers of >= 4 vectors, an in-domain stage rates the training folds' choice, raw and
centred cosine, and PLDAs trained with the pseudo-speakers (LDA re-estimated; pooled, or a 0.75
blend with PLDA-adp; each with or without AS-norm against <= 1,000 adaptation vectors) on 2
speaker-disjoint folds of pseudo-speakers; a candidate worse there than a simpler one, or not
better than each cosine baseline, by more than their paired SE is not chosen. A pseudo-trained
winner is retrained on every training vector and pseudo-speaker. system.txt reports the
clustering (pseudo_*) and both sources side by side (in_domain_*). Cost, whatever the corpus:
at most 5,000 adaptation vectors clustered (~8 N^2 bytes: 200 MB) and the rest (of at most
--max-adapt-vectors) assigned in O(N x 5,000); the stopping rule's 2,000 training vectors;
rating trials among the <= 5,000 clustered vectors; per rating fold three streamed passes
over the cross-fitting subset (LDA, pooled and training PLDA statistics), the final model's
over every training vector.

In-domain evidence: labelled development trials of your domain (--dev-vectors, --dev-trials,
optionally --dev-enroll, --dev-utt2spk, --dev-utt2dur). Every fold's models also score them
(at most --max-dev-trials, a seeded sample beyond); a candidate's development figure is that
of its folds' scores averaged, its standard errors come from --dev-resamples paired two-way
cluster-bootstrap resamples of the development speakers, and a fusion is rated with weights
cross-fitted over groups of the enrolled speakers. The rule (models/auto/selection.py): the
development trials RATE (the training folds are only reported, in the log and system.txt side
by side); raw cosine (cosine_raw) and the cosine of vectors centred on the in-domain mean at
LDA none (cosine_centred, with --adapt centred on the adaptation set's mean) are then ALWAYS
candidates, even when --candidates omits them (LDA none is added to --lda-dims for the
latter), and any other candidate is chosen only if it beats EACH of them on the development
trials by more than its paired standard error; among those and the two baselines, --selection
decides. Without in-domain evidence the rule is the training folds' (--selection, as above;
an explicit --candidates list is then taken as given). The chosen back-end, retrained on every
training speaker, scores the development trials once more and its final fusion/calibration is
learned on those scores (else on the pooled held-out scores of the training folds).
Quality measures (QMF, as train-calibration): --quality-measures=auto keeps, among the sets
the data allow (none; norm = the raw vectors' norm over the training median, which needs
nothing; with durations (--dev-utt2dur, or --utt2dur without development trials) duration and
duration+norm), the simplest whose cross-fitted calibration loss is within one paired SE of
the best; score-pauc-auto then needs --enroll-duration/--test-duration when durations are kept.
The development options work in one process (not with --fold-stage/--combine).

The input vectors are RAW (as extracted, not mean-subtracted). The model directory holds
Kaldi-format pieces (mean.vec, transform.mat, plda, metric_*, fusion) and system.txt, which
names the chosen system and its cross-fitted figures. Score with score-pauc-auto.
The paper's algorithm alone: --candidates=pauc_latent --lda-dims=100 (with --num-folds=2 the
cross-fitting only serves to calibrate it). The choice before the "no LDA" candidates, the
discriminative PLDA, the 1se rule and the screening: --lda-dims=100,150,200 --selection=best
--screen-factor=1 --max-speakers=0 --max-vectors=0 --max-trials=3000000 --num-iters=1000
--candidates=<the old list, without cosine_raw and dplda>.

Progress: a LOG line "Progress: fold k of n, LDA d: <system> metric, iteration i of N;
elapsed ..., estimated remaining ..." at least every --progress-interval seconds of work, also
from the worker processes of --num-jobs (one whole line each).
Folds as separate jobs (e.g. through $train_cmd = run.pl, queue.pl or slurm.pl):
  $train_cmd JOB=1:NJ log/fold_screen.JOB.log train-pauc-auto --fold-stage=1 --fold=JOB \\
     --fold-jobs=NJ [options] <vectors> <spk2utt> <fold-dir>
  (the same with --fold-stage=2, log/fold.JOB.log, then --fold-stage=3,
   log/fold_promoted.JOB.log)
  train-pauc-auto --combine=<fold-dir> [options] <vectors> <spk2utt> <model-dir-out>
Job J does folds J, J+NJ, ...; each stage reads the previous one of every fold (it needs its
ratings) and may have nothing to do; --combine chooses and trains the final back-end: the
same system and the same model files as one process. Give every step the same options and
data: each output stores their digest and a sha256 of its figures and scores, and a mismatch,
a changed file or a missing fold is an ERROR naming it.
The speakers may also be given as utt2spk (lines "<utterance> <speaker>"): the tools read
either form (a LOG line says when a table was read as utt2spk).

Usage: train-pauc-auto [options] <train-vector-rspecifier> <train-spk2utt-rspecifier> <model-dir-out>
e.g.: train-pauc-auto --enroll-utts=3 scp:data/train/xvector.scp ark:data/train/spk2utt exp/pauc_auto
""" % {"systems": systems_help()}

tool = Tool("train-pauc-auto", USAGE)
for _param in auto_params.options():      # declared once, in models/auto/params.py
    pauc_options.register(tool, _param)
tool.check(pauc_options.check_band)
tool.register("utt2group", "", "Optional table utterance -> group (e.g. the recording stretch "
              "a segment was cut from); with --enroll-utts=0 two vectors of one group are never "
              "paired in the held-out trials, as evaluation lists often exclude such pairs")
tool.register("adapt", "", "Unlabelled vectors of the domain you will score (e.g. "
              "scp:data/sre16_major/xvector.scp): the centring mean comes from them, the PLDA "
              "adapted to them (0.75/0.25, as the recipes' adapt-plda) and the metric on its "
              "latent vectors are candidates (plda_adapt, pauc_latent_adapt; they replace plda "
              "and pauc_latent in the default --candidates), and the log and system.txt give "
              "their domain shift; without it score-pauc-auto warns when the scored vectors "
              "look out of the training domain; with at least 10 pseudo-speakers of >= 4 "
              "vectors found in them, an in-domain stage on pseudo-speaker folds chooses the "
              "final system (cost and rule: the text above)")
tool.register("adapt-utt2dur", "", "Durations in seconds of the --adapt utterances (utt2dur), "
              "for the duration quality measure of a calibration learned on the "
              "pseudo-speaker trials of the adaptation set")
dev_options.register(tool)
tool.register("binary", True, "Write the model pieces in binary mode")
tool.register("fold-stage", 0, "0: the whole training here; 1, 2 or 3: only that stage of the "
              "cross-fitting for the folds of job --fold, written to the directory given as "
              "<model-dir-out> (see above)", bounds=(">=0", "<=3"))
tool.register("fold", 0, "With --fold-stage: the number J of this fold job (1..--fold-jobs)",
              bounds=(">=0",))
tool.register("fold-jobs", 0, "With --fold-stage: the number of fold jobs (job J does folds J, "
              "J+NJ, ...); 0: one fold per job", bounds=(">=0",))
tool.register("combine", "", "Directory of the fold jobs' outputs: choose and train the final "
              "back-end from them (instead of cross-fitting here)")
tool.register("in-memory-mb", 256.0, "Hold a training table of at most this many MB (listed "
              "vectors x dimension x 4 bytes) in memory; a larger one is spooled to an unlinked "
              "temporary file in $TMPDIR and read back in blocks (the same model either way; "
              "0: always spool). See 'Memory' above", bounds=(">=0",))


@tool.check
def _options(opts):
    """The fold-job options together, and every estimator parameter (lists, the pAUC band,
    the metric's options) as the estimator checks it: one ERROR before any input."""
    if opts.fold_stage and opts.combine:
        raise KaldiError("--fold-stage and --combine exclude each other")
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
    A, adapt_keys = read_adapt(opts.adapt, table, log) if opts.adapt else (None, None)
    adapt_durations = None
    if opts.adapt_utt2dur:
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
                     log=log.log, X_adapt=A)
        progress.close()
        return 0
    if opts.combine:
        combine(model, table, None, None, opts.combine, X_adapt=A,
                durations=table.durations, adapt_durations=adapt_durations)
    else:
        try:
            model.fit(table, X_adapt=A, dev=dev, durations=table.durations,
                      adapt_durations=adapt_durations)
        except ValueError as err:
            raise KaldiError("Cannot choose a back-end: %s" % err) from None
    progress.close()
    write_model_dir(model_dir, model, binary=opts.binary,
                    extra_lines=["train_vectors %d" % table.shape[0],
                                 "train_speakers %d" % table.num_speakers])
    log.log("Wrote %s: %s, LDA %s (%s)" % (
        model_dir, "+".join(model.members_), dim_label(model.lda_dim_),
        model.card_[1].split(" ", 1)[1]))
    return 0


def read_adapt(rspecifier, table, log):
    """(the --adapt vectors, checked, their keys), with their domain shift from the training
    vectors logged (models.domain; the same measure score-pauc-auto warns on)."""
    keys, A = read_vector_table(rspecifier)
    if len(keys) < 2:
        raise KaldiError("--adapt=%s has %d vectors; the adaptation set needs at least 2"
                         % (rspecifier, len(keys)))
    if A.shape[1] != table.shape[1]:
        raise KaldiError("--adapt=%s has vectors of dimension %d but the training vectors %d"
                         % (rspecifier, A.shape[1], table.shape[1]))
    check_finite(keys, A, rspecifier)
    shift = TrainingDomain().fit(table.X, table.y).shift(A)
    log.log("Read %d adaptation vectors from %s; %s%s" % (
        len(keys), rspecifier, describe_shift(shift),
        " (out of the training domain: adaptation is what they are for)"
        if is_out_of_domain(shift) else ""))
    return A, keys


def main(argv=None):
    return tool.main(run, argv, num_args=3)
