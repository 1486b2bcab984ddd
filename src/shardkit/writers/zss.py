"""ZSS v1 writer: a sorted stream of records -> a ZSS file, in one pass with bounded memory.

Layout (FORMAT.md sections 2-7, ``schemas/zss.ksy``)::

    magic "ZSS\\x1c\\x8el\\0\\x01" | u32le N | header (N bytes) | u32le CRC32C(header) | blocks

    header = u64le root_voffset | uuid (16) | codec (16, NUL-padded) | u32le M | metadata (M)
    block  = u8 level | uleb128 len(payload) | payload = codec(body)
    data body  = (uleb128 len, record)*            index body = (uleb128 len, key, uleb128 voffset)*

The order of writing is the reference writer's, and explains the tree shape: the header goes
first with the *incomplete* magic "SSZ..." and a placeholder root voffset (2**63-1, CRC 0), so a
crash leaves a file every reader refuses. Data blocks are then written in record order. Each
block's (first record, voffset) becomes an entry of the level above; an index block is written
as soon as its level holds ``branching_factor`` entries, right after its last child. At the end
the half-full levels are flushed bottom-up until one block remains on the top level: the root,
always an index block, and the last block of the file. Only then are the header, its CRC and,
last of all, the real magic written over the placeholders.

Records go to data blocks the way the reference ``ZSSWriter.from_file`` cut its input: the input
is the records each followed by a ``record_overhead``-byte separator, read in chunks of
``approx_block_size`` bytes, and a record belongs to the chunk where its separator ends. With the
corpus' parameters (8-byte separators) the output is byte-for-byte the reference's.
"""

from __future__ import annotations

import bz2
import io
import json
import os
import struct
import zlib
from collections.abc import Callable, Iterable
from typing import IO, Any
from uuid import UUID

from .._layouts import layouts, struct_of
from ..hashing.crc32c import crc32c, crc32c_le
from ._atomic import atomic_file

__all__ = [
    "CODECS",
    "INCOMPLETE_MAGIC",
    "MAGIC",
    "ZssWriter",
    "build",
    "build_zss",
    "encode_uleb128",
    "write",
    "write_zss",
]

MAGIC = b"ZSS\x1c\x8el\x00\x01"
INCOMPLETE_MAGIC = b"SSZ\x1c\x8el\x00\x01"
ROOT_PLACEHOLDER = 2**63 - 1
#: Codec names the writer can put in the header (``bzip2`` is the spec text's name for ``bz2``).
CODECS = ("zlib", "bz2", "bzip2", "none+crc32c")
_DEFAULT_LEVEL = {"zlib": 6, "bz2": 9, "bzip2": 9}
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
#: the header up to its metadata (the codec NUL-padded to 16 bytes by struct), as in zss.ksy
_HEADER_HEAD = struct_of(layouts.ZSS__HEADER__HEAD)
_SMALL = [bytes((n,)) for n in range(128)]  # one-byte uleb128 encodings


def encode_uleb128(value: int) -> bytes:
    """Minimal unsigned LEB128 encoding of ``value`` (0 <= value < 2**63).

    Example::

        >>> encode_uleb128(12345).hex()
        'b960'
    """
    if 0 <= value < 128:
        return _SMALL[value]
    if value < 0 or value >= 2**63:
        raise ValueError(f"uleb128 value out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def checked_options(fmt: str, metadata: dict[str, Any] | None, approx_block_size: int,
                    branching_factor: int, record_overhead: int) -> bytes:
    """The checks of the options the ZSS and ZS writers share; the header's metadata JSON.

    Raises:
        ValueError: ``branching_factor`` below 2, ``approx_block_size`` below 1 or
            ``record_overhead`` below 0.
        TypeError: ``metadata`` is not a dict.
    """
    if branching_factor < 2:
        raise ValueError("branching_factor must be at least 2")
    if approx_block_size < 1:
        raise ValueError("approx_block_size must be positive")
    if record_overhead < 0:
        raise ValueError("record_overhead must be >= 0")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise TypeError(f"{fmt} metadata must be a dict (a JSON object)")
    return json.dumps(metadata, ensure_ascii=True).encode("ascii")


