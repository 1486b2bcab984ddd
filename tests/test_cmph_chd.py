"""Tests for shardkit.hashing.cmph_chd, the pure-Python cmph CHD_PH query."""

from __future__ import annotations

import os
import random
import struct
from pathlib import Path

import pytest

from shardkit.hashing.cmph_chd import ChdPh, CmphError, jenkins_hash_vector

DATA = Path(__file__).parent / "data" / "swh"
SHARDS = ["tiny", "single", "medium", "deleted"]
HEADER = struct.Struct(">7Q")  # at offset 32 of a shard
ENTRY = struct.Struct(">32sQ")  # one index entry
ZERO_KEY = bytes(32)


def read_shard(path: Path) -> tuple[list[tuple[bytes, int]], bytes]:
    """Returns the index entries and the cmph dump of a read shard."""
    data = path.read_bytes()
    (_version, _count, _opos, _osize, index_pos, index_size, hash_pos) = HEADER.unpack_from(
        data, 32
    )
    assert index_size % ENTRY.size == 0
    entries = [
        ENTRY.unpack_from(data, index_pos + i * ENTRY.size) for i in range(index_size // ENTRY.size)
    ]
    assert hash_pos == index_pos + index_size
    return entries, data[hash_pos:]


def live_slots(entries: list[tuple[bytes, int]]) -> dict[bytes, int]:
    """Maps every live key of an index to its entry number (its slot)."""
    return {key: i for i, (key, _offset) in enumerate(entries) if key != ZERO_KEY}


@pytest.fixture(scope="module", params=SHARDS)
def shard(request: pytest.FixtureRequest) -> tuple[str, list[tuple[bytes, int]], bytes]:
    """One corpus shard: its name, index entries and cmph dump."""
    entries, dump = read_shard(DATA / f"{request.param}.shard")
    return request.param, entries, dump


# --- (a) corpus shards --------------------------------------------------------------------


def test_corpus_slot_matches_index(shard: tuple[str, list[tuple[bytes, int]], bytes]) -> None:
    name, entries, dump = shard
    mphf = ChdPh.from_dump(dump)
    assert mphf.dump_size == len(dump), "the dump must end exactly at EOF"
    assert mphf.n == len(entries), "cmph_size() is the number of index entries"
    slots = live_slots(entries)
    assert slots, name
    for key, slot in slots.items():
        assert mphf.slot(key) == slot
    # Empty slots and tombstones use the zero key with offset 0 or 2**64 - 1.
    for key, offset in entries:
        if key == ZERO_KEY:
            assert offset in (0, 2**64 - 1)


def test_corpus_parameters() -> None:
    # Values read from the dumps by hand (layout in cmph's chd_ph.c / compressed_seq.c).
    expected = {
        "tiny": (11, 1, 1),
        "single": (11, 1, 0),
        "medium": (1013, 251, 777),
        "deleted": (211, 51, 115),
    }
    for name, (n, nbuckets, seed) in expected.items():
        mphf = ChdPh.from_dump(read_shard(DATA / f"{name}.shard")[1])
        assert (mphf.n, mphf.nbuckets, mphf.seed) == (n, nbuckets, seed)
        assert len(mphf.displacements) == nbuckets


def test_single_object_shard_uses_n_11() -> None:
    # cmph 2.0.2 rounds n up to a "prime" with check_primality(), which rejects every
    # multiple of 2, 3, 5 and 7 (including 3, 5 and 7 themselves): one key gives n = 11,
    # so n - 1 is never 0 for dumps cmph writes.
    entries, dump = read_shard(DATA / "single.shard")
    mphf = ChdPh.from_dump(dump)
    assert mphf.n == 11 and mphf.nbuckets == 1 and mphf.displacements == (0,)
    (key,) = live_slots(entries)
    assert mphf.slot(key) == live_slots(entries)[key]


def test_dump_input_types_and_trailing_bytes() -> None:
    _, dump = read_shard(DATA / "medium.shard")
    reference = ChdPh.from_dump(dump)
    for variant in (bytearray(dump), memoryview(dump), memoryview(dump + b"junk")[: len(dump)]):
        assert ChdPh.from_dump(variant) == reference
    extended = ChdPh.from_dump(dump + b"\0" * 9)
    assert extended == reference
    assert extended.dump_size == len(dump)


def test_from_parts_matches_from_dump() -> None:
    _, dump = read_shard(DATA / "deleted.shard")
    mphf = ChdPh.from_dump(dump)
    (cs_size,) = struct.unpack_from("<I", dump, 27)
    cs_bytes = dump[31 : 31 + cs_size]
    rebuilt = ChdPh.from_parts(mphf.n, mphf.nbuckets, mphf.seed, cs_bytes)
    assert rebuilt == mphf
    assert rebuilt.dump_size == len(dump)


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match="n must be"):
        ChdPh(1, 1, 0, (0,))
    with pytest.raises(ValueError, match="nbuckets"):
        ChdPh(11, 0, 0, ())
    with pytest.raises(ValueError, match="displacements"):
        ChdPh(11, 2, 0, (0,))
    with pytest.raises(ValueError, match="seed"):
        ChdPh(11, 1, 2**32, (0,))
    with pytest.raises(ValueError):
        ChdPh.from_parts(1, 1, 0, b"")


