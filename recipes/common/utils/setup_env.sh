# Sourced by recipes/sre16/run.sh and recipes/sitw/run.sh from inside the Kaldi egs directory,
# after its cmd.sh and path.sh. Needs $use_kaldi and $nj. Sets:
#   * PATH: our tools, this checkout's bin/ first (the code beside the recipe: an older
#     `pip install` elsewhere must not shadow it), else the installed console scripts;
#   * train_cmd: the egs directory's (run.pl/queue.pl/slurm.pl), else utils/run.pl, else our
#     local_run.sh;
#   * the baseline binaries: Kaldi's (ivector-*, transform-vec, compute-eer) when use_kaldi is
#     true (auto: when they are on PATH), our twins otherwise;
# and defines split_trials, merge_scores, evaluate and system_label.

__common_utils=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")

if [ -x "$__common_utils/../../../bin/train-pauc-metric" ]; then
  PATH="$(cd "$__common_utils/../../../bin" && pwd):$PATH"
  export PATH
elif ! command -v train-pauc-metric >/dev/null 2>&1; then
  echo "$0: the pauc-backend tools are not on PATH (pip install pauc-backend)" >&2
  return 1
fi
export LC_ALL=C

# The job runner. Kaldi's cmd.sh names run.pl/queue.pl/slurm.pl, found through path.sh's
# $PWD/utils; without them we run the jobs locally.
train_cmd=${train_cmd:-run.pl}
__cmd_bin=${train_cmd%% *}
if ! command -v "$__cmd_bin" >/dev/null 2>&1; then
  if [ -x "utils/$__cmd_bin" ]; then
    train_cmd="utils/$train_cmd"
  elif [ -x utils/run.pl ]; then
    echo "$0: $__cmd_bin not found, using utils/run.pl" >&2
    train_cmd=utils/run.pl
  else
    train_cmd="$__common_utils/local_run.sh"
  fi
fi

case "$use_kaldi" in
  auto)
    use_kaldi=true
    for __bin in ivector-mean ivector-subtract-global-mean transform-vec ivector-normalize-length \
                 ivector-compute-lda ivector-compute-plda ivector-adapt-plda ivector-copy-plda \
                 ivector-plda-scoring compute-eer; do
      command -v $__bin >/dev/null 2>&1 || use_kaldi=false
    done
    ;;
  true)
    for __bin in ivector-mean ivector-compute-plda ivector-plda-scoring compute-eer; do
      if ! command -v $__bin >/dev/null 2>&1; then
        echo "$0: --use-kaldi=true but $__bin is not on PATH (source Kaldi's path.sh)" >&2
        return 1
      fi
    done
    ;;
  false) ;;
  *)
    echo "$0: --use-kaldi must be auto, true or false, got '$use_kaldi'" >&2
    return 1
    ;;
esac
if $use_kaldi; then
  ivector_mean=ivector-mean
  subtract_mean=ivector-subtract-global-mean
  transform_vec=transform-vec
  normalize_length=ivector-normalize-length
  compute_lda=ivector-compute-lda
  compute_plda=ivector-compute-plda
  adapt_plda=ivector-adapt-plda
  copy_plda=ivector-copy-plda
  plda_scoring=ivector-plda-scoring
  compute_eer=compute-eer
else
  ivector_mean=compute-vector-mean
  subtract_mean=subtract-vector-mean
  transform_vec=transform-vectors
  normalize_length=normalize-vector-length
  compute_lda=train-lda
  compute_plda=train-plda
  adapt_plda=adapt-plda
  copy_plda=copy-plda
  plda_scoring=score-plda-trials
  compute_eer=compute-eer-pauc
fi
echo "$0: baseline binaries: $($use_kaldi && echo Kaldi || echo pauc-backend); jobs: $train_cmd; nj=$nj"

if ! [ "$nj" -ge 1 ] 2>/dev/null; then
  echo "$0: --nj must be a positive integer, got '$nj'" >&2
  return 1
fi

