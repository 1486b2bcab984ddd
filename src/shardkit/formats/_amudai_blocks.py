"""Amudai encoded blocks, presence sections, codecs and AnyValues: pure decoding helpers.

Everything here works on bytes already read and bounds-checked by the caller's ranges; every
size read from those bytes is checked against what remains before it is used, decompression
is capped at the size the block map declares, and recursion (AnyValue) is depth-limited. Errors
are :class:`~shardkit.errors.ShardkitError` subclasses carrying the absolute ``offset`` of the
block (the caller passes ``base``) and a ``field`` path. Layouts: FORMAT_NOTES.md section 4.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from ..errors import (
    ChecksumError,
    LayoutError,
    LimitExceededError,
    TruncatedError,
    UnsupportedVersionError,
)
from ..hashing.amudai import checksum

__all__ = [
    "ENCODING_NAMES",
    "BlockParts",
    "any_value_to_python",
    "decode_binary_values",
    "decode_numeric_values",
    "decode_presence",
    "split_block",
    "ticks_to_datetime",
]

PLAIN, SINGLE_VALUE, ZSTD, LZ4 = 1, 7, 16, 17
ENCODING_NAMES = {
    1: "Plain", 2: "FLBitPack", 3: "FOR", 4: "FFOR", 5: "Delta", 6: "RunLength",
    7: "SingleValue", 8: "TruncateU8", 9: "TruncateU16", 10: "TruncateU32", 11: "TruncateU64",
    12: "ALP", 13: "ALPRD", 14: "BlockDictionary", 15: "FSST", 16: "Zstd", 17: "LZ4",
    18: "ZigZag", 19: "Sparse",
}
TICKS_PER_SECOND = 10_000_000
_DT_EPOCH = datetime(1, 1, 1)
_MAX_TICKS = (datetime(9999, 12, 31, 23, 59, 59, 999999) - _DT_EPOCH) // timedelta(
    microseconds=1) * 10 + 9
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
    kind = section[0]
    if kind == 1:
        return np.zeros(n, bool)
    if kind == 2:
        if len(section) - 1 != n:
            raise LayoutError(f"presence bytes: {len(section) - 1} for {n} values", offset=base,
                              field=field)
        return np.frombuffer(section, np.uint8, n, 1) != 0
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


def _decompress(code: int, data: memoryview, expected: int, *, base: int, field: str) -> bytes:
    """Undo LZ4 (u32 size + raw block) or Zstd (one frame); the output must be ``expected``."""
    name = ENCODING_NAMES[code]
    try:
        if code == LZ4:
            import lz4.block

            if len(data) < 4:
                raise TruncatedError("LZ4 data without its size", offset=base, field=field)
            (size,) = _U32.unpack_from(data, 0)
            if size != expected:
                raise LayoutError(f"LZ4 block claims {size} bytes, the block holds {expected}",
                                  offset=base, field=field)
            out = lz4.block.decompress(bytes(data[4:]), uncompressed_size=size)
        else:
            import zstandard

            out = zstandard.ZstdDecompressor().decompress(bytes(data), max_output_size=expected)
    except ImportError as exc:
        raise UnsupportedVersionError(
            f"{name} blocks need the Python package {exc.name!r} (pip install {exc.name})",
            offset=base, field=field) from exc
    except (LayoutError, TruncatedError):
        raise
    except Exception as exc:  # any codec failure: corrupt data
        raise LayoutError(f"{name} data does not decompress: {exc}", offset=base,
                          field=field) from exc
    if len(out) != expected:
        raise LayoutError(f"{name} data decompresses to {len(out)} bytes, expected {expected}",
                          offset=base, field=field)
    return out


def _unsupported(code: int, base: int, field: str) -> UnsupportedVersionError:
    name = ENCODING_NAMES.get(code, "unknown")
    return UnsupportedVersionError(
        f"block encoding {code} ({name}) is not supported (Plain, SingleValue, LZ4 and Zstd "
        "are)", offset=base, field=field + "/encoding")


def decode_numeric_values(values: memoryview, n: int, dtype: np.dtype, *, base: int,
                          field: str) -> np.ndarray:
    """``n`` values of ``dtype`` from a numeric values section (4.4)."""
    (code,) = struct.unpack_from("<H", values, 0)
    width = dtype.itemsize
    need = n * width
    if code == PLAIN:
        if len(values) - 2 < need:
            raise TruncatedError(f"Plain block holds {len(values) - 2} bytes, {n} values need "
                                 f"{need}", needed=need, available=len(values) - 2,
                                 offset=base, field=field)
        return np.frombuffer(values, dtype, n, 2)
    if code == SINGLE_VALUE:
        if len(values) - 2 < width:
            raise TruncatedError("SingleValue block without its value", offset=base, field=field)
        return np.full(n, np.frombuffer(values, dtype, 1, 2)[0], dtype)
    if code in (LZ4, ZSTD):
        if len(values) < 8:
            raise TruncatedError(f"{ENCODING_NAMES[code]} block without its header",
                                 offset=base, field=field)
        raw = _decompress(code, values[8:], need, base=base + 8, field=field)
        return np.frombuffer(raw, dtype, n)
    raise _unsupported(code, base, field)


def decode_binary_values(values: memoryview, n: int, fixed: int, *, base: int,
                         field: str) -> list[bytes]:
    """``n`` byte strings from a binary values section (4.4); ``fixed`` > 0: fixed-size values."""
    (code,) = struct.unpack_from("<H", values, 0)
    if code == SINGLE_VALUE:
        return [bytes(values[2:])] * n
    if code == PLAIN:
        if len(values) < 3:
            raise TruncatedError("Plain binary block without its offset width", offset=base,
                                 field=field)
        width = values[2]
        body = values[3:]
        if width == 0:
            size = fixed
            if size <= 0:
                raise LayoutError("fixed-size Plain block in a variable-size field",
                                  offset=base + 2, field=field + "/offset_width")
            if len(body) < n * size:
                raise TruncatedError(f"fixed-size block holds {len(body)} bytes, needs "
                                     f"{n * size}", offset=base, field=field)
            data = bytes(body[: n * size])
            return [data[i * size : (i + 1) * size] for i in range(n)]
        if width != 8:
            raise UnsupportedVersionError(f"binary offset width {width}", offset=base + 2,
                                          field=field + "/offset_width")
        if len(body) < 8 * (n + 1):
            raise TruncatedError(f"binary block holds {len(body)} bytes, its {n + 1} offsets "
                                 f"need {8 * (n + 1)}", offset=base, field=field)
        offsets = np.frombuffer(body, "<u8", n + 1)
        data = body[8 * (n + 1) :]
        return _slice(bytes(data), offsets, base, field)
    if code in (LZ4, ZSTD):
        if len(values) < 8:
            raise TruncatedError("compressed binary block without its header", offset=base,
                                 field=field)
        size, width, cascading = struct.unpack_from("<IBB", values, 2)
        if cascading or width != 8:
            raise UnsupportedVersionError(
                f"compressed binary block with offset width {width} and offsets cascading "
                f"{cascading}", offset=base + 6, field=field)
        pos = 8 + size
        pos += (-pos) % 8
        if pos + 8 * (n + 1) > len(values) or size > len(values):
            raise TruncatedError("compressed binary block overruns its values section",
                                 offset=base, field=field)
        offsets = np.frombuffer(values, "<u8", n + 1, pos)
        total = int(offsets[-1])
        if total > 1 << 31:
            raise LimitExceededError(f"binary block claims {total} bytes of values",
                                     offset=base, field=field)
        data = _decompress(code, values[8 : 8 + size], total, base=base + 8, field=field)
        return _slice(data, offsets, base, field)
    raise _unsupported(code, base, field)


def _slice(data: bytes, offsets: np.ndarray, base: int, field: str) -> list[bytes]:
    if offsets.size and (int(offsets[0]) != 0 or int(offsets[-1]) > len(data)
                         or bool(np.any(np.diff(offsets.astype(np.int64)) < 0))):
        raise LayoutError("binary offsets are not increasing from 0 within the data",
                          offset=base, field=field + "/offsets")
    bounds = offsets.tolist()
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def ticks_to_datetime(ticks: int, *, base: int | None = None, field: str | None = None
                      ) -> datetime:
    """DateTime ticks (100 ns since 0001-01-01) as a naive UTC ``datetime`` (100 ns truncated)."""
    if not 0 <= ticks <= _MAX_TICKS:
        raise LayoutError(f"DateTime ticks {ticks} are outside 0001-01-01..9999-12-31",
                          offset=base, field=field)
    return _DT_EPOCH + timedelta(microseconds=ticks // 10)


def any_value_to_python(value: Any, max_depth: int = 64, *, field: str = "",
                        offset: int | None = None, _depth: int = 0) -> Any:
    """An ``AnyValue`` message as a Python value.

    null → None, bool, int, float, str, bytes (bytes and decimal), datetime, timedelta, list,
    dict (struct; names as keys), DataRef → ``{"url": ..., "start": ..., "end": ...}``.

    Raises:
        LimitExceededError: Lists/structs nested deeper than ``max_depth``.
    """
    if _depth > max_depth:
        raise LimitExceededError(f"AnyValue nested deeper than {max_depth} levels",
                                 offset=offset, field=field)
    kind = value.WhichOneof("kind")
    if kind is None or kind == "null_value":
        return None
    if kind in ("bool_value", "u64_value", "i64_value", "double_value", "string_value"):
        return getattr(value, kind)
    if kind in ("bytes_value", "decimal_value"):
        return bytes(getattr(value, kind))
    if kind == "datetime_value":
        return ticks_to_datetime(value.datetime_value.ticks, base=offset, field=field)
    if kind == "timespan_value":
        ticks = value.timespan_value.ticks
        if ticks >= 2**63:  # fixed64 on the wire; a negative span wraps
            ticks -= 2**64
        try:
            return timedelta(microseconds=ticks // 10)
        except OverflowError as exc:
            raise LayoutError(f"TimeSpan ticks {ticks} out of range", offset=offset,
                              field=field) from exc
    if kind == "list_value":
        return [any_value_to_python(v, max_depth, field=field, offset=offset, _depth=_depth + 1)
                for v in value.list_value.elements]
    if kind == "struct_value":
        return {f.name: any_value_to_python(f.value, max_depth, field=field, offset=offset,
                                            _depth=_depth + 1)
                for f in value.struct_value.fields}
    if kind == "data_ref":
        ref = value.data_ref
        return {"url": ref.url, "start": ref.range.start, "end": ref.range.end}
    raise UnsupportedVersionError(f"AnyValue kind {kind}", offset=offset, field=field)
