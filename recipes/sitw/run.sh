#!/usr/bin/env bash
# The paper's back-ends on Kaldi's egs/sitw/v2, after x-vector extraction (its stage 9).
#
# Usage: run.sh [options] <egs-dir>        (no default: "." for the current directory)
#   e.g. cd kaldi/egs/sitw/v2 && /path/to/pauc-backend/recipes/sitw/run.sh --nj 8 .
#   or   /path/to/pauc-backend/recipes/sitw/run.sh --nj 8 kaldi/egs/sitw/v2
#   or, to keep it in the egs directory, a symbolic link (not a copy: it finds its helpers in
#   recipes/common through the link): ln -s /path/to/pauc-backend/recipes/sitw/run.sh run_pauc.sh
#   and ./run_pauc.sh --nj 8 .
#
# It reads the recipe's own files ($nnet_dir/xvectors_{train_combined_200k,sitw_dev_enroll,
# sitw_dev_test,sitw_eval_enroll,sitw_eval_test}/xvector.scp, data/train_combined_200k/
# {spk2utt,utt2spk}, data/sitw_{dev,eval}_enroll/spk2utt,
# data/sitw_{dev,eval}_test/trials/core-core.lst) and writes next to Kaldi's: mean.vec,
# transform.mat, plda, metrics, and $nnet_dir/scores/sitw_{dev,eval}_core_scores*.
# Stages (10-12 are Kaldi's own, with the same commands):
#   10  mean.vec, LDA, PLDA (and the enrollment num_utts.ark files if missing)
#   11  PLDA scoring of Dev.Core             -> $nnet_dir/scores/sitw_dev_core_scores
#   12  PLDA scoring of Eval.Core            -> $nnet_dir/scores/sitw_eval_core_scores
#   13  TripletMetric / pAUCMetric training on length-normalised vectors and in the PLDA
#       latent space
#   14  Cosine and metric scoring of both    -> ..._core_scores_{cosine,<loss>_<prep>}
#   15  calibration trained on Dev.Core, applied to Eval.Core: actDCF and Cllr of every system;
#       when the enroll and test data directories have utt2dur (or utt2num_frames), also a QMF
#       calibration whose logistic regression sees the trial sides' durations (min and max of
#       log durations; an enrollment model's is the sum of its utterances')
#   16  with --auto true: pAUCMetric (auto), a whole back-end chosen by cross-fitting on the
#       training speakers (steps/pauc_auto.sh; with --nj N > 1 its folds run as N jobs through
#       $train_cmd), scored on both -> ..._core_scores_pauc_auto. With --auto-dev true (the
#       default) Dev.Core is its labelled development set (train-pauc-auto --dev-trials): it
#       rates the candidates and calibrates the chosen one (with the utterances' durations
#       when the data directories have them), so its Dev.Core figures are not an evaluation;
#       Eval.Core is.
# Scoring stages echo EER, minDCF (p-target 0.01 and 0.001) and pAUC[0,0.01] like Kaldi echoes
# EER. With --nj N the trial lists are split into N parts scored as JOB=1:N jobs through
# $train_cmd (run.pl, queue.pl or slurm.pl from cmd.sh) and merged: identical to --nj 1.

set -o pipefail
script_dir=$(dirname "$(readlink -f "$0")")

