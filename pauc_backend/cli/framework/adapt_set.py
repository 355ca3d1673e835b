"""train-pauc-auto's --adapt: the unlabelled vectors of the domain to be scored, read,
checked and judged (models.unlabelled) before any training.

* Input errors, ONE ERROR naming the file: a key listed twice (its two lines or entries), too
  few vectors, another dimension, NaN or Inf; and a set of which nothing can be used (every
  vector all zero, beyond float32 arithmetic, or one vector repeated).
* A set that cannot be trusted (models.unlabelled.examine: rows left out, a rank far below
  the training's, spread like isotropic noise): ONE WARNING naming the cause. A set not
  usable at all is then not used: the back-end is trained as without --adapt (an explicit
  --candidates that needs it is an ERROR instead). A usable set gets a LOG line saying what it
  is used for (a set without speaker clusters, e.g. of many speakers with one vector each, is
  used for centring and covariance, not for pseudo-speakers).
* The domain shift of the kept vectors from the training vectors is logged (models.domain).
"""

import numpy as np

from pauc_backend.cli.framework.domain_check import describe_shift
from pauc_backend.cli.framework.vector_input import check_finite, check_unique_keys
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_vector_table
from pauc_backend.models.auto import pseudo
from pauc_backend.models.auto.adapt import check_candidates
from pauc_backend.models.domain import TrainingDomain, is_out_of_domain
from pauc_backend.models.unlabelled import TrainingReference, examine

__all__ = ["read_adapt", "system_lines"]


def read_adapt(rspecifier, table, log, model):
    """(the --adapt vectors to use (the kept rows) or None when the set is not used, its
    models.unlabelled.AdaptCheck, the keys of the vectors used or None). ``table``: the
    training table (X, y); ``model``: the AutoBackend (its candidates and seed)."""
    keys, A = read_vector_table(rspecifier)
    check_unique_keys(keys, rspecifier, "--adapt")
    if len(keys) < 2:
        raise KaldiError("--adapt=%s has %d vectors; the adaptation set needs at least 2"
                         % (rspecifier, len(keys)))
    if A.shape[1] != table.shape[1]:
        raise KaldiError("--adapt=%s has vectors of dimension %d but the training vectors %d"
                         % (rspecifier, A.shape[1], table.shape[1]))
    check_finite(keys, A, rspecifier)
    seed = model.random_state
    reference = TrainingReference.fit(table.X, np.asarray(table.y), seed=seed)
    check = examine(A, reference, seed=seed,
                    min_clustered=pseudo.MIN_PSEUDO_SPEAKERS * pseudo.MIN_RATING_SIZE)
    if check.level == "error":
        raise KaldiError("--adapt=%s: %s" % (rspecifier, check.cause))
    if not check.usable:
        try:
            check_candidates(model.candidates, False)
        except ValueError as err:
            raise KaldiError("--adapt=%s: %s; --candidates: %s" % (
                rspecifier, check.cause, str(err).replace(
                    " (X_adapt; train-pauc-auto --adapt)", ""))) from None
        log.warning("--adapt=%s: %s; the back-end is trained as without --adapt"
                    % (rspecifier, check.cause))
        return None, check, None
    if check.level == "warning":
        log.warning("--adapt=%s: %s" % (rspecifier, check.cause))
    else:
        log.log("Adaptation set --adapt=%s: %s" % (rspecifier, check.cause))
    if check.rows.size < A.shape[0]:
        A = A[check.rows]
        keys = [keys[i] for i in check.rows]
    shift = TrainingDomain().fit(table.X, table.y).shift(A)
    log.log("Read %d adaptation vectors from %s; %s%s" % (
        A.shape[0], rspecifier, describe_shift(shift),
        " (out of the training domain: adaptation is what they are for)"
        if is_out_of_domain(shift) else ""))
    return A, check, keys


def system_lines(check):
    """system.txt lines of the check: ``adapt_check <token>``, ``adapt_left_out <count>``
    and, when the set was not used, ``adapt_used false``."""
    lines = ["adapt_check %s" % check.token,
             "adapt_left_out %d" % (check.figures["vectors"] - check.figures["kept"])]
    if not check.usable:
        lines.append("adapt_used false")
    return lines
