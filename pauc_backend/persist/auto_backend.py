"""The model directory of train-pauc-auto / score-pauc-auto: Kaldi-format pieces + a text card.

    system.txt     what was chosen and its cross-fitted (held-out) figures, "key value" lines
    choice.txt     every candidate's figure on every source of evidence, one line each
                   (models.auto.choice.table_lines; plot-auto-choice draws it)
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
    fusion         <LinearCalibration> weights over the members' scores (apply-calibration);
                   with quality measures (models.auto.qmf) a QMF model of train-calibration's
                   form, naming its measures (duration, norm); system.txt then says
                   "quality_measures" and, for the norm, "quality_norm_median" (its unit)

The directory is written under a temporary name and renamed at the end, so a failure never
leaves a half-written model (an existing model directory is replaced only on success).

Reading (issue 36): every file is read by ``kaldi_io.regular_files.read_regular``, so it must
be a regular file (not a FIFO, a device, a directory or a symbolic link) under a cap, else one
ERROR names it: system.txt ``CARD_BYTES`` (1 MiB), each Kaldi object ``piece_bytes(dim)``
(32 bytes a value of the largest piece a model of its dimension holds, plus 64 KiB: 25 MB at
dimension 512), cohort.ark ``cohort_bytes(dim)`` (``MAX_COHORT`` = 2^18 speakers). A piece
holding NaN or infinity is an ERROR naming it when the model is read, not a non-finite score
later.
"""

import io
import os
import shutil

import numpy as np

from pauc_backend.persist.calibration import calibration_reader, write_calibration
from pauc_backend.errors import KaldiError
from pauc_backend.kaldi_io import codec
from pauc_backend.kaldi_io.archive import iter_archive, read_fv_buffer
from pauc_backend.kaldi_io.commit import (claimed, committed_at_once, make_temp_dir,
                                          remove_stale_temp_dirs, replace_directory)
from pauc_backend.kaldi_io import HOLDERS, write_matrix, write_plda
from pauc_backend.kaldi_io import write_int32_table, write_vector, write_vector_table
from pauc_backend.kaldi_io.objects import read_plda_obj
from pauc_backend.kaldi_io.regular_files import (check_directory, decode_text, parse_object,
                                                 read_regular)
from pauc_backend.models.auto import AutoBackend
from pauc_backend.models.auto.choice import table_lines
from pauc_backend.models.systems import base_system, canonical, system
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
    final = os.path.join(parent, os.path.basename(path.rstrip("/")))
    tmp = make_temp_dir(final)
    try:
        pipe = model.pipeline_
        with open(os.path.join(tmp, "system.txt"), "w") as f:
            f.write(model.describe())
            f.write("dim %d\n" % model.n_features_in_)
            for line in extra_lines:
                f.write(line.rstrip("\n") + "\n")
        if getattr(model, "choice_", None) is not None:
            with open(os.path.join(tmp, "choice.txt"), "w") as f:
                f.write("".join(line + "\n" for line in table_lines(model.choice_)))
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
    remove_stale_temp_dirs(final)      # what killed writers of it left: superseded now


# -- reading: every file is a regular file under a cap (kaldi_io.regular_files) -------------
CARD_BYTES = 1 << 20
"""The most bytes of system.txt (a few dozen short lines)."""
MAX_COHORT = 1 << 18
"""The most AS-norm cohort speakers a model directory may hold (VoxCeleb2 has 5,994)."""


def piece_bytes(dim):
    """The most bytes of one Kaldi object of a model of input dimension ``dim`` (mean.vec,
    transform.mat, plda, dplda, metric_*, domain_*, fusion): 32 bytes (one value in text form,
    with room) for each value of the largest piece, dplda's (3 dim + 1) x dim, plus 64 KiB."""
    return (64 << 10) + 32 * (3 * dim + 2) * (dim + 1)


def cohort_bytes(dim):
    """The most bytes of cohort.ark: MAX_COHORT binary records of ``dim`` floats (and a key of
    up to 64 bytes), as train-pauc-auto writes them."""
    return (64 << 10) + MAX_COHORT * (64 + 4 * dim)


