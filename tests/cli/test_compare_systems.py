"""compare-systems: the paired speaker-cluster bootstrap against a brute-force reference that
repeats the trials explicitly with the same documented draws, for both systems at once."""

import json

import numpy as np
import pytest
from conftest import run_tool

from pauc_backend.metrics import TrialScores
from pauc_backend.metrics.bootstrap import cluster_codes, resample_multiplicities


def _write(tmp_path, seed=0, num_enroll=8, num_test=36, speakers=6):
    """Two systems on one trial list; enrollment models e belong to speaker e % speakers and
    test segments to random speakers, so --utt2spk merges clusters. Files in other orders."""
    rng = np.random.default_rng(seed)
    test_speaker = rng.integers(0, speakers, num_test)
    rows, trial_lines, a_lines, b_lines = [], [], [], []
    for e in range(num_enroll):
        for t in range(num_test):
            target = test_speaker[t] == e % speakers
            sa = round(rng.normal() + 2.0 * target, 4)
            sb = round(0.8 * sa + rng.normal() * 0.6 + 0.6 * target, 4)
            k1, k2 = "model%d" % e, "seg%02d" % t
            trial_lines.append("%s %s %s\n" % (k1, k2, "target" if target else "nontarget"))
            a_lines.append("%s %s %.4f\n" % (k1, k2, sa))
            b_lines.append("%s %s %.4f\n" % (k1, k2, sb))
            rows.append((e % speakers, test_speaker[t], sa, sb, target))
    order = rng.permutation(len(rows))
    (tmp_path / "trials").write_text("".join(trial_lines[i] for i in order))
    (tmp_path / "a").write_text("".join(a_lines))
    (tmp_path / "b").write_text("".join(b_lines[i] for i in order[::-1]))
    utt2spk = ["model%d spk%d\n" % (e, e % speakers) for e in range(num_enroll)]
    utt2spk += ["seg%02d spk%d\n" % (t, test_speaker[t]) for t in range(num_test)]
    (tmp_path / "utt2spk").write_text("".join(utt2spk))
    e, t, sa, sb, y = map(np.array, zip(*rows))
    return e, t, sa, sb, y.astype(bool)


def _figures(scores, is_target, p_targets):
    s = TrialScores.from_trials(scores, is_target).summary(p_targets, 0.0, 0.1)  # --pauc-beta
    return [s["eer"]] + [m["min_dcf"] for m in s["min_dcf"]] + [s["pauc"], s["auc"]]


def _brute(e, t, sa, sb, y, num, seed, level, p_targets):
    """Relative difference interval and share of B-better resamples, trial lists repeated
    a_e * b_t times with resample_multiplicities' draws (the tool's documented generator)."""
    ce, ne = cluster_codes(e)
    ct, nt = cluster_codes(t)
    fa, fb = [], []
    for a, b in resample_multiplicities(seed, num, ne, nt):
        w = a[ce] * b[ct]
        ry = np.repeat(y, w)
        if ry.all() or not ry.any():
            continue
        fa.append(_figures(np.repeat(sa, w), ry, p_targets))
        fb.append(_figures(np.repeat(sb, w), ry, p_targets))
    fa, fb = np.array(fa, dtype=float), np.array(fb, dtype=float)
    higher = [False] * (1 + len(p_targets)) + [True, True]
    out = []
    for col, up in enumerate(higher):
        rel = fb[:, col] / fa[:, col] - 1.0
        better = (fb[:, col] > fa[:, col]) if up else (fb[:, col] < fa[:, col])
        share = (better.sum() + 0.5 * (fb[:, col] == fa[:, col]).sum()) / len(fa)
        out.append((np.quantile(rel, [(1 - level) / 2, (1 + level) / 2]), share, len(fa)))
    return out


@pytest.mark.parametrize("by_speaker", [False, True])
def test_paired_bootstrap_matches_brute_force(tmp_path, by_speaker):
    e, t, sa, sb, y = _write(tmp_path, seed=3)
    options = ["--report=json", "--bootstrap=50", "--seed=5", "--confidence=0.9",
               "--p-target=0.01,0.1", "--pauc-beta=0.1"]
    if by_speaker:
        options.append("--utt2spk=ark:%s" % (tmp_path / "utt2spk"))
    proc = run_tool("compare-systems", *options, tmp_path / "a", tmp_path / "b",
                    tmp_path / "trials", check=True)
    got = json.loads(proc.stdout)["metrics"]
    assert [m["metric"] for m in got] == ["eer", "min_dcf", "min_dcf", "pauc", "auc"]
    if by_speaker:
        enroll, test = e, np.array(["spk%d" % s for s in t])  # test keys -> speakers
        enroll = np.array(["spk%d" % s for s in enroll])
    else:
        enroll = np.array(["m%d" % i for i in range(8)]).repeat(36)[_order(tmp_path)]
        test = np.tile(np.arange(36), 8)[_order(tmp_path)]
        sa, sb, y = (v[_order(tmp_path)] for v in (sa, sb, y))
    # brute force on trials in the tool's row order (scores-A file order = model-major)
    ref = _brute(enroll, test, sa, sb, y, 50, 5, 0.9, [0.01, 0.1])
    full_a, full_b = _figures(sa, y, [0.01, 0.1]), _figures(sb, y, [0.01, 0.1])
    assert len(ref) == len(full_a) == len(full_b) == len(got)
    for item, (interval, share, used), pa, pb in zip(got, ref, full_a, full_b):
        assert item["resamples"] == used
        np.testing.assert_allclose(item["interval"], interval, rtol=1e-12, atol=1e-15)
        assert item["b_better"] == pytest.approx(share, abs=1e-12)
        assert item["a"] == pytest.approx(pa, rel=1e-12)
        assert item["b"] == pytest.approx(pb, rel=1e-12)
        assert item["relative"] == pytest.approx(pb / pa - 1.0, rel=1e-12)


