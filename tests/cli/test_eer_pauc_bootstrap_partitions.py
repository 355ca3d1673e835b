"""compute-eer-pauc --bootstrap / --partitions end to end, against brute-force references."""

import json

import numpy as np
import pytest
from conftest import run_tool

from pauc_backend.metrics import TrialScores


def _write_trials(tmp_path, seed=0, num_enroll=8, num_test=30, partitions=False):
    rng = np.random.default_rng(seed)
    test_speaker = rng.integers(0, num_enroll, num_test)
    lines, score_lines, part_lines, rows = [], [], [], []
    for e in range(num_enroll):
        for t in range(num_test):
            target = test_speaker[t] == e
            score = rng.normal() + 2.5 * target + (0.7 * (t % 3) if partitions else 0)
            key1, key2 = "spk%d" % e, "utt%02d" % t
            lines.append("%s %s %s" % (key1, key2, "target" if target else "nontarget"))
            score_lines.append("%s %s %.6f" % (key1, key2, score))
            part = min(t % 3, 1)                 # unequal sizes: 1/3 and 2/3 of the trials
            part_lines.append("%s %s lang%d" % (key1, key2, part))
            rows.append((e, t, float("%.6f" % score), target, part))
    order = rng.permutation(len(lines))          # files need not be in the same order
    (tmp_path / "trials").write_text("".join(lines[i] + "\n" for i in order))
    (tmp_path / "scores").write_text("".join(score_lines[i] + "\n" for i in range(len(lines))))
    (tmp_path / "parts").write_text("".join(part_lines[i] + "\n" for i in order[::-1]))
    e, t, s, y, p = map(np.array, zip(*rows))
    return e, t, s, y.astype(bool), p, test_speaker


def _brute_intervals(scores, is_target, enroll, test, num, seed, level, p_targets):
    """Repeat trial (e, t) a_e * b_t times (draws of the documented generator) and take the
    percentiles of the metrics of the repeated lists."""
    from pauc_backend.metrics.bootstrap import cluster_codes, resample_multiplicities
    ce, ne = cluster_codes(enroll)
    ct, nt = cluster_codes(test)
    rows = []
    for a, b in resample_multiplicities(seed, num, ne, nt):
        w = a[ce] * b[ct]
        summary = TrialScores.from_trials(np.repeat(scores, w), np.repeat(is_target, w)) \
            .summary(p_targets)
        rows.append([summary["eer"], summary["pauc"], summary["auc"]]
                    + [item["min_dcf"] for item in summary["min_dcf"]])
    q = [(1 - level) / 2, (1 + level) / 2]
    return np.quantile(np.array(rows), q, axis=0).T


def _run_json(tmp_path, *options):
    proc = run_tool("compute-eer-pauc", "--report=json", *options, tmp_path / "scores",
                    tmp_path / "trials", check=True)
    return proc, json.loads(proc.stdout)


def test_bootstrap_json_matches_brute_force_and_is_reproducible(tmp_path):
    e, t, s, y, _, _ = _write_trials(tmp_path, seed=1)
    options = ("--bootstrap=60", "--seed=7", "--confidence=0.9", "--p-target=0.01,0.1")
    proc, summary = _run_json(tmp_path, *options)
    confidence = summary["confidence"]
    assert set(confidence) == {"level", "resamples", "eer", "pauc", "auc", "min_dcf"}
    assert confidence["level"] == 0.9 and confidence["resamples"] == 60
    # the scores file is in key order; trial k of our rows is line k of it
    ref = _brute_intervals(s, y, e, t, 60, 7, 0.9, [0.01, 0.1])
    got = np.array([confidence["eer"], confidence["pauc"], confidence["auc"]]
                   + confidence["min_dcf"])
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    again, _ = _run_json(tmp_path, *options)
    assert again.stdout == proc.stdout                  # byte-identical
    other, _ = _run_json(tmp_path, "--bootstrap=60", "--seed=8", "--confidence=0.9",
                         "--p-target=0.01,0.1")
    assert other.stdout != proc.stdout


