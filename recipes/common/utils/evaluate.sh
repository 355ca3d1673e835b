#!/usr/bin/env bash
# All the evaluation figures of one scores file, one "<name> <value>" line each, from a single
# compute-eer-pauc call: EER (%), minDCF (at --p-target), pAUC ([0,0.01]), AUC, AP (%), and with
# --llr true (calibrated log-likelihood ratios) also actDCF and Cllr; with --bootstrap N also
# the 95 % intervals of a two-way cluster bootstrap (compute-eer-pauc --bootstrap: enrollment and
# test keys resampled as clusters, or their speakers with --utt2spk), as "<name>_lo <value>"
# and "<name>_hi <value>" lines for EER, minDCF, pAUC and AUC.
#
# Usage: evaluate.sh [--llr true|false] [--p-target P] [--bootstrap N --seed S --utt2spk RSPEC]
#          <scores> <trials>
#  e.g.: utils/evaluate.sh exp/scores/plda data/trials | awk '$1 == "EER" { print $2 }'

llr=false
p_target=0.01
bootstrap=0
seed=0
utt2spk=
. "$(dirname "$(readlink -f "$0")")/parse_options.sh" || exit 1
if [ $# -ne 2 ]; then
  echo "Usage: $0 [--llr true|false] [--p-target P] <scores> <trials>" >&2
  exit 1
fi
set -o pipefail
options="--report=json --p-target=$p_target"
$llr && options+=" --llr"
if [ "$bootstrap" -gt 0 ]; then    # --utt2spk only shapes the bootstrap's clusters
  options+=" --bootstrap=$bootstrap --seed=$seed"
  [ -n "$utt2spk" ] && options+=" --utt2spk=$utt2spk"
fi
json=$(compute-eer-pauc $options "$1" "$2" 2> >(grep -v '^LOG\|^compute-eer-pauc ' >&2)) || {
  echo "$0: compute-eer-pauc failed on $1" >&2; exit 1; }
python3 -c '
import json, sys
r = json.loads(sys.argv[1])
print("EER %.6g" % (100 * r["eer"]))
print("minDCF %.6g" % r["min_dcf"][0]["min_dcf"])
# pAUC is null when the band holds no non-target (fewer than 1/beta of them).
print("pAUC %s" % ("n/a" if r["pauc"] is None else "%.6g" % r["pauc"]))
print("AUC %.6g" % r["auc"])
print("AP %.6g" % (100 * r["average_precision"]))
if "cllr" in r:
    print("actDCF %.6g" % r["act_dcf"][0]["act_dcf"])
    print("Cllr %.6g" % r["cllr"])
ci = r.get("confidence")
if ci:
    for name, scale, (lo, hi) in (("EER", 100, ci["eer"]), ("minDCF", 1, ci["min_dcf"][0]),
                                  ("pAUC", 1, ci["pauc"]), ("AUC", 1, ci["auc"])):
        for end, value in (("lo", lo), ("hi", hi)):
            print("%s_%s %s" % (name, end, "n/a" if value is None else "%.6g" % (scale * value)))
' "$json"
