"""The automatic back-end's stages return values; only AutoBackend writes onto itself (issue
41: "no module in models/auto/ assigns attributes to the estimator"). Checked two ways: no
module of models/auto other than backend.py assigns an attribute of an object it was given
as ``est``/``estimator``/``backend``/``model`` (ast), and a fitted AutoBackend, with an
adaptation set and development trials so that every stage runs, holds no attribute that
backend.py does not assign itself (``self.<name> = ...`` or its parameters)."""

import ast
from pathlib import Path

import numpy as np

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.auto.dev import DevTrials

AUTO = Path(__file__).resolve().parents[2] / "pauc_backend" / "models" / "auto"
OWNER_NAMES = {"est", "estimator", "backend", "model", "auto"}


def assigned_attributes(path, owner):
    """{attribute} assigned as ``<owner>.<attribute> = ...`` (or +=, or setattr(owner, ...))
    anywhere in ``path``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) \
                        and sub.value.id in owner:
                    found.add(sub.attr)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "setattr" and node.args \
                and isinstance(node.args[0], ast.Name) and node.args[0].id in owner:
            found.add("<setattr>")
    return found


def test_no_stage_module_writes_onto_an_estimator_it_was_given():
    offenders = {p.name: sorted(assigned_attributes(p, OWNER_NAMES))
                 for p in sorted(AUTO.glob("*.py")) if p.name != "backend.py"}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_checker_sees_a_planted_write(tmp_path):
    planted = tmp_path / "stage.py"
    planted.write_text("def run(est, x):\n    est.pseudo_labels_ = x\n    return x\n")
    assert assigned_attributes(planted, OWNER_NAMES) == {"pseudo_labels_"}


def test_a_fitted_backend_holds_only_what_backend_py_assigns():
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=30, num_adapt_speakers=20,
                            num_eval_speakers=4, train_utts_range=(6, 12), num_dev_speakers=12)
    X, y = np.asarray(c.train.X, np.float32), np.asarray(c.train.labels)
    V = np.asarray(c.dev[1].X, np.float32)        # the development test vectors
    spk = np.asarray(c.dev[1].labels)
    a, b = np.triu_indices(V.shape[0], k=1)
    dev = DevTrials(V, [np.array([i]) for i in range(V.shape[0])], np.arange(V.shape[0]),
                    a, b, spk[a] == spk[b])
    model = AutoBackend(lda_dims=(0, 8), num_folds=3, dev_resamples=20,
                        metric_params={"num_iters": 20, "batch_size": 20},
                        candidates=("cosine_raw", "plda", "pauc_lnorm")).fit(
        X, y, X_adapt=np.asarray(c.adapt.X, np.float32), dev=dev)
    own = assigned_attributes(AUTO / "backend.py", {"self", "model", "cls"})
    own.update(AutoBackend._param_names())
    assert set(vars(model)) - own == set()
    assert {"chosen_", "pipeline_", "fusion_", "card_"} <= set(vars(model))
    assert "selection_rated_by dev" in model.describe().splitlines()      # every stage ran
