#!/usr/bin/env bash
# Writes RESULTS.md: the description of the TIMIT GE2E data and set-up, then the tables the
# recipe produced (steps/results_sections.sh: exp/results.md of run.sh, exp/lda_sweep.md of
# steps/lda_sweep.sh, exp/gamma_mu.md of steps/gamma_mu_grid.sh).
#
# Usage: local/make_results.sh [--dir DIR] [<out>]     (default: RESULTS.md)
#   --dir is the directory of run.sh's data/ and exp/ (default: recipes/timit).

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
  echo "# Results of recipes/timit on the TIMIT GE2E d-vectors"
  echo
  n_train_spk=$(wc -l < $dir/data/train/spk2utt)
  n_train=$(wc -l < $dir/data/train/xvector.scp)
  n_eval_spk=$(wc -l < $dir/data/eval/spk2utt)
  n_eval=$(wc -l < $dir/data/eval/xvector.scp)
  n_trials=$(wc -l < $trials)
  n_target=$(grep -c ' target$' $trials)
  echo "256-dimensional d-vectors of English read speech, real neural embeddings (TIMIT"
  echo "segments through the GE2E LSTM encoder of resemblyzer; see"
  echo "\`shared/realdata/timit-ge2e/README.md\`): $n_train_spk training speakers"
  echo "($n_train vectors); $n_eval_spk evaluation speakers ($n_eval segments, not in training)."
  echo "Every pair of evaluation segments except two of one voiced stretch is a trial, $n_trials"
  echo "trials ($n_target target);"
  echo "both sides are single segments of the one eval table, no enrollment averaging (the"
  echo "VoxCeleb1-O design). Back-end as recipes/etri (the same stage scripts): train mean, LDA"
  echo "200, length norm, PLDA. The metrics are train-pauc-metric with its shipped defaults (no"
  echo "hand-tuned options). pAUCMetric (auto) is train-pauc-auto --enroll-utts=0 with its shipped"
  echo "defaults: it chooses the system (LDA dimension, preprocessing, fusion) from the training"
  echo "speakers alone, by cross-fitting, and never sees the evaluation trials."
  echo "Calibration: linear (train-calibration --prior=0.01), 2-fold over the speakers of the"
  echo "first trial side (each half calibrated by a model trained on the other half); actDCF at"
  echo "P_tar = 0.01."
  echo
  echo "Produced at commit $commit by"
  echo "\`cd recipes/timit && ./run.sh && steps/lda_sweep.sh && steps/gamma_mu_grid.sh &&"
  echo "local/make_results.sh\`;"
  echo "each table ends with the command that printed it and its run time on 2 shared cores."
  echo
  steps/results_sections.sh --lda-dim 200 $dir || exit 1
} > $out.tmp && mv $out.tmp $out || exit 1
echo "$0: wrote $out"
