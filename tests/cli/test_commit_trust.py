"""Issue 26 item 1: the commit journal of a table in a shared directory is redone only when it
is provably ours; a crafted or altered journal, a foreign or symlinked temp file gets one
ERROR naming the journal and nothing is touched. Item 5: a SIGKILL after any change of a
commit leaves the complete old or the complete new table, and no journal that later opens do
not find.

Genuine interrupted commits come from a real run killed by the commit's test hook
(``PAUC_BACKEND_TEST_SIGNAL_AFTER_STEPS=N``: SIGKILL after the N-th change of a file), in a
subprocess started through tests/hooked_tool.py. "Another user" is simulated without root by giving the journal module another
effective uid (or another owner for one inode) in this process only, through monkeypatch.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BIN, run_tool, tool_argv, tool_env

from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import commit, journal

KALDI_COPY_VECTOR = Path(os.environ.get("PAUC_KALDI_ROOT") or
                         os.path.expanduser("~/.cache/pauc-backend/kaldi-ref")) / "bin/copy-vector"


def text_archive(path, sign, num=50, dim=2):
    path.write_text("".join("utt%04d  [ %s ]\n" % (i, " ".join(
        "%d" % (sign * (i * dim + j + 1)) for j in range(dim))) for i in range(num)))
    return path.read_text()


def tool(*args, env=None):
    full_env = tool_env()
    full_env.update(env or {})
    return subprocess.run(tool_argv(*args, env=env),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env)


def read_pair(scp):
    proc = run_tool("copy-vectors", "scp:%s" % scp, "ark,t:-")
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def errors(stderr):
    return [line for line in stderr.splitlines() if line.startswith("ERROR")]


def snapshot(folder):
    """Every file under ``folder`` (names and bytes), links as their target string."""
    found = {}
    for path in sorted(Path(folder).rglob("*")):
        if path.is_symlink():
            found[str(path)] = "-> " + os.readlink(path)
        elif path.is_file():
            found[str(path)] = path.read_bytes()
    return found


@pytest.fixture
def shared(tmp_path):
    """A shared folder with a table x.ark/x.scp (old values), a victim's folder elsewhere,
    and a text archive of new values."""
    folder, victim = tmp_path / "shared", tmp_path / "victim"
    folder.mkdir()
    victim.mkdir()
    (victim / "v.txt").write_text("the victim's file\n")
    old = text_archive(tmp_path / "old.txt", 1)
    new = text_archive(tmp_path / "new.txt", -1)
    ark, scp = folder / "x.ark", folder / "x.scp"
    tool("copy-vectors", "ark,t:%s" % (tmp_path / "old.txt"), "ark,scp:%s,%s" % (ark, scp))
    return {"dir": folder, "victim": victim, "ark": ark, "scp": scp, "old": old, "new": new,
            "new_txt": tmp_path / "new.txt", "wspec": "ark,scp:%s,%s" % (ark, scp),
            "root": tmp_path}


def interrupted(shared):
    """A genuine commit of the new values killed once both journals are written (nothing
    renamed yet): its journals (ark's, scp's) and temp files (ark's, scp's)."""
    proc = tool("copy-vectors", "ark,t:%s" % shared["new_txt"], shared["wspec"],
                env={"PAUC_BACKEND_TEST_SIGNAL_AFTER_STEPS": "2"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    journals = [Path(journal.journal_path(str(shared[k]))) for k in ("ark", "scp")]
    assert all(j.is_file() for j in journals)
    record = json.loads(journals[0].read_text())
    temps = [Path(step[0]) for step in record["steps"]]
    assert [Path(step[1]) for step in record["steps"]] == [shared["ark"], shared["scp"]]
    assert all(t.is_file() for t in temps)
    return journals, temps, record


def rewrite(journals, record):
    data = json.dumps(record)
    for path in journals:
        path.write_text(data)


def assert_refused(shared, before, *words):
    with pytest.raises(KaldiError) as caught:
        commit.finish_interrupted_commit(str(shared["scp"]))
    message = str(caught.value)
    assert "Refused the commit journal '%s'" % journal.journal_path(str(shared["scp"])) \
        in message
    assert "Nothing was changed" in message
    for word in words:
        assert word in message, message
    assert snapshot(shared["root"]) == before
    return message


# -- a crafted journal (the reproducer) ---------------------------------------------------

@pytest.mark.parametrize("in_place", [False, True])
def test_a_planted_journal_naming_other_files_is_refused_by_a_plain_read(shared, in_place):
    attacker = shared["dir"] / "attacker.txt"
    attacker.write_text("the attacker's content\n")
    victim = shared["victim"] / "v.txt"
    planted = Path(journal.journal_path(str(shared["scp"])))
    planted.write_text(json.dumps({"pid": 999999, "steps": [[str(attacker), str(victim),
                                                             in_place]]}))
    before = snapshot(shared["root"])
    proc = tool("copy-vectors", "scp:%s" % shared["scp"], "ark:/dev/null")
    assert proc.returncode == 255
    lines = errors(proc.stderr.decode())
    assert len(lines) == 1 and str(planted) in lines[0], proc.stderr.decode()
    assert "not a journal this program writes" in lines[0]
    assert "Traceback" not in proc.stderr.decode()
    assert snapshot(shared["root"]) == before


def test_a_deeply_nested_journal_is_refused_as_a_journal_not_an_internal_error(shared):
    """Issue 36 item 4: JSON nested past Python's recursion limit gave "RecursionError
    (internal error)"; it is a journal this program does not write."""
    planted = Path(journal.journal_path(str(shared["scp"])))
    planted.write_bytes(b"[" * 200000 + b"]" * 200000)
    before = snapshot(shared["root"])
    proc = tool("copy-vectors", "scp:%s" % shared["scp"], "ark:/dev/null")
    assert proc.returncode == 255
    lines = errors(proc.stderr.decode())
    assert len(lines) == 1 and "Refused the commit journal '%s'" % planted in lines[0]
    assert "not a journal this program writes" in lines[0]
    assert "internal error" not in proc.stderr.decode()
    assert snapshot(shared["root"]) == before


