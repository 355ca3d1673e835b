"""One place for each fact (issue 37 item 4): figures, run times, machine loads and the system
pAUCMetric (auto) chose in a given run are stated in the RESULTS files
(recipes/*/RESULTS.md, benchmarks/RESULTS_*.md) and nowhere else. The README, docs/ and
recipes/README.md copy tables from them only through synced blocks (tests/doc_blocks.py),
which must equal their source: editing one copy fails here until
``python tests/test_docs_facts.py --update`` has rewritten the copies from the source.

Before this issue the README named two different systems that the auto "chose on the demo",
gave four different demo run times, and recipes/README.md said "about 2 minutes on 2 cores"
(the newcomer measured 5-6 min): each of those statements fails one test below."""

import re
import sys

import pytest

from doc_blocks import FACT_FILES, README, REPO, SYNCED, fenced_blocks, synced_blocks, \
    update_synced

DEMO_RESULTS = "recipes/demo/RESULTS.md"


def rel(path):
    return str(path.relative_to(REPO))


def prose(path):
    """The file's text outside fenced blocks and synced blocks (what is stated in words)."""
    text = path.read_text()
    text = re.sub(r"^```.*?^```[ \t]*$", "", text, flags=re.M | re.S)
    return SYNCED.sub("", text)


@pytest.mark.parametrize("path", FACT_FILES, ids=rel)
def test_every_synced_table_equals_its_source(path):
    for match, expected in synced_blocks(path):
        assert match.group(4) == expected, (
            "%s: the table copied from %s (%s) differs from its source; edit the source and "
            "run `python tests/test_docs_facts.py --update`" % (rel(path), match.group(1),
                                                                match.group(2)))


def test_readme_shows_one_demo_table_and_it_is_the_results_files():
    """'What the demo prints (ONE table)': the README's only table of demo figures is the
    synced copy of recipes/demo/RESULTS.md's main table, all its rows."""
    blocks = synced_blocks(README)
    demo = [(m, expected) for m, expected in blocks if m.group(1) == DEMO_RESULTS]
    assert len(demo) == 1 and demo[0][0].group(3) is None
    rows = [l for l in demo[0][1].splitlines() if l.startswith("|")][2:]
    assert len(rows) == 10 and rows[-1].startswith("| pAUCMetric (auto) |")


def _figure_cells(line):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    return sum(bool(re.fullmatch(r"[+-]?\d+(\.\d+)?\s*%?(\s*\[.*\])?", c)) for c in cells[1:])


@pytest.mark.parametrize("path", FACT_FILES, ids=rel)
def test_tables_of_figures_are_only_synced_copies(path):
    """A Markdown table whose rows hold figures (two or more numeric cells) outside a synced
    block would be a second copy of a RESULTS file's fact, free to drift."""
    stray = [line for line in prose(path).splitlines()
             if line.startswith("|") and _figure_cells(line) >= 2]
    assert not stray, "%s: a table of figures that is not a synced copy: %s" % (rel(path),
                                                                                 stray[:2])


# What a run time, a machine load or a measured figure looks like in words.
TIMING = [
    (r"\bload(?: average)?s? (?:of |at |~)?\d", "a machine load"),
    (r"\bwall\b", "a wall-clock time"),
    (r"\bCPU[- ]?s(?:econds)?\b|\b(?:s|seconds|min) (?:of )?CPU\b", "a CPU time"),
    (r"\b\d+(?:\.\d+)? ?(?:min|mins|minutes|hours?|h)\b", "a duration in minutes or hours"),
    (r"\b\d+(?:\.\d+)? ?(?:s|seconds) (?:wall|user|system|of CPU)\b", "a run time"),
    (r"\b(?:takes?|took|taking|lasts?|lasted) (?:about |around |~|only |under |over |less "
     r"than |more than )?\d", "a run time"),
    (r"\b\d\d?:\d\d(?::\d\d)?\b", "a clock time or an elapsed time"),
    (r"\b\d+\.\d+ ?%", "a measured rate (a percentage with decimals)"),
]
CHOICE = re.compile(r"\bchose\b[^.\n]{0,60}?(PLDA|pAUCMetric|TripletMetric|[Cc]osine|plda|"
                    r"pauc_|cosine_|fusion)")


@pytest.mark.parametrize("path", FACT_FILES, ids=rel)
def test_no_run_time_load_or_measured_rate_outside_the_results_files(path):
    text = prose(path)
    for pattern, what in TIMING:
        found = re.search(pattern, text)
        assert not found, "%s states %s (%r): that belongs in a RESULTS file" % (
            rel(path), what, text[max(0, found.start() - 60):found.end() + 20])


@pytest.mark.parametrize("path", FACT_FILES, ids=rel)
def test_no_system_chosen_in_a_run_outside_the_results_files(path):
    """Which system pAUCMetric (auto) chose in a given run is a per-run fact."""
    found = CHOICE.search(path.read_text())
    assert not found, "%s says what a run chose (%r): that belongs in a RESULTS file" % (
        rel(path), found.group(0))


def test_the_checks_catch_the_contradictions_issue_37_found(tmp_path):
    """The statements issue 37 quoted, each planted in a copy of the README, fail a check
    (the checks are not vacuous)."""
    planted = [
        "The demo takes about 2 minutes on 2 cores.",
        "It printed the table in 6 min 5 s wall, 133 s user, at load 7-10.",
        "The automatic back-end chose PLDA-adp + pAUCMetric (length-norm) at LDA 75.",
        "and scored EER 4.99 %, pAUC[0,0.01] 0.8294.",
    ]
    for sentence in planted:
        path = tmp_path / "README.md"
        path.write_text(README.read_text() + "\n" + sentence + "\n")
        text = prose(path)
        caught = (any(re.search(p, text) for p, _ in TIMING) or CHOICE.search(text))
        assert caught, sentence
    # one digit edited in the README's copy of the demo table, the source unchanged
    text = README.read_text()
    row = "| PLDA-adp | 8.03 |"
    assert text.count(row) == 1
    path.write_text(text.replace(row, "| PLDA-adp | 8.04 |"))
    assert any(m.group(4) != expected for m, expected in synced_blocks(path, as_path=README))


def test_every_fenced_block_has_a_known_info_string():
    """So that no command block escapes tests/test_readme.py."""
    from doc_blocks import DOCS, INFO_STRINGS
    for path in [README, *DOCS]:
        for block in fenced_blocks(path):
            assert block.info in INFO_STRINGS, "%s:%d: ```%s" % (rel(path), block.line,
                                                                 block.info)


def _anchor(heading):
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("path", FACT_FILES, ids=rel)
def test_relative_links_resolve(path):
    """Every relative link of the README, docs/ and the recipes' index names a file of the
    checkout, and its #anchor a heading there: moving text into docs/ broke none."""
    for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        assert linked.exists(), "%s links to %s, which is not there" % (rel(path), target)
        if anchor:
            headings = re.findall(r"^#+ (.*)$", linked.read_text(), re.M)
            assert anchor in {_anchor(h) for h in headings}, "%s: no heading #%s in %s" % (
                rel(path), anchor, file_part or rel(path))


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_docs_facts.py --update   (rewrites the synced "
                 "tables of README.md, docs/ and recipes/README.md from their RESULTS files)")
    for path in FACT_FILES:
        if update_synced(path):
            print("updated %s" % rel(path))
