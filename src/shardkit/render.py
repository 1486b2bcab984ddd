"""Object trees to JSON: bytes as hex, stable key order, numbers as numbers."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

__all__ = ["to_json", "to_jsonable"]


def to_jsonable(obj: Any) -> Any:
    """Convert dataclasses, bytes, tuples and numpy scalars into JSON-ready values."""
    if hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj).hex()
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalar
        return obj.item()
    return obj


def to_json(obj: Any, indent: int | None = 2) -> str:
    """JSON text of ``obj`` (see :func:`to_jsonable`)."""
    return json.dumps(to_jsonable(obj), indent=indent, sort_keys=False)
