"""The systems of pAUCMetric (auto), each defined once: key, title, what it scores and how.

A ``System`` says what one back-end system is (its ``key`` in --candidates, system.txt, the
log and the fold outputs; its ``title`` in sentences and tables; a one-line ``summary`` for
--help) and how it is built from the pieces of ``models.backend_pipeline.BackendPipeline``:

* ``space``: the vectors it works on. ``raw``: the raw vectors made unit-length (no mean, no
  LDA: what a user of neural embeddings already has); ``lda``: centred by the training mean,
  LDA (none: the identity), unit length; ``latent``: the PLDA latent vectors of the centred,
  LDA-projected vectors length-normalised to sqrt(dim) (Plda::TransformIvector with num_utts,
  the paper's "PLDA-based" preprocessing, Section V-B); ``latent_adapt``: the same with the
  PLDA adapted to unlabelled in-domain vectors (ivector-adapt-plda with the recipes'
  --within-covar-scale=0.75 --between-covar-scale=0.25; the paper's "PLDA-adp"), which exists
  only when the back-end is given an adaptation set (AutoBackend.fit X_adapt,
  train-pauc-auto --adapt).
* ``head``: how two of them are scored. ``dot``: the dot product (ivector-compute-dot-
  products); ``plda``: Kaldi's PLDA log-likelihood ratio with num_utts (ivector-plda-
  scoring); ``dplda``: the discriminative PLDA's quadratic form (models.discriminative_plda);
  ``metric``: -(x1 - x2)^T M (x1 - x2) with M a pAUCMetric trained on that space (paper
  eq. 1, Alg. 1; stored as ``metric_<key>``).

Everything else is derived: whether a system needs the PLDA (it fails with it), whether it
depends on the LDA dimension at all (raw-space systems are rated once, "LDA none"), whether it
is cheap enough to be screened at every candidate LDA dimension (``dot`` and ``plda`` heads),
and how many numbers it learns (models.auto.selection's complexity order). Adding a system is one
``System(...)`` in ``SYSTEMS`` plus its test, if its space and head exist.

A member name may carry a score normalisation suffix (``plda:as``: AS-norm against the
training speakers' means, models.score_norm). ``ALIASES`` maps the keys of earlier versions
to today's: "cosine" was the centred cosine (it named three different systems across the
tools), so stored models and options that say "cosine" still read as ``cosine_centred``.
"""

from dataclasses import dataclass

__all__ = ["System", "SYSTEMS", "ALIASES", "NORMS", "system", "base_system", "canonical",
           "parse_candidate", "dim_free", "needs_plda", "needs_adapt", "adapted_candidate",
           "title", "candidate_title", "trained_parameters", "help_text"]


@dataclass(frozen=True)
class System:
    key: str
    title: str
    space: str          # "raw", "lda" or "latent" (see the module doc)
    head: str           # "dot", "plda", "dplda" or "metric"
    summary: str

    @property
    def needs_plda(self):
        return self.space in ("latent", "latent_adapt") or self.head in ("plda", "dplda")

    @property
    def needs_adapt(self):
        """Exists only with an adaptation set (the adapted PLDA)."""
        return self.space == "latent_adapt"

    @property
    def dim_free(self):
        """Depends on neither the training mean nor the LDA (rated once, as "LDA none")."""
        return self.space == "raw"

    @property
    def cheap(self):
        """Screened at every candidate LDA dimension (no iterative training of its own)."""
        return self.head in ("dot", "plda")


SYSTEMS = (
    System("cosine_raw", "Cosine (raw vectors)", "raw", "dot",
           "cosine of the raw vectors (no mean, no LDA)"),
    System("cosine_centred", "Cosine (centred)", "lda", "dot",
           "cosine of the vectors centred by the training mean (with --adapt: the "
           "adaptation set's), after the LDA"),
    System("plda", "PLDA", "latent", "plda",
           "Kaldi's PLDA on the centred, LDA-projected, length-normalised vectors"),
    System("dplda", "Discriminative PLDA", "latent", "dplda",
           "the PLDA's quadratic form fine-tuned by logistic regression on training trials"),
    System("pauc_lnorm", "pAUCMetric (length-norm)", "lda", "metric",
           "pAUCMetric on the unit-length LDA vectors"),
    System("pauc_latent", "pAUCMetric (PLDA latent)", "latent", "metric",
           "pAUCMetric on the PLDA latent vectors"),
    System("plda_adapt", "PLDA-adp", "latent_adapt", "plda",
           "Kaldi's PLDA adapted to the adaptation set (needs --adapt)"),
    System("pauc_latent_adapt", "pAUCMetric (PLDA-adp latent)", "latent_adapt", "metric",
           "pAUCMetric on the adapted PLDA's latent vectors (needs --adapt)"),
)
ALIASES = {"cosine": "cosine_centred"}
NORMS = {"as": "AS-norm"}