def test_a_journal_naming_a_live_pid_and_no_step_is_refused_at_once(shared):
    """It blocked every reader and writer for 60 s (liveness was kill(pid, 0)); now whether
    its writer runs is the lock's business, and a journal with no step for the file it is
    beside is not ours."""
    planted = Path(journal.journal_path(str(shared["scp"])))
    planted.write_text('{"pid":1,"steps":[]}')
    before = snapshot(shared["root"])
    for args in (["scp:%s" % shared["scp"], "ark:/dev/null"],
                 ["ark,t:%s" % shared["new_txt"], shared["wspec"]]):
        proc = subprocess.run([sys.executable, str(BIN / "copy-vectors"), *args],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(),
                              timeout=50)
        assert proc.returncode == 255
        lines = errors(proc.stderr.decode())
        assert len(lines) == 1 and str(planted) in lines[0]
        assert "committing" not in lines[0]
        assert snapshot(shared["root"]) == before


# -- a genuine interrupted commit, altered ------------------------------------------------------

def test_a_genuine_interrupted_commit_is_finished(shared):
    interrupted(shared)
    code, text, stderr = read_pair(shared["scp"])
    assert (code, text) == (0, shared["new"])
    assert "Finished the commit of '%s', '%s'" % (shared["ark"], shared["scp"]) in stderr
    assert sorted(p.name for p in shared["dir"].iterdir()) == ["x.ark", "x.scp"]


def test_a_journal_of_another_user_is_refused(shared, monkeypatch):
    interrupted(shared)
    before = snapshot(shared["root"])
    monkeypatch.setattr(journal, "effective_uid", lambda: os.geteuid() + 1)
    message = assert_refused(shared, before, "belongs to user %d, not to you (user %d)" % (
        os.geteuid(), os.geteuid() + 1))
    assert "If no run of yours was killed" in message


def test_a_temp_file_of_another_user_is_refused(shared, monkeypatch):
    _, temps, _ = interrupted(shared)
    before = snapshot(shared["root"])
    foreign = os.lstat(temps[1]).st_ino
    monkeypatch.setattr(journal, "ours", lambda info: info.st_ino != foreign)
    assert_refused(shared, before, "the temp file '%s' belongs to user" % temps[1])


