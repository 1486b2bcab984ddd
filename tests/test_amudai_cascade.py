"""Amudai cascading block encodings (FORMAT_NOTES.md 4.4), against an independent encoder.

The small encoder below follows the notes literally (codes, the ``round_up(own + 2, 8) - 2``
metadata rule, FastLanes packing by the ORDER/lane formula, paddings to 8 relative to the
values section); the reader's block decoder must give back what went in.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from amudai_encoders import (
    Enc,
    code,
    decode,
    delta,
    fl_pack,
    flbitpack,
    for_,
    meta,
    pad8,
    plain,
    single,
    unsigned,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st

import shardkit
import shardkit.writers.amudai as amudai_writer
from shardkit.errors import (
    LayoutError,
    LimitExceededError,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from shardkit.formats.amudai.blocks import decode_binary_values
from shardkit.writers.amudai import build_amudai, field

INTS = ["<i1", "<i2", "<i4", "<i8", "<u1", "<u2", "<u4", "<u8"]


# --- independent encoder (test-only) ------------------------------------------------------------

def ffor(a: np.ndarray) -> bytes:
    u = a.view(unsigned(a.dtype))
    ref = np.array([a.min()], a.dtype)
    deltas = (u - ref.view(u.dtype)[0]).astype(u.dtype)
    width = max(int(deltas.max()).bit_length(), 1)
    return code(4) + meta(ref.tobytes() + bytes([width])) + fl_pack(deltas, width)


def zigzag(inner: Enc | None = None) -> Enc:
    def enc(a: np.ndarray) -> bytes:
        bits = a.dtype.itemsize * 8
        z = [((int(v) << 1) ^ (int(v) >> (bits - 1))) & ((1 << bits) - 1) for v in a]
        u = np.array(z, unsigned(a.dtype))
        body = inner(u) if inner else u.tobytes()
        return code(18) + meta(bytes([inner is not None])) + body
    return enc


def truncate(width: int, inner: Enc | None = None) -> Enc:
    def enc(a: np.ndarray) -> bytes:
        t = a.astype(f"<i{width}").view(f"<u{width}")
        body = inner(t) if inner else t.tobytes()
        c = {1: 8, 2: 9, 4: 10, 8: 11}[width]
        return code(c) + meta(bytes([inner is not None])) + body
    return enc


def runlength(values_enc: Enc | None = None, lengths_enc: Enc | None = None) -> Enc:
    def enc(a: np.ndarray) -> bytes:
        starts = np.flatnonzero(np.r_[True, a[1:] != a[:-1]]) if len(a) else np.zeros(0, int)
        vals = a[starts]
        lens = np.diff(np.r_[starts, len(a)]).astype("<u4")
        vb = values_enc(vals) if values_enc else vals.tobytes()
        lb = lengths_enc(lens) if lengths_enc else lens.tobytes()
        head = code(6) + meta(struct.pack("<IIBB", len(vb), len(vals), values_enc is not None,
                                          lengths_enc is not None))
        return pad8(head + vb) + lb
    return enc


def sparse(positions_enc: Enc | None = None, values_enc: Enc | None = None) -> Enc:
    def enc(a: np.ndarray) -> bytes:
        pos = np.flatnonzero(a).astype("<u4")
        vals = a[pos]
        pb = positions_enc(pos) if positions_enc else pos.tobytes()
        vb = values_enc(vals) if values_enc else vals.tobytes()
        head = code(19) + meta(struct.pack("<IIBB", len(pos), len(pb), positions_enc is not None,
                                           values_enc is not None))
        return pad8(head + pb) + vb
    return enc


def dictionary(codes_enc: Enc, values_enc: Enc | None = None) -> Enc:
    def enc(a: np.ndarray) -> bytes:
        uniq, counts = np.unique(a, return_counts=True)
        order = uniq[np.argsort(-counts, kind="stable")]
        index = {v: i + 1 for i, v in enumerate(order.tolist())}
        codes = np.array([index[v] for v in a.tolist()], "<u4")
        cb = codes_enc(codes)
        vb = values_enc(order) if values_enc else order.tobytes()
        return code(14) + meta(struct.pack("<IIB", len(cb), len(order),
                                           values_enc is not None)) + cb + vb
    return enc


def rand(dt: str, n: int, seed: int, bits: int | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    d = np.dtype(dt)
    u = rng.integers(0, 1 << 62, n, dtype=np.uint64) * 4 + rng.integers(0, 4, n, np.uint64)
    if bits is not None:
        u &= np.uint64((1 << bits) - 1)
    return u.astype(unsigned(d)).view(d)


# --- hand-computed layouts --------------------------------------------------------------------

def test_metadata_sizes_by_hand() -> None:
    assert [len(meta(bytes(k))) for k in (0, 1, 8, 9, 10, 12, 13)] == [6, 6, 14, 14, 14, 14, 14]


def test_for_over_plain_by_hand() -> None:
    section = bytes.fromhex(
        "0300"                      # FOR
        "0a00000000000000 000000000000"  # reference 10 (i64) + pad to 14
        "0100"                      # nested Plain (u64 deltas)
        "0000000000000000 0100000000000000 0200000000000000")
    assert for_(plain)(np.array([10, 11, 12], "<i8")) == section
    assert decode(section, 3, "<i8").tolist() == [10, 11, 12]


def test_flbitpack_w1_u8_by_hand() -> None:
    # u8: 128 lanes; row r of lane l is element r*128 + l; W=1 packs 8 rows into one byte.
    first_row = np.zeros(1024, "<u1")
    first_row[:128] = 1
    section = bytes.fromhex("0200 01 0000000000") + b"\x01" * 128
    assert flbitpack(1)(first_row) == section
    assert decode(section, 1024, "<u1").tolist() == first_row.tolist()
    last_row = np.zeros(1024, "<u1")
    last_row[896:] = 1
    assert decode(bytes.fromhex("0200 01 0000000000") + b"\x80" * 128, 1024,
                  "<u1").tolist() == last_row.tolist()
    one = np.zeros(1024, "<u1")
    one[3 * 128 + 5] = 1  # row 3, lane 5
    assert flbitpack(1)(one)[8:] == bytes(5) + b"\x08" + bytes(122)


def test_flbitpack_u64_order_by_hand() -> None:
    # u64: 16 lanes; rows 8..15 come from ORDER[1]*16 = 64 onwards; W=64 is a transposed copy.
    vals = np.arange(1024, dtype="<u8")
    words = np.frombuffer(fl_pack(vals, 64), "<u8")
    assert words[:16].tolist() == list(range(16))          # row 0: elements 0..15
    assert words[16:32].tolist() == list(range(128, 144))  # row 1: (1 % 8) * 128
    assert words[8 * 16 : 9 * 16].tolist() == list(range(64, 80))  # row 8: ORDER[1] * 16
    assert decode(flbitpack(64)(vals), 1024, "<u8").tolist() == vals.tolist()


def test_truncate_and_zigzag_by_hand() -> None:
    assert decode(bytes.fromhex("0800 00 0000000000 ff 05 80"), 3, "<i8").tolist() == \
        [-1, 5, -128]
    assert decode(bytes.fromhex("0800 00 0000000000 ff 05 80"), 3, "<u4").tolist() == \
        [255, 5, 128]  # unsigned T: zero-extended
    assert decode(bytes.fromhex("1200 00 0000000000 0000 0100 0200 0300"), 4,
                  "<i2").tolist() == [0, -1, 1, -2]


def test_runlength_sparse_dictionary_by_hand() -> None:
    rle = bytes.fromhex("0600 10000000 02000000 00 00 00000000"  # 16 value bytes, 2 runs, raw
                        "0700000000000000 f9ffffffffffffff"    # values 7, -7
                        "03000000 02000000")                   # lengths 3, 2
    assert decode(rle, 5, "<i8").tolist() == [7, 7, 7, -7, -7]
    sp = bytes.fromhex("1300 02000000 08000000 00 00 00000000" "01000000 04000000" "0900 0800")
    assert decode(sp, 6, "<i2").tolist() == [0, 9, 0, 0, 8, 0]
    dic = bytes.fromhex("0e00 0e000000 02000000 00 0000000000"  # codes 14 B, 2 entries, raw
                        "0100 01000000 02000000 00000000"       # Plain codes 1, 2, 0
                        "0500000000000000 0600000000000000")
    assert decode(dic, 3, "<u8").tolist() == [5, 6, 0]


# --- round trips ------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["<u1", "<u2", "<u4", "<u8"])
def test_flbitpack_widths(dt: str) -> None:
    bits = np.dtype(dt).itemsize * 8
    for width in sorted({1, 2, 3, bits // 2 - 1, bits // 2, bits - 1, bits} - {0}):
        for n in (1, 1023, 1024, 1500):
            a = rand(dt, n, width * 7 + n, width)
            section = flbitpack(width)(a)
            assert len(section) == 8 + -(-n // 1024) * 128 * width
            assert decode(section, n, dt).tolist() == a.tolist(), (width, n)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(INTS), st.integers(0, 2100), st.integers(1, 64), st.integers(0, 2**32))
def test_ffor_and_for_round_trip(dt: str, n: int, bits: int, seed: int) -> None:
    a = rand(dt, max(n, 1), seed, min(bits, np.dtype(dt).itemsize * 8))
    assert decode(ffor(a), len(a), dt).tolist() == a.tolist()
    u_bits = np.dtype(dt).itemsize * 8
    assert decode(for_(flbitpack(u_bits))(a), len(a), dt).tolist() == a.tolist()
    assert decode(for_(plain)(a), len(a), dt).tolist() == a.tolist()


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["<i1", "<i2", "<i4", "<i8"]), st.lists(st.integers(-300, 300),
                                                              min_size=1, max_size=3000))
def test_delta_zigzag_flbitpack(dt: str, steps: list[int]) -> None:
    info = np.iinfo(dt)
    a = np.cumsum(np.array(steps, np.int64)).astype(dt)  # wraps for narrow types
    bits = np.dtype(dt).itemsize * 8
    small = np.array(steps[1:], np.int64)
    width = max(int(np.abs(small).max(initial=0)) * 2 + 1, 1).bit_length()
    width = min(width + 1, bits)
    for enc in (delta(zigzag(flbitpack(width))), delta(zigzag()), delta(plain),
                zigzag(), zigzag(flbitpack(bits)), delta(zigzag(flbitpack(bits)))):
        got = decode(enc(a), len(a), dt)
        assert got.tolist() == a.tolist()
    assert info.min <= int(a.min())


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([*INTS, "<f4", "<f8"]),
       st.lists(st.tuples(st.integers(0, 5), st.integers(1, 40)), min_size=1, max_size=200))
@example("<i1", [(1, 1), (0, 1), (1, 1), (1, 1)])  # equal neighbours merge into one run
def test_runlength_round_trip(dt: str, runs: list[tuple[int, int]]) -> None:
    a = np.repeat(np.array([v for v, _ in runs], dt), [k for _, k in runs])
    encs: list[Enc] = [runlength(), runlength(lengths_enc=flbitpack(32)),
                       runlength(lengths_enc=for_(flbitpack(32)))]
    if dt[1] in "iu":
        # the encoder merges equal neighbours: look at the runs of `a`, not at the drawn ones
        starts = np.flatnonzero(np.r_[True, a[1:] != a[:-1]])
        lengths = np.diff(np.r_[starts, len(a)])
        encs.append(runlength(values_enc=truncate(1) if dt[1] == "i" else plain,
                              lengths_enc=runlength(lengths_enc=single)
                              if len(set(lengths.tolist())) == 1 else plain))
    for enc in encs:
        assert decode(enc(a), len(a), dt).tolist() == a.tolist()


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([*INTS, "<f8"]), st.integers(1, 5000), st.integers(0, 2**32))
def test_sparse_round_trip(dt: str, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = np.zeros(n, dt)
    hits = rng.choice(n, size=min(n, 1 + n // 100), replace=False)
    a[hits] = rng.integers(1, 100, hits.size).astype(dt)
    for enc in (sparse(), sparse(positions_enc=delta(flbitpack(32))),
                sparse(positions_enc=for_(flbitpack(32)),
                       values_enc=ffor if dt[1] in "iu" else None)):
        assert decode(enc(a), n, dt).tolist() == a.tolist()


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([*INTS, "<f4"]), st.integers(1, 3000), st.integers(1, 20),
       st.integers(0, 2**32))
def test_dictionary_round_trip(dt: str, n: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 120, k).astype(dt)
    a = pool[rng.integers(0, k, n)]
    for enc in (dictionary(plain), dictionary(flbitpack(5)), dictionary(ffor, plain)):
        assert decode(enc(a), n, dt).tolist() == a.tolist()


@pytest.mark.parametrize("width", [1, 2, 4])
def test_truncate_nested(width: int) -> None:
    a = rand("<i8", 2000, width, 8 * width - 1) - (1 << (8 * width - 2))
    for inner in (None, plain, ffor, flbitpack(8 * width)):
        assert decode(truncate(width, inner)(a), len(a), "<i8").tolist() == a.tolist()


def test_deep_but_allowed_cascade() -> None:
    a = np.repeat(np.arange(-50, 50, dtype="<i8") * 1000, 7)
    enc = runlength(values_enc=delta(zigzag(runlength(lengths_enc=single))),
                    lengths_enc=runlength(lengths_enc=single))
    assert decode(enc(a), len(a), "<i8").tolist() == a.tolist()


def test_lz4_and_zstd_nested_in_a_cascade() -> None:
    import lz4.block
    import zstandard

    lens = np.arange(3000, dtype="<u4") % 7 + 1
    a = np.repeat(np.arange(3000, dtype="<i4"), lens)

    def lz4_enc(x: np.ndarray) -> bytes:
        raw = x.tobytes()
        return code(17) + bytes(6) + struct.pack("<I", len(raw)) + \
            lz4.block.compress(raw, store_size=False)

    def zstd_enc(x: np.ndarray) -> bytes:
        return code(16) + bytes(6) + zstandard.ZstdCompressor().compress(x.tobytes())

    enc = runlength(values_enc=zstd_enc, lengths_enc=lz4_enc)
    assert decode(enc(a), len(a), "<i4").tolist() == a.tolist()


# --- binary sections --------------------------------------------------------------------------

def binary_dictionary(items: list[bytes], codes_enc: Enc, lengths_enc: Enc | None = None,
                      pad: bool = True) -> bytes:
    order = list(dict.fromkeys(items))
    codes = np.array([order.index(x) + 1 for x in items], "<u4")
    lens = np.array([len(x) for x in order], "<u4")
    cb = codes_enc(codes)
    lb = lengths_enc(lens) if lengths_enc else lens.tobytes()
    head = code(14) + meta(struct.pack("<IIIB", len(cb), len(lb), len(order),
                                       lengths_enc is not None)) + cb
    return (pad8(head) if pad else head) + lb + b"".join(order)


def dec_bin(section: bytes, n: int, fixed: int = 0) -> list[bytes]:
    return decode_binary_values(memoryview(section), n, fixed, base=0, field="t")


@pytest.mark.parametrize("pad", [True, False])
def test_binary_dictionary(pad: bool) -> None:
    items = [b"apple", b"kiwi", b"apple", b"", b"fig", b"kiwi", b"apple"]  # 7 plain codes
    for codes_enc, lengths_enc in ((plain, None), (flbitpack(3), plain), (plain, ffor)):
        got = dec_bin(binary_dictionary(items, codes_enc, lengths_enc, pad), len(items))
        assert got == items
    hand = bytes.fromhex("0e00 0a000000 08000000 02000000 00 00"
                         "0100 02000000 01000000 000000000000"  # codes 2, 1 + pad to 8
                         "01000000 02000000" "78" "797a")
    assert dec_bin(hand, 2) == [b"yz", b"x"]


@pytest.mark.parametrize("codec", [16, 17])
def test_binary_compressed_with_nested_offsets(codec: int) -> None:
    import lz4.block
    import zstandard

    items = [(b"v%d" % i) * (i % 5) for i in range(3000)]
    data = b"".join(items)
    packed = (struct.pack("<I", len(data)) + lz4.block.compress(data, store_size=False)
              if codec == 17 else zstandard.ZstdCompressor().compress(data))
    offsets = np.zeros(len(items) + 1, "<u8")
    np.cumsum([len(x) for x in items], out=offsets[1:])
    for nested in (None, delta(zigzag(flbitpack(8))), for_(plain)):
        body = nested(offsets) if nested else offsets.tobytes()
        head = code(codec) + struct.pack("<IBB", len(packed), 8, nested is not None)
        assert dec_bin(pad8(head + packed) + body, len(items)) == items
    fixed = [bytes([i % 251]) * 16 for i in range(300)]
    raw = b"".join(fixed)
    packed = (struct.pack("<I", len(raw)) + lz4.block.compress(raw, store_size=False)
              if codec == 17 else zstandard.ZstdCompressor().compress(raw))
    assert dec_bin(code(codec) + struct.pack("<IBB", len(packed), 0, 0) + packed,
                   300, 16) == fixed


# --- corrupt input ----------------------------------------------------------------------------

def corpus() -> list[tuple[bytes, int, str]]:
    a = np.repeat(np.arange(-40, 40, dtype="<i8"), 9)
    z = np.zeros(1500, "<i4")
    z[[3, 700, 1499]] = [5, -6, 7]
    return [
        (for_(flbitpack(64))(a), len(a), "<i8"),
        (ffor(a), len(a), "<i8"),
        (delta(zigzag(flbitpack(3)))(a), len(a), "<i8"),
        (runlength(values_enc=truncate(1), lengths_enc=runlength(lengths_enc=single))(a),
         len(a), "<i8"),
        (sparse(positions_enc=delta(flbitpack(32)), values_enc=zigzag())(z), len(z), "<i4"),
        (dictionary(flbitpack(7), ffor)(a), len(a), "<i8"),
    ]


def test_truncated_sections_raise_shardkit_errors() -> None:
    for section, n, dt in corpus():
        assert decode(section, n, dt).size == n
        for cut in range(len(section)):
            with pytest.raises(ShardkitError):
                decode(section[:cut], n, dt)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 5), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                                   min_size=1, max_size=4))
def test_corrupt_sections_raise_shardkit_errors_only(which: int,
                                                     flips: list[tuple[int, int]]) -> None:
    section, n, dt = corpus()[which]
    data = bytearray(section)
    for pos, value in flips:
        data[pos % min(len(data), 64)] = value  # the headers and metadata live up front
    try:
        out = decode(bytes(data), n, dt)
    except ShardkitError:
        return
    assert out.size == n


def test_specific_corruptions() -> None:
    a = np.repeat(np.arange(10, dtype="<i8"), 3)
    rle = bytearray(runlength()(a))
    struct.pack_into("<I", rle, 6, 31)  # more runs than values
    with pytest.raises(LayoutError, match="runs"):
        decode(bytes(rle), 30, "<i8")
    rle = bytearray(runlength()(a))
    rle[-4] += 1  # lengths no longer add up to n
    with pytest.raises(LayoutError, match="add up"):
        decode(bytes(rle), 30, "<i8")
    sp = bytearray(sparse()(np.array([0, 0, 4], "<i8")))
    struct.pack_into("<I", sp, 16, 3)  # position 3 of a 3-value block
    with pytest.raises(LayoutError, match="position 3"):
        decode(bytes(sp), 3, "<i8")
    dic = bytearray(dictionary(plain)(np.array([4, 5], "<i8")))
    struct.pack_into("<I", dic, 18, 3)  # code 3 of 2 entries
    with pytest.raises(LayoutError, match="code 3"):
        decode(bytes(dic), 2, "<i8")
    with pytest.raises(LayoutError, match="bit width 9"):
        decode(code(2) + meta(b"\x09") + bytes(2048), 1024, "<u1")
    with pytest.raises(TruncatedError):
        decode(flbitpack(5)(np.arange(1500, dtype="<u2") % 32)[:-1], 1500, "<u2")
    with pytest.raises(LayoutError, match="integers"):
        decode(ffor(np.arange(3, dtype="<i8")), 3, "<f8")
    with pytest.raises(UnsupportedVersionError, match=r"encoding 12 \(ALP\)"):
        decode(code(12) + bytes(30), 2, "<i8")  # ALP is for floats only
    with pytest.raises(UnsupportedVersionError, match=r"encoding 99"):
        decode(code(99) + bytes(30), 2, "<i8")
    with pytest.raises(LimitExceededError):
        decode(single(np.array([1], "<i8")), 1 << 30, "<i8")


def test_depth_bomb() -> None:
    ok = b"".join(code(18) + meta(b"\x01") for _ in range(16)) + plain(np.zeros(4, "<u8"))
    assert decode(ok, 4, "<i8").tolist() == [0, 0, 0, 0]
    bomb = b"".join(code(18) + meta(b"\x01") for _ in range(5000)) + plain(np.zeros(4, "<u8"))
    with pytest.raises(LimitExceededError, match="nested deeper"):
        decode(bomb, 4, "<i8")


# --- end to end: a cascaded block inside a real shard ----------------------------------------

def shard_with_values(monkeypatch: pytest.MonkeyPatch, enc: Enc, values: list, kind: str
                      ) -> bytes:
    """A shard whose numeric values sections are ``enc`` (the writer's values step swapped)."""
    dt = {"Int64": "<i8", "Int32": "<i4"}[kind]
    monkeypatch.setattr(amudai_writer, "_numeric_values",
                        lambda raw, codec: enc(np.frombuffer(raw, dt)))
    data = build_amudai([field("c", kind)], [{"c": values}])
    monkeypatch.undo()
    return data


@pytest.mark.parametrize("name", ["for-flbitpack", "delta-zigzag", "rle", "ffor"])
def test_cascaded_block_end_to_end(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    values = [1_000_000 + (i * 37) % 500 - (i // 3) for i in range(10_000)]
    values[17] = None
    enc = {"for-flbitpack": for_(flbitpack(64)), "delta-zigzag": delta(zigzag(flbitpack(16))),
           "rle": runlength(lengths_enc=plain), "ffor": ffor}[name]
    data = shard_with_values(monkeypatch, enc, values, "Int64")
    s = shardkit.open(data)
    start = s.stripe_field(0, 0).encodings[0].native.buffers[0].buffer.range.start
    presence_size = struct.unpack_from("<I", data, start)[0]
    code_at = start + 8 + presence_size + (-(8 + presence_size) % 8)
    assert struct.unpack_from("<H", data, code_at)[0] == {"for-flbitpack": 3, "delta-zigzag": 5,
                                                          "rle": 6, "ffor": 4}[name]
    assert s.read_column("c") == values
    arr = s.read_array("c")
    assert arr.mask.nonzero()[0].tolist() == [17]
    assert arr.data[18:30].tolist() == values[18:30]
    assert s.verify() == []


def test_cascaded_string_block_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    values = [["red", "green", "blue"][i % 3] * (1 + i % 2) for i in range(500)]
    values[4] = None
    monkeypatch.setattr(amudai_writer, "_binary_values",
                        lambda items, fixed, codec: binary_dictionary(items, ffor))
    data = build_amudai([field("s", "String")], [{"s": values}])
    monkeypatch.undo()
    s = shardkit.open(data)
    assert s.read_column("s") == values
    assert s.verify() == []
