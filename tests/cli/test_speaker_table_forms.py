"""Issue 37 item 3: a speaker table in either form (utt2spk, spk2utt) where the other is
expected is read as what it is, with one LOG line saying so, and gives exactly what the
expected form gives. The reference is the real ETRI corpus' own pair of files
(../shared/realdata/etri/train/{utt2spk,spk2utt}: 11,800 utterances of 118 speakers, the same
partition): each tool's output from the other form must be byte-identical to its output from
the form it documents. Files that are neither, or that cannot be told apart, keep their one
ERROR."""

import re

import numpy as np
import pytest
from conftest import run_tool

from pauc_backend.kaldi_io import write_token_table, write_token_vector_table, write_vector_table

READ_AS = re.compile(r"^LOG \(.*\) Read (\S+) as (utt2spk|spk2utt) ", re.M)


def conversions(proc):
    return READ_AS.findall(proc.stderr.decode())


def errors_of(proc):
    text = proc.stderr.decode()
    assert "Traceback" not in text, text
    return [l for l in text.splitlines() if l.startswith("ERROR")]


def outputs(path):
    """Bytes of a file, or of every file of a model directory by name."""
    if path.is_dir():
        return {p.name: p.read_bytes() for p in sorted(path.iterdir())}
    return path.read_bytes()


# Each trainer with the spk2utt it documents, then with the corpus' utt2spk in its place. The
# scp's paths are relative to the corpus directory (cwd). {s}: the speaker table, {o}: output.
SPK2UTT_TOOLS = {
    "train-plda": ["ark:{s}", "scp:train/xvector.scp", "{o}"],
    "train-pauc-metric": ["--num-iters=30", "--batch-size=40", "ark:{s}",
                          "scp:train/xvector.scp", "{o}"],
    "compute-vector-mean": ["ark:{s}", "scp:train/xvector.scp", "ark:{o}"],
    "train-pauc-auto": ["--candidates=cosine_centred,plda", "--lda-dims=50", "--num-folds=2",
                        "--num-jobs=1", "--enroll-utts=3", "scp:train/xvector.scp", "ark:{s}",
                        "{o}"],
}


@pytest.mark.parametrize("tool", sorted(SPK2UTT_TOOLS))
def test_etri_utt2spk_where_spk2utt_is_expected_gives_the_same_output(etri, tmp_path, tool):
    got = {}
    for form in ("spk2utt", "utt2spk"):
        out = tmp_path / form
        args = [a.format(s=etri / "train" / form, o=out) for a in SPK2UTT_TOOLS[tool]]
        proc = run_tool(tool, *args, cwd=etri, check=True)
        got[form] = outputs(out)
        if form == "spk2utt":
            assert conversions(proc) == []
        else:
            assert conversions(proc) == [("ark:%s" % (etri / "train/utt2spk"), "utt2spk")]
            assert "11800 utterances of 118 speakers" in proc.stderr.decode()
            assert b"WARNING" not in proc.stderr
    assert got["utt2spk"] == got["spk2utt"]


def test_etri_spk2utt_where_utt2spk_is_expected_gives_the_same_output(etri, tmp_path):
    """train-lda and make-calibration-trials document utt2spk; a spk2utt (a line with several
    utterances: unambiguous) is read as one."""
    cases = {
        "train-lda": ["--dim=50", "scp:train/xvector.scp", "ark:{s}", "{o}"],
        "make-calibration-trials": ["--num-pairs=500", "ark:{s}", "{o}"],
    }
    for tool, template in cases.items():
        got = {}
        for form in ("utt2spk", "spk2utt"):
            out = tmp_path / ("%s.%s" % (tool, form))
            proc = run_tool(tool, *[a.format(s=etri / "train" / form, o=out) for a in template],
                            cwd=etri, check=True)
            got[form] = out.read_bytes()
            expected = [] if form == "utt2spk" else [("ark:%s" % (etri / "train/spk2utt"),
                                                      "spk2utt")]
            assert conversions(proc) == expected, tool
        assert got["spk2utt"] == got["utt2spk"], tool


@pytest.fixture
def small(tmp_path):
    """6 speakers x 4 utterances of dim 5, both speaker tables, trials among the utterances
    with two score files."""
    rng = np.random.default_rng(7)
    utt2spk = {"s%d-u%d" % (s, u): "s%d" % s for s in range(6) for u in range(4)}
    keys = sorted(utt2spk)
    X = (rng.normal(size=(6, 5)).repeat(4, axis=0) * 3
         + rng.normal(size=(len(keys), 5))).astype(np.float32)
    write_vector_table("ark:%s" % (tmp_path / "x.ark"), keys, X)
    write_token_table("ark,t:%s" % (tmp_path / "utt2spk"), utt2spk)
    spk2utt = {}
    for utt, spk in utt2spk.items():
        spk2utt.setdefault(spk, []).append(utt)
    write_token_vector_table("ark,t:%s" % (tmp_path / "spk2utt"), spk2utt)
    trials, a, b = [], [], []
    for i, k1 in enumerate(keys):
        for k2 in keys[i + 1:]:
            target = utt2spk[k1] == utt2spk[k2]
            trials.append("%s %s %s\n" % (k1, k2, "target" if target else "nontarget"))
            a.append("%s %s %.4f\n" % (k1, k2, rng.normal(2.0 * target)))
            b.append("%s %s %.4f\n" % (k1, k2, rng.normal(3.0 * target)))
    for name, lines in (("trials", trials), ("a", a), ("b", b)):
        (tmp_path / name).write_text("".join(lines))
    return tmp_path


