#!/usr/bin/env bash
# The paper's comparison on a synthetic corpus, end to end, in Kaldi's recipe style:
# Cosine, PLDA, PLDA-adp, and TripletMetric / pAUCMetric with both preprocessings
# (length normalisation; PLDA latent space), calibrated, in one results table with DET and ROC
# plots. Needs nothing but the toolkit (pip install .). Runs from any directory; data/ and exp/
# go under recipes/demo/ (or --dir).
#
# Stages:
#   0  make-synthetic-vectors: data/{train,adapt,enroll,test}, data/trials
#   1  back-end training as egs/sre16/v2 stage 8: in-domain mean.vec, LDA, PLDA, adapted PLDA
#   2  preprocessed vectors: length-normalised (unit length) and PLDA / PLDA-adp latent
#   3  train-pauc-metric (--loss=pauc and --loss=triplet) on each preprocessing; pAUCMetric
#      (auto): train-pauc-auto --adapt=<the adapt/ set> chooses a whole back-end by
#      cross-fitting on the training speakers (with --auto true, the default); with a
#      development set (--durations true) its trials rate the candidates and calibrate the
#      chosen one, with their durations (--dev-trials, --dev-utt2dur; --auto-dev false: not)
#   4  scoring of every system
#   5  calibration (2-fold over the enrolled speakers)
#   6  results table, DET and ROC plots
#   7  with durations (the default): QMF against score-only calibration, both trained on a
#      development set of other speakers (data/dev_*) and applied to the evaluation trials,
#      compared on the same paired bootstrap resamples (steps/qmf.sh, compare-systems --llr)

set -o pipefail
orig_pwd=$PWD
cd "$(dirname "$(readlink -f "$0")")" || exit 1
. ./path.sh || exit 1
. ./cmd.sh || exit 1
. utils/background.sh || exit 1
. utils/progress.sh || exit 1

