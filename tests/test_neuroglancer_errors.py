"""Corrupt Neuroglancer shards give clear errors on read and precise problems in verify()."""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import numpy as np
import pytest

import shardkit
from shardkit.errors import (
    CorruptShardError,
    EntryNotFoundError,
    LayoutError,
    LimitExceededError,
    ShardkitError,
    TruncatedError,
)
from shardkit.formats.neuroglancer import NgShard, ShardingSpec, SpecError, gunzip_capped
from shardkit.sources import BytesSource
from shardkit.writers.neuroglancer import build_shard

SPEC = ShardingSpec.from_dict({"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity",
                               "preshift_bits": 0, "minishard_bits": 1, "shard_bits": 0,
                               "minishard_index_encoding": "raw", "data_encoding": "raw"})
ITEMS = {2: b"two", 4: b"four", 3: b"three"}


def shard_of(data: bytes, spec: ShardingSpec = SPEC) -> NgShard:
    return NgShard(BytesSource(data, name="0.shard"), spec)


def good() -> bytearray:
    return bytearray(build_shard(ITEMS, SPEC))


def entry(data: bytes, m: int) -> tuple[int, int]:
    return struct.unpack_from("<QQ", data, 16 * m)


def test_good_shard_is_sound() -> None:
    s = shard_of(bytes(good()))
    assert {k: s[k] for k in ITEMS} == ITEMS
    assert s.verify() == []


def test_truncated_shard_index() -> None:
    s = shard_of(bytes(good()[:20]))
    with pytest.raises(TruncatedError):
        s.shard_index()
    problems = s.verify()
    assert [p.check for p in problems] == ["shard_index_bounds"]
    with pytest.raises(TruncatedError):
        s[3]  # minishard 1's entry is at bytes [16, 32)


def test_entry_past_end_of_file() -> None:
    data = good()
    struct.pack_into("<QQ", data, 0, 0, 10**6)
    s = shard_of(bytes(data))
    with pytest.raises(TruncatedError) as info:
        s[2]
    assert info.value.field == "/minishards/0/index"
    assert "past the end" in str(info.value)
    problems = s.verify()
    assert any(p.check == "shard_index_bounds" and p.field == "/shard_index/entries/0"
               for p in problems)


def test_entry_ends_before_start() -> None:
    data = good()
    start, end = entry(data, 1)
    struct.pack_into("<QQ", data, 16, end, start)
    s = shard_of(bytes(data))
    with pytest.raises(LayoutError, match="ends before it starts"):
        s[3]
    assert [p.check for p in s.verify()] == ["shard_index_bounds"]


def test_minishard_index_not_a_multiple_of_24() -> None:
    data = good()
    start, end = entry(data, 0)
    struct.pack_into("<QQ", data, 0, start, end - 1)
    s = shard_of(bytes(data))
    with pytest.raises(LayoutError, match="multiple of 24") as info:
        s[2]
    assert info.value.field == "/minishards/0/index"
    assert any(p.check == "minishard_index" for p in s.verify())


def test_overlapping_minishard_indices() -> None:
    data = good()
    struct.pack_into("<QQ", data, 0, *entry(data, 1))  # both entries point at one index
    problems = shard_of(bytes(data)).verify()
    checks = {p.check for p in problems}
    assert "overlap" in checks and "chunk_hash" in checks and "duplicate_id" in checks


def test_data_out_of_bounds() -> None:
    spec = SPEC
    data = bytearray(build_shard({5: b"abc"}, spec))
    start, _ = entry(data, 1)
    base = 32
    # the size of the only chunk of minishard 1 (third u64 of its index)
    struct.pack_into("<Q", data, base + start + 16, 1000)
    s = shard_of(bytes(data))
    with pytest.raises(TruncatedError, match="past the end") as info:
        s[5]
    assert info.value.field == "/chunks/5"
    assert [p.check for p in s.verify()] == ["data_bounds"]


def test_running_sum_overflow() -> None:
    data = bytearray(build_shard({5: b"abc", 7: b"x"}, SPEC))
    start, _ = entry(data, 1)
    struct.pack_into("<Q", data, 32 + start + 8, 2**64 - 1)  # second id delta
    with pytest.raises(LayoutError, match="overflows"):
        shard_of(bytes(data))[5]


