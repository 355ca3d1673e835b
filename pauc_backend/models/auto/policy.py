"""What pAUCMetric (auto) tries, on which data, at what budget: the cost model of its choice.

The work of choosing is bounded whatever the corpus size; only the final training (mean, LDA
and PLDA statistics, linear in the number of vectors; the metrics' fixed number of iterations,
on at most ``max_metric_vectors`` vectors; the AS-norm cohort, one vector per speaker) grows
with it. What is held, as a function of these caps: train-pauc-auto --help, "Memory", and
docs/auto-backend.md.

* Cross-fitting data: at most ``max_speakers`` training speakers (a seeded subset when there
  are more) and at most ``max_vectors`` of their vectors (the same seeded cap on every
  speaker's count when there are more), dealt into ``num_folds`` speaker-disjoint folds. A
  vector outside the subset takes no part in the cross-fitting (``fold_of_vector`` -1); the
  final model trains on every vector. The subset is the only data the cross-fitting reads
  (models.auto.table: train-pauc-auto gathers it into its own array as it reads the table).
* Held-out trials: at most ``max_trials`` per fold (models.crossfit: every target kept up to
  half of it, non-targets sampled in per-speaker quotas; the standard error this adds is
  stated there).
* Successive halving (as scikit-learn's HalvingGridSearchCV), with the held-out folds as the
  resource (each fold's models are trained once: a candidate promoted to more folds reuses
  what it was screened with), in up to three stages:

  1. screen the LDA dimensions: the cheap systems (closed-form training: PLDA and the
     cosines; AS-norm only of raw cosine, which is scored once) at every candidate
     dimension, on every fold; the one kept by the selection rule among them is promoted
     (``lda_selection="all"``, or a single dimension: no such screening, every system at
     every dimension);
  2. screen the candidates there: every system on the first ``m = max(2, ceil(K /
     screen_factor))`` folds only; each candidate is rated on them, and the best
     ``1 / screen_factor`` of them (by mean held-out pAUC on those folds) are promoted;
  3. the promoted candidates on the other K - m folds (their systems only).

  The choice is made among candidates rated on every fold (the cheap systems screened in
  stage 1 are; a candidate that was not promoted keeps its screening row, marked
  ``"budget": "screen"``, with the figures of the first m folds). With K < 2 m (e.g. 3 folds)
  there is no candidate screening: every candidate is cross-fitted on every fold.

So the cost of choosing, per fold: one LDA + PLDA fit and the held-out scoring of the cheap
systems at each of the len(lda_dims) dimensions (on <= (K-1)/K max_vectors training vectors,
<= max_trials trials); at one dimension, on m of the K folds, the two pAUCMetrics (num_iters
iterations each, mini-batches of batch_size speakers) and the discriminative PLDA (its
training grid bounded by its own max_test), on the other folds only what the promoted
candidates need; plus fusions rated on <= max_rating_fusion_trials trials. None grows with
the corpus.

The promotions between the stages are decided here from the rows the cross-fitting
(models.auto.crossfit) rated: the source that ranks the screenings (``ranking_source``), the
dimension stage 1 promotes (``screened_dim``) and the candidates stage 2 promotes
(``promotion``).
"""

import math
from dataclasses import dataclass, field

import numpy as np

from pauc_backend.models.auto import selection
from pauc_backend.models.auto.evidence import IN_DOMAIN, PREFIX, TRAINING_FOLDS, Evidence
from pauc_backend.models.auto.folds import dim_label
from pauc_backend.models.systems import dim_free, system, base_system, parse_candidate
from pauc_backend.models.crossfit import HeldOutTrials, crossfit_rows, speaker_folds

__all__ = ["Stage", "CrossFitPlan", "make_plan", "screen_folds", "ranking_source",
           "screened_dim", "promotion"]


@dataclass
class Stage:
    """The work of one stage: ``systems`` at each of ``dims`` on ``folds`` (0-based);
    ``keep``: the systems whose held-out scores are kept for fusions still to be rated;
    ``lambdas``: the discriminative PLDA's (None: every one of dplda_lambdas)."""
    name: str
    dims: list
    systems: tuple
    folds: tuple = ()
    keep: frozenset = frozenset()
    lambdas: tuple = None


