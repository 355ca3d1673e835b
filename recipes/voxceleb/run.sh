#!/usr/bin/env bash
# The paper's back-ends on Kaldi's egs/voxceleb/v2, after x-vector extraction (its stage 9), or
# on any speaker embeddings (WeSpeaker, SpeechBrain, ...) laid out the same way.
#
# Usage: run.sh [options] <egs-dir>        (no default: "." for the current directory)
#   e.g. cd kaldi/egs/voxceleb/v2 && /path/to/pauc-backend/recipes/voxceleb/run.sh --nj 8 .
#   or, to keep it in the egs directory, a symbolic link (not a copy: it finds its helpers in
#   recipes/common through the link): ln -s /path/to/pauc-backend/recipes/voxceleb/run.sh run_pauc.sh
#
# It reads the recipe's own files ($nnet_dir/xvectors_{train,voxceleb1_test}/xvector.scp,
# data/train/{spk2utt,utt2spk}, data/voxceleb1_test/trials) and writes next to Kaldi's:
# mean.vec, transform.mat, plda, metrics and pauc_auto/ in $nnet_dir/xvectors_train, and the
# scores exp/scores_voxceleb1_test (PLDA, Kaldi's name) and exp/scores_voxceleb1_test_<system>.
# Stages (10-12 are Kaldi's own, with the same commands):
#   10  mean.vec, LDA (--lda-dim, capped by the vector dimension), PLDA
#   11  PLDA scoring                      -> exp/scores_voxceleb1_test
#   12  EER and minDCF (p-target 0.01 and 0.001) of the PLDA scores, echoed as Kaldi does
#   13  pAUCMetric (--losses) training on length-normalised vectors and in the PLDA latent space
#   14  Cosine of the raw vectors (cosine_raw: what users of neural embeddings already have),
#       cosine after centring, LDA and length norm, and the metrics -> ..._<system>
#   15  pAUCMetric (auto): train-pauc-auto --enroll-utts=0 (single segments on both sides, as
#       VoxCeleb1-O) chooses and trains a back-end from the training speakers, score-pauc-auto
#   16  one table of every system: EER, minDCF(0.01), minDCF(0.001), pAUC[0,0.01]
#   17  when data/$test_set has utt2dur or utt2num_frames (make_mfcc.sh --write-utt2num-frames
#       writes it): calibration 2-fold over the test speakers of every system, score-only and
#       QMF (min and max of the two segments' log durations, as WeSpeaker's and Hyperion's QMF):
#       actDCF and Cllr of both
# Scoring stages echo EER, minDCF (p-target 0.01 and 0.001) and pAUC[0,0.01] per system. With
# --trials "trials trials_E trials_H" every list in data/voxceleb1_test is scored (scores
# ..._E, ..._H); make them with convert-voxceleb-trials, e.g.
#   convert-voxceleb-trials vox1_H_cleaned.txt data/voxceleb1_test/trials_H
# (the E and H lists need vectors of all of VoxCeleb1, so a back-end trained on VoxCeleb2 only).
#
# Neural embeddings: put them where the x-vectors would be, with import-vectors, e.g.
#   import-vectors --keys=train_utts.txt train.npy \
#     ark,scp:$PWD/exp/xvector_nnet_1a/xvectors_train/xvector.ark,$PWD/exp/xvector_nnet_1a/xvectors_train/xvector.scp
# (and the same for xvectors_voxceleb1_test), with data/train/{utt2spk,spk2utt} and
# data/voxceleb1_test/trials in Kaldi's key format (convert-voxceleb-trials writes it).
# With --nj N the trial lists are split into N parts scored as JOB=1:N jobs through $train_cmd
# (run.pl, queue.pl or slurm.pl from cmd.sh) and merged: identical to --nj 1.

set -o pipefail
script_dir=$(dirname "$(readlink -f "$0")")

