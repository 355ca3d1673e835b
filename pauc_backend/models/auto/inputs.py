"""What one fit of pAUCMetric (auto) reads, built once: ``FitInputs`` (frozen).

``build`` checks the data and the parameters and decides, before any model is trained:

* the training table (models.auto.table) and the cross-fitting subset;
* the adaptation set (models.auto.adapt.AdaptationSet: its seeded sample drawn once) and what
  it can be used for, from models.unlabelled's examination: centring and adapting (else it is
  dropped, with one WARNING: the fit is the one without it), the adapted candidates (its
  covariance), the pseudo-speakers (its speaker structure);
* the candidates of the cross-fitting: the adapted ones replace the PLDA-latent defaults with
  a usable adaptation set; with an in-domain source the do-no-harm baselines (raw cosine,
  the centred cosine at LDA none) are always among them (models.auto.selection);
* the development trials (checked, capped) and the pseudo-speakers (models.auto.pseudo:
  the clustering and its trials), the two in-domain trial sets;
* the durations of the training vectors, of the adaptation vectors and of the development
  vectors (for the quality measures of the calibration, models.auto.qmf).

Every later stage reads these and returns its own values; none writes back here.
"""

import dataclasses
from dataclasses import dataclass

import numpy as np

from pauc_backend.models import unlabelled
from pauc_backend.models.auto import adapt as auto_adapt, pseudo, qmf
from pauc_backend.models.auto.evidence import DEV_TRIALS, PSEUDO_TRIALS
from pauc_backend.models.auto.params import DEFAULT_CANDIDATES
from pauc_backend.models.auto.table import as_table
from pauc_backend.models.systems import parse_candidate

__all__ = ["FitInputs", "TrialSet", "build", "BASELINES"]

BASELINES = ("cosine_centred", "cosine_raw")      # the do-no-harm baselines (at LDA none)


@dataclass(frozen=True)
class TrialSet:
    """An in-domain trial set as the fold tasks score it: ``trials`` (a DevTrials) and its
    ``parts`` (((trial rows, adaptation rows), ...): each part scored by models centred on
    and adapted to those rows of the adaptation set only; () for one scoring with the whole
    adaptation sample, models.auto.folds.SetScorer)."""
    trials: object
    parts: tuple = ()


@dataclass(frozen=True)
class FitInputs:
    """The inputs of one fit (module doc): ``settings`` (models.auto.settings, LDA none added
    when a baseline needs it), ``table``, ``members`` ({candidate: its members}, the
    cross-fitted candidates), ``adapt`` (AdaptationSet or None), ``dev`` (DevTrials or
    None), ``durations`` (seconds per training vector, or None), ``pseudo``
    (pseudo.PseudoSpeakers or None), ``notes`` (what was decided and why: LOG lines)."""
    settings: object
    table: object
    members: dict
    adapt: object = None
    dev: object = None
    durations: object = None
    pseudo: object = None
    notes: tuple = ()

    @property
    def in_domain(self):
        return self.dev is not None or self.pseudo is not None

    @property
    def trial_sets(self):
        """{source: TrialSet} of the in-domain trial sets (models.auto.evidence's names)."""
        out = {}
        if self.dev is not None:
            out[DEV_TRIALS] = TrialSet(self.dev)
        if self.pseudo is not None:
            out[PSEUDO_TRIALS] = TrialSet(self.pseudo.trials,
                                          self.pseudo.parts(self.adapt.rows))
        return out

    def crossfit_data(self):
        """The cross-fitting subset of the table: (X, y, groups, rows, sentence)."""
        s = self.settings
        return self.table.crossfit(s.max_speakers, s.max_vectors, s.random_state)


def _durations(values, size, what):
    if values is None:
        return None
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.size != size or not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError("%s need one positive finite value per vector" % what)
    return values


