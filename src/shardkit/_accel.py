"""The optional C accelerators: each imported where it is used, through :func:`accelerator`.

``setup.py`` builds them where a C compiler is found; each has a pure-Python (or numpy) twin
that gives the same answers, errors included (the differential tests and fuzz targets compare
them). Setting ``SHARDKIT_NO_NATIVE`` runs the twins, for tests and comparisons.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

__all__ = ["accelerator"]


def accelerator(name: str) -> Any:
    """Module ``name`` (a C extension of shardkit), or None: not built here, or
    ``SHARDKIT_NO_NATIVE`` set. Callers keep their pure-Python path for None."""
    if os.environ.get("SHARDKIT_NO_NATIVE"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - a build without a C compiler
        return None
