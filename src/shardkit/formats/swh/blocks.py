"""The SWH reader's block and file helpers: a local file read with ``pread`` and a block
reader for sequential passes (see :mod:`shardkit.formats.swh.reader`)."""

from __future__ import annotations

import os
from typing import Any

from ..._lru import ByteLRU
from ...sources import ByteSource, CountingSource, FileSource, readinto
from .model import VERIFY_BLOCK


def _is_local(source: Any) -> bool:
    """A local file, perhaps behind counting wrappers (read with pread, into buffers)."""
    while isinstance(source, CountingSource):
        source = source.inner
    return isinstance(source, FileSource)


class _PreadSource:
    """A local file read with ``os.pread``: scans copy bounded windows instead of touching the
    mapping, so the pages they read never stay in the process's resident memory."""

    def __init__(self, source: ByteSource, fd: int) -> None:
        self.source = source
        self.name = source.name
        self.size = source.size
        self._fd = fd

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` (the source's own errors outside the file)."""
        if 0 <= start <= end <= self.size:
            data = os.pread(self._fd, end - start, start)
            if len(data) == end - start:
                return data
        return self.source.read_range(start, end)

    def readinto(self, start: int, buffer: Any) -> int:
        """Fill ``buffer`` from ``start`` with pread (the file's own ``readinto``)."""
        return readinto(self.source, start, buffer)

    def close(self) -> None:
        """Nothing to release (the source owns the file)."""


class _Blocks:
    """Reads a source in large aligned blocks, keeping the last few (for sequential passes).

    ``verify`` over a remote source reads the index and the objects in order through it, so
    every byte is fetched about once, in ``ceil(size / block)`` requests and a few more.
    """

    def __init__(self, source: ByteSource, block: int = VERIFY_BLOCK, keep: int = 3,
                 limit: int | None = None, into: bool = False) -> None:
        self.source = source
        self.name = source.name
        self.block = block
        self.keep = keep
        # blocks end at ``limit`` (the objects' end); ranges past it are read as asked
        self.limit = source.size if limit is None else min(limit, source.size)
        #: With ``into`` (a local file: ``source.readinto``), blocks are read into ``keep`` + 1
        #: reused buffers (no new memory per block) and cached as views of them; a block
        #: leaving the cache gives its buffer back.
        self._spare: list[bytearray] | None = [] if into else None
        spare = self._spare
        self._cache: ByteLRU[int, Any] = ByteLRU(
            None, max_items=keep,
            on_evict=None if spare is None else lambda _, old: spare.append(old.obj))

    def _fill(self, lo: int, hi: int) -> Any:
        assert self._spare is not None
        buf = self._spare.pop() if self._spare else bytearray(self.block)
        got = self.source.readinto(lo, memoryview(buf)[: hi - lo])  # type: ignore[attr-defined]  # local sources only (_is_local)
        if got < hi - lo:  # the file ends early: the source's own error
            self.source.read_range(lo, hi)
        return memoryview(buf)[:got]

    def block_at(self, pos: int) -> tuple[int, Any]:
        """``(start, bytes)`` of the cached block holding ``pos`` (a view, valid until the
        block leaves the cache: read it before the next call), for ``0 <= pos < limit``."""
        i = pos // self.block
        return i * self.block, self._get(i)

    @property
    def size(self) -> int:
        """Size of the underlying source."""
        return self.source.size

    def _get(self, i: int) -> bytes:
        data: bytes | None = self._cache.get(i)
        if data is None:
            lo = i * self.block
            hi = min(self.limit, lo + self.block)
            data = self._cache.put(i, self.source.read_range(lo, hi) if self._spare is None
                                   else self._fill(lo, hi), hi - lo)
        return data

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)``, from cached blocks where possible."""
        if start >= end or end > self.limit or start < 0:
            return self.source.read_range(start, end)  # past the blocks, empty, or an error
        first, last = start // self.block, (end - 1) // self.block
        if first == last:
            base = first * self.block
            return bytes(self._get(first)[start - base : end - base])
        parts = []
        for i in range(first, last + 1):
            base = i * self.block
            parts.append(self._get(i)[max(start, base) - base : min(end, base + self.block)
                                      - base])
        return b"".join(parts)

    def close(self) -> None:
        """Forget the cached blocks (the source stays open)."""
        self._cache.clear()
        if self._spare is not None:
            self._spare.clear()
