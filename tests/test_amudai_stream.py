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
