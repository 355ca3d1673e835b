"""choice.txt of a train-pauc-auto model directory and plot-auto-choice: every candidate's
figure on every source of evidence, as the choice read it, and the picture drawn from it."""

import numpy as np
import pytest

from conftest import run_tool
from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.auto.evidence import PREFIX
from pauc_backend.persist.auto_backend import read_choice, write_model_dir


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    c = make_speaker_corpus(seed=4, dim=12, num_train_speakers=24, num_adapt_speakers=30,
                            adapt_utts_range=(5, 8), num_eval_speakers=2)
    model = AutoBackend(lda_dims=(0, 6), num_folds=3, candidates=("plda", "cosine_raw"),
                        metric_params={"num_iters": 20}, dev_resamples=20).fit(
        c.train.X, c.train.labels, X_adapt=c.adapt.X)
    path = tmp_path_factory.mktemp("choice") / "m"
    write_model_dir(str(path), model)
    return path, model


def test_choice_txt_holds_every_rated_candidate_of_every_source(model_dir):
    path, model = model_dir
    rows = read_choice(str(path))
    expected = []
    for e in model.evidence_:
        means, se = e.means(), e.standard_errors()
        for i, r in enumerate(e.rows):
            if r is not None:
                name, dim = model.candidates_[i]
                expected.append((PREFIX[e.source], name, "none" if not dim else str(dim),
                                 means[i], se[i]))
    assert len(rows) == len(expected) > 2
    for row, (source, name, dim, mean, err) in zip(rows, expected):
        assert (row["source"], row["candidate"], row["lda_dim"]) == (source, name, dim)
        assert row["pauc"] == pytest.approx(mean, rel=1e-5)
        assert row["se"] == pytest.approx(err, rel=1e-5, abs=1e-9)
    chosen = [r for r in rows if "chosen" in r["role"]]
    assert {r["candidate"] for r in chosen} == {model.choice_.name}
    rating = {r["source"] for r in rows if "rating" in r["role"]}
    assert rating == {PREFIX[model.choice_.source]}
    assert {r["candidate"] for r in rows if "baseline" in r["role"]} <= {"cosine_raw",
                                                                         "cosine_centred"}


def test_the_picture_draws_the_table(model_dir):
    """Each panel's error bars are the table's pAUC and standard error of that source."""
    from pauc_backend import plotting
    path, _ = model_dir
    rows = read_choice(str(path))
    fig = plotting.choice_figure(rows)
    try:
        sources = list(dict.fromkeys(r["source"] for r in rows))
        for ax, source in zip(fig.axes, sources):
            mine = [r for r in rows if r["source"] == source]
            bars = ax.containers[0]
            x = bars.lines[0].get_xdata()
            np.testing.assert_allclose(x, [r["pauc"] for r in mine], rtol=1e-9)
            segments = bars.lines[2][0].get_segments()
            np.testing.assert_allclose([s[1][0] - s[0][0] for s in segments],
                                       [2 * r["se"] for r in mine], rtol=1e-6, atol=1e-12)
    finally:
        import matplotlib.pyplot as plt
        plt.close(fig)


def test_plot_auto_choice_writes_the_picture(model_dir, tmp_path):
    path, _ = model_dir
    proc = run_tool("plot-auto-choice", path, tmp_path / "choice.png")
    assert proc.returncode == 0, proc.stderr.decode()
    assert (tmp_path / "choice.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Wrote the choice among" in proc.stderr.decode()


@pytest.mark.parametrize("content,message", [
    ("heldout cosine_raw none 0.3\n", "expected 8 fields"),
    ("heldout cosine_raw none nan 0.1 0.2 0.9 -\n", "not a finite number"),
    ("elsewhere cosine_raw none 0.3 0.1 0.2 0.9 -\n", "expected 8 fields"),
    ("heldout cosine_raw none 0.3 0.1 0.2 0.9 winner\n", "unknown role"),
    ("", "holds no candidate"),
])
def test_a_damaged_choice_txt_is_one_error_naming_its_line(tmp_path, content, message):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "choice.txt").write_text(content)
    proc = run_tool("plot-auto-choice", tmp_path / "m", tmp_path / "c.png")
    err = proc.stderr.decode()
    assert proc.returncode != 0 and message in err and "choice.txt" in err
    assert err.count("ERROR") == 1 and "Traceback" not in err
    assert not (tmp_path / "c.png").exists()


def test_a_model_directory_without_choice_txt_says_so(tmp_path):
    (tmp_path / "m").mkdir()
    proc = run_tool("plot-auto-choice", tmp_path / "m", tmp_path / "c.png")
    assert proc.returncode != 0 and "has no choice.txt" in proc.stderr.decode()
