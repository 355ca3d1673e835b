#!/usr/bin/env bash
# The paper's back-ends on Kaldi's egs/sre16/v2, after x-vector extraction (its stage 7).
#
# Usage: run.sh [options] <egs-dir>        (no default: "." for the current directory)
#   e.g. cd kaldi/egs/sre16/v2 && /path/to/pauc-backend/recipes/sre16/run.sh --nj 8 .
#   or   /path/to/pauc-backend/recipes/sre16/run.sh --nj 8 kaldi/egs/sre16/v2
#   or, to keep it in the egs directory, a symbolic link (not a copy: it finds its helpers in
#   recipes/common through the link): ln -s /path/to/pauc-backend/recipes/sre16/run.sh run_pauc.sh
#   and ./run_pauc.sh --nj 8 .
#
# It reads the recipe's own files (exp/xvectors_{sre_combined,sre16_major,sre16_eval_enroll,
# sre16_eval_test}/xvector.scp, data/sre_combined/{spk2utt,utt2spk},
# data/sre16_eval_enroll/spk2utt, data/sre16_eval_test/trials{,_tgl,_yue}) and writes next to
# Kaldi's: mean.vec, transform.mat, plda, plda_adapt, metrics, and exp/scores/sre16_eval_*.
# Stages (8-10 are Kaldi's own, with the same commands):
#    8  mean.vec, LDA, PLDA, adapted PLDA (and the enrollment num_utts.ark if missing)
#    9  out-of-domain PLDA scoring           -> exp/scores/sre16_eval_scores
#   10  adapted PLDA scoring                 -> exp/scores/sre16_eval_scores_adapt
#   11  TripletMetric / pAUCMetric training on length-normalised vectors and in the latent
#       spaces of the PLDA and the adapted PLDA
#   12  Cosine and metric scoring            -> exp/scores/sre16_eval_scores_{cosine,<loss>_<prep>}
#   13  with --auto true: pAUCMetric (auto), a whole back-end chosen by cross-fitting on the
#       (out-of-domain) training speakers (steps/pauc_auto.sh; with --nj N > 1 its folds run as
#       N jobs through $train_cmd)      -> exp/scores/sre16_eval_scores_pauc_auto
#       SRE16 major is its adaptation set; SRE16's labelled development set, when you have
#       prepared it (egs/sre16/v2 prepares only the unlabelled sre16_major and sre16_minor:
#       local/make_sre16_unlabeled.pl; the labelled dev enrollment and test segments of
#       LDC2016E46 with their key are yours to make, as data/<dev-name>_{enroll,test} with
#       data/<dev-name>_test/trials, and extract_xvectors.sh to exp/xvectors_<dev-name>_*),
#       is its development set (--auto-dev auto: used when those files exist): its trials rate
#       the candidates and calibrate the chosen one.
#   14  when data/sre16_eval_{enroll,test} have utt2dur or utt2num_frames (make_mfcc.sh
#       --write-utt2num-frames writes it): calibration 2-fold over the enrolled speakers of
#       every scored system, score-only and QMF (durations of the trial sides; an enrolled
#       speaker's is the sum of its segments'): actDCF and Cllr of both
# Each scoring stage echoes EER, minDCF (p-target 0.01) and pAUC[0,0.01], pooled and per language,
# and SRE16's primary metric: Cprimary = mean of the minDCF at p-target 0.01 and 0.005 of the
# rates equalised over partitions (compute-eer-pauc --partitions; NIST's equalised scoring).
# The partitions are the trial languages (trials_tgl, trials_yue) unless --partitions gives a
# file of <enroll> <test> <partition> lines, e.g. language x gender from the NIST key.
# With --nj N the trial list is split into N parts scored as JOB=1:N jobs through $train_cmd
# (from the egs directory's cmd.sh: run.pl, queue.pl or slurm.pl) and merged in order: the
# merged file is identical to --nj 1.

set -o pipefail
script_dir=$(dirname "$(readlink -f "$0")")

