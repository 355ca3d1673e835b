"""Trials for training a calibration or QMF, drawn from labelled utterances (numpy only).

WeSpeaker's ``tools/generate_calibration_trial.py`` builds its QMF training list from
VoxCeleb2's training speakers: each draw picks a speaker and another one, and writes a target
and a non-target trial for each of three duration mixes, short-short, short-long and long-long
(short: 2 < d < 6 s, long: d > 6 s). ``calibration_trials`` does the same, vectorised and
seeded, with three differences: a trial never pairs an utterance with itself (WeSpeaker's
``random.choices`` can); a pair is drawn once (a pair listed twice would be one trial weighed
twice, and train-calibration refuses duplicates); and each mix only uses the speakers that can
supply it (WeSpeaker keeps only the speakers that have both short and long utterances). Without
durations there is one mix of every utterance.

Cost: O(#utterances) to group them, then O(num_pairs) per mix and round; at most ``_ROUNDS``
rounds top up the pairs lost to duplicates, so the work does not grow with the corpus beyond
reading it. When the data cannot supply ``num_pairs`` distinct pairs the shortfall is reported.
"""

import numpy as np

__all__ = ["calibration_trials", "duration_groups", "MIXES"]

MIXES = (("short", "short"), ("short", "long"), ("long", "long"))
_ROUNDS = 8


def duration_groups(durations, short=(2.0, 6.0)):
    """Group of each utterance: "short" if short[0] < d < short[1], "long" if d >= short[1],
    "" (unused) otherwise (WeSpeaker: 2 < d < 6, d > 6)."""
    durations = np.asarray(durations, dtype=np.float64)
    groups = np.full(durations.shape, "", dtype=object)
    groups[(durations > short[0]) & (durations < short[1])] = "short"
    groups[durations >= short[1]] = "long"
    return groups


class _Group:
    """The utterances of one group, by speaker: a random utterance of a speaker in O(1)."""

    def __init__(self, rows, speaker_codes, num_speakers):
        order = np.argsort(speaker_codes[rows], kind="stable")
        self.rows = rows[order]
        self.count = np.bincount(speaker_codes[rows], minlength=num_speakers)
        self.start = np.concatenate([[0], np.cumsum(self.count)[:-1]]).astype(np.int64)
        # position of each utterance within its speaker's list (for ``pick(avoid=...)``)
        self.position = np.zeros(speaker_codes.size, dtype=np.int64)
        self.position[self.rows] = np.arange(self.rows.size) - np.repeat(self.start, self.count)

    def pick(self, rng, speakers, avoid=None):
        """A random utterance of each speaker (rows); with ``avoid`` (rows of this group, one
        per speaker) a different one (each speaker must have two)."""
        count = self.count[speakers]
        if avoid is None:
            draw = (rng.random(speakers.size) * count).astype(np.int64)
        else:
            draw = (rng.random(speakers.size) * (count - 1)).astype(np.int64)
            draw += draw >= self.position[avoid]
        return self.rows[self.start[speakers] + draw]


def calibration_trials(speakers, durations=None, num_pairs=5000, short=(2.0, 6.0), seed=0):
    """Target and non-target trials of each duration mix (module docstring).

    ``speakers``: the speaker label of each utterance; ``durations``: their seconds (None: one
    mix of all utterances). Returns ``(rows1, rows2, is_target, mix)``: utterance indices of
    each trial side, the label, and the mix name ("short-long", or "all"), with ``num_pairs``
    target and ``num_pairs`` non-target trials per mix where the data allow.
    """
    speakers = np.asarray(speakers)
    _, codes = np.unique(speakers, return_inverse=True)
    codes = codes.ravel()
    num_speakers = int(codes.max()) + 1 if codes.size else 0
    if durations is None:
        groups = {"all": np.arange(codes.size)}
        mixes = (("all", "all"),)
    else:
        labels = duration_groups(durations, short)
        if labels.shape != codes.shape:
            raise ValueError("need one duration per utterance")
        groups = {name: np.flatnonzero(labels == name) for name in ("short", "long")}
        mixes = MIXES
    groups = {name: _Group(rows, codes, num_speakers) for name, rows in groups.items()}
    rng = np.random.default_rng(seed)
    out = [[], [], [], []]
    for first, second in mixes:
        a, b = groups[first], groups[second]
        name = first if first == second == "all" else "%s-%s" % (first, second)
        for target in (True, False):
            rows1, rows2 = _draw_pairs(rng, a, b, first == second, target, num_pairs)
            out[0].append(rows1)
            out[1].append(rows2)
            out[2].append(np.full(rows1.size, target))
            out[3].append(np.full(rows1.size, name, dtype=object))
    return tuple(np.concatenate(part) if part else np.zeros(0) for part in out)


def _draw_pairs(rng, a, b, same_group, target, wanted):
    """Up to ``wanted`` distinct unordered pairs (row in a, row in b) of one label."""
    if target:
        need = 2 if same_group else 1
        eligible = np.flatnonzero((a.count >= need) & (b.count >= 1))
    else:
        eligible = np.flatnonzero(a.count >= 1)
        others = np.flatnonzero(b.count >= 1)
        if others.size == 1:          # the one speaker of b cannot be its own non-target
            eligible = eligible[eligible != others[0]]
    if eligible.size == 0 or wanted <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    seen = np.zeros(0, dtype=np.int64)
    kept1, kept2 = [], []
    for _ in range(_ROUNDS):
        missing = wanted - sum(r.size for r in kept1)
        if missing <= 0:
            break
        count = 2 * missing
        spk = eligible[rng.integers(0, eligible.size, count)]
        rows1 = a.pick(rng, spk)
        if target:
            rows2 = b.pick(rng, spk, avoid=rows1 if same_group else None)
        else:
            # another speaker of b: draw among len - 1 and step past the speaker itself
            index = rng.integers(0, max(others.size - 1, 1), count)
            own = np.searchsorted(others, spk)
            own_in = (own < others.size) & (others[np.minimum(own, others.size - 1)] == spk)
            index += own_in & (index >= own)
            rows2 = b.pick(rng, others[index])
        key = np.minimum(rows1, rows2) * (1 << 31) + np.maximum(rows1, rows2)
        _, first = np.unique(key, return_index=True)
        first.sort()
        fresh = first[~np.isin(key[first], seen)][:missing]
        seen = np.concatenate([seen, key[fresh]])
        kept1.append(rows1[fresh])
        kept2.append(rows2[fresh])
    return np.concatenate(kept1), np.concatenate(kept2)