def build(settings, reporter, X, y=None, groups=None, X_adapt=None, dev=None,
          durations=None, adapt_durations=None, adapt_check=None):
    """The FitInputs of one fit (module doc); ValueError naming a bad parameter or piece of
    data. ``settings``: the checked parameters (models.auto.settings.Settings); WARNINGs and
    LOG lines go to ``reporter``. ``adapt_check``: the models.unlabelled.AdaptCheck of
    ``X_adapt`` when the caller examined it already (train-pauc-auto, which names the file in
    its messages) and gives its kept rows: it is not examined again."""
    table = as_table(X, y, groups)
    notes = []
    dim = table.shape[1]
    durations = _durations(table.durations if durations is None else durations,
                           table.shape[0], "durations of the training vectors")
    Xc, yc, _, rows, _ = table.crossfit(settings.max_speakers, settings.max_vectors,
                                        settings.random_state)
    adapt = None
    if X_adapt is not None:
        adapt = _adaptation_set(X_adapt, adapt_durations, Xc, yc, settings, reporter,
                                notes, adapt_check)
    names = list(settings.candidates)
    adapted = adapt is not None and adapt.verdict.covariance
    if adapted and tuple(names) == tuple(DEFAULT_CANDIDATES):
        names = list(auto_adapt.adapted_candidates(names))
    auto_adapt.check_candidates(names, adapted)
    if dev is not None:
        dev = dataclasses.replace(dev).check(dim).capped(settings.max_dev_trials,
                                                         settings.random_state)
    found = None
    if adapt is not None and not adapt.verdict.pseudo_speakers:
        notes.append("Pseudo-speakers: none (the adaptation set shows no speaker clusters: "
                     "used for centring and covariance only)")
    elif adapt is not None:
        found, text = pseudo.build(Xc, yc, rows, adapt, settings.lda_dims,
                                   settings.enroll_utts, settings.max_dev_trials,
                                   settings.random_state)
        notes.append("Pseudo-speakers of the adaptation set: %s" % text)
    in_domain = dev is not None or found is not None
    if in_domain:
        have = {parse_candidate(n) for n in names}
        names += [b for b in BASELINES if (b,) not in have]
        if 0 not in settings.lda_dims:
            settings = dataclasses.replace(settings, lda_dims=(0,) + tuple(settings.lda_dims))
            notes.append("LDA none added to the candidate dimensions (the centred cosine "
                         "baseline)")
    qmf.measure_sets(settings.quality_measures, any(
        d is not None for d in (durations, None if dev is None else dev.durations,
                                None if adapt is None else adapt.durations)))
    return FitInputs(settings, table, {n: parse_candidate(n) for n in names}, adapt, dev,
                     durations, found, tuple(notes))


def _adaptation_set(A, durations, X, y, settings, reporter, notes, check=None):
    """The AdaptationSet of the raw vectors A, examined (models.unlabelled) against the
    cross-fitting's training vectors X (labels y) unless ``check`` is given (then A holds
    its kept rows): None (one WARNING) when it cannot be used at all; ValueError when
    nothing in it can be used."""
    A = np.asarray(A)
    if A.ndim != 2 or A.shape[1] != X.shape[1]:
        raise ValueError("adaptation vectors have dimension %s but the training vectors %d"
                         % (A.shape[1:] or "?", X.shape[1]))
    kept = None
    if check is None:
        reference = unlabelled.TrainingReference.fit(X, y, seed=settings.random_state)
        check = unlabelled.examine(A, reference, seed=settings.random_state,
                                   min_clustered=pseudo.MIN_PSEUDO_SPEAKERS
                                   * pseudo.MIN_RATING_SIZE)
        kept = check.rows
        if check.level == "error":
            raise ValueError("the adaptation set cannot be used: %s" % check.cause)
        if not check.usable:
            reporter.warn("The adaptation set is not used (%s): the back-end is chosen and "
                          "trained as without it" % check.cause)
            return None
        if check.level == "warning":
            reporter.warn("The adaptation set: %s" % check.cause)
        else:
            notes.append("The adaptation set: %s" % check.cause)
    if not check.usable:
        return None
    return auto_adapt.AdaptationSet.of(A, X.shape[1], settings.max_adapt_vectors,
                                       settings.random_state, durations, check, kept)