@pytest.mark.parametrize("which", ["journal", "temp"])
def test_a_symlinked_journal_or_temp_file_is_refused_not_followed(shared, which):
    journals, temps, _ = interrupted(shared)
    link = journals[1] if which == "journal" else temps[0]
    aside = shared["victim"] / "aside"
    os.rename(link, aside)
    os.symlink(aside, link)
    before = snapshot(shared["root"])
    assert_refused(shared, before, "'%s' is a symbolic link" % link)
    assert aside.is_file()


@pytest.mark.parametrize("which", [0, 1])
def test_a_hard_linked_journal_is_refused_even_beside_the_other_target(shared, which):
    """A hard link (another name, maybe in another user's folder) to one journal of the set:
    it cannot be told from a planted one, and treating it as missing would abandon a
    complete set half done - refused, nothing touched."""
    journals, _, _ = interrupted(shared)
    os.link(journals[which], shared["victim"] / "link")
    before = snapshot(shared["root"])
    assert_refused(shared, before, "'%s' has 2 hard links" % journals[which])


def test_a_journal_writable_by_others_is_refused(shared):
    journals, _, _ = interrupted(shared)
    os.chmod(journals[1], 0o664)
    before = snapshot(shared["root"])
    assert_refused(shared, before, "writable by other users")


@pytest.mark.parametrize("change", ["temp_of_another_target", "temp_in_another_folder",
                                    "relative_target", "dotdot_target", "not_our_name"])
def test_steps_that_are_not_a_targets_own_temp_file_are_refused(shared, change):
    journals, temps, record = interrupted(shared)
    steps = record["steps"]
    if change == "temp_of_another_target":      # the ark's temp renamed onto the script
        steps[1][0] = steps[0][0]
    elif change == "temp_in_another_folder":
        steps[1][0] = str(shared["victim"] / Path(steps[1][0]).name)
    elif change == "relative_target":
        steps[1][1] = "shared/x.scp"
    elif change == "dotdot_target":
        steps[1][1] = str(shared["dir"] / ".." / "shared" / "x.scp")
    else:
        steps[1][0] = str(shared["dir"] / ".x.scp.pauc-123-abcdef.tmp")
    rewrite(journals, record)
    before = snapshot(shared["root"])
    assert_refused(shared, before)


def test_a_journal_naming_a_target_elsewhere_renames_nothing(shared):
    """Both journals of the pair (ours in every check) also name a file in the victim's
    folder, with a temp file of ours there: no journal beside that target, so the set is
    incomplete - nothing is renamed anywhere and the pair stays old."""
    journals, temps, record = interrupted(shared)
    victim = shared["victim"] / "v.txt"
    bait = Path(journal.temp_name(str(victim)))
    bait.write_text("the attacker's content\n")
    record["steps"].insert(0, [str(bait), str(victim), None, False])
    rewrite(journals, record)
    code, text, _ = read_pair(shared["scp"])
    assert (code, text) == (0, shared["old"])
    assert victim.read_text() == "the victim's file\n" and bait.is_file()
    assert not any(j.exists() for j in journals)


def test_journals_that_differ_between_targets_rename_nothing(shared):
    journals, _, record = interrupted(shared)
    record["holder"] = "someone else"
    journals[0].write_text(json.dumps(record))    # the ark's journal no longer matches
    code, text, _ = read_pair(shared["scp"])
    assert (code, text) == (0, shared["old"])


def test_a_target_replaced_before_an_in_place_redo_is_refused(shared, tmp_path):
    """A hard-linked target is rewritten in place (its inode keeps every name); if another
    file has taken its name since, the redo would write into that file: refused."""
    os.link(shared["ark"], tmp_path / "other_name.ark")
    proc = tool("copy-vectors", "ark,t:%s" % shared["new_txt"], shared["wspec"],
                env={"PAUC_BACKEND_TEST_SIGNAL_AFTER_STEPS": "2"})
    assert proc.returncode == -signal.SIGKILL
    os.unlink(shared["ark"])
    shared["ark"].write_bytes(b"another file now\n")
    before = snapshot(shared["root"])
    assert_refused(shared, before, "no longer the file the run rewrote in place")


