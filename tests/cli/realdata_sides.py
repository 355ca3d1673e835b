"""The real corpora's sets as the domain-check tests score them (test_domain_check.py with a
PLDA, test_pauc_auto_adapt.py with an automatic back-end): ETRI enrolls speakers by the mean of
their vectors, TIMIT scores utterance against utterance."""

import numpy as np

from pauc_backend.kaldi_io import read_token_table, read_vector_table


def read_set(folder, dtype=np.float32):
    """(keys, vectors as ``dtype``, speaker of each) of ``folder``/xvector.ark and utt2spk."""
    keys, X = read_vector_table("ark:%s" % (folder / "xvector.ark"))
    utt2spk = read_token_table("ark:%s" % (folder / "utt2spk"))
    return keys, X.astype(dtype, copy=False), np.array([utt2spk[key] for key in keys])


def speaker_means(X, labels):
    """(sorted speakers, the mean vector of each, in X's dtype)."""
    labels = np.asarray(labels)
    speakers = sorted(set(labels.tolist()))
    return speakers, np.array([X[labels == s].mean(axis=0) for s in speakers], X.dtype)


def evaluation_sides(root, corpus, dtype=np.float32):
    """(enrollment keys, enrollment vectors, test keys, test vectors) of ``corpus``."""
    if corpus == "etri":
        _, enroll, enroll_spk = read_set(root / "enroll", dtype)
        speakers, means = speaker_means(enroll, enroll_spk)
        test_keys, test, _ = read_set(root / "test", dtype)
        return speakers, means, test_keys, test
    test_keys, test, _ = read_set(root / "eval", dtype)
    return test_keys, test, test_keys, test                # utterance against utterance


def etri_sex_shift(root, per_speaker=30):
    """ETRI's speaker-sex shift, small: ``train`` (the male training speakers, their first
    ``per_speaker`` vectors), ``adapt`` (the female training speakers' first ``per_speaker``,
    unlabelled), ``test`` (the female test vectors), as pauc_backend.datasets.EmbeddingSet.
    Its adaptation set holds speaker clusters (models.unlabelled finds them) and a
    pseudo-trained PLDA is chosen on its pseudo-speaker trials."""
    from types import SimpleNamespace
    from pauc_backend.datasets import EmbeddingSet
    keys, X, spk = read_set(root / "train")
    keys = np.asarray(keys)
    sets = {}
    for name, sex in (("train", "M"), ("adapt", "F")):
        rows = np.concatenate([np.flatnonzero(spk == s)[:per_speaker]
                               for s in sorted(set(spk.tolist())) if s[3] == sex])
        sets[name] = EmbeddingSet(list(keys[rows]), list(spk[rows]), X[rows])
    test_keys, T, test_spk = read_set(root / "test")
    female = np.array([s[3] == "F" for s in test_spk])
    sets["test"] = EmbeddingSet(list(np.asarray(test_keys)[female]), list(test_spk[female]),
                                T[female])
    return SimpleNamespace(**sets)
