#!/usr/bin/env bash
# The input-dimension sweep (the shape of the paper's dimension table): EER of Cosine and
# pAUCMetric with length-norm preprocessing, and of PLDA and pAUCMetric with PLDA-based
# preprocessing, for each LDA dimension. Runs stages 1-4 of the recipe's run.sh into
# exp/lda<dim> (stage 0 of run.sh must have prepared data/), then prints a Markdown table.
# Shared by recipes/etri and recipes/timit: run it as steps/lda_sweep.sh of the recipe (the
# directory above steps/ is the recipe whose run.sh it runs).
#
# Usage: steps/lda_sweep.sh [--dims "50 100 150 200"] [--stage 0|1] [--dir DIR]
#   stage 0 trains and scores every dimension; stage 1 only prints the table. --dir is the
#   directory of run.sh's data/ and exp/ (default: the recipe's directory).

command_line="steps/lda_sweep.sh${*:+ $*}"
start_time=$(date +%s)
# Not readlink -f: steps/ is a link, and the recipe is the directory that holds the link.
cd "$(dirname "$0")/.." || exit 1
[ -x ./run.sh ] || {
  echo "$0: no run.sh in $PWD: run this as <recipe>/steps/lda_sweep.sh" >&2; exit 1; }
. ./path.sh || exit 1
dims="50 100 150 200"
stage=0
dir=
. utils/parse_options.sh || exit 1
set -o pipefail
dir=${dir:-$PWD}

if [ $stage -le 0 ]; then
  for dim in $dims; do
    ./run.sh --stage 1 --stop-stage 4 --dir $dir --exp exp/lda$dim --lda-dim $dim --losses pauc \
      --asnorm= \
      > $dir/exp/lda_sweep_$dim.log 2>&1 || {
        echo "$0: LDA $dim failed, see $dir/exp/lda_sweep_$dim.log" >&2; exit 1; }
  done
fi

eer_of() {  # <dim> <system>
  utils/evaluate.sh $dir/exp/lda$1/scores/$2 $dir/data/trials |
    awk '$1 == "EER" { printf "%.2f", $2; found = 1 } END { exit !found }'
}
{
header="| Preprocessing | Back-end |"
rule="|---|---|"
for dim in $dims; do header+=" $dim dim |"; rule+="---|"; done
echo "$header"
echo "$rule"
for row in "Length-norm:Cosine:cosine" "Length-norm:pAUCMetric:pauc_lnorm" \
           "PLDA-based:PLDA:plda" "PLDA-based:pAUCMetric:pauc_plda"; do
  IFS=: read -r prep label system <<< "$row"
  line="| $prep | $label |"
  for dim in $dims; do
    value=$(eer_of $dim $system) || { echo "$0: no EER for $system, LDA $dim" >&2; exit 1; }
    line+=" $value |"
  done
  echo "$line"
done
echo
echo "_Command: \`$command_line\` ($(( $(date +%s) - start_time )) s)._"
} > $dir/exp/lda_sweep.md.tmp || exit 1
mv $dir/exp/lda_sweep.md.tmp $dir/exp/lda_sweep.md
cat $dir/exp/lda_sweep.md
