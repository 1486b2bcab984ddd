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


# -- the C path and the pure-Python path agree on damaged input too ------------------------


def _verify_with(data: bytes, accelerator: object, monkeypatch: pytest.MonkeyPatch) -> object:
    """``verify()``'s problems (or the error) of a shard in memory, through one path."""
    monkeypatch.setattr(reader, "_native", accelerator)
    try:
        with shardkit.open(data, format="swh") as s:
            return s.verify()
    except shardkit.ShardkitError as exc:
        return type(exc), str(exc)


def test_verify_sees_a_one_in_the_bit_vector_padding(monkeypatch) -> None:
    """The select bit vector is stored in whole 32-bit words; a one in the padding after
    bit n + m is a fault that the Python decoder counts (n + 1 ones): check_all finds it too,
    so verify() reports it with the accelerator as without."""
    data = swh_path("medium").read_bytes()
    with shardkit.open(data, format="swh") as s:
        base, lay = s.header.hash_position, s.layout
    nbits = lay.nbuckets + lay.sel_m
    assert nbits % 32  # the sample has padding bits
    reported = 0
    for bit in range(nbits, (nbits + 31) // 32 * 32):
        bad = bytearray(data)
        bad[base + lay.bits_vec + bit // 8] ^= 1 << (bit % 8)
        fast = _verify_with(bytes(bad), native, monkeypatch)
        pure = _verify_with(bytes(bad), None, monkeypatch)
        assert fast == pure
        assert [p.check for p in fast] == ["hash_function"]  # type: ignore[union-attr]
        assert "bits set, expected n = 251" in fast[0].message  # type: ignore[index]
        reported += 1
    assert reported == (nbits + 31) // 32 * 32 - nbits


def test_verify_agrees_on_bit_flips_of_the_hash_function(monkeypatch) -> None:
    """Every single-bit flip of the compressed sequence of a small sample: the same
    problems (or error) with the accelerator and without."""
    data = swh_path("medium").read_bytes()
    with shardkit.open(data, format="swh") as s:
        base, lay = s.header.hash_position, s.layout
    rng = random.Random(33)
    differ = []
    flips = [(b, rng.randrange(8)) for b in range(lay.bits_vec, lay.tail)]
    for byte, bit in flips:
        bad = bytearray(data)
        bad[base + byte] ^= 1 << bit
        fast = _verify_with(bytes(bad), native, monkeypatch)
        pure = _verify_with(bytes(bad), None, monkeypatch)
        if fast != pure:
            differ.append((byte, bit))
    assert differ == []


# -- the builder writes the same bytes with the accelerator and without --------------------


def _place_buckets2(f: np.ndarray, h: np.ndarray, g: np.ndarray, n: int, nbuckets: int
                    ) -> list[int]:
    """cmph's place_buckets2, one probe at a time: buckets by size, largest first; the
    waiting buckets of a size try displacement 0, 1, 2... in bucket order."""
    members: list[list[int]] = [[] for _ in range(nbuckets)]
    for i, b in enumerate(g.tolist()):
        members[b].append(i)
    used: set[int] = set()
    disp = [0] * nbuckets
    for size in range(max(map(len, members)), 0, -1):
        waiting = [b for b in range(nbuckets) if len(members[b]) == size]
        d = 0
        while waiting:
            left = []
            for b in waiting:
                bins = [(int(f[i]) + int(h[i]) * (d % n) + d // n) % n for i in members[b]]
                if len(set(bins)) == size and used.isdisjoint(bins):
                    used.update(bins)
                    disp[b] = d
                else:
                    left.append(b)
            waiting, d = left, d + 1
    return disp


@pytest.mark.parametrize("seed", range(12))
def test_both_searches_are_place_buckets2(seed: int) -> None:
    """The C search and the numpy search give place_buckets2's displacements exactly."""
    from shardkit.hashing.cmph_build import _place, next_prime

    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 900))
    n, nb = next_prime(int(m / 0.99) + 1), m // 4 + 1
    while True:  # no two keys of a bucket with one (f, h): they never place
        f = rng.integers(0, n, m).astype(np.uint32)
        h = (rng.integers(0, n - 1, m) + 1).astype(np.uint32)
        g = rng.integers(0, nb, m).astype(np.int64)
        if len(set(zip(g.tolist(), f.tolist(), h.tolist(), strict=True))) == m:
            break
    want = _place_buckets2(f, h, g, n, nb)
    disp = np.zeros(nb, np.int64)
    assert native.place(f, h, g, n, nb, 1 << 20, disp) is True
    assert disp.tolist() == want
    assert _place(f, h, g, n, nb, 1 << 20).tolist() == want


_RANDOM_M = [int(x) for x in np.random.default_rng(2026).integers(1, 6000, 6)]


@pytest.mark.parametrize("m", [1, 2, 5, 130, 2000, 20_000, *_RANDOM_M])
def test_builder_bytes_do_not_depend_on_the_accelerator(m: int, monkeypatch) -> None:
    from shardkit.hashing.cmph_build import build_chd_ph

    keys = np.random.default_rng(m).integers(0, 256, (m, 32), dtype=np.uint8)
    fast = build_chd_ph(keys)
    monkeypatch.setattr(reader, "_native", None)
    pure = build_chd_ph(keys)
    assert (fast.seed, fast.n, fast.nbuckets) == (pure.seed, pure.n, pure.nbuckets)
    assert fast.dump == pure.dump
    assert fast.slots.tolist() == pure.slots.tolist()


# -- _native.Lookup made directly: bad arguments are refused, never used --------------------


def _lookup_args(s: shardkit.formats.swh.SwhShard) -> list:  # type: ignore[name-defined]
    lay = s.layout
    return [s._dump, lay.n, lay.nbuckets, lay.seed, lay.rem_r, lay.total_length, lay.sel_m,
            lay.bits_vec, lay.select_table, lay.length_rems, lay.store_table, lay.dump_size,
            s._mem, -1, s._index_pos, s.num_slots, s._obj_lo, s._obj_hi]


def test_lookup_init_again_with_bad_arguments_leaves_it_released() -> None:
    """A second __init__ that fails leaves nothing half set: calls say "released" (it used
    to keep the dump with no checked-block table, and slot() then crashed)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import shardkit, pytest
        from shardkit.formats.swh import _native
        import test_swh_native as t
        with shardkit.open({str(swh_path("medium"))!r}) as s:
            args = t._lookup_args(s)
            key = next(iter(s.keys()))
            fast = _native.Lookup(*args)
            assert fast.slot(key) == s._lookup.slot(key)
            bad = list(args)
            bad[2] = 0  # nbuckets
            with pytest.raises(ValueError, match="inconsistent"):
                fast.__init__(*bad)
            for call in (lambda: fast.slot(key), fast.check_all,
                         lambda: fast.slots_into(key, bytearray(8))):
                with pytest.raises(ValueError, match="released"):
                    call()
            assert fast.get(key) is None
            fast.__init__(*args)  # and it can be set up again
            assert fast.get(key) == s[key] and fast.check_all() == -1
            fast.close()
        print("ok")
    """)
    here = str(swh_path("medium").parent.parent.parent)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=here, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


@pytest.mark.parametrize(("field", "value"), [
    (1, -1),            # n: K used to take it as 2**64 - 1
    (14, -40),          # index_pos
    (15, -1),           # num_slots
    (6, 2**64 - 100),   # sel_m: nbuckets + sel_m used to wrap
    (6, 2**32),         # sel_m: more bits than the dump holds
    (14, 2**64 - 40),   # index_pos + slot * 40 used to wrap to the start of the file
    (7, 10**6),         # bits_vec past the dump
    (16, 10**9),        # obj_lo above obj_hi
    (1, "7"),           # not an int
])
def test_lookup_refuses_arguments_that_would_wrap(field: int, value: object) -> None:
    with shardkit.open(swh_path("medium")) as s:
        args = _lookup_args(s)
        args[field] = value
        with pytest.raises((ValueError, TypeError)):
            native.Lookup(*args)


def _drop_from_page_cache(path) -> None:
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def test_close_waits_for_reads_running_without_the_gil(tmp_path, monkeypatch) -> None:
    """Threads read with pread (the GIL let go) while the reader closes: every call returns
    a value, None or "released", and close() frees nothing under a running read."""
    import threading

    from shardkit.writers.swh import write_swh

    monkeypatch.setattr(reader, "MAP_LOOKUPS_LIMIT", 0)
    rng = random.Random(8)
    items = {rng.randbytes(32): rng.randbytes(rng.choice([10, 5000, 70_000]))
             for _ in range(300)}
    path = tmp_path / "t.shard"
    write_swh(path, items.items())
    keys = list(items)
    for _ in range(5):
        s = shardkit.open(path)
        fast = s._native_lookup
        assert s._fd() >= 0
        wrong: list[object] = []
        go = threading.Event()

        def read(fast=fast, wrong=wrong, go=go) -> None:
            go.wait()
            for i in range(3000):
                key = keys[i % len(keys)]
                try:
                    value = fast.get(key)
                    fast.slots_into(key, np.empty(1, np.int64))
                except ValueError as exc:
                    if "released" not in str(exc):
                        wrong.append(exc)
                    continue
                if value is not None and value != items[key]:
                    wrong.append(key)

        threads = [threading.Thread(target=read) for _ in range(4)]
        for t in threads:
            t.start()
        _drop_from_page_cache(path)  # reads that wait for the disk: without the GIL
        go.set()
        s.close()
        for t in threads:
            t.join()
        assert wrong == []
        assert fast.get(keys[0]) is None
