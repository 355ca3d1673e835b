"""A tool's start imports only what every run of it needs: no scipy, no matplotlib.

Each tool is started hundreds of times by a recipe (a tool per pipe stage and per job) and
thousands by the tests; a start costs about 0.15 s of CPU, most of it Python and numpy.
scipy.cluster alone added 0.3 s to every train-pauc-auto and score-pauc-auto start
(~100 s of CPU in one run of the suite, 2026-11-28); the modules that need scipy or matplotlib
import it where it is used (metrics/llr.py, metrics/curves.py, plotting.py,
models/pseudo_speakers.py, models/discriminative_plda.py)."""

import subprocess
import sys

from conftest import BIN, REPO

TOOLS = sorted(p.name for p in BIN.iterdir() if not p.name.startswith("."))

PROBE = """
import importlib, sys
heavy = ("scipy", "matplotlib", "sklearn")
found = {}
for name in sys.argv[1:]:
    importlib.import_module("pauc_backend.cli.tools." + name.replace("-", "_"))
    loaded = sorted({m.split(".")[0] for m in sys.modules} & set(heavy))
    if loaded:
        found[name] = loaded
print(found)
"""


def test_no_tool_imports_scipy_or_matplotlib_when_it_starts():
    """Every tool module imported in turn in one process (the modules the first imports
    stay loaded, so the first tool that pulls one in is the one named)."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *TOOLS], cwd=REPO,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().strip() == "{}"
