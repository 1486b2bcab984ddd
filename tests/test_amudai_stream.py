"""Amudai iter_rows (records streamed block by block) and the block-by-block verify."""

from __future__ import annotations

import pytest
from amudai_samples import DATA

import shardkit
from shardkit.errors import LayoutError
from shardkit.writers.amudai import build_amudai, field


@pytest.mark.parametrize("name", ["single", "twolevel", "lz4", "indexed"])
def test_iter_rows_equals_rows(name: str) -> None:
    with shardkit.open(DATA / f"{name}.amudai.shard") as s:
        assert list(s.iter_rows()) == s.rows()
        first = s.schema[0].name
        assert list(s.iter_rows(columns=[first])) == s.rows(columns=[first])


def test_iter_rows_many_blocks_and_nesting() -> None:
    schema = [field("id", "Int64"), field("l", "List", field("item", "Int32")),
              field("m", "Map", field("key", "String"), field("value", "Boolean")),
              field("st", "Struct", field("a", "String"), field("b", "Float64"))]
    n = 20_000  # several blocks in every buffer
    stripe = {
        "id": [None if i % 11 == 0 else i for i in range(n)],
        "l": [None if i % 7 == 0 else list(range(i % 4)) for i in range(n)],
        "m": [{f"k{i % 3}": i % 2 == 0} if i % 5 else None for i in range(n)],
        "st": [None if i % 13 == 0 else {"a": f"s{i}", "b": i / 2} for i in range(n)],
    }
    data = build_amudai(schema, [stripe, {k: v[:10] for k, v in stripe.items()}],
                        compression="lz4")
    s = shardkit.open(data)
    rows = list(s.iter_rows())
    assert len(rows) == n + 10
    assert rows[:n] == s.rows(0, n)
    assert rows[7] == {"id": 7, "l": None, "m": {"k1": False}, "st": {"a": "s7", "b": 3.5}}
    assert s.verify() == []


def test_iter_rows_refuses_offsets_past_the_items() -> None:
    schema = [field("l", "List", field("item", "Int32"))]
    good = build_amudai(schema, [{"l": [[1, 2], [3]]}])
    s = shardkit.open(good)
    item = s.field("l.item")
    sfd = s.stripe_field(0, item.schema_id)
    # the item column claims one position fewer than the offsets reach
    bad = shardkit.open(build_amudai(schema, [{"l": [[1, 2], [3]]}]))
    assert sfd.field.position_count == 3
    assert list(bad.iter_rows()) == [{"l": [1, 2]}, {"l": [3]}]
    with pytest.raises(LayoutError):
        list(_ShortChild(bad).iter_rows())


class _ShortChild:
    """A shard whose list items say 2 positions where the offsets reach 3."""

    def __init__(self, shard: shardkit.formats.amudai.AmudaiShard) -> None:
        self.shard = shard
        real = shard.stripe_field

        def stripe_field(k: int, sid: int):
            sfd = real(k, sid)
            if sfd is not None and sid == shard.field("l.item").schema_id:
                sfd.field.position_count = 2
            return sfd

        shard.stripe_field = stripe_field  # type: ignore[method-assign]

    def iter_rows(self):
        return self.shard.iter_rows()


def test_large_buffers_are_read_in_bounded_windows(monkeypatch, range_server, tmp_path) -> None:
    """A buffer larger than BLOCK_WINDOW is read as its block map, then windows of whole
    neighbouring blocks, never in one piece: locally and over HTTP, verify and the column
    reads give what reading it whole gives."""
    from shardkit.formats.amudai import columns

    schema = [field("id", "Int64"), field("s", "String"), field("f", "Boolean")]
    n = 40_000
    stripe = {"id": [None if i % 9 == 0 else i * 7 for i in range(n)],
              "s": [f"value-{i * 31 % 997}" for i in range(n)],
              "f": [None if i % 4 == 0 else i % 3 == 0 for i in range(n)]}
    (tmp_path / "w.amudai.shard").write_bytes(build_amudai(schema, [stripe]))
    with shardkit.open(tmp_path / "w.amudai.shard") as s:
        whole = {c.name: s.read_column(c.name) for c in s.schema}
    assert whole == stripe
    window = 160 * 1024  # two or more of this shard's blocks, far less than a buffer
    monkeypatch.setattr(columns, "BLOCK_WINDOW", window)
    seen: list[tuple[int, int]] = []
    real = columns._windows

    def spy(src, start, table):
        for first, stop, lo, data in real(src, start, table):
            assert len(data) <= window or stop - first == 1
            seen.append((stop - first, len(data)))
            yield first, stop, lo, data

    monkeypatch.setattr(columns, "_windows", spy)
    server = range_server(tmp_path)
    for where in (tmp_path / "w.amudai.shard", server.url("w.amudai.shard")):
        seen.clear()
        with shardkit.open(where) as s:
            assert s.verify() == []
            assert {c.name: s.read_column(c.name) for c in s.schema} == whole
            assert list(s.iter_rows()) == [dict(zip(whole, r, strict=True))
                                           for r in zip(*whole.values(), strict=True)]
        assert len(seen) > 10 and max(b for b, _ in seen) >= 2
