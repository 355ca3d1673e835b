"""The parameters of pAUCMetric (auto), each declared once: default, allowed values, help.

``AutoBackend`` (models.auto.backend) takes its defaults from here and checks its values
here (``check``); ``train-pauc-auto`` registers its options from here (name, default, help,
choices and bounds in the framework's terms, older names as aliases) and turns the parsed
options back into the estimator's keywords (``from_options``), so neither restates them. The
pAUCMetric hyper-parameters (``metric_params``, ``METRIC_OPTIONS``) take their defaults from
PaucMetric itself, except the number of iterations (the budget of the automatic back-end,
chosen on training folds; see ``metric_defaults``), and are checked by PaucMetric
(check_params); the bounds declared here for the options are the same.

``runtime`` parameters say how the work runs, not what it computes (processes, progress
lines): they do not enter the digest of the fold jobs' outputs.

The pAUC band (``BAND``) and the pAUCMetric hyper-parameters (``METRIC``) are declared here
once for every tool that has them: cli/options/pauc.py registers them on compute-eer-pauc,
compare-systems and plot-det-roc (the band), train-pauc-metric (the band and METRIC) and
train-pauc-auto (PARAMS' alpha and beta and METRIC_OPTIONS, derived from them: the same
defaults and bounds, the automatic back-end's own budget of iterations).
"""

import inspect
import math
from dataclasses import dataclass, replace

from pauc_backend.models.systems import parse_candidate
from pauc_backend.models.discriminative_plda import DPLDA_LAMBDAS
from pauc_backend.models.metric_learning import PaucMetric

__all__ = ["Param", "PARAMS", "BAND", "METRIC", "METRIC_OPTIONS", "DEFAULT_CANDIDATES",
           "DEFAULT_LDA_DIMS", "default", "check", "from_options", "option_text",
           "digest_names"]


_BASE_FUSIONS = ("plda+pauc_lnorm", "plda+pauc_latent", "pauc_lnorm+pauc_latent",
                 "plda+pauc_lnorm+pauc_latent", "cosine_centred+plda+pauc_lnorm+pauc_latent")
_DPLDA_FUSIONS = ("dplda+pauc_lnorm", "dplda+pauc_latent", "dplda+pauc_lnorm+pauc_latent")


def _with_asnorm(name):
    return "+".join(part + ":as" for part in name.split("+"))


DEFAULT_CANDIDATES = (("cosine_raw", "cosine_raw:as", "plda", "cosine_centred", "pauc_lnorm",
                       "pauc_latent", "dplda") + _BASE_FUSIONS + _DPLDA_FUSIONS
                      + ("plda:as", "cosine_centred:as", "pauc_lnorm:as", "pauc_latent:as")
                      + tuple(_with_asnorm(f) for f in _BASE_FUSIONS)
                      + ("plda+pauc_lnorm+pauc_latent+plda:as+pauc_lnorm:as+pauc_latent:as",))
# 0 = no LDA; the others are capped by what the folds support (speakers - 1, vector dim).
DEFAULT_LDA_DIMS = (0, 75, 100, 125, 150, 175, 200, 225, 250)


@dataclass(frozen=True)
class Param:
    """One parameter. ``kind``: int, float, bool, str, dims (LDA dimensions, "none" = 0), names
    (candidates) or floats (a list); ``bounds`` in the framework's form (">=0", "<1");
    ``option``: the train-pauc-auto option (None: Python only); ``aliases``: older option
    names still accepted; ``zero``: what 0 means, for a limit that 0 switches off."""
    name: str
    default: object
    help: str
    kind: str = "int"
    option: str = None
    choices: tuple = None
    bounds: tuple = ()
    aliases: tuple = ()
    runtime: bool = False
    cli_default: object = None
    zero: str = ""

    def problem(self, value):
        """Why ``value`` is not allowed (a phrase), or None."""
        if self.kind in ("bool", "str") and self.choices is None:
            return None
        if self.choices is not None:
            return None if value in self.choices else "must be one of %s" % ", ".join(
                map(str, self.choices))
        if self.kind in ("int", "float"):
            if value is None and self.zero:
                return None
            try:
                number = float(value)
            except (TypeError, ValueError):
                return "must be a number"
            if self.kind == "int" and number != int(number):
                return "must be an integer"
            if not math.isfinite(number):
                return "must be finite"
            for bound in self.bounds:
                op = bound.rstrip("0123456789.e-+")
                limit = float(bound[len(op):])
                ok = {">=": number >= limit, ">": number > limit, "<=": number <= limit,
                      "<": number < limit}[op]
                if not ok:
                    return "must be %s" % " and ".join(
                        "%s %s" % (b.rstrip("0123456789.e-+"), b[len(b.rstrip(
                            "0123456789.e-+")):]) for b in self.bounds)
            return None
        try:
            _parse_list(self, value)
        except ValueError as err:
            return str(err)
        return None


