"""pAUCMetric (auto): a back-end chosen by cross-fitting on the training speakers alone.

The paper tunes nothing automatically (Section VII leaves it to future work) and its best
preprocessing differs by corpus. Here the training speakers are split into K folds
(seeded); for each fold the WHOLE back-end (mean, LDA, PLDA, the pAUCMetrics; see
models.backend_pipeline) is retrained on the other folds and scores trials among the held-out
speakers, built like the evaluation's (models.crossfit). Every candidate is then rated by its
mean held-out pAUC[alpha, beta] over the folds (the paper's criterion, eq. 5; EER and
minDCF(0.01) are reported beside it):

* each single system (cosine, PLDA, pAUCMetric length-norm, pAUCMetric PLDA-latent) at each
  candidate LDA dimension (capped by the smallest fold's training speakers - 1 and the vector
  dimension);
* linear fusions of two or more of them (BOSARIS LinearFusion, models.calibration), whose
  weights are themselves cross-fitted: the fusion scoring fold k is trained on the held-out
  scores of the other folds, so its figure is as honest as a single system's.

Two cost/variance controls: with ``lda_selection="cheap"`` (default) the LDA dimensions are
compared with the cheap systems (PLDA, cosine) only and the metrics are cross-fitted at the
best of them; ``n_jobs`` runs the folds in forked processes (each fold is seeded, so the result
does not depend on it). A member ``system:as`` is the system after AS-norm against the
training speakers' means (models.backend_pipeline).

The winner is retrained on all training speakers; its fusion (or, for one system, affine
calibration) weights are learned on the pooled held-out scores of all folds. ``score``
returns those fused/calibrated scores.
"""

import itertools

import numpy as np

from pauc_backend.models.backend_pipeline import SYSTEMS, BackendPipeline, base_system
from pauc_backend.models.calibration import LinearFusion, SeparableScoresError
from pauc_backend.models.crossfit import HeldOutTrials, speaker_folds, trial_figures

_BASE_FUSIONS = ("plda+pauc_lnorm", "plda+pauc_latent", "pauc_lnorm+pauc_latent",
                 "plda+pauc_lnorm+pauc_latent", "cosine+plda+pauc_lnorm+pauc_latent")


def _with_asnorm(name):
    return "+".join(part + ":as" for part in name.split("+"))


DEFAULT_CANDIDATES = (("plda", "cosine", "pauc_lnorm", "pauc_latent") + _BASE_FUSIONS
                      + ("plda:as", "cosine:as", "pauc_lnorm:as", "pauc_latent:as")
                      + tuple(_with_asnorm(f) for f in _BASE_FUSIONS)
                      + ("plda+pauc_lnorm+pauc_latent+plda:as+pauc_lnorm:as+pauc_latent:as",))


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


