#!/usr/bin/env bash
# Writes RESULTS.md from the tables the recipe produced: exp/results.md (run.sh),
# exp/lda_sweep.md (local/lda_sweep.sh) and exp/gamma_mu.md (local/gamma_mu_grid.sh). A table
# that was not produced is left out. Each table file ends with the command that made it and
# its run time.
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
cd $dir || exit 1
[ -s exp/results.md ] || { echo "$0: exp/results.md missing: run ./run.sh first" >&2; exit 1; }

{
  echo "# Results of recipes/etri on the ETRI i-vectors"
  echo
  echo "200-dimensional i-vectors of Korean read speech (see \`shared/realdata/etri/README.md\`):"
  echo "118 training speakers (11,800 vectors); 61 enrolled speakers (3 utterances each,"
  echo "averaged) against 5,917 test utterances: every enrolled speaker against every test"
  echo "utterance, $(wc -l < data/trials | tr -d ' ') trials ($(grep -c ' target$' data/trials) target)."
  echo "Back-end as the data's reference recipe: train mean, LDA, length norm, PLDA (Kaldi's"
  echo "reference figures: PLDA EER 3.718 % with LDA 100, 3.752 % with LDA 150; Cosine 5.915 %)."
  echo "The metrics are train-pauc-metric with its shipped defaults (no hand-tuned options)."
  echo "Calibration: linear (train-calibration --prior=0.01), 2-fold over the enrolled speakers"
  echo "(each half calibrated by a model trained on the other half); actDCF at P_tar = 0.01."
  echo
  echo "Produced at commit $commit by"
  echo "\`cd recipes/etri && ./run.sh && local/lda_sweep.sh && local/gamma_mu_grid.sh && local/make_results.sh\`;"
  echo "each table ends with the command that printed it and its run time on 2 shared cores."
  echo
  echo "## Main comparison, LDA 100 (the shape of the paper's PLDA-based and length-norm tables)"
  echo
  cat exp/results.md
  if [ -s exp/lda_sweep.md ]; then
    echo
    echo "## EER (%) against the LDA dimension (the shape of the paper's dimension table)"
    echo
    cat exp/lda_sweep.md
  fi
  if [ -s exp/gamma_mu.md ]; then
    echo
    echo "## gamma x mu grid, pAUCMetric with PLDA-based preprocessing, LDA 100"
    echo
    cat exp/gamma_mu.md
  fi
} > $out.tmp && mv $out.tmp $out || exit 1
echo "$0: wrote $out"
