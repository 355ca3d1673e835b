"""Development trials (models.auto.dev.DevTrials) for the tests: from a synthetic corpus's
development evaluation, and a planted corpus whose development domain puts the speakers where
the training domain has its nuisance."""

import numpy as np

from pauc_backend.models.auto.dev import DevTrials


def dev_of(corpus, durations=False):
    """The DevTrials of ``corpus.dev`` (make_speaker_corpus(num_dev_speakers=...)): every
    enrolled speaker (the mean of its enrollment vectors) against every test vector."""
    enroll, test, trial_enroll, trial_test, target = corpus.dev
    keys = list(enroll.keys) + list(test.keys)
    V = np.vstack([enroll.X, test.X]).astype(np.float32)
    speakers = sorted(set(enroll.labels))
    labels = np.asarray(enroll.labels)
    models = [np.flatnonzero(labels == s) for s in speakers]
    offset = len(enroll.keys)
    test_rows = offset + np.arange(len(test.keys))
    model_of = {s: i for i, s in enumerate(speakers)}
    item_of = {k: i for i, k in enumerate(test.keys)}
    d = None
    if durations:
        d = np.concatenate([enroll.durations, test.durations])
    assert len(keys) == V.shape[0]
    return DevTrials(V, models, test_rows,
                     np.array([model_of[e] for e in trial_enroll]),
                     np.array([item_of[t] for t in trial_test]), np.asarray(target),
                     np.array(speakers), np.asarray(test.labels), d)


def planted(seed=0, dim=12, train_speakers=40, dev_speakers=16):
    """(X, y, dev): training speakers that differ in the first half of the dimensions, with a
    large within-speaker nuisance in the second half (a trained back-end learns to ignore it:
    it wins the training folds); development speakers that differ only in that second half,
    with small noise everywhere (what the trained back-end ignores is what separates them:
    the raw cosine wins there)."""
    rng = np.random.default_rng(seed)
    half = dim // 2

    def draw(n_spk, utts, between, within):
        means = rng.normal(0, 1, (n_spk, dim)) * between
        X = np.repeat(means, utts, axis=0) + rng.normal(0, 1, (n_spk * utts, dim)) * within
        return X.astype(np.float32), np.repeat(np.arange(n_spk), utts)

    between = np.r_[np.full(half, 2.0), np.full(dim - half, 0.05)]
    within = np.r_[np.full(half, 0.6), np.full(dim - half, 3.0)]
    X, y = draw(train_speakers, 8, between, within)
    between = np.r_[np.full(half, 0.05), np.full(dim - half, 2.0)]
    V, s = draw(dev_speakers, 6, between, np.full(dim, 0.5))
    models = [np.flatnonzero(s == k)[:2] for k in range(dev_speakers)]
    test = np.concatenate([np.flatnonzero(s == k)[2:] for k in range(dev_speakers)])
    e, t = np.meshgrid(np.arange(dev_speakers), np.arange(test.size), indexing="ij")
    e, t = e.ravel(), t.ravel()
    dev = DevTrials(V, models, test, e, t, s[test][t] == e, np.arange(dev_speakers),
                    s[test])
    return X, y.astype(str), dev
