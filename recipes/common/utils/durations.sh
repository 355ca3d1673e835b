#!/usr/bin/env bash
# Durations in seconds of the keys of a Kaldi data directory, for QMF calibration
# (train-calibration/apply-calibration --enroll-duration/--test-duration): its utt2dur, or
# utt2num_frames times --frame-shift (Kaldi's 10 ms). With --spk2utt FILE the keys are the
# models of FILE (spk2utt), each the sum of its utterances' durations (a model averaged over
# three 10 s recordings saw 30 s of speech).
#
# Usage: durations.sh [--spk2utt FILE] [--frame-shift S] <data-dir> <out-file>
#  e.g.: utils/durations.sh --spk2utt data/enroll/spk2utt data/enroll exp/enroll_durations
# Exit status 2, nothing written, when <data-dir> has neither utt2dur nor utt2num_frames (so a
# recipe can test for durations); 1 on an error (an utterance of FILE without a duration).

spk2utt=
frame_shift=0.01
. "$(dirname "$(readlink -f "$0")")/parse_options.sh" || exit 1
if [ $# -ne 2 ]; then
  echo "Usage: $0 [--spk2utt FILE] [--frame-shift S] <data-dir> <out-file>" >&2
  exit 1
fi
data=$1 out=$2
if [ -f $data/utt2dur ]; then
  source=$data/utt2dur scale=1
elif [ -f $data/utt2num_frames ]; then
  source=$data/utt2num_frames scale=$frame_shift
else
  exit 2
fi
tmp=$out.tmp.$$
trap 'rm -f $tmp' EXIT
if [ -z "$spk2utt" ]; then
  awk -v s=$scale 'NF { if (NF != 2) { print FILENAME ": line " FNR ": expected <utt> <value>" > "/dev/stderr"; exit 1 }
                        print $1, $2 * s }' $source > $tmp || exit 1
else
  awk -v s=$scale 'NR == FNR { if (NF) dur[$1] = $2 * s; next }
    NF { sum = 0
         for (i = 2; i <= NF; i++) {
           if (!($i in dur)) { print "durations.sh: utterance " $i " of " $1 " has no duration in '"$source"'" > "/dev/stderr"; exit 1 }
           sum += dur[$i] }
         print $1, sum }' $source $spk2utt > $tmp || exit 1
fi
mv $tmp $out
