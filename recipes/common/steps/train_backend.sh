#!/usr/bin/env bash
# The classical back-end on the training set, as egs/sre16/v2 stage 8 without adaptation:
# <exp>/mean.vec (the training mean, which centres the evaluation vectors), <exp>/transform.mat
# (LDA on the vectors centred on their own mean) and <exp>/plda (Kaldi PLDA on the centred, LDA
# and unit-length vectors).
#
# Usage: steps/train_backend.sh [options] <train-data-dir> <exp-dir>
#  e.g.: steps/train_backend.sh --lda-dim 100 data/train exp
# Options: --cmd CMD (job runner, default utils/local_run.sh), --nj N (steps at once, default 2),
# --lda-dim N (default 100). Logs: <exp-dir>/log/{compute_mean,lda,plda}.log.

utils=$(dirname "$(readlink -f "$0")")/../utils
cmd=$utils/local_run.sh
nj=2
lda_dim=100
. $utils/parse_options.sh || exit 1
. $utils/background.sh || exit 1
if [ $# -ne 2 ]; then
  echo "Usage: $0 [--cmd CMD] [--nj N] [--lda-dim N] <train-data-dir> <exp-dir>" >&2
  exit 1
fi
set -o pipefail
train=$1 exp=$2
mkdir -p $exp/log || exit 1

background $cmd $exp/log/compute_mean.log \
  compute-vector-mean scp:$train/xvector.scp $exp/mean.vec
background $cmd $exp/log/lda.log \
  train-lda --total-covariance-factor=0.0 --dim=$lda_dim \
  "ark:subtract-vector-mean scp:$train/xvector.scp ark:- |" \
  ark:$train/utt2spk $exp/transform.mat
wait_background || exit 1
input="ark:subtract-vector-mean scp:$train/xvector.scp ark:- |"
input+=" transform-vectors $exp/transform.mat ark:- ark:- | normalize-vector-length ark:- ark:- |"
$cmd $exp/log/plda.log train-plda ark:$train/spk2utt "$input" $exp/plda || exit 1
