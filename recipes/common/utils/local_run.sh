#!/usr/bin/env bash
# A minimal stand-in for Kaldi's utils/run.pl: runs a command, or an array of jobs, on this
# machine, with the same command line, log files and exit status. The recipes use it only
# when the Kaldi egs directory has no utils/run.pl (or no egs directory is given).
#
# Usage: local_run.sh [options] [JOB=1:N] <log-file> <command> [<args>...]
#  e.g.: local_run.sh JOB=1:4 exp/log/score.JOB.log score-plda-trials ... trials.JOB scores.JOB
#
# Every occurrence of the job variable (JOB above) in the log file name and in the command is
# replaced by the job number. The command line is joined and quoted like run.pl does and run by
# bash, so pipes inside quoted arguments behave as with run.pl. At most --max-jobs-run jobs run
# at once (default: the number of CPUs). Options of queue.pl/slurm.pl (--mem 4G, --num-threads
# 2, --gpu 0, ...) are accepted and ignored. Exit status 0 if every job succeeded, 1 otherwise.

max_jobs_run=$(nproc 2>/dev/null || echo 2)
while [ $# -gt 0 ]; do
  case "$1" in
    --max-jobs-run) max_jobs_run=$2; shift 2 ;;
    --max-jobs-run=*) max_jobs_run=${1#*=}; shift ;;
    -V) shift ;;
    --*=*) shift ;;
    --*) shift 2 ;;
    *) break ;;
  esac
done

job_var=
first=1
last=1
if [[ "${1:-}" =~ ^([A-Za-z_][A-Za-z0-9_]*)=([0-9]+):([0-9]+)$ ]]; then
  job_var=${BASH_REMATCH[1]}; first=${BASH_REMATCH[2]}; last=${BASH_REMATCH[3]}
  shift
elif [[ "${1:-}" =~ ^([A-Za-z_][A-Za-z0-9_]*)=([0-9]+)$ ]]; then
  job_var=${BASH_REMATCH[1]}; first=${BASH_REMATCH[2]}; last=$first
  shift
fi
if [ $# -lt 2 ]; then
  echo "Usage: $(basename "$0") [options] [JOB=1:N] <log-file> <command> [<args>...]" >&2
  exit 1
fi
if [ "$first" -gt "$last" ]; then
  echo "$(basename "$0"): empty job range $first:$last" >&2
  exit 1
fi
log_pattern=$1
shift

# Join the arguments as run.pl does: plain words as they are, words with a double quote in
# single quotes, every other word in double quotes.
cmd=
for arg in "$@"; do
  if [[ "$arg" =~ ^[^[:space:]]+$ ]]; then
    cmd+="$arg "
  elif [[ "$arg" == *\"* ]]; then
    cmd+="'$arg' "
  else
    cmd+="\"$arg\" "
  fi
done

status_dir=$(mktemp -d "${TMPDIR:-/tmp}/local_run.XXXXXX") || exit 1
trap 'rm -rf "$status_dir"' EXIT

run_job() {
  local id=$1 log=$log_pattern job_cmd=$cmd start end rc
  if [ -n "$job_var" ]; then
    log=${log//$job_var/$id}
    job_cmd=${cmd//$job_var/$id}
  fi
  mkdir -p "$(dirname "$log")" || { echo 1 > "$status_dir/$id"; return; }
  { echo "# $job_cmd"; echo "# Started at $(date)"; echo "#"; } > "$log"
  start=$(date +%s)
  bash -c "( $job_cmd ) 2>>'$log' >>'$log'"
  rc=$?
  end=$(date +%s)
  { echo "# Accounting: time=$((end - start)) threads=1"
    echo "# Ended (code $rc) at $(date), elapsed time $((end - start)) seconds"; } >> "$log"
  echo "$rc" > "$status_dir/$id"
}

running=0
for ((id = first; id <= last; id++)); do
  if [ "$running" -ge "$max_jobs_run" ]; then
    wait -n
    running=$((running - 1))
  fi
  run_job "$id" &
  running=$((running + 1))
done
wait

failed=0
failed_log=
for ((id = first; id <= last; id++)); do
  rc=$(cat "$status_dir/$id" 2>/dev/null || echo 1)
  if [ "$rc" != 0 ]; then
    failed=$((failed + 1))
    failed_log=${log_pattern//$job_var/$id}
    [ -z "$job_var" ] && failed_log=$log_pattern
  fi
done
if [ "$failed" -gt 0 ]; then
  if [ "$first" -eq "$last" ]; then
    echo "$(basename "$0"): job failed, log is in $failed_log" >&2
  else
    echo "$(basename "$0"): $failed / $((last - first + 1)) failed, log is in $failed_log" >&2
  fi
  exit 1
fi
exit 0
