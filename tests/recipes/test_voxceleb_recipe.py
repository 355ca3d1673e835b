"""recipes/voxceleb on a miniature egs/voxceleb/v2 directory with the real Kaldi (issue 19 item 5).

The training x-vectors come from make-synthetic-vectors as Kaldi archives; the evaluation set
arrives as a neural toolkit would leave it (an .npy of embeddings, a key list and a VoxCeleb1
trial list of ``1|0 path path`` lines), brought in with import-vectors and
convert-voxceleb-trials. The recipe then runs every stage with Kaldi's binaries, its utils/
(run.pl) and sid/compute_min_dcf.py: the PLDA scores must be what Kaldi's own stage 11 command
writes, and every echoed EER/minDCF what Kaldi's compute-eer and compute_min_dcf.py print.
"""

import itertools
import math
import subprocess

import numpy as np
import pytest

from conftest import REPO, run_tool, tool_env
from interop.real_kaldi import find_kaldi_root, install_egs_scripts, kaldi_env
from pauc_backend.kaldi_io import read_matrix, read_vector_table

RECIPE = REPO / "recipes/voxceleb/run.sh"
NNET = "exp/xvector_nnet_1a"
LDA_DIM = 32
# The shipped train-pauc-auto takes minutes; a small candidate set checks the plumbing.
CHEAP_AUTO = ("--num-folds=2 --lda-dims=none,24 --candidates=cosine_raw,plda,pauc_lnorm "
              "--num-iters=30 --num-jobs=1")
SYSTEMS = ("PLDA", "Cosine (raw vectors)", "Cosine (centred)", "pAUCMetric (length-norm)",
           "pAUCMetric (PLDA latent)", "pAUCMetric (auto)")


def voxceleb_path(utt, speakers):
    """ev0003-tst02 -> id10003/rec1/00002.wav (VoxCeleb1's <speaker>/<recording>/<segment>)."""
    spk, number = utt.rsplit("-", 1)
    index = int(number[3:]) if number.startswith("tst") else 50 + int(number[3:])
    return "id1%04d/rec%d/%05d.wav" % (speakers.index(spk) + 1, index % 3, index)


def build_egs(egs, root):
    syn = egs / "synthetic"
    run_tool("make-synthetic-vectors", "--dim=40", "--num-train-speakers=120",
             "--num-eval-speakers=30", "--num-adapt-speakers=20", "--shift-scale=0", syn,
             check=True)
    train = egs / NNET / "xvectors_train"
    train.mkdir(parents=True)
    run_tool("copy-vectors", "scp:%s" % (syn / "train/xvector.scp"),
             "ark,scp:%s,%s" % (train / "xvector.ark", train / "xvector.scp"), check=True)
    (egs / "data/train").mkdir(parents=True)
    for table in ("spk2utt", "utt2spk"):
        (egs / "data/train" / table).write_bytes((syn / "train" / table).read_bytes())
    # The evaluation side as a toolkit dump: enroll and test utterances of the eval speakers.
    keys, X = [], []
    for part in ("enroll", "test"):
        k, x = read_vector_table("scp:%s" % (syn / part / "xvector.scp"))
        keys += k
        X.append(x.astype(np.float64))
    speakers = sorted({k.rsplit("-", 1)[0] for k in keys})
    paths = [voxceleb_path(k, speakers) for k in keys]
    dump = egs / "dump"
    dump.mkdir()
    np.save(dump / "embeddings.npy", np.concatenate(X))
    (dump / "utts.txt").write_text("".join(
        "%s\n" % p[:-4].replace("/", "-") for p in paths))
    pairs = [(a, b) for a, b in itertools.combinations(range(len(paths)), 2) if (a + b) % 5 == 0]
    (dump / "list_test.txt").write_text("".join(
        "%d %s %s\n" % (paths[a][:7] == paths[b][:7], paths[a], paths[b]) for a, b in pairs))
    test = egs / NNET / "xvectors_voxceleb1_test"
    test.mkdir()
    run_tool("import-vectors", "--keys=%s" % (dump / "utts.txt"), dump / "embeddings.npy",
             "ark,scp:%s,%s" % (test / "xvector.ark", test / "xvector.scp"), check=True)
    (egs / "data/voxceleb1_test").mkdir(parents=True)
    run_tool("convert-voxceleb-trials", dump / "list_test.txt",
             egs / "data/voxceleb1_test/trials", check=True)
    install_egs_scripts(egs, root)
    (egs / "path.sh").write_text("export KALDI_ROOT=%s\nexport PATH=$PWD/utils/:$KALDI_ROOT/bin:"
                                 "$PWD:$PATH\nexport LC_ALL=C\n" % root)
    (egs / "cmd.sh").write_text('export train_cmd="run.pl"\n')


