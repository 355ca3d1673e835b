"""Speaker folds and held-out trial lists for cross-fitting a back-end on training data alone.

The trials among held-out speakers are built like the evaluation's:

* ``enroll_utts = 0``: every pair of held-out vectors (utterance against utterance, as the
  TIMIT / VoxCeleb1-O design), optionally without pairs that share a ``group`` (e.g. two
  segments cut from one recording stretch);
* ``enroll_utts = N``: each held-out speaker with more than N vectors is enrolled by the mean
  of N of its raw vectors (chosen at random, seeded; scored with num_utts = N, as ETRI's 3);
  every enrollment model is tried against every other held-out vector (ETRI's design).

Bounded by design (``max_trials``): when a fold would have more trials than ``max_trials``
(a fold of the paper's 200,000-vector corpus has ~800 M utterance pairs), every target trial
is kept up to half of ``max_trials`` (beyond that a seeded uniform subset), and the rest of
the budget is filled with non-target trials drawn (seeded; a duplicate is
drawn again) in per-speaker quotas: held-out speaker s gets the share of the budget it has of
all non-target trials (c_s (n - c_s) / sum_r c_r (n - c_r) for utterance pairs, c_s the
speaker's vectors among n), so every held-out speaker keeps its share. Pair indices are
drawn directly; no O(utterances^2) array is ever built. Below the cap the trials are
exactly the full list (the same trials, in the same order, as without a cap).

The sampling adds variance to the held-out pAUC over [0, beta] (normalised, eq. 5: the mean,
over the top floor(beta n_n) non-targets, of the fraction of targets above each). From n_n
sampled non-targets (every target kept), by the delta method on the band's edge,

    Var(pAUC) ~ (Var_band[TPR(y)] + (TPR(beta) - pAUC)^2 (1 - beta)) / (beta n_n),

TPR(y) the fraction of targets above a non-target y of the band (FAR <= beta), TPR(beta) its
value at the band's edge; when the targets are sub-sampled too, add Var_t[max(0, 1 -
FAR(x) / beta)] / n_t (the U-statistic's target part). For a binormal ROC with pAUC[0, 0.01]
0.90 (TPR 0.95 at FAR 1 %) and n_n = 2.5-3 M the standard
error is 0.0005-0.0006 per fold, about 0.00025 for the mean of 5 folds (0.001 at pAUC 0.44);
the candidates are rated on the same trials, so the error of their differences is smaller
still. tests/models/test_crossfit_sampling.py checks the formula by simulation.
"""

import numpy as np


