"""The house of pAUCMetric (auto) (issue 27 item 4): one key and one title per system (old
keys still read), one declaration per parameter that the estimator and train-pauc-auto both
read, and scikit-learn's parameter conventions."""

import inspect

import numpy as np
import pytest

from conftest import run_tool
from pauc_backend.models import systems as auto_systems
from pauc_backend.models.auto import params as auto_params
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.metric_learning import PaucMetric


def test_each_system_has_one_key_and_one_title():
    keys = [s.key for s in auto_systems.SYSTEMS]
    titles = [s.title for s in auto_systems.SYSTEMS]
    assert len(set(keys)) == len(keys) and len(set(titles)) == len(titles)
    # "cosine" named three systems; it is now only an alias, of the centred cosine
    assert "cosine" not in keys
    assert auto_systems.canonical("cosine") == "cosine_centred"
    assert auto_systems.canonical("cosine:as") == "cosine_centred:as"
    assert auto_systems.parse_candidate("cosine+plda") == ("cosine_centred", "plda")
    assert auto_systems.title("plda:as") == "PLDA + AS-norm"
    with pytest.raises(ValueError, match="unknown system 'svm'"):
        auto_systems.parse_candidate("plda+svm")
    with pytest.raises(ValueError, match="names a system twice"):
        auto_systems.parse_candidate("cosine+cosine_centred")


def test_system_properties_follow_from_space_and_head():
    for s in auto_systems.SYSTEMS:
        assert s.dim_free == (s.space == "raw")
        assert s.needs_plda == (s.space in ("latent", "latent_adapt")
                                or s.head in ("plda", "dplda"))
        assert s.needs_adapt == (s.space == "latent_adapt")
        assert s.cheap == (s.head in ("dot", "plda"))
    # what the selection rule counts: nothing for raw cosine, more for every piece added
    D, S = 64, 40
    count = {k: auto_systems.trained_parameters((k,), 16, D, S)
             for k in ("cosine_raw", "cosine_centred", "plda", "pauc_latent", "dplda")}
    assert count["cosine_raw"] == 0
    assert count["cosine_centred"] == D + D * 16
    assert count["plda"] == count["cosine_centred"] + 16 * 17
    assert count["pauc_latent"] == count["plda"] + 16 * 17 // 2
    assert count["dplda"] == count["plda"] + 3 * 16 * 16 + 1


def test_every_parameter_is_declared_once_with_the_estimators_default():
    signature = inspect.signature(AutoBackend.__init__).parameters
    declared = {p.name for p in auto_params.PARAMS}
    assert set(signature) - {"self", "metric_params"} == declared
    for p in auto_params.PARAMS:
        assert signature[p.name].default == p.default, p.name
    # the metric options take PaucMetric's own defaults but the number of iterations (the
    # budget of the automatic back-end), which is what its folds and final model train with
    metric = inspect.signature(PaucMetric.__init__).parameters
    for p in auto_params.METRIC_OPTIONS:
        if p.name != "num_iters":
            assert p.default == metric[p.name].default, p.name
    iters = next(p.default for p in auto_params.METRIC_OPTIONS if p.name == "num_iters")
    pipe = AutoBackend()._make_pipeline(10, ("pauc_lnorm",), 0)
    assert pipe._metric().num_iters == iters
    assert AutoBackend(metric_params={"gamma": 0.2})._make_pipeline(
        10, ("pauc_lnorm",), 0)._metric().get_params()["num_iters"] == iters
    assert AutoBackend().get_params()["lda_dims"] == auto_params.DEFAULT_LDA_DIMS
    est = AutoBackend().set_params(num_folds=3)
    assert est.num_folds == 3
    with pytest.raises(ValueError, match="unknown parameter"):
        est.set_params(no_such=1)


def _help_defaults():
    text = run_tool("train-pauc-auto", "--help").stdout.decode()
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("--") and "default = " in line:
            name = line[2:].split()[0]
            out[name] = line.split("default = ", 1)[1].split(";")[0].rstrip(")")
    return out, text


def test_the_tool_registers_every_declared_option_with_its_default():
    defaults, text = _help_defaults()
    for p in auto_params.options():
        assert p.option in defaults, p.option
        value = auto_params.option_text(p)
        shown = defaults[p.option].strip('"')
        if p.kind == "float":
            assert float(shown) == float(value), p.option
        else:
            assert shown == str(value), p.option
    # every system of the registry is taught by --help, with its title
    for s in auto_systems.SYSTEMS:
        assert "%s %s:" % (s.key.ljust(18), s.title) in text


@pytest.mark.parametrize("param", [p for p in auto_params.options() if p.bounds],
                         ids=lambda p: p.option)
