"""Issue 10 part 3: bad input to the vector and training tools gives ONE ERROR line naming the
input and the problem, a non-zero exit and untouched outputs (or Kaldi's result plus a WARNING
where that result is still valid)."""

import re
import struct

import numpy as np
import pytest
from conftest import run_tool

from pauc_backend.kaldi_io import (read_matrix, write_plda, write_token_table,
                                   write_token_vector_table, write_vector_table)

KEEP = b"existing output\n"


def errors_of(proc):
    text = proc.stderr.decode()
    assert "Traceback" not in text and "Exception ignored" not in text, text
    return [l for l in text.splitlines() if l.startswith("ERROR")]


def assert_one_error(proc, pattern, *untouched):
    errors = errors_of(proc)
    assert proc.returncode not in (0, 1), proc.stderr.decode()
    assert len(errors) == 1 and re.search(pattern, errors[0]), proc.stderr.decode()
    for path in untouched:
        assert path.read_bytes() == KEEP


@pytest.fixture
def data(tmp_path):
    """12 speakers x 5 utterances of dim 6, their utt2spk/spk2utt, and an existing output."""
    rng = np.random.default_rng(3)
    spk = ["spk%02d" % s for s in range(12)]
    utt2spk = {"%s-u%d" % (s, u): s for s in spk for u in range(5)}
    keys = sorted(utt2spk)
    X = (rng.normal(size=(len(spk), 6)).repeat(5, axis=0) * 2
         + rng.normal(size=(len(keys), 6))).astype(np.float32)
    write_vector_table("ark:%s" % (tmp_path / "x.ark"), keys, X)
    write_token_table("ark,t:%s" % (tmp_path / "utt2spk"), utt2spk)
    spk2utt = {}
    for utt, s in utt2spk.items():
        spk2utt.setdefault(s, []).append(utt)
    write_token_vector_table("ark,t:%s" % (tmp_path / "spk2utt"), spk2utt)
    write_vector_table("ark:%s" % (tmp_path / "same.ark"), keys,
                       np.ones((len(keys), 6), np.float32))
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "out").write_bytes(KEEP)
    (tmp_path / "out2").write_bytes(KEEP)
    return tmp_path


EMPTY_CASES = [
    ("copy-vectors", "ark:{d}/empty", "ark:{d}/out"),
    ("subtract-vector-mean", "ark:{d}/empty", "ark:{d}/out"),
    ("normalize-vector-length", "ark:{d}/empty", "ark:{d}/out"),
    ("compute-vector-mean", "ark:{d}/empty", "{d}/out"),
    ("compute-vector-mean", "ark:{d}/spk2utt", "ark:{d}/empty", "ark:{d}/out", "ark:{d}/out2"),
    ("compute-vector-mean", "ark:{d}/empty", "ark:{d}/x.ark", "ark:{d}/out"),
    ("train-lda", "ark:{d}/empty", "ark:{d}/utt2spk", "{d}/out"),
    ("train-plda", "ark:{d}/spk2utt", "ark:{d}/empty", "{d}/out"),
    ("train-plda", "ark:{d}/empty", "ark:{d}/x.ark", "{d}/out"),
    ("train-pauc-metric", "ark:{d}/spk2utt", "ark:{d}/empty", "{d}/out"),
]


@pytest.mark.parametrize("case", EMPTY_CASES, ids=lambda c: c[0])
def test_empty_input_is_one_error_and_outputs_stay_untouched(data, case):
    proc = run_tool(case[0], *[a.format(d=data) for a in case[1:]])
    assert_one_error(proc, r"[Nn]o (vectors|iVectors|speaker|stats|utterances)|"
                           r"Did not read", data / "out", data / "out2")


