#!/usr/bin/env bash
# Two-fold calibration over the enrolled speakers: every trial gets a log-likelihood ratio from
# a linear calibration trained on the other half of the speakers, so actDCF and Cllr can be
# measured on the whole trial list without testing on training trials.
#
# Usage: calibrate_2fold.sh [options] <trials> <scores-dir> <out-dir> <system> [<system>...]
#  e.g.: utils/calibrate_2fold.sh exp/... data/trials exp/scores exp/calibrated plda cosine
# Reads <scores-dir>/<system> ("key1 key2 score"), writes <out-dir>/<system> (same order, llr),
# <out-dir>/fold{1,2}/... (trials and models). Folds: the enrolled speakers (first trial column)
# in sorted order, alternately to fold 1 and fold 2. With --utt2spk FILE the first trial column
# holds utterances (no enrollment averaging, as TIMIT): their speakers (FILE maps them) go
# alternately to the two folds, so no speaker's enrollment trials are split between folds.
# Options: --cmd CMD (job runner, default utils/local_run.sh), --prior P (default 0.01),
# --nj N (systems calibrated at once, default 2), --utt2spk FILE (default none),
# --enroll-dur FILE and --test-dur FILE (durations in seconds of the first and second trial
# column's keys, utils/durations.sh): a QMF calibration, whose logistic regression also sees
# min and max of the two sides' log durations (train-calibration --enroll-duration ...).

cmd="$(dirname "$(readlink -f "$0")")/local_run.sh"
prior=0.01
nj=2
utt2spk=
enroll_dur=
test_dur=
. "$(dirname "$(readlink -f "$0")")/parse_options.sh" || exit 1
. "$(dirname "$(readlink -f "$0")")/background.sh" || exit 1
if [ $# -lt 4 ]; then
  echo "Usage: $0 [--cmd CMD] [--prior P] [--nj N] [--utt2spk FILE] <trials> <scores-dir>" \
    "<out-dir> <system>..." >&2
  exit 1
fi
set -o pipefail
trials=$1 scores_dir=$2 out=$3
shift 3
quality=
if [ -n "$enroll_dur$test_dur" ]; then
  [ -f "$enroll_dur" ] && [ -f "$test_dur" ] || {
    echo "$0: --enroll-dur and --test-dur need each other and existing files" >&2; exit 1; }
  quality="--enroll-duration=ark:$enroll_dur --test-duration=ark:$test_dur"
fi

mkdir -p $out/fold1 $out/fold2 $out/log || exit 1
folds=$out/speaker_folds   # first trial column -> fold
if [ -z "$utt2spk" ]; then
  cut -d' ' -f1 $trials | LC_ALL=C sort -u | awk '{ print $1, (NR % 2 ? 1 : 2) }' > $folds || exit 1
else
  cut -d' ' -f1 $trials | LC_ALL=C sort -u > $out/keys || exit 1
  awk 'NR == FNR { key[$1]; next } $1 in key { print $2 }' $out/keys $utt2spk | LC_ALL=C sort -u |
    awk '{ print $1, (NR % 2 ? 1 : 2) }' > $out/speaker_folds || exit 1
  folds=$out/key_folds
  awk 'NR == FNR { fold[$1] = $2; next } { print $1, fold[$2] }' $out/speaker_folds $utt2spk |
    awk 'NR == FNR { key[$1]; next } $1 in key' $out/keys - > $folds || exit 1
  [ $(wc -l < $folds) -eq $(wc -l < $out/keys) ] || {
    echo "$0: $utt2spk does not name the speaker of every key of $trials" >&2; exit 1; }
fi
for fold in 1 2; do
  awk -v f=$fold 'NR == FNR { fold[$1] = $2; next } fold[$1] == f' $folds $trials \
    > $out/fold$fold/trials || exit 1
  [ -s $out/fold$fold/trials ] || { echo "$0: fold $fold has no trials" >&2; exit 1; }
done

calibrate() {  # <system>
  local system=$1 fold other
  for fold in 1 2; do
    awk -v f=$fold 'NR == FNR { fold[$1] = $2; next } fold[$1] == f' $folds \
      $scores_dir/$system > $out/fold$fold/$system.scores || return 1
  done
  for fold in 1 2; do
    other=$((3 - fold))
    $cmd $out/log/train_$system.fold$fold.log \
      train-calibration --prior=$prior $quality $out/fold$fold/trials $out/fold$fold/$system.scores \
      $out/fold$fold/$system.calibration || return 1
    $cmd $out/log/apply_$system.fold$other.log \
      apply-calibration $quality $out/fold$fold/$system.calibration $out/fold$other/$system.scores \
      $out/fold$other/$system.llr || return 1
  done
  # Back to the order of the input scores.
  awk 'FILENAME != ARGV[3] { llr[$1 " " $2] = $3; next }
       { key = $1 " " $2; if (!(key in llr)) exit 1; print key, llr[key] }' \
    $out/fold1/$system.llr $out/fold2/$system.llr $scores_dir/$system > $out/$system || {
      echo "$0: could not merge the calibrated scores of $system" >&2; return 1; }
}

for system in "$@"; do
  background calibrate $system
done
wait_background
