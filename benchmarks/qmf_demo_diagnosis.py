"""Why the demo's duration QMF lowers Cllr but not actDCF(0.01) (issue 29): a diagnosis.

Rebuilds the demo's Cosine and PLDA scores in Python (the corpus of ``recipes/demo/run.sh``:
``make_speaker_corpus(seed=777, durations=True, num_dev_speakers=...)``, LDA 50 on the centred
training vectors, length normalisation, the in-domain mean of the adaptation set, Kaldi's PLDA
on the training set) and, for each system, prints

- the target and non-target score means and standard deviations per bin of the trial's shorter
  side (min of the enrolled speaker's total duration and the test utterance's): whether short
  recordings move the threshold that matters at p = 0.01, which lies in the non-target tail;
- score-only calibration and the duration QMF (min/max log duration), both trained at prior
  0.01 on the DEVELOPMENT trials, on the evaluation trials: minDCF, actDCF(0.01), Cllr and the
  paired two-way cluster bootstrap interval of (QMF - score-only) / score-only (clusters:
  enrolled speakers and test speakers, as compare-systems --utt2spk);
- a ceiling, for the diagnosis only: both calibrations fitted on the evaluation trials
  themselves (in-sample). No setting is read from it; it says whether ANY additive duration
  QMF could lower actDCF on this corpus, whatever the development data.

    python benchmarks/qmf_demo_diagnosis.py [--num-dev-speakers 80] [--num-eval-speakers 80]
        [--bootstrap 300]

With the demo's 80 + 80 speakers the Cosine and PLDA rows reproduce the demo's stage-7 table
(same corpus, same calibrations). More speakers of both kinds (e.g. 320 + 320) show whether
the development set's size or the bootstrap's power is what holds actDCF back. Plain numpy
statistics (not the toolkit's metric code), so the figures are also an independent check of
compare-systems --llr.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pauc_backend.datasets import make_speaker_corpus  # noqa: E402
from pauc_backend.metrics.bootstrap import resample_multiplicities  # noqa: E402
from pauc_backend.models.calibration import LinearFusion  # noqa: E402
from pauc_backend.models.lda import LDA  # noqa: E402
from pauc_backend.models.plda import PLDA  # noqa: E402
from pauc_backend.models.preprocessing import normalize_length  # noqa: E402
from pauc_backend.models.quality import DURATION, QualityFusion  # noqa: E402

PRIOR = 0.01


def cllr_act_dcf(llr, target, weight):
    """Weighted Cllr (prior 0.5, bits) and normalised actDCF(PRIOR) at the Bayes threshold."""
    t, n = target, ~target
    cllr = (np.sum(weight[t] * np.logaddexp(0, -llr[t])) / weight[t].sum()
            + np.sum(weight[n] * np.logaddexp(0, llr[n])) / weight[n].sum()) / 2 / np.log(2)
    accept = llr >= np.log((1 - PRIOR) / PRIOR)
    p_miss = weight[t & ~accept].sum() / weight[t].sum()
    p_fa = weight[n & accept].sum() / weight[n].sum()
    return np.array([cllr, p_miss + (1 - PRIOR) / PRIOR * p_fa])


def min_dcf(scores, target):
    order = np.argsort(-scores, kind="stable")
    hits = np.concatenate([[0], np.cumsum(target[order])])
    fas = np.concatenate([[0], np.cumsum(~target[order])])
    return np.min(1 - hits / target.sum() + (1 - PRIOR) / PRIOR * fas / (~target).sum())


def duration_bins(scores, target, shorter, edges=(0, 4, 7.5, 15)):
    """Markdown lines: target and non-target score statistics per bin of the trial's shorter
    side (seconds; bins [edges[i], edges[i+1]), the last open): does a short recording move
    the non-target tail, where the Bayes threshold at p = 0.01 lies?"""
    lines = ["| shorter side (s) | trials | targets | target mean | target sd "
             "| non-target mean | non-target sd | non-target 99th pct |",
             "|---|---|---|---|---|---|---|---|"]
    for low, high in zip(edges, tuple(edges[1:]) + (np.inf,)):
        m = (shorter >= low) & (shorter < high)
        lines.append("| %g-%s | %d | %d | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            low, "" if np.isinf(high) else "%g" % high, m.sum(), (m & target).sum(),
            scores[m & target].mean(), scores[m & target].std(), scores[m & ~target].mean(),
            scores[m & ~target].std(), np.quantile(scores[m & ~target], 0.99)))
    return lines


def paired_interval(llr_a, llr_b, trials, resamples):
    ratios = []
    for a, b in resample_multiplicities(0, resamples, trials["enroll"].max() + 1,
                                        trials["test_speaker"].max() + 1):
        w = (a[trials["enroll"]] * b[trials["test_speaker"]]).astype(np.float64)
        ratios.append(cllr_act_dcf(llr_b, trials["target"], w)
                      / cllr_act_dcf(llr_a, trials["target"], w) - 1)
    return np.quantile(np.array(ratios), [0.025, 0.975], axis=0).T


def scored_trials(enroll, test, trial_enroll, trial_target, prep, plda):
    speakers = sorted(set(enroll.labels))
    labels = np.asarray(enroll.labels)
    E = np.stack([enroll.X[labels == s].mean(axis=0) for s in speakers])
    counts = np.array([(labels == s).sum() for s in speakers])
    seconds = np.array([enroll.durations[labels == s].sum() for s in speakers])
    e = np.searchsorted(speakers, trial_enroll)
    t = np.tile(np.arange(len(test.keys)), len(speakers))   # trials: speaker-major
    test_speaker = np.unique(np.asarray(test.labels), return_inverse=True)[1]
    Pe, Pt = prep(E), prep(test.X)
    Ue, _ = plda.transform(Pe, num_utts=counts)
    Ut, _ = plda.transform(Pt)
    return dict(enroll=e, test_speaker=test_speaker[t], target=np.asarray(trial_target),
                enroll_seconds=seconds[e], test_seconds=test.durations[t],
                scores={"Cosine": np.einsum("ij,ij->i", Pe[e], Pt[t]),
                        "PLDA": plda.score_pairs(Ue, Ut, e, t, num_utts=counts)})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-dev-speakers", type=int, default=80)
    parser.add_argument("--num-eval-speakers", type=int, default=80)
    parser.add_argument("--bootstrap", type=int, default=300)
    args = parser.parse_args()
    corpus = make_speaker_corpus(seed=777, durations=True,
                                 num_dev_speakers=args.num_dev_speakers,
                                 num_eval_speakers=args.num_eval_speakers)
    train = corpus.train
    lda = LDA(dim=50).fit(train.X - train.X.mean(axis=0), np.asarray(train.labels))
    plda = PLDA().fit(normalize_length(lda.transform(train.X - train.X.mean(axis=0)))[0],
                      np.asarray(train.labels))
    in_domain_mean = corpus.adapt.X.mean(axis=0)

    def prep(X):
        return normalize_length(lda.transform(X - in_domain_mean))[0]

    ev = scored_trials(corpus.enroll, corpus.test, corpus.trial_enroll, corpus.trial_target,
                       prep, plda)
    dev_enroll, dev_test, dev_trial_enroll, _, dev_target = corpus.dev
    dv = scored_trials(dev_enroll, dev_test, dev_trial_enroll, dev_target, prep, plda)
    print("development trials %d (%d target), evaluation trials %d (%d target)"
          % (dv["target"].size, dv["target"].sum(), ev["target"].size, ev["target"].sum()))
    y = ev["target"]
    one = np.ones(y.size)
    shorter = np.minimum(ev["enroll_seconds"], ev["test_seconds"])
    for system in ("Cosine", "PLDA"):
        s = ev["scores"][system]
        print("\n%s: scores by the trial's shorter side" % system)
        print("\n".join(duration_bins(s, y, shorter)))
        for fit_on, name in ((dv, "development trials"), (ev, "CEILING: the evaluation "
                                                              "trials themselves")):
            base = LinearFusion(prior=PRIOR).fit(fit_on["scores"][system][:, None],
                                                 fit_on["target"]).transform(s[:, None])
            qmf = QualityFusion(measures=(DURATION,), prior=PRIOR).fit(
                fit_on["scores"][system], fit_on["target"], fit_on["enroll_seconds"],
                fit_on["test_seconds"]).transform(s, ev["enroll_seconds"], ev["test_seconds"])
            a, b = cllr_act_dcf(base, y, one), cllr_act_dcf(qmf, y, one)
            (cl_lo, cl_hi), (ad_lo, ad_hi) = paired_interval(base, qmf, ev, args.bootstrap)
            print("calibrations trained on the %s: minDCF %.4f -> %.4f; actDCF(%g) %.4f -> "
                  "%.4f (%+.1f%% [%+.1f, %+.1f]); Cllr %.4f -> %.4f (%+.1f%% [%+.1f, %+.1f])"
                  % (name, min_dcf(base, y), min_dcf(qmf, y), PRIOR, a[1], b[1],
                     100 * (b[1] / a[1] - 1), 100 * ad_lo, 100 * ad_hi, a[0], b[0],
                     100 * (b[0] / a[0] - 1), 100 * cl_lo, 100 * cl_hi))


if __name__ == "__main__":
    main()