stage=10
stop_stage=100
use_kaldi=auto      # auto|true|false: Kaldi's binaries for the baseline stages when on PATH
nj=1                # parallel scoring jobs
lda_dim=200         # as egs/voxceleb/v2
nnet_dir=exp/xvector_nnet_1a
test_set=voxceleb1_test
trials="trials"     # trial lists in data/$test_set
losses="pauc"
metric_opts=        # extra options for train-pauc-metric
auto=true           # stage 15: pAUCMetric (auto)
auto_opts=          # extra options for train-pauc-auto, e.g. "--num-folds=3"
qmf_systems=        # stage 17: the systems calibrated (default: every scored one)
adapt=              # optional unlabelled in-domain vectors (rspecifier) for train-pauc-auto --adapt
help_message="Usage: $0 [options] <egs-dir>      (e.g. . for the current directory)
  --stage N          first stage (10..17; default $stage)
  --stop-stage N     last stage
  --use-kaldi B      auto|true|false: Kaldi's binaries for the baseline stages (default $use_kaldi)
  --nj N             parallel scoring jobs through \$train_cmd (default $nj)
  --lda-dim N        LDA dimension (default $lda_dim; capped by the vector dimension)
  --nnet-dir DIR     x-vector directory (default $nnet_dir)
  --test-set NAME    evaluation set: data/NAME and \$nnet_dir/xvectors_NAME (default $test_set)
  --trials L         trial lists in data/\$test_set (default \"$trials\"; e.g. \"trials trials_E trials_H\")
  --losses L         metrics to train, among \"pauc triplet\" (default \"$losses\")
  --metric-opts S    extra options for train-pauc-metric
  --auto B           train and score pAUCMetric (auto) (true|false, default $auto)
  --auto-opts S      extra options for train-pauc-auto (e.g. \"--seed=1\")
  --qmf-systems S    stage 17: systems to calibrate, e.g. \"plda cosine_raw\" (default: every
                     scored one)
  --adapt RSPEC      unlabelled in-domain vectors for pAUCMetric (auto) (train-pauc-auto
                     --adapt: centring mean and adapted PLDA from them; default none)"
if [ -f "$script_dir/../common/utils/parse_options.sh" ]; then
  . "$script_dir/../common/utils/parse_options.sh" || exit 1
else
  . utils/parse_options.sh || exit 1   # Kaldi's, when this script sits in the egs directory
fi
# The egs directory is required: a run in the wrong directory would create exp/ there.
if [ $# -ne 1 ]; then
  printf '%s\n' "$help_message" >&2
  exit 1
fi
case "$auto" in true|false) ;; *) echo "$0: --auto must be true or false" >&2; exit 1 ;; esac
cd "$1" || exit 1
[ -f ./cmd.sh ] && { . ./cmd.sh || exit 1; }
[ -f ./path.sh ] && { . ./path.sh || exit 1; }
. "$script_dir/../common/utils/setup_env.sh" || exit 1

train=$nnet_dir/xvectors_train
test=$nnet_dir/xvectors_$test_set
for list in $trials; do
  [ -s data/$test_set/$list ] || { echo "$0: no trials in data/$test_set/$list" >&2; exit 1; }
done
# Evaluation stream: every vector centred on the training mean.vec, LDA (both trial sides come
# from the one table of single segments).
test_lda="ark:$subtract_mean $train/mean.vec scp:$test/xvector.scp ark:- | $transform_vec $train/transform.mat ark:- ark:- |"
train_lda="ark:$subtract_mean scp:$train/xvector.scp ark:- | $transform_vec $train/transform.mat ark:- ark:- |"
prep_suffix() {  # <prep>: LDA'd vectors -> the metric's input space
  case $1 in
    lnorm) echo "$normalize_length --scaleup=false ark:- ark:- |" ;;
    plda) echo "$normalize_length ark:- ark:- | transform-plda-latent $train/plda ark:- ark:- |" ;;
  esac
}
# scores_of <list> [<system>]: Kaldi's exp/scores_voxceleb1_test for PLDA on "trials".
scores_of() {
  local tag=
  [ "$1" != trials ] && tag=_${1#trials_}
  echo exp/scores_$test_set$tag${2:+_$2}
}
set_label() { [ "$1" = trials ] && echo $test_set || echo "$test_set $1"; }

# report <label> <scores> <trials>: the lines egs/voxceleb/v2 echoes (stage 12), plus pAUC.
report() {
  local eer mindcf1 mindcf2 pauc
  read -r eer mindcf1 mindcf2 pauc <<< "$(evaluate $2 $3)" || return 1
  [ -n "$pauc" ] || return 1
  echo "$1"
  echo "EER: $eer%"
  echo "minDCF(p-target=0.01): $mindcf1"
  echo "minDCF(p-target=0.001): $mindcf2"
  echo "pAUC[0,0.01]: $pauc"
}

# score_split <list> <name> <command...>: the command as JOB=1:$nj jobs, its arguments TRIALS
# and SCORES standing for JOB's part of the trial list and its scores, merged into
# $(scores_of <list> <name>).
score_split() {
  local list=$1 name=$2 split=exp/scores/split$nj/${test_set}_$1 arg
  local -a command=()
  shift 2
  for arg in "$@"; do
    case $arg in
      TRIALS) command+=("$split/trials.JOB") ;;
      SCORES) command+=("$split/scores${name:+_$name}.JOB") ;;
      *) command+=("$arg") ;;
    esac
  done
  split_trials data/$test_set/$list $split $test/xvector.scp $test/xvector.scp || return 1
  $train_cmd JOB=1:$nj exp/scores/log/${test_set}_${list}_scoring${name:+_$name}.JOB.log \
    "${command[@]}" || return 1
  merge_scores $split $(scores_of $list $name) $name
}