stage=8
stop_stage=100
use_kaldi=auto      # auto|true|false: Kaldi's binaries for the baseline stages when on PATH
nj=1                # parallel scoring jobs
lda_dim=150         # as egs/sre16/v2
losses="pauc triplet"
metric_opts=        # extra options for train-pauc-metric, e.g. "--num-iters=200"
partitions=         # <enroll> <test> <partition> file for the equalised Cprimary (default: language)
auto=false          # stage 13: pAUCMetric (auto)
auto_opts=          # extra options for train-pauc-auto
qmf_systems=        # stage 14: the systems calibrated (default: every scored one)
auto_dev=auto       # stage 13: SRE16's labelled development set for train-pauc-auto (auto|true|false)
dev_name=sre16_dev  # its data/<name>_{enroll,test} and exp/xvectors_<name>_{enroll,test}
help_message="Usage: $0 [options] <egs-dir>      (e.g. . for the current directory)
  --stage N          first stage (8..14; default $stage)
  --stop-stage N     last stage
  --use-kaldi B      auto|true|false: Kaldi's binaries for the baseline stages (default $use_kaldi)
  --nj N             parallel scoring jobs through \$train_cmd (default $nj)
  --lda-dim N        LDA dimension (default $lda_dim)
  --losses L         metrics to train, among \"pauc triplet\" (default \"$losses\")
  --metric-opts S    extra options for train-pauc-metric
  --partitions F     <enroll> <test> <partition> lines for the equalised Cprimary
                     (default: the trial's language, from trials_tgl and trials_yue)
  --auto B           stage 13: pAUCMetric (auto) (true|false, default $auto)
  --auto-opts S      extra options for train-pauc-auto (e.g. \"--num-folds=3\")
  --qmf-systems S    stage 14: systems to calibrate, e.g. \"plda plda_adapt cosine\" (default:
                     every scored one)
  --auto-dev S       stage 13: SRE16's labelled development set as train-pauc-auto's
                     development trials: auto (when its files exist), true, false (default $auto_dev)
  --dev-name NAME    its data/NAME_{enroll,test} (with data/NAME_test/trials) and
                     exp/xvectors_NAME_{enroll,test} (default $dev_name)"
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
case "$auto_dev" in auto|true|false) ;; *) echo "$0: --auto-dev must be auto, true or false" >&2; exit 1 ;; esac
cd "$1" || exit 1
[ -f ./cmd.sh ] && { . ./cmd.sh || exit 1; }
[ -f ./path.sh ] && { . ./path.sh || exit 1; }
. "$script_dir/../common/utils/setup_env.sh" || exit 1

sre16_trials=data/sre16_eval_test/trials
sre16_trials_tgl=data/sre16_eval_test/trials_tgl
sre16_trials_yue=data/sre16_eval_test/trials_yue
train=exp/xvectors_sre_combined
major=exp/xvectors_sre16_major
enroll=exp/xvectors_sre16_eval_enroll
test=exp/xvectors_sre16_eval_test

# Evaluation streams (egs/sre16/v2 stage 9): speaker means of the raw enrollment vectors, then
# every vector centred on the in-domain mean, LDA, length normalisation.
enroll_lda="ark:$ivector_mean ark:data/sre16_eval_enroll/spk2utt scp:$enroll/xvector.scp ark:- | $subtract_mean $major/mean.vec ark:- ark:- | $transform_vec $train/transform.mat ark:- ark:- |"
test_lda="ark:$subtract_mean $major/mean.vec scp:$test/xvector.scp ark:- | $transform_vec $train/transform.mat ark:- ark:- |"
# Training streams: each set centred on its own mean.
train_lda="ark:$subtract_mean scp:$train/xvector.scp ark:- | $transform_vec $train/transform.mat ark:- ark:- |"
num_utts=ark:$enroll/num_utts.ark