def test_an_in_place_step_through_a_planted_hard_link_is_not_redone_by_a_read(shared):
    """Issue 36 item 2, the reproducer: a journal (ours in every check, the same bytes beside
    both targets) whose in-place step names a hard link in the table's folder to a file
    elsewhere, with a temp file of ours: a read of the table copied the temp into that file.
    Now a read refuses it (one ERROR naming the journal), and nothing changes anywhere."""
    victim = shared["victim"] / "v.txt"
    link = shared["dir"] / "link.txt"
    os.link(victim, link)
    bait = Path(journal.temp_name(str(link)))
    bait.write_text("the attacker's content\n")
    info = os.lstat(link)
    scp = str(shared["scp"])
    journal.write_set([(str(bait), str(link), (info.st_dev, info.st_ino), False),
                       (journal.temp_name(scp), scp, None, True)], lambda: None)
    before = snapshot(shared["root"])
    for args in (["scp:%s" % scp, "ark,t:-"], ["ark,t:%s" % shared["new_txt"], "ark:" + scp]):
        proc = tool("copy-vectors", *args)
        assert proc.returncode == 255, proc.stderr.decode()
        lines = errors(proc.stderr.decode())
        assert len(lines) == 1, proc.stderr.decode()
        assert "Refused the commit journal '%s'" % journal.journal_path(scp) in lines[0]
        assert "rewrites '%s' in place" % link in lines[0]
        assert victim.read_text() == "the victim's file\n"
        assert snapshot(shared["root"]) == before


