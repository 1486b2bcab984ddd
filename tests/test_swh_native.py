"""The C accelerator of SWH shards gives exactly what the pure-Python path gives."""

from __future__ import annotations

import random

import numpy as np
import pytest
from conftest import SWH_SAMPLES, swh_path

import shardkit
from shardkit.formats.swh import reader
from shardkit.hashing.cmph_chd import jenkins_hash_vector

native = reader._native
pytestmark = pytest.mark.skipif(native is None, reason="the C accelerator is not built")


def test_hash_vector_matches_python() -> None:
    rng = random.Random(7)
    for length in range(0, 41):
        for _ in range(5):
            key = rng.randbytes(length)
            seed = rng.randrange(2**32)
            assert native.hash_vector(seed, key) == jenkins_hash_vector(seed, key)


def test_hash32_into_matches_python() -> None:
    rows = np.random.default_rng(3).integers(0, 256, (500, 32), dtype=np.uint8)
    a, b, c = (np.empty(500, np.uint32) for _ in range(3))
    assert native.hash32_into(rows, 12345, a, b, c) == 500
    want = [jenkins_hash_vector(12345, r.tobytes()) for r in rows]
    assert list(zip(a.tolist(), b.tolist(), c.tolist(), strict=True)) == want


@pytest.mark.parametrize("name", SWH_SAMPLES)
def test_slots_match_python(name: str) -> None:
    with shardkit.open(swh_path(name)) as s:
        fast = s._native_lookup
        rng = random.Random(name)
        keys = [*s.keys(), *(rng.randbytes(32) for _ in range(300))]
        want = [s._lookup.slot(k) for k in keys]
        assert [fast.slot(k) for k in keys] == want
        out = np.empty(len(keys), np.int64)
        assert fast.slots_into(b"".join(keys), out) == len(keys)
        assert out.tolist() == want
        assert fast.check_all() == -1
        # other key lengths hash too (the Python query takes any bytes)
        for k in (b"", b"x", rng.randbytes(33)):
            assert fast.slot(k) == s._lookup.slot(k)


def test_bad_arguments_are_refused() -> None:
    f = np.zeros(4, np.uint32)
    disp = np.zeros(2, np.int64)
    with pytest.raises(ValueError, match="out of range"):
        native.place(f, f + 1, np.array([0, 1, 2, 0], np.int64), 7, 2, 10, disp)
    keys = np.zeros((2, 32), np.uint8)
    with pytest.raises(ValueError, match="outside"):
        native.pairs(keys, np.array([0, 2], np.int64), b"abc", np.array([0, 1], np.int64),
                     np.array([1, 3], np.int64))
    with pytest.raises(ValueError, match="outside"):
        native.pairs(keys, np.array([0, 1], np.int64), b"abc", np.array([0, 1], np.int64),
                     np.array([1, 4], np.int64))
    assert native.pairs(keys, np.array([1, 0], np.int64), b"abc", np.array([0, 1], np.int64),
                        np.array([1, 3], np.int64)) == [(bytes(32), b"a"), (bytes(32), b"bc")]


def test_place_gives_an_injective_placement() -> None:
    rng = np.random.default_rng(11)
    m, n, nb = 2000, 2027, 501
    f = rng.integers(0, n, m).astype(np.uint32)
    h = (rng.integers(0, n - 1, m) + 1).astype(np.uint32)
    g = rng.integers(0, nb, m).astype(np.int64)
    disp = np.zeros(nb, np.int64)
    assert native.place(f, h, g, n, nb, 1 << 20, disp)
    d = disp[g].astype(np.uint64)
    bins = (f + h.astype(np.uint64) * (d % np.uint64(n)) + d // np.uint64(n)) % np.uint64(n)
    assert len(set(bins.tolist())) == m


def test_lookup_after_close_is_refused(tmp_path) -> None:
    s = shardkit.open(swh_path("tiny"))
    fast = s._native_lookup
    s.close()
    with pytest.raises(ValueError, match="released"):
        fast.slot(bytes(32))
    assert fast.get(bytes(32)) is None


def test_values_around_the_speculative_read(tmp_path, monkeypatch) -> None:
    """Values that fit the first pread, that end exactly at it, and that need a second.

    The first pread's length follows the last value's size (128 bytes to 4 KiB), so every
    value is also read right after every other: smaller, equal and larger than the one before.
    """
    from shardkit.writers.swh import write_swh

    monkeypatch.setattr(reader, "MAP_LOOKUPS_LIMIT", 0)  # pread, as for a large shard
    rng = random.Random(5)
    sizes = (0, 1, 119, 120, 121, 4087, 4088, 4089, 10_000, 100_000)
    values = [rng.randbytes(size) for size in sizes]
    items = {rng.randbytes(32): v for v in values}
    path = tmp_path / "sizes.shard"
    write_swh(path, items.items())
    with shardkit.open(path) as s:
        assert s._fd() >= 0
        fast = s._native_lookup
        for key, value in items.items():
            assert fast.get(key) == value
            assert s[key] == value
        got = [(len(v1), len(v2)) for k1, v1 in items.items() for k2, v2 in items.items()
               if fast.get(k1) != v1 or fast.get(k2) != v2]
        assert got == []


@pytest.mark.parametrize("name", SWH_SAMPLES)
@pytest.mark.parametrize("limit", [0, 1 << 40])
def test_pread_and_mapped_lookups_agree(name: str, limit: int, monkeypatch) -> None:
    """Lookups read with pread (large shards) or from the mapping (small ones) alike."""
    monkeypatch.setattr(reader, "MAP_LOOKUPS_LIMIT", limit)
    with shardkit.open(swh_path(name)) as s:
        fast = s._native_lookup
        keys = list(s.keys())
        want = {k: s._get_ranged(k, s._lookup.slot(k)) for k in keys}
        assert {k: fast.get(k) for k in keys} == want
        assert {k: s[k] for k in keys} == want
        assert fast.get(bytes(32)) is None and fast.get(b"short") is None
