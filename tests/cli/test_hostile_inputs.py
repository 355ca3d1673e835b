"""Endless inputs through the tools (issue 26 item 7): ``/dev/zero`` (or a pipe that never
ends) given as text embeddings, a key list, trials, scores, a VoxCeleb list, a script, a
script's target, an archive, a text vector, a spk2utt line, a num_utts table or a PLDA model is one ERROR naming
the file (and key or line), exit 255, nothing written, once a bound of lines.py is passed.

Each tool runs under an address-space limit of 2 GiB (its normal peak here is a few hundred MB),
so a reader that went back to reading without bound fails this test with "Out of memory"
within seconds instead of filling the machine; the timeout is only a backstop.
"""

import resource
import subprocess
import sys

import numpy as np
import pytest
from conftest import BIN, tool_env

from pauc_backend.kaldi_io import write_plda, write_vector_table

LIMIT = 2 << 30


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run_limited(name, *args, cwd):
    return subprocess.run([sys.executable, str(BIN / name), *args], cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(),
                          preexec_fn=_limit_memory, timeout=300)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    X = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    np.save(folder / "x.npy", X)
    write_vector_table("ark:%s" % (folder / "x.ark"), ["a", "b", "c", "d"], X)
    (folder / "trials").write_text("a b target\nc d nontarget\n")
    (folder / "scores").write_text("a b 1\nc d 0\n")
    (folder / "target.scp").write_text("a /dev/zero\n")
    (folder / "offset.scp").write_text("a /dev/zero:7\n")
    (folder / "spk2utt").write_text("s a b\nt c d\n")
    (folder / "utt2spk").write_text("a s\nb s\nc t\nd t\n")
    (folder / "keys").write_text("a\nb\nc\nd\n")
    write_plda(str(folder / "plda"), np.zeros(3), np.eye(3), np.ones(3))
    return folder


ENDLESS_TEXT = "(printf 'a [ '; yes 1 | tr '\\n' ' ') |"
ENDLESS_SPK2UTT = "(printf 's '; yes a | tr '\\n' ' ') |"
ENDLESS_DIGITS = "(printf 'a '; yes 1 | tr -d '\\n') |"

