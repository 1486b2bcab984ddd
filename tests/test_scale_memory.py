"""Memory that does not grow with the file: mapped sources drop their pages, Neuroglancer
verify and iteration work a batch of minishards at a time."""

from __future__ import annotations

import gzip
import os
import struct
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from shardkit import sources
from shardkit.formats.neuroglancer import NgShard, ShardingSpec
from shardkit.formats.neuroglancer import shard as ng_shard
from shardkit.formats.neuroglancer import verify as ng_verify
from shardkit.sources import BytesSource, FileSource
from shardkit.writers.neuroglancer import build_shard


def _rss_file_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile line")


@pytest.fixture
def big_file(tmp_path: Path) -> tuple[Path, bytes]:
    data = np.random.default_rng(3).integers(0, 256, 16 << 20, dtype=np.uint8).tobytes()
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    return path, data


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_file_source_drops_mapped_pages(big_file: tuple[Path, bytes],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path, data = big_file
    monkeypatch.setattr(sources, "RELEASE_BYTES", 1 << 20)
    src = FileSource(path)
    view = src.view(0, 4096)  # a view taken before the pages are dropped
    before = _rss_file_kib()
    peak = before
    got = []
    for start in range(0, len(data), 1 << 16):
        got.append(src.read_range(start, start + (1 << 16)))
        peak = max(peak, _rss_file_kib())
    assert b"".join(got) == data
    assert src.releases >= 8  # 16 MiB read, 1 MiB (plus a page per read) between releases
    assert peak - before < 8 << 10  # never more than a few MiB of the 16 MiB resident
    assert bytes(view) == data[:4096]  # views stay valid: the pages are mapped again
    src.close()


def test_file_source_large_ranges_by_pread(big_file: tuple[Path, bytes],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path, data = big_file
    monkeypatch.setattr(sources, "RELEASE_BYTES", 1 << 20)
    src = FileSource(path)
    assert src.read_range(100, (4 << 20) + 100) == data[100 : (4 << 20) + 100]
    assert src.served == 0 and src.releases == 0  # read with pread, nothing mapped
    assert src.read_range(len(data) - 3, len(data)) == data[-3:]
    src.close()


SPEC = ShardingSpec.from_dict({"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity",
                               "preshift_bits": 0, "minishard_bits": 4, "shard_bits": 0,
                               "minishard_index_encoding": "gzip", "data_encoding": "gzip"})
ITEMS = {k: b"value %d" % k * (k % 5 + 1) for k in range(1, 400)}


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every minishard in a batch of its own (the code path of very large shards)."""
    monkeypatch.setattr(ng_verify, "_BATCH_INDEX_BYTES", 1)
    monkeypatch.setattr(ng_shard, "_BATCH_INDEX_BYTES", 1)


def _entry(data: bytes, m: int) -> tuple[int, int]:
    return struct.unpack_from("<QQ", data, 16 * m)


@pytest.mark.usefixtures("small_batches")
def test_batched_iteration_and_len() -> None:
    s = NgShard(BytesSource(build_shard(ITEMS, SPEC), name="0.shard"), SPEC)
    assert len(s) == len(ITEMS)
    assert dict(s.items()) == ITEMS
    assert sorted(s.keys()) == sorted(ITEMS)
    assert s.verify() == []


@pytest.mark.usefixtures("small_batches")
def test_batched_verify_finds_a_duplicate_across_batches() -> None:
    data = bytearray(build_shard(ITEMS, SPEC))
    struct.pack_into("<QQ", data, 16 * 2, *_entry(data, 9))  # minishard 2 lists 9's chunks
    problems = NgShard(BytesSource(bytes(data), name="0.shard"), SPEC).verify()
    dups = [p for p in problems if p.check == "duplicate_id"]
    # 9's index is checked after 2's: every id of 9 is found again there (20 reported)
    assert len(dups) == 20
    assert all("appears in minishard 2 and again in 9" in p.message for p in dups)
    hashes = [p for p in problems if p.check == "chunk_hash"]
    assert hashes[0].message.endswith("hashes to minishard 9, is listed in 2")
    assert hashes[-1].message.startswith("... and ")
    assert any(p.check == "overlap" for p in problems)  # two entries, one index


@pytest.mark.usefixtures("small_batches")
def test_batched_verify_finds_a_duplicate_whose_home_came_first() -> None:
    data = bytearray(build_shard(ITEMS, SPEC))
    struct.pack_into("<QQ", data, 16 * 12, *_entry(data, 3))  # minishard 12 lists 3's chunks
    problems = NgShard(BytesSource(bytes(data), name="0.shard"), SPEC).verify()
    dups = [p for p in problems if p.check == "duplicate_id"]
    assert len(dups) == 20
    assert all("appears in minishard 3 and again in 12" in p.message for p in dups)


def test_verify_duplicate_in_one_index_and_data_over_an_index() -> None:
    spec = ShardingSpec.from_dict({**SPEC.to_dict(), "minishard_index_encoding": "raw",
                                   "data_encoding": "raw"})
    data = bytearray(build_shard({1: b"a", 17: b"bb"}, spec))  # both in minishard 1
    start, end = _entry(data, 1)
    base = spec.shard_index_size
    index = np.frombuffer(bytes(data[base + start : base + end]), "<u8").reshape(3, 2).copy()
    index[0, 1] = 0  # second id delta 0: id 1 twice
    index[1, 0] = start  # first chunk's data starts at the index itself
    data[base + start : base + end] = index.tobytes()
    problems = NgShard(BytesSource(bytes(data), name="0.shard"), spec).verify()
    checks = [p.check for p in problems]
    assert "duplicate_id" in checks and "overlap" in checks
    over = next(p for p in problems if p.check == "overlap")
    assert over.offset == base + start and "minishard 1 index" in over.message


def test_gzip_problems_found_batch_by_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ng_verify, "_BATCH_INDEX_BYTES", 1)
    items = {k: os.urandom(50) for k in (1, 2, 3, 18)}
    data = bytearray(build_shard(items, SPEC))
    s = NgShard(BytesSource(bytes(data), name="0.shard"), SPEC)
    ref = s.locate(18)
    assert ref is not None and gzip.decompress(data[ref.start : ref.end]) == items[18]
    data[ref.start : ref.start + 3] = b"xyz"  # not a gzip stream any more
    problems = NgShard(BytesSource(bytes(data), name="0.shard"), SPEC).verify()
    assert [(p.check, p.field) for p in problems] == [("gzip", "/chunks/18")]


def test_mdb_items_walk_without_keeping(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from mdb_inputs import random_inputs

    from shardkit.formats.xet_mdb import MdbShard
    from shardkit.writers.xet_mdb import build_mdb

    files, xorbs = random_inputs(5000, 500, 4, 7)
    path = tmp_path / "s.mdb"
    path.write_bytes(build_mdb(files, xorbs))
    src = FileSource(path)
    s = MdbShard(src)
    assert len(s) == 5000
    assert src.releases >= 2  # the section walk let the pages go (every 4,096 blocks, end)
    got = list(s.items())
    assert [h for h, _ in got] == list(s.keys())
    assert all(f.hash == h for h, f in got)
    assert sorted(str(f.hash) for _, f in got) == sorted(str(f.hash) for f in files)
    assert all(item is None for item in s.files._items)  # nothing kept by the walk
    assert got[17][1] == s.files[17]  # indexing builds (and keeps) an equal file
    assert s.files._items[17] is not None
    checks = Counter(p.check for p in s.verify())  # random hashes: every one recomputed
    assert checks == {"file_hash": 5000, "verification_hash": 5000, "xorb_hash": 500}
    assert all(item is None for i, item in enumerate(s.files._items) if i != 17)
    s.close()