@dataclass
class CrossFitPlan:
    """What ``make_plan`` found (the data, candidates, subset, folds, held-out trials, LDA
    dimensions, what the fold tasks score besides: the adaptation set and the in-domain trial
    sets) and the stages, each defined once the previous one is done on every fold
    (``stages[s]``), with the folds added so far (``done``)."""
    X: object
    y: object
    groups: object
    members: dict
    needed: tuple
    fold_of_vector: object
    trials: list
    dims: list
    num_speakers: int
    subset: str
    adapt: object = None       # the AdaptationSet (models.auto.adapt), or None
    trial_sets: dict = field(default_factory=dict)    # {source: TrialSet} scored by folds
    shifts: list = None        # per fold, the translation of its held-out vectors
    stages: dict = field(default_factory=dict)
    done: dict = field(default_factory=dict)
    promoted: tuple = None

    def held_out(self, fold, vectors):
        """Held-out vectors of ``fold`` as the cross-fitting scores them: translated to the
        adaptation set's mean when there is one (models.auto.adapt)."""
        if self.shifts is None:
            return vectors
        return (np.asarray(vectors, dtype=np.float32) + self.shifts[fold]).astype(np.float32)

    def train_rows(self, fold):
        """Rows of X that train fold ``fold``: the other folds of the subset."""
        return np.flatnonzero((self.fold_of_vector != fold) & (self.fold_of_vector >= 0))


def screen_folds(num_folds, factor):
    """The folds the candidates are screened on (the first m of them; see the module doc),
    or None when there is no candidate screening."""
    if int(factor) < 2:
        return None
    m = max(2, int(math.ceil(int(num_folds) / float(factor))))
    return tuple(range(m)) if int(num_folds) >= 2 * m else None


def make_plan(settings, reporter, X, y, groups, members, subset=None, num_speakers=None,
              adapt=None, trial_sets=None):
    """The data, folds, held-out trials and LDA dimensions of one cross-fitting with
    ``settings`` (models.auto.settings; ``reporter`` logs and notes progress), and its first
    stage. ``subset``: (rows of X, sentence) of the cross-fitting subset when it was drawn
    already (models.auto.table), else crossfit_rows draws it; ``num_speakers``: the whole
    table's (default: y's); ``adapt``: the AdaptationSet the fold models are centred on and
    adapted to; ``trial_sets``: {source: TrialSet} every fold task scores too."""
    s = settings
    rows, subset = (crossfit_rows(y, s.max_speakers, s.max_vectors, s.random_state)
                    if subset is None else subset)
    speakers, fold_of = speaker_folds(y[rows], s.num_folds, s.random_state)
    fold_of_vector = np.full(len(y), -1, dtype=np.intp)
    fold_of_vector[rows] = fold_of[np.searchsorted(speakers, y[rows])]
    fold_train_spk = [int(np.count_nonzero(fold_of != k)) for k in range(s.num_folds)]
    cap = min(X.shape[1], min(fold_train_spk) - 1)
    if cap < 1 and any(int(d) > 0 for d in s.lda_dims):
        raise ValueError("too few training speakers for LDA")
    dims = sorted({min(int(d), cap) if int(d) > 0 else 0 for d in s.lda_dims})
    if any(int(d) > cap for d in s.lda_dims):
        reporter.log("LDA dimensions capped at %d (vector dimension %d; the smallest fold "
                     "trains on %d speakers)" % (cap, X.shape[1], min(fold_train_spk)))
    trials = []
    for k in range(s.num_folds):
        reporter.note(where="held-out trials of fold %d of %d" % (k + 1, s.num_folds),
                      fraction=k / s.num_folds)
        t = HeldOutTrials(y, np.flatnonzero(fold_of_vector == k), int(s.enroll_utts),
                          groups, s.max_utts_per_speaker or None,
                          s.random_state + 1000 + k, max_trials=s.max_trials or None)
        if t.num_target < 1 or t.num_nontarget < 1:
            raise ValueError(
                "fold %d of %d has %d target and %d non-target held-out trials: too few "
                "speakers or vectors per speaker (each held-out speaker needs > %d vectors); "
                "use fewer folds" % (k + 1, s.num_folds, t.num_target, t.num_nontarget,
                                     max(1, s.enroll_utts)))
        trials.append(t)
    needed = tuple(dict.fromkeys(m for mem in members.values() for m in mem))
    shifts = None if adapt is None else [
        adapt.fold_shift(X, np.flatnonzero((fold_of_vector != k) & (fold_of_vector >= 0)))
        for k in range(s.num_folds)]
    plan = CrossFitPlan(X, y, groups, members, needed, fold_of_vector, trials, dims,
                        int(np.unique(y).size if num_speakers is None else num_speakers),
                        subset, adapt, dict(trial_sets or {}), shifts)
    plan.stages[1] = first_stage(settings, plan)
    return plan


