"""train-pauc-auto: pAUCMetric (auto), a back-end chosen by cross-fitting on training speakers."""

import numpy as np

from pauc_backend.persist.auto_backend import write_model_dir
from pauc_backend.persist.auto_folds import combine, job_folds, run_fold_job
from pauc_backend.cli.framework.kaldi_cli import Progress, Tool, format_float
from pauc_backend.cli.framework.speaker_tables import gather_speakers
from pauc_backend.cli.framework.vector_input import check_finite
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_token_table, read_token_vector_table, read_vector_table
from pauc_backend.kaldi_io.streams import check_writable
from pauc_backend.models.auto_backend import (DEFAULT_CANDIDATES, AutoBackend, dim_label,
                                             parse_candidate)
from pauc_backend.models.backend_pipeline import DPLDA_LAMBDAS

USAGE = """
Chooses a whole speaker-verification back-end from TRAINING data alone and trains it.
The training speakers are split into --num-folds folds (seeded); for each fold the whole
back-end (mean, LDA, PLDA, pAUCMetric on length-normalised and on PLDA-latent vectors) is
retrained on the other folds and scores trials among the held-out speakers, built like your
evaluation trials: --enroll-utts=0 pairs single vectors (utterance against utterance, as
VoxCeleb1-O or TIMIT), --enroll-utts=N enrolls each held-out speaker by the mean of N raw
vectors (as ETRI's 3) and tries it against every other held-out vector. Every candidate
system (--candidates: cosine_raw = cosine of the raw unit-length vectors, no mean, no LDA;
cosine, plda, dplda = discriminative PLDA, pauc_lnorm, pauc_latent; each optionally with ':as'
for AS-norm against the training speakers' means, or '+'-joined linear fusions, whose weights
are also cross-fitted) at every LDA dimension (--lda-dims, 0 or none = no LDA; each capped by
the vector dimension and the smallest fold's speakers - 1) is rated by its mean held-out pAUC
over [--alpha, --beta]; the log lists every candidate's held-out pAUC, EER and minDCF(0.01).
--selection=1se keeps the SIMPLEST candidate (fewest trained parameters) whose held-out pAUC
is within one standard error (paired over folds) of the best, so with few or out-of-domain
training speakers it falls back to what generalises (often cosine_raw); the log and
system.txt say why (chosen vs best or runner-up vs raw cosine, with fold SEs).
The discriminative PLDA's L2 weight is chosen among --dplda-lambdas by the same folds.
The kept candidate is retrained on all speakers; its fusion/calibration weights come from the
pooled held-out scores.
The input vectors are RAW (as extracted, not mean-subtracted). The model directory holds
Kaldi-format pieces (mean.vec, transform.mat, plda, metric_*, fusion) and system.txt, which
names the chosen system and its cross-fitted figures. Score with score-pauc-auto.
The paper's algorithm alone: --candidates=pauc_latent --lda-dims=100 (with --num-folds=2 the
cross-fitting only serves to calibrate it). The choice before the "no LDA" candidates, the
discriminative PLDA and the 1se rule: --lda-dims=100,150,200 --selection=best
--candidates=<the old list, without cosine_raw and dplda>.

Progress: a LOG line "Progress: fold k of n, LDA d: <system> metric, iteration i of N;
elapsed ..., estimated remaining ..." at least every --progress-interval seconds of work, also
from the worker processes of --num-jobs (one whole line each).
Folds as separate jobs (e.g. through $train_cmd = run.pl, queue.pl or slurm.pl):
  $train_cmd JOB=1:NJ log/fold_screen.JOB.log train-pauc-auto --fold-stage=1 --fold=JOB \\
     --fold-jobs=NJ [options] <vectors> <spk2utt> <fold-dir>
  $train_cmd JOB=1:NJ log/fold.JOB.log train-pauc-auto --fold-stage=2 --fold=JOB \\
     --fold-jobs=NJ [options] <vectors> <spk2utt> <fold-dir>
  train-pauc-auto --combine=<fold-dir> [options] <vectors> <spk2utt> <model-dir-out>
Job J does folds J, J+NJ, ...; stage 1 cross-fits what needs no other fold (PLDA and cosine
at every LDA dimension), stage 2 reads stage 1 of every fold, picks the dimension and
cross-fits the other systems there; --combine chooses and trains the final back-end: the
same system and the same model files as one process. Give every step the same options and
data: each output stores their digest and a mismatch or a missing fold is an ERROR.

Usage: train-pauc-auto [options] <train-vector-rspecifier> <train-spk2utt-rspecifier> <model-dir-out>
e.g.: train-pauc-auto --enroll-utts=3 scp:data/train/xvector.scp ark:data/train/spk2utt exp/pauc_auto
"""