def test_n_equal_two_is_computed_without_dividing_by_zero() -> None:
    # With n = 2, h = hl[2] % 1 + 1 = 1 and, with displacement 0, the slot is hl[1] % 2.
    mphf = ChdPh(2, 1, 5, (0,))
    rng = random.Random(7)
    for _ in range(100):
        key = rng.randbytes(32)
        assert mphf.slot(key) == jenkins_hash_vector(5, key)[1] % 2


def test_generic_length_path_agrees_with_32_byte_path() -> None:
    # slot() unrolls the hash for 32-byte keys; other lengths go through jenkins_hash_vector.
    _, dump = read_shard(DATA / "medium.shard")
    mphf = ChdPh.from_dump(dump)
    rng = random.Random(8)
    for _ in range(500):
        key = rng.randbytes(32)
        a, b, c = jenkins_hash_vector(mphf.seed, key)
        disp = mphf.displacements[a % mphf.nbuckets]
        n = mphf.n
        expected = (b % n + (c % (n - 1) + 1) * (disp % n) + disp // n) % n
        assert mphf.slot(key) == expected
        assert mphf.slot(bytearray(key)) == expected


# --- (b) numpy batch path -----------------------------------------------------------------


def test_slots_matches_slot(shard: tuple[str, list[tuple[bytes, int]], bytes]) -> None:
    np = pytest.importorskip("numpy")
    _, entries, dump = shard
    mphf = ChdPh.from_dump(dump)
    keys = list(live_slots(entries))
    rng = random.Random(9)
    keys += [rng.randbytes(32) for _ in range(2000)]
    keys += [bytes(rng.randrange(0x80, 0x100) for _ in range(32)) for _ in range(200)]
    got = mphf.slots(keys)
    assert got.dtype == np.int64
    assert got.tolist() == [mphf.slot(k) for k in keys]
    rows = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 32)
    assert mphf.slots(rows).tolist() == got.tolist()


@pytest.mark.parametrize("length", [0, 1, 4, 11, 12, 13, 23, 24, 25, 31, 33, 36, 40, 64])
def test_slots_other_lengths(length: int) -> None:
    pytest.importorskip("numpy")
    mphf = ChdPh.from_dump(read_shard(DATA / "deleted.shard")[1])
    rng = random.Random(length)
    keys = [rng.randbytes(length) for _ in range(300)]
    assert mphf.slots(keys).tolist() == [mphf.slot(k) for k in keys]


def test_slots_mixed_lengths_and_empty() -> None:
    np = pytest.importorskip("numpy")
    mphf = ChdPh.from_dump(read_shard(DATA / "tiny.shard")[1])
    rng = random.Random(10)
    keys = [rng.randbytes(rng.randrange(0, 50)) for _ in range(200)]
    assert mphf.slots(keys).tolist() == [mphf.slot(k) for k in keys]
    assert mphf.slots([]).shape == (0,)
    assert mphf.slots(np.zeros((0, 32), dtype=np.uint8)).shape == (0,)
    with pytest.raises(ValueError, match="2-D uint8"):
        mphf.slots(np.zeros(32, dtype=np.uint8))


