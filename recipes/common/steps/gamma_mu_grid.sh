#!/usr/bin/env bash
# The gamma x mu grid (the shape of the paper's hyper-parameter tables): pAUCMetric with
# PLDA-based preprocessing (the vectors of run.sh stage 2 in exp/, at the recipe's LDA
# dimension) trained with each
# --gamma and --mu (every other option as shipped), scored on all trials, and compared with
# PLDA (exp/scores/plda): relative EER reduction and relative pAUC[0,0.01] increase in %
# (positive: pAUCMetric is better). Prints two Markdown tables.
#
# Shared by recipes/etri and recipes/timit: run it as steps/gamma_mu_grid.sh of the recipe.
#
# Usage: steps/gamma_mu_grid.sh [--gammas "..."] [--mus "..."] [--nj N] [--stage 0|1] [--dir DIR]
#   stage 0 trains and scores the grid (exp/gamma_mu/); stage 1 only prints the tables. --dir
#   is the directory of run.sh's data/ and exp/ (default: the recipe's directory).

command_line="steps/gamma_mu_grid.sh${*:+ $*}"
start_time=$(date +%s)
# Not readlink -f: steps/ is a link, and the recipe is the directory that holds the link.
cd "$(dirname "$0")/.." || exit 1
[ -x ./run.sh ] || {
  echo "$0: no run.sh in $PWD: run this as <recipe>/steps/gamma_mu_grid.sh" >&2; exit 1; }
. ./path.sh || exit 1
. ./cmd.sh || exit 1
gammas="0 0.01 0.05 0.1 0.5 1.0 1.5 3.0"
mus="0 1e-7 1e-6 1e-5 1e-4 1e-3 1e-2 1e-1"
nj=2
stage=0
dir=
. utils/parse_options.sh || exit 1
. utils/background.sh || exit 1
set -o pipefail
dir=${dir:-$PWD}
data=$dir/data
exp=$dir/exp
grid=$exp/gamma_mu
feats=$exp/plda_latent
for f in $feats/train.scp $feats/enroll.scp $feats/test.scp $exp/scores/plda; do
  [ -s $f ] || { echo "$0: $f missing: run ./run.sh (stages 0-4) first" >&2; exit 1; }
done

if [ $stage -le 0 ]; then
  mkdir -p $grid/log
  grid_point() {  # <gamma> <mu>: train and score one metric
    local name=g${1}_m$2
    $train_cmd $grid/log/train_$name.log \
      train-pauc-metric --loss=pauc --gamma=$1 --mu=$2 ark:$data/train/spk2utt \
      scp:$feats/train.scp $grid/metric_$name &&
    $train_cmd $grid/log/score_$name.log \
      score-pauc-trials $grid/metric_$name scp:$feats/enroll.scp scp:$feats/test.scp \
      $data/trials $grid/scores_$name
  }
  for gamma in $gammas; do
    for mu in $mus; do
      background grid_point $gamma $mu
    done
  done
  wait_background || { echo "$0: some grid points failed, see $grid/log" >&2; exit 1; }
fi

metric_of() {  # <metric> <scores>
  utils/evaluate.sh $2 $data/trials | awk -v m=$1 '$1 == m { print $2; found = 1 } END { exit !found }'
}
plda_eer=$(metric_of EER $exp/scores/plda) || exit 1
plda_pauc=$(metric_of pAUC $exp/scores/plda) || exit 1
{
echo "Every other option of train-pauc-metric as shipped; gamma and mu are in the tool's units"
echo "(--scale=auto: vectors scaled so that the mean squared distance between two training"
echo "vectors is 2). Positive numbers: pAUCMetric is better than PLDA."
echo
for what in EER pAUC; do
  if [ $what = EER ]; then
    echo "Relative EER reduction (%) of pAUCMetric (PLDA-based) over PLDA (EER $plda_eer%):"
  else
    echo "Relative pAUC[0,0.01] increase (%) of pAUCMetric (PLDA-based) over PLDA (pAUC $plda_pauc):"
  fi
  echo
  header="| gamma \\ mu |"
  rule="|---|"
  for mu in $mus; do header+=" $mu |"; rule+="---|"; done
  echo "$header"
  echo "$rule"
  for gamma in $gammas; do
    line="| $gamma |"
    for mu in $mus; do
      value=$(metric_of $what $grid/scores_g${gamma}_m$mu) || exit 1
      if [ $what = EER ]; then
        line+=" $(awk -v a=$plda_eer -v b=$value 'BEGIN { printf "%.1f", 100 * (a - b) / a }') |"
      else
        line+=" $(awk -v a=$plda_pauc -v b=$value 'BEGIN { printf "%.1f", 100 * (b - a) / a }') |"
      fi
    done
    echo "$line"
  done
  echo
done
echo "_Command: \`$command_line\` ($(( $(date +%s) - start_time )) s)._"
} > $exp/gamma_mu.md.tmp || exit 1
mv $exp/gamma_mu.md.tmp $exp/gamma_mu.md
cat $exp/gamma_mu.md
