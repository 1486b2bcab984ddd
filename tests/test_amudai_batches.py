"""Amudai iter_batches: a full scan as column batches (numpy for numeric columns), bounded."""

from __future__ import annotations

import math
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from amudai_samples import DATA

import shardkit
from shardkit.errors import LayoutError
from shardkit.formats.amudai.batches import _cut
from shardkit.formats.amudai.model import _dtype_of
from shardkit.remote import DEFAULT_BLOCK_SIZE as BLOCK
from shardkit.writers.amudai import field, write_amudai


def _joined(batches: list[dict], name: str) -> list:
    out: list = []
    for b in batches:
        v = b[name]
        out.extend(v.tolist() if isinstance(v, np.ndarray) else v)
    return out


@pytest.mark.parametrize("name", ["single", "twolevel", "lz4", "indexed"])
@pytest.mark.parametrize("batch_size", [1, 7, 16, 5000])
def test_batches_hold_every_column(name: str, batch_size: int) -> None:
    with shardkit.open(DATA / f"{name}.amudai.shard") as s:
        batches = list(s.iter_batches(batch_size=batch_size))
        want_sizes = []
        for st in s.stripes:  # batches never span two stripes
            n = st.record_count
            want_sizes += [batch_size] * (n // batch_size) + ([n % batch_size]
                                                              if n % batch_size else [])
        rows = s.rows()
        for node in s.schema:
            assert [len(b[node.name]) for b in batches] == want_sizes, node.name
            if _dtype_of(node) is None:
                assert _joined(batches, node.name) == [r[node.name] for r in rows], node.name
                continue
            want = s.read_array(node.name)
            got = np.ma.concatenate([np.ma.asarray(b[node.name]) for b in batches])
            assert got.dtype == want.dtype
            assert np.ma.getmaskarray(got).tolist() == np.ma.getmaskarray(want).tolist()
            assert got.filled(0).tolist() == np.ma.asarray(want).filled(0).tolist(), node.name


def test_batch_types_and_columns() -> None:
    with shardkit.open(DATA / "single.amudai.shard") as s:
        first = next(s.iter_batches(["id", "const", "when", "name"], batch_size=10))
        assert list(first) == ["id", "const", "when", "name"]
        assert isinstance(first["id"], np.ma.MaskedArray)  # row 3 is null
        assert first["id"][:3].tolist() == [-5, 995, 1995] and first["id"].mask[3]
        assert type(first["const"]) is np.ndarray and first["const"].tolist() == [42] * 10
        assert first["const"].dtype == np.dtype("<i4")
        assert first["when"].dtype == np.dtype("<u8")  # ticks, as read_array gives them
        assert first["name"][:3] == ["", "name-1-ü", None]
        with pytest.raises(ValueError, match="batch_size 0"):
            next(s.iter_batches(batch_size=0))


def test_numeric_batches_without_nulls_are_plain_arrays(tmp_path: Path) -> None:
    n = 70_000  # several blocks per stripe, batches cutting through blocks
    a = np.arange(n, dtype=np.int64) * 3
    path = tmp_path / "n.amudai.shard"
    write_amudai(path, [field("a", "Int64"), field("b", "Int32")],
                 ({"a": a[i : i + 30_000], "b": (a[i : i + 30_000] % 1000)}
                  for i in range(0, n, 30_000)))
    with shardkit.open(path) as s:
        batches = list(s.iter_batches(batch_size=9_999))
        assert all(type(b["a"]) is np.ndarray for b in batches)
        assert np.concatenate([b["a"] for b in batches]).tolist() == a.tolist()
        assert int(sum(int(b["b"].sum()) for b in batches)) == int((a % 1000).sum())
        assert sum(len(b["a"]) for b in batches) == n
        assert [len(b["a"]) for b in batches][:4] == [9_999, 9_999, 9_999, 3]


def test_batches_stream_in_bounded_memory(tmp_path: Path) -> None:
    n = 4_000_000  # 32 MB of Int64 values; a batch is 512 KiB
    path = tmp_path / "big.amudai.shard"
    write_amudai(path, [field("a", "Int64")],
                 [{"a": np.arange(n, dtype=np.int64)}])
    with shardkit.open(path) as s:
        tracemalloc.start()
        try:
            total = count = 0
            for b in s.iter_batches(batch_size=1 << 16):
                total += int(b["a"].sum())
                count += len(b["a"])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert count == n and total == n * (n - 1) // 2
    assert peak < 8 << 20, peak  # far below the column's 32 MB


