#!/usr/bin/env bash
# train-pauc-metric for each <loss>_<prep> system on the preprocessed training vectors of
# steps/preprocess.sh (<prep> lnorm: <exp>/lnorm/train.scp; plda: <exp>/plda_latent/train.scp),
# written to <exp>/metrics/<system>.
#
# Usage: steps/train_metrics.sh [options] <train-spk2utt> <exp-dir> <system> [<system>...]
#  e.g.: steps/train_metrics.sh data/train/spk2utt exp pauc_lnorm triplet_plda
# Options: --cmd CMD, --nj N (metrics trained at once, default 2), --metric-opts S (extra
# options for train-pauc-metric; default none: the shipped defaults). Logs:
# <exp-dir>/log/train_metric_<system>.log.

utils=$(dirname "$(readlink -f "$0")")/../utils
cmd=$utils/local_run.sh
nj=2
metric_opts=
. $utils/parse_options.sh || exit 1
. $utils/background.sh || exit 1
if [ $# -lt 3 ]; then
  echo "Usage: $0 [--cmd CMD] [--nj N] [--metric-opts S] <train-spk2utt> <exp-dir> <system>..." >&2
  exit 1
fi
set -o pipefail
spk2utt=$1 exp=$2
shift 2
mkdir -p $exp/metrics $exp/log || exit 1
for system in "$@"; do
  case ${system#*_} in
    lnorm) feats=$exp/lnorm ;;
    plda) feats=$exp/plda_latent ;;
    *) echo "$0: unknown preprocessing in system $system" >&2; exit 1 ;;
  esac
  background $cmd $exp/log/train_metric_$system.log \
    train-pauc-metric --loss=${system%%_*} $metric_opts ark:$spk2utt \
    scp:$feats/train.scp $exp/metrics/$system
done
wait_background || exit 1