def test_empty_input_to_transforms(data):
    lda = data / "lda.mat"
    run_tool("train-lda", "--dim=3", "ark:%s/x.ark" % data, "ark:%s/utt2spk" % data, lda,
             check=True)
    proc = run_tool("transform-vectors", lda, "ark:%s/empty" % data, "ark:%s/out" % data)
    assert_one_error(proc, "No vectors read from ark:.*empty", data / "out")
    plda = data / "plda"
    run_tool("train-plda", "ark:%s/spk2utt" % data, "ark:%s/x.ark" % data, plda, check=True)
    proc = run_tool("transform-plda-latent", plda, "ark:%s/empty" % data, "ark:%s/out" % data)
    assert_one_error(proc, "No vectors read from ark:.*empty", data / "out")


# -- degenerate training data --------------------------------------------------------------------

def test_train_lda_on_identical_vectors_is_an_error_not_a_nan_matrix(data):
    proc = run_tool("train-lda", "--dim=3", "ark:%s/same.ark" % data, "ark:%s/utt2spk" % data,
                    data / "out")
    assert_one_error(proc, "Degenerate data.*covariance is zero.*same.ark", data / "out")


def test_train_lda_with_one_speaker_is_an_error(data):
    (data / "one").write_text("".join("%s s\n" % line.split()[0]
                                      for line in (data / "utt2spk").read_text().splitlines()))
    proc = run_tool("train-lda", "--dim=3", "ark:%s/x.ark" % data, "ark:%s/one" % data,
                    data / "out")
    assert_one_error(proc, "1 speaker.*at least 2 speakers", data / "out")


def test_train_lda_with_fewer_speakers_than_dim_warns_and_writes_kaldis_matrix(data):
    proc = run_tool("train-lda", "--dim=5", "ark:%s/x.ark" % data, "ark:%s/utt2spk" % data,
                    data / "ok.mat")
    assert proc.returncode == 0 and not errors_of(proc)
    assert not [l for l in proc.stderr.decode().splitlines() if l.startswith("WARNING")]
    # 4 speakers for --dim=5: rank of the between-class covariance is at most 3
    (data / "four").write_text("".join(
        "%s spk%02d\n" % (line.split()[0], int(line.split()[1][3:]) % 4)
        for line in (data / "utt2spk").read_text().splitlines()))
    proc = run_tool("train-lda", "--dim=5", "ark:%s/x.ark" % data, "ark:%s/four" % data,
                    data / "few.mat")
    assert proc.returncode == 0 and not errors_of(proc)
    warnings = [l for l in proc.stderr.decode().splitlines() if l.startswith("WARNING")]
    assert len(warnings) == 1 and "Only 4 speakers" in warnings[0]
    assert "last 2 of the --dim=5" in warnings[0]
    matrix = read_matrix(str(data / "few.mat"))
    assert matrix.shape == (5, 7) and np.isfinite(matrix).all()


def test_train_plda_rejects_one_speaker_negative_iterations_and_identical_vectors(data):
    (data / "one").write_text("s %s\n" % " ".join(
        line.split()[0] for line in (data / "utt2spk").read_text().splitlines()))
    proc = run_tool("train-plda", "ark:%s/one" % data, "ark:%s/x.ark" % data, data / "out")
    assert_one_error(proc, "Only one speaker.*at least 2 speakers.*one", data / "out")
    proc = run_tool("train-plda", "--num-em-iters=-1", "ark:%s/spk2utt" % data,
                    "ark:%s/x.ark" % data, data / "out")
    assert_one_error(proc, "Invalid value --num-em-iters=-1: must be >= 0", data / "out")
    proc = run_tool("train-plda", "ark:%s/spk2utt" % data, "ark:%s/same.ark" % data,
                    data / "out")
    assert_one_error(proc, "Degenerate data.*same.ark", data / "out")


