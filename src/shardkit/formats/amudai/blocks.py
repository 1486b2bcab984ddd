"""Amudai encoded blocks, presence sections, codecs and AnyValues: pure decoding helpers.

Everything here works on bytes already read and bounds-checked by the caller's ranges; every
size read from those bytes is checked against what remains before it is used, decompression
is capped at the size the block map declares, and recursion (AnyValue) is depth-limited. Errors
are :class:`~shardkit.errors.ShardkitError` subclasses carrying the absolute ``offset`` of the
block (the caller passes ``base``) and a ``field`` path. Layouts: FORMAT_NOTES.md section 4.
"""

from __future__ import annotations

import functools
import itertools
import struct
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

from ..._accel import accelerator
from ...errors import (
    ChecksumError,
    CorruptShardError,
    LayoutError,
    LimitExceededError,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from ...hashing.amudai import checksum
from ._deps import np
from .anyvalue import _DT_EPOCH as _DT_EPOCH  # re-exported: the value conversions live there
from .anyvalue import _MAX_TICKS as _MAX_TICKS
from .anyvalue import TICKS_PER_SECOND as TICKS_PER_SECOND
from .anyvalue import any_value_to_python, ticks_to_datetime

#: The optional C accelerator of numeric cascades (same answers as the Python path).
_native: Any = accelerator("shardkit.formats.amudai._native")

__all__ = [
    "ENCODING_NAMES",
    "MAX_BLOCK_VALUES",
    "MAX_CASCADE_DEPTH",
    "MAX_DECOMPRESSED",
    "BlockParts",
    "any_value_to_python",
    "decode_binary_values",
    "decode_numeric_values",
    "decode_presence",
    "split_block",
    "ticks_to_datetime",
]

PLAIN, FL_BIT_PACK, FOR, FFOR, DELTA, RUN_LENGTH, SINGLE_VALUE = 1, 2, 3, 4, 5, 6, 7
TRUNCATE_U8, TRUNCATE_U16, TRUNCATE_U32, TRUNCATE_U64 = 8, 9, 10, 11
ALP, ALPRD, BLOCK_DICTIONARY, FSST, ZSTD, LZ4, ZIGZAG, SPARSE = 12, 13, 14, 15, 16, 17, 18, 19
_TRUNCATE_WIDTH = {TRUNCATE_U8: 1, TRUNCATE_U16: 2, TRUNCATE_U32: 4, TRUNCATE_U64: 8}
MAX_CASCADE_DEPTH = 16
"""Deepest nesting of cascading encodings a reader follows (deeper: LimitExceededError)."""
MAX_BLOCK_VALUES = 1 << 24
"""Most values one block may claim where the bytes do not bound it (SingleValue, cascades)."""
MAX_DECOMPRESSED = 256 << 20
"""Most bytes one LZ4 or Zstd block section may decompress to (a decompression-bomb guard)."""
ENCODING_NAMES = {
    1: "Plain", 2: "FLBitPack", 3: "FOR", 4: "FFOR", 5: "Delta", 6: "RunLength",
    7: "SingleValue", 8: "TruncateU8", 9: "TruncateU16", 10: "TruncateU32", 11: "TruncateU64",
    12: "ALP", 13: "ALPRD", 14: "BlockDictionary", 15: "FSST", 16: "Zstd", 17: "LZ4",
    18: "ZigZag", 19: "Sparse",
}
#: When a list is set here (see :func:`shardkit.formats.amudai.encodings.block_encodings`),
#: each encoding decoded is appended to it as ``(depth, name)``, the outermost at depth 0.
TRACE: ContextVar[list[tuple[int, str]] | None] = ContextVar("amudai_encoding_trace",
                                                            default=None)
_U32 = struct.Struct("<I")
_HEAD = struct.Struct("<II")


@dataclass(frozen=True)
class BlockParts:
    """A block split into its sections (views into the block bytes).

    Attributes:
        presence: The presence section (empty: no nulls, or no embedded presence).
        values: The values section (starts with the u16 encoding code).
        values_offset: Offset of the values section inside the block.
    """

    presence: memoryview
    values: memoryview
    values_offset: int


def split_block(raw: memoryview, *, embedded_presence: bool, has_checksum: bool, base: int,
                field: str, region: str) -> BlockParts:
    """Check a block's checksum and framing (FORMAT_NOTES.md 4.2); return its sections.

    Args:
        raw: The block's bytes, exactly as sized by the block map.
        embedded_presence: Whether the buffer embeds presence sections.
        has_checksum: Whether the buffer has block checksums (the last 4 bytes).
        base: Absolute file offset of the block (for errors).
        field: Field path for errors.
        region: Name of the block for checksum errors.
    """
    size = len(raw)
    tail = 4 if has_checksum else 0
    if size < 8 + tail:
        raise TruncatedError(f"{region}: {size} bytes, too short for a block", offset=base,
                             field=field)
    if has_checksum:
        (stored,) = _U32.unpack_from(raw, size - 4)
        computed = checksum(raw[: size - 4])
        if stored != computed:
            raise ChecksumError(region, stored, computed, offset=base + size - 4,
                                field=field + "/checksum")
    len_presence, len_values = _HEAD.unpack_from(raw, 0)
    pos = 8
    if embedded_presence:
        if len_presence > size - tail - pos:
            raise LayoutError(f"{region}: presence section of {len_presence} bytes overruns "
                              f"the {size}-byte block", offset=base, field=field + "/len_presence")
        presence = raw[pos : pos + len_presence]
        pos += len_presence
        pos += (-pos) % 8
    else:
        presence = raw[0:0]
    if len_values > size - tail - pos:
        raise LayoutError(f"{region}: values section of {len_values} bytes overruns the "
                          f"{size}-byte block", offset=base + 4, field=field + "/len_values")
    if len_values < 2:
        raise LayoutError(f"{region}: values section of {len_values} bytes has no encoding code",
                          offset=base + 4, field=field + "/len_values")
    return BlockParts(presence, raw[pos : pos + len_values], pos)


def decode_presence(section: memoryview, n: int, *, base: int, field: str) -> np.ndarray | None:
    """Valid-mask of a block's presence section; ``None`` when every value is present."""
    if len(section) == 0:
        return None
    if n > MAX_BLOCK_VALUES:  # n comes from the block map: cap it before allocating n flags
        raise LimitExceededError(f"{n} values in one block (the cap is {MAX_BLOCK_VALUES})",
                                 offset=base, field=field)
    kind = section[0]
    if kind == 1:
        return np.zeros(n, bool)
    if kind == 2:
        if len(section) - 1 != n:
            raise LayoutError(f"presence bytes: {len(section) - 1} for {n} values", offset=base,
                              field=field)
        return cast("np.ndarray | None", np.frombuffer(section, np.uint8, n, 1) != 0)
    if kind == 3:
        if len(section) < 2:
            raise TruncatedError("roaring presence without its negated flag", offset=base,
                                 field=field)
        positions = roaring_positions(section[2:], base=base + 2, field=field)
        if positions.size and int(positions[-1]) >= n:
            raise LayoutError(f"roaring presence lists position {int(positions[-1])} of a "
                              f"{n}-value block", offset=base, field=field)
        listed = np.zeros(n, bool)
        listed[positions] = True
        return ~listed if section[1] else listed
    raise LayoutError(f"unknown presence kind {kind}", offset=base, field=field)


def roaring_positions(data: memoryview, *, base: int, field: str) -> np.ndarray:
    """The sorted positions of a portable-format RoaringBitmap (as CRoaring serializes it)."""
    pos = 0

    def take(count: int) -> memoryview:
        nonlocal pos
        if count < 0 or pos + count > len(data):
            raise TruncatedError("roaring bitmap truncated", needed=count,
                                 available=len(data) - pos, offset=base + pos, field=field)
        out = data[pos : pos + count]
        pos += count
        return out

    (cookie,) = _U32.unpack(take(4))
    runs: bytes = b""
    if cookie & 0xFFFF == 12347:
        size = (cookie >> 16) + 1
        runs = bytes(take((size + 7) // 8))
    elif cookie == 12346:
        (size,) = _U32.unpack(take(4))
    else:
        raise LayoutError(f"not a roaring bitmap (cookie {cookie:#x})", offset=base, field=field)
    if size > 65536:
        raise LayoutError(f"roaring bitmap with {size} containers", offset=base, field=field)
    heads = np.frombuffer(take(4 * size), "<u2").reshape(size, 2)
    if not runs or size >= 4:
        take(4 * size)  # container offsets: the containers follow in order anyway
    out = []
    for i in range(size):
        key, card = int(heads[i, 0]) << 16, int(heads[i, 1]) + 1
        if runs and runs[i // 8] >> (i % 8) & 1:
            (nruns,) = struct.unpack("<H", take(2))
            pairs = np.frombuffer(take(4 * nruns), "<u2").reshape(nruns, 2).astype(np.int64)
            for start, length in pairs.tolist():
                out.append(np.arange(key + start, key + start + length + 1, dtype=np.int64))
        elif card <= 4096:
            out.append(np.frombuffer(take(2 * card), "<u2").astype(np.int64) + key)
        else:
            bits = np.unpackbits(np.frombuffer(take(8192), np.uint8), bitorder="little")
            out.append(np.flatnonzero(bits).astype(np.int64) + key)
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def _codec_errors() -> tuple[type[BaseException], ...]:
    """What LZ4 and Zstd raise for bytes they cannot decode (a MemoryError or a bug is not
    corrupt data: it propagates as itself)."""
    errors: list[type[BaseException]] = [ValueError]
    try:
        import lz4.block

        errors.append(lz4.block.LZ4BlockError)
    except ImportError:  # pragma: no cover - reported by _decompress when a block needs it
        pass
    try:
        import zstandard

        errors.append(zstandard.ZstdError)
    except ImportError:  # pragma: no cover - as above
        pass
    return tuple(errors)


def _decompress(code: int, data: memoryview, expected: int, *, base: int, field: str) -> bytes:
    """Undo LZ4 (u32 size + raw block) or Zstd (one frame); the output must be ``expected``.

    ``expected`` (from the block) is checked before anything is allocated: at most
    :data:`MAX_DECOMPRESSED` bytes, and for LZ4 no more than its format can expand ``data`` to.
    """
    name = ENCODING_NAMES[code]
    if expected > MAX_DECOMPRESSED:
        raise LimitExceededError(f"{name} block would decompress to {expected} bytes (the cap "
                                 f"is {MAX_DECOMPRESSED})", offset=base, field=field)
    if code == LZ4 and expected > 255 * len(data) + 16:
        raise LayoutError(f"LZ4 block of {len(data)} bytes cannot hold {expected} bytes",
                          offset=base, field=field)
    try:
        if code == LZ4:
            import lz4.block

            if len(data) < 4:
                raise TruncatedError("LZ4 data without its size", offset=base, field=field)
            (size,) = _U32.unpack_from(data, 0)
            if size != expected:
                raise LayoutError(f"LZ4 block claims {size} bytes, the block holds {expected}",
                                  offset=base, field=field)
            out = lz4.block.decompress(data[4:], uncompressed_size=size)  # no copy
        else:
            import zstandard

            declared = zstandard.frame_content_size(bytes(data[:18]))
            if declared > expected:  # known and too big: refused before it is allocated
                raise LayoutError(f"Zstd frame declares {declared} bytes, the block holds "
                                  f"{expected}", offset=base, field=field)
            out = zstandard.ZstdDecompressor().decompress(data, max_output_size=expected)
    except ImportError as exc:
        raise UnsupportedVersionError(
            f"{name} blocks need the Python package {exc.name!r} (pip install {exc.name})",
            offset=base, field=field) from exc
    except _codec_errors() as exc:  # the codec refuses the bytes: corrupt data
        raise LayoutError(f"{name} data does not decompress: {exc}", offset=base,
                          field=field) from exc
    if len(out) != expected:
        raise LayoutError(f"{name} data decompresses to {len(out)} bytes, expected {expected}",
                          offset=base, field=field)
    return cast(bytes, out)


def _unsupported(code: int, base: int, field: str, where: str = "") -> UnsupportedVersionError:
    name = ENCODING_NAMES.get(code, "unknown")
    return UnsupportedVersionError(
        f"block encoding {code} ({name}) is not supported{where}", offset=base,
        field=field + "/encoding")


# --- cascading numeric encodings (FORMAT_NOTES.md 4.4) -----------------------------------------
#
# Layouts were checked against microsoft/amudai, crate amudai-encodings,
# src/encodings/numeric/{bitpacking,fastlanes,frame_of_reference,delta,run_length,truncation,
# zigzag,sparse,dictionary}.rs and src/encodings/binary/{generic,offsets,dictionary}.rs.
# Every encoding is ``[u16 code][metadata][payload]``; the metadata area is
# ``round_up(own + 2, 8) - 2`` bytes (Plain and SingleValue have none). "Pad to 8" is taken
# relative to the values section, which starts 8-aligned in its block (4.2), so it equals the
# block-relative padding of the notes.


def _meta_size(own: int) -> int:
    """Size of the metadata area after the u16 code for ``own`` bytes of metadata."""
    return -(-(own + 2) // 8) * 8 - 2


def _round8(pos: int) -> int:
    return -(-pos // 8) * 8


_FL_ORDER = (0, 4, 2, 6, 1, 5, 3, 7)
_FL_ROW_START = {bits: [_FL_ORDER[r // 8] * 16 + (r % 8) * 128 for r in range(bits)]
                 for bits in (8, 16, 32, 64)}


class _Section:
    """A values section being decoded: its bytes, absolute offset (for errors) and field."""

    __slots__ = ("base", "buf", "field")

    def __init__(self, buf: memoryview, base: int, field: str) -> None:
        self.buf = buf
        self.base = base
        self.field = field

    def need(self, pos: int, count: int, end: int, what: str) -> None:
        """Raise unless ``count`` bytes from ``pos`` lie before ``end``."""
        if count < 0 or pos < 0 or pos + count > end:
            raise TruncatedError(f"{what} needs {count} bytes, {max(end - pos, 0)} remain",
                                 needed=count, available=max(end - pos, 0),
                                 offset=self.base + pos, field=self.field)

    def array(self, pos: int, end: int, n: int, dtype: np.dtype, what: str) -> np.ndarray:
        """``n`` raw values of ``dtype`` at ``pos`` (bounds-checked)."""
        self.need(pos, n * dtype.itemsize, end, what)
        return np.frombuffer(self.buf, dtype, n, pos)

    def unpack(self, fmt: str, pos: int, end: int, what: str) -> tuple[Any, ...]:
        self.need(pos, struct.calcsize(fmt), end, what)
        return struct.unpack_from(fmt, self.buf, pos)

    def layout(self, message: str, pos: int) -> LayoutError:
        return LayoutError(message, offset=self.base + pos, field=self.field)


def _unsigned(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"<u{dtype.itemsize}")


def _fastlanes_unpack(sec: _Section, pos: int, end: int, n: int, udt: np.dtype, width: int,
                      what: str) -> np.ndarray:
    """``n`` values of the unsigned ``udt`` bit-packed FastLanes-style with ``width`` bits.

    Chunks of 1024 values; lane ``l`` (of ``1024 / B``) holds the W-bit values of rows
    ``r = 0..B`` (LSB first) whose element index is ``ORDER[r/8]*16 + (r%8)*128 + l``; word
    ``k`` of lane ``l`` is stored at ``LANES*k + l`` (FORMAT_NOTES.md 4.4; fastlanes.rs).
    """
    bits = udt.itemsize * 8
    if width > bits:
        raise sec.layout(f"{what}: bit width {width} exceeds the {bits}-bit values", pos)
    chunks = -(-n // 1024)
    if width == 0 or n == 0:  # never written (SingleValue is used instead): all zeros
        return np.zeros(n, udt)
    lanes = 1024 // bits
    words = sec.array(pos, end, chunks * width * lanes, udt, what)
    packed = words.reshape(chunks, width, lanes)
    first, shift, spill, place = _fl_plan(bits, width)
    # every row at once: row r is bits [r*W, r*W + W) of each lane's stream of W words
    value = packed[:, first, :] >> shift
    if spill is not None:
        rows, left = spill
        value[:, rows, :] |= packed[:, first[rows] + 1, :] << left
    if width < bits:
        value &= udt.type((1 << width) - 1)
    out = np.empty((chunks, 1024), udt)
    out[:, place] = value.reshape(chunks, bits * lanes)
    return out.reshape(-1)[:n]


@functools.cache  # bounded by its arguments (bits 8..64, width up to bits): no ByteLRU needed
def _fl_plan(bits: int, width: int) -> tuple[np.ndarray, np.ndarray,
                                             tuple[np.ndarray, np.ndarray] | None, np.ndarray]:
    """For ``width``-bit values packed in ``bits``-bit words: per row, the word it starts in,
    the shift, the rows that spill into the next word (and the left shift there), and where
    each (row, lane) value goes among the 1024 of a chunk (the FastLanes order)."""
    udt = np.dtype(f"<u{bits // 8}")
    rows = np.arange(bits)
    first = rows * width // bits
    shift = (rows * width % bits).astype(udt)[None, :, None]
    over = np.flatnonzero(rows * width % bits + width > bits)
    spill = None
    if over.size:
        spill = (over, (bits - rows[over] * width % bits).astype(udt)[None, :, None])
    lanes = 1024 // bits
    starts = np.array(_FL_ROW_START[bits])
    place = (starts[:, None] + np.arange(lanes)[None, :]).reshape(-1)
    return first, shift, spill, place


def _int_only(sec: _Section, code: int, dtype: np.dtype, pos: int) -> None:
    if dtype.kind not in "iu":
        raise sec.layout(f"encoding {code} ({ENCODING_NAMES[code]}) applies to integers, not "
                         f"{dtype}", pos)


def _decode_num(sec: _Section, start: int, end: int, n: int, dtype: np.dtype,
                depth: int) -> np.ndarray:
    """``n`` values of ``dtype`` from the encoding at ``sec.buf[start:end]`` (recursive).

    With the C accelerator, a cascade of integer encodings is decoded in one call; it answers
    None for anything else (codecs, ALP, any error), and this Python path decides.
    """
    if _native is not None and TRACE.get() is None:
        got = _native.decode_numeric(sec.buf, start, end, n, dtype.itemsize, dtype.kind, depth)
        if got is not None:
            return np.frombuffer(got, dtype)
    return _decode_num_py(sec, start, end, n, dtype, depth)


def _decode_num_py(sec: _Section, start: int, end: int, n: int, dtype: np.dtype,
                   depth: int) -> np.ndarray:
    """The pure-Python twin of the C decoder (and the one that raises the precise errors)."""
    if depth > MAX_CASCADE_DEPTH:
        raise LimitExceededError(f"encodings nested deeper than {MAX_CASCADE_DEPTH} levels",
                                 offset=sec.base + start, field=sec.field)
    if n > MAX_BLOCK_VALUES:
        raise LimitExceededError(f"{n} values in one block (the cap is {MAX_BLOCK_VALUES})",
                                 offset=sec.base + start, field=sec.field)
    (code,) = sec.unpack("<H", start, end, "encoding code")
    name = ENCODING_NAMES.get(code, "unknown")
    trace = TRACE.get()
    if trace is not None:
        trace.append((depth, name))
    width = dtype.itemsize
    body = start + 2
    if code == PLAIN:
        return sec.array(body, end, n, dtype, f"Plain block of {n} values")
    if code == SINGLE_VALUE:
        value = sec.array(body, end, 1, dtype, "SingleValue block")
        return np.full(n, value[0], dtype)
    if code in (LZ4, ZSTD):
        sec.need(start, 8, end, f"{name} block header")
        raw = _decompress(code, sec.buf[start + 8 : end], n * width, base=sec.base + start + 8,
                          field=sec.field)
        return np.frombuffer(raw, dtype, n)
    if code == FSST or code not in ENCODING_NAMES:
        # the numeric encoders of amudai-encodings (numeric/mod.rs) have no FSST
        raise _unsupported(code, sec.base + start, sec.field,
                           " in a numeric values section" if code == FSST else "")
    if code in (ALP, ALPRD):
        return _decode_float(sec, code, start, end, n, dtype, depth)
    if code in (RUN_LENGTH, SPARSE, BLOCK_DICTIONARY):
        return _decode_composite(sec, code, start, end, n, dtype, depth)
    return _decode_int(sec, code, name, start, end, n, dtype, depth)


def _decode_float(sec: _Section, code: int, start: int, end: int, n: int, dtype: np.dtype,
                  depth: int) -> np.ndarray:
    """ALP and ALPRD: f32 and f64 values only."""
    if dtype.kind != "f" or dtype.itemsize not in (4, 8):
        # numeric/mod.rs registers ALP/ALPRD for f32 and f64 only ("Unsupported encoding")
        raise _unsupported(code, sec.base + start, sec.field, f" for {dtype} values")
    if code == ALP:
        return _decode_alp(sec, start, end, n, dtype, depth)
    return _decode_alprd(sec, start, end, n, dtype, depth)


def _decode_int(sec: _Section, code: int, name: str, start: int, end: int, n: int,
                dtype: np.dtype, depth: int) -> np.ndarray:
    """The integer-only encodings: FLBitPack, FOR, FFOR, Delta, ZigZag and the Truncates."""
    width = dtype.itemsize
    body = start + 2
    _int_only(sec, code, dtype, start)
    udt = _unsigned(dtype)
    if code == FL_BIT_PACK:
        (bits,) = sec.unpack("<B", body, end, "FLBitPack metadata")
        data = body + _meta_size(1)
        return _fastlanes_unpack(sec, data, end, n, udt, bits, "FLBitPack").view(dtype)
    if code in (FOR, FFOR):
        ref = sec.array(body, end, 1, udt, f"{name} reference")[0]
        if code == FFOR:
            (bits,) = sec.unpack("<B", body + width, end, "FFOR width")
            data = body + _meta_size(width + 1)
            deltas = _fastlanes_unpack(sec, data, end, n, udt, bits, "FFOR")
        else:
            sec.need(body, _meta_size(width), end, "FOR metadata")
            deltas = _decode_num(sec, body + _meta_size(width), end, n, udt, depth + 1)
        return cast("np.ndarray", (deltas.astype(udt, copy=False) + ref).view(dtype))
    if code == DELTA:
        base = sec.array(body, end, 1, udt, "Delta base")[0]
        sec.need(body, _meta_size(width), end, "Delta metadata")
        if n == 0:
            return np.zeros(0, dtype)
        diffs = _decode_num(sec, body + _meta_size(width), end, n - 1, dtype, depth + 1)
        out = np.empty(n, udt)
        out[0] = base
        out[1:] = diffs.view(udt)
        return np.cumsum(out, dtype=udt).view(dtype)  # wrapping prefix sum
    if code in (ZIGZAG, TRUNCATE_U8, TRUNCATE_U16, TRUNCATE_U32, TRUNCATE_U64):
        return _decode_zigzag_truncate(sec, code, name, start, end, n, dtype, depth)
    raise _unsupported(code, sec.base + start, sec.field)  # pragma: no cover


def _decode_zigzag_truncate(sec: _Section, code: int, name: str, start: int, end: int, n: int,
                            dtype: np.dtype, depth: int) -> np.ndarray:
    """ZigZag and TruncateU8/16/32/64: a narrower (or zigzagged) unsigned inner array."""
    width = dtype.itemsize
    body = start + 2
    udt = _unsigned(dtype)
    (cascading,) = sec.unpack("<B", body, end, f"{name} metadata")
    data = body + _meta_size(1)
    sec.need(body, _meta_size(1), end, f"{name} metadata")
    inner = udt if code == ZIGZAG else np.dtype(f"<u{_TRUNCATE_WIDTH[code]}")
    if inner.itemsize > width:
        raise sec.layout(f"{name} cannot hold {dtype} values", start)
    if cascading:
        got = _decode_num(sec, data, end, n, inner, depth + 1).astype(inner, copy=False)
    else:
        got = sec.array(data, end, n, inner, f"{name} values")
    if code == ZIGZAG:
        out = got >> inner.type(1)
        odd = (got & inner.type(1)).astype(bool)
        out[odd] = ~out[odd]
        return cast("np.ndarray", out.view(dtype))
    if dtype.kind == "i":  # sign-extend
        return got.view(f"<i{inner.itemsize}").astype(dtype)
    return got.astype(dtype)


# --- ALP and ALP-RD (floats) -----------------------------------------------------------------
#
# From microsoft/amudai, crate amudai-encodings: src/encodings/numeric/alp.rs (ALPEncoding::
# encode/decode, decode_single, ALPMetadata, the F10/IF10 tables of ALPDecimalValue),
# src/encodings/numeric/alprd.rs (ALPRDEncoding::encode/decode/decode_chunk, ALPRDMetadata,
# MAX_DICT_SIZE), src/encodings/numeric/mod.rs (create_decimal_encodings) and
# src/encodings/mod.rs (AlignedEncMetadata::size, ALIGNMENT_BYTES).
#
# ALP   [u16 12][u32 integers_size, u16 exceptions_count, u8 e, u8 f, 6 pad]
#       [integers_size bytes: nested encoding of n i32 (f32) / i64 (f64)]
#       [exceptions_count x u32 position][exceptions_count x f32/f64 value]
#       value = (int as float) * F10[f] * IF10[e], evaluated left to right in the float type,
#       then value[position] = exception value.
# ALPRD [u16 13][u32 left_size, u32 right_size, u16 exceptions_count, u8 right_bit_width,
#       u8 dict_len, 2 pad][dict_len x u16 left-part dictionary (at most 8, no padding)]
#       [left_size bytes: nested u16 codes][right_size bytes: nested u32/u64 right parts]
#       [exceptions_count x u32 position][exceptions_count x u16 left part]
#       left = dict[code], patched at the exception positions; bits = left << rbw | right.

@functools.cache
def _alp_tables() -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per float width: F10 (10^0.., exact literals) and IF10 (10^-0.., correctly rounded), as
    alp.rs spells them: f32 to 10^±10, f64 to 10^±23 (``float('1e-k')`` rounds like the Rust
    literal; for f32 the double-then-single rounding matches the nearest single, tested). Made
    on first use (also as the module attribute ``_ALP_TABLES``), so that importing this module
    does not import numpy."""
    return {
        4: (np.array([10.0 ** k for k in range(11)], np.float32),
            np.array([float(f"1e-{k}") for k in range(11)], np.float32)),
        8: (np.array([float(f"1e{k}") for k in range(24)], np.float64),
            np.array([float(f"1e-{k}") for k in range(24)], np.float64)),
    }


def __getattr__(name: str) -> Any:
    if name == "_ALP_TABLES":
        return _alp_tables()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _decode_alp(sec: _Section, start: int, end: int, n: int, dtype: np.dtype,
                depth: int) -> np.ndarray:
    body = start + 2
    size, count, e, f = sec.unpack("<IHBB", body, end, "ALP metadata")
    pos = body + _meta_size(8)
    sec.need(body, _meta_size(8), end, "ALP metadata")
    f10, if10 = _alp_tables()[dtype.itemsize]
    if e >= if10.size or f >= f10.size:
        raise sec.layout(f"ALP exponent {e} / factor {f} outside the 10^0..10^{if10.size - 1} "
                         "tables", body + 6)
    sec.need(pos, size, end, "ALP integers")
    idt = np.dtype(f"<i{dtype.itemsize}")
    ints = _decode_num(sec, pos, pos + size, n, idt, depth + 1).astype(idt, copy=False)
    out = np.multiply(ints.astype(dtype), f10[f], dtype=dtype)
    out = np.multiply(out, if10[e], dtype=dtype)
    xpos = pos + size
    if count:
        where = sec.array(xpos, end, count, np.dtype("<u4"), "ALP exception positions")
        values = sec.array(xpos + 4 * count, end, count, dtype, "ALP exception values")
        if int(where.max()) >= n:
            raise sec.layout(f"ALP exception position {int(where.max())} in a block of {n} "
                             "values", xpos)
        out[where.astype(np.int64)] = values
    return cast("np.ndarray", out)


def _decode_alprd(sec: _Section, start: int, end: int, n: int, dtype: np.dtype,
                  depth: int) -> np.ndarray:
    body = start + 2
    lsize, rsize, count, rbw, dlen = sec.unpack("<IIHBB", body, end, "ALPRD metadata")
    pos = body + _meta_size(12)
    sec.need(body, _meta_size(12), end, "ALPRD metadata")
    udt = _unsigned(dtype)
    bits = udt.itemsize * 8
    if dlen > 8:  # MAX_DICT_SIZE (an ArrayVec<[u16; 8]> in alprd.rs)
        raise sec.layout(f"ALPRD dictionary of {dlen} entries (at most 8)", body + 11)
    if rbw >= bits:
        raise sec.layout(f"ALPRD right bit width {rbw} of {bits}-bit values", body + 10)
    table = sec.array(pos, end, dlen, np.dtype("<u2"), "ALPRD dictionary").astype(udt)
    pos += 2 * dlen
    sec.need(pos, lsize, end, "ALPRD left parts")
    codes = _decode_num(sec, pos, pos + lsize, n, np.dtype("<u2"), depth + 1)
    pos += lsize
    sec.need(pos, rsize, end, "ALPRD right parts")
    right = _decode_num(sec, pos, pos + rsize, n, udt, depth + 1).astype(udt, copy=False)
    xpos = pos + rsize
    if codes.size and int(codes.max()) >= dlen:
        raise sec.layout(f"ALPRD left code {int(codes.max())} of {dlen} dictionary entries",
                         pos - lsize)
    left = table[codes.astype(np.int64)]
    if count:
        where = sec.array(xpos, end, count, np.dtype("<u4"), "ALPRD exception positions")
        values = sec.array(xpos + 4 * count, end, count, np.dtype("<u2"),
                           "ALPRD exception values")
        if int(where.max()) >= n:
            raise sec.layout(f"ALPRD exception position {int(where.max())} in a block of {n} "
                             "values", xpos)
        left[where.astype(np.int64)] = values.astype(udt)
    return cast("np.ndarray", ((left << udt.type(rbw)) | right).view(dtype))


def _part(sec: _Section, start: int, end: int, n: int, dtype: np.dtype, nested: int,
          depth: int, what: str) -> np.ndarray:
    """One part of a composite block: a cascade of its own when ``nested``, else plain values."""
    if nested:
        return _decode_num(sec, start, end, n, dtype, depth + 1)
    return sec.array(start, end, n, dtype, what)


def _decode_composite(sec: _Section, code: int, start: int, end: int, n: int,
                      dtype: np.dtype, depth: int) -> np.ndarray:
    """RunLength, Sparse and BlockDictionary: two nested parts (counts checked against n)."""
    body = start + 2
    u32 = np.dtype("<u4")
    if code == RUN_LENGTH:
        size, runs, v_casc, l_casc = sec.unpack("<IIBB", body, end, "RunLength metadata")
        pos = body + _meta_size(10)
        if runs > n:
            raise sec.layout(f"RunLength block of {n} values claims {runs} runs", body + 4)
        sec.need(pos, size, end, "RunLength values")
        values = _part(sec, pos, pos + size, runs, dtype, v_casc, depth, "RunLength values")
        lpos = _round8(pos + size)
        lengths = _part(sec, lpos, end, runs, u32, l_casc, depth, "RunLength lengths")
        total = int(lengths.sum(dtype=np.uint64))
        if total != n:
            raise sec.layout(f"RunLength lengths add up to {total}, the block holds {n}", lpos)
        return np.repeat(values, lengths.astype(np.int64))
    if code == SPARSE:
        count, size, p_casc, v_casc = sec.unpack("<IIBB", body, end, "Sparse metadata")
        pos = body + _meta_size(10)
        if count > n:
            raise sec.layout(f"Sparse block of {n} values claims {count} positions", body)
        sec.need(pos, size, end, "Sparse positions")
        positions = _part(sec, pos, pos + size, count, u32, p_casc, depth, "Sparse positions")
        vpos = _round8(pos + size)
        values = _part(sec, vpos, end, count, dtype, v_casc, depth, "Sparse values")
        if count and int(positions.max()) >= n:
            raise sec.layout(f"Sparse position {int(positions.max())} in a block of {n} values",
                             pos)
        out = np.zeros(n, dtype)
        out[positions.astype(np.int64)] = values
        return out
    # numeric BlockDictionary: u32 codes (nested, exactly codes_size bytes), then the unique
    # values right after them (no padding, dictionary.rs), raw or nested
    size, unique, v_casc = sec.unpack("<IIB", body, end, "BlockDictionary metadata")
    pos = body + _meta_size(9)
    if unique > n:
        raise sec.layout(f"BlockDictionary of {n} values claims {unique} entries", body + 4)
    sec.need(pos, size, end, "BlockDictionary codes")
    codes = _decode_num(sec, pos, pos + size, n, u32, depth + 1)
    vpos = pos + size
    entries = _part(sec, vpos, end, unique, dtype, v_casc, depth, "BlockDictionary values")
    return _lookup(sec, codes, entries, dtype, pos)


def _lookup(sec: _Section, codes: np.ndarray, entries: np.ndarray, dtype: np.dtype,
            pos: int) -> np.ndarray:
    if codes.size and int(codes.max()) > entries.size:
        raise sec.layout(f"dictionary code {int(codes.max())} of {entries.size} entries", pos)
    table = np.concatenate([np.zeros(1, dtype), entries.astype(dtype, copy=False)])
    return table[codes.astype(np.int64)]


def decode_numeric_values(values: memoryview, n: int, dtype: np.dtype, *, base: int,
                          field: str) -> np.ndarray:
    """``n`` values of ``dtype`` from a numeric values section (4.4), cascades included.

    Raises:
        TruncatedError, LayoutError: A size, count, width or code contradicts the bytes.
        LimitExceededError: Encodings nested deeper than :data:`MAX_CASCADE_DEPTH`.
        UnsupportedVersionError: An unknown encoding code, FSST (binary only), or ALP/ALPRD
            for a non-float ``dtype``.
    """
    dtype = np.dtype(dtype)
    out = _decode_num(_Section(values, base, field), 0, len(values), n, dtype, 0)
    return out.astype(dtype, copy=False)


def decode_binary_values(values: memoryview, n: int, fixed: int, *, base: int,
                         field: str) -> list[bytes]:
    """``n`` byte strings from a binary values section (4.4); ``fixed`` > 0: fixed-size values.

    BlockDictionary code 0 (a null slot) yields empty bytes (``fixed`` zero bytes for a
    fixed-size field); the presence section says which slots are null.
    """
    data, offsets = decode_binary_raw(values, n, fixed, base=base, field=field)
    return [data[a:b] for a, b in itertools.pairwise(offsets.tolist())]


def decode_binary_raw(values: memoryview, n: int, fixed: int, *, base: int,
                      field: str) -> tuple[bytes, np.ndarray]:
    """The values of :func:`decode_binary_values` as one byte string and ``n + 1`` int64
    offsets into it (increasing from 0, checked): what an Arrow binary array is made of."""
    sec = _Section(values, base, field)
    end = len(values)
    (code,) = sec.unpack("<H", 0, end, "encoding code")
    trace = TRACE.get()
    if trace is not None:
        trace.append((0, ENCODING_NAMES.get(code, "unknown")))
    if n > MAX_BLOCK_VALUES:
        raise LimitExceededError(f"{n} values in one block (the cap is {MAX_BLOCK_VALUES})",
                                 offset=base, field=field)
    if code == SINGLE_VALUE:
        one = bytes(values[2:])
        if len(one) * n > 1 << 31:
            raise LimitExceededError(f"{n} copies of a {len(one)}-byte value", offset=base,
                                     field=field)
        return one * n, np.arange(n + 1, dtype=np.int64) * len(one)
    if code == PLAIN:
        (width,) = sec.unpack("<B", 2, end, "Plain binary offset width")
        return _fixed_or_offsets(sec, width, 3, end, n, fixed, None)
    if code in (LZ4, ZSTD):
        size, width, cascading = sec.unpack("<IBB", 2, end, "compressed binary metadata")
        sec.need(8, size, end, "compressed binary data")
        opos = _round8(8 + size)
        if width == 0:
            total = _fixed_size(sec, fixed, n)
            data = _decompress(code, values[8 : 8 + size], total, base=base + 8, field=field)
            return _fixed_or_offsets(sec, 0, 0, len(data), n, fixed, data)
        if width != 8:
            raise UnsupportedVersionError(f"binary offset width {width}", offset=base + 6,
                                          field=field + "/offset_width")
        offsets = _part(sec, opos, end, n + 1, np.dtype("<u8"), cascading, 0, "binary offsets")
        total = int(offsets[-1])
        if total > 1 << 31:
            raise LimitExceededError(f"binary block claims {total} bytes of values",
                                     offset=base, field=field)
        data = _decompress(code, values[8 : 8 + size], total, base=base + 8, field=field)
        return _slice(data, offsets, base, field)
    if code == BLOCK_DICTIONARY:
        return _binary_dictionary(sec, n, fixed)
    if code == FSST:
        return _binary_fsst(sec, n, fixed)
    raise _unsupported(code, base, field)


def _fixed_size(sec: _Section, fixed: int, n: int) -> int:
    if fixed <= 0:
        raise sec.layout("fixed-size binary block in a variable-size field", 2)
    return n * fixed


def _fixed_or_offsets(sec: _Section, width: int, pos: int, end: int, n: int, fixed: int,
                      data: bytes | None) -> tuple[bytes, np.ndarray]:
    """Plain binary payload at ``pos`` (offsets + bytes), or fixed-size values."""
    if width == 0:
        size = fixed
        total = _fixed_size(sec, fixed, n)
        if data is None:
            sec.need(pos, total, end, f"{n} fixed-size values")
            data = bytes(sec.buf[pos : pos + total])
        elif len(data) < total:
            raise sec.layout(f"fixed-size block holds {len(data)} bytes, needs {total}", 0)
        return data[:total], np.arange(n + 1, dtype=np.int64) * size
    if width != 8:
        raise UnsupportedVersionError(f"binary offset width {width}", offset=sec.base + 2,
                                      field=sec.field + "/offset_width")
    offsets = sec.array(pos, end, n + 1, np.dtype("<u8"), f"{n + 1} binary offsets")
    body = bytes(sec.buf[pos + 8 * (n + 1) : end])
    return _slice(body, offsets, sec.base, sec.field)


def _binary_dictionary(sec: _Section, n: int, fixed: int) -> tuple[bytes, np.ndarray]:
    """Binary BlockDictionary: meta{u32 codes_size, u32 lengths_size, u32 unique_count,
    u8 lengths_cascading}; codes; [pad 8]; u32 lengths; concatenated unique values.

    The notes pad the lengths to 8; the stored Rust source (binary/dictionary.rs) does not.
    Both are tried (padded first): the layout whose values end exactly at the end of the
    section wins, then any layout that fits.
    """
    end = len(sec.buf)
    csize, lsize, unique, l_casc = sec.unpack("<IIIB", 2, end, "BlockDictionary metadata")
    pos = 2 + _meta_size(13)
    if unique > n:
        raise sec.layout(f"BlockDictionary of {n} values claims {unique} entries", 10)
    sec.need(pos, csize, end, "BlockDictionary codes")
    codes = _decode_num(sec, pos, pos + csize, n, np.dtype("<u4"), 1)
    if codes.size and int(codes.max()) > unique:
        raise sec.layout(f"dictionary code {int(codes.max())} of {unique} entries", pos)
    candidates: list[tuple[np.ndarray, int]] = []
    first_error: CorruptShardError | None = None
    for lpos in dict.fromkeys((_round8(pos + csize), pos + csize)):
        try:
            if any(sec.buf[pos + csize : lpos]):
                raise sec.layout("non-zero padding after the dictionary codes", pos + csize)
            sec.need(lpos, lsize, end, "BlockDictionary lengths")
            lengths = _part(sec, lpos, lpos + lsize, unique, np.dtype("<u4"), l_casc, 0,
                            "BlockDictionary lengths")
            dpos = lpos + lsize
            total = int(lengths.sum(dtype=np.uint64))
            sec.need(dpos, total, end, "BlockDictionary values")
            candidates.append((lengths, dpos))
            if dpos + total == end:
                candidates = [(lengths, dpos)]
                break
        except (LayoutError, TruncatedError) as exc:
            first_error = first_error or exc
    if not candidates:
        assert first_error is not None
        raise first_error
    lengths, dpos = candidates[0]
    bounds = np.zeros(unique + 1, np.int64)
    np.cumsum(lengths, out=bounds[1:])
    # entry 0 (a null slot) is empty, or ``fixed`` zero bytes
    data = np.concatenate([np.zeros(fixed, np.uint8),
                           np.frombuffer(sec.buf, np.uint8, int(bounds[-1]), dpos)])
    starts = np.concatenate([[0], bounds[:-1] + fixed])
    sizes = np.concatenate([[fixed], np.diff(bounds)])
    return _gather(data, starts, sizes, codes.astype(np.int64), sec)


def _gather(data: np.ndarray, starts: np.ndarray, sizes: np.ndarray, ids: np.ndarray,
            sec: _Section) -> tuple[bytes, np.ndarray]:
    """The entries ``ids`` of a table of byte strings (``data[starts[i]:starts[i] +
    sizes[i]]``), concatenated, and their offsets."""
    out_len = sizes[ids]
    offsets = np.zeros(ids.size + 1, np.int64)
    np.cumsum(out_len, out=offsets[1:])
    total = int(offsets[-1])
    if total > 1 << 31:
        raise LimitExceededError(f"dictionary values expand to {total} bytes",
                                 offset=sec.base, field=sec.field)
    owner = np.repeat(np.arange(ids.size), out_len)
    within = np.arange(total) - offsets[:-1][owner]
    return data[starts[ids][owner] + within].tobytes(), offsets


# FSST, from microsoft/amudai, crate amudai-encodings, src/encodings/binary/fsst.rs
# (FSSTEncoding::encode/decode, FSSTMetadata), binary/offsets.rs (encode_offsets,
# decode_offsets_and_make_sequence), and the `fsst-rs` crate it uses (spiraldb/fsst, src/lib.rs:
# Symbol, ESCAPE_CODE, Compressor::symbol_table/symbol_lengths, Decompressor::decompress_into).
#
# [u16 15][u8 symbols_count, u32 values_size, u8 offsets_cascading, u8 offset_width, 7 pad]
# [symbols_count x u64 symbol (its bytes little-endian)][symbols_count x u8 symbol length]
# [values_size bytes: the FSST codes of all values concatenated, compressed as one string]
# [pad to 8 (newer fsst.rs; older revisions wrote no padding)]
# [offsets: offset_width 0 = fixed-size values (none stored); 8 = (n + 1) u64, raw or nested]
# Code 255 is an escape: the next byte is a literal. Any other code c emits the first
# length[c] bytes of symbol c.

_FSST_ESCAPE = 255


def _fsst_decompress(sec: _Section, symbols: np.ndarray, lengths: np.ndarray, pos: int,
                     size: int) -> bytes:
    """Undo FSST on ``sec.buf[pos:pos + size]`` (vectorised ``decompress_into``)."""
    data = np.frombuffer(sec.buf, np.uint8, size, pos)
    if size == 0:
        return b""
    esc = data == _FSST_ESCAPE
    # Every run of 255 bytes starts on a token boundary (the byte before it is a code or an
    # escaped literal), so inside a run the even-placed bytes are escapes, the odd ones literal
    # 255s, and an odd-length run's last escape takes the byte after the run.
    idx = np.arange(size)
    run_start = np.maximum.accumulate(np.where(esc & ~np.r_[False, esc[:-1]], idx, 0))
    marker = esc & ((idx - run_start) % 2 == 0)
    if marker[-1]:
        raise sec.layout("FSST data ends with an escape code", pos + size - 1)
    literal = np.r_[False, marker[:-1]]
    token = ~marker
    tok_bytes = data[token].astype(np.int64)
    tok_lit = literal[token]
    codes = tok_bytes[~tok_lit]
    if codes.size:
        top = int(codes.max())
        if top >= symbols.size:
            bad = int(np.flatnonzero(token & ~literal & (data >= symbols.size))[0])
            raise sec.layout(f"FSST code {int(data[bad])} of a {symbols.size}-symbol table",
                             pos + bad)
        used = np.unique(codes)
        bad_len = used[(lengths[used] < 1) | (lengths[used] > 8)]
        if bad_len.size:
            c = int(bad_len[0])
            raise sec.layout(f"FSST symbol {c} has length {int(lengths[c])} (1..8)", pos)
    # a table of 256 symbols followed by 256 one-byte "symbols" for the escaped literals
    table = np.zeros((512, 8), np.uint8)
    table[: symbols.size] = symbols.astype("<u8").view(np.uint8).reshape(-1, 8)
    table[256:, 0] = np.arange(256, dtype=np.uint8)
    sizes = np.ones(512, np.int64)
    sizes[: lengths.size] = lengths
    ids = np.where(tok_lit, tok_bytes + 256, tok_bytes)
    out_len = sizes[ids]
    ends = np.cumsum(out_len)
    total = int(ends[-1])
    if total > 1 << 31:
        raise LimitExceededError(f"FSST data decompresses to {total} bytes", offset=sec.base + pos,
                                 field=sec.field)
    owner = np.repeat(np.arange(ids.size), out_len)
    within = np.arange(total) - (ends - out_len)[owner]
    return cast(bytes, table[ids[owner], within].tobytes())


def _binary_fsst(sec: _Section, n: int, fixed: int) -> tuple[bytes, np.ndarray]:
    end = len(sec.buf)
    count, size, cascading, width = sec.unpack("<BIBB", 2, end, "FSST metadata")
    pos = 2 + _meta_size(7)
    sec.need(2, _meta_size(7), end, "FSST metadata")
    symbols = sec.array(pos, end, count, np.dtype("<u8"), "FSST symbol table")
    lengths = sec.array(pos + 8 * count, end, count, np.dtype(np.uint8), "FSST symbol lengths")
    cpos = pos + 9 * count
    sec.need(cpos, size, end, "FSST compressed values")
    data = _fsst_decompress(sec, symbols, lengths, cpos, size)
    vend = cpos + size
    if width == 0:
        total = _fixed_size(sec, fixed, n)
        if len(data) != total:
            raise sec.layout(f"FSST data decompresses to {len(data)} bytes, {n} fixed-size "
                             f"values need {total}", cpos)
        return data, np.arange(n + 1, dtype=np.int64) * fixed
    if width != 8:
        raise UnsupportedVersionError(f"binary offset width {width}", offset=sec.base + 8,
                                      field=sec.field + "/offset_width")
    # The offsets start 8-aligned (current fsst.rs) or right after the codes (older fsst.rs):
    # a layout whose padding is zero and whose offsets fit the data is taken, preferring one
    # whose offsets end at the data's end (and, raw, at the section's end).
    found: list[np.ndarray] = []
    first_error: ShardkitError | None = None
    for opos in dict.fromkeys((_round8(vend), vend)):
        try:
            if any(sec.buf[vend:opos]):
                raise sec.layout("non-zero padding after the FSST values", vend)
            if cascading:
                offsets = _decode_num(sec, opos, end, n + 1, np.dtype("<u8"), 1)
                fits = True
            else:
                offsets = sec.array(opos, end, n + 1, np.dtype("<u8"), "FSST offsets")
                fits = opos + 8 * (n + 1) == end
            if (int(offsets[0]) != 0 or int(offsets[-1]) > len(data)
                    or bool(np.any(np.diff(offsets.astype(np.int64)) < 0))):
                raise sec.layout("FSST offsets are not increasing from 0 within the data", opos)
            if fits and int(offsets[-1]) == len(data):
                return _slice(data, offsets, sec.base, sec.field)
            found.append(offsets)
        except ShardkitError as exc:  # e.g. the other layout reads padding as a code 0
            first_error = first_error or exc
    if not found:
        assert first_error is not None
        raise first_error
    return _slice(data, found[0], sec.base, sec.field)


def _slice(data: bytes, offsets: np.ndarray, base: int, field: str
           ) -> tuple[bytes, np.ndarray]:
    """``data`` and its offsets as int64, once they are checked to increase from 0 within it
    (the offsets of a block must be u64 values below 2^63 to be increasing as int64)."""
    offs = offsets.astype(np.int64, copy=False)
    if offs.size and (int(offs[0]) != 0 or int(offs[-1]) > len(data)
                      or bool(np.any(offs[1:] < offs[:-1]))):
        raise LayoutError("binary offsets are not increasing from 0 within the data",
                          offset=base, field=field + "/offsets")
    return data, offs
