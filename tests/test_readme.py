"""The README's Python example runs as written and prints figures a working back-end gives."""

import re
import subprocess
import sys

from conftest import REPO, tool_env


def test_readme_python_example_runs_as_written(tmp_path):
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2
    proc = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, env=tool_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr.decode()
    eer, pauc = map(float, re.fullmatch(rb"EER ([\d.]+) %  pAUC\[0,0.01\] ([\d.]+)\n",
                                        proc.stdout).groups())
    assert 0 < eer < 50 and 0 < pauc <= 1


def test_readme_auto_backend_example_runs_as_written(tmp_path):
    """The automatic back-end's example: fit (quick setting, with an adaptation set),
    write_model_dir, read_model_dir returning (model, card), score (issue 28)."""
    text = (REPO / "README.md").read_text()
    block = re.findall(r"```python\n(.*?)```", text, re.S)[1]
    proc = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=tool_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr.decode()
    first, second = proc.stdout.decode().splitlines()
    system = first.split()[1]
    from pauc_backend.datasets import make_speaker_corpus
    num_test = len(make_speaker_corpus(seed=1, num_train_speakers=60).test.keys)
    assert first == "system " + system and second == "%s (%d,)" % (system, num_test - 1)
    assert (tmp_path / "pauc_auto/system.txt").exists()
