#!/usr/bin/env bash
# The tables of a recipe's RESULTS.md, from the files its scripts wrote under <dir>/exp:
# results.md (run.sh), lda_sweep.md (steps/lda_sweep.sh) and gamma_mu.md
# (steps/gamma_mu_grid.sh), each under a section title. A table that was not produced is left
# out. Each table file ends with the command that made it and its run time. The recipe's
# local/make_results.sh prints the corpus description first.
#
# Usage: steps/results_sections.sh [--lda-dim N] <dir>
#   <dir>: the directory of run.sh's data/ and exp/; --lda-dim: run.sh's LDA dimension (titles).

lda_dim=100
. "$(dirname "$(readlink -f "$0")")/../utils/parse_options.sh" || exit 1
if [ $# -ne 1 ]; then
  echo "Usage: $0 [--lda-dim N] <dir>" >&2
  exit 1
fi
exp=$1/exp
[ -s $exp/results.md ] || { echo "$0: $exp/results.md missing: run ./run.sh first" >&2; exit 1; }
echo "## Main comparison, LDA $lda_dim (the shape of the paper's PLDA-based and length-norm tables)"
echo
cat $exp/results.md
if [ -s $exp/lda_sweep.md ]; then
  echo
  echo "## EER (%) against the LDA dimension (the shape of the paper's dimension table)"
  echo
  cat $exp/lda_sweep.md
fi
if [ -s $exp/gamma_mu.md ]; then
  echo
  echo "## gamma x mu grid, pAUCMetric with PLDA-based preprocessing, LDA $lda_dim"
  echo
  cat $exp/gamma_mu.md
fi