_BY_KEY = {s.key: s for s in SYSTEMS}


def system(key):
    """The System of ``key`` (or of an old alias); ValueError for an unknown one."""
    found = _BY_KEY.get(ALIASES.get(key, key))
    if found is None:
        raise ValueError("unknown system %r (known: %s, each optionally with :as)"
                         % (key, ", ".join(_BY_KEY)))
    return found


def base_system(name):
    """'plda:as' -> 'plda' (aliases resolved); ValueError for an unknown system or
    normalisation."""
    base, _, norm = name.partition(":")
    if norm and norm not in NORMS:
        raise ValueError("unknown system %r (known: %s, each optionally with :as)"
                         % (name, ", ".join(_BY_KEY)))
    return system(base).key


def canonical(name):
    """A member name with today's key: 'cosine:as' -> 'cosine_centred:as'."""
    base, sep, norm = name.partition(":")
    return base_system(base) + sep + norm if sep else base_system(name)


def parse_candidate(name):
    """'plda+pauc_latent' -> ('plda', 'pauc_latent'), each member checked and canonical."""
    try:
        members = tuple(canonical(part.strip()) for part in name.split("+"))
    except ValueError as err:
        raise ValueError("%s in candidate %r" % (err, name)) from None
    if len(set(members)) != len(members):
        raise ValueError("candidate %r names a system twice" % name)
    return members


def dim_free(members):
    """True if none of ``members`` depends on the mean or the LDA."""
    return all(system(base_system(m)).dim_free for m in members)


def needs_plda(members):
    return any(system(base_system(m)).needs_plda for m in members)


def needs_adapt(members):
    return any(system(base_system(m)).needs_adapt for m in members)


def adapted_candidate(name):
    """The candidate's counterpart with an adaptation set: each PLDA-latent member on the
    adapted PLDA (plda -> plda_adapt, pauc_latent -> pauc_latent_adapt, AS-norm kept); None
    for one with the discriminative PLDA (it has no adapted counterpart)."""
    swap = {"plda": "plda_adapt", "pauc_latent": "pauc_latent_adapt"}
    members = []
    for member in parse_candidate(name):
        base, sep, norm = member.partition(":")
        if base == "dplda":
            return None
        members.append(swap.get(base, base) + sep + norm)
    return "+".join(members)


def title(member):
    """'plda:as' -> 'PLDA + AS-norm'."""
    base, _, norm = member.partition(":")
    return system(base).title + (" + " + NORMS[norm] if norm else "")


def candidate_title(members):
    """The title of a candidate: its member's, or "fusion of A, B"."""
    if len(members) == 1:
        return title(members[0])
    return "fusion of " + ", ".join(title(m) for m in members)


def trained_parameters(members, lda_dim, dim, num_speakers, adapted=False):
    """Number of numbers the candidate learns from the labelled training data
    (models.auto.selection's complexity): the mean (dim) and the LDA (dim x lda_dim) unless
    every member is in the raw space, the PLDA (two symmetric w x w covariances), the
    discriminative PLDA (its full quadratic form), each pAUCMetric (a symmetric w x w matrix;
    a metric on the raw space: dim x dim), the AS-norm cohort (num_speakers x dim) and the
    fusion weights; w = lda_dim, or dim without LDA. With an adaptation set (``adapted``) the
    centred cosine at LDA none learns nothing from the labels (its mean is the adaptation
    set's): 0, as raw cosine."""
    systems = [system(base_system(m)) for m in members]
    if adapted and not lda_dim and tuple(members) == ("cosine_centred",):
        return 0
    width = dim if not lda_dim else int(lda_dim)
    count = 0
    if any(not s.dim_free for s in systems):
        count += dim + (dim * width if lda_dim else 0)
    if any(s.needs_plda for s in systems):
        count += width * (width + 1)
    if any(s.head == "dplda" for s in systems):
        count += 3 * width * width + 1
    for s in {s.key: s for s in systems if s.head == "metric"}.values():
        w = dim if s.dim_free else width
        count += w * (w + 1) // 2
    if any(":" in m for m in members):
        count += num_speakers * dim
    return count + len(members) - 1


def help_text():
    """One line per system for --help: 'key = Title: summary'."""
    return "\n".join("  %-18s %s: %s" % (s.key, s.title, s.summary) for s in SYSTEMS)
