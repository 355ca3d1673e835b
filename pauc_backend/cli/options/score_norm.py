"""--score-norm, --cohort and --top-n for the scoring tools: cohort Z/T/S/AS-norm around a
``score_fn(enroll_rows, test_rows)`` (the contract of trial_scoring.score_trial_list).

The definitions are WeSpeaker's (pauc_backend.models.score_norm). Each tool supplies a *grid*
function ``grid(start, stop)``: the (stop - start, C) scores of its enrollment (or test) vectors
``start:stop`` against every cohort vector, computed with the tool's own scoring function. The
cohort statistics of every enrollment and test vector are computed once, in blocks of about
``GRID_CELLS`` scores (one matrix product and a partial selection per block), before any trial
is scored; the wrapped score_fn then only gathers four numbers per trial.
"""

import numpy as np

from pauc_backend.cli.framework.kaldi_cli import format_float
from pauc_backend.errors import KaldiError
from pauc_backend.models.score_norm import METHODS, blockwise_cohort_statistics, normalize_scores

GRID_CELLS = 1 << 21        # cohort scores held at once (16 MB of float64)

HELP_TEXT = """
Score normalisation (--score-norm, default none): every enrollment and every test vector is
scored against each vector of --cohort (same space as the inputs, scored by this tool's own
function); mu and sigma are the mean and population standard deviation of its --top-n highest
cohort scores (s: the whole cohort). z: (s-mu_e)/sigma_e; t: (s-mu_t)/sigma_t;
s and as: ((s-mu_e)/sigma_e + (s-mu_t)/sigma_t)/2 (WeSpeaker's score_norm.py).
A common cohort is the training speakers' mean vectors, preprocessed exactly as the inputs
(e.g. normalize-vector-length with the same --scaleup): a cohort on another scale gives
meaningless statistics.
"""


def register_score_norm_options(tool, cohort_what="vectors in the same space as the inputs"):
    tool.register("score-norm", "none", "Score normalisation: none, z, t, s or as (adaptive "
                  "s-norm over the --top-n highest cohort scores)", choices=METHODS)
    tool.register("cohort", "", "Cohort for --score-norm: rspecifier of " + cohort_what)
    tool.register("top-n", 0, "Number of highest cohort scores per vector for --score-norm=as "
                  "(required there); with z or t, adaptive z/t-norm; 0 = the whole cohort",
                  bounds=(">=0",))
    tool.check(check_score_norm_options)


def check_score_norm_options(opts):
    """The options that go together (registered as a check: runs before any file is read);
    returns the method."""
    method = opts.score_norm
    if method == "none":
        if opts.cohort or opts.top_n:
            raise KaldiError("Invalid options: --cohort and --top-n need --score-norm=z, t, s "
                             "or as")
        return method
    if not opts.cohort:
        raise KaldiError("Invalid option --score-norm=%s: it needs --cohort" % method)
    if method == "as" and not opts.top_n:
        raise KaldiError("Invalid option --score-norm=as: it needs --top-n (e.g. --top-n=300)")
    if method == "s" and opts.top_n:
        raise KaldiError("Invalid option --top-n with --score-norm=s, which uses the whole "
                         "cohort; for the top N use --score-norm=as --top-n=N")
    return method


def _statistics(grid, num_rows, num_cohort, top_n):
    block = max(1, GRID_CELLS // max(num_cohort, 1))
    return blockwise_cohort_statistics(grid, num_rows, top_n, block)


def normalizing_score_fn(log, opts, score_fn, num_cohort, enroll, test):
    """Wrap ``score_fn`` with the normalisation chosen by ``opts``.

    ``enroll`` and ``test`` are ``(keys, grid)``: the table's keys in row order and its grid
    function. Returns ``score_fn`` itself for --score-norm=none.
    """
    method = opts.score_norm
    if method == "none":
        return score_fn
    if num_cohort == 0:
        raise KaldiError("The cohort %s is empty" % opts.cohort)
    top_n = opts.top_n if opts.top_n else None
    if top_n is not None and top_n >= num_cohort:
        log.warning("--top-n=%d is not below the cohort size %d: the whole cohort is used"
                    % (top_n, num_cohort))
        top_n = None
    stats = {}
    for side, (keys, grid), wanted in (("enrollment", enroll, method in ("z", "s", "as")),
                                       ("test", test, method in ("t", "s", "as"))):
        if wanted:
            mean, std = _statistics(grid, len(keys), num_cohort, top_n)
            stats[side] = (list(keys), mean, std)
    log.log("%s-norm with a cohort of %d vectors from %s, %s" % (
        method, num_cohort, opts.cohort,
        "all of them" if top_n is None else "the %d highest scores" % top_n))

    def pick(side, rows):
        if side not in stats:
            return None, None
        keys, mean, std = stats[side]
        std_rows = std[rows]
        bad = np.flatnonzero(~(std_rows > 0))
        if bad.size:
            row = int(rows[bad[0]])
            raise KaldiError("Cannot %s-normalise: the cohort scores of %s vector %s are all "
                             "equal (standard deviation %s)"
                             % (method, side, keys[row], format_float(std[row])))
        return mean[rows], std_rows

    def normalized(enroll_rows, test_rows):
        raw = score_fn(enroll_rows, test_rows)
        enroll_mean, enroll_std = pick("enrollment", enroll_rows)
        test_mean, test_std = pick("test", test_rows)
        return normalize_scores(raw, method, enroll_mean, enroll_std, test_mean, test_std)

    return normalized
