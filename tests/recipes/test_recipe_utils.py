"""The recipes' shell utilities: Kaldi-style option parsing and the run.pl-compatible job runner."""

import re
import subprocess

from conftest import REPO

UTILS = REPO / "recipes" / "common" / "utils"


def bash(script, *args, cwd=None):
    return subprocess.run(["bash", "-c", script, "script", *map(str, args)], cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


OPTIONS = """
stage=0
use_kaldi=auto
nj=1
flag=false
help_message="usage: demo"
. %s/parse_options.sh || exit 1
echo "stage=$stage use_kaldi=$use_kaldi nj=$nj flag=$flag args=$*"
""" % UTILS


def test_parse_options_sets_existing_variables_in_both_forms():
    proc = bash(OPTIONS, "--stage", "3", "--use-kaldi=false", "--flag", "true", "egs", "--x")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "stage=3 use_kaldi=false nj=1 flag=true args=egs --x"


def test_parse_options_rejects_unknown_options_and_non_boolean_values():
    proc = bash(OPTIONS, "--no-such-option", "1")
    assert proc.returncode == 1 and "--no-such-option" in proc.stderr and not proc.stdout
    proc = bash(OPTIONS, "--flag=maybe")
    assert proc.returncode == 1 and "true" in proc.stderr and not proc.stdout
    proc = bash(OPTIONS, "--nj")
    assert proc.returncode == 1 and "needs a value" in proc.stderr


def test_parse_options_reads_config_files_and_prints_help(tmp_path):
    config = tmp_path / "conf"
    config.write_text("nj=4\nstage=2\n")
    proc = bash(OPTIONS, "--config", config, "--stage=5")
    assert proc.stdout.strip() == "stage=5 use_kaldi=auto nj=4 flag=false args="
    proc = bash(OPTIONS, "--help")
    assert proc.returncode == 0 and proc.stdout.strip() == "usage: demo"


def test_local_run_substitutes_the_job_number_in_logs_and_commands(tmp_path):
    proc = bash('"$1"/local_run.sh JOB=1:3 log/echo.JOB.log echo "job JOB of 3" \\| tr a-z A-Z',
                UTILS, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for job in (1, 2, 3):
        lines = (tmp_path / "log" / ("echo.%d.log" % job)).read_text().splitlines()
        assert lines[0] == '# echo "job %d of 3" | tr a-z A-Z ' % job
        assert "JOB %d OF 3" % job in lines
        assert lines[-1].startswith("# Ended (code 0) at ")


def test_local_run_reports_failed_jobs_with_exit_status_1(tmp_path):
    proc = bash('"$1"/local_run.sh JOB=1:4 log/f.JOB.log test JOB -le 2', UTILS, cwd=tmp_path)
    assert proc.returncode == 1
    assert "2 / 4 failed" in proc.stderr
    assert (tmp_path / "log/f.3.log").read_text().splitlines()[-1].startswith("# Ended (code 1)")
    proc = bash('"$1"/local_run.sh --mem 4G log/single.log false', UTILS, cwd=tmp_path)
    assert proc.returncode == 1 and "job failed, log is in log/single.log" in proc.stderr


def most_at_once(events):
    """The largest number of jobs running at once, from 'JOB start|end NANOSECONDS' lines."""
    changes = sorted((int(t), 1 if what == "start" else -1)
                     for _, what, t in (line.split() for line in events))
    running = most = 0
    for _, step in changes:                 # an end before a start at the same nanosecond
        running += step
        most = max(most, running)
    return most


def run_recorded_jobs(tmp_path, max_jobs, num_jobs):
    """num_jobs jobs through local_run.sh, each writing its start and end time (ns) to one
    file and sleeping 0.5 s between them; the file's lines."""
    events = tmp_path / ("events%d" % max_jobs)
    command = ('echo "JOB start $(date +%%s%%N)" >> %s; sleep 0.5; '
               'echo "JOB end $(date +%%s%%N)" >> %s' % (events, events))
    proc = bash('"$1"/local_run.sh --max-jobs-run %d JOB=1:%d log/l.JOB.log bash -c "$2"'
                % (max_jobs, num_jobs), UTILS, command, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = events.read_text().splitlines()
    assert sorted(l.split()[:2] for l in lines) == sorted(
        [str(j), w] for j in range(1, num_jobs + 1) for w in ("start", "end")), lines
    return lines


def test_local_run_keeps_to_max_jobs_run(tmp_path):
    # every job's start and end is recorded: with --max-jobs-run 1 no two intervals overlap
    assert most_at_once(run_recorded_jobs(tmp_path, 1, 3)) == 1
    # the recorder sees overlaps: 3 jobs allowed at once do run together
    assert most_at_once(run_recorded_jobs(tmp_path, 3, 3)) >= 2


def test_evaluate_reports_pauc_as_na_when_the_band_holds_no_nontarget(tmp_path):
    from conftest import tool_env
    (tmp_path / "trials").write_text("a x1 target\na y1 nontarget\na y2 nontarget\n")
    (tmp_path / "scores").write_text("a x1 2\na y1 1\na y2 0.5\n")
    proc = subprocess.run(["bash", str(UTILS / "evaluate.sh"), str(tmp_path / "scores"),
                           str(tmp_path / "trials")], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=tool_env())
    assert proc.returncode == 0, proc.stderr
    assert "pAUC n/a" in proc.stdout.splitlines()
    assert "EER 0" in proc.stdout.splitlines()


PROGRESS = """
. %s/progress.sh || exit 1
progress_interval=1
stage_begin 3 "metrics: a b"
step() { printf 'LOG step one\n#\n' >> "$1"; sleep 2.5; echo "LOG step two" >> "$1"; return 7; }
with_progress "$1" step "$1"
echo "rc=$?"
stage_end
""" % UTILS


def test_progress_prints_stages_with_elapsed_time_and_a_heartbeat_from_the_log(tmp_path):
    """Recipes print each stage and, for long steps, the elapsed time and the last line the tool
    logged (not the job runner's "#" lines), while the step's exit status is kept (issue 10:
    recipes were silent for minutes)."""
    log = tmp_path / "step.log"
    proc = bash(PROGRESS, log)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "script: stage 3: metrics: a b"
    heartbeats = [l for l in lines if l.startswith("script:   step.log: ")]
    assert len(heartbeats) >= 2
    assert re.fullmatch(r"script:   step\.log: \d+ s elapsed: LOG step one", heartbeats[0])
    assert "rc=7" in lines
    done = re.fullmatch(r"script: stage 3 done in (\d+) s \(total (\d+) s\)", lines[-1])
    assert done and 2 <= int(done.group(1)) <= int(done.group(2))   # the step slept 2.5 s
