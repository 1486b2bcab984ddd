"""How the MDB reader reads bytes: few, large ranges from a remote source; a mapping locally.

A local file (or in-memory bytes) is used through its zero-copy view, as before. Through ranged
requests (any source without ``view``), the reader asks for the ranges it needs in batches
(the source's ``read_ranges`` when it has one, one ``read_range`` per range otherwise):

* opening: the 48-byte header and the 200-byte footer, in one batch;
* a lookup through a lookup table: the table, once, as one range (12 bytes a file or xorb,
  16 a chunk), then the records it points at;
* a walk of the record sections (``files``, ``xorbs``, ``verify``...): the whole file once, in
  blocks of :data:`BLOCK_SIZE`, skipping the bytes already fetched (header, footer).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ...errors import TruncatedError
from ...sources import ByteSource

__all__ = ["BLOCK_SIZE", "Prefetched", "WholeFile", "is_local", "read_ranges"]

#: Size of the sequential reads that bring a remote shard in whole.
BLOCK_SIZE = 16 << 20


def is_local(source: ByteSource) -> bool:
    """Whether ``source`` has a zero-copy view (a mapped file, bytes in memory)."""
    return getattr(source, "view", None) is not None


def read_ranges(source: ByteSource, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
    """Bytes of each ``[start, end)``: one batched call when the source has ``read_ranges``
    (it may coalesce and fetch concurrently), else one ``read_range`` per range."""
    batch = getattr(source, "read_ranges", None)
    if batch is not None and len(ranges) > 1:
        return [bytes(b) for b in batch(list(ranges))]
    return [source.read_range(s, e) for s, e in ranges]


class Prefetched:
    """A :class:`ByteSource` over ``inner`` that answers from ranges already fetched.

    Reads inside a held range cost nothing; any other read goes to ``inner``. The generated
    parser reads the header and footer through it after the reader fetched both in one batch.
    """

    def __init__(self, inner: ByteSource) -> None:
        self.inner = inner
        self.name = inner.name
        self._spans: list[tuple[int, bytes]] = []

    @property
    def size(self) -> int:
        return self.inner.size

    @property
    def spans(self) -> list[tuple[int, bytes]]:
        """The ranges held, as (start, bytes)."""
        return list(self._spans)

    def fetch(self, ranges: Sequence[tuple[int, int]]) -> None:
        """Fetch ``ranges`` (one batch) and hold them."""
        for (start, _), data in zip(ranges, read_ranges(self.inner, ranges), strict=True):
            self._spans.append((start, data))

    def read_range(self, start: int, end: int) -> bytes:
        for s, data in self._spans:
            if s <= start and end <= s + len(data):
                return data[start - s : end - s]
        return self.inner.read_range(start, end)

    def close(self) -> None:
        pass


class WholeFile:
    """The whole remote file in memory, fetched once on first need (thread-safe)."""

    def __init__(self, source: Prefetched) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._data: memoryview | None = None

    @property
    def loaded(self) -> bool:
        return self._data is not None

    def get(self) -> memoryview:
        data = self._data
        if data is not None:
            return data
        with self._lock:
            if self._data is None:
                self._data = self._load()
            return self._data

    def _load(self) -> memoryview:
        src = self._source
        size = src.size
        buf = bytearray(size)
        have = sorted((s, s + len(d), d) for s, d in src.spans)
        for s, e, d in have:
            buf[s:e] = d
        gaps: list[tuple[int, int]] = []
        pos = 0
        for s, e, _ in [*have, (size, size, b"")]:
            while pos < s:
                end = min(s, pos + BLOCK_SIZE)
                gaps.append((pos, end))
                pos = end
            pos = max(pos, e)
        for (s, e), data in zip(gaps, read_ranges(src.inner, gaps), strict=True):
            if len(data) != e - s:
                raise TruncatedError(f"short read from {src.name}: got {len(data)} of {e - s} "
                                     "bytes", needed=e - s, available=len(data), offset=s)
            buf[s:e] = data
        return memoryview(buf).toreadonly()