def _floats(value):
    return tuple(float(v) for v in value)


def _parse_list(param, value):
    """The tuple of a list parameter from a sequence or comma-separated text."""
    parts = ([p.strip() for p in value.split(",") if p.strip()] if isinstance(value, str)
             else list(value))
    if not parts:
        raise ValueError("must list at least one value")
    if param.kind == "dims":
        try:
            dims = tuple(0 if str(p) == "none" else int(p) for p in parts)
        except ValueError:
            raise ValueError("must be comma-separated integers or none") from None
        if min(dims) < 0:
            raise ValueError("must list dimensions >= 0 (0 or none: no LDA)")
        return dims
    if param.kind == "floats":
        try:
            values = _floats(parts)
        except (TypeError, ValueError):
            raise ValueError("must be comma-separated numbers") from None
        if not all(v >= 0 and math.isfinite(v) for v in values):
            raise ValueError("must be comma-separated weights >= 0")
        return values
    names = tuple(str(p) for p in parts)
    for name in names:
        parse_candidate(name)          # ValueError naming the unknown system
    return names


_METRIC_DEFAULTS = {name: p.default
                    for name, p in inspect.signature(PaucMetric.__init__).parameters.items()
                    if name != "self"}

# The pAUC band and the pAUCMetric hyper-parameters as options (see the module doc): defaults
# PaucMetric's own, bounds those its check_params enforces (a test pins that they agree),
# help without the tool's context ("of the pAUC", "pAUCMetric"), which the tool adds.
BAND = (
    Param("alpha", 0.0, "Lower end of the false-positive-rate band", "float", "pauc-alpha",
          bounds=(">=0", "<1")),
    Param("beta", 0.01, "Upper end of the false-positive-rate band", "float", "pauc-beta",
          bounds=(">0", "<=1")),
)
METRIC = (
    Param("delta", _METRIC_DEFAULTS["delta"], "hinge margin delta (eq. 8)", "float", "margin",
          bounds=(">=0",)),
    Param("gamma", _METRIC_DEFAULTS["gamma"], "weight gamma of the mean target distance "
          "(eq. 9)", "float", "gamma", bounds=(">=0",)),
    Param("mu", _METRIC_DEFAULTS["mu"], "weight mu of the LogDet regulariser tr(M) - logdet(M) "
          "(eq. 9)", "float", "mu", bounds=(">=0",)),
    Param("eta", _METRIC_DEFAULTS["eta"], "step size eta of the proximal point update (Alg. 1; "
          "paper: 10)", "float", "eta", bounds=(">0",)),
    Param("batch_size", _METRIC_DEFAULTS["batch_size"], "speakers per mini-batch (s), two "
          "vectors each", "int", "batch-size", bounds=(">=2",)),
    Param("num_iters", _METRIC_DEFAULTS["num_iters"], "maximum number of iterations", "int",
          "num-iters", bounds=(">=1",)),
    Param("scale", _METRIC_DEFAULTS["scale"], "multiply the vectors internally by this "
          "factor; auto: so that the mean squared distance between two training vectors is 2",
          "str", "scale"),
    Param("average", _METRIC_DEFAULTS["average"], "return the running mean of the iterates "
          "instead of the last", "bool", "average"),
    Param("validation_fraction", _METRIC_DEFAULTS["validation_fraction"], "fraction of "
          "speakers held out to choose the number of iterations (0: run --num-iters on all "
          "speakers, as the paper)", "float", "validation-fraction", bounds=(">=0", "<1")),
    Param("eval_every", _METRIC_DEFAULTS["eval_every"], "evaluate the held-out speakers every "
          "this many iterations", "int", "eval-every", bounds=(">=1",)),
    Param("patience", _METRIC_DEFAULTS["patience"], "stop after this many evaluations without "
          "improvement (0: never)", "int", "patience", bounds=(">=0",)),
    Param("refit", _METRIC_DEFAULTS["refit"], "retrain on all speakers for the chosen number "
          "of iterations", "bool", "refit"),
)
_BAND = {p.name: p for p in BAND}
_METRIC = {p.name: p for p in METRIC}