def read_choice(path):
    """choice.txt of the model directory ``path`` (models.auto.choice.table_lines) as a list
    of dicts ("source", "candidate", "lda_dim", "pauc", "se", "eer", "min_dcf", "role": a
    set); one KaldiError naming the file and line of anything else."""
    check_directory(path, "Model directory")
    name = os.path.join(path, "choice.txt")
    try:
        data = read_regular(name, CARD_BYTES, "the evidence table of a model directory")
    except FileNotFoundError:
        raise KaldiError("%s has no choice.txt (a model of an older train-pauc-auto, or not "
                         "a model directory): retrain it with train-pauc-auto" % path) from None
    rows = []
    roles = {"chosen", "baseline", "rating"}
    text = decode_text(data, name, "the evidence table of a model directory")
    for number, line in enumerate(io.StringIO(text, newline=None), 1):
        fields = line.split()
        if not fields:
            continue
        try:
            if len(fields) != 8 or fields[0] not in ("heldout", "pseudo", "dev"):
                raise ValueError("expected 8 fields, the first heldout, pseudo or dev")
            values = [float(v) for v in fields[3:7]]
            role = set() if fields[7] == "-" else set(fields[7].split(","))
            if not role <= roles:
                raise ValueError("unknown role %r" % fields[7])
            if not np.isfinite(values[0]) or not np.isfinite(values[1]):
                raise ValueError("a pAUC or its SE is not a finite number")
        except ValueError as err:
            raise KaldiError("%s line %d: %s (%r)" % (name, number, err, line.strip()[:100]))
        rows.append({"source": fields[0], "candidate": fields[1], "lda_dim": fields[2],
                     "pauc": values[0], "se": values[1], "eer": values[2],
                     "min_dcf": values[3], "role": role})
    if not rows:
        raise KaldiError("%s holds no candidate" % name)
    return rows