def run_recipe(egs, *options):
    proc = subprocess.run(["bash", str(RECIPE), "--lda-dim=%d" % LDA_DIM,
                           "--metric-opts=--num-iters=30", "--auto-opts=" + CHEAP_AUTO,
                           *options, str(egs)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=tool_env(), timeout=600)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    return proc.stdout.decode()


@pytest.fixture(scope="module")
def voxceleb(tmp_path_factory):
    root = find_kaldi_root()
    egs = tmp_path_factory.mktemp("voxceleb_v2")
    build_egs(egs, root)
    # the auto stage with an unlabelled in-domain set (issue 28): --adapt
    stdout = run_recipe(egs, "--use-kaldi=true", "--nj=2",
                        "--adapt=scp:%s" % (egs / "synthetic/adapt/xvector.scp"))
    return root, egs, stdout


def kaldi(root, egs, command):
    return subprocess.run(command, shell=True, cwd=egs, env=kaldi_env(root),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout


def test_plda_scores_are_those_of_kaldi_stage_11(voxceleb):
    """Kaldi's own stage 10-11 commands on the same egs directory give the same bytes."""
    root, egs, stdout = voxceleb
    assert "baseline binaries: Kaldi" in stdout
    train = NNET + "/xvectors_train"
    test = NNET + "/xvectors_voxceleb1_test"
    lda = ("ark:ivector-subtract-global-mean %s/mean.vec scp:%s/xvector.scp ark:- | transform-vec "
           "%s/transform.mat ark:- ark:- | ivector-normalize-length ark:- ark:- |"
           % (train, test, train))
    kaldi(root, egs, "ivector-plda-scoring --normalize-length=true "
                     "\"ivector-copy-plda --smoothing=0.0 %s/plda - |\" \"%s\" \"%s\" "
                     "\"cat data/voxceleb1_test/trials | cut -d\\  --fields=1,2 |\" "
                     "exp/kaldi_scores" % (train, lda, lda))
    assert (egs / "exp/scores_voxceleb1_test").read_bytes() == \
        (egs / "exp/kaldi_scores").read_bytes()
    assert read_matrix(str(egs / train / "transform.mat")).shape == (LDA_DIM, 41)


def test_every_system_echoes_kaldi_eer_and_min_dcf(voxceleb):
    root, egs, stdout = voxceleb
    lines = stdout.splitlines()
    trials = "data/voxceleb1_test/trials"
    names = {"PLDA": "", "Cosine (raw vectors)": "_cosine_raw", "Cosine (centred)": "_cosine",
             "pAUCMetric (length-norm)": "_pauc_lnorm", "pAUCMetric (PLDA latent)": "_pauc_plda",
             "pAUCMetric (auto)": "_pauc_auto"}
    for label in SYSTEMS:
        block = lines.index("%s, voxceleb1_test:" % label)
        scores = "exp/scores_voxceleb1_test" + names[label]
        # as egs/voxceleb/v2 stage 12 (its prepare_for_eer.py joins trials and scores by key)
        eer = kaldi(root, egs, "awk 'NR == FNR { s[$1 \" \" $2] = $3; next } "
                               "{ print s[$1 \" \" $2], $3 }' %s %s | compute-eer -"
                    % (scores, trials)).decode()
        assert lines[block + 1] == "EER: %s%%" % eer, label
        for i, p in enumerate(("0.01", "0.001")):
            dcf = kaldi(root, egs, "sid/compute_min_dcf.py --p-target %s %s %s"
                        % (p, scores, trials)).decode().strip()
            assert lines[block + 2 + i] == "minDCF(p-target=%s): %s" % (p, dcf), label
        pauc = float(lines[block + 4].split("pAUC[0,0.01]: ")[1])
        assert 0 <= pauc <= 1 and float(eer) < 50, (label, eer)   # better than chance
    assert any(l.startswith("%s: chosen: system " % RECIPE) for l in lines), stdout


def test_auto_stage_used_the_adaptation_set(voxceleb):
    _, egs, stdout = voxceleb
    num_adapt = len((egs / "synthetic/adapt/xvector.scp").read_text().splitlines())
    assert "--adapt=scp:" in stdout
    card = (egs / NNET / "xvectors_train/pauc_auto/system.txt").read_text()
    assert "adapt_vectors all_%d_vectors\n" % num_adapt in card


def test_summary_table_lists_every_system(voxceleb):
    _, _, stdout = voxceleb
    lines = stdout.splitlines()
    table = lines[lines.index("Summary, voxceleb1_test:") + 2:]
    for label in SYSTEMS:
        row = [l for l in table if l[:30].rstrip() == label]     # printf %-30s
        assert len(row) == 1, (label, table)
        values = row[0][30:].split()
        assert len(values) == 4 and all(math.isfinite(float(v)) for v in values)


def test_split_scoring_and_our_twins_match(voxceleb):
    """--nj 1 gives the --nj 2 files; --use-kaldi=false (our twins of the baseline binaries)
    gives the same PLDA scores within 1e-4 max(1, |s|)."""
    _, egs, _ = voxceleb
    scores = sorted((egs / "exp").glob("scores_voxceleb1_test*"))
    before = {p.name: p.read_bytes() for p in scores if p.is_file()}
    assert len(before) == 6
    run_recipe(egs, "--use-kaldi=true", "--nj=1", "--stage=11", "--stop-stage=11")
    run_recipe(egs, "--use-kaldi=true", "--nj=1", "--stage=14", "--stop-stage=14")
    after = {p.name: p.read_bytes() for p in scores if p.is_file()}
    assert after == before
    stdout = run_recipe(egs, "--use-kaldi=false", "--nj=1", "--stage=10", "--stop-stage=11")
    assert "baseline binaries: pauc-backend" in stdout
    ours = (egs / "exp/scores_voxceleb1_test").read_text().split("\n")
    theirs = before["scores_voxceleb1_test"].decode().split("\n")
    assert [l.split()[:2] for l in ours if l] == [l.split()[:2] for l in theirs if l]
    a = np.array([float(l.split()[2]) for l in ours if l])
    b = np.array([float(l.split()[2]) for l in theirs if l])
    assert np.all(np.abs(a - b) <= 1e-4 * np.maximum(1.0, np.abs(b)))


def test_more_trial_lists_are_scored_and_echoed_each(voxceleb):
    """--trials "trials trials_H": each list gets Kaldi's scores file name with its suffix and
    its own echoed block (here the H list is every other trial of the O list)."""
    _, egs, _ = voxceleb
    trials = egs / "data/voxceleb1_test/trials"
    lines = trials.read_text().splitlines(True)
    (egs / "data/voxceleb1_test/trials_H").write_text("".join(lines[::2]))
    stdout = run_recipe(egs, "--use-kaldi=true", "--nj=2", "--stage=11", "--stop-stage=12",
                        "--trials=trials trials_H")
    out = stdout.splitlines()
    for label in ("PLDA, voxceleb1_test:", "PLDA, voxceleb1_test trials_H:"):
        block = out.index(label)
        assert out[block + 1].startswith("EER: ")
        assert out[block + 3].startswith("minDCF(p-target=0.001): ")
    scored = (egs / "exp/scores_voxceleb1_test_H").read_text().splitlines()
    assert [l.split()[:2] for l in scored] == [l.split()[:2] for l in lines[::2]]


def test_recipe_without_egs_dir_prints_usage(tmp_path):
    proc = subprocess.run(["bash", str(RECIPE)], cwd=tmp_path, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=tool_env(), timeout=60)
    assert proc.returncode == 1 and "<egs-dir>" in proc.stderr.decode()
    assert list(tmp_path.iterdir()) == []


def test_stage_17_calibrates_2fold_by_test_speaker_with_the_segments_durations(voxceleb):
    """Issue 29: without durations stage 17 says so; with utt2num_frames (and utt2spk) in
    data/voxceleb1_test, score-only and QMF calibrations, 2-fold over the test speakers."""
    _, egs, stdout = voxceleb
    assert "stage 17: no utt2dur or utt2num_frames in data/voxceleb1_test" in stdout
    data = egs / "data/voxceleb1_test"
    keys = [l.split()[0] for l in (egs / NNET / "xvectors_voxceleb1_test/xvector.scp")
            .read_text().splitlines()]
    (data / "utt2num_frames").write_text("".join(
        "%s %d\n" % (k, 150 + (700 * i) % 3900) for i, k in enumerate(keys)))
    (data / "utt2spk").write_text("".join("%s %s\n" % (k, k.split("-")[0]) for k in keys))
    try:
        out = run_recipe(egs, "--stage=17", "--qmf-systems=plda cosine_raw")
    finally:
        (data / "utt2num_frames").unlink()
        (data / "utt2spk").unlink()
    for label in ("PLDA", "Cosine (raw vectors)"):
        lines = [l for l in out.splitlines() if l.startswith(
            "%s, voxceleb1_test, calibrated 2-fold over the test speakers: " % label)]
        assert len(lines) == 1, out
        assert "; with durations (QMF): actDCF(p-target=0.01): " in lines[0]
    folds = (egs / "exp/qmf_2fold_voxceleb1_test/trials/qmf/speaker_folds").read_text()
    assert {l.split()[1] for l in folds.splitlines()} == {"1", "2"}
