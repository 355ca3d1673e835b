"""The README's Python example runs as written and prints figures a working back-end gives.

Chance on its trials is EER 50 % and pAUC[0,0.01] about beta / 2 = 0.005 (a target above the
top 1 % of non-targets with probability 0.005). The plain cosine of the same prepared vectors
(centred, unit length) gives EER 21.7 % and pAUC 0.295 (numpy, 2026-11-26), the example's
pAUCMetric 16.8 % and 0.377. The bounds below, EER <= 25 % and pAUC >= 0.2, fail a system
near chance and one clearly worse than that cosine."""

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
    assert 0 < eer <= 25 and 0.2 <= pauc <= 1, (eer, pauc)


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