def read_card(path):
    """system.txt of the model directory ``path`` as a dict ("key value" lines)."""
    name = os.path.join(path, "system.txt")
    try:
        data = read_regular(name, CARD_BYTES, "the card of a model directory")
    except FileNotFoundError:
        raise KaldiError("%s has no system.txt, so it is not a model directory written by "
                         "train-pauc-auto: give the <model-dir-out> of train-pauc-auto (or "
                         "write one with pauc_backend.persist.auto_backend.write_model_dir); "
                         "a lone PLDA or metric is scored with score-plda-trials or "
                         "score-pauc-trials" % path) from None
    card = {}
    for line in io.StringIO(decode_text(data, name, "the card of a model directory"),
                            newline=None):
        parts = line.split(None, 1)
        if parts:
            card[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    for key in ("system", "dim"):
        if key not in card:
            raise KaldiError("%s has no '%s' line: not a train-pauc-auto model (retrain with "
                             "train-pauc-auto)" % (name, key))
    if not (card["dim"].isdigit() and card["dim"].isascii() and 0 < int(card["dim"]) < 1 << 24):
        raise KaldiError("%s: the dimension '%s' (line 'dim') is not a positive integer"
                         % (name, card["dim"][:100]))
    return card


def _piece(path, name, reader_fn, limit, what="a piece of a model directory"):
    """The Kaldi object in the file ``name`` of the model directory ``path``."""
    full = os.path.join(path, name)
    try:
        data = read_regular(full, limit, what)
    except FileNotFoundError:
        raise KaldiError("Model directory %s has no %s, which its system needs (damaged or "
                         "incomplete: retrain with train-pauc-auto)" % (path, name)) from None
    return parse_object(data, full, reader_fn)


def _finite(path, name, values):
    values = np.asarray(values)
    if not np.all(np.isfinite(values)):
        raise KaldiError("%s/%s holds NaN or infinite values: the model directory is "
                         "damaged; retrain with train-pauc-auto" % (path, name))
    return values


def read_model_dir(path):
    """The fitted AutoBackend stored in ``path`` (and its card as a dict)."""
    check_directory(path, "Model directory")
    card = read_card(path)
    try:       # the keys of earlier versions ("cosine") read as today's
        systems = [canonical(name) for name in card["system"].split("+")]
    except ValueError as err:
        raise KaldiError("%s/system.txt: %s" % (path, err)) from None
    limit = piece_bytes(int(card["dim"]))
    mean = _finite(path, "mean.vec", np.asarray(
        _piece(path, "mean.vec", codec.read_vector_obj, limit), dtype=np.float32))
    affine = _finite(path, "transform.mat", np.asarray(
        _piece(path, "transform.mat", codec.read_matrix_obj, limit), dtype=np.float32))
    if mean.ndim != 1 or mean.size != int(card["dim"]):
        raise KaldiError("%s/mean.vec has dimension %d but system.txt says 'dim %s'"
                         % (path, mean.size, card["dim"]))
    if affine.ndim != 2 or affine.shape[1] != mean.size + 1:
        raise KaldiError("%s/transform.mat has shape %s, expected (d, %d) for mean.vec of "
                         "dimension %d" % (path, affine.shape, mean.size + 1, mean.size))
    plda = dplda = plda_adapt = None
    bases = {base_system(s) for s in systems}
    if any(system(b).needs_plda and not system(b).needs_adapt for b in bases):
        plda = _read_plda(path, "plda", affine.shape[0], limit)
    if any(system(b).needs_adapt for b in bases):
        plda_adapt = _read_plda(path, "plda_adapt", affine.shape[0], limit)
    if "dplda" in bases:
        D = np.asarray(_piece(path, "dplda", codec.read_matrix_obj, limit), dtype=np.float64)
        d = affine.shape[0]
        if D.shape != (3 * d + 1, d) or not np.all(np.isfinite(D)):
            raise KaldiError("%s/dplda is not a finite %d x %d matrix" % (path, 3 * d + 1, d))
        dplda = DiscriminativePLDA.from_params(D[:d], D[d:2 * d], D[2 * d:3 * d], D[3 * d, 0])
    metrics = {}
    for name in sorted(bases):
        if system(name).head == "metric":
            M = np.asarray(_piece(path, "metric_" + name, codec.read_matrix_obj, limit),
                           dtype=np.float64)
            if M.shape != (affine.shape[0], affine.shape[0]) or not np.all(np.isfinite(M)):
                raise KaldiError("%s/metric_%s is not a finite %d x %d matrix"
                                 % (path, name, affine.shape[0], affine.shape[0]))
            metrics[name] = M
    fusion = _piece(path, "fusion", calibration_reader(os.path.join(path, "fusion")), limit)
    cohort = counts = None
    if any(":" in s for s in systems):
        cohort, counts = _read_cohort(path, mean.size)
    median = None
    if "quality_norm_median" in card:
        try:
            median = float(card["quality_norm_median"])
        except ValueError:
            median = None
        if median is None or not (np.isfinite(median) and median > 0):
            raise KaldiError("%s/system.txt: quality_norm_median '%s' is not a positive number"
                             % (path, card["quality_norm_median"][:100]))
    try:
        top_n = int(card.get("asnorm_top_n", 100))
        pipe = BackendPipeline.from_parts(systems, mean, affine, plda, metrics, cohort, counts,
                                          top_n, dplda, plda_adapt)
        if card.get("lda_dim") == "none":
            pipe.lda_dim = 0
        model = AutoBackend.from_parts(pipe, fusion, mean.size, median)
    except ValueError as err:
        raise KaldiError("Model directory %s: %s" % (path, err)) from None
    model.domain_ = _read_domain(path, mean.size, limit)
    return model, card


def _read_plda(path, name, dim, limit):
    plda = PLDA.from_params(*_piece(path, name, read_plda_obj, limit))
    if plda.dim != dim:
        raise KaldiError("%s/%s has dimension %d but the LDA outputs %d"
                         % (path, name, plda.dim, dim))
    return plda


def _read_cohort(path, dim):
    """The AS-norm cohort (one raw vector per training speaker) and each one's count."""
    tables = []
    for name, limit in (("cohort.ark", cohort_bytes(dim)), ("cohort_num_utts.ark",
                                                            (64 << 10) + 64 * MAX_COHORT)):
        full = os.path.join(path, name)
        try:
            tables.append((full, read_regular(full, limit, "a piece of a model directory")))
        except FileNotFoundError:
            raise KaldiError("Model directory %s has no %s, which its system needs (damaged "
                             "or incomplete: retrain with train-pauc-auto)" % (path, name)) \
                from None
    names, cohort = read_fv_buffer(tables[0][1], 0, tables[0][0], False)
    table = {}
    for key, value, _ in iter_archive(tables[1][1], 0, tables[1][0], HOLDERS["int32"]):
        table[key] = value
    if len(names) == 0 or cohort.shape[1] != dim or set(table) != set(names) \
            or len(table) != len(names):
        raise KaldiError("%s/cohort.ark and cohort_num_utts.ark do not match the model"
                         % path)
    _finite(path, "cohort.ark", cohort)
    return cohort, np.array([table[n] for n in names])


def _read_domain(path, dim, limit):
    """The stored TrainingDomain, or None in a directory written before they were stored."""
    names = ("domain_mean.vec", "domain_whitener.mat")
    if not all(os.path.lexists(os.path.join(path, n)) for n in names):
        return None
    mean = _finite(path, names[0], np.asarray(
        _piece(path, names[0], codec.read_vector_obj, limit), dtype=np.float64))
    whitener = _finite(path, names[1], np.asarray(
        _piece(path, names[1], codec.read_matrix_obj, limit), dtype=np.float64))
    if mean.shape != (dim,) or whitener.ndim != 2 or whitener.shape[1] != dim:
        raise KaldiError("%s/domain_mean.vec and domain_whitener.mat do not fit vectors of "
                         "dimension %d" % (path, dim))
    return TrainingDomain.from_params(mean, whitener)
