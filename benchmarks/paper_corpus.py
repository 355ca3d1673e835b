"""A corpus of the seed paper's shape, streamed to disk (used by bench_paper_scale.py).

The paper trains on 200,000 x-vectors of 7,363 speakers (512-d) and scores 338k-1M trials.
``write_paper_corpus`` writes, a block of speakers at a time (peak memory a few tens of MB,
never the whole table):

    train.ark train.scp utt2spk spk2utt       7,363 speakers, 200,000 raw 512-d float32 vectors,
                                              13-40 per speaker (uniform, then nudged to the
                                              exact total)
    enroll.ark enroll.scp enroll_spk2utt      250 evaluation speakers, one enrollment vector
                                              each, keyed by the speaker (single-utterance
                                              enrollment: the speaker-level vector)
    test.ark test.scp test_utt2spk            2,900 test vectors of the same 250 speakers
    trials                                    every enrollment x every test vector: 725,000
                                              trials (2,900 target), "spk utt target|nontarget"

The model is the one of ``pauc_backend.datasets.make_speaker_corpus`` without its domain
shift (evaluation speakers are new speakers of the training distribution: PLDA is the right
model): speaker s = mu + B^1/2 y, utterance x = s + g^1/2 W^1/2 e, between-speaker variances
``3 exp(-k / (dim / 6)) + 0.05`` on a random rotation, within-speaker variances log-spaced from
2.5 to 0.8 on another, Student-t (5 dof) within-speaker noise. Same seed, same bytes.
"""

import os

import numpy as np

from pauc_backend.datasets import _factor, _heavy_tailed_noise, random_rotation

SHAPE = dict(num_speakers=7363, num_vectors=200000, utts_range=(13, 40), dim=512,
             num_eval_speakers=250, num_test=2900)
# Kaldi's egs/voxceleb/v2 trains LDA and PLDA on 1,277,503 x-vectors of 7,351 speakers (its
# train list): the same model at that size, 8-340 vectors per speaker (uniform: mean ~174, as
# there), the same evaluation part; 2.6 GB of float32 training vectors, written 64 speakers
# (~11,000 vectors, ~45 MB of float64) at a time.
VOXCELEB_SHAPE = dict(num_speakers=7351, num_vectors=1277503, utts_range=(8, 340),
                      block_speakers=64)
HEAD = b" \0BFV \x04"


def _counts(rng, num_speakers, total, low, high):
    """Uniform counts on [low, high], then +-1 on random speakers until they sum to total."""
    if not low * num_speakers <= total <= high * num_speakers:
        raise ValueError("cannot put %d vectors on %d speakers with %d-%d each"
                         % (total, num_speakers, low, high))
    counts = rng.integers(low, high + 1, size=num_speakers)
    while counts.sum() != total:
        step = 1 if counts.sum() < total else -1
        movable = np.flatnonzero((counts < high) if step > 0 else (counts > low))
        need = min(abs(int(total - counts.sum())), len(movable))
        counts[rng.choice(movable, size=need, replace=False)] += step
    return counts


class _ArkWriter:
    """Binary float-vector ark and its scp, written record block by record block (equal-width
    keys, so a block is one numpy structured array). Files appear under a temporary name and
    are renamed on ``close``."""

    def __init__(self, ark, scp, dim):
        self.ark, self.scp, self.dim = ark, scp, dim
        self._ark = open(ark + ".tmp", "wb")
        self._scp = open(scp + ".tmp", "w")
        self._offset = 0

    def write(self, keys, X):
        width = len(keys[0])
        record = np.dtype([("key", "S%d" % width), ("head", "S7"), ("dim", "<i4"),
                           ("data", "<f4", (self.dim,))])
        out = np.empty(len(keys), dtype=record)
        out["key"] = [k.encode() for k in keys]
        out["head"] = HEAD
        out["dim"] = self.dim
        out["data"] = X
        out.tofile(self._ark)
        starts = self._offset + np.arange(len(keys)) * record.itemsize + width + 1
        self._scp.write("".join("%s %s:%d\n" % (k, self.ark, s) for k, s in zip(keys, starts)))
        self._offset += len(keys) * record.itemsize

    def close(self):
        self._ark.close()
        self._scp.close()
        os.replace(self.ark + ".tmp", self.ark)
        os.replace(self.scp + ".tmp", self.scp)


def _write_text(path, lines):
    with open(path + ".tmp", "w") as out:
        out.write("".join(line + "\n" for line in lines))
    os.replace(path + ".tmp", path)


