"""The one LRU cache (``shardkit._lru.ByteLRU``): eviction by bytes and by count, counters,
threads, and every cache of the library being one."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import shardkit
from shardkit._lru import ByteLRU
from shardkit.sources import BytesSource, CountingSource

DATA = Path(__file__).parent / "data"


def test_eviction_by_bytes_least_recently_used_first() -> None:
    lru: ByteLRU[str, bytes] = ByteLRU(10)
    lru.put("a", b"aaaa")
    lru.put("b", b"bbb")
    lru.put("c", b"cc")
    assert (len(lru), lru.nbytes) == (3, 9)
    assert lru.get("a") == b"aaaa"  # now the most recent: "b" is the oldest
    lru.put("d", b"dd")  # 11 bytes: "b" goes
    assert list(lru) == ["c", "a", "d"] and lru.nbytes == 8
    assert "b" not in lru and lru.evictions == 1
    lru.put("e", b"eeeeeeee")  # 16 bytes: "c", then "a" go
    assert list(lru) == ["d", "e"] and lru.nbytes == 10 and lru.evictions == 3


def test_charged_size_replacing_and_oversized_entries() -> None:
    lru: ByteLRU[int, object] = ByteLRU(100)
    lru.put(1, object(), 60)
    lru.put(1, "x", 30)  # replaced: charged once
    assert lru.nbytes == 30 and len(lru) == 1
    big = bytes(101)
    assert lru.put(2, big) is big  # larger than the whole budget: not kept, nothing dropped
    assert 2 not in lru and list(lru) == [1] and lru.evictions == 0
    assert lru.pop(1) == "x" and lru.pop(1) is None and lru.nbytes == 0


def test_eviction_by_count_and_by_both() -> None:
    counted: ByteLRU[int, str] = ByteLRU(None, max_items=3)
    for i in range(10):
        counted.put(i, "v" * 1000)
    assert list(counted) == [7, 8, 9] and counted.nbytes == 3000
    both: ByteLRU[int, bytes] = ByteLRU(25, max_items=3)
    both.put(0, bytes(5))
    both.put(1, bytes(5))
    both.put(2, bytes(5))
    both.put(3, bytes(5))  # the count bound
    assert list(both) == [1, 2, 3]
    both.put(4, bytes(20))  # the byte bound: 1 and 2 make room
    assert list(both) == [3, 4] and both.nbytes == 25
    none: ByteLRU[int, bytes] = ByteLRU(0)
    none.put(0, b"x")
    nothing: ByteLRU[int, bytes] = ByteLRU(None, max_items=0)
    nothing.put(0, b"")
    assert len(none) == len(nothing) == 0


def test_counters_and_peeking() -> None:
    lru: ByteLRU[str, bytes] = ByteLRU(100)
    lru.put("a", b"1")
    lru.put("b", b"2")
    assert lru.get("a") == b"1" and lru.get("zz") is None and lru.get("a") == b"1"
    assert (lru.hits, lru.misses) == (2, 1)
    assert "b" in lru and (lru.hits, lru.misses) == (2, 1)  # neither counted nor made recent
    assert list(lru) == ["b", "a"] and lru.values() == [b"2", b"1"]
    lru.clear()
    assert len(lru) == 0 and lru.nbytes == 0 and lru.hits == 2
    assert "2 hits, 1 misses" in repr(lru)


@pytest.mark.parametrize("bad", [-1, 1.5, "10"])
def test_bad_budgets_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="non-negative integer"):
        ByteLRU(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_items"):
        ByteLRU(None, max_items=bad)  # type: ignore[arg-type]


def test_shared_by_threads_stays_within_its_budgets() -> None:
    lru: ByteLRU[int, bytes] = ByteLRU(4096, max_items=50)
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(3000):
                key = (i * 31 + k) % 200
                got = lru.get(key)
                if got is None:
                    lru.put(key, bytes([key % 256]) * (1 + key % 97))
                else:
                    assert got == bytes([key % 256]) * (1 + key % 97)
                if i % 500 == 0:
                    lru.pop((key + 1) % 200)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    held = {k: v for k, v in zip(list(lru), lru.values(), strict=True)}
    assert len(held) <= 50 and lru.nbytes == sum(map(len, held.values())) <= 4096
    assert lru.evictions > 0


def test_every_cache_of_the_library_is_one() -> None:
    """RemoteSource, CountingSource, the SWH verify blocks, ZS and ZSS blocks and Neuroglancer
    indices all keep what they keep in a ByteLRU, within their own budgets."""
    from shardkit.formats.swh.reader import _Blocks

    counting = CountingSource(BytesSource(bytes(range(256)) * 40), block_size=100, max_blocks=4)
    for i in range(0, 10_000, 150):
        counting.read_range(i, i + 10)
    assert isinstance(counting._blocks, ByteLRU) and len(counting._blocks) == 4
    blocks = _Blocks(BytesSource(bytes(10_000)), block=1000, keep=2)
    for i in range(0, 10_000, 700):
        blocks.read_range(i, i + 1)
    assert isinstance(blocks._cache, ByteLRU) and len(blocks._cache) == 2
    with shardkit.open(DATA / "zss" / "medium_zlib.zss", cache_blocks=2,
                       cache_index_blocks=1) as z:
        keys = list(z.keys())
        for k in keys[:: max(1, len(keys) // 40)]:
            assert k in z
        assert isinstance(z._cache, ByteLRU) and isinstance(z._index_cache, ByteLRU)
        assert len(z._cache) == 2 and len(z._index_cache) <= 1
        assert z._cache.nbytes == sum(len(b.body) for _, b in z._cache.values())
    zs_path = DATA / "zs" / "made" / "binary-uleb128-deflate-bf3.zs"
    with shardkit.open(zs_path, cache_blocks=1) as zs:
        for k in list(zs.keys())[:50:7]:
            assert k in zs
        assert isinstance(zs._cache, ByteLRU) and len(zs._cache) == 1
    with shardkit.open(DATA / "neuroglancer" / "cv_identity_raw", cache_bytes=1 << 12) as ds:
        for k in list(ds.keys())[:30]:
            ds[k]
        assert isinstance(ds.kv.cache, ByteLRU) and 0 < ds.kv.cache.nbytes <= 1 << 12