stage=0
stop_stage=100
dir=            # where data/ and exp/ go (default: this recipe's directory)
seed=777        # seed of the synthetic corpus
dim=80          # dimension of the synthetic x-vectors
lda_dim=50
nj=2            # parallel jobs for metric training and scoring
durations=true  # utt2dur, duration-dependent noise, a development set and the QMF stage
bootstrap=1000  # paired resamples of stage 7
auto=true       # pAUCMetric (auto), trained with the adapt/ set as --adapt
auto_opts=      # more options for train-pauc-auto
auto_dev=true   # the development set's trials as train-pauc-auto --dev-trials (when it has one)
metric_opts=    # more options for train-pauc-metric (stage 3)
help_message="Usage: $0 [options]
  --stage N        start at stage N (0..6; default 0)
  --stop-stage N   stop after stage N
  --dir DIR        write data/ and exp/ under DIR (default: $PWD)
  --seed N         seed of the synthetic corpus (default $seed)
  --dim N          dimension of the synthetic vectors (default $dim)
  --lda-dim N      LDA output dimension (default $lda_dim)
  --nj N           parallel jobs (default $nj)
  --durations B    utterance durations (utt2dur), a development set and stage 7 (QMF)
                   (true|false, default $durations)
  --bootstrap N    paired resamples of stage 7 (default $bootstrap)
  --auto B         pAUCMetric (auto) row, train-pauc-auto --adapt (true|false, default $auto)
  --auto-opts S    more options for train-pauc-auto (e.g. \"--num-folds=3\")
  --metric-opts S  more options for train-pauc-metric (e.g. \"--num-iters=100\")
  --auto-dev B     the development speakers' trials (and durations) as train-pauc-auto
                   --dev-trials (true|false, default $auto_dev; needs --durations true)
Each stage is printed with its elapsed time; logs go to <dir>/exp/log/."
. utils/parse_options.sh || exit 1
if [ $# -ne 0 ]; then
  printf '%s\n' "$help_message" >&2
  exit 1
fi
case "$dir" in
  '') dir=$PWD ;;
  /*) ;;
  *) dir=$orig_pwd/$dir ;;
esac
data=$dir/data
exp=$dir/exp
trials=$data/trials
mkdir -p "$exp" || exit 1
echo "$0: logs in $exp/log"

# The systems: name, preprocessing, loss. Scores go to $exp/scores/<name>.
metric_systems="pauc_lnorm:lnorm:pauc triplet_lnorm:lnorm:triplet
pauc_plda:plda:pauc triplet_plda:plda:triplet
pauc_plda_adapt:plda_adapt:pauc triplet_plda_adapt:plda_adapt:triplet"
systems="cosine triplet_lnorm pauc_lnorm plda triplet_plda pauc_plda plda_adapt triplet_plda_adapt pauc_plda_adapt"
case "$auto" in
  true) systems+=" pauc_auto" ;;
  false) ;;
  *) echo "$0: --auto must be true or false, got '$auto'" >&2; exit 1 ;;
esac
case "$auto_dev" in
  true|false) ;;
  *) echo "$0: --auto-dev must be true or false, got '$auto_dev'" >&2; exit 1 ;;
esac

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
  stage_begin 0 "synthetic corpus (seed $seed, dim $dim) in $data"
  num_dev=0
  $durations && num_dev=80    # as many development speakers as evaluation speakers
  $train_cmd $exp/log/make_synthetic_vectors.log \
    make-synthetic-vectors --seed=$seed --dim=$dim --durations=$durations \
    --num-dev-speakers=$num_dev $data || exit 1
  stage_end
fi

# The evaluation (enroll, test, trials) and, when the corpus has one, the development set
# (dev_enroll, dev_test, dev_trials) are preprocessed and scored alike.
enroll_sets="enroll"
[ -f $data/dev_trials ] && enroll_sets+=" dev_enroll"

if [ $stage -le 1 ] && [ $stop_stage -ge 1 ]; then
  stage_begin 1 "mean.vec, LDA ($lda_dim), PLDA, adapted PLDA"
  # The in-domain (unlabelled) mean centres the evaluation vectors, as in egs/sre16/v2.
  background $train_cmd $exp/log/compute_mean.log \
    compute-vector-mean scp:$data/adapt/xvector.scp $exp/mean.vec
  # Speaker means of the enrollment vectors and their counts (extract_xvectors.sh stage 2).
  for enroll in $enroll_sets; do
    background $train_cmd $exp/log/${enroll}_speaker_mean.log \
      compute-vector-mean ark:$data/$enroll/spk2utt scp:$data/$enroll/xvector.scp \
      ark,scp:$exp/${enroll}_spk_xvector.ark,$exp/${enroll}_spk_xvector.scp \
      ark,t:$exp/${enroll}_num_utts.ark
  done
  background $train_cmd $exp/log/lda.log \
    train-lda --total-covariance-factor=0.0 --dim=$lda_dim \
    "ark:subtract-vector-mean scp:$data/train/xvector.scp ark:- |" \
    ark:$data/train/utt2spk $exp/transform.mat
  wait_background || exit 1
  $train_cmd $exp/log/plda.log \
    train-plda ark:$data/train/spk2utt \
    "ark:subtract-vector-mean scp:$data/train/xvector.scp ark:- | transform-vectors $exp/transform.mat ark:- ark:- | normalize-vector-length ark:- ark:- |" \
    $exp/plda || exit 1
  $train_cmd $exp/log/plda_adapt.log \
    adapt-plda --within-covar-scale=0.75 --between-covar-scale=0.25 $exp/plda \
    "ark:subtract-vector-mean scp:$data/adapt/xvector.scp ark:- | transform-vectors $exp/transform.mat ark:- ark:- | normalize-vector-length ark:- ark:- |" \
    $exp/plda_adapt || exit 1
  stage_end
fi

if [ $stage -le 2 ] && [ $stop_stage -ge 2 ]; then
  stage_begin 2 "length-normalised and PLDA-latent vectors"
  # Training vectors are centred on their own mean, evaluation vectors on mean.vec; the
  # enrollment vector of a speaker is the mean of its raw vectors (n enters via --num-utts).
  train_lda="ark:subtract-vector-mean scp:$data/train/xvector.scp ark:- | transform-vectors $exp/transform.mat ark:- ark:- |"
  mkdir -p $exp/lnorm $exp/plda_latent $exp/plda_adapt_latent
  sets="train enroll test"
  [ -f $data/dev_trials ] && sets+=" dev_enroll dev_test"
  for set in $sets; do
    case $set in
      train) input=$train_lda ;;
      *enroll) input="ark:subtract-vector-mean $exp/mean.vec scp:$exp/${set}_spk_xvector.scp ark:- | transform-vectors $exp/transform.mat ark:- ark:- |" ;;
      *) input="ark:subtract-vector-mean $exp/mean.vec scp:$data/$set/xvector.scp ark:- | transform-vectors $exp/transform.mat ark:- ark:- |" ;;
    esac
    background $train_cmd $exp/log/lnorm_$set.log \
      normalize-vector-length --scaleup=false "$input" \
      ark,scp:$exp/lnorm/$set.ark,$exp/lnorm/$set.scp
    num_utts=
    case $set in *enroll) num_utts=--num-utts=ark:$exp/${set}_num_utts.ark ;; esac
    for model in plda plda_adapt; do
      background $train_cmd $exp/log/${model}_latent_$set.log \
        transform-plda-latent $num_utts $exp/$model \
        "$input normalize-vector-length ark:- ark:- |" \
        ark,scp:$exp/${model}_latent/$set.ark,$exp/${model}_latent/$set.scp
    done
  done
  wait_background || exit 1
  stage_end
fi

# Feature directory of a preprocessing name.
feats_of() {
  case $1 in
    lnorm) echo $exp/lnorm ;;
    plda) echo $exp/plda_latent ;;
    plda_adapt) echo $exp/plda_adapt_latent ;;
  esac
}

if [ $stage -le 3 ] && [ $stop_stage -ge 3 ]; then
  stage_begin 3 "TripletMetric and pAUCMetric on each preprocessing"
  mkdir -p $exp/metrics
  # One job per metric, at most $nj at once.
  for system in $metric_systems; do
    IFS=: read -r name pre loss <<< "$system"
    background $train_cmd $exp/log/train_metric_$name.log \
      train-pauc-metric --loss=$loss $metric_opts ark:$data/train/spk2utt \
      scp:$(feats_of $pre)/train.scp $exp/metrics/$name
  done
  if $auto; then
    # RAW vectors: the back-end (its mean from adapt/, LDA, PLDA and its adapted twin, the
    # metrics, a fusion) is chosen on the training speakers, enrollment by 3-vector means;
    # with the development set, its trials (speaker means of dev_enroll against dev_test)
    # rate the candidates and calibrate the chosen one, with their durations (QMF).
    dev_opts=()
    if $auto_dev && [ -f $data/dev_trials ]; then
      dev_opts=("--dev-vectors=scp:cat $data/dev_enroll/xvector.scp $data/dev_test/xvector.scp |"
                "--dev-trials=$data/dev_trials" "--dev-enroll=ark:$data/dev_enroll/spk2utt"
                "--dev-utt2spk=ark:cat $data/dev_enroll/utt2spk $data/dev_test/utt2spk |")
      [ -f $data/dev_test/utt2dur ] && dev_opts+=(
        "--dev-utt2dur=ark:cat $data/dev_enroll/utt2dur $data/dev_test/utt2dur |")
    fi
    background $train_cmd $exp/log/train_pauc_auto.log \
      train-pauc-auto --enroll-utts=3 --num-jobs=$nj --adapt=scp:$data/adapt/xvector.scp \
      "${dev_opts[@]}" $auto_opts scp:$data/train/xvector.scp ark:$data/train/spk2utt \
      $exp/pauc_auto
  fi
  wait_background || exit 1
  stage_end
fi

# score_all <enroll-set> <test-set> <trials> <out-dir>: every system on one trial list.
score_all() {
  local enroll=$1 test=$2 list=$3 out=$4 model system name pre loss feats
  mkdir -p $out
  background $train_cmd $exp/log/score_cosine_$enroll.log \
    score-cosine-trials "cut -d' ' -f1,2 $list |" scp:$exp/lnorm/$enroll.scp \
    scp:$exp/lnorm/$test.scp $out/cosine
  for model in plda plda_adapt; do
    background $train_cmd $exp/log/score_${model}_$enroll.log \
      score-plda-trials --normalize-length=true \
      --num-utts=ark:$exp/${enroll}_num_utts.ark \
      "copy-plda --smoothing=0.0 $exp/$model - |" \
      "ark:subtract-vector-mean $exp/mean.vec scp:$exp/${enroll}_spk_xvector.scp ark:- | transform-vectors $exp/transform.mat ark:- ark:- | normalize-vector-length ark:- ark:- |" \
      "ark:subtract-vector-mean $exp/mean.vec scp:$data/$test/xvector.scp ark:- | transform-vectors $exp/transform.mat ark:- ark:- | normalize-vector-length ark:- ark:- |" \
      "cut -d' ' -f1,2 $list |" $out/$model
  done
  for system in $metric_systems; do
    IFS=: read -r name pre loss <<< "$system"
    feats=$(feats_of $pre)
    background $train_cmd $exp/log/score_${name}_$enroll.log \
      score-pauc-trials $exp/metrics/$name scp:$feats/$enroll.scp scp:$feats/$test.scp \
      $list $out/$name
  done
  if $auto; then     # raw vectors: the model directory holds its own mean, LDA and PLDA
    local durations=     # the sides' seconds, for a model whose calibration kept them
    [ -f $exp/${enroll}_durations ] && [ -f $data/$test/utt2dur ] && \
      grep -q '^quality_measures .*duration' $exp/pauc_auto/system.txt && \
      durations="--enroll-duration=ark:$exp/${enroll}_durations --test-duration=ark:$data/$test/utt2dur"
    background $train_cmd $exp/log/score_pauc_auto_$enroll.log \
      score-pauc-auto --num-utts=ark:$exp/${enroll}_num_utts.ark $durations $exp/pauc_auto \
      scp:$exp/${enroll}_spk_xvector.scp scp:$data/$test/xvector.scp \
      "cut -d' ' -f1,2 $list |" $out/pauc_auto
  fi
}

if [ $stage -le 4 ] && [ $stop_stage -ge 4 ]; then
  stage_begin 4 "scoring $(wc -l < $trials) trials$([ -f $data/dev_trials ] && echo " and $(wc -l < $data/dev_trials) development trials")"
  # Durations of the enrolled speakers (the sum of their utterances'), for pAUCMetric (auto)
  # when its calibration kept them (stage 7 uses them too).
  if [ -f $data/test/utt2dur ]; then
    for set in $enroll_sets; do
      utils/durations.sh --spk2utt $data/$set/spk2utt $data/$set $exp/${set}_durations || exit 1
    done
  fi
  score_all enroll test $trials $exp/scores
  [ -f $data/dev_trials ] && score_all dev_enroll dev_test $data/dev_trials $exp/dev_scores
  wait_background || exit 1
  stage_end
fi

if [ $stage -le 5 ] && [ $stop_stage -ge 5 ]; then
  stage_begin 5 "calibration (2-fold over the enrolled speakers)"
  utils/calibrate_2fold.sh --cmd "$train_cmd" --nj $nj $trials $exp/scores $exp/calibrated $systems || exit 1
  stage_end
fi

if [ $stage -le 6 ] && [ $stop_stage -ge 6 ]; then
  stage_begin 6 "results"
  utils/results_table.sh --nj $nj --title "Synthetic demo (seed $seed, $(wc -l < $trials) trials)" \
    --plots $exp/det.png,$exp/roc.png $trials $exp/scores $exp/calibrated $systems \
    > $exp/results.txt || exit 1
  cat $exp/results.txt
  echo "DET and ROC plots: $exp/det.png $exp/roc.png"
  stage_end
fi

if [ $stage -le 7 ] && [ $stop_stage -ge 7 ] && [ -f $data/test/utt2dur ] && [ -f $data/dev_trials ]; then
  stage_begin 7 "QMF (durations) against score-only calibration, trained on the development speakers"
  # Durations of the trial sides: an enrolled speaker's is the sum of its utterances'.
  for set in enroll dev_enroll; do
    utils/durations.sh --spk2utt $data/$set/spk2utt $data/$set $exp/${set}_durations || exit 1
  done
  steps/qmf.sh --cmd "$train_cmd" --nj $nj --bootstrap $bootstrap \
    $data/dev_trials $exp/dev_scores $exp/dev_enroll_durations $data/dev_test/utt2dur \
    $trials $exp/scores $exp/enroll_durations $data/test/utt2dur $exp/qmf $systems \
    > $exp/qmf.txt || exit 1
  cat $exp/qmf.txt
  stage_end
fi
