"""The demo's synthetic corpus: deterministic, well-formed, with the structure it claims."""

import numpy as np
import pytest

from pauc_backend.datasets import make_speaker_corpus

SMALL = dict(dim=16, num_train_speakers=60, num_adapt_speakers=20, num_eval_speakers=10,
             extra_between_rank=4, extra_within_rank=4)


def _within_residuals(data):
    """Rows minus their speaker's mean, and the speaker index of each row."""
    labels = np.asarray(data.labels)
    _, index = np.unique(labels, return_inverse=True)
    sums = np.zeros((index.max() + 1, data.X.shape[1]))
    np.add.at(sums, index, data.X.astype(np.float64))
    counts = np.bincount(index)
    return data.X - (sums / counts[:, None])[index], index, counts


def test_same_seed_gives_identical_corpus():
    a, b = make_speaker_corpus(seed=5, **SMALL), make_speaker_corpus(seed=5, **SMALL)
    for name in ("train", "adapt", "enroll", "test"):
        assert getattr(a, name).keys == getattr(b, name).keys
        np.testing.assert_array_equal(getattr(a, name).X, getattr(b, name).X)
    np.testing.assert_array_equal(a.trial_target, b.trial_target)


def test_different_seeds_give_different_vectors():
    a, b = make_speaker_corpus(seed=5, **SMALL), make_speaker_corpus(seed=6, **SMALL)
    assert a.train.X.shape[1] == b.train.X.shape[1]
    n = min(len(a.train.X), len(b.train.X))
    assert not np.allclose(a.train.X[:n], b.train.X[:n])


def test_keys_are_sorted_unique_and_prefixed_by_their_speaker():
    corpus = make_speaker_corpus(seed=1, **SMALL)
    for data in (corpus.train, corpus.adapt, corpus.enroll, corpus.test):
        assert data.keys == sorted(set(data.keys))
        assert all(key.startswith(label + "-") for key, label in zip(data.keys, data.labels))
        assert data.X.dtype == np.float32 and data.X.shape == (len(data.keys), 16)
        assert np.all(np.isfinite(data.X))
    assert set(corpus.enroll.labels) == set(corpus.test.labels)
    assert not set(corpus.train.labels) & set(corpus.enroll.labels)


def test_utterance_counts_respect_their_ranges_and_vary():
    corpus = make_speaker_corpus(seed=2, train_utts_range=(3, 40), enroll_utts_range=(1, 5),
                                 test_utts_range=(3, 9), **SMALL)
    for data, (low, high) in ((corpus.train, (3, 40)), (corpus.enroll, (1, 5)),
                              (corpus.test, (3, 9))):
        counts = np.array([len(u) for u in data.spk2utt().values()])
        assert counts.min() >= low and counts.max() <= high
        assert len(np.unique(counts)) > 1


def test_trials_cross_every_enrolled_speaker_with_every_test_utterance():
    corpus = make_speaker_corpus(seed=3, **SMALL)
    speakers = sorted(set(corpus.enroll.labels))
    assert len(corpus.trial_enroll) == len(speakers) * len(corpus.test.keys)
    pairs = list(zip(corpus.trial_enroll, corpus.trial_test))
    assert pairs == sorted(pairs) and len(set(pairs)) == len(pairs)
    spk_of = dict(zip(corpus.test.keys, corpus.test.labels))
    expected = np.array([spk_of[u] == s for s, u in pairs])
    np.testing.assert_array_equal(corpus.trial_target, expected)
    assert corpus.trial_target.sum() == len(corpus.test.keys)


def test_within_speaker_covariance_matches_the_truth():
    corpus = make_speaker_corpus(seed=4, dim=8, num_train_speakers=3000, train_utts_median=12,
                                 extra_between_rank=2, extra_within_rank=2)
    residuals, _, counts = _within_residuals(corpus.train)
    # E[r r^T] = (1 - 1/n) W for a residual from its own speaker mean.
    scatter = residuals.T.astype(np.float64) @ residuals / np.sum(counts - 1)
    truth = corpus.truth["within"]
    assert np.linalg.norm(scatter - truth) / np.linalg.norm(truth) < 0.05


def test_within_speaker_noise_is_heavy_tailed_and_gaussian_when_asked():
    def excess_kurtosis(dof):
        corpus = make_speaker_corpus(seed=7, dim=6, num_train_speakers=3000, within_dof=dof,
                                     extra_between_rank=2, extra_within_rank=2)
        residuals, index, counts = _within_residuals(corpus.train)
        keep = counts[index] >= 10
        # Mahalanobis radius of the residuals: heavy tails inflate its kurtosis.
        w_inv = np.linalg.inv(corpus.truth["within"])
        r2 = np.einsum("ij,jk,ik->i", residuals[keep], w_inv, residuals[keep])
        return np.mean(r2 ** 2) / np.mean(r2) ** 2 - (1 + 2 / 6)
    assert excess_kurtosis(5.0) > 0.5
    assert abs(excess_kurtosis(np.inf)) < 0.15