def test_the_tool_and_the_estimator_refuse_the_same_values(param, tmp_path):
    """A value just outside a declared bound: one ERROR naming the option, exit 255, before
    any input is read; the estimator refuses it too, naming the parameter."""
    op = param.bounds[0].rstrip("0123456789.e-+")
    limit = float(param.bounds[0][len(op):])
    bad = {">=": limit - 1, ">": limit, "<=": limit + 1, "<": limit}[op]
    text = str(int(bad)) if param.kind == "int" else repr(bad)
    proc = run_tool("train-pauc-auto", "--%s=%s" % (param.option, text), "ark:/nonexistent",
                    "ark:/nonexistent", tmp_path / "m")
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode == 255 and len(errors) == 1, proc.stderr.decode()
    assert "--" + param.option in errors[0]
    value = int(bad) if param.kind == "int" else bad
    if param in auto_params.METRIC_OPTIONS:
        est = AutoBackend(metric_params={param.name: value})
    else:
        est = AutoBackend(**{param.name: value})
    with pytest.raises(ValueError):
        est.check_params()


def test_the_pauc_band_is_named_as_in_the_other_tools_and_the_old_names_still_work(tmp_path):
    text = run_tool("train-pauc-auto", "--help").stdout.decode()
    assert "--pauc-alpha" in text and "--pauc-beta" in text and "also --alpha" in text
    for option in ("--pauc-beta", "--beta"):
        proc = run_tool("train-pauc-auto", option + "=0", "ark:/nonexistent",
                        "ark:/nonexistent", tmp_path / "m")
        assert proc.returncode == 255 and b"--pauc-beta=0" in proc.stderr
    proc = run_tool("train-pauc-auto", "--alpha=0.02", "--pauc-beta=0.01", "ark:/nonexistent",
                    "ark:/nonexistent", tmp_path / "m")
    assert proc.returncode == 255 and b"alpha < beta" in proc.stderr


@pytest.mark.parametrize("param", [p for p in auto_params.BAND + auto_params.METRIC
                                   if p.bounds], ids=lambda p: p.name)
def test_the_declared_metric_bounds_are_the_models_own(param):
    """The one declaration of the band and of pAUCMetric's options (models/auto/params.py,
    every tool's options) allows exactly what PaucMetric.check_params allows: each bound's
    value just outside is refused by the model, the bound itself (or just inside an open
    one) is accepted. Issue 34: train-pauc-metric's --num-iters allowed 0, the model not."""
    for bound in param.bounds:
        op = bound.rstrip("0123456789.e-+")
        limit = float(bound[len(op):])
        step = 1 if param.kind == "int" else 1e-6
        outside = {">=": limit - step, ">": limit, "<=": limit + step, "<": limit}[op]
        inside = {">=": limit, ">": limit + step, "<=": limit, "<": limit - step}[op]
        if param.kind == "int":
            outside, inside = int(outside), int(inside)
        values = {"alpha": 0.0, "beta": 0.01}
        for value, ok in ((outside, False), (inside, True)):
            values[param.name] = value
            if param.name == "alpha" and value >= values["beta"]:
                values["beta"] = min(1.0, value + 0.01)
            if param.name == "beta" and value <= values["alpha"]:
                continue                       # the band's own check (alpha < beta)
            model = PaucMetric(**values)
            if ok:
                model.check_params()
            else:
                with pytest.raises(ValueError):
                    model.check_params()
    assert param.default == inspect.signature(PaucMetric.__init__).parameters[
        param.name].default


def test_the_package_exports_resolve():
    from pauc_backend.models import auto
    assert auto.AutoBackend is AutoBackend
    for name in auto.__all__:
        assert getattr(auto, name) is not None


def test_a_stored_model_with_the_old_key_cosine_still_reads(tmp_path):
    from pauc_backend.datasets import make_speaker_corpus
    from pauc_backend.persist.auto_backend import read_model_dir, write_model_dir
    c = make_speaker_corpus(seed=3, dim=12, num_train_speakers=12, num_adapt_speakers=2,
                            num_eval_speakers=3, train_utts_range=(5, 8))
    X, y = np.asarray(c.train.X, np.float32), np.asarray(c.train.labels)
    model = AutoBackend(candidates=("cosine",), lda_dims=(4,), num_folds=2).fit(X, y)
    assert model.members_ == ("cosine_centred",)
    write_model_dir(str(tmp_path / "m"), model)
    card = (tmp_path / "m/system.txt").read_text()
    assert "system cosine_centred\n" in card and "system_title Cosine (centred);" in card
    (tmp_path / "m/system.txt").write_text(card.replace("system cosine_centred\n",
                                                        "system cosine\n"))
    old, _ = read_model_dir(str(tmp_path / "m"))
    assert old.members_ == ("cosine_centred",)
    E, T = X[:3], X[3:20]
    er, tr = np.repeat(np.arange(3), 17), np.tile(np.arange(17), 3)
    np.testing.assert_array_equal(old.score(E, T, er, tr), model.score(E, T, er, tr))
