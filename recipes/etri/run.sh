#!/usr/bin/env bash
# The paper's comparison on real i-vectors (ETRI Korean read speech, 200-dim), in Kaldi's
# recipe style. The back-end follows the reference recipe of the data's README (egs/sre16/v2
# without adaptation): subtract the TRAIN mean, LDA, length norm, PLDA; the enrollment vector
# of a speaker is the mean of its raw vectors (PLDA scored with --num-utts); evaluation vectors
# are centred with the train mean.
#
# Usage: run.sh [options] [<data-dir>]
#   <data-dir> holds {train,enroll,test}/{xvector.scp,spk2utt,utt2spk} and trials
#   (default: ../shared/realdata/etri beside the checkout).
#
# Stages:
#   0  data/: the data directory with absolute scp paths
#   1  mean.vec (train), enrollment speaker means, LDA, PLDA
#   2  preprocessed vectors: LDA + unit length ("length-norm") and PLDA latent ("PLDA-based")
#   3  train-pauc-metric --loss=pauc|triplet on each preprocessing (defaults as shipped)
#   4  scoring: Cosine of the raw vectors (no mean, no LDA), Cosine, PLDA, TripletMetric and pAUCMetric with both preprocessings; with
#      --asnorm, the systems named also with AS-norm (cohort: the training speakers' mean
#      vectors in each system's input space, steps/make_cohorts.sh at the end of stage 2)
#   5  pAUCMetric (auto): train-pauc-auto --enroll-utts=3 (minutes), score-pauc-auto
#   6  calibration, 2-fold over the enrolled speakers
#   7  results table ($exp/results.md), DET/ROC plots; with --bootstrap N, the 95 % intervals
#      (two-way cluster bootstrap over the speakers of both trial sides) and the paired
#      comparison of pAUCMetric (auto) against every other system (compare-systems)
# The stage code is shared with recipes/timit: steps/ (recipes/common/steps). Each stage is
# printed with its elapsed time; the tools' output goes to $exp/log/*.log.
# The LDA sweep and the gamma/mu grid of RESULTS.md are steps/lda_sweep.sh and
# steps/gamma_mu_grid.sh; local/make_results.sh writes RESULTS.md.

set -o pipefail
command_line="./run.sh${*:+ $*}"
start_time=$(date +%s)
orig_pwd=$PWD
cd "$(dirname "$(readlink -f "$0")")" || exit 1
. ./path.sh || exit 1
. ./cmd.sh || exit 1
. utils/progress.sh || exit 1

