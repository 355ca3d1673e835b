"""--score-norm in score-cosine-trials, score-plda-trials and score-pauc-trials, on the real
ETRI i-vectors and TIMIT d-vectors, against a plain numpy transcription of WeSpeaker's
score_norm.py (cohort scores computed pair by pair, full descending sort, population std)."""

import numpy as np
import pytest
from conftest import SHARED, need, run_tool

from pauc_backend.kaldi_io import (read_scores, read_token_vector_table, read_vector_table,
                                   write_plda, write_vector_table)
from pauc_backend.models.metric_learning import metric_factor
from pauc_backend.models.plda import PLDA

REALDATA = SHARED / "realdata"


def _unit(X):
    X = np.asarray(X, dtype=np.float64)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.fixture(scope="module", params=["etri", "timit-ge2e"])
def corpus(request):
    """(name, train vectors, train speaker labels, cohort = train speaker means, enroll keys,
    enroll vectors, test keys, test vectors) of a real corpus, subsampled for speed."""
    root = REALDATA / request.param
    need(root)
    keys, X = read_vector_table("ark:%s" % (root / "train" / "xvector.ark"))
    spk2utt = read_token_vector_table("ark:%s" % (root / "train" / "spk2utt"))
    row = {key: i for i, key in enumerate(keys)}
    labels = np.empty(len(keys), dtype=np.int64)
    means = []
    for s, utts in enumerate(spk2utt.values()):
        labels[[row[u] for u in utts]] = s
        means.append(X[[row[u] for u in utts]].astype(np.float64).mean(axis=0))
    evalset = "test" if request.param == "etri" else "eval"
    ekeys, E = read_vector_table("ark:%s" % (root / ("enroll" if request.param == "etri"
                                                     else "eval") / "xvector.ark"))
    tkeys, T = read_vector_table("ark:%s" % (root / evalset / "xvector.ark"))
    rng = np.random.default_rng(0)
    pick_e = np.sort(rng.choice(len(ekeys), min(60, len(ekeys)), replace=False))
    pick_t = np.sort(rng.choice(len(tkeys), 400, replace=False))
    return (request.param, X, labels, np.array(means), [ekeys[i] for i in pick_e], E[pick_e],
            [tkeys[i] for i in pick_t], T[pick_t])


def _files(tmp_path, corpus, cohort):
    _, _, _, _, ekeys, E, tkeys, T = corpus
    write_vector_table("ark:%s" % (tmp_path / "enroll.ark"), ekeys, E)
    write_vector_table("ark:%s" % (tmp_path / "test.ark"), tkeys, T)
    write_vector_table("ark:%s" % (tmp_path / "cohort.ark"), ["c%d" % i for i in
                                                              range(len(cohort))], cohort)
    rng = np.random.default_rng(1)
    er = rng.integers(0, len(ekeys), 6000)
    tr = rng.integers(0, len(tkeys), 6000)
    pairs = sorted(set(zip(er.tolist(), tr.tolist())))
    er, tr = np.array(pairs).T
    (tmp_path / "trials").write_text("".join("%s %s\n" % (ekeys[e], tkeys[t])
                                             for e, t in zip(er, tr)))
    return er, tr


def wespeaker_normalize(raw, er, tr, enroll_cohort, test_cohort, method, top_n):
    """wespeaker/bin/score_norm.py, with z and t as its one-sided halves."""
    def mean_std(S):
        top = np.sort(S, axis=1)[:, ::-1][:, :top_n]
        return np.mean(top, axis=1), np.std(top, axis=1)
    em, es = mean_std(enroll_cohort)
    tm, ts = mean_std(test_cohort)
    z = (raw - em[er]) / es[er]
    t = (raw - tm[tr]) / ts[tr]
    return {"z": z, "t": t}.get(method, 0.5 * (z + t))


def _check(tmp_path, tool, fixed_args, er, tr, raw, enroll_cohort, test_cohort, configs):
    for method, top_n in configs:
        out = tmp_path / ("scores_%s_%s" % (method, top_n))
        options = ["--score-norm=" + method, "--cohort=ark:%s" % (tmp_path / "cohort.ark")]
        if top_n:
            options.append("--top-n=%d" % top_n)
        run_tool(tool, *options, *fixed_args(out), check=True)
        _, _, got = read_scores(str(out))
        n = top_n or enroll_cohort.shape[1]
        ref = wespeaker_normalize(raw, er, tr, enroll_cohort, test_cohort, method, n)
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5,
                                   err_msg="%s --score-norm=%s --top-n=%s" % (tool, method,
                                                                              top_n))


