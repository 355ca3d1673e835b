"""The PLDA option group and model/vector reading shared by the PLDA tools (transform-plda-latent,
score-plda-trials, adapt-plda, copy-plda), as Kaldi's ``PldaConfig::Register``."""

import numpy as np

from pauc_backend.cli.framework.trial_scoring import index_keys
from pauc_backend.cli.framework.vector_input import check_dimension, check_finite
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import read_int32_table, read_plda, read_vector_table
from pauc_backend.models.plda import PLDA


def register_plda_options(target, num_utts=True):
    """PldaConfig's options (and --num-utts, as ivector-plda-scoring registers it)."""
    target.register("normalize-length", True, "If true, do length normalization as part of "
                    "PLDA: scale so that the inner product with the PLDA model's inverse "
                    "variance (a function of how many utterances the vector was averaged over) "
                    "equals the dimension.")
    target.register("simple-length-normalization", False, "If true, replace the default length "
                    "normalization by one that makes the length equal to sqrt(dimension).")
    if num_utts:
        target.register("num-utts", "", "Table to read the number of utterances per speaker, "
                        "e.g. ark:num_utts.ark")


def read_plda_model(rxfilename):
    return PLDA.from_params(*read_plda(rxfilename))


def read_transformed(log, plda, rspecifier, opts, num_utts_rspecifier, duplicate_message):
    """Read a vector table and apply TransformIvector, storing the result as float32 as
    ivector-plda-scoring does. Returns (keys, U, num_utts, factors, num_errors); keys missing
    from the --num-utts table are dropped with Kaldi's warning."""
    keys, X = read_vector_table(rspecifier)
    index_keys(keys, duplicate_message)
    check_dimension(X, rspecifier, plda.dim, "the PLDA model")
    check_finite(keys, X, rspecifier)
    num_errors = 0
    num_utts = np.ones(len(keys), dtype=np.int64)
    if num_utts_rspecifier:
        table = read_int32_table(num_utts_rspecifier)
        found = [table.get(key) for key in keys]
        keep = [row for row, n in enumerate(found) if n is not None]
        for key, n in zip(keys, found):
            if n is None:
                log.warning("Number of utterances not given for speaker %s" % key)
            elif n < 1:
                raise KaldiError("Number of utterances for speaker %s in %s is %d, must be >= 1"
                                 % (key, num_utts_rspecifier, n))
        num_errors = len(keys) - len(keep)
        if num_errors:
            keys, X = [keys[row] for row in keep], X[keep]
        num_utts = np.array([found[row] for row in keep], dtype=np.int64)
    if not len(keys):
        return keys, np.zeros((0, plda.dim), np.float32), num_utts, np.zeros(0), num_errors
    U, factors = plda.transform(X, num_utts, normalize_length=opts.normalize_length,
                                simple_length_norm=opts.simple_length_normalization)
    return keys, U.astype(np.float32), num_utts, factors.astype(np.float32), num_errors