def test_bootstrap_by_speaker_with_utt2spk(tmp_path):
    e, t, s, y, _, test_speaker = _write_trials(tmp_path, seed=2)
    # test utterances grouped by speaker; enrollment keys are speakers (not in utt2spk)
    (tmp_path / "utt2spk").write_text("".join("utt%02d spk%d\n" % (u, test_speaker[u])
                                              for u in range(test_speaker.size)))
    _, summary = _run_json(tmp_path, "--bootstrap=40", "--seed=3",
                           "--utt2spk=ark:%s" % (tmp_path / "utt2spk"))
    ref = _brute_intervals(s, y, e, test_speaker[t], 40, 3, 0.95, [0.01])
    np.testing.assert_allclose(summary["confidence"]["eer"], ref[0], rtol=1e-12)
    np.testing.assert_allclose(summary["confidence"]["auc"], ref[2], rtol=1e-12)


def test_bootstrap_table_has_an_interval_line(tmp_path):
    _write_trials(tmp_path, seed=3)
    proc = run_tool("compute-eer-pauc", "--report=table", "--bootstrap=30",
                    tmp_path / "scores", tmp_path / "trials", check=True)
    header, values, spans = proc.stdout.decode().splitlines()
    assert header.split()[0] == "EER(%)" and spans.split()[-1] == "-"     # no AP interval
    lo, hi = map(float, spans.split()[0].split("-"))
    assert lo <= float(values.split()[0]) <= hi


def _brute_equalized_min_dcf(s, y, p, prior):
    best = np.inf
    for thr in np.unique(s):
        miss = np.mean([np.mean(s[(p == q) & y] <= thr) for q in np.unique(p)])
        fa = np.mean([np.mean(s[(p == q) & ~y] > thr) for q in np.unique(p)])
        best = min(best, prior * miss + (1 - prior) * fa)
    return best / prior


def test_partitions_equalised_min_dcf_and_c_primary(tmp_path):
    _, _, s, y, p, _ = _write_trials(tmp_path, seed=4, num_enroll=10, num_test=60,
                                     partitions=True)
    _, summary = _run_json(tmp_path, "--partitions=%s" % (tmp_path / "parts"),
                           "--p-target=0.01,0.005,0.2")
    ref = [_brute_equalized_min_dcf(s, y, p, prior) for prior in (0.01, 0.005, 0.2)]
    got = [item["min_dcf"] for item in summary["min_dcf"]]
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    assert summary["c_primary"] == pytest.approx(np.mean(ref[:2]), rel=1e-12)
    assert summary["eer_method"] == "equalized" and summary["num_partitions"] == 2
    pooled = TrialScores.from_trials(s, y).min_dcf(0.2).min_dcf
    assert pooled != pytest.approx(ref[2], rel=1e-6)     # equalising changed the answer
    proc = run_tool("compute-eer-pauc", "--report=table", "--partitions=%s"
                    % (tmp_path / "parts"), "--p-target=0.01,0.005", tmp_path / "scores",
                    tmp_path / "trials", check=True)
    header, values = proc.stdout.decode().splitlines()
    assert header.split()[-1] == "Cprimary"
    assert float(values.split()[-1]) == pytest.approx(np.mean(ref[:2]), abs=5e-5)


