"""train-pauc-auto reads its table once and holds it only when it is small (issue 35).

Beyond --in-memory-mb the vectors are read again from their archive files when needed (issue
43), or, from a pipe or text, go to an unlinked temporary file as they are read, and the
cross-fitting subset is gathered into its own array on the way: the model directory is the
same, byte for byte, as with the table held, from a file, a script or a pipe, whatever the
order of the vectors in the table; listed utterances that have no vector are dropped with
Kaldi's warnings, held or not alike, and the cross-fitting's sentence counts what was found.
tests/cli/test_training_memory.py checks that a table beyond the bound is not held."""

import filecmp
import os

import numpy as np
import pytest
from conftest import run_tool

from pauc_backend.datasets import make_speaker_corpus
from pauc_backend.kaldi_io import write_vector_table

FAST = ["--num-iters=30", "--batch-size=30", "--lda-dims=0,8", "--num-folds=3",
        "--candidates=cosine_raw:as,plda,pauc_latent,plda+pauc_lnorm", "--max-speakers=30",
        "--max-vectors=260", "--max-trials=5000", "--dplda-lambdas=1"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("table")
    c = make_speaker_corpus(seed=35, dim=16, num_train_speakers=45, num_adapt_speakers=2,
                            num_eval_speakers=4, train_utts_range=(5, 16))
    spk2utt = c.train.spk2utt()
    with open(d / "spk2utt", "w") as f:
        for spk, utts in sorted(spk2utt.items()):
            f.write("%s %s\n" % (spk, " ".join(utts)))
    write_vector_table("ark:%s" % (d / "train.ark"), c.train.keys, c.train.X)
    order = np.random.default_rng(1).permutation(len(c.train.keys))   # speakers interleaved
    write_vector_table("ark:%s" % (d / "shuffled.ark"), [c.train.keys[i] for i in order],
                       c.train.X[order])
    return d, c


def train(d, out, vectors, *extra, spk2utt="spk2utt"):
    proc = run_tool("train-pauc-auto", *FAST, *extra, vectors, "ark:%s" % (d / spk2utt), out)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    return proc.stderr.decode()


def same_files(a, b):
    names = sorted(os.listdir(a))
    assert names == sorted(os.listdir(b))
    match, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
    assert not mismatch and not errors, mismatch + errors
    return names


REREAD = "its rows are read again from the archives they are in"
SPOOLED = "spooled to an unlinked temporary file in"


def test_a_table_beyond_the_bound_gives_the_same_model_as_a_held_one(data, tmp_path):
    """Beyond --in-memory-mb an archive file, or a script of file:offset entries (over two
    archives here, the vectors shuffled), is read again where it is; a pipe, or a table
    whose vectors are not all binary float records of files (text vectors here, from the
    middle on) is spooled: the model is the same, byte for byte, as with the table held
    (the text vectors' rounding makes the last table's model its own)."""
    d, c = data
    log = train(d, tmp_path / "held", "ark:%s" % (d / "train.ark"))
    assert SPOOLED not in log and REREAD not in log
    order = np.random.default_rng(2).permutation(len(c.train.keys))
    half = order.size // 2
    scripts = []
    for part, rows in (("a", order[:half]), ("b", order[half:])):
        write_vector_table("ark,scp:%s,%s" % (tmp_path / (part + ".ark"),
                                              tmp_path / (part + ".scp")),
                           [c.train.keys[i] for i in rows], c.train.X[rows])
        scripts.append((tmp_path / (part + ".scp")).read_text())
    (tmp_path / "two.scp").write_text("".join(scripts))
    write_vector_table("ark,t:%s" % (tmp_path / "text.ark"), [c.train.keys[i] for i in
                                                              order[half:]], c.train.X[order[half:]])
    (tmp_path / "mixed.ark").write_bytes((tmp_path / "a.ark").read_bytes()
                                         + (tmp_path / "text.ark").read_bytes())
    for name, vectors, how in (("file", "ark:%s" % (d / "train.ark"), REREAD),
                               ("script", "scp:%s" % (tmp_path / "two.scp"), REREAD),
                               ("pipe", "ark:cat %s |" % (d / "shuffled.ark"), SPOOLED),
                               ("mixed", "ark:%s" % (tmp_path / "mixed.ark"), REREAD)):
        log = train(d, tmp_path / name, vectors, "--in-memory-mb=0")
        assert how in log, (name, log[-3000:])
        held = tmp_path / "held"
        if name == "mixed":     # the text records: spooled from there, what was read copied
            assert "Not every vector of %s is a float-vector record" % vectors in log
            held = tmp_path / "mixed-held"
            train(d, held, vectors)
        names = same_files(held, tmp_path / name)
        assert "plda" in names and "system.txt" in names
    card = (tmp_path / "held" / "system.txt").read_text()
    assert "crossfit_data 30 of the 45 speakers (seeded), at most" in card


def test_listed_utterances_without_a_vector(data, tmp_path):
    """spk2utt lists utterances the table does not have, in and out of the cross-fitting
    subset, and a speaker none of whose utterances has a vector: Kaldi's warnings, the
    speaker dropped, the subset smaller and saying so, held and spooled alike."""
    d, c = data
    spk2utt = {s: list(u) for s, u in sorted(c.train.spk2utt().items())}
    speakers = list(spk2utt)
    for s in speakers[::4]:
        spk2utt[s].append(s + "-nosuch")
    spk2utt["ghost"] = ["ghost-a", "ghost-b", "ghost-c"]
    (d / "spk2utt_missing").write_text("".join(
        "%s %s\n" % (s, " ".join(u)) for s, u in spk2utt.items()))
    logs = [train(d, tmp_path / str(m), "ark:%s" % (d / "train.ark"), "--in-memory-mb=%d" % m,
                  spk2utt="spk2utt_missing") for m in (256, 0)]
    same_files(tmp_path / "256", tmp_path / "0")
    missing = 3 + len(speakers[::4])
    for log in logs:
        assert log.count("WARNING") >= missing
        assert "No iVector present in input for utterance ghost-a" in log
        assert "Not producing output for speaker ghost since no utterances had iVectors" in log
        assert "Read %d vectors of dimension 16 from %d speakers" % (
            len(c.train.keys), len(speakers)) in log
    card = (tmp_path / "0" / "system.txt").read_text()
    assert "train_vectors %d" % len(c.train.keys) in card
    line = next(l for l in card.splitlines() if l.startswith("crossfit_data"))
    listed, found = [int(w) for w in line.replace(",", " ").split() if w.isdigit()][-2:]
    assert " vectors listed, " in line and found < listed


def test_bad_vectors_are_one_error_when_spooled(data, tmp_path):
    d, c = data
    X = c.train.X.copy()
    X[7, 3] = np.nan
    write_vector_table("ark:%s" % (tmp_path / "nan.ark"), c.train.keys, X)
    out = tmp_path / "model"
    proc = run_tool("train-pauc-auto", *FAST, "--in-memory-mb=0", "ark:%s" % (tmp_path / "nan.ark"),
                    "ark:%s" % (d / "spk2utt"), out)
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode != 0 and len(errors) == 1 and not out.exists()
    assert "Vector %s in ark:%s contains NaN or Inf" % (c.train.keys[7], tmp_path / "nan.ark") \
        in errors[0]
    keys = c.train.keys + [c.train.keys[3]]
    write_vector_table("ark:%s" % (tmp_path / "dup.ark"), keys,
                       np.vstack([c.train.X, c.train.X[3:4]]))
    proc = run_tool("train-pauc-auto", *FAST, "--in-memory-mb=0", "ark:%s" % (tmp_path / "dup.ark"),
                    "ark:%s" % (d / "spk2utt"), out)
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode != 0 and len(errors) == 1 and "Duplicate key '%s'" % keys[3] \
        in errors[0]
