"""AS-norm in the automatic back-end (issue 28): with few training speakers and no LDA the
cohort of the training speakers' MEAN vectors turned PLDA into near chance (a user's log:
plda 6.6 % -> plda:as 45.4 % EER with 40 speakers). Property: on a simple synthetic corpus
with 40 training speakers, AS-norm against the pipeline's cohort keeps a system's held-out
figures close to its own, and the cohort is one training vector per speaker."""

import numpy as np
import pytest

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.models.backend_pipeline import BackendPipeline


def _eer_and_pauc(scores, target):
    """Brute-force EER and pAUC[0, 0.01] (plain numpy)."""
    tar = np.sort(scores[target])
    non = np.sort(scores[~target])
    thresholds = np.concatenate([tar, non])
    frr = np.searchsorted(tar, thresholds, side="left") / tar.size
    far = 1.0 - np.searchsorted(non, thresholds, side="left") / non.size
    k = np.argmin(np.abs(frr - far))
    eer = 0.5 * (frr[k] + far[k])
    # pAUC[0, beta]: mean TPR over the false-alarm band, non-target thresholds from the top
    beta = 0.01
    count = max(1, int(np.floor(beta * non.size)))
    tpr = 1.0 - np.searchsorted(tar, non[::-1][:count], side="right") / tar.size
    return eer, float(np.mean(tpr))


@pytest.fixture(scope="module")
def fitted():
    c = make_speaker_corpus(seed=3, dim=80, num_train_speakers=40, num_adapt_speakers=200,
                            num_eval_speakers=40, shift_scale=0.0)
    y = np.array(c.train.labels)
    pipe = BackendPipeline(lda_dim=0, systems=("plda", "plda:as", "pauc_latent",
                                               "pauc_latent:as"),
                           metric_params={"num_iters": 60}).fit(c.train.X, y)
    T, ty = c.test.X, np.array(c.test.labels)
    i, j = np.triu_indices(ty.size, 1)
    feats = pipe.features(T)
    return pipe, y, c.train.X, pipe.score(feats, feats, i, j), ty[i] == ty[j]


def test_asnorm_does_not_turn_a_system_into_chance(fitted):
    pipe, _, _, scores, target = fitted
    for base in ("plda", "pauc_latent"):
        plain = _eer_and_pauc(scores[:, pipe.systems.index(base)], target)
        normed = _eer_and_pauc(scores[:, pipe.systems.index(base + ":as")], target)
        assert plain[0] < 0.3                         # a useful system to begin with
        assert normed[0] <= 1.2 * plain[0], (base, plain, normed)
        assert normed[1] >= 0.7 * plain[1], (base, plain, normed)


def test_cohort_is_one_training_vector_per_speaker(fitted):
    pipe, y, X, _, _ = fitted
    speakers = np.unique(y)
    assert pipe.cohort_.shape == (speakers.size, X.shape[1])
    assert np.all(pipe.cohort_counts_ == 1)
    for s, row in zip(speakers, pipe.cohort_):
        assert np.any(np.all(X[y == s].astype(np.float32) == row, axis=1))