def crossfit_rows(y, max_speakers, max_vectors, seed):
    """(rows of the cross-fitting subset, sorted; a sentence saying what was kept). All rows
    when neither cap binds (then no random number is drawn). Otherwise a seeded subset of
    ``max_speakers`` speakers, then the largest common cap c on each speaker's vectors that
    keeps at most ``max_vectors`` of them (c >= 2; a seeded choice of c per speaker)."""
    y = np.asarray(y)
    speakers, index = np.unique(y, return_inverse=True)
    index = index.reshape(-1)
    counts = np.bincount(index, minlength=speakers.size)
    rng = np.random.default_rng([int(seed), 2027])
    keep = np.ones(speakers.size, bool)
    notes = []
    if max_speakers and speakers.size > max_speakers:
        keep[:] = False
        keep[rng.choice(speakers.size, int(max_speakers), replace=False)] = True
        notes.append("%d of the %d speakers (seeded)" % (int(max_speakers), speakers.size))
    rows = np.flatnonzero(keep[index])
    if max_vectors and rows.size > max_vectors:
        kept = counts[keep]
        cap = int(max_vectors) // kept.size
        while cap < kept.max() and np.minimum(kept, cap + 1).sum() <= max_vectors:
            cap += 1
        cap = max(cap, 2)
        order = np.argsort(index[rows], kind="stable")
        grouped = rows[order]
        starts = np.concatenate([[0], np.cumsum(np.bincount(index[rows],
                                                            minlength=speakers.size))])
        chosen = []
        for s in np.flatnonzero(keep):
            mine = grouped[starts[s]:starts[s + 1]]
            chosen.append(mine if mine.size <= cap
                          else np.sort(rng.choice(mine, cap, replace=False)))
        rows = np.sort(np.concatenate(chosen))
        notes.append("at most %d vectors of each (seeded)" % cap)
    text = ("every speaker and vector" if not notes else
            "%s: %d vectors" % (", ".join(notes), rows.size))
    return rows, text


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
                 random_state=0, max_trials=None):
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
        self.sampled = False
        if enroll_utts == 0 and max_trials and rows.size * (rows.size - 1) // 2 > max_trials:
            order = np.argsort(labels, kind="stable")
            rows, labels = rows[order], labels[order]
            a, b = _sampled_pairs(labels, labels, True, int(max_trials), rng,
                                  None if groups is None else np.asarray(groups)[rows])
            self.enroll_sets = [rows[i:i + 1] for i in range(rows.size)]
            self.test_rows = rows
            self.enroll_index, self.test_index = a, b
            self.is_target = labels[a] == labels[b]
            self.enroll_labels = labels
            self.num_utts = 1
            self.sampled = True
        elif enroll_utts == 0:
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
            if max_trials and len(enroll_sets) * test.size > max_trials:
                test = test[np.argsort(labels[test], kind="stable")]
                self.test_rows = rows[test]
                e, t = _sampled_pairs(self.enroll_labels, labels[test], False,
                                      int(max_trials), rng)
                self.sampled = True
            else:
                self.test_rows = rows[test]
                e, t = np.meshgrid(np.arange(len(enroll_sets)), np.arange(test.size),
                                   indexing="ij")
            self.enroll_index, self.test_index = e.ravel(), t.ravel()
            self.is_target = self.enroll_labels[self.enroll_index] == labels[test][
                self.test_index]
            self.num_utts = int(enroll_utts)
        # int32 indices (4 + 4 + 1 bytes a trial: 14 MB for 1.5 M trials, kept for every fold)
        self.enroll_index = np.asarray(self.enroll_index, dtype=np.int32)
        self.test_index = np.asarray(self.test_index, dtype=np.int32)
        self.num_target = int(np.count_nonzero(self.is_target))
        self.num_nontarget = int(self.is_target.size - self.num_target)

    def enroll_vectors(self, X):
        """The enrollment side: the mean of each enroll set's raw vectors (float32, as
        ivector-mean), a plain copy of the rows when enroll_utts = 0 (the mean of one float32
        value in double is that value)."""
        if self.num_utts == 1 and all(s.size == 1 for s in self.enroll_sets):
            return np.asarray(X[np.concatenate(self.enroll_sets)], dtype=np.float32)
        return np.stack([np.asarray(X[s], dtype=np.float64).mean(axis=0)
                         for s in self.enroll_sets]).astype(np.float32)


def _quotas(weights, total):
    """Integers proportional to ``weights`` summing to ``total`` (largest remainders)."""
    share = weights / weights.sum() * total
    out = np.floor(share).astype(np.int64)
    rest = int(total - out.sum())
    if rest > 0:
        out[np.argsort(out - share, kind="stable")[:rest]] += 1
    return out


