"""The domain shift (pauc_backend/models/domain.py) of evaluation vectors against their own
back-end's training data: the figures behind OUT_OF_DOMAIN_SHIFT (issue 28).

For each data set a back-end is trained on its training speakers, as
recipes/common/steps/train_backend.sh does (training mean, LDA, length norm, Kaldi PLDA), and
the evaluation vectors are prepared as the recipes feed score-plda-trials (centred on the
training mean, LDA, length norm; ETRI's enrollment side = speaker means). Printed per set:

- PLDA space: the shift score-plda-trials computes (enrollment and test vectors pooled, PLDA
  space before length normalisation), with the unadapted PLDA and, for the demo, with the PLDA
  adapted to its adapt/ set (adapt-plda 0.75/0.25, the recipes' setting) and with the
  demo recipe's own centring on the in-domain mean (mean.vec of adapt/);
- raw space: TrainingDomain.fit on the raw training vectors, the evaluation vectors pooled;
- subsets: the PLDA-space shift of the test vectors of k random evaluation speakers
  (200 draws): median, 95th percentile and max (min for the demo).

Chosen on nothing: the evaluation vectors are only measured. The demo corpus is
make-synthetic-vectors' (datasets.make_speaker_corpus, seed 777, dim 80).

Usage (by hand, about a minute): python benchmarks/domain_shift.py [demo] [etri] [timit]
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from pauc_backend.datasets import make_speaker_corpus  # noqa: E402
from pauc_backend.kaldi_io import read_token_table, read_vector_table  # noqa: E402
from pauc_backend.models.domain import ShiftAccumulator, TrainingDomain  # noqa: E402
from pauc_backend.models.lda import LDA  # noqa: E402
from pauc_backend.models.plda import PLDA  # noqa: E402
from pauc_backend.models.preprocessing import normalize_length  # noqa: E402

REAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                    "shared", "realdata")
SUBSETS = (5, 10, 20)


def _read(folder):
    keys, X = read_vector_table("ark:%s" % os.path.join(folder, "xvector.ark"))
    utt2spk = read_token_table("ark:%s" % os.path.join(folder, "utt2spk"))
    return X.astype(np.float64), np.array([utt2spk[key] for key in keys])


def _speaker_means(X, y):
    speakers, codes = np.unique(y, return_inverse=True)
    sums = np.zeros((speakers.size, X.shape[1]))
    np.add.at(sums, codes, X)
    counts = np.bincount(codes)
    return sums / counts[:, None], counts


class Backend:
    """Training mean, LDA, length norm, PLDA (train_backend.sh); ``prepare`` = the recipes'
    evaluation side (centre, LDA, unit length x sqrt(dim))."""

    def __init__(self, X, y, lda_dim):
        self.mean = X.mean(axis=0)
        self.lda = LDA(dim=lda_dim).fit(X - self.mean, y)
        self.plda = PLDA().fit(self.prepare(X), y)

    def prepare(self, X, centre=None):
        centre = self.mean if centre is None else centre
        return normalize_length(self.lda.transform(X - centre))[0].astype(np.float64)

    def shift(self, plda, *sides):
        """score-plda-trials' measure: PLDA space before length normalisation, pooled."""
        acc = ShiftAccumulator(plda.dim)
        for X in sides:
            acc.add(plda.transform(X, normalize_length=False)[0])
        return acc.value()


def _subsets(backend, X, y, name, rng, low):
    U = backend.plda.transform(backend.prepare(X), normalize_length=False)[0]
    speakers = np.unique(y)
    for k in SUBSETS:
        values = []
        for _ in range(200):
            pick = np.isin(y, rng.choice(speakers, size=k, replace=False))
            values.append(ShiftAccumulator(U.shape[1]).add(U[pick]).value())
        values = np.array(values)
        print("  %s, %2d random speakers: median %.3f, p95 %.3f, %s %.3f" % (
            name, k, np.median(values), np.quantile(values, 0.95), "min" if low else "max",
            values.min() if low else values.max()))


def demo():
    corpus = make_speaker_corpus(seed=777, dim=80)
    Xtr, ytr = corpus.train.X.astype(np.float64), np.array(corpus.train.labels)
    test, enroll = corpus.test.X.astype(np.float64), corpus.enroll.X.astype(np.float64)
    adapt = corpus.adapt.X.astype(np.float64)
    means, _ = _speaker_means(enroll, np.array(corpus.enroll.labels))
    backend = Backend(Xtr, ytr, 50)
    sides = [backend.prepare(means), backend.prepare(test)]
    print("demo (seed 777, dim 80, LDA 50): %d test vectors of %d speakers"
          % (len(test), len(set(corpus.test.labels))))
    print("  PLDA space, training mean:     %.3f" % backend.shift(backend.plda, *sides))
    adapted = PLDA.from_params(backend.plda.mean_, backend.plda.transform_, backend.plda.psi_)
    adapted.adapt(backend.prepare(adapt), within_covar_scale=0.75, between_covar_scale=0.25)
    print("  PLDA-adp space, training mean: %.3f" % backend.shift(adapted, *sides))
    centre = adapt.mean(axis=0)
    in_domain = [backend.prepare(means, centre), backend.prepare(test, centre)]
    print("  PLDA space, in-domain mean.vec: %.3f" % backend.shift(backend.plda, *in_domain))
    raw = TrainingDomain().fit(Xtr, ytr)
    print("  raw space:                     %.3f" % raw.shift(means, test))
    _subsets(backend, test, np.array(corpus.test.labels), "test", np.random.default_rng(0),
             low=True)


def etri():
    root = os.path.join(REAL, "etri")
    Xtr, ytr = _read(os.path.join(root, "train"))
    test, ytest = _read(os.path.join(root, "test"))
    enroll, yenroll = _read(os.path.join(root, "enroll"))
    means, _ = _speaker_means(enroll, yenroll)
    backend = Backend(Xtr, ytr, 100)
    print("ETRI (LDA 100): %d test vectors of %d speakers" % (len(test), len(set(ytest))))
    print("  PLDA space, training mean:     %.3f" % backend.shift(
        backend.plda, backend.prepare(means), backend.prepare(test)))
    print("  raw space:                     %.3f" % TrainingDomain().fit(Xtr, ytr).shift(
        means, test))
    _subsets(backend, test, ytest, "test", np.random.default_rng(0), low=False)


def timit():
    root = os.path.join(REAL, "timit-ge2e")
    Xtr, ytr = _read(os.path.join(root, "train"))
    evalset, yeval = _read(os.path.join(root, "eval"))
    backend = Backend(Xtr, ytr, 200)
    print("TIMIT GE2E (LDA 200): %d eval vectors of %d speakers"
          % (len(evalset), len(set(yeval))))
    prepared = backend.prepare(evalset)
    print("  PLDA space, training mean:     %.3f" % backend.shift(backend.plda, prepared,
                                                                   prepared))
    print("  raw space:                     %.3f" % TrainingDomain().fit(Xtr, ytr).shift(
        evalset, evalset))
    _subsets(backend, evalset, yeval, "eval", np.random.default_rng(0), low=False)


if __name__ == "__main__":
    for name in sys.argv[1:] or ["demo", "etri", "timit"]:
        {"demo": demo, "etri": etri, "timit": timit}[name]()
