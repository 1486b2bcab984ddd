"""Xet MDB verify in bounded windows: the windowed checks find what whole-array checks find
(window edges included), and the chunk table is compared without sorting copies of it."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from mdb_inputs import random_inputs

from shardkit.formats.xet_mdb import MdbShard, XetHash, XorbInfo
from shardkit.formats.xet_mdb import verify as v
from shardkit.formats.xet_mdb.model import _CHUNK_LOOKUP_DTYPE, ChunkEntry
from shardkit.sources import BytesSource
from shardkit.writers.xet_mdb import build_mdb

DATA = Path(__file__).parent / "data" / "mdb"
REAL = sorted(DATA.glob("real/*/*.mdb"))
CHUNK_ROW = 16  # key u64, xorb u32, chunk u32


def _shard_with_repeated_keys() -> bytes:
    """6 xorbs of 5 chunks; chunk 1 of xorbs 0, 2, 4 and chunk 3 of xorbs 1, 3, 5 share their
    truncated key (the first 8 bytes), so the chunk table has groups of equal keys."""
    files, xorbs = random_inputs(4, 6, 5, seed=7)
    prefix = bytes.fromhex("0123456789abcdef")
    out = []
    for xi, x in enumerate(xorbs):
        chunks = list(x.chunks)
        ci = 1 if xi % 2 == 0 else 3
        c = chunks[ci]
        chunks[ci] = ChunkEntry(XetHash(prefix + bytes(c.hash)[8:]), c.offset, c.size, c.flags)
        out.append(XorbInfo(x.hash, x.flags, tuple(chunks), x.num_bytes_in_xorb,
                            x.num_bytes_on_disk))
    return build_mdb(files, out)


def _table_problems(data: bytes) -> list[tuple[str, str, int | None, str]]:
    s = MdbShard(BytesSource(data))
    return [(p.check, p.message, p.offset, p.field) for p in s.verify()
            if p.check in ("lookup_table", "order")]


def _rows(data: bytes) -> tuple[int, np.ndarray]:
    s = MdbShard(BytesSource(data))
    f = s.footer
    assert f is not None and f.chunk_lookup_num_entry == 30
    return f.chunk_lookup_offset, s.chunk_lookup.copy()


def _with_rows(data: bytes, at: int, rows: np.ndarray) -> bytes:
    return data[:at] + rows.tobytes() + data[at + len(rows) * CHUNK_ROW:]


@pytest.mark.parametrize("group_max", [64, 1])  # searched one by one / sorted copies
def test_chunk_table_with_repeated_keys(monkeypatch: pytest.MonkeyPatch,
                                        group_max: int) -> None:
    monkeypatch.setattr(v, "_GROUP_MAX", group_max)
    data = _shard_with_repeated_keys()
    at, rows = _rows(data)
    key = int.from_bytes(bytes.fromhex("0123456789abcdef"), "little")
    group = np.flatnonzero(rows["key"] == key)
    assert len(group) == 6
    assert _table_problems(data) == []
    # two entries of the group trade xorbs: same keys, same order, other triples
    a, b = (int(i) for i in group[:2])
    assert rows["xorb"][a] != rows["xorb"][b]
    bad = rows.copy()
    bad["xorb"][a], bad["xorb"][b] = rows["xorb"][b], rows["xorb"][a]
    problems = _table_problems(_with_rows(data, at, bad))
    assert problems == [("lookup_table", "the chunk table does not hold exactly the "
                         "(truncated chunk hash, xorb record, chunk) triples of the xorb "
                         "section (30 entries, 30 chunks)", at, "/chunk_lookup")]
    # one entry of the group repeated over another: same count, one triple missing
    bad = rows.copy()
    bad[b] = rows[a]
    assert [p[1] for p in _table_problems(_with_rows(data, at, bad))] == [problems[0][1]]
    # the entries of the group in another order: still the same triples
    bad = rows.copy()
    bad[group] = rows[group[::-1]]
    assert _table_problems(_with_rows(data, at, bad)) == []


def test_unsorted_chunk_table_holding_the_same_triples() -> None:
    data = _shard_with_repeated_keys()
    at, rows = _rows(data)
    bad = rows.copy()
    bad[[0, 29]] = rows[[29, 0]]
    assert rows["key"][0] < rows["key"][29]
    problems = _table_problems(_with_rows(data, at, bad))
    assert len(problems) == 1
    kind, msg, offset, field = problems[0]
    assert (kind, offset, field) == ("lookup_table", at + CHUNK_ROW, "/chunk_lookup/entries/1")
    assert msg.startswith("the chunk table is not sorted by key: entry 1 (key ")
    assert msg.endswith("; 2 entries are out of order")


def test_membership_agrees_with_sorting_both_sides() -> None:
    """Random edits of the chunk table: the bisection check and the sorted comparison agree."""
    data = _shard_with_repeated_keys()
    at, rows = _rows(data)
    rnd = random.Random(3)
    verdicts = set()
    for _ in range(200):
        bad = rows.copy()
        i, j = rnd.randrange(30), rnd.randrange(30)
        what = rnd.randrange(3)
        if what == 0:
            bad[i] = rows[j]
        elif what == 1:
            bad["chunk"][i] = rnd.randrange(6)
        else:
            bad["xorb"][i] = rows["xorb"][j]
        s = MdbShard(BytesSource(_with_rows(data, at, bad)))
        ct, lay = s.chunk_lookup, s._layout
        sorted_ok = bool(np.all(ct["key"][1:] >= ct["key"][:-1]))
        got = v._chunk_table_holds(s, lay, ct, v._u64(s._mem), sorted_ok)
        assert got == v._chunk_table_sorted_equal(s, ct)
        verdicts.add(got)
    assert verdicts == {True, False}


def _all_problems(data: bytes) -> list[tuple[str, str, int | None, str]]:
    s = MdbShard(BytesSource(data))
    return [(p.check, p.message, p.offset, p.field) for p in s.verify()]


def _has_lookup_tables(path: Path) -> bool:
    f = MdbShard(BytesSource(path.read_bytes())).footer
    return f is not None and bool(f.file_lookup_num_entry)


#: The real shards with lookup tables (the others, upload bodies, have none to window).
REAL_WITH_TABLES = [p for p in REAL if _has_lookup_tables(p)]


def test_some_real_shards_have_lookup_tables() -> None:
    assert len(REAL_WITH_TABLES) >= 3


@pytest.mark.parametrize("path", REAL_WITH_TABLES, ids=lambda p: p.name[:12])
def test_tiny_windows_find_the_same_problems(monkeypatch: pytest.MonkeyPatch,
                                             path: Path) -> None:
    """Windows of 1 and 2 entries (every edge between windows) against the default, on real
    shards with their tables' and sections' bytes altered."""
    data = path.read_bytes()
    s = MdbShard(BytesSource(data))
    f = s.footer
    assert f is not None
    edits = [data]
    b = bytearray(data)  # swap the first two file lookup entries and two xorb blocks' keys
    lo = f.file_lookup_offset
    if f.file_lookup_num_entry > 1:
        b[lo : lo + 24] = data[lo + 12 : lo + 24] + data[lo : lo + 12]
        edits.append(bytes(b))
    if f.chunk_lookup_num_entry:
        b = bytearray(data)
        b[f.chunk_lookup_offset + 3] ^= 0x40  # a key of the chunk table
        edits.append(bytes(b))
    b = bytearray(data)
    b[48] ^= 0xFF  # the first file's hash: order and the file table
    edits.append(bytes(b))
    want = [_all_problems(d) for d in edits]
    assert any(want[1:])
    for window, slab in ((1, 1), (2, 3)):
        monkeypatch.setattr(v, "_WINDOW", window)
        monkeypatch.setattr(v, "_SLAB", slab)
        assert [_all_problems(d) for d in edits] == want


class _Drops:
    """Counts the drops of mapped pages a search asks for."""

    def __init__(self) -> None:
        self.drops = 0

    def _drop_pages(self) -> None:
        self.drops += 1


@pytest.mark.parametrize("slab", [1, 2, 7, 64, 1 << 17])
def test_slab_search_is_searchsorted(monkeypatch: pytest.MonkeyPatch, slab: int) -> None:
    """The in-order search of a sorted table gives numpy's left and right answers for keys
    before, between, on (repeated) and after the table's keys, and the fields at each left
    answer; it drops the mapped pages once per slab it reads."""
    monkeypatch.setattr(v, "_SLAB", slab)
    rng = np.random.default_rng(slab)
    table = np.zeros(50, _CHUNK_LOOKUP_DTYPE)
    table["key"] = np.sort(rng.integers(10, 60, 50)) * 2  # even keys, many repeated
    table["xorb"] = rng.integers(0, 1000, 50)
    table["chunk"] = np.arange(50)
    want = rng.integers(0, 130, 300).astype(np.uint64)  # odd ones fall between keys
    shard = _Drops()
    first, end, got = v._search_sorted_table(shard, table, want, ("xorb", "chunk"))
    keys = table["key"]
    assert first.tolist() == np.searchsorted(keys, want, "left").tolist()
    assert end.tolist() == np.searchsorted(keys, want, "right").tolist()
    inside = first < len(table)
    assert got["xorb"][inside].tolist() == table["xorb"][first[inside]].tolist()
    assert got["chunk"][inside].tolist() == first[inside].tolist()
    assert 1 <= shard.drops <= -(-len(table) // slab)
