"""An Amudai shard as a mapping of columns that is also indexed by rows; JSON-ready trees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import shardkit
from shardkit.errors import LayoutError
from shardkit.sources import BytesSource, CountingSource, FileSource
from shardkit.writers.amudai import build_amudai, field

DATA = Path(__file__).parent / "data" / "amudai"
SAMPLES = sorted(p.name for p in DATA.glob("*.amudai.shard"))


@pytest.mark.parametrize("name", SAMPLES)
def test_rows_agree_with_columns(name: str) -> None:
    with shardkit.open(DATA / name) as s:
        columns = {f.name: s[f.name] for f in s.schema}
        rows = s[:]
        assert len(rows) == s.record_count == len(next(iter(columns.values())))
        for i, row in enumerate(rows):
            assert row == {k: v[i] for k, v in columns.items()}, i
        n = s.record_count
        assert s[0] == rows[0] and s[-1] == rows[-1] == s.row(n - 1)
        assert s[3:7] == rows[3:7] == s.rows(3, 7)
        assert s[n - 2:n + 10] == rows[n - 2:]
        first = s.schema[0].name
        assert s.rows(5, 9, columns=[first]) == [{first: r[first]} for r in rows[5:9]]


def test_mapping_contract() -> None:
    with shardkit.open(DATA / "single.amudai.shard") as s:
        paths = list(s.keys())
        assert list(s) == paths and len(s) == len(paths) > s.record_count // 10
        assert "address.zip" in paths and "address.zip" in s and "nope" not in s
        assert s.get("nope", 7) == 7
        assert s.get("id") == s["id"] == s.read_column("id")
        with pytest.raises(IndexError):
            s[s.record_count]
        with pytest.raises(shardkit.InvalidKeyError):
            s[1.5]
        with pytest.raises(shardkit.InvalidKeyError):
            s[::2]
        with pytest.raises(shardkit.EntryNotFoundError):
            s["nope"]


@pytest.mark.parametrize("name", SAMPLES)
def test_to_dict_and_summary_are_json(name: str) -> None:
    with shardkit.open(DATA / name) as s:
        tree = json.loads(json.dumps(s.to_dict()))
        json.dumps(s.summary())
        assert tree["record_count"] == s.record_count


def test_row_reads_only_its_blocks() -> None:
    """Locally too: a row touches a few blocks, not whole columns."""
    raw = (DATA / "single.amudai.shard").read_bytes()
    counted = CountingSource(BytesSource(raw))
    with shardkit.open(counted) as s:
        s.schema, s.stripes  # noqa: B018
        s.stripe_field(0, 0)
        before = counted.stats.bytes_read
        s[10]
        row_bytes = counted.stats.bytes_read - before
    counted = CountingSource(FileSource(DATA / "single.amudai.shard"))
    with shardkit.open(counted) as s:
        s.schema, s.stripes  # noqa: B018
        s.stripe_field(0, 0)
        before = counted.stats.bytes_read
        [s[f.name] for f in s.schema]
        column_bytes = counted.stats.bytes_read - before
    assert 0 < row_bytes < column_bytes


def _nested_stripe(n: int) -> dict[str, list]:
    return {
        "id": list(range(n)),
        "flag": [None if i % 7 == 0 else i % 3 == 0 for i in range(n)],
        "l": [None if i % 5 == 0 else [i, i + 1][: i % 3] for i in range(n)],
        "m": [None if i % 4 == 0 else {f"k{i % 9}": i} for i in range(n)],
        "st": [None if i % 6 == 0 else {"a": i * 2, "ok": i % 2 == 0} for i in range(n)],
    }


NESTED = [field("id", "Int64"), field("flag", "Boolean"),
          field("l", "List", field("item", "Int32")),
          field("m", "Map", field("key", "String"), field("value", "Int64")),
          field("st", "Struct", field("a", "Int64"), field("ok", "Boolean"))]


def test_rows_of_lists_maps_booleans_and_presence_read_their_blocks_only() -> None:
    """rows(a, b) on List, Map, Boolean and nullable-via-presence columns reads the blocks
    holding those rows (offsets, the items they bound, the bytes of their bits), not the
    stripe's whole column; the values equal the input."""
    n = 60_000
    stripes = [_nested_stripe(n), _nested_stripe(10)]
    raw = build_amudai(NESTED, stripes)
    counted = CountingSource(BytesSource(raw))
    with shardkit.open(counted) as s:
        s.schema, s.stripes  # noqa: B018
        for c in s.iter_fields():
            s.stripe_field(0, c.schema_id)
        nested = [c for c in s.iter_fields() if c.name != "id"]
        column_bytes = sum(b.buffer.range.end - b.buffer.range.start
                           for c in nested
                           for e in s.stripe_field(0, c.schema_id).encodings
                           for b in e.native.buffers)
        cols = ["flag", "l", "m", "st"]
        for lo in (0, 31_337, n - 3):
            before = counted.stats.bytes_read
            got = s.rows(lo, lo + 3, columns=cols)
            assert 0 < counted.stats.bytes_read - before < column_bytes // 4
            want = [{c: stripes[0][c][i] for c in cols} for i in range(lo, lo + 3)]
            assert got == want
        # across the stripe boundary, and equal to reading the columns whole
        assert s.rows(n - 2, n + 3) == [{c: stripes[k][c][i] for c in ["id", *cols]}
                                        for k, i in [(0, n - 2), (0, n - 1), (1, 0), (1, 1),
                                                     (1, 2)]]
    with shardkit.open(raw) as s:
        assert s.rows(1234, 1300) == s[:][1234:1300]


def test_rows_refuse_list_offsets_past_the_items() -> None:
    schema = [field("l", "List", field("item", "Int32"))]
    s = shardkit.open(build_amudai(schema, [{"l": [[1, 2], [3]]}]))
    real = s.stripe_field
    item = s.field("l.item").schema_id

    def short(k: int, sid: int):
        sfd = real(k, sid)
        if sid == item:
            sfd.field.position_count = 2
        return sfd

    s.stripe_field = short  # type: ignore[method-assign]
    with pytest.raises(LayoutError, match="list offsets reach 3, the items hold 2"):
        s.rows(1, 2)
