"""What a benchmark's RESULTS file states about its run: the machine's load (``uptime``) and
the checkout's commit. Imported by the scripts of this folder (run as
``python benchmarks/<script>.py``, so this folder is on sys.path)."""

import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def load():
    """``uptime``'s line (time, up time, load averages)."""
    try:
        return subprocess.run(["uptime"], stdout=subprocess.PIPE).stdout.decode().strip()
    except OSError:
        return "uptime unavailable"


def commit():
    """The short hash of this checkout's HEAD ("?" without git)."""
    try:
        return subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                              stdout=subprocess.PIPE).stdout.decode().strip()
    except OSError:
        return "?"
