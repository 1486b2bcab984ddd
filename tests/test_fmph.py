"""FMPH-GO (the ``ph`` crate's ``fmph::GOFunction``): parse, evaluate, build, bad bytes."""

from __future__ import annotations

import hashlib
import io
import random
import struct

import numpy as np
import pytest

from shardkit.errors import CorruptShardError, LayoutError, TruncatedError
from shardkit.hashing import fmph


def sha(i: int, length: int = 20, salt: bytes = b"") -> bytes:
    return hashlib.sha256(salt + b"key %d" % i).digest()[:length]


def siphash13_reference(k0: int, k1: int, msg: bytes) -> int:
    """SipHash-1-3 written from the paper's description, plainly (no precomputed prefix)."""
    mask = (1 << 64) - 1

    def rotl(x: int, b: int) -> int:
        return ((x << b) | (x >> (64 - b))) & mask

    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D,
         k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rnd() -> None:
        v[0] = (v[0] + v[1]) & mask; v[1] = rotl(v[1], 13); v[1] ^= v[0]; v[0] = rotl(v[0], 32)  # noqa: E702
        v[2] = (v[2] + v[3]) & mask; v[3] = rotl(v[3], 16); v[3] ^= v[2]  # noqa: E702
        v[0] = (v[0] + v[3]) & mask; v[3] = rotl(v[3], 21); v[3] ^= v[0]  # noqa: E702
        v[2] = (v[2] + v[1]) & mask; v[1] = rotl(v[1], 17); v[1] ^= v[2]; v[2] = rotl(v[2], 32)  # noqa: E702

    blocks = len(msg) // 8
    for i in range(blocks):
        m = int.from_bytes(msg[8 * i:8 * i + 8], "little")
        v[3] ^= m
        rnd()
        v[0] ^= m
    b = ((len(msg) & 0xFF) << 56) | int.from_bytes(msg[8 * blocks:], "little")
    v[3] ^= b
    rnd()
    v[0] ^= b
    v[2] ^= 0xFF
    for _ in range(3):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


# --- the hash -----------------------------------------------------------------------------------


def test_siphash13_published_vector() -> None:
    # SipHash-1-3 of the empty message under the zero key: Rust's DefaultHasher::new().finish()
    assert siphash13_reference(0, 0, b"") == 15130871412783076140


@pytest.mark.parametrize("length", [0, 1, 7, 8, 9, 15, 16, 20, 31, 32, 33, 64])
def test_siphash13_is_seed_len_key(length: int) -> None:
    rng = random.Random(length)
    for seed in (0, 1, 2, 9, 2**40 + 3):
        key = rng.randbytes(length)
        msg = struct.pack("<QQ", seed, length) + key
        want = siphash13_reference(0, 0, msg)
        assert fmph.siphash13(seed, key) == want
        rows = np.frombuffer(key * 3, np.uint8).reshape(3, length)
        assert fmph._np_siphash13(seed, rows).tolist() == [want] * 3


