# label_of <system>: the table label of a system name of the recipes (sourced by
# results_table.sh and steps/qmf.sh). A system <name>_asnorm is labelled as <name> with
# ", AS-norm".
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