CASES = {
    "text embeddings": (["import-vectors", "/dev/zero", "ark:out.ark"],
                        "Line 1 of text embeddings file /dev/zero has no newline within 16 MiB"),
    "key list": (["import-vectors", "--keys=/dev/zero", "x.npy", "ark:out.ark"],
                 "Line 1 of key list /dev/zero has no newline within 1 MiB"),
    "trials": (["compute-eer-pauc", "scores", "/dev/zero"],
               "Line 1 of trials file /dev/zero has no newline within 1 MiB"),
    "scores": (["compute-eer-pauc", "/dev/zero", "trials"],
               "Line 1 of scores file /dev/zero has no newline within 1 MiB"),
    "VoxCeleb list": (["convert-voxceleb-trials", "/dev/zero", "out.trials"],
                      "Line 1 of VoxCeleb list /dev/zero has no newline within 1 MiB"),
    "score-label lines": (["compute-eer-pauc", "cat /dev/zero |"],
                          "Line 1 of scores file cat /dev/zero | has no newline within 1 MiB"),
    "script": (["copy-vectors", "scp:/dev/zero", "ark:out.ark"],
               "Line 1 of script file /dev/zero has no newline within 1 MiB"),
    "script target": (["copy-vectors", "scp:target.scp", "ark:out.ark"],
                      "Failed to read key 'a' from script target.scp"),
    "script target at an offset": (["compute-vector-mean", "scp:offset.scp", "out.vec"],
                                   "reading /dev/zero:7 at byte 7"),
    "archive (streamed)": (["copy-vectors", "ark:/dev/zero", "ark:out.ark"],
                           "key: longer than 1 MiB"),
    "archive (whole table)": (["train-lda", "ark:cat /dev/zero |", "ark:utt2spk",
                               "out.mat"], "(reading cat /dev/zero | at byte 0)"),
    "text vector": (["copy-vectors", "ark:" + ENDLESS_TEXT, "ark:out.ark"],
                    "no ']' within 16 MiB of its '['"),
    "spk2utt line": (["train-plda", "ark:" + ENDLESS_SPK2UTT, "ark:x.ark", "out.plda"],
                     "Failed to read token_vector: a line longer than 16 MiB"),
    "num_utts value": (["score-plda-trials", "--num-utts=ark:" + ENDLESS_DIGITS, "plda",
                        "ark:x.ark", "ark:x.ark", "trials", "out.scores"],
                       "longer than 1 MiB"),
    "PLDA model": (["score-plda-trials", "/dev/zero", "ark:x.ark", "ark:x.ark", "trials",
                    "out.scores"], "binary header \\0 not followed by B (reading /dev/zero"),
    "npy on a pipe": (["import-vectors", "--format=npy", "--keys=keys", "cat /dev/zero |",
                       "ark:out.ark"], "Cannot read cat /dev/zero | as an .npy file: it starts "
                                       "with b'\\x00"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_endless_input_is_one_error_naming_the_file(case, folder):
    args, message = CASES[case]
    proc = run_limited(*args, cwd=folder)
    errors = [line for line in proc.stderr.decode(errors="replace").splitlines()
              if line.startswith("ERROR")]
    assert proc.returncode == 255, (case, proc.stderr[-2000:])
    assert len(errors) == 1 and message in errors[0], (case, errors)
    assert "Out of memory" not in errors[0] and "internal error" not in errors[0]
    assert not any(folder.glob("out*")), case


def test_text_archive_through_its_script_streams(folder):
    """Found on the way: the streaming tools read a script's entries that are not binary
    float vectors (here a text archive, ``ark,t,scp``) at offset 0 of the archive."""
    proc = run_limited("copy-vectors", "ark:x.ark", "ark,t,scp:t.ark,t.scp", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    for rspecifier, out in (("scp:t.scp", "via_scp.ark"), ("ark:t.ark", "direct.ark")):
        proc = run_limited("copy-vectors", rspecifier, "ark:" + out, cwd=folder)
        assert proc.returncode == 0, proc.stderr
    assert (folder / "via_scp.ark").read_bytes() == (folder / "direct.ark").read_bytes()


def test_an_npy_on_a_pipe_is_read_as_far_as_its_header_says(folder):
    """The writer may go on (here for ever): the array ends where its header says."""
    proc = run_limited("import-vectors", "--format=npy", "--keys=keys",
                       "(cat x.npy; cat /dev/zero) |", "ark,t:-", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().split()[0] == "a" and b"Imported 4 vectors" in proc.stderr


HUGE_RECORD = "ark:(cat x.ark; printf 'e \\000BFV \\004\\377\\377\\377\\177'; cat /dev/zero) |"


@pytest.mark.parametrize("args", [
    ["copy-vectors", HUGE_RECORD, "ark:out.ark"],                              # streamed
    ["score-cosine-trials", "trials", HUGE_RECORD, "ark:x.ark", "out.scores"],  # whole table
])
def test_a_record_larger_than_the_memory_is_named(args, folder):
    """Issue 26 item 7's "Out of memory" naming nothing: a piped record declaring 2^31 - 1
    floats (8 GiB; Kaldi's reader would try to read them too) under a 1 GiB address space is
    one ERROR naming the archive and where it stopped, after the 4 good records."""
    limit = 1 << 30
    proc = subprocess.run([sys.executable, str(BIN / args[0]), *args[1:]], cwd=folder,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(),
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS,
                                                                (limit, limit)),
                          timeout=300)
    errors = [line for line in proc.stderr.decode(errors="replace").splitlines()
              if line.startswith("ERROR")]
    size = (folder / "x.ark").stat().st_size
    assert proc.returncode == 255 and len(errors) == 1, proc.stderr[-2000:]
    assert "Out of memory reading archive (cat x.ark;" in errors[0], errors
    assert str(size) in errors[0], (size, errors)       # the offset of record 'e'
    assert not any(folder.glob("out*"))
