"""The pAUC band and the pAUCMetric hyper-parameters as options: one group, declared once.

Each option is declared in models/auto/params.py (``BAND``, ``METRIC``, and what
train-pauc-auto derives from them: name, default, help, allowed range), where AutoBackend
checks the same values; here a declaration becomes a tool's option with its bounds, so a value
outside them is one ERROR naming the option, exit 255, before any input is read
(kaldi_cli.Tool.register), and --help states them. The tools add their context to the help
(what the band is for; "pAUCMetric" where other systems' options stand beside).

* the band, --pauc-alpha < --pauc-beta (``register_band``): compute-eer-pauc,
  compare-systems, plot-det-roc, train-pauc-metric; train-pauc-auto registers its own
  parameters with ``register`` (alpha and beta among them) and checks the band with
  ``check_band``;
* the metric (``register_metric``, ``metric_keywords``): train-pauc-metric (every option of
  METRIC); train-pauc-auto (models.auto.params.METRIC_OPTIONS, through ``register``).
"""

from pauc_backend.cli.framework.kaldi_cli import format_float
from pauc_backend.errors import KaldiError
from pauc_backend.models.auto import params as declared

__all__ = ["register", "register_band", "check_band", "register_metric", "metric_keywords"]

_KINDS = {"int": int, "float": float, "bool": bool, "str": str}


def register(tool, param, help_text=None):
    """``--<param.option>`` on ``tool`` as declared: default (the CLI's for runtime
    parameters, lists as text), help (or ``help_text``), type, choices, bounds, aliases."""
    value = declared.option_text(param)
    tool.register(param.option, value, param.help if help_text is None else help_text,
                  kind=_KINDS.get(param.kind, type(value)), choices=param.choices,
                  bounds=param.bounds, aliases=param.aliases)


def register_band(tool, use="of the pAUC"):
    """--pauc-alpha and --pauc-beta; ``use`` completes their help (e.g. "shaded on the
    ROC"); the band is checked (``check_band``) before any input is read."""
    for param in declared.BAND:
        register(tool, param, "%s %s" % (param.help, use))
    tool.check(check_band)


def check_band(opts):
    """--pauc-alpha < --pauc-beta: one ERROR naming both otherwise."""
    if not opts.pauc_alpha < opts.pauc_beta:
        raise KaldiError("Invalid values --pauc-alpha=%s --pauc-beta=%s: need alpha < beta"
                         % (format_float(opts.pauc_alpha), format_float(opts.pauc_beta)))


def register_metric(tool):
    """Every pAUCMetric option of METRIC (--margin, --gamma, --mu, --eta, --batch-size,
    --num-iters, --scale, --average, --validation-fraction, --eval-every, --patience,
    --refit), with PaucMetric's defaults; --scale is checked before any input is read."""
    for param in declared.METRIC:
        register(tool, param, param.help[:1].upper() + param.help[1:])
    tool.check(_check_scale)


def _scale(text):
    """--scale: "auto" or a positive finite number."""
    if text == "auto":
        return "auto"
    try:
        scale = float(text)
    except ValueError:
        scale = float("nan")
    if not scale > 0 or scale == float("inf"):
        raise KaldiError("Invalid value --scale=%s: must be auto or a positive number" % text)
    return scale


def _check_scale(opts):
    _scale(opts.scale)


def metric_keywords(opts):
    """PaucMetric's keywords of the parsed METRIC options (``register_metric``)."""
    kwargs = {p.name: getattr(opts, p.option.replace("-", "_")) for p in declared.METRIC}
    kwargs["scale"] = _scale(kwargs["scale"])
    return kwargs
