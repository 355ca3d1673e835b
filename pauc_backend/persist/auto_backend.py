"""The model directory of train-pauc-auto / score-pauc-auto: Kaldi-format pieces + a text card.

    system.txt     what was chosen and its cross-fitted (held-out) figures, "key value" lines
    mean.vec       training mean of the raw vectors (float vector; ivector-subtract-global-mean)
    transform.mat  LDA [A | b] (float matrix; transform-vec / ivector-transform); with
                   "lda_dim none" in system.txt the identity [I | 0]
    plda           Kaldi <Plda> (ivector-plda-scoring), if a member system needs it
    plda_adapt     the PLDA adapted to the adaptation set (ivector-adapt-plda), if a member
                   system needs it (train-pauc-auto --adapt)
    domain_mean.vec, domain_whitener.mat   the training-domain statistics of the domain check
                   (models.domain.TrainingDomain: mean and within-speaker whitening of the
                   raw training vectors; with --adapt the adaptation set's mean). A directory
                   without them (an older version's) scores without the check.
    dplda          discriminative PLDA (models.discriminative_plda), if a member is dplda: one
                   double matrix of 3d+1 rows x d, the blocks Q1 (enrollment quadratic), Q2
                   (test quadratic), P (cross term) of s = e'Q1 e + t'Q2 t + 2 e'P t + c over
                   the PLDA latent vectors, then the row [c 0 ... 0]
    metric_pauc_lnorm, metric_pauc_latent   pAUCMetric M (double matrix; score-pauc-trials)
    cohort.ark, cohort_num_utts.ark   AS-norm cohort: one raw vector of each training speaker
                   and the number of vectors each stands for (1; older versions stored the
                   speakers' mean vectors and their sizes), if a member system uses AS-norm
    fusion         <LinearCalibration> weights over the members' scores (apply-calibration)

The directory is written under a temporary name and renamed at the end, so a failure never
leaves a half-written model (an existing model directory is replaced only on success).
"""

import os
import shutil

import numpy as np

from pauc_backend.persist.calibration import read_calibration, write_calibration
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io.commit import (claimed, committed_at_once, make_temp_dir,
                                          replace_directory)
from pauc_backend.kaldi_io import read_matrix, read_plda, read_vector, write_matrix, write_plda
from pauc_backend.kaldi_io import (read_int32_table, read_vector_table, write_int32_table,
                                   write_vector, write_vector_table)
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.auto.systems import base_system, canonical, system
from pauc_backend.models.backend_pipeline import BackendPipeline
from pauc_backend.models.discriminative_plda import DiscriminativePLDA
from pauc_backend.models.domain import TrainingDomain
from pauc_backend.models.plda import PLDA


def write_model_dir(path, model, binary=True, extra_lines=()):
    """Write a fitted AutoBackend as the directory ``path`` (atomically replaced)."""
    with committed_at_once(), claimed([path]):   # files complete before the rename; one writer
        _write_model_dir(path, model, binary, extra_lines)


