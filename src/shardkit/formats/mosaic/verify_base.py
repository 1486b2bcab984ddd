"""What both parts of MOSAIC verification use (:mod:`.verify`: the tile walk;
:mod:`.verify_index`: the index checks): the file read in blocks, a part's capped problem
list, element heads, CRC-32 checks and a window's Objects."""

from __future__ import annotations

from array import array
from typing import Any

from ..._lru import ByteLRU
from ...errors import Problem, ShardkitError
from . import model as m
from .model import Element, element_at

#: Blocks the file is read in (three kept).
BLOCK = 4 << 20
#: Problems reported per tile walk or per index before the rest are summed up in one.
MAX_PROBLEMS_PER_PART = 50


class _Blocks:
    """Reads a source in aligned blocks, keeping the last few (sequential passes)."""

    def __init__(self, source: Any, block: int = BLOCK, keep: int = 3) -> None:
        self.source = source
        self.size = source.size
        self.block = block
        self.keep = keep
        self._cache: ByteLRU[int, bytes] = ByteLRU(None, max_items=keep)

    def _get(self, i: int) -> bytes:
        data = self._cache.get(i)
        if data is None:
            lo = i * self.block
            data = self._cache.put(i, self.source.read_range(lo, min(self.size, lo + self.block)))
        return data

    def read(self, start: int, end: int) -> bytes:
        end = min(end, self.size)
        if start >= end:
            return b""
        if end - start > self.block:
            return self.source.read_range(start, end)  # type: ignore[no-any-return]  # bytes
        first, last = start // self.block, (end - 1) // self.block
        if first == last:
            base = first * self.block
            return self._get(first)[start - base:end - base]
        a, b = self._get(first), self._get(last)
        return a[start - first * self.block:] + b[:end - last * self.block]


class _Part:
    """Problems of one part of the file, capped at :data:`MAX_PROBLEMS_PER_PART`."""

    def __init__(self, out: list[Problem], what: str) -> None:
        self.out = out
        self.what = what
        self.n = 0

    def add(self, check: str, message: str, offset: int | None = None,
            field: str | None = None) -> None:
        self.n += 1
        if self.n <= MAX_PROBLEMS_PER_PART:
            self.out.append(Problem(check, message, offset, field))

    def error(self, check: str, exc: ShardkitError, field: str | None = None) -> None:
        self.add(check, exc.message, exc.offset, exc.field or field)

    def close(self) -> None:
        if self.n > MAX_PROBLEMS_PER_PART:
            self.out.append(Problem("more", f"{self.n - MAX_PROBLEMS_PER_PART} more problems "
                                    f"in {self.what} not listed"))


def _head(src: _Blocks, pos: int, limit: int, field: str) -> Element:
    return element_at(src.read(pos, min(limit, pos + 12)), 0, pos, limit, field)


def _crc_of(src: _Blocks, el: Element, part: Any, field: str) -> int:
    """Check the CRC-32 element that opens master ``el``; return where the rest starts."""
    if el.size == 0:
        part.add("crc32", f"{el.name} is empty: no CRC-32 element", el.start, field)
        return el.data_start
    try:
        first = _head(src, el.data_start, el.end, field + "/CRC-32")
    except ShardkitError as exc:
        part.error("ebml", exc, field)
        return el.end
    if first.id != m.CRC32:
        part.add("crc32", f"{el.name} does not start with a CRC-32 element (found "
                 f"{first.name})", first.start, field)
        return el.data_start
    if first.size != 4:
        part.add("crc32", f"CRC-32 element of {first.size} bytes (4 expected)", first.start,
                 field + "/CRC-32")
        return first.end
    stored = int.from_bytes(src.read(first.data_start, first.end), "little")
    crc = 0
    pos = first.end
    while pos < el.end:
        nxt = min(el.end, pos + BLOCK)
        crc = m.crc32_le(src.read(pos, nxt), crc)
        pos = nxt
    if crc != stored:
        part.add("crc32", f"{el.name} CRC-32 mismatch: stored {stored:08x}, computed "
                 f"{crc:08x} over bytes [{first.end}, {el.end})", first.start,
                 field + "/CRC-32")
    return first.end


class _Window:
    """Objects of a run of tiles: their offsets, and the first 8 bytes of their hashes."""

    def __init__(self, kinds: list[str]) -> None:
        self.objects = array("Q")
        self.prints = {k: array("Q") for k in kinds}

    def extend(self, other: _Window, a: int, b: int) -> None:
        self.objects.extend(other.objects[a:b])
        for k, fp in self.prints.items():
            fp.extend(other.prints[k][a:b])