def test_bad_gzip_data_and_index() -> None:
    spec = ShardingSpec.from_dict({**SPEC.to_dict(), "data_encoding": "gzip",
                                   "minishard_index_encoding": "gzip"})
    data = bytearray(build_shard(ITEMS, spec))
    s = shard_of(bytes(data), spec)
    assert s[4] == b"four" and s.verify() == []
    # break the data of chunk 2 (the first bytes after the 32-byte index)
    data[32 + 12] ^= 0xFF
    s = shard_of(bytes(data), spec)
    with pytest.raises(CorruptShardError, match="gzip"):
        s[2]
    assert any(p.check == "gzip" for p in s.verify())
    # break a minishard index
    data = bytearray(build_shard(ITEMS, spec))
    start, _ = entry(data, 1)
    data[32 + start : 32 + start + 2] = b"xx"
    s = shard_of(bytes(data), spec)
    with pytest.raises(CorruptShardError, match="minishard 1 index: bad gzip"):
        s[3]


def test_gzip_cap() -> None:
    bomb = gzip.compress(bytes(10**6))
    with pytest.raises(LimitExceededError):
        gunzip_capped(bomb, 1000)
    assert gunzip_capped(bomb, 10**6) == bytes(10**6)
    with pytest.raises(CorruptShardError, match="truncated"):
        gunzip_capped(bomb[:-20], 10**7)
    spec = ShardingSpec.from_dict({**SPEC.to_dict(), "data_encoding": "gzip"})
    s = NgShard(BytesSource(build_shard({2: bytes(10**5)}, spec)), spec, max_decoded_size=100)
    with pytest.raises(LimitExceededError):
        s[2]


def test_non_integer_and_foreign_keys() -> None:
    s = shard_of(bytes(good()))
    with pytest.raises(EntryNotFoundError):
        s["2"]  # type: ignore[index]
    with pytest.raises(EntryNotFoundError):
        s[2**64]
    assert 2.0 not in s


def test_fuzzed_shards_never_escape(tmp_path: Path) -> None:
    """Each damaged shard gives an error, or a problem from verify, or the same chunks
    (gzip's CRC guards the data and the minishard indexes)."""
    rng = np.random.default_rng(5)
    spec = ShardingSpec.from_dict({**SPEC.to_dict(), "data_encoding": "gzip",
                                   "minishard_index_encoding": "gzip"})
    want = {k: bytes([k]) * k for k in range(1, 40)}
    base = build_shard(want, spec)
    outcomes = {"error": 0, "problem": 0, "unchanged": 0}
    for _ in range(300):
        data = bytearray(base)
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
        if rng.random() < 0.3:
            data = data[: int(rng.integers(0, len(data)))]
        s = shard_of(bytes(data), spec)
        try:
            problems = s.verify()
            got = {k: s[k] for k in s.keys()}
            named = {key: s[key] for key in (1, 17, 39)}
        except ShardkitError:
            outcomes["error"] += 1
            continue
        if problems:
            outcomes["problem"] += 1
            continue
        assert got == want
        assert named == {key: want[key] for key in named}
        outcomes["unchanged"] += 1
    assert outcomes["error"] and outcomes["unchanged"]


def test_info_json_that_is_too_deep_too_long_or_oddly_typed(tmp_path: Path) -> None:
    from shardkit.cli import main

    ds = tmp_path / "ds"
    ds.mkdir()
    for text in ("[" * 100000 + "]" * 100000, '{"a":' * 50000 + "1" + "}" * 50000,
                 "[" * 100 + "]" * 100):
        (ds / "info").write_text(text)
        with pytest.raises(SpecError, match="nested deeper than 64 levels") as exc:
            shardkit.open(ds)
        assert exc.value.field == "/"
        assert main(["info", str(ds)]) == 2
    (ds / "info").write_bytes(b" " * (1 << 24) + b"{}")
    with pytest.raises(LimitExceededError, match="more than 16777216"):
        shardkit.open(ds)
    (ds / "info").write_bytes(b"\xff\xfe{")
    with pytest.raises(SpecError, match="not JSON"):
        shardkit.open(ds)
    for kind in (["x"], {"a": 1}, 5):
        (ds / "info").write_text(json.dumps({"@type": kind, "sharding": None}))
        with pytest.raises(SpecError, match="@type must be a string") as exc:
            shardkit.open(ds)
        assert exc.value.field == "/@type"
    with pytest.raises(SpecError, match="nested"):
        ShardingSpec.coerce("[" * 100000)


def test_bad_info_files(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "info").write_text(json.dumps({"@type": "neuroglancer_skeletons", "sharding": {
        "@type": "neuroglancer_uint64_sharded_v1", "hash": "md5", "preshift_bits": 0,
        "minishard_bits": 0, "shard_bits": 0}}))
    with pytest.raises(SpecError) as info:
        shardkit.open(ds)
    assert info.value.field == "/sharding/hash"
    (ds / "info").write_text(json.dumps({"@type": "neuroglancer_multiscale_volume",
                                         "data_type": "uint8", "num_channels": 1,
                                         "scales": [{"key": "a", "size": [1, 2],
                                                     "chunk_sizes": [[1, 1, 1]],
                                                     "sharding": {}}]}))
    with pytest.raises(SpecError) as info:
        shardkit.open(ds)
    assert info.value.field == "/scales/0/size"
    (ds / "info").write_text("{nope")
    with pytest.raises(SpecError, match="not JSON"):
        shardkit.open(ds)


