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
#   4  scoring: Cosine, PLDA, TripletMetric and pAUCMetric with both preprocessings
#   5  calibration, 2-fold over the enrolled speakers
#   6  results table ($exp/results.md) and DET/ROC plots
# The LDA sweep and the gamma/mu grid of RESULTS.md are local/lda_sweep.sh and
# local/gamma_mu_grid.sh; local/make_results.sh writes RESULTS.md.

set -o pipefail
command_line="./run.sh${*:+ $*}"
start_time=$(date +%s)
orig_pwd=$PWD
cd "$(dirname "$(readlink -f "$0")")" || exit 1
. ./path.sh || exit 1
. ./cmd.sh || exit 1
. utils/background.sh || exit 1

stage=0
stop_stage=6
dir=                # where data/ and exp/ go (default: this recipe's directory)
exp=exp             # output directory, relative to --dir
lda_dim=100
losses="triplet pauc"
preps="lnorm plda"
metric_opts=        # extra options for train-pauc-metric (none: the shipped defaults)
nj=2                # jobs run at once (metric training, scoring, calibration)
help_message="Usage: $0 [options] [<data-dir>]
  --stage N         first stage (0..6; default $stage)
  --stop-stage N    last stage (default $stop_stage)
  --dir DIR         where data/ and exp/ go (default: $PWD)
  --exp NAME        output directory under --dir (default $exp)
  --lda-dim N       LDA dimension (default $lda_dim)
  --losses L        metrics among \"triplet pauc\" (default \"$losses\")
  --preps P         preprocessings among \"lnorm plda\" (default \"$preps\")
  --metric-opts S   extra options for train-pauc-metric
  --nj N            jobs at once (default $nj)"
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

metric_systems=
systems=
for prep in $preps; do
  [ $prep = lnorm ] && systems+=" cosine" || systems+=" plda"
  for loss in $losses; do metric_systems+=" ${loss}_$prep"; systems+=" ${loss}_$prep"; done
done
feats_of() { case $1 in lnorm) echo $exp/lnorm ;; plda) echo $exp/plda_latent ;; esac; }

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
  echo "$0: stage 0: data from $src"
  local/prepare_data.sh "$src" $data || exit 1
fi

if [ $stage -le 1 ] && [ $stop_stage -ge 1 ]; then
  echo "$0: stage 1: train mean, LDA ($lda_dim), PLDA"
  background $train_cmd $exp/log/compute_mean.log \
    compute-vector-mean scp:$data/train/xvector.scp $exp/mean.vec
  background $train_cmd $exp/log/enroll_speaker_mean.log \
    compute-vector-mean ark:$data/enroll/spk2utt scp:$data/enroll/xvector.scp \
    ark,scp:$exp/enroll_spk_xvector.ark,$exp/enroll_spk_xvector.scp \
    ark,t:$exp/enroll_num_utts.ark
  background $train_cmd $exp/log/lda.log \
    train-lda --total-covariance-factor=0.0 --dim=$lda_dim \
    "ark:subtract-vector-mean scp:$data/train/xvector.scp ark:- |" \
    ark:$data/train/utt2spk $exp/transform.mat
  wait_background || exit 1
  $train_cmd $exp/log/plda.log \
    train-plda ark:$data/train/spk2utt \
    "ark:subtract-vector-mean scp:$data/train/xvector.scp ark:- | transform-vectors $exp/transform.mat ark:- ark:- | normalize-vector-length ark:- ark:- |" \
    $exp/plda || exit 1
fi

