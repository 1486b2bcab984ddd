"""Byte sources: where a shard's bytes come from.

Every reader takes a :class:`ByteSource`, a sized object with one primitive,
``read_range(start, end)`` (end exclusive). Local files are memory-mapped, in-memory buffers are
used as they are, and any fsspec URL (``s3://``, ``gs://``, ``http://``, ``file://``...) is a
:class:`~shardkit.remote.RemoteSource`: ranged requests, coalesced, concurrent, cached and
retried (see :mod:`shardkit.remote`). :class:`CountingSource` wraps any of them to count (and
optionally cache) reads, which makes "opening reads only the header" testable.
:func:`as_stream` adapts a source to the seekable, sized file-like object the generated Kaitai
classes expect.

Reading many ranges at once
---------------------------
A reader that knows several ranges it needs (a footer and a table, the entries of a batch of
keys, the blocks of some rows) should ask for them in one call::

    from shardkit.sources import read_ranges

    header, table = read_ranges(source, [(0, 88), (ofs, ofs + length)])

:func:`read_ranges` returns the bytes of each ``(start, end)`` in order. On a remote source the
ranges are one batch: the blocks they touch that are not cached are joined into runs of
neighbours and fetched concurrently, one request per run. On a memory map or in-memory bytes
it is the same as calling ``read_range`` for each. Any source may implement
``read_ranges(ranges)`` itself; :func:`read_ranges` uses it when present and falls back to a
loop over ``read_range`` otherwise, so readers can adopt it without caring what they read.
Plain ``read_range`` calls work unchanged on every source: on a remote one each call costs at
most one request (none when its blocks are cached), and a reader that moves forward through
the file (a verify pass) is served with growing read-ahead.

What a remote read costs is visible in ``source.stats`` (:class:`~shardkit.remote.RemoteStats`:
requests, bytes, cache hits, the ranges fetched).
"""

from __future__ import annotations

import contextlib
import io
import mmap
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kaitaistruct import KaitaiStream

from ._lru import ByteLRU
from .errors import ShardkitError, TruncatedError
from .remote import DEFAULT_MAX_WHOLE_READ, RemoteSource

__all__ = [
    "RELEASE_BYTES",
    "ByteSource",
    "BytesSource",
    "CountingSource",
    "FileSource",
    "FsspecSource",
    "ReadStats",
    "SourceStream",
    "as_stream",
    "open_source",
    "read_ranges",
    "readinto",
]


@runtime_checkable
class ByteSource(Protocol):
    """A sized, random-access sequence of bytes."""

    name: str

    @property
    def size(self) -> int:
        """Total number of bytes."""
        ...

    def read_range(self, start: int, end: int) -> bytes:
        """Return bytes ``[start, end)``; raise :class:`TruncatedError` past the end."""
        ...

    def close(self) -> None:
        """Release the underlying resources."""
        ...


def _check_range(source: ByteSource, start: int, end: int) -> None:
    if start < 0 or end < start:
        raise ShardkitError(f"invalid byte range [{start}, {end}) of {source.name}")
    if end > source.size:
        raise TruncatedError(
            f"truncated: needs bytes up to {end}, the file has {source.size}",
            needed=end - start,
            available=max(0, source.size - start),
            offset=start,
        )


class BytesSource:
    """Bytes already in memory (``bytes``, ``bytearray``, ``memoryview``; never copied)."""

    def __init__(self, data: bytes | bytearray | memoryview, name: str = "<bytes>") -> None:
        self._data = memoryview(data).cast("B")
        self.name = name
        #: The bytes themselves when given as ``bytes`` (slicing gives ``bytes`` in one step:
        #: the fastest way for hot lookups to copy a value out), else None.
        self.raw: bytes | None = data if type(data) is bytes else None

    @property
    def size(self) -> int:
        """Total number of bytes."""
        return len(self._data)

    def read_range(self, start: int, end: int) -> bytes:
        """Return bytes ``[start, end)``; raise :class:`TruncatedError` past the end."""
        _check_range(self, start, end)
        return bytes(self._data[start:end])

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """Bytes of every ``(start, end)`` in ``ranges``."""
        return [self.read_range(s, e) for s, e in ranges]

    def view(self, start: int, end: int) -> memoryview:
        """Zero-copy view of ``[start, end)``."""
        _check_range(self, start, end)
        return self._data[start:end]

    def close(self) -> None:
        """Nothing to release."""