PARAMS = (
    Param("lda_dims", DEFAULT_LDA_DIMS, "Candidate LDA dimensions, comma-separated, none (or "
          "0) = no LDA (each capped by the vector dimension and the smallest fold's speakers "
          "- 1)", "dims", "lda-dims"),
    Param("candidates", DEFAULT_CANDIDATES, "Candidate systems, comma-separated; '+' joins "
          "systems into a fusion, ':as' adds AS-norm (systems: see above)", "names",
          "candidates"),
    Param("num_folds", 5, "Number of folds of training speakers (>= 2)", "int", "num-folds",
          bounds=(">=2",)),
    Param("enroll_utts", 0, "Held-out trials: 0 = single vector against single vector; N = "
          "enrollment by the mean of N vectors against single test vectors", "int",
          "enroll-utts", bounds=(">=0",)),
    replace(_BAND["alpha"], help=_BAND["alpha"].help + " of the pAUC criterion",
            aliases=("alpha",)),
    replace(_BAND["beta"], help=_BAND["beta"].help + " of the pAUC criterion",
            aliases=("beta",)),
    Param("selection", "1se", "1se: the simplest candidate within one standard error "
          "(paired over folds) of the best held-out pAUC; best: the best", "str", "selection",
          choices=("1se", "best")),
    Param("lda_selection", "cheap", "cheap: compare the LDA dimensions with PLDA and cosine "
          "only, then cross-fit the metrics at the best one; all: every candidate at every "
          "dimension (slower)", "str", "lda-selection", choices=("cheap", "all")),
    Param("dplda_lambdas", DPLDA_LAMBDAS, "L2 weights of the discriminative PLDA's pull to the "
          "PLDA, tried by cross-fitting", "floats", "dplda-lambdas"),
    Param("fusion_prior", 0.01, "Target prior of the fusion/calibration objective", "float",
          "fusion-prior", bounds=(">0", "<1")),
    Param("fusion_regularization", 1e-6, "L2 penalty of the fusion weights", "float",
          bounds=(">=0",)),
    Param("max_utts_per_speaker", 0, "Use at most this many vectors of each held-out speaker "
          "in the held-out trials (0: all)", "int", "max-utts-per-speaker", bounds=(">=0",),
          zero="all"),
    Param("max_trials", 1500000, "Held-out trials per fold at most (0: all). Above it every "
          "target trial is kept (up to half of it) and non-target trials are sampled (seeded) "
          "in per-speaker quotas. Standard error this adds to a fold's held-out "
          "pAUC[0,beta]: sqrt((Var_band[TPR] + (TPR(beta)-pAUC)^2 (1-beta)) / (beta n_non)), "
          "about 0.0008 per fold (0.00035 over 5 folds) at 1.5 M trials, beta 0.01, pAUC 0.9 "
          "(models/crossfit.py), below the paired fold SEs the choice relies on (0.0016 on "
          "TIMIT); ETRI's and TIMIT's folds stay below it", "int", "max-trials",
          bounds=(">=0",), zero="all"),
    Param("max_fusion_trials", 300000, "Held-out trials the kept candidate's fusion is "
          "trained on (non-targets subsampled beyond it; 0: all)", "int", bounds=(">=0",),
          zero="all"),
    Param("max_rating_fusion_trials", 100000, "The same for the cross-fitted fusions that "
          "only rate candidates (0: all)", "int", bounds=(">=0",), zero="all"),
    Param("asnorm_top_n", 100, "AS-norm: the top-N cohort scores of each side", "int",
          bounds=(">=1",)),
    Param("max_speakers", 2000, "Cross-fit on at most this many training speakers (a seeded "
          "subset when there are more; 0: all); the final model trains on every speaker",
          "int", "max-speakers", bounds=(">=0",), zero="all"),
    Param("max_vectors", 100000, "Cross-fit on at most this many of their vectors (the same "
          "seeded cap on each speaker's count when there are more; 0: all)", "int",
          "max-vectors", bounds=(">=0",), zero="all"),
    Param("max_metric_vectors", 200000, "The final model's pAUCMetrics train on at most "
          "this many of the training vectors (the same seeded cap on each speaker's count "
          "beyond; 0: all). Their mini-batches draw --num-iters x --batch-size speakers, two "
          "vectors each, whatever the table's size: this bounds their memory (this many x the "
          "LDA dimension x 4 bytes, for the projected vectors and each metric's features), "
          "not what they can see (what a sample costs in accuracy: "
          "benchmarks/auto_metric_sample.py)", "int",
          "max-metric-vectors", bounds=(">=0",), zero="all"),
    Param("max_adapt_vectors", 20000, "With an adaptation set (--adapt): use at most this "
          "many of its vectors (a seeded subset beyond; 0: all). They give the centring mean "
          "and the adapted PLDA's covariance (d x d, d <= the LDA dimension), whose standard "
          "errors at 20,000 vectors are well below the within-speaker spread", "int",
          "max-adapt-vectors", bounds=(">=0",), zero="all"),
    Param("max_dev_trials", 200000, "With development trials (--dev-trials): rate on at "
          "most this many of them (0: all); beyond it every target trial up to half of it and "
          "a seeded uniform sample of the non-targets. Every fold's models score them once "
          "(one column of fold sums per system and LDA dimension); the sample adds to a "
          "development pAUC[0,0.01] near 0.9 a sampling error of about 0.0025 at 150,000 "
          "non-targets (models/crossfit.py's formula), and the bootstrap SEs the choice "
          "reads are those of the sample", "int",
          "max-dev-trials", bounds=(">=0",), zero="all"),
    Param("dev_resamples", 200, "With development trials: paired two-way cluster-bootstrap "
          "resamples of their speakers that give the standard errors of the development "
          "figures (each O(trials) per rated candidate)", "int", "dev-resamples",
          bounds=(">=20",)),
    Param("quality_measures", "auto", "Quality measures of the final fusion/calibration "
          "(QMF, as train-calibration): auto = every set the data allow (none, norm, and with "
          "durations duration, duration+norm), the simplest within one paired SE of the best "
          "cross-fitted calibration loss on the trials it is learned on; none; or duration, "
          "norm, duration+norm (duration needs --utt2dur, or --dev-utt2dur with development "
          "trials; norm needs nothing: the raw vectors' norm over the training median)",
          "str", "quality-measures",
          choices=("auto", "none", "duration", "norm", "duration+norm")),
    Param("screen_factor", 4, "Successive halving: the candidates are screened on the first "
          "max(2, ceil(--num-folds / this)) folds and the best 1/this of them promoted to the "
          "other folds (1, or fewer than twice as many folds: no screening)", "int",
          "screen-factor", bounds=(">=1",)),
    Param("random_state", 0, "Seed of the speaker folds, the held-out trials and the metrics",
          "int", "seed"),
    Param("n_jobs", 1, "Processes for the folds (the work of one fold is one process)",
          "int", "num-jobs", bounds=(">=1",), runtime=True, cli_default=2),
    Param("progress_interval", 30.0, "Log a progress line (fold, system, iteration, elapsed, "
          "estimated remaining) at least this often, in seconds of work (0: at every step)",
          "float", "progress-interval", bounds=(">=0",), runtime=True),
    Param("log", None, "A callable taking one log line, or None", "callable", runtime=True),
    Param("warn", None, "A callable taking one warning line, or None (Python's "
          "warnings.warn)", "callable", runtime=True),
    Param("progress", None, "A callable taking one progress line, or None", "callable",
          runtime=True),
)

