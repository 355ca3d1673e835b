"""Issue 42 item 1: every tool's --help has Kaldi's shape (a short description, the Usage:
line(s), an example, then the options), so the usage is on a terminal's first screen; the long
explanation lives in docs/, on the page the description's last line names."""

import re

import pytest
from conftest import REPO, run_tool

from pauc_backend.cli.framework.kaldi_cli import MAX_DESCRIPTION_LINES, Tool, help_layout

TOOLS = sorted(p.name for p in (REPO / "bin").iterdir() if not p.name.startswith("."))


def help_lines(name):
    proc = run_tool(name, "--help")
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
    return proc.stdout.decode().splitlines()


def anchors(path):
    """GitHub's anchors of the Markdown headings of ``path``."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.*)$", path.read_text(), re.M)}


@pytest.mark.parametrize("name", TOOLS)
def test_help_has_kaldis_shape_with_the_usage_in_the_first_15_lines(name):
    lines = help_lines(name)
    usage = next(i for i, line in enumerate(lines) if line.startswith("Usage:"))
    assert usage < 15, (name, usage)
    description = lines[:usage - 1]
    assert lines[usage - 1] == "" and description and all(description), lines[:usage]
    more = [line for line in description if line.startswith("More: ")]
    assert len(description) - len(more) <= MAX_DESCRIPTION_LINES
    assert not more or description[-1] == more[0]         # the link ends the description
    block = lines[usage:lines.index("", usage)]            # Usage: and example lines
    example = [i for i, line in enumerate(block) if line.lstrip().startswith("e.g.")]
    assert example and all(block[i].startswith(("Usage:", " ", "or:"))   # " ": continued
                           for i in range(example[0])), block
    assert lines.index("Standard options:") > usage + len(block)
    options = lines.index("Options:") if "Options:" in lines else lines.index(
        "Standard options:")
    assert options > usage + len(block)                   # the options come last


@pytest.mark.parametrize("name", TOOLS)
def test_the_docs_page_a_help_names_exists_with_its_section(name):
    more = [line[len("More: "):] for line in help_lines(name)[:15] if line.startswith("More: ")]
    for target in more:
        page, _, anchor = target.partition("#")
        path = REPO / page
        assert path.is_file(), target
        assert not anchor or anchor in anchors(path), target


def test_every_tool_with_more_than_a_few_lines_to_say_names_its_page():
    """The tools whose description was cut to a few lines name where the rest went."""
    for name in ("train-pauc-auto", "score-pauc-auto", "compute-eer-pauc", "compare-systems",
                 "import-vectors", "make-calibration-trials", "make-synthetic-vectors",
                 "train-lda", "train-plda", "train-pauc-metric", "subtract-vector-mean",
                 "transform-vectors", "compute-vector-norms", "score-pauc-trials"):
        assert any(line.startswith("More: docs/") for line in help_lines(name)[:15]), name


def test_train_pauc_auto_help_is_a_screen_and_its_prose_is_in_the_docs():
    """The 192-line --help of issue 42: its prose (the rules, costs, memory, fold jobs, the
    paper's setting) is in docs/auto-backend.md, not in --help, which keeps the systems list."""
    lines = help_lines("train-pauc-auto")
    text = "\n".join(lines)
    page = (REPO / "docs" / "auto-backend.md").read_text()
    for words in ("--candidates=pauc_latent --lda-dims=100", "--screen-factor=1",
                  "successive halving", "speaker table", "digest",
                  "average linkage"):
        assert words in page and words not in text, words
    assert "cosine_raw         Cosine (raw vectors)" in text    # the candidates, with titles
    assert lines.index("Options:") < 30


def test_a_description_past_the_limit_is_refused_when_the_tool_is_declared():
    usage = "\n".join(["line %d" % i for i in range(MAX_DESCRIPTION_LINES + 1)]
                      + ["", "Usage: t <a>", "e.g.: t x"])
    with pytest.raises(ValueError, match="description before 'Usage:'"):
        Tool("t", usage)
    with pytest.raises(ValueError, match="no line starting with 'Usage:'"):
        Tool("t", "Does things.\n\ne.g.: t x")
    short = "Does things.\n\nUsage: t <a>\ne.g.: t x"
    assert help_layout("t", short, "docs/tools.md").splitlines() == [
        "Does things.", "More: docs/tools.md", "", "Usage: t <a>", "e.g.: t x"]
    assert help_layout("t", short) == short
