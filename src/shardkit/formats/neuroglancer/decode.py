"""Decoding helpers: capped gunzip, minishard indices, compressed Morton codes, range coalescing."""

from __future__ import annotations

import functools
import types
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

from ..._lazy import lazy_module
from ...errors import CorruptShardError, InvalidKeyError, LayoutError, LimitExceededError
from ...sources import ByteSource
from .spec import _MASK64, _MAX_GAP, _MAX_REQUEST, DEFAULT_MAX_DECODED_SIZE

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

# -- decoding helpers -------------------------------------------------------------------------


_INFLATE_STEP = 1 << 20  # gunzip_capped inflates this much at a time

_inflate: types.ModuleType
try:  # zlib-ng: inflate faster than zlib (the same API, streams, checks and messages)
    from zlib_ng import zlib_ng as _inflate
except ImportError:  # pragma: no cover - zlib-ng is a dependency; zlib stays the fallback
    _inflate = zlib
_INFLATE_ERRORS: tuple[type[BaseException], ...] = (zlib.error, _inflate.error)


def gunzip_capped(data: bytes | bytearray | memoryview, limit: int = DEFAULT_MAX_DECODED_SIZE,
                  *, what: str = "data", offset: int | None = None,
                  field: str | None = None) -> bytes:
    """Decompress a gzip stream (all its members), refusing output beyond ``limit`` bytes.

    Output is inflated 1 MiB at a time and the stream is refused as soon as it passes
    ``limit``, so a decompression bomb costs at most about ``limit`` bytes of memory.

    Raises:
        CorruptShardError: Not a gzip stream, or a broken one.
        LimitExceededError: It decompresses to more than ``limit`` bytes.
    """
    out: list[bytes] = []
    total = 0
    rest: bytes | bytearray | memoryview = data
    try:
        while True:
            d = _inflate.decompressobj(wbits=31)
            buf = rest
            while True:
                want = min(_INFLATE_STEP, limit + 1 - total)
                piece = d.decompress(buf, want)
                if piece:
                    out.append(piece)
                    total += len(piece)
                if total > limit:
                    out.clear()
                    raise LimitExceededError(f"{what}: gzip output exceeds the {limit}-byte "
                                             "cap", offset=offset, field=field)
                if d.eof:
                    break
                buf = d.unconsumed_tail
                if not buf and len(piece) < want:
                    raise CorruptShardError(f"{what}: truncated gzip stream", offset=offset,
                                            field=field)
            rest = d.unused_data
            if not rest:
                break
    except _INFLATE_ERRORS as exc:
        raise CorruptShardError(f"{what}: bad gzip stream: {exc}", offset=offset,
                                field=field) from exc
    if len(out) == 1:
        return out[0]  # the usual case: no copy
    return b"".join(out)


def gunzip_one(data: bytes | bytearray | memoryview, limit: int) -> bytes | None:
    """The usual case of :func:`gunzip_capped`, with no error built: one gzip member that
    inflates whole in one step, within ``limit`` bytes, and nothing after it; ``None`` for
    anything else (a second member, a larger output, a damaged stream), which
    :func:`gunzip_capped` then decides (the same output, or its error)."""
    d = _inflate.decompressobj(wbits=31)
    try:
        out: bytes = d.decompress(data, min(_INFLATE_STEP, limit + 1))
    except _INFLATE_ERRORS:
        return None
    if d.eof and not d.unused_data and len(out) <= limit:
        return out
    return None


@dataclass(frozen=True)
class MinishardIndex:
    """A decoded minishard index: chunk ids and data ranges, offsets relative to the end of
    the shard index (add ``base`` for absolute offsets).

    Attributes:
        ids: Chunk ids (uint64), in stored order.
        starts: Relative data start of each chunk (uint64).
        ends: Relative data end of each chunk (uint64).
        base: Absolute offset the relative offsets count from (the shard index size).
    """

    ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    base: int

    def __len__(self) -> int:
        return int(self.ids.size)

    @property
    def nbytes(self) -> int:
        """Estimated memory: the three arrays plus the lookup dict (~200 bytes a chunk)."""
        return 3 * 8 * len(self) + 200 * len(self) + 256

    @cached_property
    def lookup(self) -> dict[int, tuple[int, int]]:
        """Chunk id -> absolute ``(start, end)`` (the first entry wins for duplicate ids)."""
        base = self.base
        ids = self.ids.tolist()
        starts = self.starts.tolist()
        ends = self.ends.tolist()
        out: dict[int, tuple[int, int]] = {}
        for i in range(len(ids) - 1, -1, -1):
            out[ids[i]] = (base + starts[i], base + ends[i])
        return out


@functools.cache
def empty_index() -> MinishardIndex:
    """The index of an empty minishard (made on first use, so that importing this module does
    not import numpy)."""
    return MinishardIndex(np.zeros(0, np.uint64), np.zeros(0, np.uint64),
                          np.zeros(0, np.uint64), 0)


