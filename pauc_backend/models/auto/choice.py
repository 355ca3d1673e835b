"""The choice of pAUCMetric (auto): every candidate rated on every source, one rule
(models.auto.selection).

The candidates: every cross-fitted candidate rated on all the training folds (cv_results_'s
"full" rows), with its rows on the in-domain trial sets (the fold models' scores averaged,
models.auto.trialsets); the pseudo-trained candidates (models.auto.pseudo.cross_fit: rated on
the pseudo-speaker trials by models that never saw those pseudo-speakers, and on the
development trials); the do-no-harm baselines are among the cross-fitted ones whenever an
in-domain source exists (models.auto.inputs). ``choose`` returns a frozen ``Choice``; nothing
is written onto the cross-fitting or the estimator.
"""

from dataclasses import dataclass

from pauc_backend.models.auto import pseudo, selection
from pauc_backend.models.auto.evidence import DEV_TRIALS, PREFIX, PSEUDO_TRIALS
from pauc_backend.models.auto.trialsets import WHOLE

__all__ = ["Choice", "choose", "table_lines"]


@dataclass(frozen=True)
class Choice:
    """The candidates (``labels``: (candidate, lda_dim); ``members``; ``score_dims``: where
    each one's held-out scores live, WHOLE for a pseudo-trained one; ``complexity``), the
    ``evidence`` read (one Evidence per source, rows aligned with the labels), the kept
    ``index`` and the ``verdict`` (models.auto.selection.choose), the ``lines`` of the log
    and the ``card`` lines of system.txt saying why."""
    labels: tuple
    members: tuple
    score_dims: tuple
    complexity: tuple
    evidence: tuple
    index: int
    verdict: dict
    lines: tuple
    card: tuple

    @property
    def name(self):
        return self.labels[self.index][0]

    @property
    def lda_dim(self):
        return self.labels[self.index][1]

    @property
    def chosen_members(self):
        return self.members[self.index]

    @property
    def score_dim(self):
        return self.score_dims[self.index]

    @property
    def source(self):
        """The name of the source that rated (models.auto.evidence)."""
        return self.verdict["source"]

    @property
    def is_pseudo(self):
        return pseudo.is_pseudo(self.name)

    def row(self, source):
        """The chosen candidate's row on ``source`` (None: not rated there)."""
        for e in self.evidence:
            if e.source == source:
                return e.rows[self.index]
        return None


def choose(cross, inputs, reporter):
    """The Choice among the cross-fitted candidates of ``cross`` (models.auto.crossfit, every
    stage added) and the pseudo-trained ones of ``inputs`` (models.auto.inputs), with the
    reasons logged."""
    full = [r for r in cross.rows_at() if r["budget"] == "full"]
    if not full:
        raise ValueError("no candidate could be rated")
    labels = [(r["candidate"], r["lda_dim"]) for r in full]
    members = [inputs.members[r["candidate"]] for r in full]
    score_dims = [r["score_dim"] for r in full]
    complexity = list(cross.complexity(full))
    set_rows = {name: [cross.set_rows[name].get((r["candidate"], r["lda_dim"], "full"))
                       for r in full] for name in cross.sets}
    training = list(full)
    if inputs.pseudo is not None:
        s = inputs.settings
        reporter.note(where="pseudo-trained candidates")
        Xc, yc, _, rows, _ = inputs.crossfit_data()
        trained = pseudo.cross_fit(Xc, yc, rows, inputs.adapt, inputs.pseudo, s.asnorm_top_n,
                                   s.random_state, inputs.dev)
        for name, scores in trained.items():
            labels.append((name, inputs.pseudo.lda_dim))
            members.append((name,))
            score_dims.append(WHOLE)
            complexity.append(pseudo.complexity(name, inputs.pseudo.lda_dim, cross.dim,
                                                cross.num_speakers))
            training.append(None)
            for which, got in ((PSEUDO_TRIALS, scores["pseudo"]), (DEV_TRIALS, scores["dev"])):
                if which in cross.sets:
                    cross.sets[which].put(name, got)
                    row = cross.set_row(which, name, (name,), inputs.pseudo.lda_dim, WHOLE,
                                        "full")
                    set_rows[which].append(row)
                    reporter.log("%s %-24s LDA %4s: pAUC[%g,%g] %.4f  EER %.2f%%  "
                                 "minDCF(0.01) %.4f  (pseudo-trained)" % (
                                     which.capitalize(), name,
                                     inputs.pseudo.lda_dim or "none", s.alpha, s.beta,
                                     row["pauc"], 100 * row["eer"], row["min_dcf"]))
    evidence = [cross.evidence(training)]
    evidence += [cross.set_evidence(name, rows) for name, rows in set_rows.items()]
    baselines = selection.do_no_harm(labels, inputs.adapt is not None)
    index, verdict = selection.choose(labels, evidence, complexity,
                                      inputs.settings.selection, baselines)
    lines, card = selection.explain(labels, evidence, index, verdict)
    chosen = labels[index]
    reporter.log("Chose %s with LDA %s, rated on the %s: pAUC[%g,%g] %.4f" % (
        chosen[0], chosen[1] or "none", verdict["source"], inputs.settings.alpha,
        inputs.settings.beta, verdict["means"][index]))
    for line in lines:
        reporter.log(line)
    return Choice(tuple(labels), tuple(members), tuple(score_dims), tuple(complexity),
                  tuple(evidence), int(index), verdict, tuple(lines), tuple(card))



def table_lines(choice):
    """choice.txt of the model directory: one line per candidate a source rates,
    "<source> <candidate> <lda_dim> <pauc> <pauc_se> <eer> <min_dcf> <role>" (source:
    heldout, pseudo or dev; lda_dim "none" for 0; role: a comma-joined subset of chosen,
    baseline, rating (the source that rated), or "-"), every source's rows in the order of
    the candidates (plot-auto-choice draws them)."""
    baselines = set(choice.verdict["baselines"])
    lines = []
    for e in choice.evidence:
        means, se = e.means(), e.standard_errors()
        for i, row in enumerate(e.rows):
            if row is None:
                continue
            role = [r for r, on in (("chosen", i == choice.index), ("baseline", i in baselines),
                                    ("rating", e.source == choice.source)) if on]
            name, dim = choice.labels[i]
            lines.append("%s %s %s %.6g %.6g %.6g %.6g %s" % (
                PREFIX[e.source], name, "none" if not int(dim) else int(dim), means[i], se[i],
                e.figure(i, "eer"), e.figure(i, "min_dcf"), ",".join(role) or "-"))
    return lines
