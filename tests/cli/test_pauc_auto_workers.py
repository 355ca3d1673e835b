"""train-pauc-auto with --num-jobs 2 ends quietly (issue 17): pool workers used to inherit the
tool's SIGTERM handler, so the SIGTERM with which multiprocessing stops them printed a Python
traceback, in successful runs too. Every run here, finished or interrupted, must end without a
traceback, leave no temporary file and no partial model directory, and an interrupted one
must exit by its signal as every tool does (tests/cli/test_process_state.py)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import BIN, tool_env

FAST = ["--num-jobs=2", "--num-iters=60", "--batch-size=50", "--lda-dims=20",
        "--num-folds=3", "--print-args=false"]


def command(golden, out):
    return [sys.executable, str(BIN / "train-pauc-auto"), *FAST,
            "scp:%s" % (golden / "data/train/xvector.scp"),
            "ark:%s" % (golden / "data/train/spk2utt"), str(out)]


def test_repeated_parallel_runs_print_no_traceback(golden, tmp_path):
    for run in range(3):
        out = tmp_path / ("model%d" % run)
        proc = subprocess.run(command(golden, out), cwd=golden, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=tool_env())
        err = proc.stderr.decode()
        assert proc.returncode == 0, err
        assert "Traceback" not in err and "Terminated" not in err, err
        assert (out / "system.txt").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model0", "model1", "model2"]


# Before this fix: SIGTERM 2 s into the folds gave 2 worker tracebacks; SIGINT to the group
# there gave 2 tracebacks and a parent that hung for ever (its workers died of
# KeyboardInterrupt under a pool waiting for their results).
# (signal, whom: the tool alone or its whole process group as a terminal's Ctrl-C or a job
# scheduler does, the stderr text after which it is sent: while the folds' pool works, while
# the final back-end's metric pool works)
MOMENTS = [("SIGTERM", "pid", "Cross-fitting:"), ("SIGTERM", "group", "Cross-fitting:"),
           ("SIGINT", "group", "Cross-fitting:"), ("SIGTERM", "pid", "Chose "),
           ("SIGINT", "group", "Chose ")]


@pytest.mark.parametrize("name,whom,after", MOMENTS)
def test_an_interrupt_ends_quietly_and_leaves_nothing(golden, tmp_path, name, whom, after):
    out = tmp_path / "model"
    proc = subprocess.Popen(command(golden, out), cwd=golden, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=tool_env(), start_new_session=True)
    seen = []
    try:
        for raw in proc.stderr:
            seen.append(raw.decode())
            if after in seen[-1]:
                break
        if after == "Cross-fitting:":
            time.sleep(2)     # let the folds' workers get to work (not a timing assertion)
        signum = getattr(signal, name)
        if whom == "group":
            os.killpg(proc.pid, signum)
        else:
            os.kill(proc.pid, signum)
        rest = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = "".join(seen) + rest
    assert any(after in line for line in seen), err        # the moment was reached
    assert "Traceback" not in err, err
    assert code == (130 if name == "SIGINT" else -signal.SIGTERM), (code, err)
    assert list(tmp_path.iterdir()) == [], err              # no model dir, no temporary file
    # and no worker outlives the tool
    leftover = subprocess.run(["pgrep", "-s", str(proc.pid)], stdout=subprocess.PIPE)
    assert leftover.stdout == b"", leftover.stdout
