"""Object trees to JSON (bytes as hex, stable key order, numbers as numbers) and to text."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import sys
from typing import Any

__all__ = ["to_json", "to_jsonable", "to_text"]


def to_jsonable(obj: Any) -> Any:
    """Convert dataclasses, bytes, tuples and numpy scalars into JSON-ready values.

    Values JSON has no type for become strings: a ``Decimal`` its exact positional text
    (``"-12.3400"``), a datetime its ISO text, a UUID its canonical form, NaN and infinities
    ``"nan"``/``"inf"``/``"-inf"``. Integers stay numbers, however large (JSON's grammar has
    no limit; Python writes them exactly).

    Bytes become hex, except a bytes subclass with its own ``str()`` (such as an MDB
    ``XetHash``, whose display hex byte-reverses each 8-byte group): that text is its identity.
    """
    if hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, (bytes, bytearray, memoryview)):
        if type(obj).__str__ not in (bytes.__str__, bytearray.__str__, memoryview.__str__):
            return str(obj)
        return bytes(obj).hex()
    if isinstance(obj, enum.Enum):
        return obj.name
    # datetime and uuid values can only exist once their modules are loaded: look them up
    # there instead of importing them (they cost start-up time for every command)
    dt = sys.modules.get("datetime")
    if dt is not None:
        if isinstance(obj, (dt.datetime, dt.date, dt.time)):
            return obj.isoformat()
        if isinstance(obj, dt.timedelta):
            return obj.total_seconds()
    uu = sys.modules.get("uuid")
    if uu is not None and isinstance(obj, uu.UUID):
        return str(obj)
    dec = sys.modules.get("decimal")
    if dec is not None and isinstance(obj, dec.Decimal):
        # JSON has no decimal type: the exact value as text, positional ("12.3400")
        return format(obj, "f") if obj.is_finite() else str(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)  # JSON has no NaN/Infinity
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy array or scalar
        return to_jsonable(obj.tolist())
    return obj


def to_json(obj: Any, indent: int | None = 2) -> str:
    """JSON text of ``obj`` (see :func:`to_jsonable`)."""
    return json.dumps(to_jsonable(obj), indent=indent, sort_keys=False)


def to_text(obj: Any, *, max_items: int = 50, width: int = 100) -> str:
    """Readable ``key: value`` lines of a summary (what ``shardkit info`` prints).

    Values are first made JSON-ready (:func:`to_jsonable`: bytes as hex, dates in ISO form),
    then: nested mappings give dotted keys (``header.codec: zlib``); a list of plain values
    prints on its line, comma-separated (``size: 100, 90, 40``), or one ``- item`` per line
    when it is long; a list of mappings gives one block per item (``scales[0].key: 8_8_40``);
    ``None`` prints as ``-`` and an empty list or mapping as ``(none)``. Lists longer than
    ``max_items`` (lists of mappings: a fifth of it) are cut, saying how many were left out.
    """
    lines: list[str] = []
    _text_lines("", to_jsonable(obj), lines, max_items, width)
    return "\n".join(lines)


def _scalar(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        plain = value and value.isprintable() and value == value.strip()
        return value if plain else json.dumps(value, ensure_ascii=False)
    return str(value)


def _is_plain(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _text_lines(key: str, value: Any, out: list[str], max_items: int, width: int) -> None:
    label = f"{key}: " if key else ""
    if isinstance(value, dict):
        if not value:
            out.append(f"{label}(none)")
        for k, v in value.items():
            _text_lines(f"{key}.{k}" if key else str(k), v, out, max_items, width)
        return
    if not isinstance(value, list):
        out.append(label + _scalar(value))
        return
    if not value:
        out.append(f"{label}(none)")
        return
    plain = all(_is_plain(v) for v in value)
    limit = max_items if plain else max(1, max_items // 5)
    shown, rest = value[:limit], len(value) - limit
    if plain:
        same_kind = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value) \
            or all(isinstance(v, str) and ", " not in v for v in value)
        inline = ", ".join(_scalar(v) for v in value) if same_kind else \
            json.dumps(value, ensure_ascii=False)
        if len(label) + len(inline) <= width:
            out.append(label + inline)
            return
        out.append(f"{key}:")
        out.extend(f"  - {_scalar(v)}" for v in shown)
    else:
        for i, v in enumerate(shown):
            _text_lines(f"{key}[{i}]", v, out, max_items, width)
    if rest > 0:
        out.append(f"  ... {rest} more (--json shows all)" if key else f"... {rest} more")