stage=10
stop_stage=100
use_kaldi=auto      # auto|true|false: Kaldi's binaries for the baseline stages when on PATH
nj=1                # parallel scoring jobs
lda_dim=128         # as egs/sitw/v2
nnet_dir=exp/xvector_nnet_1a
losses="pauc triplet"
metric_opts=        # extra options for train-pauc-metric
auto=false          # stage 16: pAUCMetric (auto)
auto_opts=          # extra options for train-pauc-auto
adapt=              # optional unlabelled in-domain vectors (rspecifier) for train-pauc-auto --adapt
auto_dev=true       # stage 16: Dev.Core as train-pauc-auto's development trials
help_message="Usage: $0 [options] <egs-dir>      (e.g. . for the current directory)
  --stage N          first stage (10..15; default $stage)
  --stop-stage N     last stage
  --use-kaldi B      auto|true|false: Kaldi's binaries for the baseline stages (default $use_kaldi)
  --nj N             parallel scoring jobs through \$train_cmd (default $nj)
  --lda-dim N        LDA dimension (default $lda_dim)
  --nnet-dir DIR     x-vector directory (default $nnet_dir)
  --losses L         metrics to train, among \"pauc triplet\" (default \"$losses\")
  --metric-opts S    extra options for train-pauc-metric
  --auto B           stage 16: pAUCMetric (auto) (true|false, default $auto)
  --auto-opts S      extra options for train-pauc-auto (e.g. \"--num-folds=3\")
  --adapt RSPEC      unlabelled in-domain vectors for pAUCMetric (auto) (train-pauc-auto
                     --adapt: centring mean and adapted PLDA from them; default none)
  --auto-dev B       stage 16: Dev.Core as pAUCMetric (auto)'s development trials (they rate
                     and calibrate it; true|false, default $auto_dev)"
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
case "$auto_dev" in true|false) ;; *) echo "$0: --auto-dev must be true or false" >&2; exit 1 ;; esac
cd "$1" || exit 1
[ -f ./cmd.sh ] && { . ./cmd.sh || exit 1; }
[ -f ./path.sh ] && { . ./path.sh || exit 1; }
. "$script_dir/../common/utils/setup_env.sh" || exit 1

train=$nnet_dir/xvectors_train_combined_200k
scores_dir=$nnet_dir/scores
preps="lnorm plda"
train_lda="ark:$subtract_mean scp:$train/xvector.scp ark:- | $transform_vec $train/transform.mat ark:- ark:- |"
# Evaluation streams of a task (dev|eval): speaker means of the raw enrollment vectors, every
# vector centred on the training mean.vec, LDA.
enroll_lda() {
  echo "ark:$ivector_mean ark:data/sitw_$1_enroll/spk2utt scp:$nnet_dir/xvectors_sitw_$1_enroll/xvector.scp ark:- | $subtract_mean $train/mean.vec ark:- ark:- | $transform_vec $train/transform.mat ark:- ark:- |"
}
test_lda() {
  echo "ark:$subtract_mean $train/mean.vec scp:$nnet_dir/xvectors_sitw_$1_test/xvector.scp ark:- | $transform_vec $train/transform.mat ark:- ark:- |"
}
trials_of() { echo data/sitw_$1_test/trials/core-core.lst; }
prep_suffix() {  # <prep> [<num-utts option>]: LDA'd vectors -> the metric's input space
  case $1 in
    lnorm) echo "$normalize_length --scaleup=false ark:- ark:- |" ;;
    plda) echo "$normalize_length ark:- ark:- | transform-plda-latent $2 $train/plda ark:- ark:- |" ;;
  esac
}

# report <label> <scores> <trials>: the lines egs/sitw/v2 echoes, plus pAUC.
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

if [ $stage -le 10 ] && [ $stop_stage -ge 10 ]; then
  for task in dev eval; do
    enroll=$nnet_dir/xvectors_sitw_${task}_enroll
    if [ ! -f $enroll/num_utts.ark ]; then
      # As sid/nnet3/xvector/extract_xvectors.sh stage 2 writes it.
      $train_cmd $enroll/log/speaker_mean.log \
        $ivector_mean ark:data/sitw_${task}_enroll/spk2utt scp:$enroll/xvector.scp \
        ark,scp:$enroll/spk_xvector.ark,$enroll/spk_xvector.scp ark,t:$enroll/num_utts.ark || exit 1
    fi
  done
  # Compute the mean.vec used for centering.
  $train_cmd $train/log/compute_mean.log \
    $ivector_mean scp:$train/xvector.scp \
    $train/mean.vec || exit 1

  # Use LDA to decrease the dimensionality prior to PLDA.
  $train_cmd $train/log/lda.log \
    $compute_lda --total-covariance-factor=0.0 --dim=$lda_dim \
    "ark:$subtract_mean scp:$train/xvector.scp ark:- |" \
    ark:data/train_combined_200k/utt2spk $train/transform.mat || exit 1

  # Train the PLDA model.
  $train_cmd $train/log/plda.log \
    $compute_plda ark:data/train_combined_200k/spk2utt \
    "$train_lda $normalize_length ark:-  ark:- |" \
    $train/plda || exit 1
