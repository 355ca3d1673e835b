"""No module of pauc_backend uses another module's private names (issue 43, item 4).

A leading underscore says "this module's own business": a name that several modules need is
made public, or moved to the module it belongs to. Read from the package's source with ``ast``:
``from pauc_backend.<m> import _name``, an import through a private module
(``pauc_backend.<pkg>._m``) and ``<imported module>._name`` are each reported with the file and
line. Dunder names (``__version__``) are not private.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pauc_backend"


def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_of(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node, module, is_package):
    """The module an ``ImportFrom`` reads from, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[:len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def cross_module_private_uses(source, module, is_package=False):
    """(line, text) of each use of another pauc_backend module's private name in ``source``
    (the text of module ``module``)."""
    tree = ast.parse(source)
    found, modules = [], set()   # names bound to pauc_backend modules (for ``name._x``)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not alias.name.startswith("pauc_backend"):
                    continue
                if any(_private(part) for part in alias.name.split(".")):
                    found.append((node.lineno, "import %s" % alias.name))
                modules.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            source_module = _absolute(node, module, is_package)
            if not source_module.startswith("pauc_backend"):
                continue
            for alias in node.names:
                if any(_private(part) for part in source_module.split(".")) or \
                        _private(alias.name):
                    found.append((node.lineno, "from %s import %s" % (source_module,
                                                                      alias.name)))
                modules.add(alias.asname or alias.name)   # a module or not: checked below
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr)
                and isinstance(node.value, ast.Name) and node.value.id in modules):
            found.append((node.lineno, "%s.%s" % (node.value.id, node.attr)))
    return sorted(found)


def test_no_module_uses_another_modules_private_names():
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        uses = cross_module_private_uses(path.read_text(encoding="utf-8"), _module_of(path),
                                         path.name == "__init__.py")
        problems += ["%s:%d: %s" % (path.relative_to(PACKAGE.parent), line, text)
                     for line, text in uses]
    assert not problems, "private names used across modules (make them public or move " \
        "them where they belong):\n" + "\n".join(problems)


def test_the_check_finds_each_kind_of_use():
    source = "\n".join([
        "from pauc_backend.kaldi_io.keyed import _labels, KeySpace",
        "from pauc_backend.kaldi_io import _memory",
        "from pauc_backend.kaldi_io._memory import GrowingArray",
        "import pauc_backend.kaldi_io._memory",
        "from .key_index import _token_words",
        "from pauc_backend.kaldi_io import keyed",
        "keyed._duplicate_error('a b', 'x', 'y', [])",
        "from numpy.linalg import _umath_linalg",        # not ours: not this test's business
        "from pauc_backend import __version__",           # dunder: public
        "self._words = KeySpace()._first",                # attributes of objects: their own
    ])
    uses = cross_module_private_uses(source, "pauc_backend.kaldi_io.aligned_lists")
    assert [line for line, _ in uses] == [1, 2, 3, 4, 5, 7]
    assert uses[4][1] == "from pauc_backend.kaldi_io.key_index import _token_words"
