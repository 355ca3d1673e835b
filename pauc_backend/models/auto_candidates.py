"""The candidates of pAUCMetric (auto) (models.auto_backend): system names, their fusions,
the LDA dimensions tried, and the plan of one cross-fitting."""

import itertools

from pauc_backend.models.backend_pipeline import DIM_FREE_SYSTEMS, SYSTEMS, base_system

__all__ = ["DEFAULT_CANDIDATES", "DEFAULT_LDA_DIMS", "dim_label", "parse_candidate",
           "dim_free", "all_fusions", "CrossFitPlan"]


_BASE_FUSIONS = ("plda+pauc_lnorm", "plda+pauc_latent", "pauc_lnorm+pauc_latent",
                 "plda+pauc_lnorm+pauc_latent", "cosine+plda+pauc_lnorm+pauc_latent")


def with_asnorm(name):
    return "+".join(part + ":as" for part in name.split("+"))


_DPLDA_FUSIONS = ("dplda+pauc_lnorm", "dplda+pauc_latent", "dplda+pauc_lnorm+pauc_latent")

DEFAULT_CANDIDATES = (("cosine_raw", "cosine_raw:as", "plda", "cosine", "pauc_lnorm",
                       "pauc_latent", "dplda") + _BASE_FUSIONS + _DPLDA_FUSIONS
                      + ("plda:as", "cosine:as", "pauc_lnorm:as", "pauc_latent:as")
                      + tuple(with_asnorm(f) for f in _BASE_FUSIONS)
                      + ("plda+pauc_lnorm+pauc_latent+plda:as+pauc_lnorm:as+pauc_latent:as",))

# 0 = no LDA; the others are capped by what the folds support (speakers - 1, vector dim).
DEFAULT_LDA_DIMS = (0, 75, 100, 125, 150, 175, 200, 225, 250)


def dim_label(dim):
    return "none" if not dim else "%d" % dim


def parse_candidate(name):
    """'plda+pauc_latent' -> ('plda', 'pauc_latent'), checked against SYSTEMS."""
    members = tuple(part.strip() for part in name.split("+"))
    for member in members:
        try:
            base_system(member)
        except ValueError as err:
            raise ValueError("%s in candidate %r" % (err, name)) from None
    if len(set(members)) != len(members):
        raise ValueError("candidate %r names a system twice" % name)
    return members


def dim_free(systems):
    """True if none of ``systems`` depends on the mean or the LDA (raw cosine, with or
    without AS-norm)."""
    return all(base_system(s) in DIM_FREE_SYSTEMS for s in systems)



class CrossFitPlan:
    """What AutoBackend.prepare found: the data, candidates, folds, held-out trials, LDA
    dimensions and (with the cheap LDA screening) the cheap systems of stage 1; ``work``
    caches stage_work, ``done`` the folds of each stage whose results were added."""

    def __init__(self, X, y, groups, members, needed, vec_fold, trials, dims, cheap):
        self.X, self.y, self.groups = X, y, groups
        self.members, self.needed = members, needed
        self.vec_fold, self.trials, self.dims, self.cheap = vec_fold, trials, dims, cheap
        self.work = {}
        self.done = {}


def all_fusions(systems=SYSTEMS):
    """Every single system and every fusion of two or more (for exhaustive searches)."""
    out = []
    for r in range(1, len(systems) + 1):
        out += ["+".join(c) for c in itertools.combinations(systems, r)]
    return out