# The partitions of the equalised Cprimary: --partitions, or the language of each trial.
partitions_file() {
  if [ -n "$partitions" ]; then
    echo $partitions
  elif [ -f $sre16_trials_tgl ] && [ -f $sre16_trials_yue ]; then
    mkdir -p exp/scores || return 1
    { awk '{print $1, $2, "tgl"}' $sre16_trials_tgl && awk '{print $1, $2, "yue"}' $sre16_trials_yue; } \
      > exp/scores/sre16_eval_partitions || return 1
    echo exp/scores/sre16_eval_partitions
  fi
}

# c_primary <scores> <trials>: SRE16's equalised minimum Cprimary (p-target 0.01 and 0.005).
c_primary() {
  compute-eer-pauc --allow-partial --report=json --p-target=0.01,0.005 \
    --partitions=$(partitions_file) "$1" "$2" \
    2> >(grep -v '^LOG\|^compute-eer-pauc \|^WARNING.*have no trial in\|^WARNING.*part of the trial list' >&2) |
    python3 -c 'import json, sys; print("%.4f" % json.load(sys.stdin)["c_primary"])'
}

# report <label> <scores>: EER, minDCF, pAUC and equalised Cprimary, pooled and per language,
# as Kaldi echoes EER.
# A language's figures come from its own scores file, the pooled scores of its trials (as
# egs/sre16/v2 makes exp/scores/sre16_eval_tgl_scores with utils/filter_scp.pl; here filtered on
# both keys): sid/compute_min_dcf.py fails on a score whose trial is not in its list.
report() {
  local label=$1 scores=$2 name trials subset eer mindcf1 mindcf2 pauc
  local eer_line= dcf_line= pauc_line= cp_line= cp
  for name in Pooled:$sre16_trials Tagalog:$sre16_trials_tgl Cantonese:$sre16_trials_yue; do
    trials=${name#*:}
    [ -f "$trials" ] || continue
    subset=$scores
    if [ "$trials" != "$sre16_trials" ]; then
      subset=${scores/sre16_eval_scores/sre16_eval_${trials##*_}_scores}
      [ "$subset" != "$scores" ] || subset=$scores.${trials##*_}
      awk 'NR == FNR { keep[$1 " " $2]; next } ($1 " " $2) in keep' "$trials" "$scores" \
        > "$subset" || return 1
    fi
    read -r eer mindcf1 mindcf2 pauc <<< "$(evaluate $subset $trials)" || return 1
    [ -n "$pauc" ] || return 1
    eer_line+="${eer_line:+, }${name%%:*} $eer%"
    dcf_line+="${dcf_line:+, }${name%%:*} $mindcf1"
    pauc_line+="${pauc_line:+, }${name%%:*} $pauc"
    if [ -n "$(partitions_file)" ]; then
      cp=$(c_primary $subset $trials) && [ -n "$cp" ] || return 1
      cp_line+="${cp_line:+, }${name%%:*} $cp"
    fi
  done
  echo "$label, EER: $eer_line"
  echo "$label, minDCF(p-target=0.01): $dcf_line"
  echo "$label, pAUC[0,0.01]: $pauc_line"
  [ -z "$cp_line" ] || echo "$label, equalised Cprimary: $cp_line"
}

if [ $stage -le 8 ] && [ $stop_stage -ge 8 ]; then
  if [ ! -f $enroll/num_utts.ark ]; then
    # As sid/nnet3/xvector/extract_xvectors.sh stage 2 writes it.
    $train_cmd $enroll/log/speaker_mean.log \
      $ivector_mean ark:data/sre16_eval_enroll/spk2utt scp:$enroll/xvector.scp \
      ark,scp:$enroll/spk_xvector.ark,$enroll/spk_xvector.scp ark,t:$enroll/num_utts.ark || exit 1
  fi
  # Compute the mean vector for centering the evaluation xvectors.
  $train_cmd $major/log/compute_mean.log \
    $ivector_mean scp:$major/xvector.scp \
    $major/mean.vec || exit 1

  # This script uses LDA to decrease the dimensionality prior to PLDA.
  $train_cmd $train/log/lda.log \
    $compute_lda --total-covariance-factor=0.0 --dim=$lda_dim \
    "ark:$subtract_mean scp:$train/xvector.scp ark:- |" \
    ark:data/sre_combined/utt2spk $train/transform.mat || exit 1

  # Train an out-of-domain PLDA model.
  $train_cmd $train/log/plda.log \
    $compute_plda ark:data/sre_combined/spk2utt \
    "$train_lda $normalize_length ark:-  ark:- |" \
    $train/plda || exit 1

  # Adapt the out-of-domain PLDA model to SRE16 major, a pile of unlabeled in-domain data.
  $train_cmd $major/log/plda_adapt.log \
    $adapt_plda --within-covar-scale=0.75 --between-covar-scale=0.25 \
    $train/plda \
    "ark:$subtract_mean scp:$major/xvector.scp ark:- | $transform_vec $train/transform.mat ark:- ark:- | $normalize_length ark:- ark:- |" \
    $major/plda_adapt || exit 1
fi

if [ $stage -le 9 ] && [ $stop_stage -ge 9 ]; then
  split_trials $sre16_trials exp/scores/split$nj/sre16_eval $enroll/num_utts.ark \
    $test/xvector.scp || exit 1
  $train_cmd JOB=1:$nj exp/scores/log/sre16_eval_scoring.JOB.log \
    $plda_scoring --normalize-length=true \
    --num-utts=$num_utts \
    "$copy_plda --smoothing=0.0 $train/plda - |" \
    "$enroll_lda $normalize_length ark:- ark:- |" \
    "$test_lda $normalize_length ark:- ark:- |" \
    exp/scores/split$nj/sre16_eval/trials.JOB exp/scores/split$nj/sre16_eval/scores.JOB || exit 1
  merge_scores exp/scores/split$nj/sre16_eval exp/scores/sre16_eval_scores || exit 1
  report "Using Out-of-Domain PLDA" exp/scores/sre16_eval_scores || exit 1
fi

if [ $stage -le 10 ] && [ $stop_stage -ge 10 ]; then
  split_trials $sre16_trials exp/scores/split$nj/sre16_eval $enroll/num_utts.ark \
    $test/xvector.scp || exit 1
  $train_cmd JOB=1:$nj exp/scores/log/sre16_eval_scoring_adapt.JOB.log \
    $plda_scoring --normalize-length=true \
    --num-utts=$num_utts \
    "$copy_plda --smoothing=0.0 $major/plda_adapt - |" \
    "$enroll_lda $normalize_length ark:- ark:- |" \
    "$test_lda $normalize_length ark:- ark:- |" \
    exp/scores/split$nj/sre16_eval/trials.JOB exp/scores/split$nj/sre16_eval/scores_adapt.JOB || exit 1
  merge_scores exp/scores/split$nj/sre16_eval exp/scores/sre16_eval_scores_adapt adapt || exit 1
  report "Using Adapted PLDA" exp/scores/sre16_eval_scores_adapt || exit 1
fi

# The new back-ends: preprocessing name -> (where the metric goes, the stream suffix that maps
# LDA'd vectors into its input space). The enrollment suffix adds --num-utts.
prep_dir() { case $1 in plda_adapt) echo $major ;; *) echo $train ;; esac; }
prep_suffix() {  # <prep> [<num-utts option>]
  case $1 in
    lnorm) echo "$normalize_length --scaleup=false ark:- ark:- |" ;;
    plda) echo "$normalize_length ark:- ark:- | transform-plda-latent $2 $train/plda ark:- ark:- |" ;;
    plda_adapt) echo "$normalize_length ark:- ark:- | transform-plda-latent $2 $major/plda_adapt ark:- ark:- |" ;;
  esac
}
preps="lnorm plda plda_adapt"