def _sampled_pairs(enroll_labels, test_labels, symmetric, max_trials, rng, groups=None):
    """(enroll index, test index) of a bounded trial list; ``test_labels`` sorted.

    Targets: every (enroll, test) pair of one speaker (i < j when ``symmetric``: enroll and
    test are then the same sorted vectors), a seeded uniform subset beyond max_trials // 2.
    Non-targets: per-speaker quotas of the remaining budget, proportional to each speaker's
    number of non-target trials; the test side is drawn uniformly outside the enroll item's
    speaker block. Memory O(max_trials)."""
    spk, start, count = np.unique(test_labels, return_index=True, return_counts=True)
    n = test_labels.size
    # Targets, by groups of equal block size (no loop over trials).
    ea = np.searchsorted(spk, enroll_labels)
    has = (ea < spk.size) & (spk[np.minimum(ea, spk.size - 1)] == enroll_labels)
    tar_e, tar_t = [], []
    if symmetric:
        for c in np.unique(count):
            if c < 2:
                continue
            ia, ib = np.triu_indices(int(c), k=1)
            s0 = start[count == c][:, None]
            tar_e.append((s0 + ia).ravel())
            tar_t.append((s0 + ib).ravel())
    else:
        items = np.flatnonzero(has)
        cnt = count[ea[items]]
        for c in np.unique(cnt):
            mine = items[cnt == c]
            tar_e.append(np.repeat(mine, int(c)))
            tar_t.append((start[ea[mine]][:, None] + np.arange(int(c))).ravel())
    tar_e = np.concatenate(tar_e) if tar_e else np.zeros(0, np.int64)
    tar_t = np.concatenate(tar_t) if tar_t else np.zeros(0, np.int64)
    if groups is not None and tar_e.size:
        ok = groups[tar_e] != groups[tar_t]
        tar_e, tar_t = tar_e[ok], tar_t[ok]
    if tar_e.size > max_trials // 2:
        keep = np.sort(rng.choice(tar_e.size, max_trials // 2, replace=False))
        tar_e, tar_t = tar_e[keep], tar_t[keep]
    # Non-targets: quota of each enroll item's speaker, then the item and its partner.
    own = np.where(has, count[np.minimum(ea, spk.size - 1)], 0)
    own_start = np.where(has, start[np.minimum(ea, spk.size - 1)], 0)
    partners = (n - own).astype(np.float64)
    budget = max(1, max_trials - tar_e.size)
    width = np.int64(n)
    if symmetric:
        # Per speaker: c_s (n - c_s) ordered pairs; the item is drawn within the block.
        quota = _quotas(count * (n - count).astype(np.float64), budget)
        stratum_of = np.repeat(np.arange(spk.size), quota)
    else:
        quota = _quotas(partners, budget)
        stratum_of = np.repeat(np.arange(enroll_labels.size), quota)
    taken = np.zeros(0, np.int64)                 # kept non-target keys
    strata = np.zeros(0, np.int64)
    draw = stratum_of
    # Duplicates (and pairs within a group) are dropped and drawn again, so every stratum
    # gets its quota exactly unless it has fewer distinct partners (a few rounds at most).
    for _ in range(30):
        if symmetric:
            non_e = start[draw] + (rng.random(draw.size) * count[draw]).astype(np.int64)
        else:
            non_e = draw
        r = (rng.random(non_e.size) * partners[non_e]).astype(np.int64)
        non_t = r + np.where(r >= own_start[non_e], own[non_e], 0)
        if symmetric:
            non_e, non_t = np.minimum(non_e, non_t), np.maximum(non_e, non_t)
        ok = np.ones(non_e.size, bool) if groups is None else groups[non_e] != groups[non_t]
        keys = np.concatenate([taken, (non_e * width + non_t)[ok]])
        strata = np.concatenate([strata, draw[ok]])
        taken, first = np.unique(keys, return_index=True)
        strata = strata[first]
        deficit = quota - np.bincount(strata, minlength=quota.size)
        if not deficit.any():
            break
        draw = np.repeat(np.arange(quota.size), deficit)
    key = np.sort(np.concatenate([tar_e * width + tar_t, taken]))
    key = key[np.concatenate([[True], key[1:] != key[:-1]])]       # np.unique, by a sort
    return key // width, key % width


def trial_figures(scores, is_target, alpha, beta):
    """Held-out figures of one score column: pAUC[alpha, beta] (eq. 5), pAUC[0, 0.01],
    EER (Kaldi's) and minDCF(0.01); each class sorted once for all four (the same values as
    metrics.pauc, metrics.eer and metrics.min_dcf, which sort on their own)."""
    from pauc_backend.metrics.dcf import min_dcf_sorted, target_positions
    from pauc_backend.metrics.error_rates import kaldi_eer_sorted
    from pauc_backend.metrics.ranking import pauc_sorted
    from pauc_backend.metrics.validation import check_scores
    scores = np.asarray(scores)
    if scores.dtype != np.float64:
        scores = scores.astype(np.float64)
    tar, non = check_scores(scores[is_target], scores[~is_target])
    tar.sort()
    non.sort()
    # Kaldi's EER compares float32 values; rounding is monotone, so the float64 order holds
    eer = kaldi_eer_sorted(tar.astype(np.float32), non.astype(np.float32))[0]
    dcf = min_dcf_sorted(tar, non, target_positions(tar, non), [0.01])[0]
    return {"pauc": pauc_sorted(tar, non, alpha, beta)[0],
            "pauc_001": pauc_sorted(tar, non, 0.0, 0.01)[0],
            "eer": eer, "min_dcf": float(dcf.min_dcf)}