# The pAUCMetric hyper-parameters as train-pauc-auto options: METRIC's (defaults PaucMetric's)
# but the number of iterations, the automatic back-end's budget.
METRIC_OPTIONS = tuple(replace(_METRIC[name], help="pAUCMetric " + _METRIC[name].help)
                       for name in ("delta", "gamma", "mu", "eta", "batch_size")) + (
    replace(_METRIC["num_iters"], default=500, help="pAUCMetric iterations, in every fold and "
            "in the final model (train-pauc-metric's default is 1000; on the training folds "
            "of ETRI and TIMIT 500 rate every metric candidate within the fold noise of 1000: "
            "benchmarks/RESULTS_auto_backend.md)"),
)

_BY_NAME = {p.name: p for p in PARAMS}


def default(name):
    return _BY_NAME[name].default


def metric_defaults(metric_params=None):
    """The pAUCMetric keywords of the automatic back-end: the declared defaults of
    METRIC_OPTIONS, updated with ``metric_params``."""
    out = {p.name: p.default for p in METRIC_OPTIONS}
    out.update(metric_params or {})
    return out


def check(values):
    """ValueError naming the first parameter of ``values`` ({name: value}) that is not
    allowed, then the checks across parameters."""
    for name, value in values.items():
        param = _BY_NAME.get(name)
        if param is None or param.kind == "callable":
            continue
        problem = param.problem(value)
        if problem is not None:
            raise ValueError("%s=%r %s" % (name, value, problem))
    if not values["alpha"] < values["beta"]:
        raise ValueError("need alpha < beta (got %g, %g)" % (values["alpha"], values["beta"]))
    if values["max_trials"] and values["max_trials"] < 1000:
        raise ValueError("max_trials must be 0 (all) or >= 1000 (got %d)" % values["max_trials"])
    PaucMetric(**metric_defaults(values.get("metric_params"))).check_params()


