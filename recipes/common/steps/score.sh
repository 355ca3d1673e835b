#!/usr/bin/env bash
# Scores the trials with each system into <exp>/scores/<system>: cosine (the length-norm
# vectors), plda (Kaldi's PLDA scoring of the raw vectors, centred on <exp>/mean.vec, LDA, unit
# length) and <loss>_<prep> (the metric <exp>/metrics/<system> on the <prep> vectors). The
# preprocessed evaluation vectors are <exp>/{lnorm,plda_latent}/{enroll,test}.scp
# (steps/preprocess.sh).
#
# Usage: steps/score.sh [options] <trials> <exp-dir> <enroll-rspecifier> <test-rspecifier> \
#          <system>...
#  e.g.: steps/score.sh --num-utts ark:exp/enroll_num_utts.ark data/trials exp \
#          scp:exp/enroll_spk_xvector.scp scp:data/test/xvector.scp cosine plda pauc_plda
# <enroll-rspecifier> and <test-rspecifier> are the RAW vectors (for plda).
# Options: --cmd CMD, --nj N (systems scored at once, default 2), --num-utts RSPEC (utterance
# counts of enrollment speaker means, for plda). Logs: <exp-dir>/log/score_<system>.log.

utils=$(dirname "$(readlink -f "$0")")/../utils
cmd=$utils/local_run.sh
nj=2
num_utts=
. $utils/parse_options.sh || exit 1
. $utils/background.sh || exit 1
if [ $# -lt 5 ]; then
  echo "Usage: $0 [--cmd CMD] [--nj N] [--num-utts RSPEC] <trials> <exp-dir>" \
    "<enroll-rspecifier> <test-rspecifier> <system>..." >&2
  exit 1
fi
set -o pipefail
trials=$1 exp=$2 enroll=$3 test=$4
shift 4
mkdir -p $exp/scores $exp/log || exit 1
prepare="ark:- | transform-vectors $exp/transform.mat ark:- ark:- |"
prepare+=" normalize-vector-length ark:- ark:- |"
for system in "$@"; do
  case $system in
    cosine)
      background $cmd $exp/log/score_cosine.log \
        score-cosine-trials "cut -d' ' -f1,2 $trials |" scp:$exp/lnorm/enroll.scp \
        scp:$exp/lnorm/test.scp $exp/scores/cosine ;;
    plda)
      background $cmd $exp/log/score_plda.log \
        score-plda-trials --normalize-length=true ${num_utts:+--num-utts=$num_utts} \
        "copy-plda --smoothing=0.0 $exp/plda - |" \
        "ark:subtract-vector-mean $exp/mean.vec $enroll $prepare" \
        "ark:subtract-vector-mean $exp/mean.vec $test $prepare" \
        "cut -d' ' -f1,2 $trials |" $exp/scores/plda ;;
    *_lnorm|*_plda)
      feats=$exp/lnorm
      [ ${system#*_} = plda ] && feats=$exp/plda_latent
      background $cmd $exp/log/score_$system.log \
        score-pauc-trials $exp/metrics/$system scp:$feats/enroll.scp scp:$feats/test.scp \
        $trials $exp/scores/$system ;;
    *) echo "$0: unknown system $system" >&2; exit 1 ;;
  esac
done
wait_background || exit 1