tool = Tool("train-pauc-auto", USAGE)
tool.register("seed", 0, "Seed of the speaker folds, the held-out enrollments and the metrics")
tool.register("num-folds", 5, "Number of folds of training speakers (>= 2)")
tool.register("enroll-utts", 0, "Held-out trials: 0 = single vector against single vector; "
              "N = enrollment by the mean of N vectors against single test vectors")
tool.register("alpha", 0.0, "Lower end of the false-alarm range of the pAUC criterion")
tool.register("beta", 0.01, "Upper end of the false-alarm range of the pAUC criterion")
tool.register("lda-dims", "none,75,100,125,150,175,200,225,250", "Candidate LDA dimensions, "
              "comma-separated, none (or 0) = no LDA (each capped by the vector dimension and "
              "the smallest fold's speakers - 1)")
tool.register("selection", "1se", "1se: the simplest candidate within one standard error "
              "(paired over folds) of the best held-out pAUC; best: the best")
tool.register("dplda-lambdas", ",".join("%g" % v for v in DPLDA_LAMBDAS), "L2 weights of the "
              "discriminative PLDA's pull to the PLDA, tried by cross-fitting")
tool.register("candidates", ",".join(DEFAULT_CANDIDATES), "Candidate systems, comma-separated; "
              "'+' joins systems into a fusion")
tool.register("max-utts-per-speaker", 0, "Use at most this many vectors of each held-out "
              "speaker in the held-out trials (0: all)")
tool.register("max-trials", 3000000, "Held-out trials per fold at most (0: all). Above it "
              "every target trial is kept (up to half of it) and non-target trials are "
              "sampled (seeded) in per-speaker quotas. Standard error this adds to a fold's "
              "held-out pAUC[0,beta]: sqrt((Var_band[TPR] + (TPR(beta)-pAUC)^2 (1-beta)) / "
              "(beta n_non)), e.g. 0.0006 per fold (0.00025 over 5 folds) at 3 M trials, "
              "beta 0.01, pAUC 0.9 (models/crossfit.py); ETRI and TIMIT folds stay below it")
tool.register("lda-selection", "cheap", "cheap: compare the LDA dimensions with PLDA and "
              "cosine only, then cross-fit the metrics at the best one; all: every candidate "
              "at every dimension (slower)")
tool.register("num-jobs", 2, "Processes for the folds (the work of one fold is one process)")
tool.register("utt2group", "", "Optional table utterance -> group (e.g. the recording stretch "
              "a segment was cut from); with --enroll-utts=0 two vectors of one group are never "
              "paired in the held-out trials, as evaluation lists often exclude such pairs")
tool.register("fusion-prior", 0.01, "Target prior of the fusion/calibration objective")
tool.register("margin", 1.5, "pAUCMetric hinge margin delta (eq. 8)")
tool.register("gamma", 0.5, "pAUCMetric weight of the mean target distance (eq. 9)")
tool.register("mu", 1e-3, "pAUCMetric weight of the LogDet regulariser (eq. 9)")
tool.register("eta", 1.0, "pAUCMetric proximal step size (Alg. 1)")
tool.register("batch-size", 500, "pAUCMetric speakers per mini-batch")
tool.register("num-iters", 1000, "pAUCMetric iterations")
tool.register("binary", True, "Write the model pieces in binary mode")
tool.register("progress-interval", 30.0, "Log a progress line (fold, system, iteration, "
              "elapsed, estimated remaining) at least this often, in seconds of work (0: at "
              "every step)", bounds=(">=0",))