fi

for task in dev eval; do
  [ $task = dev ] && this_stage=11 || this_stage=12
  if [ $stage -le $this_stage ] && [ $stop_stage -ge $this_stage ]; then
    split=$scores_dir/split$nj/sitw_${task}_core
    split_trials $(trials_of $task) $split $nnet_dir/xvectors_sitw_${task}_enroll/num_utts.ark \
      $nnet_dir/xvectors_sitw_${task}_test/xvector.scp || exit 1
    $train_cmd JOB=1:$nj $scores_dir/log/sitw_${task}_core_scoring.JOB.log \
      $plda_scoring --normalize-length=true \
      --num-utts=ark:$nnet_dir/xvectors_sitw_${task}_enroll/num_utts.ark \
      "$copy_plda --smoothing=0.0 $train/plda - |" \
      "$(enroll_lda $task) $normalize_length ark:- ark:- |" \
      "$(test_lda $task) $normalize_length ark:- ark:- |" \
      $split/trials.JOB $split/scores.JOB || exit 1
    merge_scores $split $scores_dir/sitw_${task}_core_scores || exit 1
    report "PLDA, sitw_${task} Core:" $scores_dir/sitw_${task}_core_scores $(trials_of $task) || exit 1
  fi
done

if [ $stage -le 13 ] && [ $stop_stage -ge 13 ]; then
  for prep in $preps; do
    for loss in $losses; do
      # Trained on exactly the PLDA training stream, mapped into the preprocessing's space.
      $train_cmd $train/log/metric_${loss}_$prep.log \
        train-pauc-metric --loss=$loss $metric_opts ark:data/train_combined_200k/spk2utt \
        "$train_lda $(prep_suffix $prep)" $train/metric_${loss}_$prep || exit 1
    done
  done
fi

new_systems="cosine"
for prep in $preps; do for loss in $losses; do new_systems+=" ${loss}_$prep"; done; done