def test_cosine_score_norm_matches_wespeaker(tmp_path, corpus):
    cohort = corpus[3]
    er, tr = _files(tmp_path, corpus, cohort)
    E, T, C = _unit(corpus[5]), _unit(corpus[7]), _unit(cohort)
    raw = np.einsum("ij,ij->i", E[er], T[tr])
    _check(tmp_path, "score-cosine-trials",
           lambda out: ["--normalize=true", tmp_path / "trials", "ark:%s" % (tmp_path /
                        "enroll.ark"), "ark:%s" % (tmp_path / "test.ark"), out],
           er, tr, raw, E @ C.T, T @ C.T, [("as", 20), ("s", None), ("z", None), ("t", 50)])


def test_plda_score_norm_matches_wespeaker(tmp_path, corpus):
    _, X, labels, cohort, ekeys, E, tkeys, T = corpus
    keep = labels < 60                                     # a PLDA of 60 training speakers
    plda = PLDA(num_em_iters=3).fit(X[keep], labels[keep])
    write_plda(str(tmp_path / "plda"), plda.mean_, plda.transform_, plda.psi_)
    er, tr = _files(tmp_path, corpus, cohort)
    num_utts = np.arange(len(ekeys)) % 3 + 1                # enrollment averages of 1-3
    (tmp_path / "num_utts").write_text("".join("%s %d\n" % (k, n)
                                               for k, n in zip(ekeys, num_utts)))
    Ue = plda.transform(E, num_utts)[0].astype(np.float32)
    Ut = plda.transform(T, 1)[0].astype(np.float32)
    Uc = plda.transform(cohort, 1)[0].astype(np.float32)
    raw = plda.log_likelihood_ratio(Ue[er], Ut[tr], num_utts[er])
    C = Uc.shape[0]
    # cohort scores pair by pair: enrollment (its n) x cohort (1), cohort (1) x test
    enroll_cohort = plda.log_likelihood_ratio(np.repeat(Ue, C, axis=0), np.tile(Uc, (len(Ue), 1)),
                                              np.repeat(num_utts, C)).reshape(len(Ue), C)
    test_cohort = plda.log_likelihood_ratio(np.tile(Uc, (len(Ut), 1)),
                                            np.repeat(Ut, C, axis=0), 1).reshape(len(Ut), C)
    _check(tmp_path, "score-plda-trials",
           lambda out: ["--num-utts=ark:%s" % (tmp_path / "num_utts"), tmp_path / "plda",
                        "ark:%s" % (tmp_path / "enroll.ark"), "ark:%s" % (tmp_path /
                        "test.ark"), tmp_path / "trials", out],
           er, tr, raw, enroll_cohort, test_cohort, [("as", 30), ("s", None)])


def test_pauc_metric_score_norm_matches_wespeaker(tmp_path, corpus):
    _, _, _, cohort, ekeys, E, tkeys, T = corpus
    rng = np.random.default_rng(2)
    B = rng.normal(size=(E.shape[1], 40)) / np.sqrt(E.shape[1])
    M = B @ B.T                                            # a PSD metric of rank 40
    from pauc_backend.kaldi_io import write_matrix
    write_matrix(str(tmp_path / "metric"), M)
    er, tr = _files(tmp_path, corpus, cohort)
    A = metric_factor(M)[0]
    Ye, Yt, Yc = (np.asarray(V, dtype=np.float64) @ A.T for V in (E, T, cohort))

    def neg_dist(P, Q):
        return -((P[:, None, :] - Q[None, :, :]) ** 2).sum(axis=2)

    raw = -((Ye[er] - Yt[tr]) ** 2).sum(axis=1)
    _check(tmp_path, "score-pauc-trials",
           lambda out: [tmp_path / "metric", "ark:%s" % (tmp_path / "enroll.ark"),
                        "ark:%s" % (tmp_path / "test.ark"), tmp_path / "trials", out],
           er, tr, raw, neg_dist(Ye, Yc), neg_dist(Yt, Yc), [("as", 25), ("t", None)])


