"""Amudai value conversions: DateTime ticks and ``AnyValue`` messages as Python values.

Errors are :class:`~shardkit.errors.ShardkitError` subclasses carrying the ``offset`` and
``field`` the caller passes; recursion (AnyValue) is depth-limited.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ...errors import LayoutError, LimitExceededError, UnsupportedVersionError

__all__ = ["TICKS_PER_SECOND", "any_value_to_python", "ticks_to_datetime"]

TICKS_PER_SECOND = 10_000_000
_DT_EPOCH = datetime(1, 1, 1)
_MAX_TICKS = (datetime(9999, 12, 31, 23, 59, 59, 999999) - _DT_EPOCH) // timedelta(
    microseconds=1) * 10 + 9


def ticks_to_datetime(ticks: int, *, base: int | None = None, field: str | None = None
                      ) -> datetime:
    """DateTime ticks (100 ns since 0001-01-01) as a naive UTC ``datetime`` (100 ns truncated)."""
    if not 0 <= ticks <= _MAX_TICKS:
        raise LayoutError(f"DateTime ticks {ticks} are outside 0001-01-01..9999-12-31",
                          offset=base, field=field)
    return _DT_EPOCH + timedelta(microseconds=ticks // 10)


def any_value_to_python(value: Any, max_depth: int = 64, *, field: str = "",
                        offset: int | None = None, _depth: int = 0) -> Any:
    """An ``AnyValue`` message as a Python value.

    null → None, bool, int, float, str, bytes (bytes and decimal), datetime, timedelta, list,
    dict (struct; names as keys), DataRef → ``{"url": ..., "start": ..., "end": ...}``.

    Raises:
        LimitExceededError: Lists/structs nested deeper than ``max_depth``.
    """
    if _depth > max_depth:
        raise LimitExceededError(f"AnyValue nested deeper than {max_depth} levels",
                                 offset=offset, field=field)
    kind = value.WhichOneof("kind")
    if kind is None or kind == "null_value":
        return None
    if kind in ("bool_value", "u64_value", "i64_value", "double_value", "string_value"):
        return getattr(value, kind)
    if kind in ("bytes_value", "decimal_value"):
        return bytes(getattr(value, kind))
    if kind == "datetime_value":
        return ticks_to_datetime(value.datetime_value.ticks, base=offset, field=field)
    if kind == "timespan_value":
        ticks = value.timespan_value.ticks
        if ticks >= 2**63:  # fixed64 on the wire; a negative span wraps
            ticks -= 2**64
        try:
            return timedelta(microseconds=ticks // 10)
        except OverflowError as exc:
            raise LayoutError(f"TimeSpan ticks {ticks} out of range", offset=offset,
                              field=field) from exc
    if kind == "list_value":
        return [any_value_to_python(v, max_depth, field=field, offset=offset, _depth=_depth + 1)
                for v in value.list_value.elements]
    if kind == "struct_value":
        return {f.name: any_value_to_python(f.value, max_depth, field=field, offset=offset,
                                            _depth=_depth + 1)
                for f in value.struct_value.fields}
    if kind == "data_ref":
        ref = value.data_ref
        return {"url": ref.url, "start": ref.range.start, "end": ref.range.end}
    raise UnsupportedVersionError(f"AnyValue kind {kind}", offset=offset, field=field)
