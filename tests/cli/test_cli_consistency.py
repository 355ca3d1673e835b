"""Issue 10 part 4: what a new user sees in every tool's help and usage (one style for all)."""

import configparser
import importlib
import re

import pytest
from conftest import REPO, run_tool

TOOLS = sorted(p.name for p in (REPO / "bin").iterdir() if not p.name.startswith("."))


def tool_object(name):
    return importlib.import_module("pauc_backend.cli.tools." + name.replace("-", "_")).tool


@pytest.mark.parametrize("name", TOOLS)
def test_help_shows_dashed_option_names_and_no_empty_options_header(name):
    text = tool_object(name).usage_text()
    names = re.findall(r"^  --(\S+)\s+:", text, flags=re.M)
    assert names and all("_" not in option for option in names), names
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line == "Options:":  # followed by at least one option line
            assert lines[i + 1].startswith("  --"), (name, lines[i:i + 2])
    # balanced parentheses in every option's help text
    for line in lines:
        if line.startswith("  --"):
            assert line.count("(") == line.count(")"), line


def test_tools_without_own_options_print_no_options_header():
    for name in ("transform-vectors",):   # the one tool left without options of its own
        proc = run_tool(name, "--help")
        assert proc.returncode == 0
        text = proc.stdout.decode()
        assert "Standard options:" in text and "\nOptions:" not in text


def test_change_dim_is_shown_dashed():
    text = run_tool("copy-vectors", "--help").stdout.decode()
    assert "--change-dim " in text and "change_dim" not in text


def test_compute_vector_mean_binary_help_closes_its_parenthesis():
    text = run_tool("compute-vector-mean", "--help").stdout.decode()
    line = next(l for l in text.splitlines() if l.startswith("  --binary"))
    assert "archives/tables)." in line and line.count("(") == line.count(")")


@pytest.mark.parametrize("args", [("a", "b", "--binary=false"),
                                  ("--binary=true", "a", "--scale=2", "b")])
def test_option_after_positionals_prints_usage_and_a_hint(args):
    proc = run_tool("copy-vectors", *args)
    assert proc.returncode == 1
    lines = proc.stderr.decode().splitlines()
    assert any(l.startswith("Usage: copy-vectors") for l in lines)
    hint = [l for l in lines if "options must come before the positional arguments" in l]
    assert len(hint) == 1 and [a for a in args[1:] if a.startswith("--")][0] in hint[0]
    assert not any(l.startswith("ERROR") for l in lines)


def test_no_hint_when_no_positional_looks_like_an_option():
    proc = run_tool("copy-vectors", "a", "b", "c")
    assert proc.returncode == 1
    assert "options must come before" not in proc.stderr.decode()


def test_pytest_config_lives_only_in_pyproject():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    assert "tool:pytest" not in config.sections()
    assert "[tool.pytest.ini_options]" in (REPO / "pyproject.toml").read_text()


# -- issue 34: the pAUC band and the pAUCMetric options, declared once ----------------------------
def test_the_pauc_band_and_metric_options_are_declared_once():
    """Every tool with the band (--pauc-alpha/--pauc-beta) or the pAUCMetric options (the tools
    with --margin) has them as declared in models/auto/params.py (the same default, type and
    range; train-pauc-auto's --num-iters is the automatic back-end's own budget, declared
    there too), and no tool module registers one of them by its name."""
    from pauc_backend.cli.framework.kaldi_cli import Tool
    from pauc_backend.cli.options import pauc as pauc_options
    from pauc_backend.models.auto import params
    band = {p.option: p for p in params.BAND}
    metric = {p.option: p for p in params.METRIC}
    budget = {p.option: p for p in params.METRIC_OPTIONS}
    having = {}
    for name in TOOLS:
        options = tool_object(name)._options
        group = dict(band, **(metric if "margin" in options else {}))
        for option, param in group.items():
            if option not in options:
                continue
            having.setdefault(option, []).append(name)
            if name == "train-pauc-auto" and option in budget:
                param = budget[option]
            reference = Tool("reference", "")
            pauc_options.register(reference, param)
            want, got = reference._options[option], options[option]
            assert (got.default, got.kind, got.low, got.high) == \
                (want.default, want.kind, want.low, want.high), (name, option)
    assert sorted(having["pauc-alpha"]) == sorted(having["pauc-beta"]) == [
        "compare-systems", "compute-eer-pauc", "plot-det-roc", "train-pauc-auto",
        "train-pauc-metric"]
    assert sorted(having["num-iters"]) == sorted(having["margin"]) == [
        "train-pauc-auto", "train-pauc-metric"]
    assert sorted(having["scale"]) == ["train-pauc-metric"]
    for path in (REPO / "pauc_backend" / "cli").rglob("*.py"):
        text = path.read_text()
        names = list(band) + (list(metric) if path.stem in ("train_pauc_metric",
                                                            "train_pauc_auto") else [])
        for option in names:
            assert not re.search(r"""register\(\s*["']%s["']""" % option, text), (path, option)


@pytest.mark.parametrize("name", ["compare-systems", "compute-eer-pauc", "plot-det-roc",
                                  "train-pauc-auto", "train-pauc-metric"])
def test_every_tool_with_the_band_refuses_an_empty_band_before_any_input(name, tmp_path):
    missing = [str(tmp_path / ("missing%d" % i)) for i in range(6)]
    for count in range(1, 6):       # the right number of arguments (a wrong one: usage, 1)
        proc = run_tool(name, "--pauc-alpha=0.02", "--pauc-beta=0.01", *missing[:count])
        if proc.returncode != 1:
            break
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode == 255 and len(errors) == 1, proc.stderr.decode()
    assert "Invalid values --pauc-alpha=0.02 --pauc-beta=0.01: need alpha < beta" in errors[0]
    assert "missing" not in errors[0]
