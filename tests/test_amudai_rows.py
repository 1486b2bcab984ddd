"""An Amudai shard as a mapping of columns that is also indexed by rows; JSON-ready trees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import shardkit
from shardkit.sources import BytesSource, CountingSource, FileSource

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
