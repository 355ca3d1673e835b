"""An alias: ``AutoBackend`` lives in the package models.auto (models/auto/backend.py).

This module keeps the earlier public import path working,
``from pauc_backend.models.auto_backend import AutoBackend``; new code imports
``from pauc_backend.models.auto import AutoBackend``.
"""

from pauc_backend.models.auto.backend import AutoBackend

__all__ = ["AutoBackend"]