def decode_minishard_index(raw: bytes, base: int, *, offset: int | None = None,
                           field: str | None = None) -> MinishardIndex:
    """Decode a raw (already gunzipped) minishard index: ``3 x n`` little-endian u64 arrays.

    Chunk ids and data offsets are delta-coded; this undoes both with cumulative sums
    (uint64 arithmetic) and refuses sums that wrap around.

    Raises:
        LayoutError: The size is not a multiple of 24, or a running sum overflows 64 bits.
    """
    if len(raw) % 24:
        raise LayoutError(f"minishard index of {len(raw)} bytes is not a multiple of 24 "
                          "(3 x u64 per chunk)", offset=offset, field=field)
    n = len(raw) // 24
    if n == 0:
        empty = empty_index()
        return MinishardIndex(empty.ids, empty.starts, empty.ends, base)
    native = _native()
    if native is None or not 0 <= base <= _MASK64:
        return _decode_minishard_numpy(raw, n, base, offset, field)
    ids, starts, ends = (np.empty(n, np.uint64) for _ in range(3))
    code = native.minishard_index(raw, base, ids, starts, ends)
    if code == 1:
        raise LayoutError("minishard index: a running sum of chunk ids or offsets overflows "
                          "64 bits", offset=offset, field=field)
    if code == 2:
        raise LayoutError("minishard index: a data offset overflows 64 bits", offset=offset,
                          field=field)
    return MinishardIndex(ids, starts, ends, base)


@functools.cache
def _native() -> Any:
    """The C accelerator of :func:`decode_minishard_index` (``_native.c``; ``None`` when not
    built or ``SHARDKIT_NO_NATIVE`` is set)."""
    from ..._accel import accelerator

    return accelerator("shardkit.formats.neuroglancer._native")


def _decode_minishard_numpy(raw: bytes, n: int, base: int, offset: int | None,
                            field: str | None) -> MinishardIndex:
    """:func:`decode_minishard_index` in numpy (the twin of the C path)."""
    arr = np.frombuffer(raw, dtype="<u8").reshape(3, n).astype(np.uint64, copy=False)
    id_deltas, ofs_deltas, sizes = arr[0], arr[1], arr[2]
    with np.errstate(over="ignore"):
        ids = np.cumsum(id_deltas, dtype=np.uint64)
        inc = ofs_deltas + sizes
        ends = np.cumsum(inc, dtype=np.uint64)
    if n > 1 and (bool(np.any(ids[1:] < ids[:-1])) or bool(np.any(ends[1:] < ends[:-1]))):
        raise LayoutError("minishard index: a running sum of chunk ids or offsets overflows "
                          "64 bits", offset=offset, field=field)
    if bool(np.any(inc < sizes)) or int(ends[-1]) + base > _MASK64:
        raise LayoutError("minishard index: a data offset overflows 64 bits", offset=offset,
                          field=field)
    return MinishardIndex(ids, ends - sizes, ends, base)


def compressed_morton_code(position: Sequence[int], grid_shape: Sequence[int]) -> int:
    """Neuroglancer's compressed Morton code of a chunk grid position.

    Bits of x, y and z are interleaved (x lowest), each coordinate contributing only the
    ``ceil(log2(grid_shape[d]))`` bits it needs.

    Raises:
        ValueError: The position is outside the grid.
    """
    for p, g in zip(position, grid_shape, strict=True):
        if not 0 <= p < g:
            raise ValueError(f"grid position {tuple(position)} outside the grid "
                             f"{tuple(grid_shape)}")
    bits = [max(0, int(g) - 1).bit_length() for g in grid_shape]
    code = j = 0
    for i in range(max(bits, default=0)):
        for d in range(len(bits)):
            if i < bits[d]:
                code |= ((int(position[d]) >> i) & 1) << j
                j += 1
    return code


def morton_decode(code: int, grid_shape: Sequence[int]) -> tuple[int, ...]:
    """The grid position of a compressed Morton code (inverse of :func:`compressed_morton_code`).

    Raises:
        InvalidKeyError: ``code`` is not a uint64, has bits beyond the grid's, or decodes
            outside the grid (also a ``ValueError``).
    """
    if isinstance(code, bool) or not isinstance(code, (int, np.integer)) \
            or not 0 <= int(code) <= 0xFFFF_FFFF_FFFF_FFFF:
        raise InvalidKeyError(f"chunk id {code!r} is not a uint64")
    code = int(code)
    bits = [max(0, int(g) - 1).bit_length() for g in grid_shape]
    pos = [0] * len(bits)
    j = 0
    for i in range(max(bits, default=0)):
        for d in range(len(bits)):
            if i < bits[d]:
                pos[d] |= ((code >> j) & 1) << i
                j += 1
    if code >> j or any(p >= g for p, g in zip(pos, grid_shape, strict=True)):
        raise InvalidKeyError(f"chunk id {code} is not a position of the grid "
                              f"{tuple(grid_shape)}", field=f"/chunks/{code}")
    return tuple(pos)


