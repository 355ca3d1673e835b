"""Issue 26 item 8: outputs get the modes Kaldi's would - files 0666 and directories 0777 less
the umask (fopen, mkdir) - model and fold directories included, so a colleague or a queue job
running as another user of the group can read them. The umask is set only in the subprocess
that writes (``preexec_fn``), never in this process.
"""

import os
import stat
import subprocess
import sys

import pytest
from conftest import BIN, REPO, tool_env

MODEL_SCRIPT = r"""
import sys
import numpy as np
from pauc_backend.models.auto import AutoBackend
from pauc_backend.persist.auto_backend import write_model_dir
from pauc_backend.models.auto.policy import Stage
from pauc_backend.persist.auto_folds import write_fold_outputs
rng = np.random.default_rng(0)
X = np.repeat(rng.normal(size=(12, 6)) * 2, 8, axis=0) + rng.normal(size=(96, 6))
model = AutoBackend(candidates=("plda",), lda_dims=(4,), num_folds=2).fit(
    X, np.repeat(np.arange(12), 8))
write_model_dir(sys.argv[1], model)
write_model_dir(sys.argv[1], model)          # replacing an existing model directory
write_fold_outputs(sys.argv[2], 1, [0], [], Stage("nothing left", [], ()), {})
"""


def run(argv, umask):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=tool_env(), cwd=str(REPO), preexec_fn=lambda: os.umask(umask))
    assert proc.returncode == 0, proc.stderr.decode()


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002])
def test_files_and_directories_get_the_modes_the_umask_gives(tmp_path, umask):
    (tmp_path / "in.txt").write_text("a  [ 1 2 ]\nb  [ 3 4 ]\n")
    out = tmp_path / "out"
    out.mkdir()
    run([sys.executable, str(BIN / "copy-vectors"), "ark,t:%s" % (tmp_path / "in.txt"),
         "ark,scp:%s,%s" % (out / "x.ark", out / "x.scp")], umask)
    run([sys.executable, str(BIN / "compute-vector-mean"), "ark,t:%s" % (tmp_path / "in.txt"),
         str(out / "mean.vec")], umask)
    run([sys.executable, "-c", MODEL_SCRIPT, str(out / "model"), str(out / "folds")], umask)
    files = [out / "x.ark", out / "x.scp", out / "mean.vec"]
    folders = [out / "model", out / "folds", out / "folds" / "stage1.fold1"]
    files += [p for folder in folders for p in folder.iterdir() if p.is_file()]
    assert len(files) > 6
    for path in files:
        assert mode(path) == 0o666 & ~umask, path
    for path in folders:
        assert mode(path) == 0o777 & ~umask, path
    assert sorted(os.listdir(out)) == ["folds", "mean.vec", "model", "x.ark", "x.scp"]
    assert sorted(os.listdir(out / "folds")) == ["stage1.fold1"]
