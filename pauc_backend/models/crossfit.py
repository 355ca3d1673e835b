"""Speaker folds and held-out trial lists for cross-fitting a back-end on training data alone.

The trials among held-out speakers are built like the evaluation's:

* ``enroll_utts = 0``: every pair of held-out vectors (utterance against utterance, as the
  TIMIT / VoxCeleb1-O design), optionally without pairs that share a ``group`` (e.g. two
  segments cut from one recording stretch);
* ``enroll_utts = N``: each held-out speaker with more than N vectors is enrolled by the mean
  of N of its raw vectors (chosen at random, seeded; scored with num_utts = N, as ETRI's 3);
  every enrollment model is tried against every other held-out vector (ETRI's design).
"""

import numpy as np

from pauc_backend import metrics


def speaker_folds(y, num_folds, random_state=0):
    """(speakers, fold of each speaker): speakers shuffled (seeded) then dealt round-robin."""
    if int(num_folds) < 2:
        raise ValueError("cross-fitting needs at least 2 folds (got %d)" % num_folds)
    speakers = np.unique(np.asarray(y))
    if speakers.size < 2 * int(num_folds):
        raise ValueError("%d training speakers are too few for %d folds: need at least 2 "
                         "held-out speakers per fold (%d speakers); use fewer folds"
                         % (speakers.size, num_folds, 2 * num_folds))
    rng = np.random.default_rng(random_state)
    order = rng.permutation(speakers.size)
    fold = np.empty(speakers.size, dtype=np.intp)
    fold[order] = np.arange(speakers.size) % int(num_folds)
    return speakers, fold


class HeldOutTrials:
    """Trials among the held-out vectors ``rows`` (indices into the training matrix).

    After construction: ``enroll_sets`` (list of row arrays averaged into one model each;
    single rows when enroll_utts = 0), ``test_rows`` (rows of the test side), ``enroll_index``
    / ``test_index`` (per trial, into enroll_sets / test_rows), ``is_target``, ``num_utts``.
    """

    def __init__(self, y, rows, enroll_utts=0, groups=None, max_utts_per_speaker=None,
                 random_state=0):
        y = np.asarray(y)
        rows = np.asarray(rows, dtype=np.intp)
        rng = np.random.default_rng(random_state)
        labels = y[rows]
        if max_utts_per_speaker:
            keep = []
            for spk in np.unique(labels):
                mine = rows[labels == spk]
                if mine.size > max_utts_per_speaker:
                    mine = np.sort(rng.choice(mine, int(max_utts_per_speaker), replace=False))
                keep.append(mine)
            rows = np.sort(np.concatenate(keep))
            labels = y[rows]
        if enroll_utts == 0:
            a, b = np.triu_indices(rows.size, k=1)
            if groups is not None:
                g = np.asarray(groups)[rows]
                ok = g[a] != g[b]
                a, b = a[ok], b[ok]
            self.enroll_sets = [rows[i:i + 1] for i in range(rows.size)]
            self.test_rows = rows
            self.enroll_index, self.test_index = a, b
            self.is_target = labels[a] == labels[b]
            self.enroll_labels = labels
            self.num_utts = 1
        else:
            enroll_sets, enroll_labels, used = [], [], np.zeros(rows.size, bool)
            for spk in np.unique(labels):
                mine = np.flatnonzero(labels == spk)
                if mine.size <= enroll_utts:
                    continue
                pick = np.sort(rng.choice(mine, int(enroll_utts), replace=False))
                used[pick] = True
                enroll_sets.append(rows[pick])
                enroll_labels.append(spk)
            test = np.flatnonzero(~used)
            self.enroll_sets = enroll_sets
            self.enroll_labels = np.array(enroll_labels)
            self.test_rows = rows[test]
            e, t = np.meshgrid(np.arange(len(enroll_sets)), np.arange(test.size),
                               indexing="ij")
            self.enroll_index, self.test_index = e.ravel(), t.ravel()
            self.is_target = self.enroll_labels[self.enroll_index] == labels[test][
                self.test_index]
            self.num_utts = int(enroll_utts)
        self.num_target = int(np.count_nonzero(self.is_target))
        self.num_nontarget = int(self.is_target.size - self.num_target)

    def enroll_vectors(self, X):
        """The enrollment side: the mean of each enroll set's raw vectors (float32, as
        ivector-mean), a plain copy of the rows when enroll_utts = 0."""
        return np.stack([np.asarray(X[s], dtype=np.float64).mean(axis=0)
                         for s in self.enroll_sets]).astype(np.float32)


def trial_figures(scores, is_target, alpha, beta):
    """Held-out figures of one score column: pAUC[alpha, beta] (eq. 5), pAUC[0, 0.01],
    EER (Kaldi's) and minDCF(0.01)."""
    tar, non = scores[is_target], scores[~is_target]
    return {"pauc": metrics.pauc(tar, non, alpha, beta),
            "pauc_001": metrics.pauc(tar, non, 0.0, 0.01),
            "eer": metrics.eer(tar, non),
            "min_dcf": float(metrics.min_dcf(tar, non, 0.01).min_dcf)}