def test_spk2utt_as_the_bootstrap_speakers_gives_the_same_report(small):
    """compare-systems --utt2spk and compute-eer-pauc --utt2spk (speaker clusters)."""
    for tool, args in (("compare-systems", ["a", "b", "trials"]),
                       ("compute-eer-pauc", ["a", "trials"])):
        got = {}
        for form in ("utt2spk", "spk2utt"):
            proc = run_tool(tool, "--bootstrap=40", "--utt2spk=ark:%s" % form, *args, cwd=small,
                            check=True)
            got[form] = proc.stdout
            assert len(conversions(proc)) == (form == "spk2utt"), tool
        assert got["spk2utt"] == got["utt2spk"], tool


def test_one_utterance_per_speaker_is_told_apart_by_the_vector_keys(small):
    """An utt2spk in which no speaker repeats has the shape of a spk2utt with one utterance per
    speaker: the tools that hold the vector keys tell them apart by which column the keys are
    in (and both mean the same means)."""
    keys = [l.split()[0] for l in (small / "utt2spk").read_text().splitlines()]
    (small / "u1").write_text("".join("%s spk-%s\n" % (k, k) for k in keys))
    (small / "s1").write_text("".join("spk-%s %s\n" % (k, k) for k in keys))
    got = {}
    for name in ("u1", "s1"):
        proc = run_tool("compute-vector-mean", "ark:%s" % name, "ark:x.ark", "ark,t:-",
                        cwd=small, check=True)
        got[name] = proc.stdout
        assert len(conversions(proc)) == (name == "u1")
    assert got["u1"] == got["s1"] and got["s1"].count(b"\n") == len(keys)


def test_train_plda_cannot_tell_one_utterance_per_speaker_and_says_so(small):
    """train-plda streams its vectors: without their keys an utt2spk in which no speaker
    repeats stays ambiguous, and stays one ERROR saying what it looks like."""
    keys = [l.split()[0] for l in (small / "utt2spk").read_text().splitlines()]
    (small / "u1").write_text("".join("%s spk-%s\n" % (k, k) for k in keys))
    (small / "out").write_bytes(b"old\n")
    proc = run_tool("train-plda", "ark:u1", "ark:x.ark", "out", cwd=small)
    errors = errors_of(proc)
    assert proc.returncode not in (0, 1) and len(errors) == 1, proc.stderr.decode()
    assert re.search(r"ark:u1 looks like an utt2spk table in which every speaker has one "
                     r"utterance .*give spk2utt there", errors[0]), errors[0]
    assert conversions(proc) == [] and (small / "out").read_bytes() == b"old\n"


@pytest.mark.parametrize("tool", ["train-plda", "train-pauc-metric", "compute-vector-mean"])
def test_an_utt2spk_of_other_utterances_is_still_one_error(small, tool):
    """Two tokens a line, a repeated second token, but no first token is a vector key: the
    wrong table, whichever way it is read."""
    (small / "other").write_text("".join("nobody-%d s%d\n" % (i, i % 3) for i in range(30)))
    (small / "out").write_bytes(b"old\n")
    out = "ark:out" if tool == "compute-vector-mean" else "out"
    proc = run_tool(tool, "ark:other", "ark:x.ark", out, cwd=small)
    errors = errors_of(proc)
    assert proc.returncode not in (0, 1) and len(errors) == 1, proc.stderr.decode()
    assert re.search(r"Only 0 of the 30 utterances listed in ark:other( \(read as utt2spk\))? "
                     r"have a vector in ark:x.ark", errors[0]), errors[0]
    assert (small / "out").read_bytes() == b"old\n"


def test_a_spk2utt_listing_an_utterance_twice_is_one_error_where_utt2spk_is_expected(small):
    (small / "twice").write_text("s0 s0-u0 s0-u1\ns1 s1-u0 s0-u1\n")
    (small / "out").write_bytes(b"old\n")
    proc = run_tool("train-lda", "--dim=2", "ark:x.ark", "ark:twice", "out", cwd=small)
    errors = errors_of(proc)
    assert len(errors) == 1 and re.search(r"ark:twice, read as spk2utt .*lists utterance "
                                          r"s0-u1 twice", errors[0]), proc.stderr.decode()
    assert (small / "out").read_bytes() == b"old\n"
