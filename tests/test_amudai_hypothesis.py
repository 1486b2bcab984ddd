"""Amudai: hypothesis-generated tables survive writer -> reader (single-file and two-level,
every presence mode)."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shardkit
from shardkit.writers.amudai import build_amudai, build_amudai_files, field

SCHEMA = [
    field("i8", "Int8"), field("u32", "Int32", signed=False), field("i64", "Int64"),
    field("f64", "Float64"), field("b", "Boolean"), field("s", "String"),
    field("d", "String", dictionary=True), field("bin", "Binary"),
    field("st", "Struct", field("x", "Int16"), field("y", "String")),
    field("l", "List", field("item", "Int64")),
]


def nullable(s: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.none(), s)


ROW = st.fixed_dictionaries({
    "i8": nullable(st.integers(-128, 127)),
    "u32": nullable(st.integers(0, 2**32 - 1)),
    "i64": nullable(st.integers(-(2**63), 2**63 - 1)),
    "f64": nullable(st.floats(allow_nan=True)),
    "b": nullable(st.booleans()),
    "s": nullable(st.text(max_size=8)),
    "d": nullable(st.sampled_from(["", "a", "bb", "ccc"])),
    "bin": nullable(st.binary(max_size=8)),
    "st": nullable(st.fixed_dictionaries({"x": nullable(st.integers(-(2**15), 2**15 - 1)),
                                          "y": nullable(st.text(max_size=4))})),
    "l": nullable(st.lists(nullable(st.integers(-5, 5)), max_size=4)),
})
TABLE = st.lists(st.lists(ROW, min_size=1, max_size=12), min_size=1, max_size=3)


def columns(rows: list[dict]) -> dict[str, list]:
    return {f.name: [r[f.name] for r in rows] for f in SCHEMA}


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TABLE, st.sampled_from(["bytes", "roaring"]))
def test_tables_round_trip(table: list[list[dict]], presence: str) -> None:
    stripes = [columns(rows) for rows in table]
    s = shardkit.open(build_amudai(SCHEMA, stripes, presence=presence))
    assert s.record_count == sum(len(rows) for rows in table)
    for f in SCHEMA:
        want = [r[f.name] for rows in table for r in rows]
        assert same(s.read_column(f.name), want), f.name
    assert s.verify() == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TABLE)
def test_two_level_matches_single(table: list[list[dict]]) -> None:
    """The two-level layout (root + stripe files) reads back exactly what one file holds."""
    stripes = [columns(rows) for rows in table]
    files = build_amudai_files(SCHEMA, stripes, two_level=True)
    assert len(files) == 1 + len(table)
    single = shardkit.open(build_amudai(SCHEMA, stripes))
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in files.items():
            assert data[:8] == data[-8:] == b"amud\x00\x01\x00\x00", name
            (Path(tmp) / name).write_bytes(data)
        (root,) = [n for n in files if n.endswith(".amudai.shard")]
        with shardkit.open(Path(tmp) / root) as two:
            assert two.record_count == single.record_count
            assert [st.record_count for st in two.stripes] == [len(rows) for rows in table]
            for f in SCHEMA:
                assert same(two.read_column(f.name), single.read_column(f.name)), f.name
            assert two.verify() == []


def test_auto_presence_picks_roaring_for_rare_nulls() -> None:
    """`auto` writes Roaring presence below 1 % nulls (bytes otherwise); both read the same."""
    values: list = list(range(250))
    values[17] = None
    table = [{"i64": values}]
    schema = [field("i64", "Int64")]
    auto, plain = (build_amudai(schema, table, presence=p) for p in ("auto", "bytes"))
    assert auto != plain
    assert auto == build_amudai(schema, table, presence="roaring")
    for data in (auto, plain):
        assert shardkit.open(data).read_column("i64") == values