if [ $stage -le 10 ] && [ $stop_stage -ge 10 ]; then
  dim=$(copy-vectors --print-args=false "scp:head -n 1 $train/xvector.scp |" ark,t:- 2>/dev/null |
        awk '{ print NF - 3 }')
  [ -n "$dim" ] && [ "$dim" -gt 0 ] || { echo "$0: cannot read $train/xvector.scp" >&2; exit 1; }
  if [ $lda_dim -gt $dim ]; then
    echo "$0: --lda-dim $lda_dim is above the vector dimension $dim; using $dim"
    lda_dim=$dim
  fi
  # Compute the mean vector for centering the evaluation xvectors.
  $train_cmd $train/log/compute_mean.log \
    $ivector_mean scp:$train/xvector.scp \
    $train/mean.vec || exit 1

  # This script uses LDA to decrease the dimensionality prior to PLDA.
  $train_cmd $train/log/lda.log \
    $compute_lda --total-covariance-factor=0.0 --dim=$lda_dim \
    "ark:$subtract_mean scp:$train/xvector.scp ark:- |" \
    ark:data/train/utt2spk $train/transform.mat || exit 1

  # Train the PLDA model.
  $train_cmd $train/log/plda.log \
    $compute_plda ark:data/train/spk2utt \
    "$train_lda $normalize_length ark:-  ark:- |" \
    $train/plda || exit 1
fi

if [ $stage -le 11 ] && [ $stop_stage -ge 11 ]; then
  for list in $trials; do
    score_split $list "" $plda_scoring --normalize-length=true \
      "$copy_plda --smoothing=0.0 $train/plda - |" \
      "$test_lda $normalize_length ark:- ark:- |" \
      "$test_lda $normalize_length ark:- ark:- |" TRIALS SCORES || exit 1
  done
fi

if [ $stage -le 12 ] && [ $stop_stage -ge 12 ]; then
  for list in $trials; do
    report "PLDA, $(set_label $list):" $(scores_of $list) data/$test_set/$list || exit 1
  done
fi

if [ $stage -le 13 ] && [ $stop_stage -ge 13 ]; then
  for prep in lnorm plda; do
    for loss in $losses; do
      # Trained on exactly the PLDA training stream, mapped into the preprocessing's space.
      $train_cmd $train/log/metric_${loss}_$prep.log \
        train-pauc-metric --loss=$loss $metric_opts ark:data/train/spk2utt \
        "$train_lda $(prep_suffix $prep)" $train/metric_${loss}_$prep || exit 1
    done
  done
fi

new_systems="cosine_raw cosine"
for prep in lnorm plda; do for loss in $losses; do new_systems+=" ${loss}_$prep"; done; done