def normalised(name, value):
    """The value as the estimator keeps it: lists as tuples, ``zero`` limits as 0."""
    param = _BY_NAME[name]
    if param.kind in ("dims", "floats", "names"):
        return _parse_list(param, value)
    if param.zero and value is None:
        return 0
    return value


def option_text(param, value=None):
    """An option's text for a value (the default when None): lists comma-joined, LDA 0 as
    none, the CLI's own default for runtime parameters."""
    if value is None:
        value = param.default if param.cli_default is None else param.cli_default
    if param.kind == "dims":
        return ",".join("none" if not int(v) else str(int(v)) for v in value)
    if param.kind == "floats":
        return ",".join("%g" % v for v in value)
    if param.kind == "names":
        return ",".join(value)
    return value


def options():
    """The parameters that are train-pauc-auto options (estimator, then metric ones)."""
    return [p for p in PARAMS if p.option] + list(METRIC_OPTIONS)


def from_options(opts):
    """{estimator keyword: value} of parsed train-pauc-auto options (``opts`` attributes are
    the option names with '_'); ValueError naming the option for a bad list."""
    kwargs = {}
    for p in PARAMS:
        if not p.option:
            continue
        text = getattr(opts, p.option.replace("-", "_"))
        if p.kind in ("dims", "floats", "names"):
            try:
                kwargs[p.name] = _parse_list(p, text)
            except ValueError as err:
                raise ValueError("--%s: %s (got '%s')" % (p.option, err, text)) from None
        else:
            kwargs[p.name] = text
    kwargs["metric_params"] = {p.name: getattr(opts, p.option.replace("-", "_"))
                               for p in METRIC_OPTIONS}
    return kwargs


def digest_names():
    """Parameter names that decide the result (not ``runtime``): the fold jobs' digest."""
    return [p.name for p in PARAMS if not p.runtime] + ["metric_params"]