def morton_schedule(grid_shape: Sequence[int]) -> list[tuple[int, int]]:
    """For each bit of a compressed Morton code, lowest first, the ``(dimension, bit)`` of
    the grid position it holds (its length is the number of bits a chunk id may have)."""
    bits = [max(0, int(g) - 1).bit_length() for g in grid_shape]
    return [(d, i) for i in range(max(bits, default=0)) for d, b in enumerate(bits) if i < b]


def _beyond(codes: np.ndarray, nbits: int) -> np.ndarray:
    """Which codes have a bit set at or above bit ``nbits``."""
    if nbits >= 64:
        return np.zeros(codes.shape, dtype=bool)
    return cast("np.ndarray", (codes >> np.uint64(nbits)) != 0)


def morton_decode_many(codes: np.ndarray | Sequence[int],
                       grid_shape: Sequence[int]) -> np.ndarray:
    """Grid positions ``[n, len(grid_shape)]`` (int64) of compressed Morton codes, vectorised.

    Positions past the grid's edge (the code of a grid of 3 chunks along x has room for 4)
    are returned as they decode: callers that list the codes of a region filter them.

    Raises:
        InvalidKeyError: A code has bits beyond the grid's (it would decode to the position
            of another code); the first such code is named.
    """
    codes = np.asarray(codes, dtype=np.uint64).reshape(-1)
    schedule = morton_schedule(grid_shape)
    extra = np.flatnonzero(_beyond(codes, len(schedule)))
    if len(extra):
        bad = int(codes[extra[0]])
        raise InvalidKeyError(f"chunk id {bad} has bits beyond the {len(schedule)}-bit chunk "
                              f"ids of the grid {tuple(int(g) for g in grid_shape)}"
                              + (f" ({len(extra)} such ids)" if len(extra) > 1 else ""),
                              field=f"/chunks/{bad}")
    out = np.zeros((len(codes), len(grid_shape)), dtype=np.int64)
    for j, (d, i) in enumerate(schedule):
        out[:, d] |= ((codes >> np.uint64(j)) & np.uint64(1)).astype(np.int64) << i
    return out


def morton_invalid(codes: np.ndarray, grid_shape: Sequence[int]) -> np.ndarray:
    """Which codes are not chunk ids of the grid: bits beyond its own, or a position past
    its edge (a boolean mask)."""
    codes = np.asarray(codes, dtype=np.uint64).reshape(-1)
    bad = _beyond(codes, len(morton_schedule(grid_shape)))
    ok = np.flatnonzero(~bad)
    if len(ok):
        pos = morton_decode_many(codes[ok], grid_shape)
        bad[ok] = np.any(pos >= np.asarray(grid_shape, dtype=np.int64), axis=1)
    return bad


def _coalesce(ranges: Sequence[tuple[int, int]], max_gap: int = _MAX_GAP,
              max_size: int = _MAX_REQUEST) -> list[tuple[int, int, list[int]]]:
    """Merge byte ranges into requests: ``(start, end, [indices of the ranges it covers])``."""
    order = sorted(range(len(ranges)), key=lambda i: ranges[i])
    out: list[tuple[int, int, list[int]]] = []
    for i in order:
        start, end = ranges[i]
        if out:
            s, e, members = out[-1]
            if start <= e + max_gap and max(e, end) - s <= max_size:
                out[-1] = (s, max(e, end), [*members, i])
                continue
        out.append((start, end, [i]))
    return out


def _read_ranges(source: ByteSource, ranges: Sequence[tuple[int, int]], *,
                 max_gap: int = _MAX_GAP, max_size: int = _MAX_REQUEST) -> list[bytes]:
    """Read many ranges; through ranged requests, neighbours are fetched together.

    A memory-mapped source is sliced directly. A source with a batched ``read_ranges`` gets
    the coalesced requests in one call (fetched concurrently where it can); otherwise each
    coalesced request is one ``read_range``.
    """
    if getattr(source, "view", None) is not None:
        return [source.read_range(s, e) for s, e in ranges]
    groups = _coalesce(ranges, max_gap, max_size)
    batched = getattr(source, "read_ranges", None)
    if batched is not None and len(groups) > 1:
        blocks = list(batched([(s, e) for s, e, _ in groups]))
    else:
        blocks = [source.read_range(s, e) for s, e, _ in groups]
    out: list[bytes] = [b""] * len(ranges)
    for (start, _end, members), block in zip(groups, blocks, strict=True):
        for i in members:
            s, e = ranges[i]
            out[i] = bytes(block[s - start : e - start])
    return out