if [ $stage -le 14 ] && [ $stop_stage -ge 14 ]; then
  for task in dev eval; do
    split=$scores_dir/split$nj/sitw_${task}_core
    split_trials $(trials_of $task) $split $nnet_dir/xvectors_sitw_${task}_enroll/num_utts.ark \
      $nnet_dir/xvectors_sitw_${task}_test/xvector.scp || exit 1
    num_utts=--num-utts=ark:$nnet_dir/xvectors_sitw_${task}_enroll/num_utts.ark
    for system in $new_systems; do
      if [ $system = cosine ]; then
        $train_cmd JOB=1:$nj $scores_dir/log/sitw_${task}_core_scoring_cosine.JOB.log \
          score-cosine-trials $split/trials.JOB \
          "$(enroll_lda $task) $(prep_suffix lnorm)" "$(test_lda $task) $(prep_suffix lnorm)" \
          $split/scores_cosine.JOB || exit 1
      else
        prep=${system#*_}
        $train_cmd JOB=1:$nj $scores_dir/log/sitw_${task}_core_scoring_$system.JOB.log \
          score-pauc-trials $train/metric_$system \
          "$(enroll_lda $task) $(prep_suffix $prep $num_utts)" \
          "$(test_lda $task) $(prep_suffix $prep)" \
          $split/trials.JOB $split/scores_$system.JOB || exit 1
      fi
      merge_scores $split $scores_dir/sitw_${task}_core_scores_$system $system || exit 1
      report "$(system_label $system), sitw_${task} Core:" \
        $scores_dir/sitw_${task}_core_scores_$system $(trials_of $task) || exit 1
    done
  done
fi

# calibrated_line <llr> <trials>: "actDCF(p-target=0.01): A, Cllr: C"
calibrated_line() {
  compute-eer-pauc --allow-partial --report=table --llr --p-target=0.01 $1 $2 2>/dev/null |
    awk 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
         NR == 2 && col["actDCF(0.01)"] && col["Cllr"] {
           print "actDCF(p-target=0.01): " $col["actDCF(0.01)"] ", Cllr: " $col["Cllr"]; found = 1 }
         END { exit !found }'
}

if [ $stage -le 15 ] && [ $stop_stage -ge 15 ]; then
  # Linear calibration (BOSARIS-style logistic regression at the DCF prior) trained on Dev.Core
  # and applied to Eval.Core, as in the paper's calibration experiment.
  # Durations of every trial side, when the data directories have them: QMF too.
  qmf=true
  for task in dev eval; do
    for side in enroll test; do
      spk2utt=
      [ $side = enroll ] && spk2utt="--spk2utt data/sitw_${task}_enroll/spk2utt"
      "$script_dir/../common/utils/durations.sh" $spk2utt data/sitw_${task}_$side \
        $scores_dir/sitw_${task}_${side}_durations
      case $? in 0) ;; 2) qmf=false ;; *) exit 1 ;; esac   # 2: no utt2dur nor utt2num_frames
    done
  done
  quality() {
    echo "--enroll-duration=ark:$scores_dir/sitw_$1_enroll_durations --test-duration=ark:$scores_dir/sitw_$1_test_durations"
  }
  for system in plda $new_systems; do
    suffix=_$system
    [ $system = plda ] && suffix=
    $train_cmd $scores_dir/log/calibration$suffix.log \
      train-calibration --prior=0.01 $(trials_of dev) $scores_dir/sitw_dev_core_scores$suffix \
      $scores_dir/calibration$suffix || exit 1
    $train_cmd $scores_dir/log/apply_calibration$suffix.log \
      apply-calibration $scores_dir/calibration$suffix $scores_dir/sitw_eval_core_scores$suffix \
      $scores_dir/sitw_eval_core_llr$suffix || exit 1
    llr=$scores_dir/sitw_eval_core_llr$suffix
    line=$(calibrated_line $llr $(trials_of eval)) || { echo "$0: evaluating $llr failed" >&2; exit 1; }
    echo "$(system_label $system), sitw_eval Core calibrated on sitw_dev Core: $line"
    $qmf || continue
    $train_cmd $scores_dir/log/qmf$suffix.log \
      train-calibration --prior=0.01 $(quality dev) $(trials_of dev) \
      $scores_dir/sitw_dev_core_scores$suffix $scores_dir/qmf$suffix || exit 1
    $train_cmd $scores_dir/log/apply_qmf$suffix.log \
      apply-calibration $(quality eval) $scores_dir/qmf$suffix \
      $scores_dir/sitw_eval_core_scores$suffix $scores_dir/sitw_eval_core_llr_qmf$suffix || exit 1
    llr=$scores_dir/sitw_eval_core_llr_qmf$suffix
    line=$(calibrated_line $llr $(trials_of eval)) || { echo "$0: evaluating $llr failed" >&2; exit 1; }
    echo "$(system_label $system), sitw_eval Core QMF-calibrated (durations) on sitw_dev Core: $line"
  done
fi

