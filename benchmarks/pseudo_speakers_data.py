"""Scenarios and the classical back-end of benchmarks/pseudo_speakers_study.py (issue 34).

Every scenario is TRAINING data with a domain shift (nothing here reads an evaluation set,
except ``etri_public_check``, used once at the end of the study and never to choose):

- S1 ``etri_sex_shift(seed)``: ETRI's training set; the back-end trains on the 68 male
  speakers; the 50 female speakers are split (seeded) into halves: one half is the unlabelled
  adaptation set, the other gives labelled in-domain trials (enrollment = mean of 3 vectors as
  ETRI's evaluation, test = the speaker's other vectors; every model against every test
  vector), used only to MEASURE.
- S2 ``synthetic(seed)``: make-synthetic-vectors' corpus as recipes/demo/run.sh makes it (dim
  80, durations, 80 development speakers) with a seed other than the demo's 777; the
  adaptation set's true labels measure the clustering, its development speakers' trials
  (enrollment = mean of 1-5 vectors) the downstream systems.
- S3 ``timit_shift(seed)``: TIMIT GE2E d-vectors' training speakers split by the first
  principal direction of the speaker means (a property derived from the vectors, not a label):
  the back-end trains on the speakers below the median, the speakers above are halved into
  adaptation set and labelled trials (single segment against single segment means enrollment
  by 1 vector; here 3 as ETRI).
"""

import os
from dataclasses import dataclass

import numpy as np

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import read_token_table, read_vector_table
from pauc_backend.metrics.dcf import min_dcf
from pauc_backend.metrics.error_rates import eer
from pauc_backend.metrics.ranking import pauc
from pauc_backend.models.lda import LDA
from pauc_backend.models.plda import PLDA
from pauc_backend.models.preprocessing import normalize_length

REAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                    "shared", "realdata")
ADAPT_SCALES = (0.75, 0.25)     # ivector-adapt-plda in egs/sre16/v2 (models.backend_pipeline)


@dataclass
class Trials:
    """Every enrollment model against every test vector."""
    enroll: np.ndarray          # raw mean vectors of the models
    counts: np.ndarray          # vectors averaged per model
    enroll_labels: np.ndarray
    test: np.ndarray
    test_labels: np.ndarray

    @property
    def target(self):
        return self.enroll_labels[:, None] == self.test_labels[None, :]


@dataclass
class Scenario:
    name: str
    Xtr: np.ndarray
    ytr: np.ndarray
    A: np.ndarray               # unlabelled adaptation set
    yA: np.ndarray              # its true labels: to MEASURE the clustering only
    trials: Trials
    lda_dim: int


_CACHE = {}


def read_set(folder):
    if folder not in _CACHE:
        keys, X = read_vector_table("ark:%s" % os.path.join(folder, "xvector.ark"))
        utt2spk = read_token_table("ark:%s" % os.path.join(folder, "utt2spk"))
        _CACHE[folder] = (np.asarray(keys), X.astype(np.float64),
                          np.array([utt2spk[k] for k in keys]))
    return _CACHE[folder]


def enrollment_trials(X, y, rng, enroll_utts=3):
    """Models = mean of ``enroll_utts`` random vectors of each speaker, test = the others."""
    speakers = np.unique(y)
    enroll, test_rows = [], []
    for s in speakers:
        rows = rng.permutation(np.flatnonzero(y == s))
        enroll.append(X[rows[:enroll_utts]].mean(axis=0))
        test_rows.extend(rows[enroll_utts:])
    test_rows = np.sort(np.asarray(test_rows))
    return Trials(np.array(enroll), np.full(speakers.size, enroll_utts), speakers,
                  X[test_rows], y[test_rows])


def etri_sex_shift(seed, adapt_utts=None, adapt_speakers=None):
    """S1. ``adapt_utts``/``adapt_speakers``: keep only that many vectors per speaker / that
    many speakers of the adaptation half (question 5)."""
    _, X, y = read_set(os.path.join(REAL, "etri", "train"))
    sex = np.array([s[3] for s in y])
    rng = np.random.default_rng(seed)
    female = rng.permutation(np.unique(y[sex == "F"]))
    half = female.size // 2
    adapt_spk, trial_spk = female[:half], female[half:]
    if adapt_speakers is not None:
        adapt_spk = adapt_spk[:adapt_speakers]
    rows = np.flatnonzero(np.isin(y, adapt_spk))
    if adapt_utts is not None:
        rows = np.concatenate([rng.permutation(np.flatnonzero(y == s))[:adapt_utts]
                               for s in adapt_spk])
    rows = np.sort(rows)
    tmask = np.isin(y, trial_spk)
    trials = enrollment_trials(X[tmask], y[tmask], rng)
    male = sex == "M"
    return Scenario("S1 etri seed %d" % seed, X[male], y[male], X[rows], y[rows], trials, 100)