if [ $stage -le 11 ] && [ $stop_stage -ge 11 ]; then
  for prep in $preps; do
    for loss in $losses; do
      # Trained on exactly the PLDA training stream, mapped into the preprocessing's space.
      $train_cmd $(prep_dir $prep)/log/metric_${loss}_$prep.log \
        train-pauc-metric --loss=$loss $metric_opts ark:data/sre_combined/spk2utt \
        "$train_lda $(prep_suffix $prep)" \
        $(prep_dir $prep)/metric_${loss}_$prep || exit 1
    done
  done
fi

if [ $stage -le 12 ] && [ $stop_stage -ge 12 ]; then
  split_trials $sre16_trials exp/scores/split$nj/sre16_eval $enroll/num_utts.ark \
    $test/xvector.scp || exit 1
  $train_cmd JOB=1:$nj exp/scores/log/sre16_eval_scoring_cosine.JOB.log \
    score-cosine-trials exp/scores/split$nj/sre16_eval/trials.JOB \
    "$enroll_lda $(prep_suffix lnorm)" "$test_lda $(prep_suffix lnorm)" \
    exp/scores/split$nj/sre16_eval/scores_cosine.JOB || exit 1
  merge_scores exp/scores/split$nj/sre16_eval exp/scores/sre16_eval_scores_cosine cosine || exit 1
  report "Using $(system_label cosine)" exp/scores/sre16_eval_scores_cosine || exit 1
  for prep in $preps; do
    for loss in $losses; do
      system=${loss}_$prep
      $train_cmd JOB=1:$nj exp/scores/log/sre16_eval_scoring_$system.JOB.log \
        score-pauc-trials $(prep_dir $prep)/metric_$system \
        "$enroll_lda $(prep_suffix $prep --num-utts=$num_utts)" \
        "$test_lda $(prep_suffix $prep)" \
        exp/scores/split$nj/sre16_eval/trials.JOB \
        exp/scores/split$nj/sre16_eval/scores_$system.JOB || exit 1
      merge_scores exp/scores/split$nj/sre16_eval exp/scores/sre16_eval_scores_$system $system || exit 1
      report "Using $(system_label $system)" exp/scores/sre16_eval_scores_$system || exit 1
    done
  done