if $auto && [ $stage -le 16 ] && [ $stop_stage -ge 16 ]; then
  # Trained on the raw training vectors, scored on the raw speaker means of the enrollment.
  raw_enroll() {
    echo "ark:$ivector_mean ark:data/sitw_$1_enroll/spk2utt scp:$nnet_dir/xvectors_sitw_$1_enroll/xvector.scp ark:- |"
  }
  auto_dir=$nnet_dir/pauc_auto
  mkdir -p $auto_dir || exit 1
  dur_of() { echo $auto_dir/sitw_$1_$2_durations${3:+_models}; }
  durations() {  # <task> <side> [spk2utt]: writes dur_of's file; status 2: no utt2dur
    "$script_dir/../common/utils/durations.sh" ${3:+--spk2utt data/sitw_$1_$2/spk2utt} \
      data/sitw_$1_$2 $(dur_of "$@")
    case $? in 0) return 0 ;; 2) return 2 ;; *) exit 1 ;; esac   # an error stops here
  }
  dev_opts=()
  if $auto_dev; then
    # Dev.Core as labelled development trials: its enrollment utterances and test segments,
    # each enrollment model the mean of its utterances (as the scoring's speaker means).
    # train-pauc-auto refuses a development trial whose key has no vector (the scoring
    # tools skip them): the trials with both keys, the others counted here.
    awk 'FILENAME == ARGV[1] { model[$1]; next } FILENAME == ARGV[2] { seg[$1]; next }
         ($1 in model) && ($2 in seg) { print; next } { dropped++ }
         END { if (dropped) print "'"$0"': stage 16: " dropped " Dev.Core trials have a key with no vector: not development trials" > "/dev/stderr" }' \
      data/sitw_dev_enroll/spk2utt $nnet_dir/xvectors_sitw_dev_test/xvector.scp \
      $(trials_of dev) > $auto_dir/dev_trials || exit 1
    dev_opts=(--dev-vectors "scp:cat $nnet_dir/xvectors_sitw_dev_enroll/xvector.scp $nnet_dir/xvectors_sitw_dev_test/xvector.scp |"
              --dev-trials $auto_dir/dev_trials --dev-enroll ark:data/sitw_dev_enroll/spk2utt)
    [ -f data/sitw_dev_enroll/utt2spk ] && [ -f data/sitw_dev_test/utt2spk ] && \
      dev_opts+=(--dev-utt2spk "ark:cat data/sitw_dev_enroll/utt2spk data/sitw_dev_test/utt2spk |")
    durations dev enroll && durations dev test && \
      dev_opts+=(--dev-utt2dur "ark:cat $(dur_of dev enroll) $(dur_of dev test) |")
  else     # the calibration is learned on the held-out training trials: their durations
    "$script_dir/../common/utils/durations.sh" data/train_combined_200k $auto_dir/train_utt2dur
    case $? in 0) dev_opts+=(--utt2dur ark:$auto_dir/train_utt2dur) ;; 2) ;; *) exit 1 ;; esac
  fi
  score_dur=()       # the scored sides' durations, for a calibration that kept them
  for task in dev eval; do
    durations $task enroll spk2utt && durations $task test && \
      score_dur+=("$(dur_of $task enroll spk2utt)" "$(dur_of $task test)")
  done
  dev_score=()
  [ ${#score_dur[@]} -eq 4 ] && dev_score=(--enroll-duration "ark:${score_dur[0]}" \
    --test-duration "ark:${score_dur[1]}")
  "$script_dir/../common/steps/pauc_auto.sh" --cmd "$train_cmd" --nj $nj \
    ${adapt:+--adapt "$adapt"} "${dev_opts[@]}" "${dev_score[@]}" --auto-opts "$auto_opts" \
    --spk2utt data/train_combined_200k/spk2utt \
    --num-utts ark:$nnet_dir/xvectors_sitw_dev_enroll/num_utts.ark $train "$(raw_enroll dev)" \
    scp:$nnet_dir/xvectors_sitw_dev_test/xvector.scp $(trials_of dev) $auto_dir || exit 1
  cp $auto_dir/scores/pauc_auto $scores_dir/sitw_dev_core_scores_pauc_auto || exit 1
  eval_dur=
  [ ${#score_dur[@]} -eq 4 ] && \
    grep -q '^quality_measures .*duration' $auto_dir/pauc_auto/system.txt && \
    eval_dur="--enroll-duration=ark:${score_dur[2]} --test-duration=ark:${score_dur[3]}"
  $train_cmd $auto_dir/log/score_pauc_auto_eval.log \
    score-pauc-auto --num-utts=ark:$nnet_dir/xvectors_sitw_eval_enroll/num_utts.ark $eval_dur \
    $auto_dir/pauc_auto "$(raw_enroll eval)" scp:$nnet_dir/xvectors_sitw_eval_test/xvector.scp \
    $(trials_of eval) $scores_dir/sitw_eval_core_scores_pauc_auto || exit 1
  for task in dev eval; do
    note=
    [ $task = dev ] && $auto_dev && note=" (its development set: not an evaluation)"
    report "$(system_label pauc_auto), sitw_${task} Core$note:" \
      $scores_dir/sitw_${task}_core_scores_pauc_auto $(trials_of $task) || exit 1
  done
fi