def _compressor(codec: str, level: int | None) -> Callable[[bytes], bytes]:
    if codec == "zlib":
        lvl = _DEFAULT_LEVEL["zlib"] if level is None else level
        return lambda body: zlib.compress(body, lvl)
    if codec in ("bz2", "bzip2"):
        lvl = _DEFAULT_LEVEL["bz2"] if level is None else level
        return lambda body: bz2.compress(body, lvl)
    if codec == "none+crc32c":
        return lambda body: body + crc32c_le(body)
    raise ValueError(f"unknown ZSS codec {codec!r}; known: {', '.join(CODECS)}")


class ZssWriter:
    """Writes one ZSS file from records given in sorted order.

    Memory is bounded by one data block's records plus at most ``branching_factor`` index
    entries per level. Records must come in non-decreasing bytes order; duplicates and empty
    records are fine, and a record larger than ``approx_block_size`` gets a block of its own.

    Args:
        fh: A writable, seekable binary file (the header is rewritten at the end).
        codec: ``"zlib"``, ``"bz2"`` (or ``"bzip2"``, written as given) or ``"none+crc32c"``.
        metadata: A JSON-serialisable dict stored in the header.
        uuid: 16 bytes (or a :class:`uuid.UUID`); random when omitted.
        approx_block_size: Bytes of raw input (records plus ``record_overhead`` each) per data
            block, as the reference writer's chunk size (default 262144).
        branching_factor: Maximum entries per index block (>= 2; default 1024).
        compress_level: zlib level (default 6) or bz2 level (default 9).
        record_overhead: Separator bytes counted after each record when cutting blocks (the
            reference read separator-terminated input; 1 for newline-terminated lines).

    Example::

        with open("out.zss", "wb") as fh, ZssWriter(fh, codec="zlib") as w:
            w.add_many([b"apple", b"banana"])
    """

    def __init__(
        self,
        fh: IO[bytes],
        *,
        codec: str = "zlib",
        metadata: dict[str, Any] | None = None,
        uuid: bytes | UUID | None = None,
        approx_block_size: int = 262144,
        branching_factor: int = 1024,
        compress_level: int | None = None,
        record_overhead: int = 1,
    ) -> None:
        metadata_json = checked_options("ZSS", metadata, approx_block_size, branching_factor,
                                        record_overhead)
        if isinstance(uuid, UUID):
            uuid = uuid.bytes
        uuid = os.urandom(16) if uuid is None else bytes(uuid)
        if len(uuid) != 16:
            raise ValueError("uuid must be 16 bytes")
        if len(codec.encode("ascii")) > 16:
            raise ValueError("codec name longer than 16 bytes")
        self._compress = _compressor(codec, compress_level)
        # ZsWriter.__init__ sets the same option attributes: checked_options holds what the two
        # share; the formats differ in everything they write.
        self.codec = codec
        self.uuid = uuid
        self.metadata_json = metadata_json
        self.approx_block_size = approx_block_size
        self.branching_factor = branching_factor
        self.record_overhead = record_overhead
        self._fh = fh
        self._start = fh.tell()
        self._voffset = 0
        self._levels: list[list[tuple[bytes, int]]] = []  # per level: (first key, voffset)
        self._parts: list[bytes] = []  # encoded records of the pending data block
        self._first: bytes | None = None
        self._prev: bytes | None = None
        self._chunk = -1
        self._input_pos = 0
        self.record_count = 0
        self.root_voffset: int | None = None
        self.closed = False
        self._fh.write(INCOMPLETE_MAGIC)
        header = self._header(ROOT_PLACEHOLDER)
        self._fh.write(_U32.pack(len(header)) + header + b"\0\0\0\0")

    def _header(self, root: int) -> bytes:
        return (_HEADER_HEAD.pack(root, self.uuid, self.codec.encode("ascii"),
                                  len(self.metadata_json)) + self.metadata_json)

    # -- records -------------------------------------------------------------------------------

    def add(self, record: bytes) -> None:
        """Append one record (not smaller than the previous one)."""
        if self.closed:
            raise ValueError("ZssWriter is closed")
        if not isinstance(record, bytes):
            record = bytes(record)
        if self._prev is not None and record < self._prev:
            raise ValueError(f"records are not sorted: {record[:40]!r} after {self._prev[:40]!r}")
        self._prev = record
        n = len(record)
        self._input_pos += n + self.record_overhead
        chunk = (self._input_pos - 1) // self.approx_block_size if self._input_pos else 0
        if chunk != self._chunk and self._parts:
            self._flush_data()
        self._chunk = chunk
        if self._first is None:
            self._first = record
        self._parts.append(_SMALL[n] if n < 128 else encode_uleb128(n))
        self._parts.append(record)
        self.record_count += 1

    def add_many(self, records: Iterable[bytes]) -> None:
        """Append every record of ``records`` (an iterable in sorted order)."""
        for record in records:
            self.add(record)

    # -- blocks --------------------------------------------------------------------------------

    def _flush_data(self) -> None:
        body = b"".join(self._parts)
        first = self._first
        self._parts = []
        self._first = None
        assert first is not None
        self._write_block(0, first, body)

    def _write_block(self, level: int, first: bytes, body: bytes) -> None:
        if level > 255:
            raise ValueError("the index would need more than 255 levels")
        payload = self._compress(body)
        voffset = self._voffset
        frame = _SMALL[level] + encode_uleb128(len(payload))
        self._fh.write(frame)
        self._fh.write(payload)
        self._voffset += len(frame) + len(payload)
        while len(self._levels) <= level:
            self._levels.append([])
        entries = self._levels[level]
        entries.append((first, voffset))
        if len(entries) >= self.branching_factor:
            self._flush_index(level)

    def _flush_index(self, level: int) -> None:
        entries = self._levels[level]
        self._levels[level] = []
        parts: list[bytes] = []
        for key, voffset in entries:
            parts += (encode_uleb128(len(key)), key, encode_uleb128(voffset))
        self._write_block(level + 1, entries[0][0], b"".join(parts))

    def _has_root(self) -> bool:
        levels = self._levels
        return (len(levels) > 1 and len(levels[-1]) == 1
                and not any(levels[:-1]))

    # -- finishing -----------------------------------------------------------------------------

    def close(self) -> None:
        """Finish the file: flush the last blocks, write the root, the header and the magic."""
        if self.closed:
            return
        if self._parts:
            self._flush_data()
        if not self._levels:  # no records: an empty root index block
            self._write_block(1, b"", b"")
        while not self._has_root():
            lowest = next(i for i, entries in enumerate(self._levels) if entries)
            self._flush_index(lowest)
        self.root_voffset = self._levels[-1][0][1]
        end = self._fh.tell()
        header = self._header(self.root_voffset)
        self._fh.seek(self._start + 12)
        self._fh.write(header + _U32.pack(crc32c(header)))
        self._fh.flush()
        self._fh.seek(self._start)
        self._fh.write(MAGIC)
        self._fh.flush()
        self._fh.seek(end)
        self.closed = True

    def __enter__(self) -> ZssWriter:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:  # on an error, leave the file marked incomplete (magic "SSZ")
            self.close()
        else:
            self.closed = True


def write_zss(target: str | os.PathLike[str] | IO[bytes], records: Iterable[bytes],
              **options: Any) -> int:
    """Write ``records`` (sorted) as a ZSS file to a path or a seekable binary file.

    Args:
        target: Path (written under a temporary name and renamed when complete, so the path
            never holds a partial file), or binary file opened for writing (seekable).
        records: The records, in non-decreasing order.
        options: :class:`ZssWriter` keyword arguments (``codec``, ``metadata``, ``uuid``,
            ``approx_block_size``, ``branching_factor``, ``compress_level``,
            ``record_overhead``).

    Returns:
        The number of records written.
    """
    if isinstance(target, (str, os.PathLike)):
        with atomic_file(target) as fh:  # temporary name, renamed once complete
            return write_zss(fh, records, **options)
    with ZssWriter(target, **options) as writer:
        writer.add_many(records)
    return writer.record_count


def build_zss(records: Iterable[bytes], **options: Any) -> bytes:
    """The bytes of a ZSS file holding ``records`` (see :func:`write_zss` for the options)."""
    buf = io.BytesIO()
    write_zss(buf, records, **options)
    return buf.getvalue()


build = build_zss
write = write_zss
