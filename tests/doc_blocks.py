"""The README's and docs/'s Markdown as the tests read it (issues 36 and 37): fenced command
blocks and the commands in them, the tables copied from RESULTS files ("synced" blocks), and
the corpora the command blocks run on. Used by tests/test_readme.py, tests/test_docs_facts.py
and benchmarks/bench_quickstart.py (so the benchmark times exactly what the test runs).

Command blocks, by their info string:
  ```sh         run as written (README: in a directory holding the quick start's files, see
                ``make_quickstart_corpus``; docs/: in one holding ``make_docs_corpus``'s data/)
  ```sh no-run  not run; the text just before or just after it must say why ("Not run by
                ..."), and every command in it must be one of our tools or recipes, with
                options its --help lists (or a known outside command: ``EXTERNAL``)
  ```python     run as written
  ```text       output shown, never a command of ours
Any other info string is an error, so no command block escapes the tests.

A synced block copies a table from a RESULTS file:
  <!-- synced: <path from the repository root> "<heading prefix>"[ rows: A; B; C] -->
  ...generated: a caption naming the file and the table's date, then the table...
  <!-- end synced -->
The source table is the first Markdown table after the first line of <path> that starts with
<heading prefix>; ``rows`` keeps those rows, in that order (all rows without it). The date is
the last YYYY-MM-DD in <path> before the table. ``python tests/test_docs_facts.py --update``
rewrites every synced block from its source.
"""

import itertools
import os
import re
import shlex
import subprocess
import sys
from collections import namedtuple
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / "bin"

README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
# Files that state no run time, machine load or per-run choice of their own (the RESULTS
# files hold those): the README, docs/ and the recipes' index.
FACT_FILES = [README, *DOCS, REPO / "recipes" / "README.md"]

INFO_STRINGS = ("sh", "sh no-run", "python", "text")
# Commands of no-run blocks that are not ours: an installer, Kaldi's own scripts, the shell.
EXTERNAL = {"pip", "python", "cd", "mkdir", "cp", "head", "cat", "awk", "echo", "cut",
            "utils/subset_data_dir_tr_cv.sh"}
SHELL_WORDS = {"do", "done", "then", "fi", "else", "{", "}"}

Block = namedtuple("Block", "info body line reason after")


def fenced_blocks(path):
    """Every fenced block of a Markdown file: info string, body, first line number, the
    text between the previous block (or heading) and this one, and the text from this one to
    the next block or heading (a no-run block says why it is not run right above or right
    below it)."""
    text = Path(path).read_text()
    blocks = []
    for match in re.finditer(r"^```([^\n]*)\n(.*?)^```[ \t]*$", text, re.M | re.S):
        before = text[:match.start()]
        cut = max(before.rfind("```"), before.rfind("\n#"))
        rest = text[match.end():]
        ends = [i for i in (rest.find("```"), rest.find("\n#")) if i >= 0]
        blocks.append(Block(match.group(1).strip(), match.group(2),
                            before.count("\n") + 1, before[cut + 1:] if cut >= 0 else before,
                            rest[:min(ends)] if ends else rest))
    return blocks


# -- commands of a shell block ----------------------------------------------------------------