# -- errors reading an info or a file keep their cause; a bug is not "no info" ---------------


def _memory_dataset(name: str) -> str:
    """A bare shard with a key-value ``info`` beside it, in fsspec's memory filesystem."""
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe(f"/{name}/info", json.dumps({"@type": "neuroglancer_legacy_mesh",
                                          "sharding": SPEC.to_dict()}).encode())
    fs.pipe(f"/{name}/0.shard", build_shard({1: b"x"}, SPEC))
    return f"memory://{name}/0.shard"


def test_an_info_that_cannot_be_read_is_an_error_with_its_cause(monkeypatch) -> None:
    """Reading the info beside a shard fails (no access, an HTTP status, a broken
    connection): that is an error with its cause, not "no info here"."""
    from fsspec.implementations.memory import MemoryFileSystem

    from shardkit.formats.neuroglancer.loader import sibling_spec

    url = _memory_dataset("denied")
    assert sibling_spec(url)["spec"] == SPEC  # type: ignore[index]

    def denied(self, path, *args, **kwargs):
        raise PermissionError(13, "access denied", path)

    monkeypatch.setattr(MemoryFileSystem, "cat_file", denied)
    with pytest.raises(ShardkitError, match="cannot read memory://denied/info") as info:
        sibling_spec(url)
    assert isinstance(info.value.__cause__, PermissionError)


def test_no_info_or_a_bad_info_is_no_spec() -> None:
    import fsspec

    from shardkit.formats.neuroglancer.loader import sibling_spec

    url = _memory_dataset("badinfo")
    fsspec.filesystem("memory").pipe("/badinfo/info", b"{not json")
    assert sibling_spec(url) is None
    fsspec.filesystem("memory").rm("/badinfo/info")
    assert sibling_spec(url) is None


def test_a_bug_while_reading_an_info_is_not_swallowed(monkeypatch) -> None:
    from fsspec.implementations.memory import MemoryFileSystem

    from shardkit.formats.neuroglancer.loader import sibling_spec

    url = _memory_dataset("bug")

    def bug(self, path, *args, **kwargs):
        raise TypeError("a bug")

    monkeypatch.setattr(MemoryFileSystem, "cat_file", bug)
    with pytest.raises(TypeError, match="a bug"):
        sibling_spec(url)


def test_range_source_read_prefix_and_listing_keep_bugs_and_causes(monkeypatch) -> None:
    """A shard's source (an exact RemoteSource) keeps an I/O error in the chain of the
    RemoteError it raises; a bug propagates as itself. A folder that cannot be listed has no
    listing; a bug while listing propagates."""
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    from shardkit.formats.neuroglancer.store import _Store
    from shardkit.remote import RemoteError, RemoteSource

    def source() -> RemoteSource:
        return RemoteSource("a.bin", fs=fs, path="/prefix/a.bin", exact=True, retries=0)

    fs = fsspec.filesystem("memory")
    fs.pipe("/prefix/a.bin", b"abcdef")
    src = source()
    assert src.read_head(4) == b"abcd"
    assert src.read_head(10) == b"abcdef" and src.size == 6  # the size learned, no stat

    def refused(self, path, start=None, end=None, **kwargs):
        raise OSError("416 range not satisfiable")

    monkeypatch.setattr(MemoryFileSystem, "cat_file", refused)
    with pytest.raises(RemoteError) as info:
        source().read_head(4)
    chain, exc = [], info.value
    while exc is not None:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    assert any(type(e) is OSError and "416" in str(e) for e in chain)
    assert "a.bin: cannot read bytes [0, 4): OSError: 416" in str(info.value)

    def bug(self, path, start=None, end=None, **kwargs):
        raise TypeError("a bug")

    monkeypatch.setattr(MemoryFileSystem, "cat_file", bug)
    with pytest.raises(TypeError, match="a bug"):
        source().read_head(4)

    store = _Store.__new__(_Store)
    store.fs, store.root = fs, "/prefix"
    assert store._list() == ["a.bin"]
    store.root = "/nowhere"
    monkeypatch.setattr(MemoryFileSystem, "ls", lambda self, *a, **k: (_ for _ in ()).throw(
        PermissionError("no access")))
    assert store._list() is None
    monkeypatch.setattr(MemoryFileSystem, "ls", lambda self, *a, **k: (_ for _ in ()).throw(
        TypeError("a bug")))
    with pytest.raises(TypeError, match="a bug"):
        store._list()