# split_trials <trials> <dir> [<enroll-keys> <test-keys>]: <dir>/trials.1 .. trials.$nj,
# contiguous parts of the first two columns (what the scoring tools read), in order. With the two
# key files (first field = a key that has a vector: num_utts.ark, an scp), trials with an unknown
# key are left out first, as the scorers skip them anyway: the merged scores are those of --nj 1,
# and no part can hold only unknown keys (a scorer fails when it can score no trial).
split_trials() {
  local trials=$1 dir=$2 enroll_keys=${3:-} test_keys=${4:-} lines all
  [ -s "$trials" ] || { echo "$0: no trials in $trials" >&2; return 1; }
  mkdir -p "$dir" || return 1
  rm -f "$dir"/trials.*
  if [ -n "$enroll_keys" ]; then
    [ -f "$enroll_keys" ] && [ -f "$test_keys" ] ||
      { echo "$0: missing $enroll_keys or $test_keys" >&2; return 1; }
    awk -v ek="$enroll_keys" -v tk="$test_keys" '
      BEGIN { while ((getline l < ek) > 0) { split(l, f); enroll[f[1]] }
              close(ek)   # the two may be one file (VoxCeleb: both sides from one table)
              while ((getline l < tk) > 0) { split(l, f); test[f[1]] } }
      ($1 in enroll) && ($2 in test) { print $1, $2 }' "$trials" > "$dir/known" || return 1
    all=$(wc -l < "$trials")
    lines=$(wc -l < "$dir/known")
    [ "$lines" -lt "$all" ] && echo "$0: $((all - lines)) of the $all trials in $trials" \
      "have a key with no vector in $enroll_keys or $test_keys; they are not scored" >&2
    [ "$lines" -gt 0 ] || { echo "$0: no trial in $trials has both keys" >&2; return 1; }
  else
    awk '{ print $1, $2 }' "$trials" > "$dir/known" || return 1
    lines=$(wc -l < "$dir/known")
  fi
  if [ "$nj" -gt "$lines" ]; then
    echo "$0: --nj $nj is more than the $lines trials in $trials" >&2
    return 1
  fi
  awk -v nj="$nj" -v n="$lines" -v dir="$dir" \
    '{ print > (dir "/trials." (int((NR - 1) * nj / n) + 1)) }' "$dir/known"
}

# merge_scores <dir> <scores-out> [<name>]: concatenate <dir>/scores[_<name>].1 .. $nj.
merge_scores() {
  local dir=$1 out=$2 part=$1/scores${3:+_$3} j
  for j in $(seq "$nj"); do
    [ -f "$part.$j" ] || { echo "$0: missing $part.$j" >&2; return 1; }
  done
  for j in $(seq "$nj"); do cat "$part.$j"; done > "$out.tmp" && mv "$out.tmp" "$out"
}

# system_label <system>: the paper's name of a system (one table of names: labels.sh).
. "$__common_utils/labels.sh" || return 1
system_label() { label_of "$@"; }

# evaluate <scores> <trials>: "EER% minDCF(0.01) minDCF(0.001) pAUC[0,0.01]" on one line, as the
# recipes print them: EER as compute-eer (%.4g), minDCF as sid/compute_min_dcf.py (%.4f), pAUC
# %.4f. With Kaldi, its compute-eer and compute_min_dcf.py give the first three; otherwise a
# single compute-eer-pauc call gives all four.
evaluate() {
  local scores=$1 trials=$2 values
  values=$(_evaluate "$@") && [ $(echo $values | wc -w) -eq 4 ] || {
    echo "$0: evaluating $scores on $trials failed" >&2
    return 1
  }
  echo $values
}
_evaluate() {
  local scores=$1 trials=$2 eer mindcf1 mindcf2 pauc
  if $use_kaldi; then
    # "score target|nontarget" lines joined by key (not by line, so that a trial that could
    # not be scored does not shift the labels).
    eer=$(awk 'NR == FNR { label[$1 " " $2] = $3; next }
               ($1 " " $2) in label { print $3, label[$1 " " $2] }' "$trials" "$scores" |
          compute-eer - 2>/dev/null) || return 1
    if [ -x sid/compute_min_dcf.py ]; then
      mindcf1=$(sid/compute_min_dcf.py --p-target 0.01 "$scores" "$trials" 2>/dev/null) &&
        mindcf2=$(sid/compute_min_dcf.py --p-target 0.001 "$scores" "$trials" 2>/dev/null) || return 1
    fi
  fi
  # --allow-partial: trials with a key that has no vector were announced by split_trials and
  # not scored, as in Kaldi's egs (compute-eer and compute_min_dcf.py take the scored ones)
  compute-eer-pauc --allow-partial --report=json --p-target=0.01,0.001 "$scores" "$trials" \
    2>/dev/null |
    python3 -c '
import json, sys
r = json.load(sys.stdin)
dcf = {d["p_target"]: d["min_dcf"] for d in r["min_dcf"]}
given = sys.argv[1:]
print(given[0] if given[0] else "%.4g" % (100 * r["eer"]),
      given[1] if given[1] else "%.4f" % dcf[0.01],
      given[2] if given[2] else "%.4f" % dcf[0.001],
      "%.4f" % r["pauc"])' "$eer" "$mindcf1" "$mindcf2"
}

# _table_column <column> <compute-eer-pauc arguments...>: one column of --report=table (of the
# scored trials: those split_trials left out are announced there).
_table_column() {
  local column=$1
  shift
  compute-eer-pauc --allow-partial --report=table "$@" 2>/dev/null |
    awk -v c="$column" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
                        NR == 2 && k { print $k; found = 1 } END { exit !found }'
}
