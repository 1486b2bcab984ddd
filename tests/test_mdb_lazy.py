"""Xet MDB: lazy chunk lists, the numpy chunk index, and the section order verify() checks."""

from __future__ import annotations

import dataclasses
import pickle
import random
from pathlib import Path

import numpy as np
import pytest

from shardkit.formats.xet_mdb import (
    CHUNK_DTYPE,
    ChunkEntry,
    MdbShard,
    XetHash,
    XorbInfo,
)
from shardkit.sources import BytesSource
from shardkit.writers import xet_mdb as w

DATA = Path(__file__).parent / "data" / "mdb"
SAMPLES = [*sorted(DATA.glob("real/*/*.mdb")),
           DATA / "hf_server_global_dedup" / "gpt2-64-8bits.tflite.shard"]


def _ids(p: Path) -> str:
    return f"{p.parent.name}-{p.name[:8]}"


@pytest.mark.parametrize("path", SAMPLES, ids=_ids)
def test_lazy_chunks_equal_the_kaitai_path(path: Path) -> None:
    data = path.read_bytes()
    lazy = MdbShard(BytesSource(data))
    slow = MdbShard(BytesSource(data), engine="kaitai")
    assert all(x.chunks_loaded for x in slow.xorbs)
    assert not any(x.chunks_loaded for x in lazy.xorbs)
    # counts, records and record-level equality need no chunk objects
    assert [x.num_chunks for x in lazy.xorbs] == [len(x.chunks) for x in slow.xorbs]
    for x, k in zip(lazy.xorbs, slow.xorbs, strict=True):
        assert x.chunk_records.dtype == CHUNK_DTYPE and not x.chunk_records.flags.writeable
        assert x.chunk_records.tobytes() == k.chunk_records.tobytes()
    again = MdbShard(BytesSource(data))
    assert again.xorbs == lazy.xorbs  # lazy == lazy compares the records
    assert not any(x.chunks_loaded for x in lazy.xorbs + again.xorbs)
    # lazy == materialised (the Kaitai tree's tuples), in both directions
    assert lazy.xorbs == slow.xorbs and slow.xorbs == lazy.xorbs
    assert lazy.files == slow.files
    for x, k in zip(lazy.xorbs, slow.xorbs, strict=True):
        assert x.chunks_loaded and type(x.chunks) is tuple
        assert hash(x) == hash(k) and repr(x) == repr(k)
        for j, c in enumerate(k.chunks):
            got = x.chunks[j]
            assert type(got) is ChunkEntry and type(got.hash) is XetHash
            assert (got.hash, got.offset, got.size, got.flags, got.reserved) == tuple(c)
            assert got.global_dedup_eligible == c.global_dedup_eligible
    # whole-tree outputs, verify and the writer agree
    fresh = MdbShard(BytesSource(data))
    assert fresh.to_dict() == slow.to_dict()
    assert MdbShard(BytesSource(data)).verify() == slow.verify() == []
    assert w.build(MdbShard(BytesSource(data))) == data
    assert w.build(MdbShard(BytesSource(data)), engine="construct") == data


def test_lazy_xorb_behaves_like_the_dataclass() -> None:
    s = MdbShard(BytesSource(SAMPLES[0].read_bytes()))
    x = next(x for x in s.xorbs if x.num_chunks > 1)
    copy = pickle.loads(pickle.dumps(x))
    assert copy == x and not x.chunks_loaded
    plain = XorbInfo(x.hash, x.flags, tuple(x.chunks), x.num_bytes_in_xorb,
                     x.num_bytes_on_disk, x.record_index, x.offset)
    assert plain == x and hash(plain) == hash(x)
    assert dataclasses.replace(x, flags=1) != x
    assert dataclasses.asdict(x)["chunks"][0].size == x.chunks[0].size
    assert [f.name for f in dataclasses.fields(XorbInfo)][2] == "chunks"
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.chunks = ()  # type: ignore[misc]
    assert plain.chunk_records.tobytes() == s.xorb(x.hash).chunk_records.tobytes()
    assert XorbInfo(x.hash, 0, (), 0, 0).chunk_records.shape == (0,)
    with_table = MdbShard(BytesSource(w.build_mdb([], [plain])))
    assert with_table.xorb_lookup is not None
    found = with_table.xorb(x.hash)
    assert not found.chunks_loaded and found.chunks == x.chunks  # table lookups are lazy too


def _random_shard(seed: int, n_xorbs: int, per_xorb: int, n_files: int = 0,
                  repeat_every: int = 0) -> tuple[list, list]:
    rnd = random.Random(seed)
    xorbs, seen = [], []
    for _ in range(n_xorbs):
        chunks, pos = [], 0
        for j in range(per_xorb):
            h = (rnd.choice(seen) if repeat_every and seen and j % repeat_every == 0
                 else XetHash(rnd.randbytes(32)))
            seen.append(h)
            size = rnd.randint(1, 1000)
            chunks.append(ChunkEntry(h, pos, size, 0))
            pos += size
        xorbs.append(XorbInfo(XetHash(rnd.randbytes(32)), 0, tuple(chunks), pos, 0))
    files = [dataclasses.replace(_file(rnd), terms=()) for _ in range(n_files)]
    return files, xorbs


def _file(rnd: random.Random):  # an empty-file block with a random hash: only its order matters
    from shardkit.formats.xet_mdb import FileInfo

    return FileInfo(XetHash(rnd.randbytes(32)), 0, (), (), None)