fi

if $auto && [ $stage -le 13 ] && [ $stop_stage -ge 13 ]; then
  # Trained on the raw training vectors, scored on the raw speaker means of the enrollment;
  # SRE16 major (unlabelled, in domain) is its adaptation set, as for the adapted PLDA above.
  mkdir -p exp/pauc_auto || exit 1
  durations() {  # utils/durations.sh: 0 written, 2 no utt2dur (none); an error stops here
    "$script_dir/../common/utils/durations.sh" "$@"
    case $? in 0) return 0 ;; 2) return 2 ;; *) exit 1 ;; esac
  }
  dev_opts=()
  dev_files="data/${dev_name}_enroll/spk2utt data/${dev_name}_test/trials exp/xvectors_${dev_name}_enroll/xvector.scp exp/xvectors_${dev_name}_test/xvector.scp"
  have_dev=true
  for f in $dev_files; do [ -f $f ] || have_dev=false; done
  case $auto_dev in
    true) $have_dev || { echo "$0: --auto-dev true, but a file of $dev_files is missing" >&2; exit 1; } ;;
    false) have_dev=false ;;
    auto) $have_dev || echo "$0: stage 13: no labelled SRE16 development set (data/${dev_name}_{enroll,test}, exp/xvectors_${dev_name}_*): pAUCMetric (auto) chooses on the training folds" ;;
  esac
  if $have_dev; then
    dev_opts=(--dev-vectors "scp:cat exp/xvectors_${dev_name}_enroll/xvector.scp exp/xvectors_${dev_name}_test/xvector.scp |"
              --dev-trials data/${dev_name}_test/trials --dev-enroll ark:data/${dev_name}_enroll/spk2utt)
    [ -f data/${dev_name}_enroll/utt2spk ] && [ -f data/${dev_name}_test/utt2spk ] && \
      dev_opts+=(--dev-utt2spk "ark:cat data/${dev_name}_enroll/utt2spk data/${dev_name}_test/utt2spk |")
    durations data/${dev_name}_enroll exp/pauc_auto/dev_enroll_utt2dur && \
      durations data/${dev_name}_test exp/pauc_auto/dev_test_utt2dur && \
      dev_opts+=(--dev-utt2dur "ark:cat exp/pauc_auto/dev_enroll_utt2dur exp/pauc_auto/dev_test_utt2dur |")
  elif durations data/sre_combined exp/pauc_auto/train_utt2dur; then
    # no development trials: the calibration is learned on the held-out training trials
    dev_opts+=(--utt2dur ark:exp/pauc_auto/train_utt2dur)
  fi
  # the evaluation sides' durations, for a calibration that kept them
  durations --spk2utt data/sre16_eval_enroll/spk2utt data/sre16_eval_enroll \
    exp/pauc_auto/eval_enroll_durations && \
    durations data/sre16_eval_test exp/pauc_auto/eval_test_durations && \
    dev_opts+=(--enroll-duration ark:exp/pauc_auto/eval_enroll_durations \
               --test-duration ark:exp/pauc_auto/eval_test_durations)
  "$script_dir/../common/steps/pauc_auto.sh" --cmd "$train_cmd" --nj $nj \
    --adapt scp:$major/xvector.scp "${dev_opts[@]}" \
    --auto-opts "$auto_opts" --spk2utt data/sre_combined/spk2utt --num-utts $num_utts $train \
    "ark:$ivector_mean ark:data/sre16_eval_enroll/spk2utt scp:$enroll/xvector.scp ark:- |" \
    scp:$test/xvector.scp $sre16_trials exp/pauc_auto || exit 1
  cp exp/pauc_auto/scores/pauc_auto exp/scores/sre16_eval_scores_pauc_auto || exit 1
  report "Using $(system_label pauc_auto)" exp/scores/sre16_eval_scores_pauc_auto || exit 1
