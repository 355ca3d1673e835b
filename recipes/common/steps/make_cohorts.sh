#!/usr/bin/env bash
# The score-normalisation cohort of steps/score.sh (<system>_asnorm): the training speakers'
# mean vectors, one per speaker, in each system's input space:
#   <exp>/cohort/raw.{ark,scp}          means of the raw training vectors (plda: they go through
#                                       the same centring, LDA and unit length as its inputs)
#   <exp>/cohort/lnorm.{ark,scp}        means of the length-norm training vectors, unit length
#                                       (cosine, *_lnorm metrics: their inputs are unit length)
#   <exp>/cohort/plda_latent.{ark,scp}  means of the PLDA-latent training vectors (*_plda)
# The cohort comes from the training data only, never from the evaluation data.
#
# Usage: steps/make_cohorts.sh [--cmd CMD] [--nj N] <train-data-dir> <exp-dir>
#  e.g.: steps/make_cohorts.sh data/train exp        (after steps/preprocess.sh ... exp train)
# Logs: <exp-dir>/log/cohort_{raw,lnorm,plda_latent}.log.

utils=$(dirname "$(readlink -f "$0")")/../utils
cmd=$utils/local_run.sh
nj=2
. $utils/parse_options.sh || exit 1
. $utils/background.sh || exit 1
if [ $# -ne 2 ]; then
  echo "Usage: $0 [--cmd CMD] [--nj N] <train-data-dir> <exp-dir>" >&2
  exit 1
fi
set -o pipefail
train=$1 exp=$2
for f in $exp/lnorm/train.scp $exp/plda_latent/train.scp; do
  [ -s $f ] || { echo "$0: $f missing: run steps/preprocess.sh for the training set" >&2; exit 1; }
done
mkdir -p $exp/cohort $exp/log || exit 1
background $cmd $exp/log/cohort_raw.log \
  compute-vector-mean ark:$train/spk2utt scp:$train/xvector.scp \
  ark,scp:$exp/cohort/raw.ark,$exp/cohort/raw.scp
background $cmd $exp/log/cohort_lnorm.log \
  normalize-vector-length --scaleup=false \
  "ark:compute-vector-mean ark:$train/spk2utt scp:$exp/lnorm/train.scp ark:- |" \
  ark,scp:$exp/cohort/lnorm.ark,$exp/cohort/lnorm.scp
background $cmd $exp/log/cohort_plda_latent.log \
  compute-vector-mean ark:$train/spk2utt scp:$exp/plda_latent/train.scp \
  ark,scp:$exp/cohort/plda_latent.ark,$exp/cohort/plda_latent.scp
wait_background || exit 1
echo "$0: $(wc -l < $exp/cohort/raw.scp) cohort vectors (training speakers) in $exp/cohort"