def _cheap(name):
    return system(base_system(name)).cheap


def fusion_members(plan, systems):
    """Members of multi-system candidates made only of ``systems``: their columns are kept."""
    have = set(systems)
    return frozenset(m for mem in plan.members.values() if len(mem) > 1 and set(mem) <= have
                     for m in mem)


def first_stage(settings, plan):
    """Stage 1 (the module doc): the LDA dimensions screened with the cheap systems, or,
    without that screening, every system at every dimension."""
    every = settings.every_fold
    # the cheap systems, without AS-norm (its cohort scoring costs more than the rest) unless
    # dimension-free (scored once)
    cheap = tuple(s for s in plan.needed if _cheap(s) and (":" not in s or dim_free((s,))))
    screen_dims = (settings.lda_selection == "cheap" and len(plan.dims) > 1
                   and len(cheap) < len(plan.needed))
    if screen_dims:
        if dim_free(cheap):
            cheap += ("plda",)            # something to compare the dimensions with
        return Stage(SCREEN_DIMS, plan.dims, cheap, every,
                     fusion_members(plan, cheap) | _free_in_fusions(plan))
    # no dimension screening: every system at every dimension (screened on m folds)
    folds = screen_folds(settings.num_folds, settings.screen_factor)
    return Stage("every system at every LDA dimension" if folds is None else
                 SCREEN_CANDIDATES, plan.dims, plan.needed, folds or every,
                 frozenset(plan.needed))


def _free_in_fusions(plan):
    """Dimension-free members of fusions: their columns (computed once) stay until the end."""
    return frozenset(m for mem in plan.members.values() if len(mem) > 1 for m in mem
                     if dim_free((m,)))


def second_stage(settings, plan, dim):
    """At the dimension ``dim`` promoted by the screening of stage 1: every system the
    candidates need (the cheap ones again, for the fusions), on the screening folds when
    there are some."""
    folds = screen_folds(settings.num_folds, settings.screen_factor)
    systems = tuple(s for s in plan.needed if not dim_free((s,)))
    return Stage(SCREEN_CANDIDATES if folds else "every system", [dim], systems,
                 folds or settings.every_fold,
                 frozenset(systems) | _free_in_fusions(plan))


def promoted_stage(settings, plan, promoted, dims, lambdas, free=()):
    """The systems of the ``promoted`` candidates on the folds they were not screened on,
    with the dimension-free systems ``free`` (raw cosine: no training, scored once, so never
    screened out; without them a dimension-free candidate, or a promoted fusion with one,
    would lack the other folds) at the first of ``dims``."""
    screened = set(screen_folds(settings.num_folds, settings.screen_factor) or ())
    systems = tuple(dict.fromkeys([m for name in promoted for m in plan.members[name]
                                   if not dim_free((m,))] + list(free)))
    return Stage("promoted candidates on the other folds", list(dims) if systems else [],
                 systems, tuple(k for k in settings.every_fold if k not in screened),
                 frozenset(systems), lambdas)


def ranking_source(rows_by_source):
    """The source that ranks the screenings: the first in-domain trial set (IN_DOMAIN order)
    of ``rows_by_source`` ({source: its rows, None for a candidate it does not rate}) whose
    evidence can be trusted (Evidence.trust, against raw cosine and the centred cosine at LDA
    none), else TRAINING_FOLDS. Returns (that source, why each set passed over is not
    trusted)."""
    untrusted = []
    for name in IN_DOMAIN:
        if name not in rows_by_source:
            continue
        rows = [r for r in rows_by_source[name] if r is not None]
        cosine = [i for i, r in enumerate(rows) if r["candidate"] == "cosine_raw"
                  or (r["candidate"] == "cosine_centred" and not r["lda_dim"])]
        ok, why = Evidence(name, rows).trust(cosine)
        if ok:
            return name, untrusted
        untrusted.append(why)
    return TRAINING_FOLDS, untrusted