@pytest.mark.parametrize("content, message", [
    ("spk0 utt00 lang0\n", "scored trials have no partition"),
    ("spk0 utt00 a\nspk0 utt00 b\n", "appears twice in partitions file"),
    ("", "Empty partitions file"),
])
def test_partition_file_errors(tmp_path, content, message):
    _write_trials(tmp_path)
    (tmp_path / "bad").write_text(content)
    proc = run_tool("compute-eer-pauc", "--partitions=%s" % (tmp_path / "bad"),
                    tmp_path / "scores", tmp_path / "trials")
    assert proc.returncode == 255
    errors = [line for line in proc.stderr.decode().splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and message in errors[0]
    assert proc.stdout == b""


@pytest.mark.parametrize("options, named", [
    (("--bootstrap=10", "--partitions=x"), "--partitions"), (("--bootstrap=-1",), "--bootstrap"),
    (("--confidence=1.5",), "--confidence"), (("--utt2spk=ark:x",), "--utt2spk"),
    (("--bootstrap=10", "--eer-method=rocch"), "--eer-method")])
def test_bad_option_values_and_combinations_are_one_error_before_any_input(tmp_path, options,
                                                                           named):
    """Kaldi's rule (issue 20): an invalid option value is an ERROR naming it, exit 255, before
    any input is read (the score and trial files here do not exist)."""
    proc = run_tool("compute-eer-pauc", *options, tmp_path / "scores", tmp_path / "trials")
    errors = [line for line in proc.stderr.decode().splitlines() if line.startswith("ERROR")]
    assert proc.returncode == 255 and b"Usage:" not in proc.stderr, proc.stderr
    assert len(errors) == 1 and named in errors[0] and "Invalid" in errors[0], errors


def test_bootstrap_needs_keys(tmp_path):
    (tmp_path / "plain").write_text("1.0 target\n0.0 nontarget\n")
    proc = run_tool("compute-eer-pauc", "--bootstrap=10", tmp_path / "plain")
    assert proc.returncode == 1 and b"need keys" in proc.stderr


@pytest.fixture
def etri_cosine(etri, tmp_path):
    """Real trials: cosine scores of ETRI's raw i-vectors (enrollment = mean of 3) for 12
    enrolled speakers against every 4th test utterance, written as scores/trials/utt2spk."""
    from pauc_backend.kaldi_io import read_token_table, read_vector_table

    def read_set(name):         # the scp paths are relative to the corpus folder
        lines = (etri / name / "xvector.scp").read_text().splitlines()
        scp = tmp_path / ("%s.scp" % name)
        scp.write_text("".join("%s %s/%s\n" % (line.split()[0], etri, line.split()[1])
                               for line in lines))
        return read_vector_table("scp:%s" % scp)

    enroll_keys, enroll = read_set("enroll")
    test_keys, test = read_set("test")
    enroll_row = {k: i for i, k in enumerate(enroll_keys)}
    test_row = {k: i for i, k in enumerate(test_keys)}
    spk2utt = {line.split()[0]: line.split()[1:]
               for line in (etri / "enroll" / "spk2utt").read_text().splitlines()}
    speakers = sorted(spk2utt)[:12]
    means = {s: enroll[[enroll_row[u] for u in spk2utt[s]]].astype(np.float64).mean(axis=0)
             for s in speakers}
    utts = sorted(test_keys)[::4]
    utt2spk = read_token_table("ark:%s" % (etri / "test" / "utt2spk"))
    rows = []
    for s in speakers:
        e = means[s] / np.linalg.norm(means[s])
        for u in utts:
            t = test[test_row[u]].astype(np.float64)
            rows.append((s, u, float("%.6f" % (e @ t / np.linalg.norm(t))), utt2spk[u] == s))
    (tmp_path / "trials").write_text("".join(
        "%s %s %s\n" % (s, u, "target" if y else "nontarget") for s, u, _, y in rows))
    (tmp_path / "scores").write_text("".join("%s %s %.6f\n" % (s, u, v) for s, u, v, _ in rows))
    (tmp_path / "utt2spk").write_text("".join("%s %s\n" % (u, utt2spk[u]) for u in utts))
    (tmp_path / "parts").write_text("".join(   # partition: the enrolled speaker's gender
        "%s %s %s\n" % (s, u, "F" if "F" in s[:4] else "M") for s, u, _, _ in rows))
    s, u, v, y = zip(*rows)
    return (np.array(s), np.array([utt2spk[x] for x in u]), np.array(v), np.array(y),
            np.array(["F" if "F" in x[:4] else "M" for x in s]))


def test_bootstrap_and_equalised_scoring_on_real_etri_trials(tmp_path, etri_cosine):
    enroll, test_speaker, s, y, gender = etri_cosine
    assert y.sum() > 100 and set(gender) == {"F", "M"}
    _, summary = _run_json(tmp_path, "--bootstrap=25", "--seed=11",
                           "--utt2spk=ark:%s" % (tmp_path / "utt2spk"))
    ref = _brute_intervals(s, y, enroll, test_speaker, 25, 11, 0.95, [0.01])
    got = np.array([summary["confidence"][k] for k in ("eer", "pauc", "auc")]
                   + summary["confidence"]["min_dcf"])
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    _, summary = _run_json(tmp_path, "--partitions=%s" % (tmp_path / "parts"),
                           "--p-target=0.05")
    np.testing.assert_allclose(summary["min_dcf"][0]["min_dcf"],
                               _brute_equalized_min_dcf(s, y, gender, 0.05), rtol=1e-12)