@pytest.mark.parametrize("psi", [[1.0, float("nan")], [1.0, -0.5]], ids=["nan", "negative"])
def test_a_bad_plda_is_rejected_on_load_naming_the_model_file(data, psi):
    plda = data / "bad.plda"
    write_plda(str(plda), np.zeros(2), np.eye(2), np.array(psi), binary=False)
    vectors = data / "v2.ark"
    write_vector_table("ark:%s" % vectors, ["a", "b"], np.eye(2, dtype=np.float32))
    (data / "trials").write_text("a b\n")
    for tool, args in (("copy-plda", (plda, data / "out")),
                       ("transform-plda-latent", (plda, "ark:%s" % vectors,
                                                  "ark:%s/out" % data)),
                       ("score-plda-trials", (plda, "ark:%s" % vectors, "ark:%s" % vectors,
                                              data / "trials", data / "out"))):
        proc = run_tool(tool, *args)
        assert_one_error(proc, r"Bad PLDA model in \S*bad.plda: (its psi contains NaN|psi "
                               r"\(between-class variance\) has a negative value)",
                         data / "out")


# -- speaker tables that match no vector ---------------------------------------------------------
# (utt2spk where spk2utt is expected and the reverse are read as what they are: issue 37,
# tests/cli/test_speaker_table_forms.py)

def test_mostly_unknown_utterances_stop_with_one_error(data):
    spk2utt = {"s%d" % i: ["nobody-%d-%d" % (i, j) for j in range(3)] for i in range(20)}
    spk2utt["spk00"] = ["spk00-u0"]
    write_token_vector_table("ark,t:%s/other" % data, spk2utt)
    proc = run_tool("compute-vector-mean", "ark:%s/other" % data, "ark:%s/x.ark" % data,
                    "ark:%s/out" % data)
    assert_one_error(proc, "Only 1 of the 61 utterances listed in ark:.*other have a vector in "
                           "ark:.*x.ark", data / "out")
    assert b"WARNING" not in proc.stderr


def test_missing_utterance_warnings_are_capped(data, monkeypatch):
    from pauc_backend.cli.framework import speaker_tables

    class Log:
        warnings = []

        def warning(self, message):
            self.warnings.append(message)

    keys = ["u%d" % i for i in range(1000)]
    spk2utt = {"s%d" % i: keys[i * 10:(i + 1) * 10] + ["gone%d-%d" % (i, j) for j in range(3)]
               for i in range(100)}
    got = speaker_tables.gather_speakers(Log(), spk2utt, keys)
    assert got.num_utt_err == 300 and got.rows.size == 1000
    assert len(Log.warnings) == speaker_tables.MAX_WARNINGS + 1
    assert "200 more utterances with no iVector (300 in all" in Log.warnings[-1]


# -- a space before a binary-ark key (Kaldi's `is >> key` skips it) ------------------------------

def test_space_before_a_binary_key_is_skipped_by_copy_vectors_and_compute_vector_mean(tmp_path):
    def record(key, values):  # key, space, \0B, FV, size, floats (Kaldi's binary entry)
        return key + b" \0BFV \x04" + struct.pack("<i%df" % len(values), len(values), *values)
    ark = tmp_path / "spaced.ark"
    ark.write_bytes(record(b"abc", [1, 2]) + record(b"cde", [3, 4]) + b" " + record(b"ef", [5, 9]))
    proc = run_tool("copy-vectors", "ark:%s" % ark, "ark,t:-", check=True)
    assert proc.stdout == b"abc  [ 1 2 ]\ncde  [ 3 4 ]\nef  [ 5 9 ]\n"
    (tmp_path / "spk2utt").write_text("s abc ef\n")
    proc = run_tool("compute-vector-mean", "ark:%s" % (tmp_path / "spk2utt"), "ark:%s" % ark,
                    "ark,t:-", check=True)
    assert proc.stdout == b"s  [ 3 5.5 ]\n"  # ef is not dropped
    assert b"WARNING" not in proc.stderr


# -- a newcomer's mistakes (issue 20): the diagnosis, not a parser's symptom ---------------------

