#!/usr/bin/env bash
# pAUCMetric (auto): train-pauc-auto chooses and trains a whole back-end (mean, LDA, PLDA,
# pAUCMetric variants, fusion) from the training vectors alone, by cross-fitting over folds of
# training speakers with held-out trials built like the evaluation's (--enroll-utts), then
# score-pauc-auto scores the trials. Both read RAW vectors (as extracted). Writes the model
# directory <exp>/pauc_auto (system.txt names the chosen system and its cross-fitted figures)
# and <exp>/scores/pauc_auto. Training is the expensive part (minutes): its elapsed time and
# the last line of its log are printed every --progress-interval seconds.
#
# Usage: steps/pauc_auto.sh [options] <train-data-dir> <enroll-rspecifier> <test-rspecifier> \
#          <trials> <exp-dir>
#  e.g.: steps/pauc_auto.sh --enroll-utts 3 --num-utts ark:exp/enroll_num_utts.ark data/train \
#          scp:exp/enroll_spk_xvector.scp scp:data/test/xvector.scp data/trials exp
# Options: --cmd CMD, --enroll-utts N (0: utterance against utterance; N: enrollment by the mean
# of N vectors; default 0), --num-utts RSPEC (counts of the enrollment speaker means),
# --auto-opts S (more options for train-pauc-auto, e.g. "--seed=1 --num-folds=3"),
# --progress-interval SECONDS (default 30), --nj N (default 1: one train-pauc-auto process;
# N > 1: the folds of the cross-fitting run as N jobs through $cmd, e.g. Kaldi's run.pl,
# queue.pl or slurm.pl: stage 1 (the LDA dimensions screened; JOB=1:N,
# log/fold_screen.JOB.log), stage 2 (the candidates screened at the promoted dimension;
# log/fold.JOB.log) and stage 3 (the promoted candidates at the full budget;
# log/fold_promoted.JOB.log) write <exp-dir>/pauc_auto_folds, then train-pauc-auto --combine
# chooses and trains the back-end from them: the same model files as with --nj 1).
# --spk2utt FILE (default <train-data-dir>/spk2utt, for x-vector directories without one).
# --adapt RSPEC (unlabelled vectors of the evaluation domain, e.g. SRE16 major: train-pauc-auto
# --adapt; the centring mean and an adapted PLDA from them; default none).
# Labelled development trials of the evaluation domain (train-pauc-auto --dev-*: they rate the
# candidates and the final calibration is learned on them): --dev-vectors RSPEC, --dev-trials
# FILE, --dev-enroll RSPEC (spk2utt of the enrollment side), --dev-utt2spk RSPEC,
# --dev-utt2dur RSPEC; with them the folds run in one train-pauc-auto process (--num-jobs=N
# workers) instead of N fold jobs. Durations: --utt2dur RSPEC (training utterances),
# --enroll-duration/--test-duration RSPEC (the scored sides, for a model whose calibration kept
# durations; score-pauc-auto does not use them otherwise).
# Logs: <exp-dir>/log/{train,score}_pauc_auto.log.

utils=$(dirname "$(readlink -f "$0")")/../utils
cmd=$utils/local_run.sh
enroll_utts=0
num_utts=
auto_opts=
progress_interval=30
nj=1
spk2utt=
adapt=
dev_vectors=
dev_trials=
dev_enroll=
dev_utt2spk=
dev_utt2dur=
utt2dur=
enroll_duration=
test_duration=
. $utils/parse_options.sh || exit 1
. $utils/progress.sh || exit 1
if [ $# -ne 5 ]; then
  echo "Usage: $0 [options] <train-data-dir> <enroll-rspecifier> <test-rspecifier>" \
    "<trials> <exp-dir>" >&2
  exit 1
fi
set -o pipefail
train=$1 enroll=$2 test=$3 trials=$4 exp=$5
mkdir -p $exp/scores $exp/log || exit 1
spk2utt=${spk2utt:-$train/spk2utt}

# train-pauc-auto's options for the in-domain evidence and the durations (an array: the
# rspecifiers may hold spaces, e.g. "scp:cat a.scp b.scp |")
dev_opts=()
[ -n "$dev_vectors" ] && dev_opts+=("--dev-vectors=$dev_vectors")
[ -n "$dev_trials" ] && dev_opts+=("--dev-trials=$dev_trials")
[ -n "$dev_enroll" ] && dev_opts+=("--dev-enroll=$dev_enroll")
[ -n "$dev_utt2spk" ] && dev_opts+=("--dev-utt2spk=$dev_utt2spk")
[ -n "$dev_utt2dur" ] && dev_opts+=("--dev-utt2dur=$dev_utt2dur")
[ -n "$utt2dur" ] && dev_opts+=("--utt2dur=$utt2dur")
score_opts=()
[ -n "$enroll_duration" ] && score_opts+=("--enroll-duration=$enroll_duration" \
  "--test-duration=$test_duration")
combine=
if [ -n "$dev_trials" ] && [ "$nj" -gt 1 ]; then
  # development trials are scored by every fold's models in one process: workers, not jobs
  auto_opts="--num-jobs=$nj $auto_opts"
  nj=1
fi
if [ "$nj" -gt 1 ]; then
  # The folds as jobs: every job gets the same options and data (their digest is checked).
  for stage in 1 2 3; do
    case $stage in 1) name=fold_screen ;; 2) name=fold ;; 3) name=fold_promoted ;; esac
    echo "$0: train-pauc-auto --fold-stage=$stage, $nj jobs (logs: $exp/log/$name.*.log)"
    with_progress "$exp/log/$name.*.log" \
      $cmd JOB=1:$nj $exp/log/$name.JOB.log \
      train-pauc-auto --fold-stage=$stage --fold=JOB --fold-jobs=$nj \
      --enroll-utts=$enroll_utts ${adapt:+--adapt=$adapt} $auto_opts \
      scp:$train/xvector.scp ark:$spk2utt $exp/pauc_auto_folds || exit 1
  done
  combine=--combine=$exp/pauc_auto_folds
fi
echo "$0: train-pauc-auto --enroll-utts=$enroll_utts ${adapt:+--adapt=$adapt} ${dev_trials:+--dev-trials=$dev_trials} $auto_opts $combine (log: $exp/log/train_pauc_auto.log)"
with_progress $exp/log/train_pauc_auto.log \
  $cmd $exp/log/train_pauc_auto.log \
  train-pauc-auto $combine --enroll-utts=$enroll_utts ${adapt:+--adapt=$adapt} \
  "${dev_opts[@]}" $auto_opts scp:$train/xvector.scp ark:$spk2utt $exp/pauc_auto || exit 1
# What was chosen and its cross-fitted figures (all of them: <exp>/pauc_auto/system.txt).
awk -v script="$0" '$1 == "system" || $1 == "system_title" || $1 == "lda_dim" || $1 ~ /^heldout_(pauc|eer|min_dcf)$/ {
    line = line (line == "" ? "" : ", ") $1 " " substr($0, length($1) + 2) }
  END { print script ": chosen: " line }' $exp/pauc_auto/system.txt || exit 1
[ -n "$adapt" ] && grep '^adapt_' $exp/pauc_auto/system.txt | sed "s|^|$0: |"
grep '^selection_rated_by \|^dev_pauc \|^quality_measures ' $exp/pauc_auto/system.txt | \
  sed "s|^|$0: |"
$cmd $exp/log/score_pauc_auto.log \
  score-pauc-auto ${num_utts:+--num-utts=$num_utts} "${score_opts[@]}" $exp/pauc_auto \
  "$enroll" "$test" $trials $exp/scores/pauc_auto || exit 1