class AutoBackend:
    """Cross-fitted choice of back-end (see the module doc); scikit-learn style.

    lda_dims: candidate LDA dimensions (each capped as described; duplicates after capping
        are tried once). candidates: system names or '+'-joined fusions. enroll_utts: 0 for
        utterance-vs-utterance held-out trials, N for enrollment by the mean of N vectors.
    fusion_prior / fusion_regularization: LinearFusion's prior and L2 penalty.
    log: a callable taking one line, or None.
    max_trials: held-out trials per fold at most (None: all); beyond it the targets are kept
        and the non-targets sampled in per-speaker quotas (models.crossfit, which states the
        variance this adds to the held-out pAUC).
    """

    def __init__(self, lda_dims=(100, 150, 200), candidates=DEFAULT_CANDIDATES, num_folds=5,
                 enroll_utts=0, alpha=0.0, beta=0.01, metric_params=None, fusion_prior=0.01,
                 fusion_regularization=1e-6, max_utts_per_speaker=None,
                 max_fusion_trials=300000, lda_selection="cheap", asnorm_top_n=100, n_jobs=1,
                 random_state=0, log=None, max_trials=3000000):
        self.lda_dims = lda_dims
        self.candidates = candidates
        self.num_folds = num_folds
        self.enroll_utts = enroll_utts
        self.alpha = alpha
        self.beta = beta
        self.metric_params = metric_params
        self.fusion_prior = fusion_prior
        self.fusion_regularization = fusion_regularization
        self.max_utts_per_speaker = max_utts_per_speaker
        self.max_fusion_trials = max_fusion_trials
        self.lda_selection = lda_selection
        self.asnorm_top_n = asnorm_top_n
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.log = log
        self.max_trials = max_trials

    # -- helpers that tests may override -----------------------------------------------------
    def _make_pipeline(self, lda_dim, systems, seed):
        return BackendPipeline(lda_dim=lda_dim, systems=systems,
                               metric_params=self.metric_params, alpha=self.alpha,
                               beta=self.beta, asnorm_top_n=self.asnorm_top_n,
                               random_state=seed)

    def _log(self, message):
        if self.log is not None:
            self.log(message)

    def _fusion(self):
        return LinearFusion(prior=self.fusion_prior, regularization=self.fusion_regularization)

    def _fit_fusion(self, scores, labels):
        """LinearFusion on held-out scores; beyond ``max_fusion_trials`` the non-targets are
        subsampled (seeded). The objective weights each class by 1/count, so a uniform
        subsample of one class leaves it unbiased."""
        limit = self.max_fusion_trials
        if limit and labels.size > limit:
            non = np.flatnonzero(~labels)
            keep_non = max(1, int(limit) - int(labels.sum()))
            if keep_non < non.size:
                rng = np.random.default_rng(self.random_state + 7)
                rows = np.sort(np.concatenate([np.flatnonzero(labels),
                                               rng.choice(non, keep_non, replace=False)]))
                scores, labels = scores[rows], labels[rows]
        return self._fusion().fit(scores, labels)

    # -- fitting -------------------------------------------------------------------------------
    def _check(self, X, y, groups):
        X = np.asarray(X, dtype=np.float32)
        y = np.asarray(y)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError("expected a non-empty 2-D array of vectors, got shape %s"
                             % (X.shape,))
        if y.shape != (X.shape[0],):
            raise ValueError("%d vectors but %d speaker labels" % (X.shape[0], y.size))
        if not np.all(np.isfinite(X)):
            raise ValueError("vector %d contains NaN or Inf"
                             % int(np.flatnonzero(~np.all(np.isfinite(X), axis=1))[0]))
        if groups is not None and np.asarray(groups).shape != y.shape:
            raise ValueError("groups must have one entry per vector")
        if int(self.enroll_utts) < 0:
            raise ValueError("enroll_utts must be >= 0 (got %d)" % self.enroll_utts)
        if not 0.0 <= self.alpha < self.beta <= 1.0:
            raise ValueError("need 0 <= alpha < beta <= 1 (got %g, %g)" % (self.alpha,
                                                                           self.beta))
        if not len(self.lda_dims) or min(int(d) for d in self.lda_dims) < 1:
            raise ValueError("lda_dims must be a non-empty list of positive dimensions")
        names = list(self.candidates)
        if not names:
            raise ValueError("no candidate systems")
        return X, y, {name: parse_candidate(name) for name in names}

    def fit(self, X, y, groups=None):
        """Cross-fit every candidate on raw training vectors X (n, D) with speaker labels y,
        choose the best by held-out pAUC[alpha, beta], retrain it on all speakers."""
        X, y, members = self._check(X, y, groups)
        needed = tuple(dict.fromkeys(m for mem in members.values() for m in mem))
        speakers, fold_of = speaker_folds(y, self.num_folds, self.random_state)
        spk_index = np.searchsorted(speakers, y)
        vec_fold = fold_of[spk_index]
        fold_train_spk = [int(np.count_nonzero(fold_of != k)) for k in range(self.num_folds)]
        cap = min(X.shape[1], min(fold_train_spk) - 1)
        dims = sorted({min(int(d), cap) for d in self.lda_dims})
        if cap < 1:
            raise ValueError("too few training speakers for LDA")
        if any(int(d) > cap for d in self.lda_dims):
            self._log("LDA dimensions capped at %d (vector dimension %d; the smallest fold "
                      "trains on %d speakers)" % (cap, X.shape[1], min(fold_train_spk)))

        # Held-out trials of each fold (independent of the LDA dimension).
        trials = []
        for k in range(self.num_folds):
            rows = np.flatnonzero(vec_fold == k)
            t = HeldOutTrials(y, rows, int(self.enroll_utts), groups,
                              self.max_utts_per_speaker, self.random_state + 1000 + k,
                              max_trials=self.max_trials)
            if t.num_target < 1 or t.num_nontarget < 1:
                raise ValueError(
                    "fold %d of %d has %d target and %d non-target held-out trials: too few "
                    "speakers or vectors per speaker (each held-out speaker needs > %d "
                    "vectors); use fewer folds" % (k + 1, self.num_folds, t.num_target,
                                                   t.num_nontarget, max(1, self.enroll_utts)))
            trials.append(t)
        self._log("Cross-fitting: %d speakers in %d folds, held-out trials per fold: %s"
                  % (speakers.size, self.num_folds, ", ".join(
                      "%d (%d target%s)" % (t.is_target.size, t.num_target,
                                            ", sampled" if t.sampled else "")
                      for t in trials)))

        # Held-out scores: (fold, dim) -> {system: column}. With lda_selection="cheap" the
        # dimensions are first compared with the cheap systems (PLDA, cosine) only; the
        # metrics are then cross-fitted at the best dimension alone.
        self.fold_scores_ = {}
        cheap = tuple(s for s in needed if base_system(s) in ("plda", "cosine"))
        if self.lda_selection == "cheap" and len(dims) > 1 and len(cheap) < len(needed):
            cheap = cheap or ("plda",)
            self._cross_fit(X, y, vec_fold, trials, dims, cheap)
            rated = self._rate_all({c: (c,) for c in cheap}, dims, trials, quiet=True)
            best_dim = max(rated, key=lambda r: r["pauc"])["lda_dim"]
            self._log("LDA %d has the best held-out pAUC of %s; the metrics are cross-fitted "
                      "there" % (best_dim, "/".join(cheap)))
            self._cross_fit(X, y, vec_fold, trials, [best_dim], needed)
        elif self.lda_selection not in ("cheap", "all"):
            raise ValueError("lda_selection must be 'cheap' or 'all' (got %r)"
                             % self.lda_selection)
        else:
            self._cross_fit(X, y, vec_fold, trials, dims, needed)
        self.cv_results_ = self._rate_all(members, dims, trials)
        if not self.cv_results_:
            raise ValueError("no candidate could be rated")
        best = max(range(len(self.cv_results_)),
                   key=lambda i: (self.cv_results_[i]["pauc"], -i))
        self.chosen_ = dict(self.cv_results_[best])
        name, dim = self.chosen_["candidate"], self.chosen_["lda_dim"]
        self.members_ = members[name]
        self.lda_dim_ = dim
        self._log("Chose %s with LDA %d: held-out pAUC[%g,%g] %.4f, EER %.2f%%, "
                  "minDCF(0.01) %.4f" % (name, dim, self.alpha, self.beta,
                                         self.chosen_["pauc"], 100 * self.chosen_["eer"],
                                         self.chosen_["min_dcf"]))

        # Fusion/calibration weights on all held-out scores, then retrain on everything.
        pooled = np.concatenate([self._columns(k, dim, self.members_)
                                 for k in range(self.num_folds)])
        self.heldout_labels_ = [t.is_target for t in trials]
        labels = np.concatenate(self.heldout_labels_)
        self.fusion_ = self._fit_fusion(pooled, labels)
        self.pipeline_ = self._make_pipeline(dim, self.members_, self.random_state)
        self.pipeline_.fit(X, y, n_jobs=self.n_jobs)
        self.n_features_in_ = X.shape[1]
        return self

    def _columns(self, k, dim, mem):
        return np.stack([self.fold_scores_[k, dim][m] for m in mem], axis=1)

    def _cross_fit(self, X, y, vec_fold, trials, dims, systems):
        """Fill fold_scores_ for ``systems`` at ``dims`` (in n_jobs processes if > 1)."""
        tasks = [(dim, k) for dim in dims for k in range(self.num_folds)]
        if int(self.n_jobs) > 1 and len(tasks) > 1:
            from pauc_backend.workers import fork_pool
            global _SHARED
            _SHARED = (self, X, y, vec_fold, trials, systems)
            try:
                with fork_pool(int(self.n_jobs)) as pool:
                    results = pool.map(_fold_task, tasks)
            finally:
                _SHARED = None
        else:
            results = [self._fold_scores(X, y, vec_fold, trials, systems, dim, k)
                       for dim, k in tasks]
        for (dim, k), scores in zip(tasks, results):
            self.fold_scores_.setdefault((k, dim), {}).update(scores)
        for dim in dims:
            self._log("Cross-fitted %s at LDA %d on %d folds"
                      % (", ".join(systems), dim, self.num_folds))

    def _fold_scores(self, X, y, vec_fold, trials, systems, dim, k):
        """Train on every fold but k, score fold k's held-out trials: {system: scores}."""
        train_rows = np.flatnonzero(vec_fold != k)
        pipe = self._make_pipeline(dim, systems, self.random_state + k)
        pipe.fit(X[train_rows], y[train_rows])
        t = trials[k]
        fe = pipe.features(t.enroll_vectors(X), t.num_utts)
        ft = pipe.features(X[t.test_rows], 1)
        scores = pipe.score(fe, ft, t.enroll_index, t.test_index, t.num_utts)
        return {system: scores[:, j] for j, system in enumerate(systems)}

    def _rate_all(self, members, dims, trials, quiet=False):
        """Held-out figures of every candidate whose systems were cross-fitted at a dim."""
        results = []
        for dim in dims:
            have = self.fold_scores_.get((0, dim), {})
            for name, mem in members.items():
                if not all(m in have for m in mem):
                    continue
                per_fold = self._rate(dim, mem, trials)
                if per_fold is None:
                    self._log("Candidate %s, LDA %d: fusion failed, skipped" % (name, dim))
                    continue
                row = {"candidate": name, "lda_dim": dim, "folds": per_fold}
                for key in ("pauc", "pauc_001", "eer", "min_dcf"):
                    row[key] = float(np.mean([f[key] for f in per_fold]))
                results.append(row)
                if quiet:
                    continue
                extra = ("" if (self.alpha, self.beta) == (0.0, 0.01)
                         else "  pAUC[0,0.01] %.4f" % row["pauc_001"])
                self._log("Held-out %-36s LDA %3d: pAUC[%g,%g] %.4f  EER %.2f%%  "
                          "minDCF(0.01) %.4f%s"
                          % (name, dim, self.alpha, self.beta, row["pauc"], 100 * row["eer"],
                             row["min_dcf"], extra))
        return results

    def _rate(self, dim, mem, trials):
        """Per-fold held-out figures of the candidate with member systems ``mem``."""
        out = []
        for k, t in enumerate(trials):
            scores = self._columns(k, dim, mem)
            if len(mem) > 1:
                others = [j for j in range(len(trials)) if j != k]
                train = np.concatenate([self._columns(j, dim, mem) for j in others])
                labels = np.concatenate([trials[j].is_target for j in others])
                try:
                    fused = self._fit_fusion(train, labels).transform(scores)
                except (SeparableScoresError, ValueError):
                    return None
            else:
                fused = scores[:, 0]
            out.append(trial_figures(fused, t.is_target, self.alpha, self.beta))
        return out

    @classmethod
    def from_parts(cls, pipeline, fusion, n_features_in):
        """A fitted back-end from a stored pipeline (BackendPipeline.from_parts) and fusion."""
        model = cls()
        model.pipeline_ = pipeline
        model.members_ = tuple(pipeline.systems)
        model.lda_dim_ = pipeline.lda_dim
        model.fusion_ = fusion
        model.n_features_in_ = int(n_features_in)
        if fusion.weights_.size != len(model.members_):
            raise ValueError("the fusion has %d weights for %d systems"
                             % (fusion.weights_.size, len(model.members_)))
        return model

    # -- scoring -------------------------------------------------------------------------------
    def features(self, X, num_utts=1):
        """What ``score_features`` needs of raw vectors X (rows averaged over num_utts)."""
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError("vectors have dimension %s but the back-end was trained on %d"
                             % (X.shape[1:] or "?", self.n_features_in_))
        return self.pipeline_.features(X, num_utts)

    def score_features(self, enroll_feats, test_feats, enroll_rows, test_rows, num_utts=1):
        """Fused/calibrated scores of trials (enroll_rows[k], test_rows[k]); num_utts is the
        count of vectors averaged into each enrollment row (scalar or per row)."""
        raw = self.pipeline_.score(enroll_feats, test_feats, enroll_rows, test_rows, num_utts)
        return self.fusion_.transform(raw)

    def score(self, enroll, test, enroll_rows, test_rows, num_utts=1):
        """Scores of trials between raw enrollment vectors (speaker means of num_utts raw
        vectors, or single vectors) and raw test vectors; higher = same speaker."""
        return self.score_features(self.features(enroll, num_utts), self.features(test, 1),
                                   enroll_rows, test_rows, num_utts)

    def describe(self):
        """A short text description of the chosen system and its cross-fitted figures."""
        lines = ["system %s" % "+".join(self.members_), "lda_dim %d" % self.lda_dim_,
                 "fusion_weights %s" % " ".join("%.6g" % w for w in self.fusion_.weights_),
                 "fusion_offset %.6g" % self.fusion_.offset_,
                 "alpha %g" % self.alpha, "beta %g" % self.beta,
                 "num_folds %d" % self.num_folds, "enroll_utts %d" % self.enroll_utts,
                 "seed %d" % self.random_state,
                 "asnorm_top_n %d" % self.pipeline_.asnorm_top_n]
        for key in ("pauc", "pauc_001", "eer", "min_dcf"):
            lines.append("heldout_%s %.6g" % (key, self.chosen_[key]))
        return "\n".join(lines) + "\n"


_SHARED = None


def _fold_task(task):
    """One (dim, fold) of AutoBackend._cross_fit in a forked worker process."""
    model, X, y, vec_fold, trials, systems = _SHARED
    dim, k = task
    return model._fold_scores(X, y, vec_fold, trials, systems, dim, k)


def all_fusions(systems=SYSTEMS):
    """Every single system and every fusion of two or more (for exhaustive searches)."""
    out = []
    for r in range(1, len(systems) + 1):
        out += ["+".join(c) for c in itertools.combinations(systems, r)]
    return out