def _write_model_dir(path, model, binary=True, extra_lines=()):
    """The body of ``write_model_dir``, its files committed as each closes."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise KaldiError("Cannot write model directory %s: %s does not exist" % (path, parent))
    tmp = make_temp_dir(os.path.join(parent, os.path.basename(path.rstrip("/"))))
    try:
        pipe = model.pipeline_
        with open(os.path.join(tmp, "system.txt"), "w") as f:
            f.write(model.describe())
            f.write("dim %d\n" % model.n_features_in_)
            for line in extra_lines:
                f.write(line.rstrip("\n") + "\n")
        write_vector(os.path.join(tmp, "mean.vec"), pipe.mean_, binary=binary)
        write_matrix(os.path.join(tmp, "transform.mat"), pipe.lda_.affine_matrix_,
                     binary=binary)
        if pipe.plda_ is not None:
            write_plda(os.path.join(tmp, "plda"), pipe.plda_.mean_, pipe.plda_.transform_,
                       pipe.plda_.psi_, binary=binary)
        if getattr(pipe, "plda_adapt_", None) is not None:
            p = pipe.plda_adapt_
            write_plda(os.path.join(tmp, "plda_adapt"), p.mean_, p.transform_, p.psi_,
                       binary=binary)
        domain = getattr(model, "domain_", None)
        if domain is not None:
            write_vector(os.path.join(tmp, "domain_mean.vec"), domain.mean_, binary=binary)
            write_matrix(os.path.join(tmp, "domain_whitener.mat"), domain.whitener_,
                         binary=binary)
        if "dplda" in {base_system(s) for s in pipe.systems}:
            dp = pipe.dplda_model()
            offset = np.zeros((1, dp.dim))
            offset[0, 0] = dp.offset_
            write_matrix(os.path.join(tmp, "dplda"), np.vstack([dp.quad_enroll_, dp.quad_test_,
                                                                dp.cross_, offset]),
                         binary=binary)
        for name, metric in pipe.metrics_.items():
            write_matrix(os.path.join(tmp, "metric_" + name), metric.metric_, binary=binary)
        write_calibration(os.path.join(tmp, "fusion"), model.fusion_, binary=binary)
        if pipe.cohort_ is not None:
            names = ["cohort%05d" % i for i in range(pipe.cohort_.shape[0])]
            write_vector_table("ark:" + os.path.join(tmp, "cohort.ark"), names, pipe.cohort_)
            write_int32_table("ark,t:" + os.path.join(tmp, "cohort_num_utts.ark"), names,
                              [int(n) for n in pipe.cohort_counts_])
        if os.path.isdir(path):
            replace_directory(tmp, path.rstrip("/"))
        elif os.path.exists(path):
            raise KaldiError("Cannot write model directory %s: a file of that name exists"
                             % path)
        else:
            os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_card(path):
    card = {}
    name = os.path.join(path, "system.txt")
    try:
        with open(name) as f:
            for line in f:
                parts = line.split(None, 1)
                if parts:
                    card[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    except FileNotFoundError:
        raise KaldiError("%s has no system.txt, so it is not a model directory written by "
                         "train-pauc-auto: give the <model-dir-out> of train-pauc-auto (or "
                         "write one with pauc_backend.persist.auto_backend.write_model_dir); "
                         "a lone PLDA or metric is scored with score-plda-trials or "
                         "score-pauc-trials" % path) from None
    except OSError as err:
        raise KaldiError("Cannot read model directory %s: %s" % (path, err.strerror)) from None
    for key in ("system", "dim"):
        if key not in card:
            raise KaldiError("%s has no '%s' line: not a train-pauc-auto model (retrain with "
                             "train-pauc-auto)" % (name, key))
    return card


def read_model_dir(path):
    """The fitted AutoBackend stored in ``path`` (and its card as a dict)."""
    if not os.path.isdir(path):
        raise KaldiError("Model directory %s does not exist" % path)
    card = read_card(path)
    try:       # the keys of earlier versions ("cosine") read as today's
        systems = [canonical(name) for name in card["system"].split("+")]
    except ValueError as err:
        raise KaldiError("%s/system.txt: %s" % (path, err)) from None
    mean = np.asarray(read_vector(os.path.join(path, "mean.vec")), dtype=np.float32)
    affine = np.asarray(read_matrix(os.path.join(path, "transform.mat")), dtype=np.float32)
    if affine.ndim != 2 or affine.shape[1] != mean.size + 1:
        raise KaldiError("%s/transform.mat has shape %s, expected (d, %d) for mean.vec of "
                         "dimension %d" % (path, affine.shape, mean.size + 1, mean.size))
    plda = dplda = plda_adapt = None
    bases = {base_system(s) for s in systems}
    if any(system(b).needs_plda and not system(b).needs_adapt for b in bases):
        plda = _read_plda(path, "plda", affine.shape[0])
    if any(system(b).needs_adapt for b in bases):
        plda_adapt = _read_plda(path, "plda_adapt", affine.shape[0])
    if "dplda" in bases:
        D = np.asarray(read_matrix(os.path.join(path, "dplda")), dtype=np.float64)
        d = affine.shape[0]
        if D.shape != (3 * d + 1, d) or not np.all(np.isfinite(D)):
            raise KaldiError("%s/dplda is not a finite %d x %d matrix" % (path, 3 * d + 1, d))
        dplda = DiscriminativePLDA.from_params(D[:d], D[d:2 * d], D[2 * d:3 * d], D[3 * d, 0])
    metrics = {}
    for name in sorted(bases):
        if system(name).head == "metric":
            M = np.asarray(read_matrix(os.path.join(path, "metric_" + name)), dtype=np.float64)
            if M.shape != (affine.shape[0], affine.shape[0]) or not np.all(np.isfinite(M)):
                raise KaldiError("%s/metric_%s is not a finite %d x %d matrix"
                                 % (path, name, affine.shape[0], affine.shape[0]))
            metrics[name] = M
    fusion = read_calibration(os.path.join(path, "fusion"))
    cohort = counts = None
    if any(":" in s for s in systems):
        names, cohort = read_vector_table("ark:" + os.path.join(path, "cohort.ark"))
        table = read_int32_table("ark:" + os.path.join(path, "cohort_num_utts.ark"))
        if len(names) == 0 or cohort.shape[1] != mean.size or set(table) != set(names):
            raise KaldiError("%s/cohort.ark and cohort_num_utts.ark do not match the model"
                             % path)
        counts = np.array([table[n] for n in names])
    try:
        top_n = int(card.get("asnorm_top_n", 100))
        pipe = BackendPipeline.from_parts(systems, mean, affine, plda, metrics, cohort, counts,
                                          top_n, dplda, plda_adapt)
        if card.get("lda_dim") == "none":
            pipe.lda_dim = 0
        model = AutoBackend.from_parts(pipe, fusion, mean.size)
    except ValueError as err:
        raise KaldiError("Model directory %s: %s" % (path, err)) from None
    model.domain_ = _read_domain(path, mean.size)
    return model, card


def _read_plda(path, name, dim):
    plda = PLDA.from_params(*read_plda(os.path.join(path, name)))
    if plda.dim != dim:
        raise KaldiError("%s/%s has dimension %d but the LDA outputs %d"
                         % (path, name, plda.dim, dim))
    return plda


def _read_domain(path, dim):
    """The stored TrainingDomain, or None in a directory written before they were stored."""
    names = [os.path.join(path, n) for n in ("domain_mean.vec", "domain_whitener.mat")]
    if not all(os.path.exists(n) for n in names):
        return None
    mean = np.asarray(read_vector(names[0]), dtype=np.float64)
    whitener = np.asarray(read_matrix(names[1]), dtype=np.float64)
    if (mean.shape != (dim,) or whitener.ndim != 2 or whitener.shape[1] != dim
            or not np.all(np.isfinite(whitener)) or not np.all(np.isfinite(mean))):
        raise KaldiError("%s/domain_mean.vec and domain_whitener.mat do not fit vectors of "
                         "dimension %d" % (path, dim))
    return TrainingDomain.from_params(mean, whitener)