def test_an_interrupted_in_place_commit_is_left_to_the_rerun_of_its_writer(shared, tmp_path):
    """A genuine commit of a hard-linked archive (rewritten in place) killed with its
    journals written: a read does not finish it (one ERROR, the other name unchanged); the
    rerun of the killed command, which writes that archive, finishes it and commits anew."""
    other = tmp_path / "other_name.ark"
    os.link(shared["ark"], other)
    old_bytes = other.read_bytes()
    proc = tool("copy-vectors", "ark,t:%s" % shared["new_txt"], shared["wspec"],
                env={"PAUC_BACKEND_TEST_SIGNAL_AFTER_STEPS": "2"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    code, _, stderr = read_pair(shared["scp"])
    assert code == 255 and len(errors(stderr)) == 1, stderr
    assert "rewrites '%s' in place" % shared["ark"] in stderr
    assert other.read_bytes() == old_bytes
    proc = tool("copy-vectors", "ark,t:%s" % shared["new_txt"], shared["wspec"])
    assert proc.returncode == 0, proc.stderr.decode()
    assert "Finished the commit" in proc.stderr.decode()
    assert read_pair(shared["scp"])[:2] == (0, shared["new"])
    assert other.read_bytes() == shared["ark"].read_bytes() and os.stat(other).st_nlink == 2
    assert sorted(os.listdir(shared["dir"])) == ["x.ark", "x.scp"]


# -- stale temp files -------------------------------------------------------------------------

def write_new_pair(shared):
    proc = tool("copy-vectors", "ark,t:%s" % shared["new_txt"], shared["wspec"])
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stderr.decode()


def test_a_stale_temp_of_another_host_is_removed_by_the_lock_holder(shared):
    stale = shared["dir"] / (".x.ark.pauc-4242@otherhost-%s.tmp" % ("0" * 16))
    stale.write_bytes(b"half")
    stderr = write_new_pair(shared)
    assert not stale.exists()
    assert "Removed '%s', a temporary file left by process 4242 on host otherhost" % stale \
        in stderr


def test_what_looks_like_a_stale_temp_but_is_not_ours_is_left_alone(shared, monkeypatch):
    """A symlink with our temp name is not followed nor removed; neither is a file of another
    user; a temp of a live process of this host stays."""
    target = shared["victim"] / "v.txt"
    link = shared["dir"] / (".x.ark.pauc-%d@otherhost-%s.tmp" % (99999, "1" * 16))
    os.symlink(target, link)
    foreign = shared["dir"] / (".x.scp.pauc-99998@otherhost-%s.tmp" % ("2" * 16))
    foreign.write_bytes(b"theirs")
    live = Path(journal.temp_name(str(shared["ark"])))     # this (live) process, this host
    live.write_bytes(b"busy")
    monkeypatch.setattr(journal, "ours", lambda info: info.st_ino != os.lstat(foreign).st_ino)
    from pauc_backend.kaldi_io import read_vector_table, write_vector_table
    keys, X = read_vector_table("ark,t:%s" % shared["new_txt"])
    write_vector_table(shared["wspec"], keys, X)
    assert link.is_symlink() and target.read_text() == "the victim's file\n"
    assert foreign.read_bytes() == b"theirs" and live.read_bytes() == b"busy"


# -- a SIGKILL after every change of a commit (item 5) ------------------------------------------

def kaldi_read_pair(scp):
    if not os.access(KALDI_COPY_VECTOR, os.X_OK):
        return None
    proc = subprocess.run([str(KALDI_COPY_VECTOR), "scp:%s" % scp, "ark,t:-"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc.returncode, proc.stdout.decode()


def test_a_sigkill_after_any_change_of_a_pair_commit_leaves_old_or_new(shared):
    """Changes of an ark,scp commit: 1-2 journals written, 3 old script removed, 4-5
    renames, 6-7 journals removed. Killed after the first, the set of journals is incomplete:
    the old pair stays; after any later one the next read finishes it (real Kaldi, which
    knows no journal, reads the old pair, no script, or the new pair). No journal survives
    that read; the next writer removes the killed run's temps and lock files."""
    for after in range(1, 8):
        tool("copy-vectors", "ark,t:%s" % (shared["root"] / "old.txt"), shared["wspec"])
        proc = tool("copy-vectors", "ark,t:%s" % shared["new_txt"], shared["wspec"],
                    env={"PAUC_BACKEND_TEST_SIGNAL_AFTER_STEPS": str(after)})
        assert proc.returncode == -signal.SIGKILL, after
        expected = shared["old"] if after == 1 else shared["new"]
        kaldi = kaldi_read_pair(shared["scp"])   # knows no journal: old, no script, or new
        if kaldi is not None:
            assert (kaldi[0] == 0) == (after not in (3, 4)), after
            assert kaldi[0] != 0 or kaldi[1] == (shared["old"] if after < 3 else
                                                 shared["new"]), after
        assert read_pair(shared["scp"])[:2] == (0, expected), after
        assert not [p for p in os.listdir(shared["dir"]) if p.endswith(".pauc-commit")], after
        assert kaldi_read_pair(shared["scp"]) in (None, (0, expected)), after
        write_new_pair(shared)
        assert sorted(os.listdir(shared["dir"])) == ["x.ark", "x.scp"], after


def test_a_sigkill_after_any_change_of_two_outputs_leaves_both_old_or_both_new(tmp_path):
    (tmp_path / "spk2utt").write_text("a utt0000 utt0001\nb utt0002\n")
    text_archive(tmp_path / "x.txt", 1, num=3)
    means, counts = tmp_path / "spk.ark", tmp_path / "num_utts.ark"
    args = ["compute-vector-mean", "ark:%s" % (tmp_path / "spk2utt"),
            "ark,t:%s" % (tmp_path / "x.txt"), "ark,t:%s" % means, "ark,t:%s" % counts]
    assert tool(*args).returncode == 0
    old = (means.read_text(), counts.read_text())
    (tmp_path / "spk2utt").write_text("a utt0000\nb utt0001 utt0002\n")
    assert tool(*args).returncode == 0
    new = (means.read_text(), counts.read_text())
    assert old[1] != new[1] and old[0] != new[0]
    for after in range(1, 7):    # 2 journals, 2 renames, 2 journals removed
        (tmp_path / "spk2utt").write_text("a utt0000 utt0001\nb utt0002\n")
        assert tool(*args).returncode == 0
        (tmp_path / "spk2utt").write_text("a utt0000\nb utt0001 utt0002\n")
        proc = tool(*args, env={"PAUC_BACKEND_TEST_SIGNAL_AFTER_STEPS": str(after)})
        assert proc.returncode == -signal.SIGKILL
        reread = run_tool("copy-vectors", "ark,t:%s" % means, "ark,t:-")
        assert reread.returncode == 0
        assert (means.read_text(), counts.read_text()) == (old if after == 1 else new), after