if [ $stage -le 2 ] && [ $stop_stage -ge 2 ]; then
  echo "$0: stage 2: length-normalised and PLDA-latent vectors"
  train_lda="ark:subtract-vector-mean scp:$data/train/xvector.scp ark:- | transform-vectors $exp/transform.mat ark:- ark:- |"
  enroll_lda="ark:subtract-vector-mean $exp/mean.vec scp:$exp/enroll_spk_xvector.scp ark:- | transform-vectors $exp/transform.mat ark:- ark:- |"
  test_lda="ark:subtract-vector-mean $exp/mean.vec scp:$data/test/xvector.scp ark:- | transform-vectors $exp/transform.mat ark:- ark:- |"
  mkdir -p $exp/lnorm $exp/plda_latent
  for set in train enroll test; do
    eval "input=\$${set}_lda"
    background $train_cmd $exp/log/lnorm_$set.log \
      normalize-vector-length --scaleup=false "$input" \
      ark,scp:$exp/lnorm/$set.ark,$exp/lnorm/$set.scp
    num_utts=
    [ $set = enroll ] && num_utts=--num-utts=ark:$exp/enroll_num_utts.ark
    background $train_cmd $exp/log/plda_latent_$set.log \
      transform-plda-latent $num_utts $exp/plda \
      "$input normalize-vector-length ark:- ark:- |" \
      ark,scp:$exp/plda_latent/$set.ark,$exp/plda_latent/$set.scp
  done
  wait_background || exit 1
fi

if [ $stage -le 3 ] && [ $stop_stage -ge 3 ]; then
  echo "$0: stage 3: metrics:$metric_systems"
  mkdir -p $exp/metrics
  for system in $metric_systems; do
    background $train_cmd $exp/log/train_metric_$system.log \
      train-pauc-metric --loss=${system%%_*} $metric_opts ark:$data/train/spk2utt \
      scp:$(feats_of ${system#*_})/train.scp $exp/metrics/$system
  done
  wait_background || exit 1
fi

if [ $stage -le 4 ] && [ $stop_stage -ge 4 ]; then
  echo "$0: stage 4: scoring $(wc -l < $trials) trials"
  mkdir -p $exp/scores
  background $train_cmd $exp/log/score_cosine.log \
    score-cosine-trials "cut -d' ' -f1,2 $trials |" scp:$exp/lnorm/enroll.scp \
    scp:$exp/lnorm/test.scp $exp/scores/cosine
  background $train_cmd $exp/log/score_plda.log \
    score-plda-trials --normalize-length=true \
    --num-utts=ark:$exp/enroll_num_utts.ark \
    "copy-plda --smoothing=0.0 $exp/plda - |" \
    "ark:subtract-vector-mean $exp/mean.vec scp:$exp/enroll_spk_xvector.scp ark:- | transform-vectors $exp/transform.mat ark:- ark:- | normalize-vector-length ark:- ark:- |" \
    "ark:subtract-vector-mean $exp/mean.vec scp:$data/test/xvector.scp ark:- | transform-vectors $exp/transform.mat ark:- ark:- | normalize-vector-length ark:- ark:- |" \
    "cut -d' ' -f1,2 $trials |" $exp/scores/plda
  for system in $metric_systems; do
    feats=$(feats_of ${system#*_})
    background $train_cmd $exp/log/score_$system.log \
      score-pauc-trials $exp/metrics/$system scp:$feats/enroll.scp scp:$feats/test.scp \
      $trials $exp/scores/$system
  done
  wait_background || exit 1
fi

if [ $stage -le 5 ] && [ $stop_stage -ge 5 ]; then
  echo "$0: stage 5: calibration (2-fold over the enrolled speakers)"
  utils/calibrate_2fold.sh --cmd "$train_cmd" --nj $nj $trials $exp/scores $exp/calibrated $systems || exit 1
fi

if [ $stage -le 6 ] && [ $stop_stage -ge 6 ]; then
  echo "$0: stage 6: results"
  utils/results_table.sh --nj $nj --title "ETRI i-vectors, LDA $lda_dim, $(wc -l < $trials) trials" \
    --plots $exp/det.png,$exp/roc.png $trials $exp/scores $exp/calibrated $systems \
    > $exp/results.md.tmp || exit 1
  printf '\n_Command: `%s` (stages %s-6: %d s)._\n' "$command_line" $stage \
    $(( $(date +%s) - start_time )) >> $exp/results.md.tmp
  mv $exp/results.md.tmp $exp/results.md
  cat $exp/results.md
fi