# --- (c) Jenkins known answers ------------------------------------------------------------

# (seed, key, (hashes[0], hashes[1], hashes[2])).  These were obtained by calling
# jenkins_hash_vector_() of the libcmph 2.0.2 bundled in the swh.perfecthash 1.3.2 wheel
# (through ctypes, with a jenkins_state_t {hashfunc = CMPH_HASH_JENKINS, seed}); the same
# library built the corpus shards, whose every slot test_corpus_slot_matches_index checks.
# Keys with bytes >= 0x80 pin the unsigned-byte reading of the key (a signed-char reading,
# as in very old cmph sources, gives different words, e.g. for the 0x80..0x9f key below).
JENKINS_VECTORS = [
    (0x0, "", (2603532349, 3677055406, 3175731469)),
    (0x1, "", (1839820418, 2661149084, 1843378377)),
    (0x0, "61", (2488580771, 3071395592, 703514648)),
    (0xFFFFFFFF, "ff", (3050095181, 2815452483, 715823293)),
    (0x309, "68656c6c6f20776f726c64", (2132839464, 2904745095, 2963213676)),
    (0x309, "68656c6c6f20776f726c6421", (1986017896, 3303898225, 3793148292)),
    (0x309, "68656c6c6f20776f726c642121", (2123489562, 2075767727, 519038825)),
    (0x0, bytes(range(32)).hex(), (239849106, 2366780768, 2659612738)),
    (0x1, bytes(range(0x80, 0xA0)).hex(), (2745480836, 260361832, 2909049700)),
    (0xFFFFFFFF, "ff" * 32, (2628122580, 986583718, 80705087)),
    (0x80000000, "80" * 32, (2646314722, 3695532131, 1698314802)),
    (
        0x73,
        (bytes(range(0xE0, 0x100)) + bytes(range(0x80, 0x88))).hex(),
        (3727352959, 3653849998, 3082888975),
    ),
    (0x0, bytes(range(200, 236)).hex(), (2795915103, 2587235594, 3654234624)),
    (0x2A, "fe" * 23, (1879062505, 4282701265, 3512668164)),
]


@pytest.mark.parametrize(("seed", "key_hex", "expected"), JENKINS_VECTORS)
def test_jenkins_known_answers(seed: int, key_hex: str, expected: tuple[int, int, int]) -> None:
    key = bytes.fromhex(key_hex)
    assert jenkins_hash_vector(seed, key) == expected
    assert jenkins_hash_vector(seed, memoryview(key)) == expected


def test_jenkins_rejects_bad_seed() -> None:
    with pytest.raises(ValueError):
        jenkins_hash_vector(-1, b"")
    with pytest.raises(ValueError):
        jenkins_hash_vector(2**32, b"")