def write_paper_corpus(out_dir, seed=17, num_speakers=7363, num_vectors=200000,
                       utts_range=(13, 40), dim=512, num_eval_speakers=250, num_test=2900,
                       within_scale=1.85, block_speakers=256, log=None):
    """Write the corpus described in the module docstring to ``out_dir``; returns a dict of its
    sizes. Memory: one block of ``block_speakers`` speakers' vectors at a time."""
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(seed)
    between_var = 3.0 * np.exp(-np.arange(dim) / (dim / 6.0)) + 0.05
    within_var = within_scale * np.geomspace(2.5, 0.8, dim)
    between = _factor(random_rotation(rng, dim), between_var)
    within = _factor(random_rotation(rng, dim), within_var)
    mu = rng.normal(0.0, 2.0, dim)
    counts = _counts(rng, num_speakers, num_vectors, *utts_range)
    width = max(4, len(str(num_speakers)))
    uwidth = max(2, len(str(utts_range[1])))

    writer = _ArkWriter(os.path.join(out_dir, "train.ark"), os.path.join(out_dir, "train.scp"),
                        dim)
    spk2utt, utt2spk = [], []
    for first in range(0, num_speakers, block_speakers):
        block = counts[first:first + block_speakers]
        spks = ["spk%0*d" % (width, first + i + 1) for i in range(len(block))]
        keys = ["%s-u%0*d" % (spk, uwidth, j + 1) for spk, n in zip(spks, block)
                for j in range(n)]
        centres = mu + rng.standard_normal((len(block), dim)) @ between.T
        X = np.repeat(centres, block, axis=0)
        X += _heavy_tailed_noise(rng, len(X), within, 5.0)
        writer.write(keys, X.astype(np.float32))
        at = 0
        for spk, n in zip(spks, block):
            utts = keys[at:at + n]
            at += n
            spk2utt.append("%s %s" % (spk, " ".join(utts)))
            utt2spk.extend("%s %s" % (u, spk) for u in utts)
        if log:
            log("train: %d/%d speakers" % (min(first + block_speakers, num_speakers),
                                           num_speakers))
    writer.close()
    _write_text(os.path.join(out_dir, "spk2utt"), spk2utt)
    _write_text(os.path.join(out_dir, "utt2spk"), utt2spk)

    # Evaluation: new speakers of the same distribution; one enrollment vector each, the test
    # vectors spread as evenly as possible over them.
    ev = ["ev%04d" % (i + 1) for i in range(num_eval_speakers)]
    centres = mu + rng.standard_normal((num_eval_speakers, dim)) @ between.T
    enroll = centres + _heavy_tailed_noise(rng, num_eval_speakers, within, 5.0)
    writer = _ArkWriter(os.path.join(out_dir, "enroll.ark"),
                        os.path.join(out_dir, "enroll.scp"), dim)
    writer.write(ev, enroll.astype(np.float32))
    writer.close()
    _write_text(os.path.join(out_dir, "enroll_spk2utt"), ["%s %s" % (s, s) for s in ev])
    per = np.full(num_eval_speakers, num_test // num_eval_speakers)
    per[:num_test - per.sum()] += 1
    owner = np.repeat(np.arange(num_eval_speakers), per)
    test_keys = ["%s-t%02d" % (ev[s], j + 1) for s, n in enumerate(per) for j in range(n)]
    test = centres[owner] + _heavy_tailed_noise(rng, num_test, within, 5.0)
    writer = _ArkWriter(os.path.join(out_dir, "test.ark"), os.path.join(out_dir, "test.scp"),
                        dim)
    writer.write(test_keys, test.astype(np.float32))
    writer.close()
    _write_text(os.path.join(out_dir, "test_utt2spk"),
                ["%s %s" % (k, ev[s]) for k, s in zip(test_keys, owner)])
    with open(os.path.join(out_dir, "trials.tmp"), "w") as out:
        for i, spk in enumerate(ev):
            labels = np.where(owner == i, "target", "nontarget")
            out.write("".join("%s %s %s\n" % (spk, k, lab)
                              for k, lab in zip(test_keys, labels)))
    os.replace(os.path.join(out_dir, "trials.tmp"), os.path.join(out_dir, "trials"))
    return dict(speakers=num_speakers, vectors=int(counts.sum()), dim=dim,
                eval_speakers=num_eval_speakers, test=num_test,
                trials=num_eval_speakers * num_test)
