#!/usr/bin/env bash
# The two preprocessings of the paper for one set of vectors: centred (on <exp>/mean.vec, or on
# the set's own mean with --own-mean true, as for the training set), LDA (<exp>/transform.mat),
# then either unit length ("length-norm": <exp>/lnorm/<name>.{ark,scp}) or length-normalised and
# projected to the PLDA latent space ("PLDA-based": <exp>/plda_latent/<name>.{ark,scp}).
#
# Usage: steps/preprocess.sh [options] <exp-dir> <name> <vector-rspecifier>
#  e.g.: steps/preprocess.sh --own-mean true exp train scp:data/train/xvector.scp
#        steps/preprocess.sh --num-utts ark:exp/enroll_num_utts.ark exp enroll \
#          scp:exp/enroll_spk_xvector.scp
# Options: --cmd CMD, --nj N (default 2), --own-mean true|false (default false), --num-utts RSPEC
# (utterance counts of speaker-mean vectors, for transform-plda-latent). Logs:
# <exp-dir>/log/{lnorm,plda_latent}_<name>.log.

utils=$(dirname "$(readlink -f "$0")")/../utils
cmd=$utils/local_run.sh
nj=2
own_mean=false
num_utts=
. $utils/parse_options.sh || exit 1
. $utils/background.sh || exit 1
if [ $# -ne 3 ]; then
  echo "Usage: $0 [--cmd CMD] [--nj N] [--own-mean true|false] [--num-utts RSPEC]" \
    "<exp-dir> <name> <vector-rspecifier>" >&2
  exit 1
fi
set -o pipefail
exp=$1 name=$2 vectors=$3
mean=$exp/mean.vec
$own_mean && mean=
input="ark:subtract-vector-mean $mean $vectors ark:- |"
input+=" transform-vectors $exp/transform.mat ark:- ark:- |"
mkdir -p $exp/lnorm $exp/plda_latent $exp/log || exit 1
background $cmd $exp/log/lnorm_$name.log \
  normalize-vector-length --scaleup=false "$input" \
  ark,scp:$exp/lnorm/$name.ark,$exp/lnorm/$name.scp
background $cmd $exp/log/plda_latent_$name.log \
  transform-plda-latent ${num_utts:+--num-utts=$num_utts} $exp/plda \
  "$input normalize-vector-length ark:- ark:- |" \
  ark,scp:$exp/plda_latent/$name.ark,$exp/plda_latent/$name.scp
wait_background || exit 1
