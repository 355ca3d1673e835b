"""Issue 20: every option a tool declares with choices or a range is checked by the framework
before any input is read: a value outside them is one ERROR naming the option and the value,
exit 255, no usage text; and --help states what is allowed. Checked for every tool and every
declared option, with inputs that do not exist (so reading them would be a different error)."""

import importlib

import pytest
from conftest import BIN

TOOLS = sorted(path.name for path in BIN.iterdir() if not path.name.startswith("."))


def declared(tool):
    module = importlib.import_module("pauc_backend.cli.tools." + tool.replace("-", "_"))
    return module, [o for o in module.tool._options.values()
                    if o.choices is not None or o.low is not None or o.high is not None]


def invalid_values(option):
    """Values just outside what the option allows."""
    if option.choices is not None:
        yield "no-such-choice"
        return
    step = 1 if option.kind is int else 0.5
    if option.low is not None:
        bound, inclusive = option.low
        yield bound - step if inclusive else bound
    if option.high is not None:
        bound, inclusive = option.high
        yield bound + step if inclusive else bound


CASES = [(tool, option.name, value) for tool in TOOLS for option in declared(tool)[1]
         for value in invalid_values(option)]


def test_the_declarations_cover_the_tools_that_had_hand_written_checks():
    names = {(tool, name) for tool, name, _ in CASES}
    for expected in [("compute-eer-pauc", "report"), ("compute-eer-pauc", "pauc-beta"),
                     ("train-plda", "num-em-iters"), ("train-calibration", "prior"),
                     ("train-pauc-metric", "loss"), ("score-plda-trials", "score-norm"),
                     ("train-lda", "covariance-floor"), ("copy-plda", "smoothing")]:
        assert expected in names


@pytest.mark.parametrize("tool, name, value", CASES, ids=lambda v: str(v))
def test_an_invalid_value_is_one_error_naming_the_option_before_any_input(tool, name, value,
                                                                         tmp_path, capsys):
    module, _ = declared(tool)
    missing = [str(tmp_path / ("missing%d" % i)) for i in range(8)]
    # the right number of positional arguments is found by trying (a wrong count is usage, 1)
    for count in range(1, 8):
        code = module.main(["--%s=%s" % (name, value), "--print-args=false"] + missing[:count])
        err = capsys.readouterr().err
        if code != 1:
            break
    assert code == 255, err
    errors = [line for line in err.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and "Usage:" not in err, err
    assert ("Invalid value --%s=" % name) in errors[0], errors[0]
    assert "missing" not in errors[0]  # no input was opened


@pytest.mark.parametrize("tool", TOOLS)
def test_help_states_the_allowed_values(tool, capsys):
    module, options = declared(tool)
    module.main(["--help"])
    out = capsys.readouterr().out
    for option in options:
        line = next(l for l in out.splitlines() if l.startswith("  --%s " % option.name))
        assert option.describe_allowed() in line
