#!/usr/bin/env bash
# Score-only and QMF (durations) calibrations of several systems with the 2-fold protocol of
# utils/calibrate_2fold.sh (each half of the first column's speakers calibrated by the other
# half; --utt2spk when that column holds utterances), for recipes without a development set.
# Prints one line per system: "<system> <actDCF score-only> <Cllr score-only> <actDCF QMF>
# <Cllr QMF>" (actDCF at --prior).
#
# Usage: qmf_2fold.sh [options] <trials> <scores-dir> <enroll-dur> <test-dur> <out-dir>
#          <system> [<system>...]
#  e.g.: steps/qmf_2fold.sh exp/trials exp/scores exp/enroll_durations exp/test_durations \
#          exp/qmf_2fold plda cosine
# Options: --cmd CMD, --nj N, --prior P (0.01), --utt2spk FILE (as calibrate_2fold.sh).

cmd="$(dirname "$(readlink -f "$0")")/../utils/local_run.sh"
nj=2
prior=0.01
utt2spk=
utils=$(dirname "$(readlink -f "$0")")/../utils
. $utils/parse_options.sh || exit 1
if [ $# -lt 6 ]; then
  echo "Usage: $0 [options] <trials> <scores-dir> <enroll-dur> <test-dur> <out-dir> <system>..." >&2
  exit 1
fi
set -o pipefail
trials=$1 scores=$2 enroll_dur=$3 test_dur=$4 out=$5
shift 5
opts="--cmd $cmd --nj $nj --prior $prior"
[ -n "$utt2spk" ] && opts+=" --utt2spk $utt2spk"
$utils/calibrate_2fold.sh $opts $trials $scores $out/score_only "$@" || exit 1
$utils/calibrate_2fold.sh $opts --enroll-dur $enroll_dur --test-dur $test_dur $trials $scores \
  $out/qmf "$@" || exit 1
for system in "$@"; do
  line="$system"
  for variant in score_only qmf; do
    read -r act cllr <<< "$($utils/evaluate.sh --llr true --p-target $prior $out/$variant/$system $trials |
      awk '$1 == "actDCF" { a = $2 } $1 == "Cllr" { c = $2 } END { print a, c }')" || exit 1
    [ -n "$cllr" ] || { echo "$0: evaluating $out/$variant/$system failed" >&2; exit 1; }
    line+=" $act $cllr"
  done
  echo "$line"
done