# --- build, parse, evaluate -------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 3, 63, 64, 65, 1000, 20000])
@pytest.mark.parametrize("length", [20, 32])
def test_build_is_a_bijection(n: int, length: int) -> None:
    keys = [sha(i, length) for i in range(n)]
    blob, ranks = fmph.build_with_ranks(keys)
    assert fmph.build(keys) == blob  # deterministic
    f = fmph.GOFunction.parse(blob)
    assert len(f) == n and f.size_bytes == len(blob) and f.trailing == 0
    assert sorted(ranks.tolist()) == list(range(n))
    assert f.values_of(keys).tolist() == ranks.tolist()
    assert f.get_many(keys) == ranks.tolist()
    sample = range(0, n, max(1, n // 300))
    assert [f.get(keys[i]) for i in sample] == [int(ranks[i]) for i in sample]
    assert [f._get_py(keys[i]) for i in sample] == [int(ranks[i]) for i in sample]
    # the same keys in another order give the same function and the same ranks
    order = list(range(n))
    random.Random(n).shuffle(order)
    blob2, ranks2 = fmph.build_with_ranks([keys[i] for i in order])
    assert blob2 == blob and ranks2.tolist() == [int(ranks[i]) for i in order]
    # a numpy key matrix gives the same
    if n:
        mat = np.frombuffer(b"".join(keys), np.uint8).reshape(n, length)
        blob3, ranks3 = fmph.build_with_ranks(mat)
        assert blob3 == blob and ranks3.tolist() == ranks.tolist()


def test_layout_of_small_functions() -> None:
    assert fmph.build([]) == bytes([16, 0, 4])
    one = fmph.build([b"a" * 20])
    # bits per group, 1 level of 4 groups, one u64 word of array, bits per seed, one seed word
    assert one[:3] == bytes([16, 1, 4]) and one[11] == 4 and len(one) == 20
    assert int.from_bytes(one[3:11], "little").bit_count() == 1


def test_mixed_key_lengths() -> None:
    keys = [sha(i, 1 + i % 40) for i in range(3000)]
    keys = list(dict.fromkeys(keys))
    blob, ranks = fmph.build_with_ranks(keys)
    f = fmph.GOFunction.parse(blob)
    assert sorted(ranks.tolist()) == list(range(len(keys)))
    assert f.get_many(keys) == ranks.tolist()
    assert [f._get_py(k) for k in keys[:200]] == ranks[:200].tolist()


def test_foreign_keys_agree_between_paths() -> None:
    keys = [sha(i) for i in range(5000)]
    f = fmph.GOFunction.parse(fmph.build(keys))
    others = [sha(i, salt=b"x") for i in range(3000)] + [b"", b"\x00", b"q" * 100]
    got = f.get_many(others)
    assert got == [f._get_py(k) for k in others] == [f.get(k) for k in others]
    assert any(v is None for v in got)  # some miss every level
    assert all(v is None or 0 <= v < 5000 for v in got)


def test_duplicates_are_refused() -> None:
    with pytest.raises(ValueError, match="not distinct"):
        fmph.build([b"k" * 20, b"j" * 20, b"k" * 20])


def test_ranks_of() -> None:
    keys = [sha(i) for i in range(777)]
    blob, ranks = fmph.build_with_ranks(keys)
    assert fmph.ranks_of(blob, keys).tolist() == ranks.tolist()
    assert fmph.ranks_of(fmph.GOFunction.parse(blob), keys[:5]).tolist() == ranks[:5].tolist()


# --- bad bytes -------------------------------------------------------------------------------


def test_named_errors() -> None:
    good = fmph.build([sha(i) for i in range(100)])
    with pytest.raises(LayoutError) as e:
        fmph.GOFunction.parse(b"\x08" + good[1:], base_offset=1000)
    assert e.value.offset == 1000 and e.value.field == "bits_per_group"
    with pytest.raises(TruncatedError) as t:
        fmph.GOFunction.parse(good[:-1], base_offset=50)
    assert t.value.field == "group_seeds" and t.value.offset == 50 + len(good) - 8
    seed_at = len(good) - 8 - 1
    with pytest.raises(LayoutError) as e:
        fmph.GOFunction.parse(good[:seed_at] + b"\x08" + good[seed_at + 1:])
    assert e.value.offset == seed_at and e.value.field == "bits_per_seed"
    with pytest.raises(LayoutError) as e:
        fmph.GOFunction.parse(bytes([16, 1, 0, 4]))
    assert e.value.field == "level_sizes/0" and e.value.offset == 2
    # a huge level count or level size is refused before anything is allocated
    with pytest.raises(TruncatedError) as t:
        fmph.GOFunction.parse(bytes([16]) + b"\xff" * 8 + b"\x7f" + b"\x00" * 10)
    assert t.value.field == "num_levels" and t.value.offset == 1
    with pytest.raises(TruncatedError) as t:
        fmph.GOFunction.parse(bytes([16, 1]) + b"\xff" * 8 + b"\x7f" + b"\x00" * 10)
    assert t.value.field == "level_sizes/0"
    with pytest.raises(TruncatedError):
        fmph.GOFunction.parse(b"")
    f = fmph.GOFunction.parse(good + b"extra")
    assert f.trailing == 5 and f.size_bytes == len(good)


def test_random_mutations_give_errors_or_answers() -> None:
    keys = [sha(i) for i in range(300)]
    good = fmph.build(keys)
    rng = random.Random(29)
    errors = answers = 0
    for trial in range(400):
        buf = bytearray(good)
        kind = trial % 4
        if kind == 0:
            buf = buf[:rng.randrange(len(buf))]
        elif kind == 1:
            for _ in range(rng.randrange(1, 4)):
                buf[rng.randrange(min(len(buf), 12))] = rng.randrange(256)
        elif kind == 2:
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        else:
            buf[rng.randrange(len(buf))] = rng.randrange(256)
            buf += rng.randbytes(rng.randrange(4))
        try:
            f = fmph.GOFunction.parse(bytes(buf), base_offset=7)
        except CorruptShardError as exc:
            assert exc.offset is not None and exc.offset >= 7 and exc.field
            errors += 1
            continue
        probes = keys[:40] + [sha(i, salt=b"foreign") for i in range(20)]
        values = f.get_many(probes)
        assert values == [f.get(k) for k in probes] == [f._get_py(k) for k in probes]
        assert f.values_of(probes).tolist() == [-1 if v is None else v for v in values]
        assert all(v is None or 0 <= v < len(f) for v in values)
        answers += 1
    assert errors > 50 and answers > 50


# --- the C accelerator answers as the Python path does -------------------------------------

native = fmph._native
needs_native = pytest.mark.skipif(native is None, reason="the C accelerator is not built")


@needs_native
def test_native_siphash13_matches_python() -> None:
    rng = random.Random(13)
    for length in range(0, 70):
        key = rng.randbytes(length)
        for seed in (0, 1, 5, 2**63 + 11):
            assert native.siphash13(seed, key) == fmph.siphash13(seed, key)


@needs_native
def test_native_evaluator_matches_python_on_every_key() -> None:
    keys = [sha(i, 20 + i % 13) for i in range(4000)]
    f = fmph.GOFunction.parse(fmph.build(keys))
    assert f._fast is not None and f.getter == f._fast.get
    probes = keys + [sha(i, 20 + i % 13, b"other") for i in range(4000)] + [b"", b"z" * 200]
    want = [f._get_py(k) for k in probes]
    assert f.get_many(probes) == want
    assert [f.get(k) for k in probes] == want
    assert [f.get(bytearray(k)) for k in probes[:50]] == want[:50]
    assert [f.get(memoryview(k)) for k in probes[:50]] == want[:50]
    assert f.values_of(probes).tolist() == [-1 if v is None else v for v in want]
    with pytest.raises(TypeError):
        f.get("text")  # type: ignore[arg-type]


@needs_native
def test_native_evaluator_refuses_inconsistent_regions() -> None:
    f = fmph.GOFunction.parse(fmph.build([sha(i) for i in range(100)]))
    levels = f._levels_blob()
    assert native.Evaluator(f._array, f._seeds, levels).ones() == 100
    for args in [(f._array[:-8], f._seeds, levels),
                 (f._array, f._seeds[:-8], levels),
                 (f._array, f._seeds, levels[:-1]),
                 (f._array, f._seeds, b"\0" * 8 + levels),
                 (f._array, f._seeds, b"\xff" * 8)]:
        with pytest.raises(ValueError):
            native.Evaluator(*args)


def test_without_the_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = [sha(i) for i in range(500)]
    blob, ranks = fmph.build_with_ranks(keys)
    monkeypatch.setattr(fmph, "_native", None)
    f = fmph.GOFunction.parse(blob)
    assert f._fast is None and f.getter == f._get_py
    assert [f.get(k) for k in keys] == f.get_many(keys) == ranks.tolist()


# --- the schema (schemas/ph_fmph_go.ksy) reads the same layout ------------------------------


@pytest.mark.parametrize("n", [0, 1, 1000, 30000])
def test_generated_parser_agrees(n: int) -> None:
    from shardkit.generated.ph_fmph_go import PhFmphGo

    blob = fmph.build([sha(i) for i in range(n)])
    f = fmph.GOFunction.parse(blob)
    p = PhFmphGo.from_bytes(blob)
    assert p.bits_per_group == 16 and p.bits_per_seed == 4
    assert tuple(level.size.value for level in p.level_sizes) == f.level_sizes
    assert [level.groups_before for level in p.level_sizes] == list(f._level_starts)
    assert p.num_groups == sum(f.level_sizes)
    assert p.array == f._array and p.group_seeds == f._seeds
    assert p._io.pos() == len(blob) == f.size_bytes
    assert sum(bin(b).count("1") for b in p.array) == n


def test_generated_vbyte_matches_binout() -> None:
    from kaitaistruct import KaitaiStream
    from shardkit.generated.ph_fmph_go import PhFmphGo

    for raw, want in [(b"\x00", 0), (b"\x7f", 127), (b"\x80\x01", 128), (b"\x80\x00", 0),
                      (b"\xff" * 8 + b"\xab", 0xABFFFFFFFFFFFFFF)]:
        assert PhFmphGo.Vbyte(KaitaiStream(io.BytesIO(raw))).value == want
        reader = fmph._Reader(memoryview(raw), 0)
        assert reader.vbyte("x") == want and reader.pos == len(raw)
    assert fmph._vbyte(300) == b"\xac\x02" and fmph._vbyte(1 << 40)[-1] < 0x80


@needs_native
@pytest.mark.parametrize("n", [0, 1, 5, 64, 65, 3000, 70000])
def test_native_build_gives_the_numpy_bytes(n: int) -> None:
    keys = [sha(i, 20 + (i % 3) * 6) for i in range(n)]
    blob, ranks = fmph.build_with_ranks(keys)
    blob_np, ranks_np = fmph.build_with_ranks(keys, native=False)
    assert blob == blob_np and ranks.tolist() == ranks_np.tolist()
    rows = np.frombuffer(b"".join(k[:20] for k in keys), np.uint8).reshape(n, 20)
    out = np.empty(n, np.uint64)
    assert native.hash_rows(3, rows, 20, out) == n
    assert out.tolist() == fmph._np_siphash13(3, rows).tolist()


@needs_native
def test_native_build_helpers_check_sizes() -> None:
    h = np.arange(10, dtype=np.uint64)
    with pytest.raises(ValueError):
        native.build_level(h, 4, bytearray(4), bytearray(4), np.empty(10, np.uint64),
                           bytearray(10))  # bits need 8 bytes
    with pytest.raises(ValueError):
        native.build_level(h, 6, bytearray(12), bytearray(6), np.empty(10, np.uint64),
                           bytearray(10))  # not a multiple of 4 groups
    with pytest.raises(ValueError):
        native.hash_rows(0, b"x" * 41, 20, np.empty(3, np.uint64))
    with pytest.raises(ValueError):
        native.hash_rows(0, b"x" * 40, 20, np.empty(1, np.uint64))
    out = np.zeros(3, np.uint64)
    assert native.hash_rows(7, b"", 0, out) == 3  # three empty keys
    assert out.tolist() == [fmph.siphash13(7, b"")] * 3


# --- properties ----------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(st.sets(st.binary(min_size=0, max_size=40), max_size=300))
def test_any_key_set_gives_a_bijection(keys: set[bytes]) -> None:
    ordered = sorted(keys)
    blob, ranks = fmph.build_with_ranks(ordered)
    assert sorted(ranks.tolist()) == list(range(len(ordered)))
    f = fmph.GOFunction.parse(blob)
    assert len(f) == len(ordered)
    assert f.get_many(ordered) == ranks.tolist() == [f._get_py(k) for k in ordered]
    assert fmph.build_with_ranks(ordered, native=False)[0] == blob


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.lists(st.binary(max_size=24), max_size=8))
def test_any_bytes_parse_or_fail_cleanly(data: bytes, probes: list[bytes]) -> None:
    try:
        f = fmph.GOFunction.parse(data, base_offset=100)
    except CorruptShardError as exc:
        assert exc.offset is not None and 100 <= exc.offset <= 100 + len(data) and exc.field
        return
    assert f.size_bytes + f.trailing == len(data)
    values = [f._get_py(k) for k in probes]
    assert f.get_many(probes) == values == [f.get(k) for k in probes]
    assert all(v is None or 0 <= v < len(f) for v in values)
