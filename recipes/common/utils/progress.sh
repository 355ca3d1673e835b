# What a recipe is doing, on the terminal (stdout), while the tools' own output goes to the
# log files: each stage with its elapsed time, and a heartbeat for long steps. Source it:
#   . utils/progress.sh
#   stage_begin 3 "metrics"        # "run.sh: stage 3: metrics"
#   ...                            # the stage's steps (logs in exp/log)
#   stage_end                      # "run.sh: stage 3 done in 41 s (total 1:02)"
#   with_progress exp/log/x.log some-step args...   # runs the step; every $progress_interval
#        # seconds prints "run.sh:   x.log: 1:30 elapsed: <last line of the log>"
#   with_progress "exp/log/train_*.log" steps/train_metrics.sh ...  # a pattern: the log
#        # written last among those that match
__progress_script=$0
__progress_start=$(date +%s)
__stage_number=
__stage_start=
progress_interval=${progress_interval:-30}

__progress_clock() {  # <seconds> -> m:ss (or "N s" under a minute)
  if [ "$1" -lt 60 ]; then echo "$1 s"; else printf '%d:%02d\n' $(($1 / 60)) $(($1 % 60)); fi
}

stage_begin() {  # <number> <description...>
  __stage_number=$1
  shift
  __stage_start=$(date +%s)
  echo "$__progress_script: stage $__stage_number: $*"
}

stage_end() {
  local now
  now=$(date +%s)
  echo "$__progress_script: stage $__stage_number done in" \
    "$(__progress_clock $((now - __stage_start)))" \
    "(total $(__progress_clock $((now - __progress_start))))"
}

with_progress() {  # <log-or-pattern> <command> [<args>...]: the command's exit status
  local pattern=$1 log pid start last i
  shift
  start=$(date +%s)
  "$@" &
  pid=$!
  while true; do
    # Wake up every second so that a short step does not wait for the next tick.
    for ((i = 0; i < progress_interval; i++)); do
      kill -0 $pid 2>/dev/null || break 2
      sleep 1
    done
    log=$(ls -t $pattern 2>/dev/null | head -n 1)
    last=
    # The last line the tool wrote (not the "# ..." lines of the job runner).
    [ -n "$log" ] && last=$(grep -v '^#' "$log" 2>/dev/null | tail -n 1 | cut -c1-110)
    [ -n "$log" ] || log=$pattern
    echo "$__progress_script:   $(basename "$log"): $(__progress_clock $(($(date +%s) - start)))" \
      "elapsed${last:+: $last}"
  done
  wait $pid
}
