"""The one exception type every layer raises for a user-facing failure.

The CLI layer turns it into a single Kaldi-style ``ERROR (...) message`` line and a non-zero exit,
so messages must name the file or key and the problem, e.g.
``Failed to read vector from exp/train.ark at byte 1234: truncated (expected 2048 bytes, got 17)``.
"""


class KaldiError(Exception):
    """A failure caused by the user's input or environment (bad file, bad option, bad data)."""