def test_fast_path_matches_known_answer() -> None:
    # The unrolled 32-byte path of slot() must agree with the pinned hash words.
    seed, key_hex, (h0, h1, h2) = JENKINS_VECTORS[8]
    n, nbuckets = 1013, 251
    displacements = tuple(range(nbuckets))
    mphf = ChdPh(n, nbuckets, seed, displacements)
    disp = displacements[h0 % nbuckets]
    expected = (h1 % n + (h2 % (n - 1) + 1) * (disp % n) + disp // n) % n
    assert mphf.slot(bytes.fromhex(key_hex)) == expected


# --- (d) malformed dumps ------------------------------------------------------------------

# Offsets of the fixed-position fields of a chd_ph dump with a jenkins hash state.
OFF_SIZE, OFF_HL_SIZE, OFF_HL, OFF_SEED, OFF_CS_SIZE, OFF_CS = 7, 11, 15, 23, 27, 31
OFF_CS_REM_R, OFF_CS_TOTAL, OFF_CS_SEL_SIZE = 35, 39, 43
OFF_SEL_N, OFF_SEL_M, OFF_BITS_VEC = 47, 51, 55


def patch_u32(dump: bytes, offset: int, value: int) -> bytes:
    """Returns ``dump`` with the little-endian u32 at ``offset`` replaced."""
    return dump[:offset] + struct.pack("<I", value) + dump[offset + 4 :]


def expect_error(dump: bytes, field: str) -> CmphError:
    """Asserts that loading ``dump`` raises a CmphError about ``field``."""
    with pytest.raises(CmphError) as info:
        ChdPh.from_dump(dump)
    assert info.value.field == field, str(info.value)
    assert str(info.value).startswith(f"cmph dump: {field} at offset ")
    return info.value


@pytest.mark.parametrize("name", SHARDS)
def test_truncated_at_every_byte(name: str) -> None:
    _, dump = read_shard(DATA / f"{name}.shard")
    for cut in range(len(dump)):
        with pytest.raises(CmphError, match=r"^cmph dump: .+ at offset \d+: "):
            ChdPh.from_dump(dump[:cut])


def test_truncation_message() -> None:
    _, dump = read_shard(DATA / "medium.shard")
    (cs_size,) = struct.unpack_from("<I", dump, OFF_CS_SIZE)
    # A plain cut is reported on the enclosing length-prefixed field.
    err = expect_error(dump[: OFF_BITS_VEC + 3], "cs")
    assert err.offset == OFF_CS
    assert f"needs {cs_size} bytes, {OFF_BITS_VEC + 3 - OFF_CS} remain" in str(err)
    # Nested fields are reported with their offset within the whole dump.
    (sel_n,) = struct.unpack_from("<I", dump, OFF_SEL_N)
    (sel_m,) = struct.unpack_from("<I", dump, OFF_SEL_M)
    short_sel = patch_u32(dump, OFF_CS_SEL_SIZE, 8 + 3)
    err = expect_error(short_sel, "cs.sel.bits_vec")
    assert err.offset == OFF_BITS_VEC
    assert f"needs {4 * ((sel_n + sel_m + 31) >> 5)} bytes, 3 remain" in str(err)
    assert expect_error(b"", "algo_name").offset == 0


def test_bad_names() -> None:
    _, dump = read_shard(DATA / "tiny.shard")
    expect_error(b"bdz\0" + dump[7:], "algo_name")
    expect_error(b"chd\0\0\0\0" + dump[7:], "algo_name")
    expect_error(b"x" * 100, "algo_name")
    expect_error(dump[:OFF_HL] + b"fnv\0\0\0\0\0" + dump[OFF_SEED:], "hl.name")
    expect_error(dump[:OFF_HL] + b"jenkinsX" + dump[OFF_SEED:], "hl.name")


@pytest.mark.parametrize(
    ("offset", "fields"),
    [
        (OFF_HL_SIZE, {"hl"}),
        (OFF_CS_SIZE, {"cs"}),
        (OFF_CS_SEL_SIZE, {"cs.sel"}),
        # Either n + m overflows 32 bits or the bit vector does not fit in the bytes left.
        (OFF_SEL_N, {"cs.sel.m", "cs.sel.bits_vec"}),
        (OFF_SEL_M, {"cs.sel.m", "cs.sel.bits_vec"}),
        (OFF_CS_REM_R, {"cs.rem_r"}),
        (OFF_CS_TOTAL, {"cs.total_length", "cs.store_table"}),
    ],
)
@pytest.mark.parametrize("value", [0x7FFFFFFF, 0xFFFFFFF0, 0xFFFFFFFF])
def test_huge_counts(offset: int, fields: set[str], value: int) -> None:
    _, dump = read_shard(DATA / "medium.shard")
    with pytest.raises(CmphError) as info:
        ChdPh.from_dump(patch_u32(dump, offset, value))
    assert info.value.field in fields, str(info.value)
    assert info.value.offset >= offset


def test_inconsistent_fields() -> None:
    _, dump = read_shard(DATA / "medium.shard")
    end = len(dump)
    expect_error(patch_u32(dump, OFF_SIZE, 1014), "n")
    expect_error(patch_u32(patch_u32(dump, OFF_SIZE, 0), end - 8, 0), "n")
    one = expect_error(patch_u32(patch_u32(dump, OFF_SIZE, 1), end - 8, 1), "n")
    assert "n - 1" in str(one)
    expect_error(patch_u32(dump, end - 4, 0), "nbuckets")
    expect_error(patch_u32(dump, end - 4, 252), "cs.n")
    expect_error(patch_u32(dump, OFF_HL_SIZE, 13)[:OFF_CS_SIZE] + b"\0" + dump[27:], "hl_size")
    # A select structure with one byte too many for its n and m.
    (sel_size,) = struct.unpack_from("<I", dump, OFF_CS_SEL_SIZE)
    (cs_size,) = struct.unpack_from("<I", dump, OFF_CS_SIZE)
    sel_end = OFF_SEL_N + sel_size
    longer = patch_u32(patch_u32(dump, OFF_CS_SIZE, cs_size + 4), OFF_CS_SEL_SIZE, sel_size + 4)
    longer = longer[:sel_end] + b"\0\0\0\0" + longer[sel_end:]
    expect_error(longer, "cs.sel_size")
    # Trailing bytes inside the compressed sequence.
    cs_end = OFF_CS + cs_size
    padded = patch_u32(dump, OFF_CS_SIZE, cs_size + 4)
    padded = padded[:cs_end] + b"\0\0\0\0" + padded[cs_end:]
    expect_error(padded, "cs_size")


def test_inconsistent_select_structure() -> None:
    _, dump = read_shard(DATA / "medium.shard")
    (sel_n,) = struct.unpack_from("<I", dump, OFF_SEL_N)
    (sel_m,) = struct.unpack_from("<I", dump, OFF_SEL_M)
    table_off = OFF_BITS_VEC + 4 * ((sel_n + sel_m + 31) >> 5)
    (first_sample,) = struct.unpack_from("<I", dump, table_off)
    expect_error(patch_u32(dump, table_off, first_sample + 1), "cs.sel.select_table")
    # Clearing a set bit leaves the vector with fewer than n ones.
    data = bytearray(dump)
    index = next(i for i in range(OFF_BITS_VEC, table_off) if data[i])
    data[index] &= data[index] - 1
    expect_error(bytes(data), "cs.sel.bits_vec")


def test_random_corruption_raises_only_cmph_error() -> None:
    rng = random.Random(11)
    for name in SHARDS:
        _, dump = read_shard(DATA / f"{name}.shard")
        for _ in range(1500):
            data = bytearray(dump)
            for _ in range(rng.randrange(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            try:
                mphf = ChdPh.from_dump(bytes(data))
            except CmphError:
                continue
            # Accepted dumps must be usable.
            assert 0 <= mphf.slot(rng.randbytes(32)) < mphf.n
        for _ in range(200):
            junk = b"chd_ph\0" + rng.randbytes(rng.randrange(0, 80))
            with pytest.raises(CmphError):
                ChdPh.from_dump(junk)


# --- (e) interoperability with the reference writer ---------------------------------------


@pytest.mark.interop
@pytest.mark.parametrize("count", [1, 2, 3, 50, 3000])
def test_reference_writer(tmp_path: Path, count: int) -> None:
    perfecthash = pytest.importorskip("swh.perfecthash")
    rng = random.Random(count)
    keys = list({os.urandom(32) for _ in range(count)})
    # Also keys made only of bytes >= 0x80, which catch a signed-char hash.
    high = list({bytes(rng.randrange(0x80, 0x100) for _ in range(32)) for _ in range(count)})
    for variant, key_set in (("urandom", keys), ("high", high)):
        path = tmp_path / f"{variant}.shard"
        with perfecthash.ShardCreator(str(path), len(key_set)) as creator:
            for key in key_set:
                creator.write(key, os.urandom(rng.randrange(0, 64)))
        entries, dump = read_shard(path)
        mphf = ChdPh.from_dump(dump)
        assert mphf.dump_size == len(dump)
        slots = live_slots(entries)
        assert sorted(slots) == sorted(key_set)
        for key in key_set:
            assert mphf.slot(key) == slots[key]
        try:
            import numpy  # noqa: F401
        except ImportError:
            continue
        assert mphf.slots(key_set).tolist() == [slots[k] for k in key_set]
