"""Amudai ALP (12), ALP-RD (13) and FSST (15) blocks, against an independent test-side encoder.

The encoders below follow microsoft/amudai's Rust source (crate amudai-encodings:
src/encodings/numeric/alp.rs, src/encodings/numeric/alprd.rs, src/encodings/binary/fsst.rs,
src/encodings/binary/offsets.rs) and the `fsst-rs` crate it depends on (spiraldb/fsst,
src/lib.rs: u64 little-endian symbols, u8 lengths, escape code 255). The nested integer
encodings are re-implemented here from FORMAT_NOTES.md 4.4 (Plain, SingleValue, FOR, Delta,
FLBitPack), independently of the reader.
"""

from __future__ import annotations

import struct
from fractions import Fraction

import numpy as np
import pytest
from amudai_encoders import (
    Enc,
    code,
    decode,
    delta,
    flbitpack,
    for_,
    meta,
    pad8,
    plain,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import shardkit
import shardkit.writers.amudai as amudai_writer
from shardkit.errors import LayoutError, ShardkitError, TruncatedError, UnsupportedVersionError
from shardkit.formats.amudai.blocks import (
    _ALP_TABLES,
    decode_binary_values,
)
from shardkit.writers.amudai import build_amudai, field

# --- nested integer encodings (FORMAT_NOTES.md 4.4) --------------------------------------------

# --- ALP (alp.rs) -----------------------------------------------------------------------------

F10 = {4: [np.float32(10.0 ** k) for k in range(11)],
       8: [float(f"1e{k}") for k in range(24)]}
IF10 = {4: [np.float32(float(f"1e-{k}")) for k in range(11)],
        8: [float(f"1e-{k}") for k in range(24)]}


def alp_split(values: np.ndarray, e: int, f: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ALPEncoding::encode: integers (patched slots = fill value), patch indices and values."""
    ft = values.dtype.type
    size = values.dtype.itemsize
    idt = np.dtype(f"<i{size}")
    frac = 23 if size == 4 else 52
    sweet = ft(float(2 ** frac + 2 ** (frac - 1)))
    with np.errstate(all="ignore"):
        x = values * ft(F10[size][e]) * ft(IF10[size][f])
        x = (x + sweet) - sweet  # fast_round
        ok = np.isfinite(x) & (np.abs(x) < 2.0 ** (size * 8 - 2))
        ints = np.where(ok, x, 0).astype(idt)
        back = ints.astype(values.dtype) * ft(F10[size][f]) * ft(IF10[size][e])
    uview = np.dtype(f"<u{size}")
    patch = ~ok | (back.view(uview) != values.view(uview))
    where = np.flatnonzero(patch).astype("<u4")
    good = np.flatnonzero(~patch)
    if good.size:
        ints[where] = ints[good[0]]  # the first successfully encoded value fills the patches
    return ints, where, values[where]


def alp_parameters(values: np.ndarray) -> tuple[int, int]:
    """ALPEncoding::calculate_parameters: the (e, f) with the smallest estimated size."""
    size = values.dtype.itemsize
    sample = values[:: max(1, len(values) // 32)] if len(values) > 32 else values
    best, best_bytes = (0, 0), None
    for e in reversed(range(10 if size == 4 else 18)):
        for f in range(e):
            ints, where, _ = alp_split(sample, e, f)
            span = int(ints.max()) - int(ints.min()) if ints.size else 0
            width = span.bit_length()
            nbytes = (len(ints) * width + 7) // 8 + len(where) * (size + 2)
            if best_bytes is None or nbytes < best_bytes or (
                    nbytes == best_bytes and e - f < best[0] - best[1]):
                best, best_bytes = (e, f), nbytes
    return best


def fit(a: np.ndarray) -> bytes:
    """FLBitPack with the narrowest width that holds the unsigned values."""
    return flbitpack(max(1, int(a.max()).bit_length() if a.size else 1))(a)


def alp(e: int, f: int, inner: Enc = plain) -> Enc:
    def enc(a: np.ndarray) -> bytes:
        ints, where, vals = alp_split(a, e, f)
        body = inner(ints)
        head = code(12) + meta(struct.pack("<IHBB", len(body), len(where), e, f))
        return head + body + where.tobytes() + vals.tobytes()
    return enc


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    u = f"<u{a.dtype.itemsize}"
    return a.dtype == b.dtype and a.view(u).tolist() == b.view(u).tolist()


def test_power_tables_are_the_rust_literals() -> None:
    for size, (f10, if10) in _ALP_TABLES.items():
        assert f10.size == len(F10[size]) and if10.size == len(IF10[size])
        for k in range(f10.size):
            assert Fraction(float(f10[k])) == Fraction(10) ** k or (size == 8 and k == 23)
    # f32 IF10: the nearest single to 10^-k (as a Rust f32 literal is rounded)
    for k in range(11):
        exact = Fraction(1, 10 ** k)
        got = _ALP_TABLES[4][1][k]
        below = np.nextafter(got, np.float32(0))
        above = np.nextafter(got, np.float32(1))
        err = abs(Fraction(float(got)) - exact)
        assert err <= abs(Fraction(float(below)) - exact)
        assert err <= abs(Fraction(float(above)) - exact)
    assert float(_ALP_TABLES[8][0][23]) == 1e23


def test_alp_f64_by_hand() -> None:
    # 1.5, 2.25 -> 150, 225 with e=2, f=0; NaN is an exception at position 2 (filled with 150)
    hand = (code(12) + struct.pack("<IHBB", 26, 1, 2, 0) + bytes(6)
            + code(1) + struct.pack("<qqq", 150, 225, 150)
            + struct.pack("<I", 2) + struct.pack("<d", float("nan")))
    got = decode(hand, 3, "<f8")
    assert got[:2].tolist() == [1.5, 2.25] and np.isnan(got[2])
    assert hand == alp(2, 0)(np.array([1.5, 2.25, np.nan]))


def test_alp_f32_by_hand() -> None:
    # f=1: value = int * 10 * 10^-e; e=3 -> 12 * 10 * 0.001 (single precision steps)
    hand = (code(12) + struct.pack("<IHBB", 10, 0, 3, 1) + bytes(6)
            + code(1) + struct.pack("<ii", 12, -7))
    got = decode(hand, 2, "<f4")
    expect = np.array([12, -7], np.float32) * np.float32(10) * np.float32(0.001)
    assert same_bits(got, expect.astype(np.float32))
    # 0.001f = 0x3A83126F; 120 * 0.001000000047 = 0.1200000057 -> 0x3DF5C290 (not 0.12f,
    # 0x3DF5C28F); -70 * 0.001f -> 0xBD8F5C29 (= -0.07f)
    assert got.view("<u4").tolist() == [0x3DF5C290, 0xBD8F5C29]


@pytest.mark.parametrize("dt", ["<f4", "<f8"])
@pytest.mark.parametrize("exceptions", [False, True])
@pytest.mark.parametrize("inner", ["plain", "for-flbitpack", "delta-for"])
def test_alp_round_trip(dt: str, exceptions: bool, inner: str) -> None:
    rng = np.random.default_rng(7)
    n = 2500
    a = np.array([float(f"{x:.2f}") for x in rng.random(n) * 30 + 10], dt)  # as alp.rs tests
    if exceptions:
        a[[0, 17, 1000, n - 1]] = np.array([np.pi, np.inf, 1e30, np.nan], dt)
    e, f = alp_parameters(a)
    ints, where, _ = alp_split(a, e, f)
    assert ints.dtype == np.dtype(f"<i{a.dtype.itemsize}")
    if exceptions:
        assert {0, 17, 1000, n - 1} <= set(where.tolist())
    assert len(where) <= 0.05 * n + 4  # alp.rs's analyze() gives up above 5% exceptions
    nested = {"plain": plain, "for-flbitpack": for_(fit), "delta-for": delta(for_(plain))}[inner]
    assert same_bits(decode(alp(e, f, nested)(a), n, dt), a)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["<f4", "<f8"]), st.integers(0, 9), st.integers(0, 9),
       st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=300))
def test_alp_random(dt: str, e: int, f: int, xs: list[float]) -> None:
    f = min(f, e)
    a = np.array(xs, dt)
    assert same_bits(decode(alp(e, f)(a), len(a), dt), a)


def test_alp_wide_exponents_f64() -> None:
    a = np.array([1.25e-17, 3e-18, 7.0, 123456789.0123, 0.1 + 0.2], "<f8")
    assert same_bits(decode(alp(18, 1)(a), len(a), "<f8"), a)
    assert same_bits(decode(alp(17, 16)(a), len(a), "<f8"), a)


# --- ALP-RD (alprd.rs) ------------------------------------------------------------------------

def alprd_split(a: np.ndarray, rbw: int, dictionary: list[int]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """ALPRDEncoding::split: left codes (exceptions coded 0), right parts, exceptions."""
    udt = np.dtype(f"<u{a.dtype.itemsize}")
    bits = a.view(udt)
    right = bits & udt.type((1 << rbw) - 1)
    left = (bits >> udt.type(rbw)).astype(np.uint16)  # truncating `as u16`
    codes = np.zeros(len(a), "<u2")
    where, vals = [], []
    for i, x in enumerate(left.tolist()):
        if x in dictionary:
            codes[i] = dictionary.index(x)
        else:
            where.append(i)
            vals.append(x)
    return codes, right, np.array(where, "<u4"), np.array(vals, "<u2")


def best_dictionary(a: np.ndarray, rbw: int) -> list[int]:
    """build_left_parts_dictionary: the (up to) 8 most frequent left parts."""
    udt = np.dtype(f"<u{a.dtype.itemsize}")
    left = (a.view(udt) >> udt.type(rbw)).astype(np.uint16)
    keys, counts = np.unique(left, return_counts=True)
    return [int(k) for k in keys[np.argsort(-counts, kind="stable")][:8]]


def alprd(rbw: int, dictionary: list[int] | None = None, left_enc: Enc | None = None,
          right_enc: Enc | None = None) -> Enc:
    def enc(a: np.ndarray) -> bytes:
        d = dictionary if dictionary is not None else best_dictionary(a, rbw)
        codes, right, where, vals = alprd_split(a, rbw, d)
        lb = (left_enc or flbitpack(max(1, (len(d) - 1).bit_length())))(codes)
        rb = (right_enc or flbitpack(rbw))(right)
        head = code(13) + meta(struct.pack("<IIHBB", len(lb), len(rb), len(where), rbw, len(d)))
        return head + np.array(d, "<u2").tobytes() + lb + rb + where.tobytes() + vals.tobytes()
    return enc


def test_alprd_by_hand() -> None:
    # two f64 values split at 48 right bits: left parts 0x3FF0 (1.0) and 0x4000 (2.0)
    a = np.array([1.0, 2.0, 1.0], "<f8")
    hand = (code(13) + struct.pack("<IIHBB", 8, 26, 1, 48, 1) + bytes(2)
            + struct.pack("<H", 0x3FF0)
            + code(1) + struct.pack("<HHH", 0, 0, 0)           # left codes (2.0: exception)
            + code(1) + struct.pack("<QQQ", 0, 0, 0)           # right parts
            + struct.pack("<I", 1) + struct.pack("<H", 0x4000))
    assert same_bits(decode(hand, 3, "<f8"), a)
    assert hand == alprd(48, [0x3FF0], plain, plain)(a)


@pytest.mark.parametrize("dt", ["<f4", "<f8"])
@pytest.mark.parametrize("cut", [1, 4, 8, 16])
def test_alprd_round_trip(dt: str, cut: int) -> None:
    rng = np.random.default_rng(cut)
    n = 3000
    a = (rng.random(n) * 30 + 10).astype(dt)
    a[::97] = rng.normal(size=len(a[::97])) * 1e6  # rare left parts: exceptions
    bits = a.dtype.itemsize * 8
    rbw = bits - cut
    section = alprd(rbw)(a)
    assert same_bits(decode(section, n, dt), a)
    assert same_bits(decode(alprd(rbw, left_enc=plain, right_enc=for_(plain))(a), n, dt), a)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["<f4", "<f8"]), st.integers(1, 16),
       st.lists(st.floats(allow_nan=True, width=32), min_size=1, max_size=200))
def test_alprd_random(dt: str, cut: int, xs: list[float]) -> None:
    a = np.array(xs, dt)
    rbw = a.dtype.itemsize * 8 - cut
    assert same_bits(decode(alprd(rbw)(a), len(a), dt), a)


# --- FSST (fsst.rs + fsst-rs) -----------------------------------------------------------------

def fsst_compress(data: bytes, symbols: list[bytes]) -> bytes:
    """Greedy longest-match FSST: a code per symbol, escape 255 + the byte otherwise."""
    out = bytearray()
    i = 0
    while i < len(data):
        best = -1
        for c, s in enumerate(symbols):
            if data.startswith(s, i) and (best < 0 or len(s) > len(symbols[best])):
                best = c
        if best < 0:
            out += bytes([255, data[i]])
            i += 1
        else:
            out.append(best)
            i += len(symbols[best])
    return bytes(out)


def fsst(symbols: list[bytes], items: list[bytes], *, offsets_enc: Enc | None = None,
         padded: bool = True, fixed: bool = False) -> bytes:
    data = b"".join(items)
    packed = fsst_compress(data, symbols)
    table = b"".join(s.ljust(8, b"\0") for s in symbols) + bytes(len(s) for s in symbols)
    head = code(15) + meta(struct.pack("<BIBB", len(symbols), len(packed),
                                       offsets_enc is not None, 0 if fixed else 8))
    out = head + table + packed
    if padded:
        out = pad8(out)
    if fixed:
        return out
    offsets = np.zeros(len(items) + 1, "<u8")
    np.cumsum([len(x) for x in items], out=offsets[1:])
    return out + (offsets_enc(offsets) if offsets_enc else offsets.tobytes())


def dec_bin(section: bytes, n: int, fixed: int = 0) -> list[bytes]:
    return decode_binary_values(memoryview(section), n, fixed, base=0, field="t")


def test_fsst_by_hand() -> None:
    # symbols: 0 = "ab", 1 = "c"; "abcab" + "x" (escaped) + "\xff" (escaped 255)
    symbols = [b"ab", b"c"]
    hand = (code(15) + struct.pack("<BIBB", 2, 8, 0, 8) + bytes(7)
            + b"ab\0\0\0\0\0\0" + b"c\0\0\0\0\0\0\0" + bytes([2, 1])
            + bytes([0, 1, 0, 255, ord("x"), 255, 255, 1]) + bytes(6)
            + struct.pack("<QQQ", 0, 3, 8))
    assert dec_bin(hand, 2) == [b"abc", b"abx\xffc"]
    assert hand == fsst(symbols, [b"abc", b"abx\xffc"])
    assert dec_bin(fsst(symbols, [b"abc", b"abx\xffc"], padded=False), 2) == [b"abc",
                                                                            b"abx\xffc"]


def test_fsst_escape_runs() -> None:
    symbols = [b"\xff\xff", b"q"]
    for items in ([b"\xff"], [b"\xff\xff\xff"], [b"\xffq\xff", b"", b"q\xff\xff\xffq"]):
        for padded in (True, False):
            assert dec_bin(fsst(symbols, items, padded=padded), len(items)) == items
        assert dec_bin(fsst([], items), len(items)) == items  # escapes only


WORDS = [b"alpha", b"beta", b"gamma", b"delta", b" ", b"\x00", b"\xff", b"epsilon"]


def items_for(seed: int, n: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [b"".join(WORDS[int(i)] for i in rng.integers(0, len(WORDS), int(k)))
            for k in rng.integers(0, 6, n)]


SYMBOLS = [b"alpha", b"bet", b"a", b"gam", b"ma", b"delta", b" ", b"\x00", b"epsilon"]


@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("offsets", ["raw", "plain", "delta-for", "for-flbitpack"])
def test_fsst_round_trip(padded: bool, offsets: str) -> None:
    items = items_for(3, 700)
    enc = {"raw": None, "plain": plain, "delta-for": delta(for_(flbitpack(6))),
           "for-flbitpack": for_(flbitpack(16))}[offsets]
    section = fsst(SYMBOLS, items, offsets_enc=enc, padded=padded)
    assert dec_bin(section, len(items)) == items


def test_fsst_fixed_size_and_empty() -> None:
    items = [bytes([i % 7]) * 4 for i in range(50)]
    assert dec_bin(fsst([b"\x00\x00\x00\x00", b"\x01"], items, fixed=True), 50, 4) == items
    assert dec_bin(fsst(SYMBOLS, []), 0) == []
    assert dec_bin(fsst(SYMBOLS, [b"", b""]), 2) == [b"", b""]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=8), max_size=40, unique=True),
       st.lists(st.binary(max_size=30), max_size=40), st.booleans())
def test_fsst_random(symbols: list[bytes], items: list[bytes], padded: bool) -> None:
    assert dec_bin(fsst(symbols, items, padded=padded), len(items)) == items
    assert dec_bin(fsst(symbols, items, offsets_enc=plain, padded=padded),
                   len(items)) == items


# --- truncation and corruption --------------------------------------------------------------

def corpus() -> list[tuple[bytes, int, str]]:
    a = (np.arange(300) / 4).astype("<f8")
    a[[5, 299]] = [np.e, np.nan]
    b = (np.arange(200) / 8 + 3).astype("<f4")
    b[7] = -1e30
    return [(alp(2, 0, for_(fit))(a), len(a), "<f8"),
            (alp(3, 0)(b), len(b), "<f4"),
            (alprd(48)(a), len(a), "<f8"),
            (alprd(20, left_enc=plain, right_enc=plain)(b), len(b), "<f4")]


def test_truncated_float_sections_raise_shardkit_errors() -> None:
    for section, n, dt in corpus():
        assert decode(section, n, dt).size == n
        for cut in range(len(section)):
            with pytest.raises(ShardkitError):
                decode(section[:cut], n, dt)


def test_truncated_fsst_sections_raise_shardkit_errors() -> None:
    items = items_for(5, 40)
    for enc in (None, delta(for_(plain))):
        for padded in (True, False):
            section = fsst(SYMBOLS, items, offsets_enc=enc, padded=padded)
            assert dec_bin(section, len(items)) == items
            for cut in range(len(section)):
                try:
                    got = dec_bin(section[:cut], len(items))
                except ShardkitError:
                    continue
                # only dropping the zero padding of a raw-offset layout may still decode
                raise AssertionError((cut, len(section), got == items))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 4), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                                   min_size=1, max_size=4))
def test_corrupt_sections_raise_shardkit_errors_only(which: int,
                                                     flips: list[tuple[int, int]]) -> None:
    if which == 4:
        items = items_for(9, 30)
        data = bytearray(fsst(SYMBOLS, items, offsets_enc=delta(plain)))
        for pos, value in flips:
            data[pos % len(data)] = value
        try:
            out = dec_bin(bytes(data), len(items))
        except ShardkitError:
            return
        assert len(out) == len(items)
        return
    section, n, dt = corpus()[which]
    data = bytearray(section)
    for pos, value in flips:
        data[pos % min(len(data), 64)] = value
    try:
        out = decode(bytes(data), n, dt)
    except ShardkitError:
        return
    assert out.size == n


def test_specific_corruptions() -> None:
    a = np.array([1.5, 2.5, np.pi], "<f8")
    sec = bytearray(alp(1, 0)(a))
    sec[8] = 19  # e = 19 is still in the 24-entry f64 table
    decode(bytes(sec), 3, "<f8")
    sec[8] = 24
    with pytest.raises(LayoutError, match="exponent 24"):
        decode(bytes(sec), 3, "<f8")
    sec = bytearray(alp(1, 0)(a))
    struct.pack_into("<I", sec, len(sec) - 12, 3)  # exception position 3 of 3 values
    with pytest.raises(LayoutError, match="position 3"):
        decode(bytes(sec), 3, "<f8")
    sec = bytearray(alp(1, 0)(a))
    struct.pack_into("<I", sec, 2, 1000)  # integers_size past the end
    with pytest.raises(TruncatedError):
        decode(bytes(sec), 3, "<f8")
    with pytest.raises(LayoutError, match="exponent 11"):
        decode(code(12) + struct.pack("<IHBB", 6, 0, 11, 0) + bytes(6) + plain(
            np.zeros(1, "<i4")), 1, "<f4")
    rd = bytearray(alprd(48, [0x3FF0], plain, plain)(np.array([1.0, 2.0], "<f8")))
    rd[13] = 9  # dictionary of 9 entries
    with pytest.raises(LayoutError, match="9 entries"):
        decode(bytes(rd), 2, "<f8")
    rd = bytearray(alprd(48, [0x3FF0], plain, plain)(np.array([1.0, 2.0], "<f8")))
    rd[12] = 64  # right bit width 64
    with pytest.raises(LayoutError, match="right bit width 64"):
        decode(bytes(rd), 2, "<f8")
    rd = bytearray(alprd(48, [0x3FF0], plain, plain)(np.array([1.0, 1.0], "<f8")))
    struct.pack_into("<H", rd, 20, 1)  # left code 1 of a 1-entry dictionary
    with pytest.raises(LayoutError, match="left code 1"):
        decode(bytes(rd), 2, "<f8")
    with pytest.raises(UnsupportedVersionError, match=r"encoding 12 \(ALP\).*int64"):
        decode(alp(1, 0)(a), 3, "<i8")
    with pytest.raises(UnsupportedVersionError, match=r"encoding 13 \(ALPRD\)"):
        decode(code(13) + bytes(30), 2, "<u4")
    with pytest.raises(UnsupportedVersionError, match=r"encoding 15 \(FSST\)"):
        decode(code(15) + bytes(30), 2, "<f8")
    good = fsst([b"ab"], [b"ab", b"x"])
    bad = bytearray(good)
    bad[16 + 9] = 1  # code 1 of a 1-symbol table
    with pytest.raises(LayoutError, match="FSST code 1"):
        dec_bin(bytes(bad), 2)
    bad = bytearray(good)
    bad[16 + 8] = 9  # symbol length 9
    with pytest.raises(LayoutError, match="length 9"):
        dec_bin(bytes(bad), 2)
    ends_escaped = fsst([], [b"x"], padded=False)
    head = bytearray(ends_escaped[:16])
    struct.pack_into("<I", head, 3, 1)  # values_size 1: the stream is a lone escape
    with pytest.raises(ShardkitError):
        dec_bin(bytes(head) + b"\xff" + bytes(7) + struct.pack("<QQ", 0, 1), 1)
    with pytest.raises(UnsupportedVersionError, match="offset width 4"):
        dec_bin(bytes(good[:8]) + bytes([4]) + good[9:], 2)
    with pytest.raises(LayoutError, match="fixed-size"):
        dec_bin(fsst([b"ab"], [b"ab", b"ab"], fixed=True), 3, 2)


def test_lone_escape_is_a_layout_error() -> None:
    head = code(15) + struct.pack("<BIBB", 0, 1, 0, 8) + bytes(7)
    with pytest.raises(LayoutError, match="ends with an escape"):
        dec_bin(head + b"\xff" + bytes(7) + struct.pack("<QQ", 0, 1), 1)


# --- end to end: the blocks inside a real shard --------------------------------------------

def test_alp_column_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    values: list = [round(i * 0.37 - 50, 2) for i in range(5000)]
    values[3] = float("inf")
    values[11] = None
    enc = alp(2, 0, for_(fit))
    monkeypatch.setattr(amudai_writer, "_numeric_values",
                        lambda raw, codec: enc(np.frombuffer(raw, "<f8")))
    data = build_amudai([field("x", "Float64")], [{"x": values}])
    monkeypatch.undo()
    s = shardkit.open(data)
    start = s.stripe_field(0, 0).encodings[0].native.buffers[0].buffer.range.start
    presence_size = struct.unpack_from("<I", data, start)[0]
    code_at = start + 8 + presence_size + (-(8 + presence_size) % 8)
    assert struct.unpack_from("<H", data, code_at)[0] == 12
    assert s.read_column("x") == values
    assert s.verify() == []


def test_alprd_float32_column_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    values = [float(np.float32(v)) for v in rng.random(3000) * 100]
    monkeypatch.setattr(amudai_writer, "_numeric_values",
                        lambda raw, codec: alprd(20)(np.frombuffer(raw, "<f4")))
    data = build_amudai([field("y", "Float32")], [{"y": values}])
    monkeypatch.undo()
    s = shardkit.open(data)
    assert s.read_column("y") == values
    assert s.verify() == []


def test_fsst_string_column_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    values: list = [b" ".join(WORDS[(i + k) % 4] for k in range(i % 5)).decode()
                    for i in range(800)]
    values[9] = None
    monkeypatch.setattr(amudai_writer, "_binary_values",
                        lambda items, fixed, codec: fsst(SYMBOLS, items,
                                                         offsets_enc=delta(for_(plain))))
    data = build_amudai([field("s", "String")], [{"s": values}])
    monkeypatch.undo()
    s = shardkit.open(data)
    assert s.read_column("s") == values
    assert s.verify() == []