def etri_public_check():
    """The issue's done-when set (final check only): train = male training speakers, adapt =
    all female training speakers, trials = female enrolled speakers (mean of their 3
    enrollment vectors) against female test vectors of the public evaluation set."""
    _, X, y = read_set(os.path.join(REAL, "etri", "train"))
    sex = np.array([s[3] for s in y])
    _, E, ye = read_set(os.path.join(REAL, "etri", "enroll"))
    _, T, yt = read_set(os.path.join(REAL, "etri", "test"))
    fe = np.array([s[3] == "F" for s in ye])
    ft = np.array([s[3] == "F" for s in yt])
    speakers = np.unique(ye[fe])
    means = np.array([E[ye == s].mean(axis=0) for s in speakers])
    counts = np.array([np.sum(ye == s) for s in speakers])
    trials = Trials(means, counts, speakers, T[ft], yt[ft])
    return Scenario("ETRI public evaluation (female)", X[sex == "M"], y[sex == "M"],
                    X[sex == "F"], y[sex == "F"], trials, 100)


def synthetic(seed):
    """S2 (the demo's corpus shape, another seed)."""
    c = make_speaker_corpus(seed=seed, dim=80, durations=True, num_dev_speakers=80)
    enroll, test = c.dev[0], c.dev[1]
    el = np.array(enroll.labels)
    speakers = np.unique(el)
    means = np.array([enroll.X[el == s].astype(np.float64).mean(axis=0) for s in speakers])
    counts = np.array([np.sum(el == s) for s in speakers])
    trials = Trials(means, counts, speakers, test.X.astype(np.float64), np.array(test.labels))
    return Scenario("S2 synthetic seed %d" % seed, c.train.X.astype(np.float64),
                    np.array(c.train.labels), c.adapt.X.astype(np.float64),
                    np.array(c.adapt.labels), trials, 50)


def timit_shift(seed):
    """S3 (see the module doc)."""
    _, X, y = read_set(os.path.join(REAL, "timit-ge2e", "train"))
    speakers, index = np.unique(y, return_inverse=True)
    means = np.zeros((speakers.size, X.shape[1]))
    np.add.at(means, index, X)
    means /= np.bincount(index)[:, None]
    centred = means - means.mean(axis=0)
    direction = np.linalg.svd(centred, full_matrices=False)[2][0]
    proj = centred @ direction
    high = proj > np.median(proj)
    rng = np.random.default_rng(seed)
    shifted = rng.permutation(speakers[high])
    half = shifted.size // 2
    adapt_spk, trial_spk = shifted[:half], shifted[half:]
    amask, tmask = np.isin(y, adapt_spk), np.isin(y, trial_spk)
    train = np.isin(y, speakers[~high])
    trials = enrollment_trials(X[tmask], y[tmask], rng)
    return Scenario("S3 timit seed %d" % seed, X[train], y[train], X[amask], y[amask], trials,
                    150)


# -- the classical back-end (egs/sre16/v2 stage 8, as models.backend_pipeline) ----------------

def lnorm(X):
    return normalize_length(np.asarray(X, dtype=np.float32))[0].astype(np.float64)


def unit(X):
    return normalize_length(np.asarray(X, dtype=np.float32), scaleup=False)[0].astype(
        np.float64)


def copy_plda(plda):
    return PLDA.from_params(plda.mean_, plda.transform_, plda.psi_)


class Backend:
    """Training mean, LDA, PLDA on the labelled training set; the adaptation set's mean centres
    what is scored; PLDA-adp = ivector-adapt-plda 0.75/0.25 on the adaptation vectors."""

    def __init__(self, Xtr, ytr, A, lda_dim):
        self.train_mean = Xtr.mean(axis=0)
        self.mean = A.mean(axis=0)
        num_spk = np.unique(ytr).size
        dim = min(int(lda_dim), Xtr.shape[1]) if lda_dim else 0
        if dim and dim < Xtr.shape[1]:
            self.lda = LDA(dim=dim).fit((Xtr - self.train_mean).astype(np.float32), ytr)
            self.W = self.lda.affine_matrix_[:, :-1].astype(np.float64)
        else:
            self.W = np.eye(Xtr.shape[1])
        self.num_train_speakers = num_spk
        self.Ztr = lnorm((Xtr - self.train_mean) @ self.W.T)
        self.plda = PLDA().fit(self.Ztr, ytr)
        self.ZA = self.prep(A)
        self.plda_adapt = copy_plda(self.plda).adapt(self.ZA, 1.0, *ADAPT_SCALES)

    def prep(self, X, centre=None):
        centre = self.mean if centre is None else centre
        return lnorm((X - centre) @ self.W.T)


def plda_grid(plda, Ze, counts, Zt):
    """(models x tests) LLR grid, enrollment with num_utts = counts (score-plda-trials)."""
    Ue = plda.transform(Ze, counts)[0]
    Ut = plda.transform(Zt, 1)[0]
    ne, nt = Ue.shape[0], Ut.shape[0]
    return plda.score_pairs(Ue, Ut, np.repeat(np.arange(ne), nt), np.tile(np.arange(nt), ne),
                            counts).reshape(ne, nt)


def cosine_grid(E, T):
    return unit(E) @ unit(T).T


def figures(grid, target):
    """EER (%), pAUC[0,0.01], minDCF(0.01) of a (models x tests) score grid."""
    tar, non = grid[target], grid[~target]
    return {"eer": 100.0 * eer(tar, non), "pauc": pauc(tar, non, 0.0, 0.01),
            "mindcf": min_dcf(tar, non, 0.01).min_dcf}
