"""render.to_json: every value a reader hands out becomes valid JSON."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import uuid

import numpy as np

from shardkit.render import to_json, to_jsonable, to_text


class Color(enum.Enum):
    RED = 1


@dataclasses.dataclass(frozen=True)
class Item:
    key: bytes
    when: datetime.datetime


def test_to_jsonable_values():
    when = datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.UTC)
    value = {
        "bytes": b"\x01\xff",
        "tuple": (1, 2),
        "enum": Color.RED,
        "when": when,
        "span": datetime.timedelta(seconds=90),
        "id": uuid.UUID(int=1),
        "nan": float("nan"),
        "array": np.arange(3, dtype=np.uint64),
        "scalar": np.int32(7),
        "item": Item(b"k", when),
    }
    assert to_jsonable(value) == {
        "bytes": "01ff",
        "tuple": [1, 2],
        "enum": "RED",
        "when": "2024-05-01T12:30:00+00:00",
        "span": 90.0,
        "id": "00000000-0000-0000-0000-000000000001",
        "nan": "nan",
        "array": [0, 1, 2],
        "scalar": 7,
        "item": {"key": "6b", "when": "2024-05-01T12:30:00+00:00"},
    }
    json.loads(to_json(value))


class DisplayHash(bytes):
    """A bytes type with its own display form (as the MDB reader's XetHash has)."""

    def __str__(self) -> str:
        return self[::-1].hex()


def test_bytes_subclass_with_its_own_str_keeps_it():
    assert to_jsonable({"h": DisplayHash(b"\x01\x02"), "b": bytearray(b"\x01\x02")}) == {
        "h": "0201", "b": "0102"}


def test_to_text_rules():
    when = datetime.datetime(2024, 5, 1, 12, 30)
    text = to_text({
        "format": "x",
        "header": {"version": 2, "flags": {"a": True, "b": None}},
        "empty_map": {},
        "empty_list": [],
        "size": (100, 90, 40),
        "names": ["a", "b"],
        "mixed": [1, "two", None, b"\x03"],
        "blob": b"\x00\xff",
        "when": when,
        "tricky": " padded\n",
        "scales": [{"key": "8_8_40", "res": [8.0, 8.0]}, {"key": "16_16_40", "res": [16.0]}],
        "long": [f"column_{i}: Int64" for i in range(12)],
    }, max_items=10)
    assert text.splitlines() == [
        "format: x",
        "header.version: 2",
        "header.flags.a: true",
        "header.flags.b: -",
        "empty_map: (none)",
        "empty_list: (none)",
        "size: 100, 90, 40",
        "names: a, b",
        'mixed: [1, "two", null, "03"]',
        "blob: 00ff",
        "when: 2024-05-01T12:30:00",
        'tricky: " padded\\n"',
        "scales[0].key: 8_8_40",
        "scales[0].res: 8.0, 8.0",
        "scales[1].key: 16_16_40",
        "scales[1].res: 16.0",
        "long:",
        *[f"  - column_{i}: Int64" for i in range(10)],
        "  ... 2 more (--json shows all)",
    ]


def test_to_text_cuts_long_lists_of_mappings():
    lines = to_text({"stripes": [{"i": i} for i in range(30)]}, max_items=10).splitlines()
    assert lines == [f"stripes[{i}].i: {i}" for i in range(2)] + [
        "  ... 28 more (--json shows all)"]
