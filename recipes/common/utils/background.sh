# Run recipe steps in the background, at most $nj at once (source this file; needs $nj):
#   background $train_cmd exp/log/a.log some-tool ...
#   background $train_cmd exp/log/b.log other-tool ...
#   wait_background || exit 1      # waits for all; fails if any step failed
__bg_pids=()
__bg_failed=false
background() {
  "$@" &
  __bg_pids+=($!)
  if [ ${#__bg_pids[@]} -ge "${nj:-1}" ]; then
    wait ${__bg_pids[0]} || __bg_failed=true
    __bg_pids=("${__bg_pids[@]:1}")
  fi
}
wait_background() {
  local pid failed
  for pid in "${__bg_pids[@]}"; do wait $pid || __bg_failed=true; done
  failed=$__bg_failed
  __bg_pids=()
  __bg_failed=false
  ! $failed
}
