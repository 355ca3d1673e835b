#!/usr/bin/env bash
# Paired evidence for one system against baselines on the same trials (Markdown): for each
# baseline, compare-systems' paired two-way cluster bootstrap (the same resamples for both
# score files): per metric the relative difference (system - baseline) / baseline, its 95 %
# percentile interval, and the share of resamples in which the system is better (lower EER /
# minDCF, higher pAUC; ties count one half).
#
# Usage: paired_table.sh [options] <trials> <scores-dir> <system> <baseline>... -- <label>...
#  e.g.: utils/paired_table.sh --bootstrap 1000 --utt2spk ark:data/test/utt2spk \
#          data/trials exp/scores pauc_auto plda cosine -- PLDA Cosine
# Options: --bootstrap N (default 1000), --seed S (0), --utt2spk RSPEC (clusters by speaker),
# --p-target P (0.01), --label TEXT (the system's name in the title), --nj N (comparisons at
# once, default 2). The labels after -- name the baselines in the table (default: their names).

bootstrap=1000
seed=0
utt2spk=
p_target=0.01
label=
nj=2
utils=$(dirname "$(readlink -f "$0")")
. $utils/parse_options.sh || exit 1
. $utils/background.sh || exit 1
if [ $# -lt 4 ]; then
  echo "Usage: $0 [options] <trials> <scores-dir> <system> <baseline>... [-- <label>...]" >&2
  exit 1
fi
set -o pipefail
trials=$1 scores=$2 system=$3
shift 3
baselines=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do baselines+=("$1"); shift; done
[ "$1" = "--" ] && shift
labels=("$@")
label=${label:-$system}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
compare() {  # <baseline>: the baseline is A, the system B
  compare-systems --report=json --bootstrap=$bootstrap --seed=$seed --p-target=$p_target \
    ${utt2spk:+--utt2spk=$utt2spk} $scores/$1 $scores/$system $trials > $tmp/$1.json \
    2> >(grep -v '^LOG\|^compare-systems ' >&2)
}
for baseline in "${baselines[@]}"; do
  background compare $baseline
done
wait_background || { echo "$0: compare-systems failed" >&2; exit 1; }

echo "$label against each system, paired: (B - A) / A with B = $label, its 95 % interval"
echo "and the share of resamples in which $label is better, from $bootstrap paired resamples"
echo "(seed $seed) of the enrollment and the test side${utt2spk:+ by speaker}, the same resamples"
echo "for both score files (compare-systems):"
echo
echo "| $label vs | EER: rel. diff [95 %] | better | minDCF($p_target): rel. diff [95 %] | better | pAUC[0,0.01]: rel. diff [95 %] | better |"
echo "|---|---|---|---|---|---|---|"
for i in "${!baselines[@]}"; do
  python3 -c '
import json, sys
r = {m["metric"]: m for m in json.load(open(sys.argv[1]))["metrics"]}
cells = []
for name in ("eer", "min_dcf", "pauc"):
    m = r[name]
    rel = "n/a" if m["relative"] is None else "%+.1f %%" % (100 * m["relative"])
    ci = "" if m["interval"] is None else " [%+.1f, %+.1f]" % tuple(100 * v for v in m["interval"])
    share = "n/a" if m["b_better"] is None else "%.1f %%" % (100 * m["b_better"])
    cells += [rel + ci, share]
print("| %s | %s |" % (sys.argv[2], " | ".join(cells)))
' $tmp/${baselines[$i]}.json "${labels[$i]:-${baselines[$i]}}" || exit 1
done