fi

if [ $stage -le 14 ] && [ $stop_stage -ge 14 ]; then
  # Kaldi's egs/sre16/v2 does not calibrate and has no labelled development set: each half of
  # the enrolled speakers is calibrated on the other half's trials (utils/calibrate_2fold.sh).
  qmf_dir=exp/scores/qmf_2fold
  mkdir -p $qmf_dir || exit 1
  qmf=true
  for side in enroll test; do
    spk2utt=
    [ $side = enroll ] && spk2utt="--spk2utt data/sre16_eval_enroll/spk2utt"
    "$script_dir/../common/utils/durations.sh" $spk2utt data/sre16_eval_$side \
      $qmf_dir/${side}_durations
    case $? in 0) ;; 2) qmf=false ;; *) exit 1 ;; esac   # 2: no utt2dur nor utt2num_frames
  done
  if $qmf; then
    names=
    if [ -n "$qmf_systems" ]; then
      for system in $qmf_systems; do
        case $system in
          plda) names+=" sre16_eval_scores" ;;
          plda_adapt) names+=" sre16_eval_scores_adapt" ;;
          *) names+=" sre16_eval_scores_$system" ;;
        esac
      done
    else
      for f in exp/scores/sre16_eval_scores exp/scores/sre16_eval_scores_*; do
        case $f in *.*|*_llr*) continue ;; esac
        [ -f $f ] && names+=" ${f#exp/scores/}"
      done
    fi
    "$script_dir/../common/steps/qmf_2fold.sh" --cmd "$train_cmd" --nj $nj $sre16_trials \
      exp/scores $qmf_dir/enroll_durations $qmf_dir/test_durations $qmf_dir $names \
      > $qmf_dir/summary || exit 1
    while read -r name act cllr qmf_act qmf_cllr; do
      case $name in
        sre16_eval_scores) label="Out-of-Domain PLDA" ;;
        sre16_eval_scores_adapt) label="Adapted PLDA" ;;
        *) label=$(system_label ${name#sre16_eval_scores_}) ;;
      esac
      echo "Using $label, calibrated 2-fold over the enrolled speakers: actDCF(p-target=0.01): $act, Cllr: $cllr; with durations (QMF): actDCF(p-target=0.01): $qmf_act, Cllr: $qmf_cllr"
    done < $qmf_dir/summary
  else
    echo "$0: stage 14: no utt2dur or utt2num_frames in data/sre16_eval_enroll and data/sre16_eval_test: no QMF calibration"
  fi
fi