def test_in_domain_sets_are_shifted_and_have_extra_variability():
    corpus = make_speaker_corpus(seed=8, dim=12, num_train_speakers=2000, num_adapt_speakers=2000,
                                 adapt_utts_range=(2, 4), extra_between_rank=3,
                                 extra_within_rank=3, shift_scale=2.0)
    offset = corpus.adapt.X.mean(0) - corpus.train.X.mean(0)
    shift = corpus.truth["shift"]
    assert np.linalg.norm(offset - shift) < 0.2 * np.linalg.norm(shift)
    total_out = np.trace(np.cov(corpus.train.X.T))
    total_in = np.trace(np.cov(corpus.adapt.X.T))
    extra = np.trace(corpus.truth["extra_between"]) + np.trace(corpus.truth["extra_within"])
    assert total_in - total_out == pytest.approx(extra, rel=0.25)


@pytest.mark.parametrize("kwargs", [dict(dim=1), dict(num_eval_speakers=1),
                                    dict(train_utts_range=(1, 5)), dict(test_utts_range=(4, 3)),
                                    dict(within_dof=2.0),
                                    dict(dim=4, extra_between_rank=2, extra_within_rank=5)])
def test_bad_parameters_are_rejected(kwargs):
    with pytest.raises(ValueError):
        make_speaker_corpus(**kwargs)


