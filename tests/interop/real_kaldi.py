"""Where the real Kaldi reference build lives, and how the interop tests run it.

The build comes from ``../shared/kaldi-ref/build.sh DIR``: the first test that needs it builds it
(about a minute, once per machine; a file lock makes parallel test workers wait for one build)
into ``$PAUC_KALDI_ROOT``, else ``${XDG_CACHE_HOME:-~/.cache}/pauc-backend/kaldi-ref``, and later
runs reuse it until the kit's content changes (``.kit-id``). So the README's test command runs
every real-Kaldi test whenever ``../shared`` is beside the checkout. Without the kit the tests
skip, except under CI (``CI=true``), where that is a failure (tests/prerequisites.py); a
failing build is always a failure. Nothing here changes ``os.environ``: subprocesses get their
own environment dicts.
"""

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from prerequisites import in_ci, missing, need  # noqa: F401 (need, in_ci: re-exported)

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
BIN = REPO / "bin"
SHARED = REPO.parent / "shared"
GOLDEN = SHARED / "golden"
ETRI = SHARED / "realdata" / "etri"
TIMIT = SHARED / "realdata" / "timit-ge2e"

KALDI_PROGRAMS = (
    "copy-vector", "copy-matrix", "transform-vec", "ivector-transform", "ivector-mean",
    "ivector-subtract-global-mean", "ivector-normalize-length", "ivector-compute-lda",
    "ivector-compute-plda", "ivector-adapt-plda", "ivector-copy-plda", "ivector-plda-scoring",
    "ivector-compute-dot-products", "compute-eer")


def default_root():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "pauc-backend" / "kaldi-ref"


