"""ZS writer: a sorted stream of records -> a ZS file (format 0.10), one pass, bounded memory.

Layout (the reference's ``doc/format.rst``, ``schemas/zs.ksy``)::

    magic "\\xabZSfiLe\\x01" | u64le N | header (N bytes) | u64le CRC-64-xz(header) | blocks

    header = u64le root offset | u64le root length | u64le file length | sha256 (32)
             | codec (16, NUL-padded) | u64le M | metadata JSON (M)
    block  = uleb128 L | u8 level | payload = codec(body) (L - 1 bytes) | u64le CRC-64-xz
    data body  = (uleb128 len, record)*
    index body = (uleb128 len, key, uleb128 offset, uleb128 length)*

The order of writing is the reference's: the header goes first with the unfinished magic
"ZStoBe" and placeholders (root offset 2**63-1, zero lengths and hash, a zero CRC), so a crash
leaves a file every reader refuses. Data blocks follow in record order; each block's (first
record, offset, length) becomes an entry of the level above, and an index block is written as
soon as its level holds ``branching_factor`` entries. At the end the partial levels are flushed
bottom-up until one block remains on the top level (the root, always an index block). Only then
are the header and its CRC rewritten and, after an fsync, the real magic written.

A data block is cut when its records (plus ``record_overhead`` bytes each) reach
``approx_block_size``, as ``zs make`` cuts length-prefixed input. With ``jobs`` > 1 the data
blocks are compressed, framed and checksummed in that many worker processes (at most
``2 * jobs`` blocks in flight), and the SHA-256 of the data runs in a thread of its own (it
releases the GIL), so the main thread only splits, orders and writes. (Worker threads were
measured slower: each codec call takes the GIL back for every output buffer it grows, and waits
for it behind the main thread.) The file's bytes do not depend on ``jobs``. deflate is zlib-ng's
when it is installed (the same format at about twice zlib's speed; other bytes than zlib's).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import lzma
import operator
import os
import struct
import types
import zlib
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from typing import IO, Any

from .._layouts import layouts, struct_of
from ..hashing.crc64xz import crc64xz, crc64xz_le
from ._atomic import atomic_file
from .zss import checked_options, encode_uleb128

_deflate: types.ModuleType
try:  # zlib-ng: the same raw deflate format at about twice zlib's speed
    from zlib_ng import zlib_ng as _deflate
except ImportError:  # pragma: no cover - zlib-ng is a dependency; zlib stays the fallback
    _deflate = zlib

__all__ = [
    "CODECS",
    "INCOMPLETE_MAGIC",
    "MAGIC",
    "UnsortedInputError",
    "ZsWriter",
    "build_zs",
    "write_zs",
]

MAGIC = b"\xabZSfiLe\x01"
INCOMPLETE_MAGIC = b"\xabZStoBe\x01"
ROOT_PLACEHOLDER = 2**63 - 1
#: ``codec=`` value -> the codec name stored in the header.
CODECS = {"none": "none", "deflate": "deflate", "lzma": "lzma2;dsize=2^20"}
FIRST_EXTENSION_LEVEL = 64
_U64 = struct.Struct("<Q")
#: the header up to its metadata (the codec NUL-padded to 16 bytes by struct), as in zs.ksy
_HEADER_HEAD = struct_of(layouts.ZS__HEADER__HEAD)
_SMALL = [bytes((n,)) for n in range(128)]
_BATCH = 8192  # records taken from an iterable at a time


class UnsortedInputError(ValueError):
    """A record is smaller than the one before it (ZS records are written in sorted order).

    Attributes:
        index: 0-based number of the first out-of-order record.
        record: That record.
        previous: The record before it.
    """

    def __init__(self, index: int, record: bytes, previous: bytes) -> None:
        self.index = index
        self.record = record
        self.previous = previous
        super().__init__(f"records are not sorted: record {index} ({record[:60]!r}) is smaller "
                         f"than the record before it ({previous[:60]!r})")


def _as_bytes(record: Any, index: int) -> bytes:
    if isinstance(record, (bytes, bytearray, memoryview)):
        return bytes(record)
    raise TypeError(f"record {index} is a {type(record).__name__}; ZS records are bytes")


def _lzma_options(level: int | str | None) -> tuple[int, bool]:
    """``zs make -z`` for lzma: 0, 1, "0e" or "1e" (default "0e") -> (preset, extreme)."""
    if level is None:
        return 0, True
    text = str(level)
    extreme = text.endswith("e")
    try:
        preset = int(text[:-1] if extreme else text)
    except ValueError:
        raise ValueError(f"lzma level must be 0, 1, 0e or 1e, not {level!r}") from None
    if preset not in (0, 1):
        raise ValueError(f"lzma level must be 0, 1, 0e or 1e, not {level!r} (the 1 MiB "
                         "dictionary of lzma2;dsize=2^20 allows presets 0 and 1 only)")
    return preset, extreme


def compress(codec: str, level: int | str | None, body: bytes) -> bytes:
    """``body`` encoded with a header codec (``none``, ``deflate``, ``lzma2;dsize=2^20``).

    A module-level function, so worker processes can run it.
    """
    if codec == "deflate":
        out: bytes = _deflate.compress(body, 6 if level is None else int(level), wbits=-15)
        return out
    if codec == "none":
        return body
    preset, extreme = _lzma_options(level)
    return lzma.compress(body, format=lzma.FORMAT_RAW, filters=[
        {"id": lzma.FILTER_LZMA2, "preset": preset | (lzma.PRESET_EXTREME if extreme else 0)}])


def frame_block(codec: str, level: int | str | None, block_level: int, body: bytes) -> bytes:
    """The whole block for ``body``: ``uleb128 L | level byte | payload | CRC-64-xz``.

    A module-level function: worker processes run it, CRC included.
    """
    head = _SMALL[block_level]
    payload = compress(codec, level, body)
    crc = _U64.pack(crc64xz(payload, crc64xz(head)))
    return b"".join((encode_uleb128(1 + len(payload)), head, payload, crc))


def _check_level(codec: str, level: int | str | None) -> None:
    if level is None or codec == "none":
        return
    if codec == "deflate":
        if not isinstance(level, int) and not str(level).isdigit():
            raise ValueError(f"deflate level must be an integer 0..9, not {level!r}")
        if not 0 <= int(level) <= 9:
            raise ValueError(f"deflate level must be 0..9, not {level}")
    else:
        _lzma_options(level)


class ZsWriter:
    """Writes one ZS file from records given in sorted order.

    Memory is bounded by the data blocks in flight plus at most ``branching_factor`` index
    entries per level. Records must come in non-decreasing bytes order (duplicates and empty
    records are fine); a ZS file holds at least one record.

    Args:
        fh: A writable, seekable binary file (the header is rewritten at the end).
        codec: ``"lzma"`` (the default of ``zs make``), ``"deflate"`` or ``"none"``.
        metadata: A JSON-serialisable dict stored in the header.
        approx_block_size: Bytes of records per data block, before compression (393216, as
            ``zs make``).
        branching_factor: Entries per index block (>= 2; 1024).
        level: deflate 0..9 (6); lzma 0, 1, "0e" or "1e" ("0e": preset 0, extreme).
        jobs: Worker processes compressing data blocks (1: in this process).
        record_overhead: Bytes counted after each record when cutting blocks (1 for
            newline-terminated input, as ``zs make`` reads chunks of the input file).

    Example::

        with open("out.zs", "wb") as fh, ZsWriter(fh, codec="deflate") as w:
            w.add_many([b"apple", b"banana"])
    """

    def __init__(self, fh: IO[bytes], *, codec: str = "lzma",
                 metadata: dict[str, Any] | None = None, approx_block_size: int = 393216,
                 branching_factor: int = 1024, level: int | str | None = None,
                 jobs: int = 1, record_overhead: int = 0) -> None:
        if codec not in CODECS:
            raise ValueError(f"unknown ZS codec {codec!r}; known: {', '.join(CODECS)}")
        self.metadata_json = checked_options("ZS", metadata, approx_block_size,
                                             branching_factor, record_overhead)
        if jobs < 1:
            raise ValueError("jobs must be at least 1")
        self.codec = CODECS[codec]
        _check_level(self.codec, level)
        # the option attributes of ZssWriter.__init__ too (see the note there)
        self.level = level
        self.approx_block_size = approx_block_size
        self.branching_factor = branching_factor
        self.record_overhead = record_overhead
        self.jobs = jobs
        self._fh = fh
        self._start = fh.tell()
        self._hasher = hashlib.sha256()
        self._levels: list[list[tuple[bytes, int, int]]] = []  # (key, offset, length)
        self._records: list[bytes] = []  # of the pending data block
        self._prev: bytes | None = None
        self._size = 0
        self.record_count = 0
        self.root: tuple[int, int] | None = None
        self.closed = False
        self._pool: Executor | None = None
        self._hash_pool: Executor | None = None  # one thread: SHA-256 updates in order
        # (first record, framed block, its SHA-256 update) of the blocks in flight
        self._pending: deque[tuple[bytes, Future[bytes], Future[None]]] = deque()
        fh.write(INCOMPLETE_MAGIC)
        header = self._header(ROOT_PLACEHOLDER, 0, 0, bytes(32))
        fh.write(_U64.pack(len(header)) + header + bytes(8))
        self._pos = fh.tell() - self._start

    def _header(self, root: int, root_length: int, file_length: int, sha256: bytes) -> bytes:
        return (_HEADER_HEAD.pack(root, root_length, file_length, sha256,
                                  self.codec.encode("ascii"), len(self.metadata_json))
                + self.metadata_json)

    # -- records -------------------------------------------------------------------------------

    def add(self, record: bytes) -> None:
        """Append one record (not smaller than the previous one)."""
        self.add_batch([record])

    def add_many(self, records: Iterable[bytes]) -> None:
        """Append every record of ``records`` (an iterable in sorted order), in batches."""
        it = iter(records)
        while batch := list(itertools.islice(it, _BATCH)):
            self.add_batch(batch)

    def add_batch(self, batch: list[bytes]) -> None:
        """Append a list of records (sorted, and not smaller than the records before).

        The work per record runs in C: the order check (``sorted``), the lengths and the
        cumulative sizes that place the block cuts (``itertools.accumulate`` and ``bisect``);
        a Python loop runs only to name the first record out of order.
        """
        if self.closed:
            raise ValueError("ZsWriter is closed")
        if not batch:
            return
        if set(map(type, batch)) != {bytes}:  # bytearray, memoryview...: copied once
            batch = [_as_bytes(r, self.record_count + i) for i, r in enumerate(batch)]
        prev = self._prev
        if (prev is not None and batch[0] < prev) or batch != sorted(batch):
            for i, record in enumerate(batch):
                if prev is not None and record < prev:
                    raise UnsortedInputError(self.record_count + i, record, prev)
                prev = record
        overhead = self.record_overhead
        sizes = map(len, batch) if not overhead else \
            map(operator.add, map(len, batch), itertools.repeat(overhead))
        ends = list(itertools.accumulate(sizes, initial=self._size))  # ends[i]: before record i
        limit = self.approx_block_size
        start = 0
        base = 0  # the size at which the pending block started, in ends' terms
        while True:
            # the block is cut after record i when ends[i + 1] - base >= limit
            cut = bisect_left(ends, base + limit, lo=start + 1)
            if cut >= len(ends):
                break
            self._records.extend(batch[start:cut])
            self._flush_data()
            base = ends[cut]
            start = cut
        self._records.extend(batch[start:])
        self._size = ends[-1] - base
        self._prev = batch[-1]
        self.record_count += len(batch)

    # -- blocks --------------------------------------------------------------------------------

    def _flush_data(self) -> None:
        records = self._records
        self._records = []
        self._size = 0
        lengths = list(map(len, records))
        heads = map(_SMALL.__getitem__ if max(lengths) < 128 else encode_uleb128, lengths)
        body = b"".join(itertools.chain.from_iterable(zip(heads, records, strict=True)))
        first = records[0]
        if self.jobs == 1:
            self._hasher.update(body)
            self._write_block(0, first, frame_block(self.codec, self.level, 0, body))
            return
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.jobs)
        if self._hash_pool is None:
            self._hash_pool = ThreadPoolExecutor(1, thread_name_prefix="zs-sha256")
        hashed = self._hash_pool.submit(self._hasher.update, body)  # FIFO: the data's order
        self._pending.append(
            (first, self._pool.submit(frame_block, self.codec, self.level, 0, body), hashed))
        while len(self._pending) > 2 * self.jobs:
            self._drain_one()

    def _drain_one(self) -> None:
        first, fut, hashed = self._pending.popleft()
        hashed.result()  # the hash backlog is bounded by the blocks in flight
        self._write_block(0, first, fut.result())

    def _write_block(self, level: int, first: bytes, block: bytes) -> None:
        """Write a framed block (:func:`frame_block`) and enter it in the level above."""
        offset = self._pos
        self._fh.write(block)
        self._pos += len(block)
        while len(self._levels) <= level:
            self._levels.append([])
        entries = self._levels[level]
        entries.append((first, offset, len(block)))
        if len(entries) >= self.branching_factor:
            self._flush_index(level)

    def _flush_index(self, level: int) -> None:
        entries = self._levels[level]
        self._levels[level] = []
        parts: list[bytes] = []
        for key, offset, length in entries:
            parts += (encode_uleb128(len(key)), key, encode_uleb128(offset),
                      encode_uleb128(length))
        if level + 1 >= FIRST_EXTENSION_LEVEL:
            raise ValueError("the index would need more than 63 levels")
        self._write_block(level + 1, entries[0][0],
                          frame_block(self.codec, self.level, level + 1, b"".join(parts)))

    def _has_root(self) -> bool:
        levels = self._levels
        return len(levels) > 1 and len(levels[-1]) == 1 and not any(levels[:-1])

    # -- finishing -----------------------------------------------------------------------------

    def close(self) -> None:
        """Finish the file: the last blocks, the root, the header, then the real magic."""
        if self.closed:
            return
        try:
            if self._records:
                self._flush_data()
            while self._pending:
                self._drain_one()
        finally:
            self._shutdown()
        if not self._levels:
            self.closed = True
            raise ValueError("a ZS file holds at least one record; none were given")
        while not self._has_root():
            lowest = next(i for i, entries in enumerate(self._levels) if entries)
            self._flush_index(lowest)
        _, root_offset, root_length = self._levels[-1][0]
        self.root = (root_offset, root_length)
        fh = self._fh
        end = fh.tell()
        header = self._header(root_offset, root_length, end - self._start,
                              self._hasher.digest())
        fh.seek(self._start + 16)
        fh.write(header + crc64xz_le(header))
        _sync(fh)
        fh.seek(self._start)
        fh.write(MAGIC)
        fh.flush()
        fh.seek(end)
        self.closed = True

    def _shutdown(self) -> None:
        for _, fut, _ in self._pending:
            fut.cancel()
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._hash_pool is not None:  # every update submitted has run
            self._hash_pool.shutdown(wait=True)
            self._hash_pool = None

    def __enter__(self) -> ZsWriter:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:  # leave the file marked unfinished ("ZStoBe")
            self._shutdown()
            self.closed = True


def _sync(fh: IO[bytes]) -> None:
    fh.flush()
    with contextlib.suppress(OSError, AttributeError, io.UnsupportedOperation):
        os.fsync(fh.fileno())  # not for an in-memory file


def write_zs(target: str | os.PathLike[str] | IO[bytes], records: Iterable[bytes], *,
             progress: Callable[[int], None] | None = None, **options: Any) -> int:
    """Write ``records`` (sorted) as a ZS file to a path or a seekable binary file.

    Args:
        target: Path (written under a temporary name and renamed when complete, so the path
            never holds a partial file), or binary file opened for writing (seekable).
        records: The records, in non-decreasing order.
        progress: Called with the number of records written so far, every 65536 records
            and at the end.
        options: :class:`ZsWriter` keyword arguments (``codec``, ``metadata``,
            ``approx_block_size``, ``branching_factor``, ``level``, ``jobs``,
            ``record_overhead``).

    Returns:
        The number of records written.

    Raises:
        UnsortedInputError: A record is smaller than the one before it (nothing is left
            under the final name).
        ValueError: No records, or a bad option.
    """
    if isinstance(target, (str, os.PathLike)):
        with atomic_file(target) as fh:
            return write_zs(fh, records, progress=progress, **options)
    with ZsWriter(target, **options) as writer:
        it = iter(records)
        while batch := list(itertools.islice(it, _BATCH)):
            writer.add_batch(batch)
            if progress is not None and not writer.record_count % (8 * _BATCH):
                progress(writer.record_count)
        if progress is not None:
            progress(writer.record_count)
    return writer.record_count


def build_zs(records: Iterable[bytes], **options: Any) -> bytes:
    """The bytes of a ZS file holding ``records`` (see :func:`write_zs` for the options)."""
    buf = io.BytesIO()
    write_zs(buf, records, **options)
    return buf.getvalue()
