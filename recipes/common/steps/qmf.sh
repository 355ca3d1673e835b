#!/usr/bin/env bash
# Quality-measure calibration (QMF) against score-only calibration, both trained on
# development trials (speakers the evaluation does not use) and applied to the evaluation
# trials, compared on the same paired resamples (compare-systems --llr): a Markdown table of
# actDCF, Cllr, minDCF and EER of both, the relative difference (QMF - score-only) /
# score-only with its 95 % interval, per system. Score-only calibration is monotone, so its
# minDCF is the raw scores' and its actDCF - minDCF is its miscalibration at that prior; a QMF
# can remove that and, since it moves trials of different durations apart, change minDCF and
# EER too. The QMF sees min and max of the two sides' log durations
# (train-calibration --enroll-duration/--test-duration); the score-only calibration is the
# same logistic regression without them.
#
# Usage: qmf.sh [options] <dev-trials> <dev-scores-dir> <dev-enroll-dur> <dev-test-dur>
#          <trials> <scores-dir> <enroll-dur> <test-dur> <out-dir> <system> [<system>...]
#  e.g.: steps/qmf.sh data/dev_trials exp/dev_scores exp/dev_enroll_dur data/dev_test/utt2dur \
#          data/trials exp/scores exp/enroll_dur data/test/utt2dur exp/qmf plda cosine
# Reads <dev-scores-dir>/<system> and <scores-dir>/<system>; writes <out-dir>/{score_only,qmf}/
# <system> (calibrated evaluation scores, LLRs), the models and <out-dir>/<system>.json
# (compare-systems' report). Durations: "<key> <seconds>" tables (utils/durations.sh).
# Options: --cmd CMD (default utils/local_run.sh), --nj N (systems at once, default 2),
# --prior P (0.01), --bootstrap N (paired resamples, default 1000), --utt2spk RSPEC
# (bootstrap clusters by speaker), --qmf-opts S (more train-calibration options, e.g.
# --quality-interactions).

cmd="$(dirname "$(readlink -f "$0")")/../utils/local_run.sh"
nj=2
prior=0.01
bootstrap=1000
utt2spk=
qmf_opts=
utils=$(dirname "$(readlink -f "$0")")/../utils
. $utils/parse_options.sh || exit 1
. $utils/background.sh || exit 1
. $utils/labels.sh || exit 1
if [ $# -lt 10 ]; then
  echo "Usage: $0 [options] <dev-trials> <dev-scores-dir> <dev-enroll-dur> <dev-test-dur>" \
    "<trials> <scores-dir> <enroll-dur> <test-dur> <out-dir> <system>..." >&2
  exit 1
fi
set -o pipefail
dev_trials=$1 dev_scores=$2 dev_enroll_dur=$3 dev_test_dur=$4
trials=$5 scores=$6 enroll_dur=$7 test_dur=$8 out=$9
shift 9
mkdir -p $out/score_only $out/qmf $out/log || exit 1
dev_quality="--enroll-duration=ark:$dev_enroll_dur --test-duration=ark:$dev_test_dur"
quality="--enroll-duration=ark:$enroll_dur --test-duration=ark:$test_dur"
clusters=
[ -n "$utt2spk" ] && clusters=--utt2spk=$utt2spk

one_system() {  # <system>
  local system=$1
  $cmd $out/log/train_score_only_$system.log \
    train-calibration --prior=$prior $dev_trials $dev_scores/$system \
    $out/score_only/$system.mdl || return 1
  $cmd $out/log/train_qmf_$system.log \
    train-calibration --prior=$prior $qmf_opts $dev_quality $dev_trials $dev_scores/$system \
    $out/qmf/$system.mdl || return 1
  $cmd $out/log/apply_score_only_$system.log \
    apply-calibration $out/score_only/$system.mdl $scores/$system $out/score_only/$system \
    || return 1
  $cmd $out/log/apply_qmf_$system.log \
    apply-calibration $quality $out/qmf/$system.mdl $scores/$system $out/qmf/$system || return 1
  $cmd $out/log/compare_$system.log \
    compare-systems --llr --report=json --bootstrap=$bootstrap $clusters \
    --p-target=$prior $out/score_only/$system $out/qmf/$system $trials \
    \> $out/$system.json || return 1
}

for system in "$@"; do
  background one_system $system
done
wait_background || exit 1

echo "| System | actDCF($prior) score-only | actDCF QMF | (QMF-A)/A [95%] | Cllr score-only | Cllr QMF | (QMF-A)/A [95%] | minDCF($prior) score-only | minDCF QMF | (QMF-A)/A [95%] | EER(%) score-only | EER(%) QMF | (QMF-A)/A [95%] |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for system in "$@"; do
  python3 -c '
import json, sys
rows = {(r["metric"], r.get("p_target")): r for r in json.load(open(sys.argv[1]))["metrics"]}
act = [r for k, r in rows.items() if k[0] == "act_dcf"][0]
min_dcf = [r for k, r in rows.items() if k[0] == "min_dcf"][0]
cllr, eer = rows[("cllr", None)], rows[("eer", None)]
def rel(r):
    lo, hi = r["interval"]
    return "%+.1f%% [%+.1f, %+.1f]" % (100 * r["relative"], 100 * lo, 100 * hi)
print("| %s | %.4f | %.4f | %s | %.4f | %.4f | %s | %.4f | %.4f | %s | %.2f | %.2f | %s |" % (
    sys.argv[2], act["a"], act["b"], rel(act), cllr["a"], cllr["b"], rel(cllr),
    min_dcf["a"], min_dcf["b"], rel(min_dcf), 100 * eer["a"], 100 * eer["b"], rel(eer)))
' $out/$system.json "$(label_of $system)" || exit 1
done
