#!/usr/bin/env bash
# One results table for several systems scored on the same trials (Markdown): EER, minDCF and
# pAUC[0,0.01], AUC and AP of the raw scores, actDCF and Cllr of the calibrated ones; optionally
# DET and ROC plots of every system.
#
# Usage: results_table.sh [options] <trials> <scores-dir> <calibrated-dir> <system> [<system>...]
#  e.g.: utils/results_table.sh --plots exp/det.png,exp/roc.png data/trials exp/scores exp/calibrated plda cosine
# Options: --title T (plot title), --plots DET,ROC (png or pdf files), --p-target P (0.01),
# --nj N (systems evaluated at once, default 2), --bootstrap N (default 0: none; N > 0 prints a
# second table, the 95 % intervals of EER, minDCF, pAUC and AUC from N resamples of
# compute-eer-pauc's two-way cluster bootstrap), --seed S (of the bootstrap, default 0),
# --utt2spk RSPEC (bootstrap clusters: the speakers of the trial keys instead of the keys),
# --compare SYSTEM (with --bootstrap N: a third table, SYSTEM against every other system by
# compare-systems' PAIRED bootstrap, the same N resamples for both: the relative difference
# with its 95 % interval and the share of resamples in which SYSTEM is better, per metric).
# A system <name>_asnorm is labelled as <name> with ", AS-norm".

title=
plots=
p_target=0.01
nj=2
bootstrap=0
seed=0
utt2spk=
compare=
utils=$(dirname "$(readlink -f "$0")")
. $utils/parse_options.sh || exit 1
. $utils/background.sh || exit 1
if [ $# -lt 4 ]; then
  echo "Usage: $0 [--title T] [--plots DET,ROC] <trials> <scores-dir> <calibrated-dir> <system>..." >&2
  exit 1
fi
set -o pipefail
trials=$1 scores=$2 calibrated=$3
shift 3

label_of() {
  local label
  case $1 in
    *_asnorm)
      label=$(label_of ${1%_asnorm})
      case $label in
        *\)) echo "${label%)}, AS-norm)" ;;
        *) echo "$label (AS-norm)" ;;
      esac
      return ;;
    cosine_raw) echo "Cosine (raw vectors)" ;;
    cosine) echo "Cosine (centred)" ;;
    plda) echo "PLDA" ;;
    plda_adapt) echo "PLDA-adp" ;;
    pauc_auto) echo "pAUCMetric (auto)" ;;
    pauc_lnorm) echo "pAUCMetric (length-norm)" ;;
    triplet_lnorm) echo "TripletMetric (length-norm)" ;;
    pauc_plda) echo "pAUCMetric (PLDA latent)" ;;
    triplet_plda) echo "TripletMetric (PLDA latent)" ;;
    pauc_plda_adapt) echo "pAUCMetric (PLDA-adp latent)" ;;
    triplet_plda_adapt) echo "TripletMetric (PLDA-adp latent)" ;;
    *) echo "$1" ;;
  esac
}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
evaluate() {  # <system>: raw figures (and intervals) in $tmp/<system>.raw, calibrated in .cal
  $utils/evaluate.sh --p-target $p_target --bootstrap $bootstrap --seed $seed \
    ${utt2spk:+--utt2spk "$utt2spk"} $scores/$1 $trials > $tmp/$1.raw &&
  $utils/evaluate.sh --llr true --p-target $p_target $calibrated/$1 $trials > $tmp/$1.cal
}
for system in "$@"; do
  background evaluate $system
done
wait_background || exit 1

echo "| System | EER(%) | minDCF($p_target) | pAUC[0,0.01] | AUC | AP(%) | actDCF($p_target) | Cllr |"
echo "|---|---|---|---|---|---|---|---|"
plot_args=()
for system in "$@"; do
  awk -v label="$(label_of $system)" '
    FILENAME == ARGV[1] { raw[$1] = $2; next }
    { cal[$1] = $2 }
    END { printf "| %s | %.2f | %.4f | %.4f | %.4f | %.2f | %.4f | %.4f |\n", label, raw["EER"],
            raw["minDCF"], raw["pAUC"], raw["AUC"], raw["AP"], cal["actDCF"], cal["Cllr"] }' \
    $tmp/$system.raw $tmp/$system.cal || exit 1
  plot_args+=("$(label_of $system):$scores/$system")
done
if [ "$bootstrap" -gt 0 ]; then
  echo
  echo "95 % intervals of the raw scores' figures: two-way cluster bootstrap, $bootstrap resamples"
  echo "(seed $seed) of the enrollment and the test side${utt2spk:+ by speaker}"
  echo "(compute-eer-pauc --bootstrap):"
  echo
  echo "| System | EER(%) | minDCF($p_target) | pAUC[0,0.01] | AUC |"
  echo "|---|---|---|---|---|"
  for system in "$@"; do
    awk -v label="$(label_of $system)" '
      { v[$1] = $2 }
      function ci(name, format) {
        if (v[name "_lo"] == "n/a" || v[name "_lo"] == "") return "n/a"
        return sprintf(format "-" format, v[name "_lo"], v[name "_hi"]) }
      END { printf "| %s | %s | %s | %s | %s |\n", label, ci("EER", "%.2f"),
              ci("minDCF", "%.4f"), ci("pAUC", "%.4f"), ci("AUC", "%.4f") }' \
      $tmp/$system.raw || exit 1
  done
fi
if [ "$bootstrap" -gt 0 ] && [ -n "$compare" ]; then
  others=()
  for system in "$@"; do [ $system != $compare ] && others+=("$system"); done
  labels=()
  for system in "${others[@]}"; do labels+=("$(label_of $system)"); done
  echo
  $utils/paired_table.sh --bootstrap $bootstrap --seed $seed ${utt2spk:+--utt2spk "$utt2spk"} \
    --nj $nj --p-target $p_target --label "$(label_of $compare)" $trials $scores $compare \
    "${others[@]}" -- "${labels[@]}" || exit 1
fi
if [ -n "$plots" ]; then
  plot-det-roc --output=${plots%%,*} --output-roc=${plots#*,} --title="$title" \
    $trials "${plot_args[@]}" 2> >(grep -v '^LOG\|^plot-det-roc ' >&2) || {
    echo "$0: plot-det-roc failed" >&2; exit 1; }
fi
