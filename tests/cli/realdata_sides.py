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
