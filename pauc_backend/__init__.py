"""pauc-backend: Kaldi-compatible speaker-verification back-ends (pAUCMetric, PLDA, cosine)."""

__version__ = "0.1.0"