def test_an_input_pipe_whose_command_is_missing_says_so(data):
    proc = run_tool("train-lda", "--dim=3", "ark:no-such-command-xyz %s/x.ark |" % data,
                    "ark:%s/utt2spk" % data, data / "out")
    assert_one_error(proc, r"Input pipe 'no-such-command-xyz .*' failed \(exit status 127: a "
                           r"command of the pipe was not found", data / "out")


# Every tool that writes after long work: a missing output folder is found before any input is
# read (no LOG line, no EM iteration), with one ERROR naming the folder.
MISSING_DIR_CASES = [
    ("train-lda", "--dim=3", "ark:{d}/x.ark", "ark:{d}/utt2spk", "{d}/no/lda.mat"),
    ("train-plda", "ark:{d}/spk2utt", "ark:{d}/x.ark", "{d}/no/plda"),
    ("train-pauc-metric", "ark:{d}/spk2utt", "ark:{d}/x.ark", "{d}/no/metric"),
    ("train-pauc-auto", "ark:{d}/x.ark", "ark:{d}/spk2utt", "{d}/no/model"),
    ("compute-vector-mean", "ark:{d}/spk2utt", "ark:{d}/x.ark", "ark:{d}/m.ark",
     "ark,t:{d}/no/num_utts"),
    ("copy-vectors", "ark:{d}/x.ark", "ark,scp:{d}/y.ark,{d}/no/y.scp"),
    ("normalize-vector-length", "ark:{d}/x.ark", "ark:{d}/no/y.ark"),
    ("train-calibration", "{d}/trials", "{d}/scores", "{d}/no/calibration.mdl"),
]


@pytest.mark.parametrize("case", MISSING_DIR_CASES, ids=lambda c: c[0])
def test_a_missing_output_directory_is_an_error_before_any_work(data, case):
    args = [a.format(d=data) for a in case[1:]]
    proc = run_tool(case[0], *args)
    assert_one_error(proc, r"Cannot write '.*/no/[^']*': the directory '.*/no' does not exist")
    assert b"LOG" not in proc.stderr and b"WARNING" not in proc.stderr, proc.stderr.decode()
    assert not (data / "m.ark").exists() and not (data / "y.ark").exists()


def test_an_output_file_that_is_a_directory_is_an_error_before_any_work(data):
    (data / "adir").mkdir()
    proc = run_tool("train-plda", "ark:%s/spk2utt" % data, "ark:%s/x.ark" % data, data / "adir")
    assert_one_error(proc, r"Cannot write '.*/adir': it is a directory")
    assert b"LOG" not in proc.stderr


@pytest.mark.parametrize("tool,args", [
    ("copy-vectors", ["scp:io.scp", "ark,t:-"]),                   # streamed
    ("compute-vector-mean", ["scp:io.scp", "-"]),                  # whole table
    ("copy-vectors", ["scp:io_offset.scp", "ark,t:-"]),            # at an offset
])
def test_a_script_target_that_fails_to_read_names_the_script_key_and_file(tmp_path, tool, args):
    """Issue 36 item 4: a script entry naming a file whose read fails (EIO: /proc/self/mem,
    a regular file of size 0 that cannot be read at offset 0) gave "[Errno 5] Input/output
    error" naming neither the script nor the file."""
    (tmp_path / "io.scp").write_text("a /proc/self/mem\n")
    (tmp_path / "io_offset.scp").write_text("a /proc/self/mem:64\n")
    proc = run_tool(tool, *args, cwd=tmp_path)
    assert_one_error(proc, r"Failed to read key 'a' from script io(_offset)?\.scp: Failed to "
                           r"read '/proc/self/mem(:64)?': Input/output error")


def test_an_archive_that_fails_to_read_is_named(tmp_path):
    proc = run_tool("copy-vectors", "ark:/proc/self/mem", "ark,t:-", cwd=tmp_path)
    assert_one_error(proc, r"Failed to read archive /proc/self/mem: Input/output error")