tool.register("fold-stage", 0, "0: the whole training here; 1 or 2: only that stage of the "
              "cross-fitting for the folds of job --fold, written to the directory given as "
              "<model-dir-out> (see above)", bounds=(">=0", "<=2"))
tool.register("fold", 0, "With --fold-stage: the number J of this fold job (1..--fold-jobs)",
              bounds=(">=0",))
tool.register("fold-jobs", 0, "With --fold-stage: the number of fold jobs (job J does folds J, "
              "J+NJ, ...); 0: one fold per job", bounds=(">=0",))
tool.register("combine", "", "Directory of the fold jobs' outputs: choose and train the final "
              "back-end from them (instead of cross-fitting here)")


@tool.check
def _fold_job_options(opts):
    if opts.fold_stage and opts.combine:
        raise KaldiError("--fold-stage and --combine exclude each other")
    if opts.fold_stage and not opts.fold:
        raise KaldiError("--fold-stage=%d needs --fold=J (the job number, from 1)"
                         % opts.fold_stage)
    if opts.fold and not opts.fold_stage:
        raise KaldiError("--fold=%d needs --fold-stage=1 or 2" % opts.fold)
    if opts.fold_stage:
        job_folds(opts.fold, opts.fold_jobs, max(2, opts.num_folds))   # the job number


def parse_dims(text):
    try:
        dims = [0 if part.strip() == "none" else int(part) for part in text.split(",")
                if part.strip()]
    except ValueError:
        raise KaldiError("--lda-dims must be comma-separated integers or none, got '%s'"
                         % text)
    if not dims or min(dims) < 0:
        raise KaldiError("--lda-dims must list dimensions >= 0 (0 or none: no LDA), got '%s'"
                         % text)
    return dims


def parse_lambdas(text):
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or not all(v >= 0 and np.isfinite(v) for v in values):
        raise KaldiError("--dplda-lambdas must be comma-separated weights >= 0, got '%s'"
                         % text)
    return tuple(values)


def make_estimator(opts, log=None, progress=None):
    candidates = [c.strip() for c in opts.candidates.split(",") if c.strip()]
    if not candidates:
        raise KaldiError("--candidates is empty")
    for name in candidates:
        try:
            parse_candidate(name)
        except ValueError as err:
            raise KaldiError("Bad --candidates: %s" % err) from None
    if opts.selection not in ("1se", "best"):
        raise KaldiError("--selection must be 1se or best, got '%s'" % opts.selection)
    if opts.lda_selection not in ("cheap", "all"):
        raise KaldiError("--lda-selection must be cheap or all, got '%s'" % opts.lda_selection)
    if opts.num_jobs < 1:
        raise KaldiError("--num-jobs must be >= 1, got %d" % opts.num_jobs)
    if opts.num_folds < 2:
        raise KaldiError("--num-folds must be >= 2, got %d" % opts.num_folds)
    if opts.max_trials < 0 or 0 < opts.max_trials < 1000:
        raise KaldiError("--max-trials must be 0 (all) or >= 1000, got %d" % opts.max_trials)
    if opts.enroll_utts < 0:
        raise KaldiError("--enroll-utts must be >= 0, got %d" % opts.enroll_utts)
    if not 0.0 <= opts.alpha < opts.beta <= 1.0:
        raise KaldiError("Need 0 <= --alpha < --beta <= 1, got %g and %g"
                         % (opts.alpha, opts.beta))
    if not 0.0 < opts.fusion_prior < 1.0:
        raise KaldiError("--fusion-prior must lie strictly between 0 and 1")
    metric = {"delta": opts.margin, "gamma": opts.gamma, "mu": opts.mu, "eta": opts.eta,
              "batch_size": opts.batch_size, "num_iters": opts.num_iters}
    from pauc_backend.models.metric_learning import PaucMetric
    try:
        PaucMetric(**metric).check_params()
    except ValueError as err:
        raise KaldiError("Bad option: %s" % err) from None
    return AutoBackend(lda_dims=parse_dims(opts.lda_dims), candidates=candidates,
                       num_folds=opts.num_folds, enroll_utts=opts.enroll_utts,
                       alpha=opts.alpha, beta=opts.beta, metric_params=metric,
                       fusion_prior=opts.fusion_prior,
                       max_utts_per_speaker=opts.max_utts_per_speaker or None,
                       lda_selection=opts.lda_selection, n_jobs=opts.num_jobs,
                       selection=opts.selection,
                       dplda_lambdas=parse_lambdas(opts.dplda_lambdas),
                       random_state=opts.seed, log=log,
                       max_trials=opts.max_trials or None, progress=progress,
                       progress_interval=opts.progress_interval)