if [ $stage -le 14 ] && [ $stop_stage -ge 14 ]; then
  for list in $trials; do
    for system in $new_systems; do
      case $system in
        cosine_raw)
          score_split $list $system score-cosine-trials --normalize=true TRIALS \
            scp:$test/xvector.scp scp:$test/xvector.scp SCORES ;;
        cosine)
          score_split $list $system score-cosine-trials TRIALS \
            "$test_lda $(prep_suffix lnorm)" "$test_lda $(prep_suffix lnorm)" SCORES ;;
        *)
          prep=${system#*_}
          score_split $list $system score-pauc-trials $train/metric_$system \
            "$test_lda $(prep_suffix $prep)" "$test_lda $(prep_suffix $prep)" \
            TRIALS SCORES ;;
      esac || exit 1
      report "$(system_label $system), $(set_label $list):" $(scores_of $list $system) \
        data/$test_set/$list || exit 1
    done
  done
fi

if $auto && [ $stage -le 15 ] && [ $stop_stage -ge 15 ]; then
  # Held-out trials built like VoxCeleb1-O: a single segment against a single segment. When
  # the data directories have utt2dur (or utt2num_frames) the final calibration may keep the
  # segments' durations (train-pauc-auto --quality-measures=auto decides on held-out trials);
  # score-pauc-auto then gets the test segments' durations.
  mkdir -p $train/pauc_auto_durations || exit 1
  dur_opts=
  "$script_dir/../common/utils/durations.sh" data/train $train/pauc_auto_durations/train
  case $? in 0) dur_opts=--utt2dur=ark:$train/pauc_auto_durations/train ;; 2) ;; *) exit 1 ;; esac
  score_dur=()
  "$script_dir/../common/utils/durations.sh" data/$test_set $train/pauc_auto_durations/test
  case $? in
    0) score_dur=(--enroll-duration=ark:$train/pauc_auto_durations/test
                  --test-duration=ark:$train/pauc_auto_durations/test) ;;
    2) ;;
    *) exit 1 ;;
  esac
  echo "$0: train-pauc-auto --enroll-utts=0 ${adapt:+--adapt=$adapt} $dur_opts $auto_opts (minutes; log: $train/log/train_pauc_auto.log)"
  $train_cmd $train/log/train_pauc_auto.log \
    train-pauc-auto --enroll-utts=0 ${adapt:+"--adapt=$adapt"} $dur_opts $auto_opts \
    scp:$train/xvector.scp ark:data/train/spk2utt $train/pauc_auto || exit 1
  awk -v script="$0" '$1 == "system" || $1 == "system_title" || $1 == "lda_dim" || $1 ~ /^heldout_(pauc|eer|min_dcf)$/ {
      line = line (line == "" ? "" : ", ") $1 " " substr($0, length($1) + 2) }
    END { print script ": chosen: " line }' $train/pauc_auto/system.txt || exit 1
  # the durations only for a model whose calibration kept them (else a WARNING says so)
  grep -q '^quality_measures .*duration' $train/pauc_auto/system.txt || score_dur=()
  for list in $trials; do
    score_split $list pauc_auto score-pauc-auto "${score_dur[@]}" $train/pauc_auto \
      scp:$test/xvector.scp scp:$test/xvector.scp TRIALS SCORES || exit 1
    report "$(system_label pauc_auto), $(set_label $list):" $(scores_of $list pauc_auto) \
      data/$test_set/$list || exit 1
  done
fi

if [ $stage -le 16 ] && [ $stop_stage -ge 16 ]; then
  systems="plda $new_systems"
  $auto && systems+=" pauc_auto"
  for list in $trials; do
    echo "Summary, $(set_label $list):"
    printf '%-30s %8s %12s %13s %8s\n' system EER% "minDCF(0.01)" "minDCF(0.001)" pAUC
    for system in $systems; do
      scores=$(scores_of $list $system)
      [ $system = plda ] && scores=$(scores_of $list)
      [ -f $scores ] || { echo "$0: missing $scores (run the earlier stages)" >&2; exit 1; }
      read -r eer mindcf1 mindcf2 pauc <<< "$(evaluate $scores data/$test_set/$list)" || exit 1
      printf '%-30s %8s %12s %13s %8s\n' "$(system_label $system)" $eer $mindcf1 $mindcf2 $pauc
    done
  done
fi

if [ $stage -le 17 ] && [ $stop_stage -ge 17 ]; then
  # No development set here: each half of the test speakers is calibrated on the other half's
  # trials (utils/calibrate_2fold.sh --utt2spk); both sides are segments of data/$test_set.
  qmf_dir=exp/qmf_2fold_$test_set
  mkdir -p $qmf_dir || exit 1
  "$script_dir/../common/utils/durations.sh" data/$test_set $qmf_dir/durations
  case $? in
    0)
      systems="plda $new_systems"
      $auto && systems+=" pauc_auto"
      [ -n "$qmf_systems" ] && systems=$qmf_systems
      for list in $trials; do
        names=
        for system in $systems; do
          scores=$(scores_of $list $system)
          [ $system = plda ] && scores=$(scores_of $list)
          [ -f $scores ] && names+=" ${scores#exp/}"
        done
        "$script_dir/../common/steps/qmf_2fold.sh" --cmd "$train_cmd" --nj $nj \
          --utt2spk data/$test_set/utt2spk data/$test_set/$list exp $qmf_dir/durations \
          $qmf_dir/durations $qmf_dir/$list $names > $qmf_dir/$list.summary || exit 1
        while read -r name act cllr qmf_act qmf_cllr; do
          system=${name#$(basename $(scores_of $list))}
          system=${system#_}
          echo "$(system_label ${system:-plda}), $(set_label $list), calibrated 2-fold over the test speakers: actDCF(p-target=0.01): $act, Cllr: $cllr; with durations (QMF): actDCF(p-target=0.01): $qmf_act, Cllr: $qmf_cllr"
        done < $qmf_dir/$list.summary
      done ;;
    2) echo "$0: stage 17: no utt2dur or utt2num_frames in data/$test_set: no QMF calibration" ;;
    *) exit 1 ;;
  esac
fi
