"""Cross-feeding: Kaldi's binaries read every file and pipe our tools write, ours read Kaldi's,
and the scores downstream are identical.

Per corpus (golden, ETRI, TIMIT), the back-end of egs/sre16/v2 stages 8-9 is built twice: once by
our tools writing every kind of file (binary and text vector archives with scp files, text and
binary double mean vectors, binary and text LDA matrices, text and binary PLDA models, text and
binary num_utts tables, score files), once by Kaldi. Then
* Kaldi's ivector-plda-scoring, fed only our files and our tools inside its rspecifier pipes,
  and our score-plda-trials on the same inputs write byte-identical scores (and the other way
  round, ours fed Kaldi's files and Kaldi's programs inside its pipes);
* Kaldi's readers (copy-vector, copy-matrix, ivector-copy-plda, ivector-mean, compute-eer,
  sid/compute_min_dcf.py) give from our files what they give from Kaldi's own (and
  compute_min_dcf.py's figure on our scores is our compute-eer-pauc's);
* both whole pipelines agree to 1e-4 max(1, |score|): our PLDA is trained from a text archive
  (rounded to 7 digits), and the models also differ in the last bits of their doubles
  (eigen-solvers and BLAS summation order, see test_model_twins.py).
"""

import json

import numpy as np
import pytest

from real_kaldi import Runner, corpus, find_kaldi_root, kaldi_env, kaldi_pipeline

CORPORA = ("golden", "etri", "timit")


@pytest.fixture(scope="module")
def kaldi_root():
    return find_kaldi_root()


def scores_of(data):
    lines = [l.split() for l in data.decode().splitlines()]
    return [tuple(l[:2]) for l in lines], np.array([float(l[2]) for l in lines])