def _order(tmp_path):
    return np.arange(8 * 36)        # scores-A is written model-major: rows already in order


def test_same_system_is_never_better_and_table_output(tmp_path):
    _write(tmp_path, seed=1)
    proc = run_tool("compare-systems", "--bootstrap=20", "--name-a=plda", "--name-b=auto",
                    tmp_path / "a", tmp_path / "a", tmp_path / "trials", check=True)
    lines = proc.stdout.decode().splitlines()
    assert lines[0].startswith("| Metric | plda | auto | (B-A)/A | 95% interval |")
    assert [l.split("|")[1].strip() for l in lines[2:]] == ["EER(%)", "minDCF(0.01)",
                                                           "pAUC[0,0.01]", "AUC"]
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[3] == "+0.0%" and cells[4] == "+0.0% .. +0.0%" and cells[5] == "50.0%"


@pytest.mark.parametrize("options,message", [
    (["--bootstrap=0"], "Invalid value --bootstrap=0: must be > 0"),
    (["--report=xml"], "Invalid value --report=xml: must be one of table, json"),
    (["--confidence=1"], "Invalid value --confidence=1: must be > 0 and < 1"),
    (["--pauc-alpha=0.2", "--pauc-beta=0.1"], "need alpha < beta"),
    (["--p-target=2"], "Invalid value --p-target=2")])
def test_bad_options_are_one_error_before_reading(tmp_path, options, message):
    proc = run_tool("compare-systems", *options, tmp_path / "missing-a",
                    tmp_path / "missing-b", tmp_path / "missing-trials")
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode == 255 and len(errors) == 1 and message in errors[0]


def test_usage_on_wrong_argument_count(tmp_path):
    proc = run_tool("compare-systems", tmp_path / "a", tmp_path / "b")
    assert proc.returncode == 1
    assert "Usage: compare-systems" in proc.stderr.decode()


@pytest.mark.parametrize("partial", ["a", "b"])
def test_scores_of_part_of_the_trials_are_refused_unless_allowed_as_in_compute_eer_pauc(
        tmp_path, partial):
    """Issue 28: compare-systems on a score file covering part of the list is one ERROR with
    the counts (compute-eer-pauc's rule, one implementation); --allow-partial=true compares
    the trials scored in both and the report says scored/listed. The figures are those of the
    scored trials alone (an independent computation on them)."""
    e, t, sa, sb, y = _write(tmp_path, seed=2)
    lines = (tmp_path / partial).read_text().splitlines(True)
    kept = lines[::3]                                    # 96 of the 288 trials
    (tmp_path / partial).write_text("".join(kept))
    args = (tmp_path / "a", tmp_path / "b", tmp_path / "trials")
    proc = run_tool("compare-systems", "--bootstrap=20", *args)
    errors = [l for l in proc.stderr.decode().splitlines() if l.startswith("ERROR")]
    assert proc.returncode == 255 and proc.stdout == b"", proc.stderr
    assert len(errors) == 1 and "both score 96 of the 288 trials" in errors[0], errors
    assert "--allow-partial=true" in errors[0]
    proc = run_tool("compare-systems", "--bootstrap=20", "--allow-partial", "--report=json",
                    "--pauc-beta=0.1", *args, check=True)
    assert b"Evaluating part of the trial list" in proc.stderr
    report = json.loads(proc.stdout)
    assert report["trials"] == 96 and report["trials_listed"] == 288
    scored = {tuple(l.split()[:2]) for l in kept}
    trials = [l.split() for l in (tmp_path / "trials").read_text().splitlines()]
    score_of = {}
    for name in ("a", "b"):
        score_of[name] = {tuple(l.split()[:2]): float(l.split()[2])
                          for l in (tmp_path / name).read_text().splitlines()}
    pairs = [(k1, k2) for k1, k2, _ in trials if (k1, k2) in scored]
    labels = np.array([lab == "target" for k1, k2, lab in trials if (k1, k2) in scored])
    for side, name in (("a", "a"), ("b", "b")):
        values = np.array([score_of[name][p] for p in pairs])
        eer = _figures(values, labels, [0.01])[0]
        assert report["metrics"][0][side] == pytest.approx(eer, rel=1e-12)
    table = run_tool("compare-systems", "--bootstrap=20", "--allow-partial", *args, check=True)
    assert table.stdout.decode().splitlines()[-1] == \
        "Scored in both files: 96/288 listed trials (--allow-partial)."
    # the full pair of files has no such key or line
    (tmp_path / partial).write_text("".join(lines))
    full = run_tool("compare-systems", "--bootstrap=20", "--report=json", *args, check=True)
    assert "trials_listed" not in json.loads(full.stdout)
    assert b"Evaluating part" not in full.stderr
