"""The README's Python example runs as written and prints figures a working back-end gives."""

import re
import subprocess
import sys

from conftest import REPO, tool_env


def test_readme_python_example_runs_as_written(tmp_path):
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1
    proc = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, env=tool_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr.decode()
    eer, pauc = map(float, re.fullmatch(rb"EER ([\d.]+) %  pAUC\[0,0.01\] ([\d.]+)\n",
                                        proc.stdout).groups())
    assert 0 < eer < 50 and 0 < pauc <= 1
