#!/usr/bin/env bash
# Scores the trials with each system into <exp>/scores/<system>: cosine_raw (cosine of the RAW
# vectors, no mean, no LDA: score-cosine-trials --normalize=true, what a user of neural
# embeddings already has), cosine (the length-norm vectors), plda (Kaldi's PLDA scoring of the raw vectors, centred on <exp>/mean.vec, LDA, unit
# length) and <loss>_<prep> (the metric <exp>/metrics/<system> on the <prep> vectors); each
# also as <system>_asnorm, with AS-norm (--score-norm=as of the scoring tools, WeSpeaker's
# definition) against the cohort of steps/make_cohorts.sh (the training speakers' mean vectors
# in the system's input space). The preprocessed evaluation vectors are
# <exp>/{lnorm,plda_latent}/{enroll,test}.scp (steps/preprocess.sh).
#
# Usage: steps/score.sh [options] <trials> <exp-dir> <enroll-rspecifier> <test-rspecifier> \
#          <system>...
#  e.g.: steps/score.sh --num-utts ark:exp/enroll_num_utts.ark data/trials exp \
#          scp:exp/enroll_spk_xvector.scp scp:data/test/xvector.scp cosine plda pauc_plda
# <enroll-rspecifier> and <test-rspecifier> are the RAW vectors (for plda).
# Options: --cmd CMD, --nj N (systems scored at once, default 2), --num-utts RSPEC (utterance
# counts of enrollment speaker means, for plda), --top-n N (AS-norm: the N highest cohort scores
# of each side, default 100). Logs: <exp-dir>/log/score_<system>.log.

utils=$(dirname "$(readlink -f "$0")")/../utils
cmd=$utils/local_run.sh
nj=2
num_utts=
top_n=100
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
  # <base>_asnorm: the base system with AS-norm against the training speakers' mean vectors
  # in the base system's input space (steps/make_cohorts.sh: <exp>/cohort/{raw,lnorm,plda_latent}).
  base=${system%_asnorm}
  norm=
  if [ $base != $system ]; then
    case $base in
      plda) cohort="ark:subtract-vector-mean $exp/mean.vec scp:$exp/cohort/raw.scp $prepare" ;;
      cosine|*_lnorm) cohort=scp:$exp/cohort/lnorm.scp ;;
      *_plda) cohort=scp:$exp/cohort/plda_latent.scp ;;
    esac
    norm="--score-norm=as --top-n=$top_n"
  fi
  case $base in
    cosine_raw)
      [ -n "$norm" ] && { echo "$0: $system: AS-norm of raw cosine is not scored here" >&2; exit 1; }
      background $cmd $exp/log/score_$system.log \
        score-cosine-trials --normalize=true "cut -d' ' -f1,2 $trials |" "$enroll" "$test" \
        $exp/scores/$system ;;
    cosine)
      background $cmd $exp/log/score_$system.log \
        score-cosine-trials $norm ${norm:+"--cohort=$cohort"} "cut -d' ' -f1,2 $trials |" \
        scp:$exp/lnorm/enroll.scp scp:$exp/lnorm/test.scp $exp/scores/$system ;;
    plda)
      background $cmd $exp/log/score_$system.log \
        score-plda-trials --normalize-length=true ${num_utts:+--num-utts=$num_utts} \
        $norm ${norm:+"--cohort=$cohort"} \
        "copy-plda --smoothing=0.0 $exp/plda - |" \
        "ark:subtract-vector-mean $exp/mean.vec $enroll $prepare" \
        "ark:subtract-vector-mean $exp/mean.vec $test $prepare" \
        "cut -d' ' -f1,2 $trials |" $exp/scores/$system ;;
    *_lnorm|*_plda)
      feats=$exp/lnorm
      [ ${base#*_} = plda ] && feats=$exp/plda_latent
      background $cmd $exp/log/score_$system.log \
        score-pauc-trials $norm ${norm:+"--cohort=$cohort"} $exp/metrics/$base \
        scp:$feats/enroll.scp scp:$feats/test.scp $trials $exp/scores/$system ;;
    *) echo "$0: unknown system $system" >&2; exit 1 ;;
  esac
done
wait_background || exit 1