def test_cut_refuses_too_few_or_too_many_values() -> None:
    def pieces(*sizes: int):
        return iter([(np.arange(k), None) for k in sizes])

    got = list(_cut(pieces(3, 4, 1), [5, 3], 8, 0, "/f"))
    assert [x.tolist() for x in got] == [[0, 1, 2, 0, 1], [2, 3, 0]]
    with pytest.raises(LayoutError, match="buffer holds 7 values, the stripe 8"):
        list(_cut(pieces(3, 4), [5, 3], 8, 0, "/f"))
    with pytest.raises(LayoutError, match="buffer holds 9 values, the stripe 8"):
        list(_cut(pieces(3, 4, 2), [5, 3], 8, 0, "/f"))
    masked = list(_cut(iter([(np.arange(4), np.array([1, 0, 1, 1], bool))]), [2, 2], 4, 0,
                       "/f"))
    assert isinstance(masked[0], np.ma.MaskedArray) and masked[0].mask.tolist() == [0, 1]
    assert type(masked[1]) is np.ndarray


def test_batches_over_http_read_each_byte_once(tmp_path: Path, range_server) -> None:
    n = 60_000
    write_amudai(tmp_path / "h.amudai.shard",
                 [field("id", "Int64"), field("name", "String"), field("score", "Float64")],
                 [{"id": np.arange(n), "name": [f"n{i * 7919 % 100003}" for i in range(n)],
                   "score": [None if i % 9 == 0 else i * 0.5 for i in range(n)]}])
    size = (tmp_path / "h.amudai.shard").stat().st_size
    server = range_server(tmp_path)
    with shardkit.open(tmp_path / "h.amudai.shard") as local:
        want = list(local.iter_batches(batch_size=4096))
    server.reset()
    with shardkit.open(server.url("h.amudai.shard")) as s:
        got = list(s.iter_batches(batch_size=4096))
    assert len(got) == len(want) == 15
    for a, b in zip(got, want, strict=True):
        assert a["id"].tolist() == b["id"].tolist() and a["name"] == b["name"]
        assert np.ma.getmaskarray(a["score"]).tolist() == \
            np.ma.getmaskarray(b["score"]).tolist()
    assert got[0]["score"].mask[0] and got[0]["score"][1] == 0.5
    assert server.count() <= math.ceil(size / BLOCK) + 3
    assert server.bytes_sent <= size


REF = Path(__file__).parent / "data" / "amudai" / "reference"


@pytest.mark.parametrize("name", sorted(p.name for p in REF.glob("*.amudai.shard")))
def test_batches_of_the_reference_shards(name: str) -> None:
    """Shards the reference wrote (cascading encodings, dictionaries, nested columns): the
    batches hold what read_array and iter_rows give."""
    with shardkit.open(REF / name) as s:
        batches = list(s.iter_batches(batch_size=1000))
        assert sum(len(next(iter(b.values()))) for b in batches) == s.record_count
        rows = list(s.iter_rows())
        for node in s.schema:
            if _dtype_of(node) is None:
                assert _joined(batches, node.name) == [r[node.name] for r in rows], node.name
                continue
            want = np.ma.asarray(s.read_array(node.name))
            got = np.ma.concatenate([np.ma.asarray(b[node.name]) for b in batches])
            assert np.ma.getmaskarray(got).tolist() == np.ma.getmaskarray(want).tolist()
            assert got.filled(0).tolist() == want.filled(0).tolist(), node.name