def kit_id(kit):
    """A digest of the kit's files (not its own build/ folder); the same value as
    ``find . -path ./build -prune -o -type f -print | LC_ALL=C sort | xargs sha1sum | sha1sum``
    in the kit, cut to 16 digits, so a build stamped by a shell script is recognised too."""
    names = sorted("./" + p.relative_to(kit).as_posix() for p in kit.rglob("*")
                   if p.is_file() and not p.is_symlink() and p.relative_to(kit).parts[0] != "build")
    names = sorted(names, key=lambda n: n.encode())
    listing = "".join("%s  %s\n" % (hashlib.sha1((kit / n).read_bytes()).hexdigest(), n)
                      for n in names)
    return hashlib.sha1(listing.encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def build_kaldi(root, kit=SHARED / "kaldi-ref"):
    """Build the kit into ``root`` unless a build of the same kit is there; None without a kit.

    Returns the problem as a string when the build fails (the caller fails the test with it).
    """
    if not (kit / "build.sh").is_file():
        return None
    root.mkdir(parents=True, exist_ok=True)
    with open(root.parent / (root.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # other workers wait here for the one build
        ident = kit_id(kit)
        stamp = root / ".kit-id"
        if stamp.is_file() and stamp.read_text().strip() != ident:
            for name in ("bin", "obj", "utils", "sid", ".complete"):
                path = root / name
                shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
        proc = subprocess.run(["bash", str(kit / "build.sh"), str(root)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=1800)
        if proc.returncode != 0:
            return ("bash %s %s failed (%d):\n%s" % (kit / "build.sh", root, proc.returncode,
                                                     proc.stdout.decode(errors="replace")[-3000:]))
        stamp.write_text(ident + "\n")
    return None


def find_kaldi_root():
    """The build's root, built from ../shared/kaldi-ref when needed; else skip (fail under CI)."""
    root = Path(os.environ.get("PAUC_KALDI_ROOT") or default_root())
    problem = build_kaldi(root)
    if problem:
        pytest.fail(problem)
    absent = [p for p in KALDI_PROGRAMS if not os.access(root / "bin" / p, os.X_OK)]
    absent += [p for p in ("utils/run.pl", "utils/filter_scp.pl", "sid/compute_min_dcf.py")
               if not (root / p).is_file()]
    if absent:
        message = ("real Kaldi not found in %s (missing %s): build it with "
                   "`bash ../shared/kaldi-ref/build.sh DIR` and set PAUC_KALDI_ROOT=DIR"
                   % (root, ", ".join(absent[:3])))
        missing(message)
    return root


def kaldi_env(root, blas_threads=None):
    """Kaldi's bin/ then our bin/ on PATH; optionally a fixed OpenBLAS thread count."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(root / "bin"), str(BIN), env.get("PATH", "")])
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["LC_ALL"] = "C"
    if blas_threads is not None:
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[name] = str(blas_threads)
    return env


class Runner:
    """Runs Kaldi programs and our tools (both resolved through PATH) in one directory."""

    def __init__(self, root, cwd, env=None):
        self.root = root
        self.cwd = Path(cwd)
        self.env = env if env is not None else kaldi_env(root)

    def run(self, *argv, input=None, ok=True):
        argv = [str(a) for a in argv]
        if (BIN / argv[0]).is_file():  # our tool: this checkout's, with this interpreter
            argv = [sys.executable, str(BIN / argv[0])] + argv[1:]
        proc = subprocess.run(argv, cwd=self.cwd, input=input, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        if ok and proc.returncode != 0:
            raise AssertionError("%s failed (%d):\n%s" % (" ".join(argv), proc.returncode,
                                                         proc.stderr.decode(errors="replace")))
        return proc

    def sh(self, command, ok=True):
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=self.cwd,
                              env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=600)
        if ok and proc.returncode != 0:
            raise AssertionError("%s failed (%d):\n%s" % (command, proc.returncode,
                                                         proc.stderr.decode(errors="replace")))
        return proc

    def read(self, name):
        return (self.cwd / name).read_bytes()


# ------------------------------------------------------------------------------- corpora
class Corpus:
    """One data set laid out for both sides: absolute-path scp files and 2-column trials.

    ``name`` is golden, etri or timit. Real corpora are subsampled (every ``step``-th trial; the
    training sets whole) so that the whole interop suite stays within a couple of minutes.
    ``enroll_spk2utt`` is None for TIMIT, whose trials compare single segments.
    """

    def __init__(self, name, directory):
        self.name = name
        self.dir = Path(directory)


def _absolute_scp(source, folder, target):
    """``source`` with absolute paths; they are relative to ``folder`` or the scp's own folder."""
    lines = []
    base = None
    for line in Path(source).read_text().splitlines():
        key, path = line.split(None, 1)
        if base is None:
            ark = path.rsplit(":", 1)[0]
            base = next(f for f in (Path(folder), Path(source).parent) if (f / ark).is_file())
        lines.append("%s %s\n" % (key, base / path))
    Path(target).write_text("".join(lines))


def _subsample(source, target, step):
    lines = Path(source).read_text().splitlines(True)
    Path(target).write_text("".join(lines[::step]))


def _two_columns(source, target):
    Path(target).write_text("".join(" ".join(l.split()[:2]) + "\n"
                                    for l in Path(source).read_text().splitlines()))


_CORPORA = {}


def corpus(name, tmp_path_factory):
    """The prepared corpus ``name`` (golden|etri|timit), made once per test session."""
    if name in _CORPORA:
        return _CORPORA[name]
    c = Corpus(name, tmp_path_factory.mktemp("corpus_" + name))
    d = c.dir
    if name == "golden":
        src = need(GOLDEN)
        sets = {"train": "data/train", "adapt": "data/adapt", "enroll": "data/enroll",
                "test": "data/test"}
        for s, folder in sets.items():
            _absolute_scp(src / folder / "xvector.scp", src, d / (s + ".scp"))
        for s in ("train", "enroll"):
            for t in ("spk2utt", "utt2spk"):
                (d / ("%s.%s" % (s, t))).write_bytes((src / sets[s] / t).read_bytes())
        (d / "trials").write_bytes((src / "data/trials").read_bytes())
        c.lda_dim, c.step = 32, 1
    elif name == "etri":
        src = need(ETRI)
        for s in ("train", "enroll", "test"):
            _absolute_scp(src / s / "xvector.scp", src, d / (s + ".scp"))
            for t in ("spk2utt", "utt2spk"):
                (d / ("%s.%s" % (s, t))).write_bytes((src / s / t).read_bytes())
        # Unlabelled in-domain data for adapt-plda: the test utterances (as sre16's "major").
        (d / "adapt.scp").write_bytes((d / "test.scp").read_bytes())
        c.step = 8
        _subsample(src / "trials", d / "trials", c.step)
        c.lda_dim = 100
    elif name == "timit":
        src = need(TIMIT)
        for s, folder in (("train", "train"), ("test", "eval")):
            _absolute_scp(src / folder / "xvector.scp", src, d / (s + ".scp"))
            for t in ("spk2utt", "utt2spk"):
                (d / ("%s.%s" % (s, t))).write_bytes((src / folder / t).read_bytes())
        (d / "adapt.scp").write_bytes((d / "test.scp").read_bytes())
        c.step = 8
        _subsample(src / "eval/trials", d / "trials", c.step)
        c.lda_dim = 100
    else:
        raise ValueError(name)
    _two_columns(d / "trials", d / "trials2")
    c.has_enroll = (d / "enroll.spk2utt").is_file()
    _CORPORA[name] = c
    return c


def kaldi_pipeline(c, root):
    """egs/sre16/v2 stages 8-9 with the real binaries on corpus ``c``, in ``c.dir/kaldi``.

    Every intermediate file is kept: the twin tests run our tool on the inputs Kaldi's step had
    and compare its output with Kaldi's. Single-threaded BLAS, so that reruns are reproducible.
    """
    if getattr(c, "kaldi", None) is not None:
        return c.kaldi
    k = c.dir / "kaldi"
    k.mkdir()
    r = Runner(root, c.dir, kaldi_env(root, blas_threads=1))
    r.run("ivector-mean", "scp:train.scp", "kaldi/mean.vec")
    r.run("ivector-mean", "--binary=true", "scp:train.scp", "kaldi/mean_bin.vec")
    r.run("ivector-subtract-global-mean", "scp:train.scp",
          "ark,scp:kaldi/train_sub.ark,kaldi/train_sub.scp")
    r.run("ivector-compute-lda", "--total-covariance-factor=0.0", "--dim=%d" % c.lda_dim,
          "ark:kaldi/train_sub.ark", "ark:train.utt2spk", "kaldi/transform.mat")
    r.run("copy-matrix", "--binary=false", "kaldi/transform.mat", "kaldi/transform.txt.mat")
    r.run("transform-vec", "kaldi/transform.mat", "ark:kaldi/train_sub.ark",
          "ark:kaldi/train_lda.ark")
    r.run("ivector-normalize-length", "ark:kaldi/train_lda.ark", "ark:kaldi/train_norm.ark")
    r.run("ivector-compute-plda", "ark:train.spk2utt", "ark:kaldi/train_norm.ark", "kaldi/plda")
    r.run("ivector-copy-plda", "--binary=false", "kaldi/plda", "kaldi/plda.txt")
    # Evaluation-side vectors: centred on the training mean.vec (3-argument form), LDA, norm.
    for s in ("adapt", "enroll", "test"):
        source = "scp:%s.scp" % s
        if s == "enroll":
            if not c.has_enroll:
                continue
            r.run("ivector-mean", "ark:enroll.spk2utt", "scp:enroll.scp",
                  "ark:kaldi/enroll_spk.ark", "ark,t:kaldi/num_utts.ark")
            source = "ark:kaldi/enroll_spk.ark"
        r.run("ivector-subtract-global-mean", "kaldi/mean.vec", source,
              "ark:kaldi/%s_sub.ark" % s)
        r.run("transform-vec", "kaldi/transform.mat", "ark:kaldi/%s_sub.ark" % s,
              "ark:kaldi/%s_lda.ark" % s)
        r.run("ivector-normalize-length", "ark:kaldi/%s_lda.ark" % s,
              "ark:kaldi/%s_norm.ark" % s)
        r.run("ivector-normalize-length", "--scaleup=false", "ark:kaldi/%s_lda.ark" % s,
              "ark:kaldi/%s_unit.ark" % s)
    enroll = "enroll" if c.has_enroll else "test"
    c.enroll = enroll
    r.run("ivector-adapt-plda", "--within-covar-scale=0.75", "--between-covar-scale=0.25",
          "kaldi/plda", "ark:kaldi/adapt_norm.ark", "kaldi/plda_adapt")
    num_utts = ["--num-utts=ark:kaldi/num_utts.ark"] if c.has_enroll else []
    for model in ("plda", "plda_adapt"):
        r.run("ivector-plda-scoring", *num_utts, "kaldi/" + model,
              "ark:kaldi/%s_norm.ark" % enroll, "ark:kaldi/test_norm.ark", "trials2",
              "kaldi/scores_" + model)
    r.run("ivector-compute-dot-products", "trials2", "ark:kaldi/%s_unit.ark" % enroll,
          "ark:kaldi/test_unit.ark", "kaldi/scores_dot")
    c.kaldi = k
    return k


def install_egs_scripts(egs, root):
    """Kaldi's utils/ and sid/ into a miniature egs directory, as in a Kaldi checkout.

    The kit stores Kaldi's symbolic links (utils/run.pl -> parallel/run.pl, queue.pl, ...) as
    small text files holding the link target; they are made links again here.
    """
    import shutil
    for name in ("utils", "sid"):
        target = Path(egs) / name
        shutil.copytree(root / name, target)
        for path in list(target.rglob("*")):
            if path.is_file() and path.stat().st_size < 200:
                try:
                    link = path.read_text().strip()
                except UnicodeDecodeError:
                    continue
                if link and "\n" not in link and (path.parent / link).is_file():
                    path.unlink()
                    path.symlink_to(link)
        for path in target.rglob("*"):
            if path.is_file() and not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o200)  # writable, so tmp dirs can be removed
