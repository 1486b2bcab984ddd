"""render.to_json: every value a reader hands out becomes valid JSON."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import uuid

import numpy as np

from shardkit.render import to_json, to_jsonable


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