def test_constant_columns_in_batches() -> None:
    """A constant DateTime (ticks, as read_array), an all-null Int32 (a constant null: every
    position masked), a constant Float64."""
    from datetime import datetime

    from shardkit.writers.amudai import build_amudai

    when = datetime(2024, 1, 2, 3, 4, 5)
    data = build_amudai([field("t", "DateTime"), field("n", "Int32"), field("f", "Float64")],
                        [{"t": [when] * 5, "n": [None] * 5, "f": [2.5] * 5}])
    with shardkit.open(data) as s:
        assert s.descriptor("t").is_constant and s.descriptor("n").is_constant
        a, b = list(s.iter_batches(batch_size=3))
        assert a["t"].tolist() == s.read_array("t")[:3].tolist()
        assert a["t"].dtype == np.dtype("<u8") and len(set(b["t"].tolist())) == 1
        assert a["n"].mask.tolist() == [True] * 3 and b["n"].mask.tolist() == [True] * 2
        assert b["f"].tolist() == [2.5, 2.5] and b["f"].dtype == np.dtype("<f8")


def test_a_short_value_stream_is_a_layout_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A column whose values end before the stripe's records: LayoutError naming it."""
    from shardkit.formats.amudai import batches as mod
    from shardkit.writers.amudai import build_amudai

    class Short:
        def __init__(self, shard: object, k: int) -> None:
            pass

        def column(self, node: object, count: int):
            return iter(["only one"])

    # (a Boolean column: strings and numbers have block-wise paths of their own)
    data = build_amudai([field("b", "Boolean")], [{"b": [True, False, True]}])
    monkeypatch.setattr(mod, "_Streams", Short)
    with shardkit.open(data) as s, \
            pytest.raises(LayoutError, match="1 values where the stripe has 3 more") as err:
        list(s.iter_batches(batch_size=3))
    assert err.value.field == "/stripes/0/fields/b"


def test_batches_with_nulls_write_back_as_nulls(tmp_path: Path) -> None:
    """The masked arrays of a column with nulls, given back to the writer, are nulls again
    (not their fill values): a shard copied batch by batch reads as the original."""
    src, dst = tmp_path / "src.amudai.shard", tmp_path / "dst.amudai.shard"
    schema = [field("x", "Int64"), field("f", "Float64")]
    write_amudai(src, schema, [{"x": [1, None, 3], "f": [1.5, None, -0.0]}])
    with shardkit.open(src) as shard:
        batches = list(shard.iter_batches())
        assert np.ma.getmaskarray(batches[0]["x"]).tolist() == [False, True, False]
        write_amudai(dst, schema, batches)
    with shardkit.open(dst) as copy:
        assert copy.read_column("x") == [1, None, 3]
        got = copy.read_column("f")
        assert got[:2] == [1.5, None] and math.copysign(1.0, got[2]) == -1.0


def test_batches_refuse_a_nested_field() -> None:
    """``iter_batches`` reads top-level columns: a nested path is a ValueError, not another
    column's values or a layout error."""
    with shardkit.open(DATA / "single.amudai.shard") as shard:
        nested = next(f"{n.name}.{n.children[0].name}" for n in shard.schema if n.children)
        with pytest.raises(ValueError, match="nested field"):
            next(shard.iter_batches([nested]))


_IMPORT_WATCH = r"""
import sys
tried = []
class Watch:
    def find_spec(self, name, path=None, target=None):
        tried.append(name)
        return None
sys.meta_path.insert(0, Watch())
import shardkit
for path in sys.argv[1:]:
    with shardkit.open(path) as s:
        table = s.to_arrow()
        rows = sum(b.num_rows for b in s.iter_batches(batch_size=100, arrow=True))
        assert rows == table.num_rows > 0, (path, rows)
print(sorted({t for t in tried if t.split(".")[0] == "pandas" or t == "pyarrow.compute"}))
"""


def test_arrow_scans_of_flat_columns_import_neither_pandas_nor_compute() -> None:
    """pyarrow's ``pa.array`` asks pandas whether its input is a Series (importing pandas,
    0.4 s, wherever it is installed) and ``take`` needs pyarrow.compute: flat numeric, time,
    text, boolean and dictionary columns, constants and missing columns are made from
    buffers."""
    import subprocess
    import sys

    pytest.importorskip("pyarrow")
    rust = DATA / "rust"
    shards = [rust / f"{n}.amudai.shard" for n in ("stripes40", "times", "twolevel20", "fsst",
                                                  "inferred", "wide")]
    shards += [DATA / "lz4.amudai.shard", DATA / "reference" / "encodings.amudai.shard"]
    out = subprocess.run([sys.executable, "-c", _IMPORT_WATCH, *map(str, shards)],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