# -- options and bad input (small synthetic tables) --------------------------------------------

@pytest.fixture
def small(tmp_path):
    rng = np.random.default_rng(3)
    write_vector_table("ark:%s" % (tmp_path / "e.ark"), ["e1", "e2"], rng.normal(size=(2, 4)))
    write_vector_table("ark:%s" % (tmp_path / "t.ark"), ["t1", "t2", "t3"],
                       rng.normal(size=(3, 4)))
    write_vector_table("ark:%s" % (tmp_path / "c.ark"), ["c%d" % i for i in range(6)],
                       rng.normal(size=(6, 4)))
    (tmp_path / "trials").write_text("e1 t1\ne1 t2\ne2 t3\n")
    return tmp_path


def _cosine(small, *options):
    return run_tool("score-cosine-trials", *options, small / "trials", "ark:%s" % (small /
                    "e.ark"), "ark:%s" % (small / "t.ark"), small / "out")


@pytest.mark.parametrize("options, text", [
    (("--score-norm=as", "--cohort=ark:c"), "needs --top-n"),
    (("--score-norm=s",), "needs --cohort"),
    (("--score-norm=q", "--cohort=ark:c"), "must be one of"),
    (("--score-norm=s", "--cohort=ark:c", "--top-n=3"), "whole cohort"),
    (("--cohort=ark:c",), "need --score-norm"),
])
def test_option_errors_are_one_error_before_any_input(small, options, text):
    proc = _cosine(small, *options)
    errors = [line for line in proc.stderr.decode().splitlines() if line.startswith("ERROR")]
    assert proc.returncode == 255 and b"Usage:" not in proc.stderr, proc.stderr
    assert len(errors) == 1 and text in errors[0] and "Invalid" in errors[0], errors
    assert not (small / "out").exists()


def test_constant_cohort_scores_are_one_error_naming_the_key(small):
    write_vector_table("ark:%s" % (small / "same.ark"), ["c1", "c2", "c3"], np.ones((3, 4)))
    proc = _cosine(small, "--score-norm=z", "--cohort=ark:%s" % (small / "same.ark"))
    errors = [line for line in proc.stderr.decode().splitlines() if line.startswith("ERROR")]
    assert proc.returncode == 255 and len(errors) == 1
    assert "enrollment vector e1 are all equal" in errors[0]
    assert not (small / "out").exists()


def test_cohort_dimension_mismatch_is_an_error(small):
    write_vector_table("ark:%s" % (small / "c5.ark"), ["c1", "c2"], np.ones((2, 5)))
    for tool, args in (("score-cosine-trials", None), ("score-pauc-trials", "metric")):
        if args is None:
            proc = _cosine(small, "--score-norm=s", "--cohort=ark:%s" % (small / "c5.ark"))
        else:
            from pauc_backend.kaldi_io import write_matrix
            write_matrix(str(small / "metric"), np.eye(4))
            proc = run_tool(tool, "--score-norm=s", "--cohort=ark:%s" % (small / "c5.ark"),
                            small / "metric", "ark:%s" % (small / "e.ark"),
                            "ark:%s" % (small / "t.ark"), small / "trials", small / "out")
        assert proc.returncode == 255 and b"dimension" in proc.stderr, proc.stderr
        assert not (small / "out").exists()


def test_top_n_beyond_the_cohort_warns_and_is_s_norm(small):
    cohort = "--cohort=ark:%s" % (small / "c.ark")
    proc = _cosine(small, "--score-norm=as", "--top-n=6", cohort)
    assert proc.returncode == 0 and b"WARNING" in proc.stderr and b"whole cohort" in proc.stderr
    as_all = (small / "out").read_bytes()
    assert _cosine(small, "--score-norm=s", cohort).returncode == 0
    assert (small / "out").read_bytes() == as_all


def test_none_is_plain_scoring(small):
    assert _cosine(small).returncode == 0
    plain = (small / "out").read_bytes()
    assert _cosine(small, "--score-norm=none").returncode == 0
    assert (small / "out").read_bytes() == plain