@pytest.mark.parametrize("name", CORPORA)
def test_cross_feed(name, kaldi_root, tmp_path_factory, tmp_path):
    c = corpus(name, tmp_path_factory)
    k = kaldi_pipeline(c, kaldi_root)
    r = Runner(kaldi_root, c.dir, kaldi_env(kaldi_root, blas_threads=1))
    o = tmp_path
    # ---- our back-end, every file kind written once in binary and once in text
    r.run("compute-vector-mean", "scp:train.scp", o / "mean.vec")                  # text DV
    r.run("compute-vector-mean", "--binary=true", "scp:train.scp", o / "mean_bin.vec")
    r.run("subtract-vector-mean", "scp:train.scp",
          "ark,scp:%s/train_sub.ark,%s/train_sub.scp" % (o, o))
    r.run("train-lda", "--dim=%d" % c.lda_dim, "scp:%s/train_sub.scp" % o, "ark:train.utt2spk",
          o / "transform.mat")
    r.run("train-lda", "--binary=false", "--dim=%d" % c.lda_dim, "scp:%s/train_sub.scp" % o,
          "ark:train.utt2spk", o / "transform.txt.mat")
    r.run("transform-vectors", o / "transform.txt.mat", "scp:%s/train_sub.scp" % o,
          "ark,t:%s/train_lda.txt" % o)
    r.run("normalize-vector-length", "ark:%s/train_lda.txt" % o, "ark:%s/train_norm.ark" % o)
    r.run("train-plda", "--binary=false", "ark:train.spk2utt", "ark:%s/train_norm.ark" % o,
          o / "plda.txt")
    r.run("copy-plda", o / "plda.txt", o / "plda")
    r.run("adapt-plda", o / "plda",
          "ark:subtract-vector-mean %s/mean_bin.vec scp:adapt.scp ark:- | transform-vectors "
          "%s/transform.mat ark:- ark:- | normalize-vector-length ark:- ark:- |" % (o, o),
          o / "plda_adapt")
    if c.has_enroll:
        r.run("compute-vector-mean", "ark:enroll.spk2utt", "scp:enroll.scp",
              "ark,scp:%s/enroll_spk.ark,%s/enroll_spk.scp" % (o, o),
              "ark,t:%s/num_utts.ark" % o)
        r.run("copy-vectors", "ark:%s/enroll_spk.ark" % o, "ark,t:%s/enroll_spk.txt" % o)
        # A binary int32 table, written by our copy of Kaldi's num_utts (Kaldi reads both).
        r.sh("compute-vector-mean ark:enroll.spk2utt scp:enroll.scp ark:/dev/null "
             "ark:%s/num_utts.bin" % o)
        enroll = "scp:%s/enroll_spk.scp" % o
    else:
        enroll = "scp:test.scp"

    # ---- Kaldi's readers see in our files what they see in Kaldi's own
    def kaldi_text(*argv):
        return r.run(*argv).stdout

    assert kaldi_text("copy-vector", "--binary=false", o / "mean.vec", "-") == \
        kaldi_text("copy-vector", "--binary=false", k / "mean.vec", "-")
    assert kaldi_text("copy-vector", "--binary=false", o / "mean_bin.vec", "-") == \
        kaldi_text("copy-vector", "--binary=false", k / "mean_bin.vec", "-")
    assert kaldi_text("copy-vector", "scp:head -n 300 %s/train_sub.scp |" % o, "ark,t:-") == \
        kaldi_text("copy-vector", "scp:head -n 300 %s/train_sub.scp |" % k, "ark,t:-")
    assert kaldi_text("copy-matrix", "--binary=false", o / "transform.mat", "-") == \
        (o / "transform.txt.mat").read_bytes()
    assert kaldi_text("copy-matrix", "--binary=false", o / "transform.txt.mat", "-") == \
        (o / "transform.txt.mat").read_bytes()
    assert kaldi_text("ivector-copy-plda", "--binary=false", o / "plda", "-") == \
        (o / "plda.txt").read_bytes()
    assert kaldi_text("ivector-copy-plda", o / "plda.txt", "-") == (o / "plda").read_bytes()
    if c.has_enroll:
        # (Text is rounded to 7 digits: compare with Kaldi's own text of the same vectors.)
        assert kaldi_text("copy-vector", "ark:%s/enroll_spk.txt" % o, "ark:-") == \
            kaldi_text("copy-vector", "ark:copy-vector ark:%s/enroll_spk.ark ark,t:- |" % o,
                       "ark:-")
        assert kaldi_text("ivector-mean", "ark:enroll.spk2utt", "scp:enroll.scp", "ark:/dev/null",
                          "ark,t:-") == (o / "num_utts.ark").read_bytes()

    # ---- Kaldi's scorer on our files and pipes == our scorer on the same
    def stream(mean, lda, source, norm):
        return ("ark:%s %s %s ark:- | %s %s ark:- ark:- | %s ark:- ark:- |"
                % ("subtract-vector-mean" if norm == "ours" else "ivector-subtract-global-mean",
                   mean, source,
                   "transform-vectors" if norm == "ours" else "transform-vec", lda,
                   "normalize-vector-length" if norm == "ours" else "ivector-normalize-length"))

    # (Both models on the golden data; the text model alone on the real corpora, for time.)
    models = (("plda.txt", "num_utts.ark"), ("plda_adapt", "num_utts.bin"))
    for model, num_utts in models if name == "golden" else models[:1]:
        opts = ["--num-utts=ark:%s/%s" % (o, num_utts)] if c.has_enroll else []
        args = opts + ["copy-plda %s/%s - |" % (o, model),
                       stream(o / "mean.vec", o / "transform.txt.mat", enroll, "ours"),
                       stream(o / "mean_bin.vec", o / "transform.mat", "scp:test.scp", "ours"),
                       "cut -d' ' -f1,2 trials |"]
        r.run("ivector-plda-scoring", *args, o / "kaldi_on_ours")
        r.run("score-plda-trials", *args, o / "ours_on_ours")
        ours_on_ours = (o / "ours_on_ours").read_bytes()
        assert ours_on_ours.count(b"\n") == (c.dir / "trials").read_bytes().count(b"\n")
        assert (o / "kaldi_on_ours").read_bytes() == ours_on_ours, model
        # Kaldi's evaluation reads our scores file.
        eer = r.sh("paste trials %s/ours_on_ours | awk '{print $6, $3}' | compute-eer -" % o)
        assert eer.stdout and eer.stdout == r.sh(
            "paste trials %s/ours_on_ours | awk '{print $6, $3}' | compute-eer-pauc -" % o).stdout
        # compute_min_dcf.py gives on our scores what it gives on its own scorer's, and our
        # compute-eer-pauc's minDCF of the same file is that figure
        dcf = r.run(str(kaldi_root / "sid/compute_min_dcf.py"), o / "ours_on_ours", "trials")
        assert dcf.stdout == r.run(str(kaldi_root / "sid/compute_min_dcf.py"),
                                   o / "kaldi_on_ours", "trials").stdout
        report = json.loads(r.run("compute-eer-pauc", "--report=json", "--p-target=0.01",
                                  o / "ours_on_ours", "trials").stdout)
        assert dcf.stdout.decode() == "%.4f\n" % report["min_dcf"][0]["min_dcf"], model

    # ---- ours fed Kaldi's files (binary and text) and Kaldi's programs inside the pipes
    k_enroll = "ark:%s/enroll_spk.ark" % k if c.has_enroll else "scp:test.scp"
    opts = ["--num-utts=ark:%s/num_utts.ark" % k] if c.has_enroll else []
    args = opts + ["ivector-copy-plda --binary=false %s/plda - |" % k,
                   stream(k / "mean.vec", k / "transform.txt.mat", k_enroll, "kaldi"),
                   stream(k / "mean_bin.vec", k / "transform.mat", "scp:test.scp", "kaldi"),
                   "trials2"]
    r.run("score-plda-trials", *args, o / "ours_on_kaldi")
    r.run("ivector-plda-scoring", *args, o / "kaldi_on_kaldi")
    kaldi_on_kaldi = (o / "kaldi_on_kaldi").read_bytes()
    assert (o / "ours_on_kaldi").read_bytes() == kaldi_on_kaldi
    # Kaldi's own pipeline (binary files only) agrees to the rounding of the text files
    # (7 significant digits: kaldi-interfaces.md 5.11 gives 1e-4 max(1, |score|)).
    keys, text_fed = scores_of(kaldi_on_kaldi)
    k_keys, binary_fed = scores_of((k / "scores_plda").read_bytes())
    assert keys == k_keys
    assert np.all(np.abs(text_fed - binary_fed) <= 1e-4 * np.maximum(1.0, np.abs(binary_fed)))

    # ---- the two whole back-ends agree
    r.run("score-plda-trials", *(["--num-utts=ark:%s/num_utts.ark" % o] if c.has_enroll else []),
          o / "plda", stream(o / "mean.vec", o / "transform.mat", enroll, "ours"),
          stream(o / "mean.vec", o / "transform.mat", "scp:test.scp", "ours"), "trials2",
          o / "all_ours")
    keys, ours = scores_of((o / "all_ours").read_bytes())
    k_keys, theirs = scores_of((k / "scores_plda").read_bytes())
    assert keys == k_keys
    # Our PLDA was trained on a text archive (7 significant digits): kaldi-interfaces.md 5.11's
    # tolerance for text files, 1e-4 max(1, |score|).
    excess = np.abs(ours - theirs) / np.maximum(1.0, np.abs(theirs))
    assert excess.max() <= 1e-4, excess.max()


@pytest.mark.parametrize("writer", ["ours", "kaldi"])
def test_output_pipes_both_ways(writer, kaldi_root, tmp_path_factory, tmp_path):
    """A wspecifier pipe into the other side's program: ours writing into `| copy-vector`,
    Kaldi writing into `| copy-vectors`; the archive lands byte-identical."""
    c = corpus("golden", tmp_path_factory)
    r = Runner(kaldi_root, c.dir, kaldi_env(kaldi_root, blas_threads=1))
    program, reader = (("normalize-vector-length", "copy-vector") if writer == "ours" else
                       ("ivector-normalize-length", "copy-vectors"))
    r.run(program, "scp:test.scp", "ark:| %s ark:- ark,t:%s/piped.txt" % (reader, tmp_path))
    r.run(program, "scp:test.scp", "ark,t:%s/direct.txt" % tmp_path)
    assert (tmp_path / "piped.txt").read_bytes() == (tmp_path / "direct.txt").read_bytes()
    assert (tmp_path / "piped.txt").stat().st_size > 0