# ------------------------------------------------------------------ make-synthetic-vectors
def _tree_bytes(root):
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_make_synthetic_vectors_writes_data_dirs_that_read_back(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # scp paths are relative to the directory the tool ran in
    from conftest import run_tool
    from pauc_backend.kaldi_io import read_token_vector_table, read_trials, read_vector_table
    proc = run_tool("make-synthetic-vectors", "--seed=3", "--dim=12", "--num-train-speakers=30",
                    "--num-adapt-speakers=10", "--num-eval-speakers=6", "data", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    corpus = make_speaker_corpus(seed=3, dim=12, num_train_speakers=30, num_adapt_speakers=10,
                                 num_eval_speakers=6)
    for name in ("train", "adapt", "enroll", "test"):
        keys, X = read_vector_table("scp:" + str(tmp_path / "data" / name / "xvector.scp"))
        expected = getattr(corpus, name)
        assert keys == expected.keys
        np.testing.assert_array_equal(X, expected.X)
        spk2utt = read_token_vector_table("ark:" + str(tmp_path / "data" / name / "spk2utt"))
        assert spk2utt == expected.spk2utt()
        utt2spk = (tmp_path / "data" / name / "utt2spk").read_text().splitlines()
        assert utt2spk == ["%s %s" % pair for pair in zip(expected.keys, expected.labels)]
    # scp paths are written as given (relative to the cwd), as Kaldi writes them.
    assert (tmp_path / "data/train/xvector.scp").read_text().split()[1].startswith(
        "data/train/xvector.ark:")
    enroll, test, labels = read_trials(str(tmp_path / "data" / "trials"))
    assert list(enroll) == list(corpus.trial_enroll) and list(test) == list(corpus.trial_test)
    assert list(labels == "target") == list(corpus.trial_target)


def test_make_synthetic_vectors_is_reproducible_and_seed_dependent(tmp_path):
    from conftest import run_tool
    options = ["--dim=8", "--num-train-speakers=20", "--num-adapt-speakers=5",
               "--num-eval-speakers=4"]
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        (tmp_path / name).mkdir()
        assert run_tool("make-synthetic-vectors", "--seed=%d" % seed, *options, "data",
                        cwd=tmp_path / name).returncode == 0
    assert _tree_bytes(tmp_path / "a") == _tree_bytes(tmp_path / "b")
    assert (_tree_bytes(tmp_path / "a")["data/train/xvector.ark"]
            != _tree_bytes(tmp_path / "c")["data/train/xvector.ark"])


def test_make_synthetic_vectors_rejects_bad_parameters_with_one_error_line(tmp_path):
    from conftest import run_tool
    proc = run_tool("make-synthetic-vectors", "--within-dof=1.5", "out", cwd=tmp_path)
    assert proc.returncode == 255
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert len(errors) == 1 and "within_dof" in errors[0]
    assert "Traceback" not in proc.stderr.decode()
    assert run_tool("make-synthetic-vectors", cwd=tmp_path).returncode == 1


# ----------------------------------------------------------------------- durations (issue 29)
def _digest(corpus):
    import hashlib
    h = hashlib.sha256()
    for name in ("train", "adapt", "enroll", "test"):
        data = getattr(corpus, name)
        h.update(" ".join(data.keys).encode())
        h.update(" ".join(data.labels).encode())
        h.update(np.round(data.X.astype(np.float64), 4).tobytes())
    h.update(corpus.trial_target.tobytes())
    return h.hexdigest()


def test_corpus_without_durations_is_the_one_drawn_before_durations_existed():
    # Digest of make_speaker_corpus(seed=5, **SMALL) computed with the implementation of commit
    # 9e425d4 (before durations and the development set were added), values rounded to 1e-4.
    expected = "f0c39ed5476645e40461b1b551b9e61a192af9f1bf626801dd8ad6ac95427d2e"
    assert _digest(make_speaker_corpus(seed=5, **SMALL)) == expected
    assert _digest(make_speaker_corpus(seed=5, num_dev_speakers=4, **SMALL)) == expected


def test_durations_scale_the_same_noise_draws_by_sqrt_m_of_d():
    from pauc_backend.datasets import duration_noise_scale
    plain = make_speaker_corpus(seed=11, **SMALL)
    timed = make_speaker_corpus(seed=11, durations=True, **SMALL)
    for name, (low, high) in (("train", (20.0, 60.0)), ("adapt", (2.0, 60.0)),
                              ("test", (2.0, 60.0))):
        a, b = getattr(plain, name), getattr(timed, name)
        assert a.keys == b.keys and a.durations is None
        d = b.durations
        assert d.shape == (len(b.keys),) and low <= d.min() and d.max() <= high
        # x = s + n without durations, s + sqrt(m(d)) n with them: the speaker vector s
        # recovered from each utterance is the same for all utterances of a speaker.
        scale = np.sqrt((1 + 30.0 / d) / (1 + 30.0 / 10.0))
        np.testing.assert_allclose(scale, duration_noise_scale(d), rtol=1e-12)
        keep = np.abs(scale - 1) > 0.05
        noise = (b.X.astype(np.float64) - a.X) / (scale - 1)[:, None]
        s = a.X - noise
        labels = np.asarray(a.labels)
        for spk in np.unique(labels[keep])[:10]:
            rows = s[keep & (labels == spk)]
            assert np.abs(rows - rows[0]).max() < 1e-2 * (1 + np.abs(rows[0]).max())


def test_within_speaker_noise_grows_as_durations_shrink():
    corpus = make_speaker_corpus(seed=12, dim=8, num_train_speakers=20, num_adapt_speakers=1500,
                                 adapt_utts_range=(6, 10), extra_between_rank=2,
                                 extra_within_rank=2, durations=True)
    residuals, index, counts = _within_residuals(corpus.adapt)
    energy = np.sum(residuals.astype(np.float64) ** 2, axis=1) * (counts / (counts - 1))[index]
    d = corpus.adapt.durations
    short, long = energy[d < 4].mean(), energy[d > 30].mean()
    m = lambda x: (1 + 30.0 / x) / 4.0
    # expected ratio of mean noise energies, from m(d) averaged over each bin (log-uniform d);
    # the residual from a speaker mean also carries that mean's error, hence a loose bound
    ratio = np.mean(m(d[d < 4])) / np.mean(m(d[d > 30]))
    assert short / long == pytest.approx(ratio, rel=0.25)
    assert short / long > 4


def test_development_set_has_the_evaluation_design_and_other_speakers():
    corpus = make_speaker_corpus(seed=13, num_dev_speakers=5, durations=True, **SMALL)
    enroll, test, trial_enroll, trial_test, trial_target = corpus.dev
    assert set(enroll.labels) == set(test.labels) and len(set(enroll.labels)) == 5
    assert all(k.startswith("dv") for k in enroll.keys + test.keys)
    assert not set(enroll.labels) & set(corpus.enroll.labels)
    assert len(trial_enroll) == 5 * len(test.keys) and trial_target.sum() == len(test.keys)
    assert enroll.durations is not None and test.durations is not None
    with pytest.raises(ValueError):
        make_speaker_corpus(num_dev_speakers=1, **SMALL)


def test_make_synthetic_vectors_writes_utt2dur_and_the_dev_set_only_when_asked(tmp_path):
    from conftest import run_tool
    options = ["--seed=4", "--dim=8", "--num-train-speakers=20", "--num-adapt-speakers=5",
               "--num-eval-speakers=4"]
    for name, extra in (("plain", []), ("timed", ["--durations", "--num-dev-speakers=3"])):
        (tmp_path / name).mkdir()
        proc = run_tool("make-synthetic-vectors", *options, *extra, "data", cwd=tmp_path / name)
        assert proc.returncode == 0, proc.stderr.decode()
    plain, timed = _tree_bytes(tmp_path / "plain"), _tree_bytes(tmp_path / "timed")
    assert not any(p.endswith("utt2dur") or "dev" in p for p in plain)
    # everything but the vectors, utt2dur and the dev set is the same file
    for path, data in plain.items():
        if not path.endswith(("xvector.ark", "xvector.scp")):
            assert timed[path] == data, path
    corpus = make_speaker_corpus(seed=4, dim=8, num_train_speakers=20, num_adapt_speakers=5,
                                 num_eval_speakers=4, durations=True, num_dev_speakers=3)
    lines = timed["data/test/utt2dur"].decode().splitlines()
    assert lines == ["%s %g" % pair for pair in zip(corpus.test.keys,
                                                      corpus.test.durations.tolist())]
    enroll, test, trial_enroll, trial_test, trial_target = corpus.dev
    assert timed["data/dev_trials"].decode().splitlines() == [
        "%s %s %s" % (e, t, "target" if y else "nontarget")
        for e, t, y in zip(trial_enroll, trial_test, trial_target)]
    assert "data/dev_enroll/utt2dur" in timed and "data/dev_test/spk2utt" in timed
