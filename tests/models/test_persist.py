"""Issue 20: a Python user saves and loads a trained AutoBackend and a calibration/fusion model
with pauc_backend.persist alone: pauc_backend.cli is never imported, and the loaded models
score exactly as the fitted ones."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import sys
import numpy as np
from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.calibration import LinearCalibration, LinearFusion
from pauc_backend.persist.auto_backend import read_model_dir, write_model_dir
from pauc_backend.persist.calibration import read_calibration, write_calibration

out = sys.argv[1]
c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=30, num_adapt_speakers=2,
                        num_eval_speakers=6, train_utts_range=(6, 12))
X, y = np.asarray(c.train.X, np.float32), np.asarray(c.train.labels)
model = AutoBackend(lda_dims=(8,), num_folds=3, metric_params={"num_iters": 60, "batch_size": 50},
                    candidates=("plda", "pauc_lnorm", "plda+pauc_latent")).fit(X, y)
write_model_dir(out + "/model", model)
loaded, card = read_model_dir(out + "/model")
E = np.asarray(c.enroll.X, np.float32)
T = np.asarray(c.test.X, np.float32)
rows_e = np.arange(len(E)).repeat(len(T))
rows_t = np.tile(np.arange(len(T)), len(E))
a = model.score(E, T, rows_e, rows_t)
b = loaded.score(E, T, rows_e, rows_t)
assert card["system"] == model.chosen_["candidate"]
np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6 * np.abs(a).max())

rng = np.random.default_rng(0)
labels = rng.random(400) < 0.3
scores = rng.normal(size=(400, 2)) + labels[:, None] * np.array([2.0, 1.0])
for fitted, S in ((LinearCalibration(prior=0.01).fit(scores[:, 0], labels), scores[:, 0]),
                  (LinearFusion(prior=0.01).fit(scores, labels), scores)):
    for binary in (True, False):  # binary doubles are exact; text keeps Kaldi's digits
        write_calibration(out + "/cal", fitted, binary=binary)
        again = read_calibration(out + "/cal")
        tol = 1e-12 if binary else 1e-5
        np.testing.assert_allclose(again.transform(S), fitted.transform(S), rtol=tol,
                                   atol=tol * np.abs(fitted.transform(S)).max())
        assert type(again) is type(fitted)
print(sorted(m for m in sys.modules if m.startswith("pauc_backend.cli")))
'''


def test_models_save_and_load_without_the_cli(tmp_path):
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=REPO,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().strip() == "[]"
    assert (tmp_path / "model" / "system.txt").is_file()
