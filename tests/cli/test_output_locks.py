"""Issue 26 items 2-3: one writer of an output at a time. A run that would write a file (or a
model directory) that another run is writing stops at once - before reading its input - with
one ERROR quoting the other run's lock record as untrusted text, and leaves the outputs
alone; two runs never leave a mixed ark,scp pair. Whether a commit journal's writer is alive
is decided by its lock, not by its pid.

The "other run" is either this test process holding the lock (``fcntl.flock``, as a run on
another host would) or a real run paused before its commit by the test hook
``PAUC_BACKEND_TEST_PAUSE_BEFORE_COMMIT`` (set only in that subprocess, which runs through
tests/hooked_tool.py: a real run ignores the variable).
"""

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import BIN, run_tool, tool_argv, tool_env

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import commit, journal, output_locks

RECORD = b"pid 4242 on host elsewhere, user colleague, started 2026-11-26: copy-vectors x y\n"


def text_archive(path, sign, num=400, dim=3):
    path.write_text("".join("utt%04d  [ %s ]\n" % (i, " ".join(
        "%d" % (sign * (i * dim + j + 1)) for j in range(dim))) for i in range(num)))
    return path.read_text()


def start(*args, env=None):
    full_env = tool_env()
    full_env.update(env or {})
    return subprocess.Popen(tool_argv(*args, env=env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env)


def tool(*args, env=None):
    proc = start(*args, env=env)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out.decode(), err.decode()


def read_pair(scp):
    proc = run_tool("copy-vectors", "scp:%s" % scp, "ark,t:-")
    return proc.returncode, proc.stdout.decode()


def errors(stderr):
    return [line for line in stderr.splitlines() if line.startswith("ERROR")]


@contextlib.contextmanager
def holding(target, record=RECORD):
    """This process holds ``target``'s lock, with ``record`` in the lock file."""
    path = output_locks.lock_path(str(target))
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.write(fd, record)
        yield path
    finally:
        os.unlink(path)
        os.close(fd)


@pytest.fixture
def pair(tmp_path):
    old = text_archive(tmp_path / "old.txt", 1)
    new = text_archive(tmp_path / "new.txt", -1)
    ark, scp = tmp_path / "out" / "x.ark", tmp_path / "out" / "x.scp"
    ark.parent.mkdir()
    assert tool("copy-vectors", "ark,t:%s" % (tmp_path / "old.txt"),
                "ark,scp:%s,%s" % (ark, scp))[0] == 0
    return {"ark": ark, "scp": scp, "old": old, "new": new, "root": tmp_path,
            "wspec": "ark,scp:%s,%s" % (ark, scp), "new_txt": tmp_path / "new.txt",
            "old_txt": tmp_path / "old.txt"}


def files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("locked", ["ark", "scp"])
def test_a_second_writer_stops_before_reading_its_input_naming_the_other_run(pair, locked):
    before = files(pair["ark"].parent)
    with holding(pair[locked]) as lock:
        code, _, stderr = tool("copy-vectors", "ark:%s" % (pair["root"] / "missing.ark"),
                               pair["wspec"])
        assert open(lock, "rb").read() == RECORD      # the holder's file is left alone
    assert code == 255
    lines = errors(stderr)
    assert len(lines) == 1, stderr
    assert "Cannot write '%s': another run is writing it" % pair[locked] in lines[0]
    assert "(text written by that run, unverified): \"%s\"" % RECORD.decode().strip() \
        in lines[0]
    assert "No such file" not in stderr          # the input was never opened
    assert files(pair["ark"].parent) == before


def test_a_hostile_lock_record_is_shown_escaped_on_one_line(pair):
    hostile = b"\x1b[2J\nERROR (fake) all is well\r\n" + b"x" * 5000
    with holding(pair["ark"], hostile):
        code, _, stderr = tool("copy-vectors", "--print-args=false",
                               "ark,t:%s" % pair["new_txt"], pair["wspec"])
    assert code == 255
    assert len(stderr.splitlines()) == 1 and stderr.startswith("ERROR")
    assert "\x1b" not in stderr and "\r" not in stderr
    assert "\\x1b[2J\\x0aERROR (fake) all is well" in stderr
    assert len(stderr) < 1000


def test_two_writers_of_one_pair_one_stops_and_the_pair_is_the_others(pair):
    flag = pair["root"] / "pause"
    first = start("copy-vectors", "ark,t:%s" % pair["new_txt"], pair["wspec"],
                  env={"PAUC_BACKEND_TEST_PAUSE_BEFORE_COMMIT": str(flag)})
    paused = flag.with_name("pause.paused")
    deadline = time.monotonic() + 120
    while not paused.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert paused.exists(), first.communicate()[1].decode()
    pid = int(paused.read_text())
    code, _, stderr = tool("copy-vectors", "ark,t:%s" % pair["old_txt"], pair["wspec"])
    assert code == 255
    lines = errors(stderr)
    assert len(lines) == 1 and "another run is writing it" in lines[0]
    assert "pid %d on host %s" % (pid, output_locks.host_name()) in lines[0]
    assert "copy-vectors ark,t:%s ark,scp:" % pair["new_txt"] in lines[0]
    assert read_pair(pair["scp"]) == (0, pair["old"])     # the paused run has not committed
    flag.with_name("pause.go").write_text("")
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err.decode()
    assert read_pair(pair["scp"]) == (0, pair["new"])
    assert sorted(os.listdir(pair["ark"].parent)) == ["x.ark", "x.scp"]


def test_racing_writers_never_leave_a_mixed_pair(pair):
    """Whatever the interleaving, every run either commits or stops with the lock's ERROR,
    and the pair read afterwards is exactly one run's values."""
    for race in range(4):
        runs = [start("copy-vectors", "ark,t:%s" % pair[name], pair["wspec"])
                for name in ("new_txt", "old_txt")]
        results = [(run.wait(timeout=120), run.stderr.read().decode()) for run in runs]
        for run in runs:
            run.stdout.close()
            run.stderr.close()
        assert any(code == 0 for code, _ in results), results
        for code, stderr in results:
            assert code == 0 or "another run is writing it" in stderr, stderr
        code, text = read_pair(pair["scp"])
        assert code == 0 and text in (pair["old"], pair["new"]), race


def test_a_symlink_fifo_or_directory_planted_as_a_lock_file_is_refused(pair, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    lock = output_locks.lock_path(str(pair["ark"]))
    before = files(pair["ark"].parent)
    for plant, why, unplant in (
            (lambda: os.symlink(victim, lock), "it is a symbolic link", os.unlink),
            (lambda: os.mkfifo(lock), "it is not a regular file", os.unlink),
            (lambda: os.mkdir(lock), "it is not a regular file", os.rmdir)):
        plant()
        code, _, stderr = tool("copy-vectors", "ark,t:%s" % pair["new_txt"], pair["wspec"])
        assert code == 255
        lines = errors(stderr)
        assert len(lines) == 1 and "Refused the lock file '%s': %s" % (lock, why) in lines[0]
        assert victim.read_text() == "keep me\n"
        unplant(lock)
        assert files(pair["ark"].parent) == before


def test_a_lock_file_left_by_a_killed_run_does_not_block(pair):
    lock = output_locks.lock_path(str(pair["ark"]))
    with open(lock, "wb") as stale:
        stale.write(RECORD)
    code, _, stderr = tool("copy-vectors", "ark,t:%s" % pair["new_txt"], pair["wspec"])
    assert code == 0, stderr
    assert read_pair(pair["scp"]) == (0, pair["new"])
    assert sorted(os.listdir(pair["ark"].parent)) == ["x.ark", "x.scp"]


def test_a_stale_lock_file_is_replaced_by_a_new_one_never_written_into(pair):
    """Issue 36 item 1: a lock file found there (here: left by a killed run) is only locked
    and read; the run that finds it free removes it and creates its own, so the old inode
    keeps its bytes (a descriptor kept open on it shows them)."""
    lock = output_locks.lock_path(str(pair["ark"]))
    with open(lock, "wb") as stale:
        stale.write(RECORD)
    with open(lock, "rb") as kept:
        code, _, stderr = tool("copy-vectors", "ark,t:%s" % pair["new_txt"], pair["wspec"])
        assert code == 0, stderr
        kept.seek(0)
        assert kept.read() == RECORD
    assert read_pair(pair["scp"]) == (0, pair["new"])
    assert sorted(os.listdir(pair["ark"].parent)) == ["x.ark", "x.scp"]


def test_a_free_lock_file_of_another_user_that_cannot_be_removed_is_refused(pair,
                                                                            monkeypatch):
    """A free lock file is taken over by removing it; one of another user that we may not
    remove (a sticky directory: simulated by another effective uid and an unlink that says
    EPERM, in this process only) is refused naming its owner, never locked or written."""
    lock = output_locks.lock_path(str(pair["ark"]))
    with open(lock, "wb") as stale:
        stale.write(RECORD)
    real_unlink = os.unlink

    def unlink(path, *args, **kwargs):
        if path == lock:
            raise PermissionError(1, "Operation not permitted", path)
        return real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(output_locks, "effective_uid", lambda: os.geteuid() + 1)
    monkeypatch.setattr(os, "unlink", unlink)
    with pytest.raises(KaldiError) as caught:
        output_locks.acquire([str(pair["ark"])])
    assert "Refused the lock file '%s': it belongs to user %d" % (lock, os.geteuid()) \
        in str(caught.value)
    assert open(lock, "rb").read() == RECORD and not output_locks.holds(str(pair["ark"]))


def test_a_hard_linked_lock_file_is_refused_and_the_linked_file_left_alone(pair, tmp_path):
    """Issue 36 item 1, the reproducer: ``ln victim.bin .x.ark.pauc-lock`` then a write of
    x.ark wrote its holder record into victim.bin (exit 0). Now: one ERROR, the victim and
    the outputs as they were."""
    victim = tmp_path / "victim.bin"
    victim.write_bytes(bytes(range(256)) * 8)
    lock = output_locks.lock_path(str(pair["ark"]))
    os.link(victim, lock)
    before = files(pair["ark"].parent)
    code, _, stderr = tool("copy-vectors", "ark,t:%s" % pair["new_txt"], pair["wspec"])
    assert code == 255, stderr
    lines = errors(stderr)
    assert len(lines) == 1 and "Refused the lock file '%s': it has 2 hard links" % lock \
        in lines[0], stderr
    assert victim.read_bytes() == bytes(range(256)) * 8
    assert files(pair["ark"].parent) == before


def test_a_read_finishing_a_journal_never_writes_through_a_hard_linked_lock(pair, tmp_path):
    """Issue 36 item 1: a plain read of a table with an incomplete journal beside it locks
    the table to remove the journal; with the lock name hard-linked to a file elsewhere it
    wrote into that file. Now: one ERROR naming the lock file, the file left alone."""
    ark, scp = str(pair["ark"]), str(pair["scp"])
    written = journal.write_set([(journal.temp_name(ark), ark, None, False),
                                 (journal.temp_name(scp), scp, None, True)], lambda: None)
    assert written == [journal.journal_path(scp), journal.journal_path(ark)]
    os.unlink(written[1])                 # a set cut while its journals were written
    victim = tmp_path / "victim.bin"
    victim.write_bytes(b"the victim's bytes\n" * 100)
    lock = output_locks.lock_path(scp)
    os.link(victim, lock)
    before = files(pair["ark"].parent)
    proc = run_tool("copy-vectors", "scp:%s" % scp, "ark,t:-")
    assert proc.returncode == 255
    lines = errors(proc.stderr.decode())
    assert len(lines) == 1 and "Refused the lock file '%s'" % lock in lines[0], lines
    assert victim.read_bytes() == b"the victim's bytes\n" * 100
    assert files(pair["ark"].parent) == before


def test_a_journal_waits_for_its_writer_only_while_the_writer_holds_the_lock(pair, monkeypatch):
    """A commit killed with its journals written (its pid is dead): redone once its lock is
    free, whatever pid its record names, refused with the holder's record while a run holds
    the lock (a run on another host, which kill(pid, 0) cannot see)."""
    proc = start("copy-vectors", "ark,t:%s" % pair["new_txt"], pair["wspec"],
                 env={"PAUC_BACKEND_TEST_SIGNAL_AFTER_STEPS": "2"})
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    journals = [journal.journal_path(str(pair[k])) for k in ("ark", "scp")]
    record = json.loads(open(journals[0]).read())
    record["holder"] = "pid 1 on host %s: init" % output_locks.host_name()   # alive
    for path in journals:
        with open(path, "w") as out:
            json.dump(record, out)
    monkeypatch.setattr(journal, "COMMIT_WAIT", 0.2)
    def unlocked():   # the files but the lock files (the killed run's, taken over)
        return {k: v for k, v in files(pair["ark"].parent).items()
                if not k.endswith(".pauc-lock")}
    before = unlocked()
    with holding(pair["ark"]):
        with pytest.raises(KaldiError) as caught:
            commit.finish_interrupted_commit(str(pair["scp"]))
    assert "another run is writing it" in str(caught.value)
    assert RECORD.decode().strip() in str(caught.value)
    assert unlocked() == before
    commit.finish_interrupted_commit(str(pair["scp"]))
    assert read_pair(pair["scp"]) == (0, pair["new"])


def test_a_model_directory_is_locked_while_it_is_written(tmp_path):
    from pauc_backend.persist.auto_backend import write_model_dir
    from pauc_backend.persist.auto_folds import write_fold_outputs
    model = tmp_path / "model"
    with holding(model):
        with pytest.raises(KaldiError) as caught:
            write_model_dir(str(model), None)
    assert "Cannot write '%s': another run is writing it" % model in str(caught.value)
    folds = tmp_path / "folds"
    folds.mkdir()
    with holding(folds / "stage1.fold2"):
        with pytest.raises(KaldiError) as caught:
            write_fold_outputs(str(folds), 1, [0, 1], [], ([], []), {})
    assert "another run is writing it" in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folds"]
    assert os.listdir(folds) == []


def test_parallel_fold_jobs_share_their_fold_directory(tmp_path):
    """Fold jobs run at the same time into one fold directory: each locks only its own
    stage<S>.fold<K> outputs, so none stops the other."""
    from pauc_backend.datasets import make_speaker_corpus
    from pauc_backend.kaldi_io import write_vector_table
    c = make_speaker_corpus(seed=5, dim=16, num_train_speakers=30, num_adapt_speakers=2,
                            num_eval_speakers=6, train_utts_range=(6, 12))
    write_vector_table("ark:%s" % (tmp_path / "train.ark"), c.train.keys, c.train.X)
    (tmp_path / "spk2utt").write_text("".join(
        "%s %s\n" % (s, " ".join(u)) for s, u in sorted(c.train.spk2utt().items())))
    folds = tmp_path / "folds"
    jobs = [start("train-pauc-auto", "--lda-dims=6,10", "--num-folds=3",
                  "--candidates=plda,cosine", "--num-jobs=1", "--fold-stage=1",
                  "--fold=%d" % job, "--fold-jobs=3", "ark:%s" % (tmp_path / "train.ark"),
                  "ark:%s" % (tmp_path / "spk2utt"), folds) for job in (1, 2, 3)]
    for job in jobs:
        _, err = job.communicate(timeout=600)
        assert job.returncode == 0, err.decode()
    assert sorted(os.listdir(folds)) == ["stage1.fold1", "stage1.fold2", "stage1.fold3"]


def test_train_pauc_auto_claims_its_model_directory_before_reading_its_input(tmp_path):
    """A second train-pauc-auto writing the same model directory stops at once (not after
    its cross-fitting, when it would commit): one ERROR naming the other run, the input never
    opened, the directory left as it was."""
    model = tmp_path / "model"
    with holding(model) as lock:
        code, _, stderr = tool("train-pauc-auto", "scp:%s" % (tmp_path / "missing.scp"),
                               "ark:%s" % (tmp_path / "spk2utt"), model)
        assert open(lock, "rb").read() == RECORD
    assert code == 255, stderr
    lines = errors(stderr)
    assert len(lines) == 1, stderr
    assert "Cannot write '%s': another run is writing it" % model in lines[0]
    assert "No such file" not in stderr and "Cannot open" not in stderr   # input unread
    assert sorted(p.name for p in tmp_path.iterdir()) == []