stage=0
stop_stage=7
dir=                # where data/ and exp/ go (default: this recipe's directory)
exp=exp             # output directory, relative to --dir
lda_dim=100
losses="triplet pauc"
preps="lnorm plda"
metric_opts=        # extra options for train-pauc-metric (none: the shipped defaults)
auto=true           # stage 5: pAUCMetric (auto)
auto_opts=          # extra options for train-pauc-auto (none: the shipped defaults)
asnorm=             # systems also scored with AS-norm (<system>_asnorm), e.g. "cosine plda"
top_n=100           # AS-norm: the top-N cohort scores of each side (cohort: training speakers)
bootstrap=0         # resamples of the cluster bootstrap for the intervals table (0: none)
enroll_utts=3       # utterances averaged per enrolled speaker (ETRI's design), for train-pauc-auto
nj=2                # jobs run at once (metric training, scoring, calibration)
help_message="Usage: $0 [options] [<data-dir>]
  --stage N         first stage (0..7; default $stage)
  --stop-stage N    last stage (default $stop_stage)
  --dir DIR         where data/ and exp/ go (default: $PWD)
  --exp NAME        output directory under --dir (default $exp)
  --lda-dim N       LDA dimension (default $lda_dim)
  --losses L        metrics among \"triplet pauc\" (default \"$losses\")
  --preps P         preprocessings among \"lnorm plda\" (default \"$preps\")
  --metric-opts S   extra options for train-pauc-metric
  --auto B          train and score pAUCMetric (auto) (true|false, default $auto)
  --auto-opts S     extra options for train-pauc-auto (e.g. \"--seed=1\")
  --asnorm S        systems also scored with AS-norm, e.g. \"cosine plda pauc_lnorm pauc_plda\"
                    (cohort: the training speakers' mean vectors; default none)
  --top-n N         AS-norm: top-N cohort scores of each side (default $top_n)
  --bootstrap N     resamples for a table of 95 % intervals, e.g. 1000 (default 0: none)
  --nj N            jobs at once (default $nj)
Each stage is printed with its elapsed time; logs go to <dir>/<exp>/log/."
. utils/parse_options.sh || exit 1
if [ $# -gt 1 ]; then
  printf '%s\n' "$help_message" >&2
  exit 1
fi
if [ $# -eq 1 ]; then
  case "$1" in /*) src=$1 ;; *) src=$orig_pwd/$1 ;; esac
else
  src=$PWD/../../../shared/realdata/etri
fi
case "$dir" in
  '') dir=$PWD ;;
  /*) ;;
  *) dir=$orig_pwd/$dir ;;
esac
case "$exp" in /*) ;; *) exp=$dir/$exp ;; esac
data=$dir/data
trials=$data/trials
mkdir -p $exp/log || exit 1
echo "$0: logs in $exp/log"

metric_systems=
systems="cosine_raw"   # cosine of the raw vectors: what users of neural embeddings already have
for prep in $preps; do
  [ $prep = lnorm ] && systems+=" cosine" || systems+=" plda"
  for loss in $losses; do metric_systems+=" ${loss}_$prep"; systems+=" ${loss}_$prep"; done
done
scored=$systems
for system in $asnorm; do
  [[ " $systems " == *" $system "* ]] && scored+=" ${system}_asnorm"
done
systems=$scored
$auto && systems+=" pauc_auto"
# The evaluation sides, raw: the enrolled speakers' mean vectors (stage 1), the test vectors.
enroll=scp:$exp/enroll_spk_xvector.scp
num_utts=ark:$exp/enroll_num_utts.ark
test=scp:$data/test/xvector.scp

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
  stage_begin 0 "data from $src"
  steps/prepare_data.sh "$src" $data train enroll test || exit 1
  stage_end
fi

if [ $stage -le 1 ] && [ $stop_stage -ge 1 ]; then
  stage_begin 1 "train mean, LDA ($lda_dim), PLDA"
  $train_cmd $exp/log/enroll_speaker_mean.log \
    compute-vector-mean ark:$data/enroll/spk2utt scp:$data/enroll/xvector.scp \
    ark,scp:$exp/enroll_spk_xvector.ark,$exp/enroll_spk_xvector.scp \
    ark,t:$exp/enroll_num_utts.ark || exit 1
  steps/train_backend.sh --cmd "$train_cmd" --nj $nj --lda-dim $lda_dim $data/train $exp || exit 1
  stage_end
fi

if [ $stage -le 2 ] && [ $stop_stage -ge 2 ]; then
  stage_begin 2 "length-normalised and PLDA-latent vectors"
  steps/preprocess.sh --cmd "$train_cmd" --nj $nj --own-mean true $exp train \
    scp:$data/train/xvector.scp || exit 1
  steps/preprocess.sh --cmd "$train_cmd" --nj $nj --num-utts $num_utts $exp enroll \
    $enroll || exit 1
  steps/preprocess.sh --cmd "$train_cmd" --nj $nj $exp test $test || exit 1
  if [ -n "$asnorm" ]; then
    steps/make_cohorts.sh --cmd "$train_cmd" --nj $nj $data/train $exp || exit 1
  fi
  stage_end
fi

if [ $stage -le 3 ] && [ $stop_stage -ge 3 ]; then
  stage_begin 3 "metrics:$metric_systems"
  with_progress "$exp/log/train_metric_*.log" \
    steps/train_metrics.sh --cmd "$train_cmd" --nj $nj --metric-opts "$metric_opts" \
      $data/train/spk2utt $exp $metric_systems || exit 1
  stage_end
fi

if [ $stage -le 4 ] && [ $stop_stage -ge 4 ]; then
  stage_begin 4 "scoring $(wc -l < $trials) trials"
  steps/score.sh --cmd "$train_cmd" --nj $nj --top-n $top_n --num-utts $num_utts $trials $exp \
    $enroll $test ${systems/ pauc_auto/} || exit 1
  stage_end
fi

if $auto && [ $stage -le 5 ] && [ $stop_stage -ge 5 ]; then
  stage_begin 5 "pAUCMetric (auto): cross-fitted choice on the training speakers (minutes)"
  steps/pauc_auto.sh --cmd "$train_cmd" --enroll-utts $enroll_utts --num-utts $num_utts \
    --auto-opts "$auto_opts" $data/train $enroll $test $trials $exp || exit 1
  stage_end
fi

if [ $stage -le 6 ] && [ $stop_stage -ge 6 ]; then
  stage_begin 6 "calibration (2-fold over the enrolled speakers)"
  with_progress "$exp/calibrated/log/*.log" \
    utils/calibrate_2fold.sh --cmd "$train_cmd" --nj $nj $trials $exp/scores $exp/calibrated \
      $systems || exit 1
  stage_end
fi

if [ $stage -le 7 ] && [ $stop_stage -ge 7 ]; then
  stage_begin 7 "results"
  utils/results_table.sh --nj $nj --bootstrap $bootstrap --utt2spk ark:$data/test/utt2spk \
    --title "ETRI i-vectors, LDA $lda_dim, $(wc -l < $trials) trials" \
    $($auto && echo --compare pauc_auto) \
    --plots $exp/det.png,$exp/roc.png $trials $exp/scores $exp/calibrated $systems \
    > $exp/results.md.tmp || exit 1
  printf '\n_Command: `%s` (stages %s-7: %d s)._\n' "$command_line" $stage \
    $(( $(date +%s) - start_time )) >> $exp/results.md.tmp
  mv $exp/results.md.tmp $exp/results.md
  cat $exp/results.md
  stage_end
fi