def run(opts, args):
    vector_rspecifier, spk2utt_rspecifier, model_dir = args
    check_writable(model_dir, directory=True)
    log = tool.log
    progress = Progress(1, "train-pauc-auto")

    def log_line(message):
        progress.update(0, message[:60])
        log.log(message, depth=2)

    model = make_estimator(opts, log_line, lambda line: log.log(line, depth=3))
    keys, X = read_vector_table(vector_rspecifier)
    if not len(keys):
        raise KaldiError("No vectors in %s" % vector_rspecifier)
    spk2utt = read_token_vector_table(spk2utt_rspecifier)
    speakers = gather_speakers(log, spk2utt, keys, spk2utt_rspecifier)
    if not speakers.rows.size:
        raise KaldiError("No speaker in %s has a vector in %s"
                         % (spk2utt_rspecifier, vector_rspecifier))
    check_finite(keys, X, vector_rspecifier, speakers.rows)
    X = X[speakers.rows]
    labels = speakers.labels
    groups = None
    if opts.utt2group:
        table = read_token_table(opts.utt2group)
        utts = [keys[row] for row in speakers.rows]
        missing = [u for u in utts if u not in table]
        if missing:
            raise KaldiError("Utterance %s has no group in %s" % (missing[0], opts.utt2group))
        groups = np.array([table[u] for u in utts])
    log.log("Read %d vectors of dimension %d from %d speakers"
            % (X.shape[0], X.shape[1], len(speakers.speakers)))
    if opts.fold_stage:
        folds = job_folds(opts.fold, opts.fold_jobs, opts.num_folds)
        if not folds:
            log.log("Job %d of %d has no fold (--num-folds=%d): nothing to do"
                    % (opts.fold, opts.fold_jobs, opts.num_folds))
            return 0
        # always binary: the held-out scores must come back as the same doubles
        run_fold_job(model, X, labels, groups, opts.fold_stage, folds, model_dir, log=log.log)
        progress.close()
        return 0
    if opts.combine:
        combine(model, X, labels, groups, opts.combine)
    else:
        try:
            model.fit(X, labels, groups)
        except ValueError as err:
            raise KaldiError("Cannot choose a back-end: %s" % err) from None
    progress.close()
    write_model_dir(model_dir, model, binary=opts.binary,
                    extra_lines=["train_vectors %d" % X.shape[0],
                                 "train_speakers %d" % len(speakers.speakers)])
    log.log("Wrote %s (system %s, LDA %s, held-out pAUC %s)" % (
        model_dir, "+".join(model.members_), dim_label(model.lda_dim_),
        format_float(model.chosen_["pauc"])))
    return 0


def main(argv=None):
    return tool.main(run, argv, num_args=3)
