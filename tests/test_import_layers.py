"""The package's layers, read from its imports (ast): each layer imports only the layers
below it, no module of models/ imports models/auto (its shared declarations live below it:
models/systems.py, models/crossfit.py), and no two modules of models/ import each other,
directly or around a circle (kaldi_io/ and metrics/ still hold circles of imports made inside
functions: left for another change)."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pauc_backend"

# what each top-level part may import (besides itself); anything not named here is refused
ALLOWED = {
    "errors": set(), "process": {"errors"}, "heartbeat": set(), "workers": set(),
    "kaldi_io": {"errors", "process", ""},
    "metrics": set(),
    "models": {"metrics", "heartbeat", "workers", "process"},
    "datasets": set(),
    "persist": {"errors", "kaldi_io", "models", "metrics"},
    "plotting": {"errors", "kaldi_io", "metrics"},
    "voxceleb": {"errors"},
    "embedding_files": {"errors", "kaldi_io", "voxceleb"},
    "cli": None,                        # the top: anything
}


def module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path):
    """The pauc_backend modules (and module.names) ``path`` imports, at any depth."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.startswith("pauc_backend"):
            found.add(node.module)
            found.update("%s.%s" % (node.module, a.name) for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("pauc_backend"))
    return found


def graph():
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges = {}
    for name, path in modules.items():
        targets = set()
        for target in imports(path):
            while target and target not in modules:      # a name inside a module
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
        edges[name] = targets
    return modules, edges


def part(module):
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else ""


def test_every_layer_imports_only_the_layers_below_it():
    _, edges = graph()
    wrong = []
    for source, targets in edges.items():
        allowed = ALLOWED.get(part(source), set())
        for target in targets:
            if part(target) in (part(source), "") or allowed is None:
                continue          # the root package holds only __version__
            if part(target) not in allowed:
                wrong.append("%s imports %s" % (source, target))
    assert not wrong, "\n".join(sorted(wrong))


def test_models_never_import_the_automatic_back_end_above_them():
    _, edges = graph()
    wrong = ["%s imports %s" % (s, t) for s, targets in edges.items() for t in targets
             if s.startswith("pauc_backend.models.")
             and not s.startswith("pauc_backend.models.auto")
             and t.startswith("pauc_backend.models.auto")]
    assert not wrong, "\n".join(sorted(wrong))


def cycles(edges, prefix):
    """Every strongly connected group of more than one module under ``prefix`` (Tarjan)."""
    nodes = [n for n in edges if n.startswith(prefix)]
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if not w.startswith(prefix):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in nodes:
        if v not in index:
            visit(v)
    return out


@pytest.mark.parametrize("prefix", ["pauc_backend.models"])
def test_no_circle_of_imports(prefix):
    _, edges = graph()
    # a package's __init__ re-exporting its modules is not a circle of the modules' own
    for name in list(edges):
        if name.startswith(prefix) and (PACKAGE.parent / (name.replace(".", "/"))).is_dir():
            edges[name] = set()
    assert cycles(edges, prefix) == []


def test_the_checks_see_a_planted_violation(tmp_path):
    """The readers above on a synthetic module: an upward import and a circle are found."""
    edges = {"pauc_backend.models.a": {"pauc_backend.models.auto.b"},
             "pauc_backend.models.auto.b": {"pauc_backend.models.a"}}
    assert cycles(edges, "pauc_backend.models") == [["pauc_backend.models.a",
                                                     "pauc_backend.models.auto.b"]]
    path = tmp_path / "m.py"
    path.write_text("from pauc_backend.models.auto import final\nimport pauc_backend.cli\n")
    assert imports(path) == {"pauc_backend.models.auto", "pauc_backend.models.auto.final",
                             "pauc_backend.cli"}
