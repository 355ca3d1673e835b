"""Helpers shared by the miniature Kaldi egs tests (test_kaldi_egs_recipes.py with our twins,
test_kaldi_egs_real.py with the real Kaldi binaries): the golden data laid out as egs/sre16/v2
and egs/sitw/v2, score files, Kaldi's EER."""

import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, tool_env
from pauc_backend.kaldi_io import read_matrix, read_plda, read_vector_table

RECIPES = REPO / "recipes"
LDA_DIM = 32  # the golden transform.mat
TAGALOG = {"ev%03d" % i for i in range(1, 21)}


def close(a, b):
    return np.all(np.abs(a - b) <= 1e-4 * np.maximum(1.0, np.abs(b)))


def read_score_file(path):
    keys, values = [], []
    for line in Path(path).read_text().splitlines():
        k1, k2, value = line.split()
        keys.append((k1, k2))
        values.append(float(value))
    return keys, np.array(values)


def read_score_file_bytes(data):
    rows = [line.split() for line in data.decode().splitlines()]
    return [(r[0], r[1]) for r in rows], np.array([float(r[2]) for r in rows])


def kaldi_eer(scores, labels):
    """compute-eer's algorithm (kaldi-interfaces.md 1.12), printed with %.4g."""
    target = np.sort(scores[labels].astype(np.float32))
    nontarget = np.sort(scores[~labels].astype(np.float32))
    T, N = len(target), len(nontarget)
    for p in range(T - 1):
        pos = max(N - 1 - int(N * p * 1.0 / T), 0)
        if nontarget[pos] < target[p]:
            break
    else:
        p = T - 1
    return "%.4g" % (100.0 * p / T)


def copy_set(golden, name, egs, xvector_dir, data_dir=None):
    """Golden data/<name> as <egs>/<xvector_dir>/xvector.scp (absolute paths) + data files."""
    target = egs / xvector_dir
    target.mkdir(parents=True, exist_ok=True)
    lines = []
    for line in (golden / "data" / name / "xvector.scp").read_text().splitlines():
        key, path = line.split(None, 1)
        lines.append("%s %s\n" % (key, golden / path))
    (target / "xvector.scp").write_text("".join(lines))
    if data_dir is not None:
        (egs / data_dir).mkdir(parents=True, exist_ok=True)
        for table in ("spk2utt", "utt2spk"):
            shutil.copy(golden / "data" / name / table, egs / data_dir / table)


def write_trials(golden, path, keep=lambda spk: True):
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [l for l in (golden / "data" / "trials").read_text().splitlines(True)
             if keep(l.split()[0])]
    path.write_text("".join(lines))


def run_recipe(name, egs, *options):
    # Few metric iterations: these tests check the plumbing, not the metric's quality.
    proc = subprocess.run(["bash", str(RECIPES / name / "run.sh"), "--use-kaldi=false",
                           "--lda-dim=%d" % LDA_DIM, "--metric-opts=--num-iters=30", *options,
                           str(egs)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(),
                          timeout=900)
    output = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 0, output
    return proc.stdout.decode()


def snapshot(directory, pattern):
    return {p.name: p.read_bytes() for p in sorted(Path(directory).glob(pattern)) if p.is_file()}


# ---------------------------------------------------------------------------------- sre16


def lay_out_sre16(golden, egs):
    """The golden sets under egs/sre16/v2's names: training, SRE16 major (adaptation),
    enrollment and test x-vectors, and the pooled, Tagalog and Cantonese trial lists."""
    copy_set(golden, "train", egs, "exp/xvectors_sre_combined", "data/sre_combined")
    copy_set(golden, "adapt", egs, "exp/xvectors_sre16_major")
    copy_set(golden, "enroll", egs, "exp/xvectors_sre16_eval_enroll", "data/sre16_eval_enroll")
    copy_set(golden, "test", egs, "exp/xvectors_sre16_eval_test")
    trials = egs / "data/sre16_eval_test"
    write_trials(golden, trials / "trials")
    write_trials(golden, trials / "trials_tgl", lambda spk: spk in TAGALOG)
    write_trials(golden, trials / "trials_yue", lambda spk: spk not in TAGALOG)
