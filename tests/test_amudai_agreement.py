"""Every way of reading an Amudai shard gives the same values: ``rows()`` (and ``iter_rows``,
``read_column``) against ``to_arrow()``, over every column of every shard in
tests/data/amudai (the reference corpora and shardkit's own samples)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import shardkit
from shardkit.formats.amudai.model import _plain

DATA = Path(__file__).parent / "data" / "amudai"
SHARDS = sorted(p.relative_to(DATA).as_posix() for p in DATA.rglob("*.amudai.shard")
                if "fuzz" not in p.parts and "positions" not in p.name)
_EPOCH = datetime(1970, 1, 1)


def _arrow_as_rows(pa: Any, arr: Any) -> list[Any]:
    """An Arrow array's values in the form ``rows()`` gives them: DateTime as ISO text to the
    microsecond, a KustoTimeSpan as ticks, bytes as bytes, maps as dicts."""
    t = arr.type
    valid = arr.is_valid().to_pylist()
    if pa.types.is_timestamp(t):
        per_us = {"ns": 1000, "us": 1}[t.unit]
        ints = arr.cast(pa.int64()).to_pylist()
        return [None if v is None else (_EPOCH + timedelta(microseconds=v // per_us)).isoformat()
                for v in ints]
    if pa.types.is_duration(t):
        return [None if v is None else v // 100 for v in arr.cast(pa.int64()).to_pylist()]
    if pa.types.is_struct(t):
        kids = {t.field(i).name: _arrow_as_rows(pa, arr.field(i)) for i in range(t.num_fields)}
        return [{n: col[i] for n, col in kids.items()} if ok else None
                for i, ok in enumerate(valid)]
    if pa.types.is_map(t):
        keys = _arrow_as_rows(pa, arr.keys)
        items = _arrow_as_rows(pa, arr.items)
        offs = arr.offsets.to_pylist()
        out = []
        for i, ok in enumerate(valid):
            pairs = list(zip(keys[offs[i]:offs[i + 1]], items[offs[i]:offs[i + 1]], strict=True))
            out.append(_as_map(pairs) if ok else None)
        return out
    if pa.types.is_large_list(t) or pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
        flat = _arrow_as_rows(pa, arr.values)
        if pa.types.is_fixed_size_list(t):
            n = t.list_size
            offs = [(arr.offset + i) * n for i in range(len(arr) + 1)]
            base = 0
        else:
            offs = arr.offsets.to_pylist()
            base = 0
        return [flat[offs[i] - base:offs[i + 1] - base] if ok else None
                for i, ok in enumerate(valid)]
    return arr.to_pylist()


def _as_map(pairs: list[tuple[Any, Any]]) -> Any:
    out = dict(pairs) if all(not isinstance(k, (list, dict)) for k, _ in pairs) else None
    if out is None or len(out) != len(pairs):
        return [[k, v] for k, v in pairs]
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                     math.copysign(1, b))
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("name", SHARDS)
def test_rows_and_arrow_agree_on_every_column(name: str) -> None:
    pa = pytest.importorskip("pyarrow")
    with shardkit.open(DATA / name) as s:
        table = s.to_arrow()
        rows = s.rows()
        streamed = list(s.iter_rows())
        assert len(rows) == table.num_rows == s.record_count
        for node in s.schema:
            want = _plain(_arrow_as_rows(pa, table.column(node.name).combine_chunks()))
            got = [r[node.name] for r in rows]
            assert _same(got, want), (name, node.name)
            assert _same([r[node.name] for r in streamed], want), (name, node.name)
            assert _same(_plain(s.read_column(node.name)), want), (name, node.name)


@pytest.mark.parametrize("name", SHARDS)
def test_batches_agree_with_read_column(name: str) -> None:
    """iter_batches' block-wise paths (numbers as arrays, text and bytes decoded a block at a
    time) give read_column's values."""
    from shardkit.formats.amudai.model import _BYTES_TYPES, _dtype_of

    with shardkit.open(DATA / name) as s:
        got: dict[str, list[Any]] = {n.name: [] for n in s.schema}
        for batch in s.iter_batches(batch_size=100):
            for key, values in batch.items():
                if hasattr(values, "mask"):
                    got[key] += [None if m else v for v, m in
                                 zip(values.data.tolist(), values.mask.tolist(), strict=True)]
                else:
                    got[key] += values.tolist() if hasattr(values, "tolist") else values
        for node in s.schema:
            if _dtype_of(node) is not None:
                arr = s.read_array(node.name)
                want = [None if m else v for v, m in zip(
                    arr.tolist() if not hasattr(arr, "mask") else arr.data.tolist(),
                    arr.mask.tolist() if hasattr(arr, "mask") else [False] * len(arr),
                    strict=True)]
            elif node.type in _BYTES_TYPES:
                want = s.read_column(node.name)
            else:
                continue
            assert _same(got[node.name], want), (name, node.name)