def screened_dim(rated, evidence, complexity, rule, source):
    """The LDA dimension where the other systems are cross-fitted: that of the cheap system
    kept by the selection rule ``rule`` among ``rated`` (the cheap systems' rows at each
    screened dimension), on their ``evidence`` from the ranking ``source``, with
    ``complexity`` (their trained parameters; with "1se", the simplest dimension within one
    standard error of the best; models.auto.selection). Returns (that dimension, why, one
    sentence)."""
    labels = [(r["candidate"], r["lda_dim"]) for r in rated]
    kept, verdict = selection.choose(labels, [evidence], complexity, rule, check_trust=False)
    best, row = rated[verdict["best"]], rated[kept]
    where = PREFIX[source]
    figure = verdict["means"]
    if kept == verdict["best"]:
        why = ("%s has the best %s pAUC of the cheap systems (%.4f)"
               % (row["candidate"], where, figure[kept]))
    else:
        diff, se = evidence.paired(verdict["best"], kept)
        why = ("%s (%.4f) is the simplest of the cheap systems within one standard error "
               "of the best %s pAUC, %s at LDA %s (%.4f, %.4f +- %.4f better)"
               % (row["candidate"], figure[kept], where, best["candidate"],
                  dim_label(best["lda_dim"]), figure[verdict["best"]], diff, se))
    return row["lda_dim"], why


def promotion(settings, plan, screen, rows, rated, source, source_rows, free, lambdas):
    """Successive halving after the candidate screening ``screen``: the best
    1/screen_factor of the candidates rated at the screened dimension(s) (``rows``, the rated
    rows there; ``rated``: every rated row's (candidate, lda_dim, budget)), by mean held-out
    pAUC on the screening folds, or, when an in-domain trial set ranks (``source``), by its
    pAUC in ``source_rows`` (keyed as ``rated``), are promoted: the next stage cross-fits
    their systems on the other folds, with the dimension-free systems ``free`` and the
    discriminative PLDA's ``lambdas`` (none promoted: nothing). Returns that stage and the
    line that says what was promoted."""
    factor = int(settings.screen_factor)
    folds = list(screen.folds)
    rows = [r for r in rows if not dim_free(parse_candidate(r["candidate"]))]
    rows = [r for r in rows if r["budget"] == "screen"
            or ((r["candidate"], r["lda_dim"], "screen") not in rated)]
    mean = {id(r): np.mean([r["folds"][i if r["budget"] == "screen" else k]["pauc"]
                            for i, k in enumerate(folds)]) for r in rows}
    if source != TRAINING_FOLDS:      # an in-domain trial set ranks: its pAUC
        got = {id(r): source_rows.get((r["candidate"], r["lda_dim"], r["budget"]))
               for r in rows}
        mean = {i: (-np.inf if d is None else d["pauc"]) for i, d in got.items()}
    count = max(1, -(-len(rows) // factor))
    top = sorted(rows, key=lambda r: -mean[id(r)])[:count]
    promoted = [r for r in top if r["budget"] == "screen"]
    names = tuple(dict.fromkeys(r["candidate"] for r in promoted))
    line = ("%d candidates rated at LDA %s on folds %s; the best %d (1/%d) by %s "
            "pAUC there: %s" % (len(rows), ",".join(dim_label(d) for d in screen.dims),
                                ",".join(str(k + 1) for k in folds), count, factor,
                                PREFIX[source],
                                ", ".join("%s %.4f" % (r["candidate"], mean[id(r)])
                                          for r in top)))
    line += ("; promoted to the other folds: %s" % ", ".join(names) if names else
             "; every one of them is already rated on every fold: nothing more to "
             "cross-fit")
    # dimension-free systems (raw cosine) are not screened: the other folds complete them
    dims = sorted({r["score_dim"] for r in promoted}) or list(screen.dims[:1] if free
                                                             else ())
    return promoted_stage(settings, plan, names, dims, lambdas, free), line


SCREEN_DIMS = "screen LDA dimensions"
SCREEN_CANDIDATES = "screen candidates"
