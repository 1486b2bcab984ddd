"""Python values as Amudai ``AnyValue`` messages, and the ``repeated NameValuePair`` fields
of properties: what :mod:`.amudai` writes for shard, stripe, index and artifact properties.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from ..generated import amudai_common_pb2 as cpb

__all__ = ["TICKS_EPOCH", "AnyValueBytes", "encode_any_value"]

TICKS_EPOCH = datetime(1, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class AnyValueBytes:
    """An already-serialized ``AnyValue`` message, embedded as it is (e.g. built elsewhere)."""

    data: bytes


# --- AnyValue ----------------------------------------------------------------------------


def _ticks(value: datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - TICKS_EPOCH
    return (delta.days * 86_400 + delta.seconds) * 10_000_000 + delta.microseconds * 10


def _span_ticks(value: timedelta) -> int:
    return (value.days * 86_400 + value.seconds) * 10_000_000 + value.microseconds * 10


def encode_any_value(value: Any) -> cpb.AnyValue:
    """A Python value as an ``AnyValue`` message.

    None → null, bool, int (i64 when it fits, else u64), float, str, bytes, datetime,
    timedelta, list/tuple → list, dict → struct (names as keys).
    """
    out = cpb.AnyValue()
    if value is None:
        out.null_value.SetInParent()
    elif isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        if -(2**63) <= value < 2**63:
            out.i64_value = value
        else:
            out.u64_value = value
    elif isinstance(value, float):
        out.double_value = value
    elif isinstance(value, str):
        out.string_value = value
    elif isinstance(value, (bytes, bytearray)):
        out.bytes_value = bytes(value)
    elif isinstance(value, datetime):
        out.datetime_value.ticks = _ticks(value)
    elif isinstance(value, timedelta):
        out.timespan_value.ticks = _span_ticks(value)
    elif isinstance(value, uuid.UUID):
        out.bytes_value = value.bytes
    elif isinstance(value, (list, tuple)):
        out.list_value.SetInParent()
        for item in value:
            out.list_value.elements.append(encode_any_value(item))
    elif isinstance(value, Mapping):
        out.struct_value.SetInParent()
        for k, v in value.items():
            out.struct_value.fields.append(cpb.NameValuePair(name=str(k),
                                                             value=encode_any_value(v)))
    else:
        raise TypeError(f"cannot store {type(value).__name__} as an AnyValue")
    return out


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _len_field(tag: int, payload: bytes) -> bytes:
    return _varint(tag << 3 | 2) + _varint(len(payload)) + payload


def _name_values(items: Mapping[str, Any] | None, tag: int) -> bytes:
    """``repeated NameValuePair`` field ``tag``, serialized (AnyValueBytes kept as they are)."""
    out = bytearray()
    for name, value in (items or {}).items():
        raw = value.data if isinstance(value, AnyValueBytes) else \
            encode_any_value(value).SerializeToString(deterministic=True)
        pair = _len_field(1, name.encode("utf-8")) + _len_field(2, raw)
        out += _len_field(tag, pair)
    return bytes(out)


def _ser(msg: Any) -> bytes:
    return cast(bytes, msg.SerializeToString(deterministic=True))


def _pair_messages(items: Mapping[str, Any] | None) -> list[cpb.NameValuePair]:
    out = []
    for name, value in (items or {}).items():
        any_value = cpb.AnyValue.FromString(value.data) if isinstance(value, AnyValueBytes) \
            else encode_any_value(value)
        out.append(cpb.NameValuePair(name=name, value=any_value))
    return out
