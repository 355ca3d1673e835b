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
  echo "\`shared/realdata/timit-ge2e/README.md\`):"
  echo "$n_train_spk training speakers ($n_train vectors); $n_eval_spk evaluation speakers ($n_eval"
  echo "segments, not in training). Every pair of evaluation segments except two of one voiced"
  echo "stretch is a trial, $n_trials trials ($n_target target); both sides are single segments of"
  echo "the one eval table, no enrollment averaging (the VoxCeleb1-O design). Back-end as"
  echo "recipes/etri (the same stage scripts): train mean, LDA 200, length norm, PLDA. The metrics"
  echo "are train-pauc-metric with its shipped defaults (no hand-tuned options). pAUCMetric (auto)"
  echo "is train-pauc-auto --enroll-utts=0 with its shipped defaults: it chooses the system (LDA"
  echo "dimension, preprocessing, fusion) from the training speakers alone, by cross-fitting, and"
  echo "never sees the evaluation trials. Calibration: linear (train-calibration --prior=0.01),"
  echo "2-fold over the speakers of the first trial side (each half calibrated by a model trained"
  echo "on the other half); actDCF at P_tar = 0.01."
  echo
  # The scripts whose tables are here.
  scripts="./run.sh"
  [ -s $dir/exp/lda_sweep.md ] && scripts+=" && steps/lda_sweep.sh"
  [ -s $dir/exp/gamma_mu.md ] && scripts+=" && steps/gamma_mu_grid.sh"
  echo "Produced at commit $commit by"
  echo "\`cd recipes/timit && $scripts && local/make_results.sh\`;"
  echo "each table ends with the command that printed it and its run time on 2 shared cores."
  echo
  steps/results_sections.sh --lda-dim 200 $dir || exit 1
} > $out.tmp && mv $out.tmp $out || exit 1
echo "$0: wrote $out"