def commands(body):
    """The simple commands of a shell block: lists of words (quotes removed, comments and
    redirections dropped), the command name first. Continuation lines are joined; control
    operators split; a `for ...;` header, shell keywords and leading VAR=value assignments are
    skipped; ``$train_cmd JOB=1:N <log>`` prefixes are removed; ``$PAUC/`` (this checkout) is
    stripped from a path."""
    text = re.sub(r"\\\n", " ", body)
    found = []
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = []
        for token in itertools.chain(lexer, [";"]):
            if token in (">", ">>", "<"):
                words.append(None)            # the next word is a file name
            elif token and set(token) <= set(";&|<>"):
                found.append(words)
                words = []
            else:
                words.append(token)
    result = []
    for words in found:
        cleaned, skip = [], False
        for word in words:
            if word is None:
                skip = True
                continue
            if skip:
                skip = False
                continue
            cleaned.append(word)
        while cleaned and (cleaned[0] in SHELL_WORDS
                           or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", cleaned[0])):
            cleaned.pop(0)
        if not cleaned or cleaned[0] in ("for", "while", "if"):
            continue
        if cleaned[0] == "$train_cmd":
            cleaned = cleaned[1:]
            if cleaned and cleaned[0].startswith("JOB="):
                cleaned = cleaned[1:]
            cleaned = cleaned[1:]             # the log file
        if cleaned and cleaned[0].startswith("$PAUC/"):
            cleaned[0] = cleaned[0][len("$PAUC/"):]
        if cleaned:
            result.append(cleaned)
    return result


def _option_names(help_text):
    return {name.replace("_", "-")
            for name in re.findall(r"^\s+--([A-Za-z0-9][A-Za-z0-9_-]*)", help_text, re.M)}


@lru_cache(maxsize=None)
def tool_options(tool):
    """The options a tool's --help lists (None if it has no --help that works)."""
    proc = subprocess.run([sys.executable, str(BIN / tool), "--help"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=tool_env())
    return _option_names(proc.stdout.decode())


@lru_cache(maxsize=None)
def recipe_options(script):
    proc = subprocess.run(["bash", str(REPO / script), "--help"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=tool_env())
    return _option_names(proc.stdout.decode()) if proc.returncode == 0 else None


def is_tool(name):
    return "/" not in name and (BIN / name).is_file()


def command_problems(body):
    """What is wrong with the commands of a block: an unknown command, a recipe that is not
    there, an option its --help does not list. Empty when every command checks out."""
    problems = []
    for words in commands(body):
        name = words[0]
        recipe = name.endswith(".sh")     # parse_options.sh: "--name value", value next
        options, value_next = set(), False
        for word in words[1:]:
            if value_next:
                value_next = False
            elif word.startswith("--") and len(word) > 2:
                options.add(word[2:].split("=")[0].replace("_", "-"))   # Kaldi: _ = -
                value_next = recipe and "=" not in word
        if is_tool(name):
            known = tool_options(name)
        elif re.fullmatch(r"recipes/[\w/]+\.sh", name):
            if not (REPO / name).is_file():
                problems.append("%s: no such recipe script" % name)
                continue
            known = recipe_options(name)
            if known is None:
                problems.append("%s --help failed" % name)
                continue
        elif name in EXTERNAL:
            continue
        else:
            problems.append("%s: not a tool, recipe or known outside command" % name)
            continue
        problems.extend("%s: no option --%s in its --help" % (name, option)
                        for option in sorted(options - known))
    return problems


def tool_env():
    """bin/ first on PATH and this checkout on PYTHONPATH (tests/conftest.py's tool_env)."""
    env = dict(os.environ)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# -- the corpora the command blocks run on -----------------------------------------------------

QUICKSTART_CORPUS = ["--seed=1", "--dim=64", "--num-train-speakers=100",
                     "--num-adapt-speakers=60", "--num-eval-speakers=30"]
DOCS_CORPUS = ["--seed=1", "--dim=40", "--durations", "--num-train-speakers=60",
               "--num-adapt-speakers=30", "--num-eval-speakers=20", "--num-dev-speakers=20"]


def _synthetic(out_dir, options):
    subprocess.run([sys.executable, str(BIN / "make-synthetic-vectors"), *options,
                    str(out_dir)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=tool_env())


def make_docs_corpus(directory):
    """``directory``/data: the synthetic corpus docs/'s command blocks run on (the docs
    pages name its command)."""
    _synthetic(Path(directory) / "data", DOCS_CORPUS)


def make_quickstart_corpus(directory):
    """The files the README's quick start starts from, as a user would have them: for
    train, adapt and test, ``<set>.npy`` + ``<set>_keys.txt``; ``train_utt2spk`` and
    ``test_utt2spk`` (utt2spk form: what users have); ``trials`` (every pair of test
    utterances, utterance against utterance). Exported from a make-synthetic-vectors corpus
    (test = its enroll and test sets); returns the number of trials."""
    import numpy as np

    from pauc_backend.kaldi_io import read_token_table, read_vector_table
    directory = Path(directory)
    corpus = directory / "corpus"
    _synthetic(corpus, QUICKSTART_CORPUS)
    sets = {"train": ["train"], "adapt": ["adapt"], "test": ["enroll", "test"]}
    for name, parts in sets.items():
        keys, X, utt2spk = [], [], {}
        for part in parts:
            k, x = read_vector_table("scp:%s" % (corpus / part / "xvector.scp"))
            keys += list(k)
            X.append(x)
            utt2spk.update(read_token_table("ark:%s" % (corpus / part / "utt2spk")))
        np.save(directory / ("%s.npy" % name), np.concatenate(X))
        (directory / ("%s_keys.txt" % name)).write_text("".join(k + "\n" for k in keys))
        if name != "adapt":
            (directory / ("%s_utt2spk" % name)).write_text(
                "".join("%s %s\n" % (k, utt2spk[k]) for k in keys))
    lines = ["%s %s %s\n" % (a, b, "target" if utt2spk[a] == utt2spk[b] else "nontarget")
             for a, b in itertools.combinations(keys, 2)]
    (directory / "trials").write_text("".join(lines))
    return len(lines)


# -- tables copied from RESULTS files ----------------------------------------------------------

SYNCED = re.compile(r'^<!-- synced: (\S+) "([^"]+)"(?: rows: (.*?))? -->\n(.*?)'
                    r'^<!-- end synced -->$', re.M | re.S)
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def table_at(lines, start):
    """The Markdown table (list of lines) beginning at or after line index ``start``, and the
    index of its first line."""
    first = next(i for i in range(start, len(lines)) if lines[i].startswith("|"))
    end = first
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return lines[first:end], first


def row_name(line):
    return line.strip().strip("|").split("|")[0].strip()


def synced_text(doc_path, source, heading, rows):
    """What a synced block of ``doc_path`` must hold: the caption and the table."""
    lines = (REPO / source).read_text().splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith(heading)), None)
    if at is None:
        raise AssertionError("%s has no line starting with %r" % (source, heading))
    table, first = table_at(lines, at)
    if rows:
        wanted = [r.strip() for r in rows.split(";")]
        by_name = {row_name(line): line for line in table[2:]}
        missing = [name for name in wanted if name not in by_name]
        if missing:
            raise AssertionError("%s's table after %r has no row %s" % (source, heading, missing))
        table = table[:2] + [by_name[name] for name in wanted]
    dates = DATE.findall("\n".join(lines[:first]))
    if not dates:
        raise AssertionError("%s states no date before its table after %r" % (source, heading))
    link = os.path.relpath(REPO / source, (REPO / doc_path).parent)
    caption = "From [`%s`](%s), run of %s%s:" % (
        source, link, dates[-1], " (rows %s of its table)" % ", ".join(
            "`%s`" % r.strip() for r in rows.split(";")) if rows else "")
    return caption + "\n\n" + "\n".join(table) + "\n"


def synced_blocks(path, as_path=None):
    """(match, expected body) of every synced block of a file (links resolved as if the file
    were at ``as_path``, a file of the repository, when given)."""
    text = Path(path).read_text()
    rel = Path(as_path or path).resolve().relative_to(REPO)
    return [(m, synced_text(rel, m.group(1), m.group(2), m.group(3)))
            for m in SYNCED.finditer(text)]


def update_synced(path):
    """Rewrite every synced block of a file from its source; True if the file changed."""
    text = Path(path).read_text()
    rel = Path(path).resolve().relative_to(REPO)

    def fill(m):
        head = m.group(0)[:m.start(4) - m.start(0)]
        return head + synced_text(rel, m.group(1), m.group(2), m.group(3)) \
            + "<!-- end synced -->"
    new = SYNCED.sub(fill, text)
    if new != text:
        Path(path).write_text(new)
    return new != text