#: Bytes a :class:`FileSource` serves from its mapping before it drops the mapped pages.
RELEASE_BYTES = 64 << 20
_PAGE = mmap.PAGESIZE
_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


class FileSource:
    """A local file, memory-mapped read-only: nothing is read until a range is asked for.

    Reading a large file from end to end (``verify``, iteration) must not leave the whole file
    resident in the process: every page read through a mapping stays mapped (and counted in
    the process's RSS) until it is unmapped. So the source counts what it serves (each read
    costs its length plus a page; a :meth:`view` its length) and, past
    :data:`RELEASE_BYTES`, tells the kernel the mapped pages are not needed
    (``madvise(MADV_DONTNEED)`` over the mapping). The file's bytes stay in the page cache
    and views stay valid: a read-only shared mapping of a file is simply mapped again on the
    next touch, so memory is bounded by about :data:`RELEASE_BYTES` whatever the file's size.
    Ranges of :data:`RELEASE_BYTES` or more are read with ``os.pread`` and never mapped.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.name = str(path)
        try:
            self._fh = open(self.path, "rb")  # noqa: SIM115 - kept open for the mmap's lifetime
        except OSError as exc:
            raise ShardkitError(f"cannot open {self.name}: {exc.strerror or exc}") from exc
        except ValueError as exc:  # a NUL byte in the path
            raise ShardkitError(f"cannot open {self.name!r}: {exc}") from exc
        self._size = os.fstat(self._fh.fileno()).st_size
        self._mm: mmap.mmap | None = None
        if self._size:
            self._mm = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
        self._view = memoryview(self._mm) if self._mm is not None else memoryview(b"")
        #: The read-only mapping (slicing it gives ``bytes`` in one step), or None when empty.
        self.raw: mmap.mmap | None = self._mm
        #: Bytes served from the mapping since its pages were last dropped.
        self.served = 0
        #: How many times the mapped pages were dropped.
        self.releases = 0

    @property
    def size(self) -> int:
        """Total number of bytes."""
        return self._size

    def read_range(self, start: int, end: int) -> bytes:
        """Return bytes ``[start, end)``; raise :class:`TruncatedError` past the end."""
        if 0 <= start <= end <= self._size:  # fast path for hot lookups
            n = end - start
            if n >= RELEASE_BYTES:
                return self._pread(start, end)
            self.served += n + _PAGE
            if self.served > RELEASE_BYTES:
                self.release()
            return self._view[start:end].tobytes()
        _check_range(self, start, end)
        return b""  # pragma: no cover - _check_range raised

    def _pread(self, start: int, end: int) -> bytes:
        parts = []
        pos = start
        while pos < end:
            got = os.pread(self._fh.fileno(), min(end - pos, 1 << 30), pos)
            if not got:
                raise TruncatedError(f"short read from {self.name} at byte {pos}",
                                     needed=end - pos, available=0, offset=pos)
            parts.append(got)
            pos += len(got)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """Bytes of every ``(start, end)`` in ``ranges``."""
        return [self.read_range(s, e) for s, e in ranges]

    def readinto(self, start: int, buffer: Any) -> int:
        """Fill ``buffer`` (a writable buffer, e.g. a reused ``bytearray``) with the bytes from
        ``start`` with ``pread``: nothing new is allocated and nothing is mapped. Returns the
        bytes read (fewer only at the end of the file)."""
        view = memoryview(buffer).cast("B")
        want = min(len(view), max(0, self._size - start))
        _check_range(self, start, start + want)
        got = 0
        while got < want:
            n = os.preadv(self._fh.fileno(), [view[got:want]], start + got)
            if not n:
                raise TruncatedError(f"short read from {self.name} at byte {start + got}",
                                     needed=want - got, available=0, offset=start + got)
            got += n
        return got

    def view(self, start: int, end: int) -> memoryview:
        """Zero-copy view of ``[start, end)`` of the mapping (counted as served: the caller
        is taken to read it all)."""
        _check_range(self, start, end)
        self.served += end - start
        if self.served > RELEASE_BYTES:
            self.release()
        return self._view[start:end]

    def release(self, start: int | None = None, end: int | None = None) -> None:
        """Drop mapped pages from this process: the whole mapping, or the whole pages inside
        ``[start, end)`` (a streaming scan calls this behind itself). They stay in the page
        cache, and the next read maps them again; views and ``raw`` stay valid."""
        if self._mm is None or _DONTNEED is None or self._mm.closed:
            return
        if start is None and end is None:
            self.served = 0
            self.releases += 1
            self._mm.madvise(_DONTNEED)
            return
        lo = -(-max(start or 0, 0) // _PAGE) * _PAGE
        hi = min(self._size if end is None else end, self._size) // _PAGE * _PAGE
        if hi > lo:
            with contextlib.suppress(OSError, ValueError):
                self._mm.madvise(_DONTNEED, lo, hi - lo)

    def close(self) -> None:
        """Release the underlying resources."""
        self._view.release()
        if self._mm is not None:
            # a caller may still hold a view; then the GC unmaps it later
            with contextlib.suppress(BufferError):
                self._mm.close()
        self._fh.close()


class FsspecSource(RemoteSource):
    """Any fsspec URL, one request per read, nothing cached: a
    :class:`~shardkit.remote.RemoteSource` with ``exact=True``.

    :func:`open_source` gives URLs a block-cached :class:`~shardkit.remote.RemoteSource`
    instead (coalesced, concurrent, cached reads); this one is for callers that want each read
    to be exactly one request. Nothing is asked on construction; answers, a server that
    ignores ``Range`` (``max_whole_read``), retries and errors are the remote source's.
    """

    def __init__(self, url: str, *, max_whole_read: int = DEFAULT_MAX_WHOLE_READ,
                 **storage_options: Any) -> None:
        super().__init__(url, exact=True, max_whole_read=max_whole_read,
                         storage_options=storage_options)


@dataclass
class ReadStats:
    """What a :class:`CountingSource` saw."""

    reads: int = 0
    bytes_read: int = 0
    cache_hits: int = 0
    ranges: list[tuple[int, int]] | None = None


class CountingSource:
    """Wraps a source, counting reads; with ``block_size`` it also caches aligned blocks (LRU).

    ``stats.ranges`` lists every range requested from the inner source, so tests and benchmarks
    can assert what an operation touched.
    """

    def __init__(self, inner: ByteSource, block_size: int = 0, max_blocks: int = 256) -> None:
        self.inner = inner
        self.name = inner.name
        self.block_size = block_size
        self.max_blocks = max_blocks
        self.stats = ReadStats(ranges=[])
        self._blocks: ByteLRU[int, bytes] = ByteLRU(None, max_items=max_blocks)

    @property
    def size(self) -> int:
        """Total number of bytes."""
        return self.inner.size

    def _fetch(self, start: int, end: int) -> bytes:
        self.stats.reads += 1
        self.stats.bytes_read += end - start
        assert self.stats.ranges is not None
        self.stats.ranges.append((start, end))
        return self.inner.read_range(start, end)

    def read_range(self, start: int, end: int) -> bytes:
        """Return bytes ``[start, end)``; raise :class:`TruncatedError` past the end."""
        _check_range(self, start, end)
        if not self.block_size:
            return self._fetch(start, end)
        bs = self.block_size
        out = bytearray()
        for block in range(start // bs, (end + bs - 1) // bs):
            data = self._blocks.get(block)
            if data is None:
                lo = block * bs
                data = self._blocks.put(block, self._fetch(lo, min(lo + bs, self.size)))
            else:
                self.stats.cache_hits += 1
            lo = block * bs
            out += data[max(start - lo, 0) : min(end - lo, len(data))]
        return bytes(out)

    def readinto(self, start: int, buffer: Any) -> int:
        """:func:`readinto` through this source, counted as one read (uncached)."""
        view = memoryview(buffer).cast("B")
        want = min(len(view), max(0, self.size - start))
        _check_range(self, start, start + want)
        self.stats.reads += 1
        self.stats.bytes_read += want
        assert self.stats.ranges is not None
        self.stats.ranges.append((start, start + want))
        return readinto(self.inner, start, view[:want])

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """Bytes of every range; without a cache of its own, passed to the inner source as
        one batch (counted as one read per range)."""
        if self.block_size:
            return [self.read_range(s, e) for s, e in ranges]
        for start, end in ranges:
            _check_range(self, start, end)
        self.stats.reads += len(ranges)
        self.stats.bytes_read += sum(e - s for s, e in ranges)
        assert self.stats.ranges is not None
        self.stats.ranges.extend(ranges)
        return read_ranges(self.inner, ranges)

    def close(self) -> None:
        """Release the underlying resources."""
        self.inner.close()


def readinto(source: ByteSource, start: int, buffer: Any) -> int:
    """Fill ``buffer`` with ``source``'s bytes from ``start``; the bytes read (fewer only at
    the end of the source). Sources with a ``readinto`` of their own (a local file: ``pread``
    into the buffer) copy each byte once; others are read with ``read_range`` and copied."""
    own = getattr(source, "readinto", None)
    if own is not None:
        return int(own(start, buffer))
    view = memoryview(buffer).cast("B")
    end = min(start + len(view), source.size)
    data = source.read_range(start, end) if end > start else b""
    view[: len(data)] = data
    return len(data)


def read_ranges(source: ByteSource, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
    """The bytes of every ``(start, end)`` of ``ranges``, in order, read as one batch.

    Uses ``source.read_ranges`` when the source has it (remote sources: one request per run
    of neighbouring uncached blocks, runs fetched concurrently), else ``read_range`` per range.
    """
    batch = getattr(source, "read_ranges", None)
    if batch is not None:
        return list(batch(ranges))
    return [source.read_range(start, end) for start, end in ranges]


class SourceStream(io.RawIOBase):
    """A seekable, sized, read-only file object over a :class:`ByteSource`."""

    def __init__(self, source: ByteSource) -> None:
        super().__init__()
        self.source = source
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self.source.size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise ValueError("negative seek position")
        self._pos = pos
        return pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        end = min(self._pos + len(view), self.source.size)
        if end <= self._pos:
            return 0
        data = self.source.read_range(self._pos, end)
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)


def as_stream(source: ByteSource, buffer_size: int = 0) -> KaitaiStream:
    """A :class:`KaitaiStream` reading ``source``.

    Args:
        source: Where the bytes come from.
        buffer_size: Read-ahead buffer for remote sources (0: none, every read goes to the
            source, which is right for memory maps and in-memory bytes).
    """
    raw: io.RawIOBase | io.BufferedReader = SourceStream(source)
    if buffer_size:
        raw = io.BufferedReader(raw, buffer_size=buffer_size)
    return KaitaiStream(raw)


def open_source(target: Any, *, io_options: dict[str, Any] | None = None,
                **storage_options: Any) -> ByteSource:
    """Turn a path, URL, bytes-like object or existing source into a :class:`ByteSource`.

    Args:
        target: A local path (memory-mapped), an fsspec URL (a
            :class:`~shardkit.remote.RemoteSource`), bytes, or a source (returned as is).
        io_options: For URLs: ``block_size``, ``cache``, ``concurrency``, ``retries``,
            ``backoff`` of the :class:`~shardkit.remote.RemoteSource`.
        storage_options: Passed to fsspec for URLs.
    """
    if isinstance(target, (bytes, bytearray, memoryview)):
        return BytesSource(target)
    if isinstance(target, (FileSource, BytesSource, RemoteSource, CountingSource)):
        return target  # the common cases, without the (slow) Protocol check below
    if isinstance(target, ByteSource):
        return target
    if isinstance(target, (str, os.PathLike)):
        text = os.fspath(target)
        if "://" in text:
            return RemoteSource(text, storage_options=storage_options, **(io_options or {}))
        return FileSource(text)
    raise TypeError(f"cannot read shard bytes from {type(target).__name__}")