@pytest.mark.parametrize("form", ["server", "upload", "full"])
def test_find_chunk_index_matches_a_scan(form: str) -> None:
    files, xorbs = _random_shard(11, n_xorbs=40, per_xorb=25, repeat_every=7)
    s = MdbShard(BytesSource(w.build_mdb(files, xorbs, form=form)))
    first: dict[bytes, tuple[bytes, int]] = {}
    for x in s.xorbs:
        for i, c in enumerate(x.chunks):
            first.setdefault(bytes(c.hash), (bytes(x.hash), i))
    fresh = MdbShard(BytesSource(w.build_mdb(files, xorbs, form=form)))
    for h, (xh_, i) in first.items():
        ref = fresh.find_chunk(h)
        assert ref is not None and ref.chunk.hash == h
        if form != "full":  # without a table: the first occurrence in section order
            assert (bytes(ref.xorb_hash), ref.chunk_index) == (xh_, i)
        x = fresh.xorbs[[y.record_index for y in fresh.xorbs].index(ref.xorb_record_index)]
        assert x.hash == ref.xorb_hash and x.chunk_records[ref.chunk_index]["hash"].tobytes() == h
    assert fresh.find_chunk(XetHash(bytes(32))) is None
    if form != "full":
        assert not any(x.chunks_loaded for x in fresh.xorbs)  # no object per chunk was built


def test_find_chunk_index_with_colliding_truncated_keys() -> None:
    # same first word, different rest: the full-hash check must pick the right record
    prefix = bytes(8)
    hashes = [XetHash(prefix + bytes([i]) * 24) for i in range(1, 6)]
    chunks = tuple(ChunkEntry(h, 10 * i, 10, 0) for i, h in enumerate(hashes))
    x = XorbInfo(XetHash(b"\x01" * 32), 0, chunks, 50, 0)
    for form in ("server", "full"):
        s = MdbShard(BytesSource(w.build_mdb([], [x], form=form)))
        for i, h in enumerate(hashes):
            assert s.find_chunk(h).chunk_index == i
        assert s.find_chunk(XetHash(prefix + b"\x09" * 24)) is None


def _order_checks(problems) -> list[tuple[str, str | None]]:
    return sorted((p.check, p.field) for p in problems if p.check in ("order", "lookup_table"))


def test_verify_reports_unsorted_sections_of_a_shard_with_tables() -> None:
    files, xorbs = _random_shard(5, n_xorbs=6, per_xorb=3, n_files=6)
    files.sort(key=lambda f: str(f.hash), reverse=True)
    xorbs.sort(key=lambda x: str(x.hash), reverse=True)
    full = MdbShard(BytesSource(w.build_mdb(files, xorbs, sort=False)))
    found = _order_checks(full.verify())
    assert ("order", "/file_info/blocks/1/file_hash") in found
    assert ("order", "/xorb_info/blocks/4/xorb_hash") in found
    # the tables mirror the unsorted sections, so their keys do not ascend either
    assert ("lookup_table", "/file_lookup/entries/1") in found
    assert ("lookup_table", "/xorb_lookup/entries/1") in found
    assert not any(p.check == "order" for p in MdbShard(BytesSource(
        w.build_mdb(files, xorbs))).verify())
    # no tables: FORMAT_NOTES promise no order (server copies, responses, huggingface.js)
    for form in ("server", "upload"):
        s = MdbShard(BytesSource(w.build_mdb(files, xorbs, form=form, sort=False)))
        assert _order_checks(s.verify()) == []
    # a table but an empty file section (xorb-metadata staging shard): xorbs still sorted
    only_x = MdbShard(BytesSource(w.build_mdb([], xorbs, sort=False, tables=("xorb",))))
    assert [c for c, _ in _order_checks(only_x.verify())] == ["lookup_table", "order"]


def test_verify_order_uses_the_whole_hash() -> None:
    # equal truncated keys: the tables ascend, the sections are still out of order
    a = XetHash(bytes(8) + b"\x02" * 24)
    b = XetHash(bytes(8) + b"\x01" * 24)
    xa = XorbInfo(a, 0, (ChunkEntry(XetHash(b"\x05" * 32), 0, 1, 0),), 1, 0)
    xb = XorbInfo(b, 0, (ChunkEntry(XetHash(b"\x06" * 32), 0, 1, 0),), 1, 0)
    s = MdbShard(BytesSource(w.build_mdb([], [xa, xb], sort=False)))
    assert _order_checks(s.verify()) == [("order", "/xorb_info/blocks/2/xorb_hash")]
    dup = MdbShard(BytesSource(w.build_mdb([], [xb, xb], sort=False)))  # duplicates: fine
    assert not [p for p in dup.verify() if p.check in ("order", "lookup_table")]


def test_verify_reports_an_unsorted_chunk_table() -> None:
    _, xorbs = _random_shard(3, n_xorbs=3, per_xorb=4)
    rows = [(XetHash(c.hash).truncated, 5 * i, j) for i, x in
            enumerate(sorted(xorbs, key=lambda x: str(x.hash)))
            for j, c in enumerate(x.chunks)]
    s = MdbShard(BytesSource(w.build_mdb([], xorbs, chunk_table=rows)))  # section order
    keys = np.array([r[0] for r in rows], np.uint64)
    first_bad = int(np.flatnonzero(keys[1:] < keys[:-1])[0]) + 1
    assert _order_checks(s.verify()) == [("lookup_table", f"/chunk_lookup/entries/{first_bad}")]
    assert s.find_chunk(xorbs[0].chunks[2].hash).chunk.hash == xorbs[0].chunks[2].hash