@pytest.mark.parametrize("name", SHARDS)
def test_arrow_batches_agree_with_to_arrow(name: str) -> None:
    """iter_batches(arrow=True): record batches of the same values as to_arrow()."""
    pa = pytest.importorskip("pyarrow")
    with shardkit.open(DATA / name) as s:
        table = s.to_arrow()
        batches = list(s.iter_batches(batch_size=77, arrow=True))
        assert all(b.schema == batches[0].schema for b in batches)
        assert sum(b.num_rows for b in batches) == table.num_rows
        assert all(b.num_rows <= 77 for b in batches)
        joined = pa.Table.from_batches(batches)
        for node in s.schema:
            got = _arrow_as_rows(pa, joined.column(node.name).combine_chunks())
            want = _arrow_as_rows(pa, table.column(node.name).combine_chunks())
            assert _same(_plain(got), _plain(want)), (name, node.name)
            a, b = joined.schema.field(node.name).type, table.schema.field(node.name).type
            if not pa.types.is_timestamp(a):
                assert a == b, (name, node.name)


def test_the_corpus_is_all_here() -> None:
    assert len(SHARDS) >= 10


def _unsealed(tmp_path: Path) -> bytes:
    """shardkit's sample schema without block checksums: a flipped byte of a block reaches
    the decoders."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from amudai_samples import SCHEMA, STRIPES

    from shardkit.writers.amudai import write_amudai

    out = tmp_path / "unsealed.amudai.shard"
    write_amudai(out, SCHEMA, STRIPES, two_level=False, compression="lz4",
                 block_checksums=False)
    return out.read_bytes()


def test_arrow_and_rows_on_corrupted_blocks(tmp_path: Path) -> None:
    """Flipped bytes in the blocks: to_arrow and rows either agree or raise shardkit errors
    (never another exception, never different values)."""
    pa = pytest.importorskip("pyarrow")
    import random

    from shardkit.errors import ShardkitError

    data = _unsealed(tmp_path)
    with shardkit.open(data, format="amudai") as s:
        spans = [(sec.start, sec.start + sec.size) for sec in s.sections()
                 if sec.name.startswith("/stripes/") and sec.name.endswith("/data")]
    rng = random.Random(31)
    outcomes = {"both": 0, "error": 0}
    for _ in range(150):
        lo, hi = rng.choice(spans)
        bad = bytearray(data)
        at = rng.randrange(lo, hi)
        bad[at] ^= 1 << rng.randrange(8)
        try:
            with shardkit.open(bytes(bad), format="amudai") as s:
                table = s.to_arrow()
                rows = s.rows()
        except ShardkitError:
            outcomes["error"] += 1
            continue
        outcomes["both"] += 1
        for node in s.schema:
            want = _plain(_arrow_as_rows(pa, table.column(node.name).combine_chunks()))
            assert _same([r[node.name] for r in rows], want), (at, node.name)
    assert outcomes["both"] and outcomes["error"], outcomes


class _Bad(str):
    """A str the writer encodes as bytes that are not UTF-8."""

    def encode(self, *args: Any, **kwargs: Any) -> bytes:  # type: ignore[override]
        return b"o\xff\xfe"  # between the smallest and largest values (not in the stats)


@pytest.mark.parametrize("dictionary", [False, True])
def test_every_reader_refuses_a_string_that_is_not_utf8(tmp_path: Path,
                                                        dictionary: bool) -> None:
    pytest.importorskip("pyarrow")
    from shardkit.errors import LayoutError
    from shardkit.writers.amudai import field, write_amudai

    out = tmp_path / "bad.amudai.shard"
    write_amudai(out, [field("s", "String", dictionary=dictionary)],
                 [{"s": ["naïve", _Bad("x"), None, "plain"]}])
    with shardkit.open(out) as s:
        problems = s.verify()
        assert [p.check for p in problems] and "not UTF-8" in problems[0].message
        for read in (lambda: s.read_column("s"), s.to_arrow, s.rows,
                     lambda: list(s.iter_batches()), lambda: list(s.iter_rows())):
            with pytest.raises(LayoutError, match="not UTF-8"):
                read()
    good = tmp_path / "good.amudai.shard"
    write_amudai(good, [field("s", "String", dictionary=dictionary)],
                 [{"s": ["naïve", "日本", None, "plain"]}])
    with shardkit.open(good) as s:
        assert s.verify() == []
        assert s.to_arrow().column("s").to_pylist() == ["naïve", "日本", None, "plain"]
        assert [b["s"] for b in s.iter_batches()] == [["naïve", "日本", None, "plain"]]
