"""Object trees to JSON: bytes as hex, stable key order, numbers as numbers."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import uuid
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
    if isinstance(obj, enum.Enum):
        return obj.name
    if isinstance(obj, (datetime.datetime, datetime.date, datetime.time)):
        return obj.isoformat()
    if isinstance(obj, datetime.timedelta):
        return obj.total_seconds()
    if isinstance(obj, uuid.UUID):
        return str(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)  # JSON has no NaN/Infinity
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy array or scalar
        return to_jsonable(obj.tolist())
    return obj


def to_json(obj: Any, indent: int | None = 2) -> str:
    """JSON text of ``obj`` (see :func:`to_jsonable`)."""
    return json.dumps(to_jsonable(obj), indent=indent, sort_keys=False)
