#!/usr/bin/env bash
# Writes RESULTS.md: the description of the ETRI data and set-up, then the tables the recipe
# produced (steps/results_sections.sh: exp/results.md of run.sh, exp/lda_sweep.md of
# steps/lda_sweep.sh, exp/gamma_mu.md of steps/gamma_mu_grid.sh).
#
# Usage: local/make_results.sh [--dir DIR] [<out>]     (default: RESULTS.md)
#   --dir is the directory of run.sh's data/ and exp/ (default: recipes/etri).

cd "$(dirname "$(readlink -f "$0")")/.." || exit 1
dir=
. utils/parse_options.sh || exit 1
dir=${dir:-$PWD}
out=${1:-RESULTS.md}
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -s $dir/exp/results.md ] || {
  echo "$0: $dir/exp/results.md missing: run ./run.sh first" >&2; exit 1; }
trials=$dir/data/trials

{
  echo "# Results of recipes/etri on the ETRI i-vectors"
  echo
  echo "200-dimensional i-vectors of Korean read speech (see \`shared/realdata/etri/README.md\`):"
  echo "118 training speakers (11,800 vectors); 61 enrolled speakers (3 utterances each,"
  echo "averaged) against 5,917 test utterances: every enrolled speaker against every test"
  echo "utterance, $(wc -l < $trials | tr -d ' ') trials ($(grep -c ' target$' $trials) target)."
  echo "Back-end as the data's reference recipe: train mean, LDA, length norm, PLDA (Kaldi's"
  echo "reference figures: PLDA EER 3.718 % with LDA 100, 3.752 % with LDA 150; Cosine 5.915 %)."
  echo "The metrics are train-pauc-metric with its shipped defaults (no hand-tuned options)."
  echo "pAUCMetric (auto) is train-pauc-auto --enroll-utts=3 with its shipped defaults: it"
  echo "chooses the system (LDA dimension, preprocessing, fusion) from the training speakers"
  echo "alone, by cross-fitting, and never sees the evaluation trials."
  echo "Calibration: linear (train-calibration --prior=0.01), 2-fold over the enrolled speakers"
  echo "(each half calibrated by a model trained on the other half); actDCF at P_tar = 0.01."
  echo
  # The scripts whose tables are here.
  scripts="./run.sh"
  [ -s $dir/exp/lda_sweep.md ] && scripts+=" && steps/lda_sweep.sh"
  [ -s $dir/exp/gamma_mu.md ] && scripts+=" && steps/gamma_mu_grid.sh"
  echo "Produced at commit $commit by"
  echo "\`cd recipes/etri && $scripts && local/make_results.sh\`;"
  echo "each table ends with the command that printed it and its run time on 2 shared cores."
  echo
  steps/results_sections.sh --lda-dim 100 $dir || exit 1
} > $out.tmp && mv $out.tmp $out || exit 1
echo "$0: wrote $out"
