"""ZSS v1 compressed sorted sets (njsmith/zss, 2013): iteration, search through the index, fsck.

Layout: ``schemas/zss.ksy`` (generated class :class:`Zss`; the unsigned LEB128 type is
``schemas/common/uleb128.ksy``); the full description is FORMAT.md of the corpus. This module
adds the meaning: codec dispatch (``zlib``, ``bz2``/``bzip2``, ``none+crc32c``) with a size cap,
CRC-32C checks, the index tree (an entry's key is the first record of its child's subtree),
search with exact multiset semantics, and :meth:`ZssFile.verify`.

Hot paths do not go through Kaitai objects: block framing is read with a small uleb128 decoder,
data-block bodies with :func:`decode_records` and index-block bodies with :func:`decode_index`,
tight loops over the decoded bytes (the tests check both against the generated
``Zss.DataBlockBody`` / ``Zss.IndexBlockBody``; a body they refuse is parsed again with the
generated class, which names the failing field).

Lookups (search, range iteration, membership) do not decode a whole data block into a list: a
block is kept as its body bytes, and the record wanted is found by walking the length fields
from the start of the body only as far as needed (for a prefix, ``bytes.find`` proposes where a
matching record may start and the walk checks it). A cached block that is used again gets an
array of its record positions, so later lookups in it are a bisection.

Positions: a block is named by its *voffset* (from the first byte after the header CRC); errors
and problems carry the absolute byte offset (``data_offset + voffset``) as well.
"""

from __future__ import annotations

import bz2
import codecs as _codecs
import itertools
import json
import zlib
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .._kaitai import kaitai_errors, parse
from ..errors import (
    ChecksumError,
    CorruptShardError,
    EntryNotFoundError,
    FormatError,
    InvalidKeyError,
    LayoutError,
    LimitExceededError,
    Problem,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from ..generated.zss import Zss
from ..hashing.crc32c import IMPLEMENTATION as CRC32C_IMPLEMENTATION
from ..hashing.crc32c import crc32c
from ..sources import ByteSource, as_stream
from .base import Reader, Section

__all__ = [
    "CODECS",
    "INCOMPLETE_MAGIC",
    "MAGIC",
    "BlockChecksumError",
    "BlockInfo",
    "CorruptBlockError",
    "IncompleteFileError",
    "IndexBlock",
    "ZssFile",
    "ZssHeader",
    "decode_index",
    "decode_records",
    "prefix_successor",
]

MAGIC = b"ZSS\x1c\x8el\x00\x01"
INCOMPLETE_MAGIC = b"SSZ\x1c\x8el\x00\x01"
#: Header codec name -> codec used to decode (``bzip2`` is the spec text's name for ``bz2``).
CODECS = {"zlib": "zlib", "bz2": "bz2", "bzip2": "bz2", "none+crc32c": "none+crc32c"}
HEADER_FIXED = 44  # root voffset, uuid, codec, metadata length
MAX_ULEB_BYTES = 9
DEFAULT_MAX_BLOCK_SIZE = 1 << 29  # decoded body cap (512 MiB)
_FRAME_PEEK = 1 + MAX_ULEB_BYTES
_MISSING: Any = object()
_POS_TYPE = "I" if array("I").itemsize >= 4 else "L"  # record positions in bodies < 4 GiB


_body_crc32c = crc32c
#: Which CRC-32C implementation checks ``none+crc32c`` block bodies ("crcmod" or "google-crc32c").
BODY_CRC32C_IMPL = CRC32C_IMPLEMENTATION


class IncompleteFileError(FormatError):
    """The file starts with the "SSZ" magic: its writer never finished it."""


class CorruptBlockError(CorruptShardError):
    """A block's payload or body cannot be decoded.

    Attributes:
        voffset: voffset of the block (its level byte).
    """

    voffset: int

    def __init__(self, message: str, *, voffset: int | None = None, offset: int | None = None,
                 field: str | None = None) -> None:
        if voffset is not None:
            self.voffset = voffset
        super().__init__(message, offset=offset, field=field)


class BlockChecksumError(ChecksumError, CorruptBlockError):
    """The CRC-32C of a ``none+crc32c`` block body does not match."""

    def __init__(self, voffset: int, stored: int, computed: int, *, offset: int | None = None,
                 field: str | None = None) -> None:
        self.voffset = voffset
        ChecksumError.__init__(self, f"block at voffset {voffset}", stored, computed,
                               offset=offset, field=field)


class _BodyError(Exception):
    """Internal: a body failed to parse at body position ``pos``."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


# -- primitives --------------------------------------------------------------------------------


def _uleb_slow(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """Strict uleb128 at ``buf[pos]``: ``(value, position after it)``; raises _BodyError."""
    value = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise _BodyError("uleb128 runs past the end", start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            if b == 0 and pos - start > 1:
                raise _BodyError("non-minimal uleb128 (last byte 0x00)", start)
            return value, pos
        shift += 7
        if pos - start >= MAX_ULEB_BYTES:
            raise _BodyError(f"uleb128 longer than {MAX_ULEB_BYTES} bytes", start)


def decode_records(body: bytes) -> list[bytes]:
    """The records of a decoded data-block body (``(uleb128 length, bytes)*``).

    Raises:
        _BodyError: A length is malformed or a record runs past the end (internal; the reader
            turns it into :class:`CorruptBlockError`).
    """
    out: list[bytes] = []
    append = out.append
    pos = 0
    n = len(body)
    while pos < n:
        ln = body[pos]
        if ln < 0x80:
            pos += 1
        else:
            ln, pos = _uleb_slow(body, pos, n)
        end = pos + ln
        if end > n:
            raise _BodyError(f"record of {ln} bytes runs past the end of the body", pos)
        append(body[pos:end])
        pos = end
    return out


def decode_index(body: bytes) -> tuple[list[bytes], list[int]]:
    """The entries of a decoded index-block body (``(uleb128 length, key, uleb128 voffset)*``).

    Returns:
        ``(keys, child_voffsets)``.

    Raises:
        _BodyError: A uleb128 is malformed or an entry runs past the end (internal; the reader
            parses such a body again with ``Zss.IndexBlockBody`` for a precise error).
    """
    keys: list[bytes] = []
    children: list[int] = []
    pos = 0
    n = len(body)
    while pos < n:
        ln = body[pos]
        if ln < 0x80:
            pos += 1
        else:
            ln, pos = _uleb_slow(body, pos, n)
        end = pos + ln
        if end >= n:
            raise _BodyError(f"index entry of {ln} key bytes runs past the end of the body", pos)
        keys.append(body[pos:end])
        child = body[end]
        pos = end + 1
        if child >= 0x80:  # voffsets are mostly 2-4 bytes: decoded inline, checked after
            child &= 0x7F
            shift = 7
            b = 0x80
            while b >= 0x80 and pos < n:
                b = body[pos]
                pos += 1
                child |= (b & 0x7F) << shift
                shift += 7
            if b >= 0x80 or b == 0 or pos - end > MAX_ULEB_BYTES:  # cut off, non-minimal, long
                child, pos = _uleb_slow(body, end, n)  # raises the precise error
        children.append(child)
    return keys, children


def prefix_successor(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``prefix``.

    ``None`` when there is none (the empty prefix, or only 0xff bytes).

    Example::

        >>> prefix_successor(b"ab\\xff")
        b'ac'
    """
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes((stripped[-1] + 1,))


def _record(value: Any, what: str = "record") -> bytes:
    """A record/prefix/bound as bytes: bytes-like as is, ``str`` as UTF-8."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise InvalidKeyError(f"a ZSS {what} is bytes (or str, taken as UTF-8), "
                          f"not {type(value).__name__}")


def _escape(key: bytes) -> str:
    out = []
    for b in key:
        if b == 0x5C:
            out.append("\\\\")
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        elif b == 0x0A:
            out.append("\\n")
        elif b == 0x09:
            out.append("\\t")
        elif b == 0x0D:
            out.append("\\r")
        else:
            out.append(f"\\x{b:02x}")
    return "".join(out)


# -- value types -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ZssHeader:
    """The file header (FORMAT.md section 2).

    Attributes:
        header_length: N, the length of the header proper.
        data_offset: Absolute offset of voffset 0 (16 + N).
        root_voffset: voffset of the root index block.
        uuid: The 16-byte file id.
        codec: Codec name as stored (``zlib``, ``bz2``, ``bzip2`` or ``none+crc32c``).
        metadata_json: The metadata JSON text.
        header_crc32c: The stored CRC-32C of the header bytes.
    """

    header_length: int
    data_offset: int
    root_voffset: int
    uuid: bytes
    codec: str
    metadata_json: str
    header_crc32c: int

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output (uuid as hex)."""
        return {"header_length": self.header_length, "data_offset": self.data_offset,
                "root_voffset": self.root_voffset, "uuid": self.uuid.hex(), "codec": self.codec,
                "metadata_json": self.metadata_json,
                "header_crc32c": f"{self.header_crc32c:08x}"}


@dataclass(frozen=True)
class BlockInfo:
    """A block's framing.

    Attributes:
        voffset: Position of the level byte, counted from the data offset.
        offset: The same position, absolute.
        level: 0 for a data block, L >= 1 for an index block.
        len_frame: Bytes of the level byte plus the length uleb128.
        len_payload: Bytes of the encoded payload.
    """

    voffset: int
    offset: int
    level: int
    len_frame: int
    len_payload: int

    @property
    def payload_offset(self) -> int:
        """Absolute offset of the payload."""
        return self.offset + self.len_frame

    @property
    def size(self) -> int:
        """Total bytes of the block."""
        return self.len_frame + self.len_payload

    @property
    def end_voffset(self) -> int:
        """voffset of the next block."""
        return self.voffset + self.size


@dataclass(frozen=True)
class IndexBlock:
    """A decoded index block: ``keys[i]`` is the first record under ``children[i]``."""

    voffset: int
    level: int
    keys: tuple[bytes, ...]
    children: tuple[int, ...]


class _DataBlock:
    """A decoded data block as the lookup cache keeps it: the body, not a list of records.

    Lookups walk the length fields from the start of the body and stop at the record wanted.
    :meth:`index` records where every record starts (an ``array`` of 4-byte positions, about a
    quarter of the body's size for 16-byte records), after which a lookup is a bisection.
    Methods raise :class:`_BodyError` on a malformed body; the reader names the block.

    Attributes:
        info: The block's framing.
        body: The decoded body.
        ascii: No byte is >= 0x80, so every length field is one byte (the fast walk).
        heads: ``None``, or the position of every record's length field and then
            ``len(body)``.
    """

    __slots__ = ("ascii", "body", "heads", "info")

    def __init__(self, info: BlockInfo, body: bytes) -> None:
        self.info = info
        self.body = body
        self.ascii = body.isascii()
        self.heads: array[int] | None = None

    def index(self) -> array[int]:
        """Positions of all length fields, plus ``len(body)`` (built once, then kept)."""
        if self.heads is not None:
            return self.heads
        b = self.body
        n = len(b)
        heads = array(_POS_TYPE if n < 1 << 32 else "Q")
        append = heads.append
        p = d = ln = 0
        if self.ascii:
            while p < n:
                append(p)
                p += b[p] + 1
            if p != n:
                last = heads[-1]
                ln, d = b[last], last + 1
        else:
            while p < n:
                append(p)
                ln = b[p]
                if ln < 0x80:
                    d = p + 1
                else:
                    ln, d = _uleb_slow(b, p, n)
                p = d + ln
        if p != n:
            raise _BodyError(f"record of {ln} bytes runs past the end of the body", d)
        append(n)
        self.heads = heads
        return heads

    def record_at(self, p: int) -> tuple[bytes, int]:
        """The record whose length field is at ``p``, and the position after it."""
        b = self.body
        ln = b[p]
        if ln < 0x80:
            d = p + 1
        else:
            ln, d = _uleb_slow(b, p, len(b))
        end = d + ln
        if end > len(b):
            raise _BodyError(f"record of {ln} bytes runs past the end of the body", d)
        return b[d:end], end

    def _key(self, i: int) -> bytes:
        heads = self.heads
        assert heads is not None
        p = heads[i]
        ln = self.body[p]
        d = p + 1 if ln < 0x80 else _uleb_slow(self.body, p, len(self.body))[1]
        return self.body[d:heads[i + 1]]

    def lower_bound(self, key: bytes) -> int:
        """Position of the length field of the first record >= ``key`` (``len(body)``: none)."""
        heads = self.heads
        if heads is not None:
            return heads[bisect_left(range(len(heads) - 1), key, key=self._key)]
        b = self.body
        n = len(b)
        p = 0  # invariant: every record before p is < key
        if self.ascii:
            lim = n - 8 * 128  # 8 one-byte-length records span at most 1024 bytes
            while p < lim:
                q = p + b[p] + 1
                q += b[q] + 1
                q += b[q] + 1
                q += b[q] + 1
                q += b[q] + 1
                q += b[q] + 1
                q += b[q] + 1
                q += b[q] + 1
                if b[q + 1:q + 1 + b[q]] >= key:
                    break
                p = q
        while p < n:
            record, end = self.record_at(p)
            if record >= key:
                return p
            p = end
        return n

    def find_prefix(self, prefix: bytes) -> int | None:
        """Position of the length field of the first record starting with ``prefix``, or None.

        Records are sorted, so the first record (in block order) that starts with ``prefix``
        is the first one >= ``prefix``. ``bytes.find`` proposes where its bytes begin; the
        walk along the length fields, which only ever moves forward, confirms that a record
        starts there, or skips to the next occurrence after the record it landed in.
        """
        b = self.body
        n = len(b)
        if self.heads is not None or not prefix:
            p = self.lower_bound(prefix)
            return p if p < n and self.record_at(p)[0].startswith(prefix) else None
        lp = len(prefix)
        q = b.find(prefix)  # where the first candidate record's bytes would begin
        p = 0  # a length field (the walk's position)
        if self.ascii:  # the length field of a record starting at q is at q - 1
            while q != -1:
                c = q - 1
                lim = c - 8 * 128
                while p < lim:  # 8 steps of at most 128 bytes cannot pass c
                    p += b[p] + 1
                    p += b[p] + 1
                    p += b[p] + 1
                    p += b[p] + 1
                    p += b[p] + 1
                    p += b[p] + 1
                    p += b[p] + 1
                    p += b[p] + 1
                while p < c:
                    p += b[p] + 1
                if p == c and b[c] >= lp:
                    return c
                if p >= n:
                    if p > n:
                        raise _BodyError("a record runs past the end of the body", n)
                    return None
                q = b.find(prefix, max(p, q) + 1)
            return None
        while q != -1:
            while True:
                ln = b[p]
                if ln < 0x80:
                    d = p + 1
                else:
                    ln, d = _uleb_slow(b, p, n)
                if d >= q:
                    break
                p = d + ln
                if p >= n:
                    if p > n:
                        raise _BodyError(f"record of {ln} bytes runs past the end of the body",
                                         d)
                    return None
            if d == q and ln >= lp:
                return p
            q = b.find(prefix, d if d > q else q + 1)
        return None


# -- the reader --------------------------------------------------------------------------------


class ZssFile(Reader):
    """A ZSS v1 file: a sorted multiset of byte strings, compressed in blocks, with an index.

    Opening reads and checks the header (magic, CRC-32C, codec, metadata). Records are read
    block by block: ``iter(z)`` streams every record in order in constant memory,
    ``z.search(prefix=...)`` / ``z.iter(start=..., stop=...)`` descend the index tree and read
    only the blocks on their path. Decoded index blocks and data blocks are kept in two small
    LRU caches; a cached data block used a second time gets an array of its record positions,
    so lookups in it are a bisection.

    Args:
        source: Where the bytes come from.
        cache_blocks: Decoded data blocks kept in the LRU cache (lookups); 0 decodes the data
            block of every lookup afresh.
        max_block_size: Largest decoded block body accepted (a decompression-bomb guard).
        readahead: Blocks decompressed ahead in worker threads during a full scan (0: none).
        cache_index_blocks: Decoded index blocks kept in their own LRU cache (as the
            reference reader's ``index_block_cache``, 32 by default).

    Example::

        with shardkit.open("ngrams.zss") as z:
            for record in z.search(prefix=b"hello "):
                print(record)
    """

    format_id = "zss"
    format_name = "ZSS compressed sorted set"

    def __init__(self, source: ByteSource, *, cache_blocks: int = 64,
                 max_block_size: int = DEFAULT_MAX_BLOCK_SIZE, readahead: int = 2,
                 cache_index_blocks: int = 32) -> None:
        super().__init__(source)
        self.cache_blocks = max(0, cache_blocks)
        self.cache_index_blocks = max(0, cache_index_blocks)
        self.max_block_size = max_block_size
        self.readahead = max(0, readahead)
        head = source.read_range(0, min(8, source.size))
        if head == INCOMPLETE_MAGIC:
            raise IncompleteFileError(
                f"{source.name}: incomplete file: magic is 'SSZ...', the writer never finished "
                "it (ZSS writes the real magic last)", offset=0, field="/magic")
        self._ks = parse(Zss, as_stream(source, buffer_size=4096), magic_fields=("/magic",))
        ks = self._ks
        h = ks.header
        n = ks.len_header
        with kaitai_errors():
            crc_input = ks.header_crc32c_input
        computed = crc32c(crc_input)
        if computed != ks.header_crc32c:
            raise ChecksumError("header", ks.header_crc32c, computed, offset=12 + n,
                                field="/header_crc32c")
        if h.codec not in CODECS:
            raise UnsupportedVersionError(
                f"unknown ZSS codec {h.codec!r} (known: {', '.join(CODECS)})", offset=12 + 24,
                field="/header/codec")
        try:
            metadata = json.loads(h.metadata)
        except ValueError as exc:
            raise LayoutError(f"metadata is not JSON: {exc}", offset=12 + HEADER_FIXED,
                              field="/header/metadata") from exc
        if not isinstance(metadata, dict):
            raise LayoutError(f"metadata is a JSON {type(metadata).__name__}, not an object",
                              offset=12 + HEADER_FIXED, field="/header/metadata")
        self.data_offset = int(ks.ofs_data)  # 16 + header length (schemas/zss.ksy)
        self.header = ZssHeader(n, self.data_offset, h.root_voffset, h.uuid, h.codec,
                                h.metadata, ks.header_crc32c)
        self.data_size = source.size - self.data_offset
        if h.root_voffset >= self.data_size:
            raise LayoutError(f"root voffset {h.root_voffset} is past the end of the blocks "
                              f"({self.data_size} bytes)", offset=12, field="/header/root_voffset")
        self.metadata: dict[str, Any] = metadata
        self.codec: str = h.codec
        self.uuid: bytes = h.uuid
        self.root: int = h.root_voffset
        self._codec = CODECS[h.codec]
        self._cache: OrderedDict[int, tuple[BlockInfo, Any]] = OrderedDict()  # data blocks
        self._index_cache: OrderedDict[int, tuple[BlockInfo, Any]] = OrderedDict()
        self._len: int | None = None

    # -- blocks --------------------------------------------------------------------------------

    def _where(self, voffset: int) -> str:
        return f"voffset {voffset}, byte {self.data_offset + voffset}"

    def _frame_from(self, voffset: int, head: bytes) -> BlockInfo:
        """Parse the framing of the block at ``voffset`` from its first bytes ``head``."""
        offset = self.data_offset + voffset
        if not head:
            raise TruncatedError(f"no block at {self._where(voffset)}: end of file",
                                 needed=1, available=0, offset=offset, field="/blocks")
        try:
            length, pos = _uleb_slow(head, 1, len(head))
        except _BodyError as exc:
            if "past the end" in str(exc):
                raise TruncatedError(f"block at {self._where(voffset)}: length cut off by the "
                                     "end of the file", offset=offset + 1,
                                     field=f"/blocks/@{voffset}/len_payload") from None
            raise LayoutError(f"block at {self._where(voffset)}: {exc}", offset=offset + 1,
                              field=f"/blocks/@{voffset}/len_payload") from None
        info = BlockInfo(voffset, offset, head[0], pos, length)
        end = info.payload_offset + length
        if end > self.source.size:
            raise TruncatedError(
                f"block at {self._where(voffset)}: payload of {length} bytes runs past the end "
                f"of the file by {end - self.source.size} bytes", needed=length,
                available=self.source.size - info.payload_offset, offset=info.payload_offset,
                field=f"/blocks/@{voffset}/payload")
        return info

    def frame(self, voffset: int) -> BlockInfo:
        """The framing of the block at ``voffset`` (reads at most 10 bytes)."""
        if not 0 <= voffset < self.data_size:
            raise LayoutError(f"voffset {voffset} is outside the blocks (0..{self.data_size})",
                              offset=None, field=f"/blocks/@{voffset}")
        offset = self.data_offset + voffset
        head = self.source.read_range(offset, min(offset + _FRAME_PEEK, self.source.size))
        return self._frame_from(voffset, head)

    def _payload(self, info: BlockInfo) -> bytes:
        return self.source.read_range(info.payload_offset, info.payload_offset + info.len_payload)

    def _frames(self, voffset: int = 0, data_only: bool = False
                ) -> Iterator[tuple[BlockInfo, bytes]]:
        """(framing, payload) of every block from ``voffset`` to the end of the file.

        Each read fetches a payload together with the next block's framing: one request per
        block on remote sources. With ``data_only``, index blocks are skipped without reading
        their payloads.
        """
        size = self.source.size
        offset = self.data_offset + voffset
        head = self.source.read_range(offset, min(offset + _FRAME_PEEK, size))
        while offset < size:
            info = self._frame_from(offset - self.data_offset, head)
            p0 = info.payload_offset
            p1 = p0 + info.len_payload
            if data_only and info.level:
                head = self.source.read_range(p1, min(p1 + _FRAME_PEEK, size))
                offset = p1
                continue
            chunk = self.source.read_range(p0, min(p1 + _FRAME_PEEK, size))
            yield info, chunk[: info.len_payload]
            head = chunk[info.len_payload :]
            offset = p1

    def decode_payload(self, info: BlockInfo, payload: bytes) -> bytes:
        """The decoded body of a block: decompressed (size-capped) or CRC-checked.

        Raises:
            CorruptBlockError: The codec stream is damaged (names the block's voffset).
            BlockChecksumError: A ``none+crc32c`` body does not match its CRC-32C.
            LimitExceededError: The body would exceed ``max_block_size``.
        """
        v = info.voffset
        field = f"/blocks/@{v}/payload"
        cap = self.max_block_size
        codec = self._codec
        if codec == "none+crc32c":
            if len(payload) < 4:
                raise CorruptBlockError(f"block at {self._where(v)}: payload of {len(payload)} "
                                        "bytes has no room for its CRC-32C", voffset=v,
                                        offset=info.payload_offset, field=field)
            body = payload[:-4]
            stored = int.from_bytes(payload[-4:], "little")
            computed = _body_crc32c(body)
            if stored != computed:
                raise BlockChecksumError(v, stored, computed, offset=info.payload_offset
                                         + len(body), field=field + "/body_crc32c")
            if len(body) > cap:
                raise LimitExceededError(f"block at {self._where(v)}: body of {len(body)} bytes "
                                         f"exceeds the {cap}-byte cap", offset=info.offset,
                                         field=field)
            return body
        try:
            if codec == "zlib":
                dz = zlib.decompressobj()
                body = dz.decompress(payload, cap + 1)
                done, rest = dz.eof, dz.unused_data
            else:
                db = bz2.BZ2Decompressor()
                body = db.decompress(payload, max_length=cap + 1)
                done, rest = db.eof, db.unused_data
        except (zlib.error, OSError, ValueError, EOFError, MemoryError) as exc:
            raise CorruptBlockError(f"corrupt {self.codec} block at {self._where(v)}: {exc}",
                                    voffset=v, offset=info.payload_offset, field=field) from None
        if len(body) > cap:
            raise LimitExceededError(f"block at {self._where(v)}: decompresses to more than "
                                     f"{cap} bytes", offset=info.payload_offset, field=field)
        if not done:
            raise CorruptBlockError(f"corrupt {self.codec} block at {self._where(v)}: the "
                                    "compressed stream is cut off", voffset=v,
                                    offset=info.payload_offset, field=field)
        if rest:
            raise CorruptBlockError(f"corrupt {self.codec} block at {self._where(v)}: "
                                    f"{len(rest)} bytes after the end of the compressed stream",
                                    voffset=v, offset=info.payload_offset + len(payload)
                                    - len(rest), field=field)
        return body

    def _body_error(self, info: BlockInfo, exc: _BodyError, what: str) -> CorruptBlockError:
        offset = info.payload_offset + exc.pos if self._codec == "none+crc32c" else \
            info.payload_offset
        return CorruptBlockError(f"{what} block at {self._where(info.voffset)}: {exc} (body "
                                 f"byte {exc.pos})", voffset=info.voffset, offset=offset,
                                 field=f"/blocks/@{info.voffset}/payload/body")

    def records_of(self, info: BlockInfo, body: bytes) -> list[bytes]:
        """The records of a decoded data-block body."""
        try:
            return decode_records(body)
        except _BodyError as exc:
            raise self._body_error(info, exc, "data") from None

    def index_of(self, info: BlockInfo, body: bytes) -> IndexBlock:
        """The entries of a decoded index-block body.

        :func:`decode_index` reads it; a body it refuses is parsed with ``Zss.IndexBlockBody``,
        whose error names the field.
        """
        try:
            keys, children = decode_index(body)
        except _BodyError:
            pass
        else:
            return IndexBlock(info.voffset, info.level, tuple(keys), tuple(children))
        base = info.payload_offset if self._codec == "none+crc32c" else 0
        try:
            with kaitai_errors(prefix=f"/blocks/@{info.voffset}/payload/body", base=base):
                parsed = Zss.IndexBlockBody.from_bytes(body)
                entries = parsed.entries
                keys = tuple(e.key for e in entries)
                children = tuple(e.child_voffset.value for e in entries)
        except ShardkitError as exc:
            offset = exc.offset if self._codec == "none+crc32c" else info.payload_offset
            raise CorruptBlockError(f"index block at {self._where(info.voffset)}: "
                                    f"{exc.message}", voffset=info.voffset, offset=offset,
                                    field=exc.field) from None
        return IndexBlock(info.voffset, info.level, keys, children)

    def _cached(self, voffset: int, level: int | None = None) -> tuple[BlockInfo, Any]:
        """Decoded block at ``voffset`` through the LRU caches: (info, _DataBlock or IndexBlock).

        A data block found in the cache gets its record positions (:meth:`_DataBlock.index`).
        """
        hit = self._index_cache.get(voffset)
        cache = self._index_cache
        if hit is None:
            hit = self._cache.get(voffset)
            cache = self._cache
        if hit is not None:
            cache.move_to_end(voffset)
            info, value = hit
            if level is not None and info.level != level:
                self._level_error(info, level)
            if info.level == 0 and value.heads is None:
                try:
                    value.index()
                except _BodyError as exc:
                    raise self._body_error(info, exc, "data") from None
            return hit
        info = self.frame(voffset)
        if level is not None and info.level != level:
            self._level_error(info, level)
        body = self.decode_payload(info, self._payload(info))
        if info.level == 0:
            value: Any = _DataBlock(info, body)
            cache, size = self._cache, self.cache_blocks
        else:
            value = self.index_of(info, body)
            cache, size = self._index_cache, self.cache_index_blocks
        if size:
            cache[voffset] = (info, value)
            if len(cache) > size:
                cache.popitem(last=False)
        return info, value

    def _level_error(self, info: BlockInfo, level: int) -> None:
        raise LayoutError(f"block at {self._where(info.voffset)} has level {info.level}, its "
                          f"parent expects {level}", offset=info.offset,
                          field=f"/blocks/@{info.voffset}/level")

    def index_block(self, voffset: int) -> IndexBlock:
        """The decoded index block at ``voffset``."""
        info, value = self._cached(voffset)
        if info.level == 0:
            raise LayoutError(f"block at {self._where(voffset)} is a data block, not an index "
                              "block", offset=info.offset, field=f"/blocks/@{voffset}/level")
        return value

    @property
    def root_block(self) -> IndexBlock:
        """The root index block."""
        return self.index_block(self.root)

    # -- iteration -----------------------------------------------------------------------------

    def iter_blocks(self, voffset: int = 0) -> Iterator[tuple[BlockInfo, bytes]]:
        """(framing, decoded body) of every block from ``voffset`` on, in file order."""
        for info, payload in self._frames(voffset):
            yield info, self.decode_payload(info, payload)

    def _data_bodies(self, voffset: int = 0, readahead: int = 0) -> Iterator[list[bytes]]:
        """Record lists of the data blocks from ``voffset`` on (index blocks skipped).

        With ``readahead`` and a compressing codec, up to that many payloads are decompressed
        ahead in worker threads (zlib and bz2 release the GIL), so memory stays bounded.
        """
        frames = self._frames(voffset, data_only=True)
        if not readahead or self._codec == "none+crc32c":
            for info, payload in frames:
                yield self.records_of(info, self.decode_payload(info, payload))
            return
        pool = ThreadPoolExecutor(max_workers=readahead, thread_name_prefix="zss-inflate")
        pending: list[tuple[BlockInfo, Future[bytes]]] = []
        try:
            for info, payload in frames:
                pending.append((info, pool.submit(self.decode_payload, info, payload)))
                if len(pending) > readahead:
                    first, fut = pending.pop(0)
                    yield self.records_of(first, fut.result())
            for info, fut in pending:
                yield self.records_of(info, fut.result())
        finally:
            for _, fut in pending:
                fut.cancel()
            pool.shutdown(wait=True)

    def __iter__(self) -> Iterator[bytes]:
        """Every record in order, streaming block by block (constant memory)."""
        return itertools.chain.from_iterable(self._data_bodies(0, self.readahead))

    def _descend(self, key: bytes) -> tuple[_DataBlock, bytes | None] | None:
        """The data block where records >= ``key`` begin, and the first key after it.

        At each index level the last entry whose key is < ``key`` is taken (so a run of
        duplicates of ``key`` that starts in an earlier block is found too; FORMAT.md section
        9). The first record >= ``key`` is then in that block or is the first record of the
        next data block, whose first record is the entry key after the one taken at the
        deepest level that has one (``None``: the block is the last one). ``None`` for a file
        with no records.
        """
        v = self.root
        level: int | None = None
        after: bytes | None = None
        while True:
            info, value = self._cached(v, level)
            if info.level == 0:
                return value, after
            block: IndexBlock = value
            if not block.children:
                if v == self.root:
                    return None  # an empty file: the root index has no entries
                raise LayoutError(f"index block at {self._where(v)} has no entries",
                                  offset=info.offset, field=f"/blocks/@{v}/payload")
            i = max(bisect_left(block.keys, key) - 1, 0)
            if i + 1 < len(block.keys):
                after = block.keys[i + 1]
            v = block.children[i]
            level = info.level - 1

    def _range(self, lo: bytes, hi: bytes | None, prefix: bool = False) -> Iterator[bytes]:
        """Records ``r`` with ``lo <= r < hi`` in order (``hi`` None: to the end).

        With ``prefix``, every record in the range starts with ``lo`` (``hi`` is at most
        ``prefix_successor(lo)``), so the first one is located with :meth:`_DataBlock.find_prefix`.
        Reads the index path, one data block, and the following data blocks only while records
        in the range remain (the index keys say whether the next block starts in the range).
        """
        found = self._descend(lo)
        if found is None:
            return
        block, after = found
        try:
            p = block.find_prefix(lo) if prefix else block.lower_bound(lo)
        except _BodyError as exc:
            raise self._body_error(block.info, exc, "data") from None
        if p is not None and not (yield from self._emit(block, p, hi)):
            return
        if after is None or (hi is not None and after >= hi):
            return
        frames = self._frames(block.info.end_voffset, data_only=True)
        item = next(frames, None)
        if item is None:
            return
        # the next block is decoded lazily too: a run of a few matches that crosses into it
        # costs a few records, not a whole decoded block
        if not (yield from self._emit(_DataBlock(item[0], self.decode_payload(*item)), 0, hi)):
            return
        for info, payload in frames:  # a long range: whole blocks
            records = self.records_of(info, self.decode_payload(info, payload))
            if hi is not None and records and records[-1] >= hi:
                yield from records[:bisect_left(records, hi)]
                return
            yield from records

    def _emit(self, block: _DataBlock, p: int, hi: bytes | None
              ) -> Generator[bytes, None, bool]:
        """Records of ``block`` from the length field at ``p`` while < ``hi``.

        The first few are decoded one by one; a longer run decodes the rest of the block at
        once. Returns True when the block ran out before ``hi``.
        """
        b = block.body
        n = len(b)
        try:
            for _ in range(16):
                if p >= n:
                    return True
                r, p = block.record_at(p)
                if hi is not None and r >= hi:
                    return False
                yield r
            if p >= n:
                return True
            try:
                records = decode_records(b[p:])
            except _BodyError as exc:
                raise _BodyError(str(exc), exc.pos + p) from None
        except _BodyError as exc:
            raise self._body_error(block.info, exc, "data") from None
        if hi is not None and records and records[-1] >= hi:
            yield from records[:bisect_left(records, hi)]
            return False
        yield from records
        return True

    def iter(self, start: bytes | None = None, stop: bytes | None = None) -> Iterator[bytes]:
        """Records ``r`` with ``start <= r < stop`` (either bound optional), in order."""
        if start is not None:
            yield from self._range(_record(start, "bound"),
                                   None if stop is None else _record(stop, "bound"))
            return
        if stop is None:
            yield from self
            return
        stop = _record(stop, "bound")
        for r in self:
            if r >= stop:
                return
            yield r

    def search(self, prefix: bytes | None = None, start: bytes | None = None,
               stop: bytes | None = None) -> Iterator[bytes]:
        """Records starting with ``prefix`` and within ``[start, stop)``, in order.

        Duplicates are all returned (the file is a multiset). Only the index blocks on the path
        to the first match and the data blocks holding matches are read (a data block after the
        last match is read only when the index does not show that the run ended).
        """
        if prefix is None:
            return self.iter(start, stop)
        prefix = _record(prefix, "prefix")
        start = None if start is None else _record(start, "bound")
        stop = None if stop is None else _record(stop, "bound")
        lo = prefix if start is None or start < prefix else start
        succ = prefix_successor(prefix)
        hi = succ if stop is None or (succ is not None and succ < stop) else stop
        # every record in [lo, hi) starts with prefix (prefix <= lo, hi <= succ)
        return self._range(lo, hi, prefix=lo == prefix)

    def keys(self, prefix: bytes | None = None, start: bytes | None = None,
             stop: bytes | None = None) -> Iterator[bytes]:
        """What ``shardkit ls`` lists: the records, filtered as :meth:`search` does."""
        return self.search(prefix=prefix, start=start, stop=stop)

    def count(self, prefix: bytes | None = None, start: bytes | None = None,
              stop: bytes | None = None) -> int:
        """Number of records :meth:`search` would give."""
        return sum(1 for _ in self.search(prefix, start, stop))

    def __len__(self) -> int:
        """Number of records (one streaming pass on first use, then remembered)."""
        if self._len is None:
            self._len = sum(len(b) for b in self._data_bodies(0, self.readahead))
        return self._len

    def __contains__(self, record: object) -> bool:
        if not isinstance(record, (bytes, bytearray, memoryview, str)):
            return False
        record = _record(record)
        return next(self._range(record, record + b"\x00", prefix=True), None) is not None

    def __getitem__(self, record: bytes) -> bytes:
        """The record itself when present (a set has no values); else EntryNotFoundError."""
        record = _record(record)
        if record in self:
            return record
        raise EntryNotFoundError(record, f"record not found: {_escape(record)!r}")

    def parse_key(self, text: str) -> bytes:
        """A record from the command line: ``hex:...``, or text with backslash escapes."""
        if text.startswith("hex:"):
            try:
                return bytes.fromhex(text[4:])
            except ValueError as exc:
                raise ShardkitError(f"not hex: {text!r}") from exc
        try:
            return _codecs.escape_decode(text.encode("utf-8"))[0]  # type: ignore[attr-defined]
        except ValueError as exc:
            raise ShardkitError(f"bad escape in {text!r}: {exc}") from exc

    def format_key(self, key: bytes, hex: bool = False) -> str:
        """A record's display form: escaped text (``\\xNN`` for other bytes), or hex."""
        return key.hex() if hex else _escape(key)

    # -- structure -----------------------------------------------------------------------------

    def _survey(self) -> list[dict[str, Any]]:
        """One row per block in file order: framing, body size, items, first item."""
        rows = []
        for info, body in self.iter_blocks(0):
            if info.level == 0:
                items = self.records_of(info, body)
                first = items[0] if items else None
                n = len(items)
            else:
                ib = self.index_of(info, body)
                first = ib.keys[0] if ib.keys else None
                n = len(ib.keys)
            rows.append({"voffset": info.voffset, "offset": info.offset, "level": info.level,
                         "size": info.size, "len_payload": info.len_payload,
                         "len_body": len(body), "items": n, "first": first})
        return rows

    def summary(self) -> dict[str, Any]:
        """What ``shardkit info`` shows (decodes every block once)."""
        rows = self._survey()
        per_level: dict[int, int] = {}
        for r in rows:
            per_level[r["level"]] = per_level.get(r["level"], 0) + 1
        records = sum(r["items"] for r in rows if r["level"] == 0)
        self._len = records
        root_level = next((r["level"] for r in rows if r["voffset"] == self.root), None)
        return {
            "format": self.format_id,
            "format_name": self.format_name,
            "file": self.source.name,
            "file_size": self.source.size,
            "codec": self.codec,
            "uuid": self.uuid.hex(),
            "metadata": self.metadata,
            "header": self.header.to_dict(),
            "root_voffset": self.root,
            "root_level": root_level,
            "levels": root_level + 1,
            "blocks": len(rows),
            "data_blocks": per_level.get(0, 0),
            "index_blocks": len(rows) - per_level.get(0, 0),
            "blocks_per_level": {str(k): v for k, v in sorted(per_level.items())},
            "record_count": records,
            "record_bytes_decoded": sum(r["len_body"] for r in rows if r["level"] == 0),
        }

    def sections(self) -> list[Section]:
        """Byte layout: magic, header, CRC, then every block (level, voffset, sizes, first key)."""
        n = self.header.header_length
        out = [
            Section("/magic", 0, 8, "ZSS v1"),
            Section("/len_header", 8, 12, f"u32le = {n}"),
            Section("/header", 12, 12 + n, f"root voffset {self.root}, codec {self.codec}, "
                    f"{len(self.header.metadata_json)} bytes of metadata"),
            Section("/header_crc32c", 12 + n, 16 + n, f"CRC-32C {self.header.header_crc32c:08x}"),
        ]
        for r in self._survey():
            kind = "data" if r["level"] == 0 else "index"
            first = None if r["first"] is None else _escape(r["first"][:64])
            root = ", root" if r["voffset"] == self.root else ""
            out.append(Section(
                f"/blocks/@{r['voffset']}", r["offset"], r["offset"] + r["size"],
                f"level {r['level']} {kind}{root}, voffset {r['voffset']}, payload "
                f"{r['len_payload']} -> body {r['len_body']} bytes, {r['items']} "
                f"{'records' if kind == 'data' else 'entries'}, first "
                + ("none" if first is None else f'"{first}"'),
                extra={"level": r["level"], "kind": kind, "voffset": r["voffset"],
                       "is_root": r["voffset"] == self.root, "len_payload": r["len_payload"],
                       "len_body": r["len_body"], "items": r["items"],
                       "first_key": None if r["first"] is None else r["first"].hex()}))
        return out

    def to_dict(self) -> dict[str, Any]:
        """Summary, layout and every block with its records or index entries (hex)."""
        out = self.summary()
        out["sections"] = [s.to_dict() for s in self.sections()]
        blocks = []
        for info, body in self.iter_blocks(0):
            row: dict[str, Any] = {"voffset": info.voffset, "level": info.level,
                                   "len_payload": info.len_payload, "len_body": len(body)}
            if info.level == 0:
                row["records"] = [r.hex() for r in self.records_of(info, body)]
            else:
                ib = self.index_of(info, body)
                row["entries"] = [{"key": k.hex(), "child_voffset": c}
                                  for k, c in zip(ib.keys, ib.children, strict=True)]
            blocks.append(row)
        out["blocks_detail"] = blocks
        return out

    # -- verification --------------------------------------------------------------------------

    def verify(self, progress: Callable[[int, int], None] | None = None) -> list[Problem]:
        """fsck: every check of the reference ``fsck()`` and more; returns the problems found.

        Pass 1 reads every block from voffset 0 to the end of the file: framing (minimal
        uleb128, payload inside the file), the codec stream or CRC-32C, the body grammar
        (minimal uleb128s, no overrun), records sorted within and across data blocks, index
        keys sorted and child voffsets strictly increasing, and at each level a block's first
        item not below the previous block's last. Pass 2 walks the tree from the root: every
        child is the start of a block, one level below its parent, referenced once, and its
        entry's key equals the first record of its subtree. Pass 3: every block is reachable.

        Args:
            progress: Called as ``progress(bytes_done, bytes_total)`` during pass 1.
        """
        problems: list[Problem] = []
        total = self.data_size

        def add(check: str, voffset: int | None, message: str, field: str | None = None,
                offset: int | None = None) -> None:
            where = "" if voffset is None else f"block at {self._where(voffset)}: "
            if offset is None and voffset is not None:
                offset = self.data_offset + voffset
            problems.append(Problem(check, where + message, offset, field))

        blocks: dict[int, tuple[int, bytes | None, bytes | None]] = {}  # v -> level, first, last
        index: dict[int, IndexBlock] = {}
        last_at_level: dict[int, bytes] = {}
        frames = self._frames(0)
        while True:
            try:
                item = next(frames, None)
            except ShardkitError as exc:
                add("framing", None, exc.message, exc.field, exc.offset)
                break
            if item is None:
                break
            info, payload = item
            v = info.voffset
            if progress is not None:
                progress(v, total)
            blocks[v] = (info.level, None, None)
            try:
                body = self.decode_payload(info, payload)
            except ChecksumError as exc:
                add("checksum", v, f"body CRC-32C mismatch: stored {exc.stored:#010x}, "
                    f"computed {exc.computed:#010x}", exc.field, exc.offset)
                continue
            except ShardkitError as exc:
                add("codec", v, exc.message.split(": ", 1)[-1], exc.field, exc.offset)
                continue
            try:
                if info.level == 0:
                    items = self.records_of(info, body)
                else:
                    ib = self.index_of(info, body)
                    index[v] = ib
                    items = list(ib.keys)
                    ch = ib.children
                    for j in range(1, len(ch)):
                        if ch[j] <= ch[j - 1]:
                            add("index_order", v, f"child voffsets not strictly increasing at "
                                f"entry {j}: {ch[j - 1]} then {ch[j]}",
                                f"/blocks/@{v}/payload/body/entries/{j}/child_voffset")
                            break
            except ShardkitError as exc:
                add("body", v, exc.message, exc.field, exc.offset)
                continue
            if not items:
                if info.level and v == self.root:
                    continue  # an empty set: the root index has no entries
                add("empty_block", v, f"level {info.level} block with no "
                    f"{'records' if info.level == 0 else 'entries'}")
                continue
            what = "records" if info.level == 0 else "index keys"
            for j in range(1, len(items)):
                if items[j] < items[j - 1]:
                    add("order", v, f"{what} out of order at item {j}: "
                        f"{_escape(items[j - 1][:40])!r} then {_escape(items[j][:40])!r}",
                        f"/blocks/@{v}/payload/body")
                    break
            prev = last_at_level.get(info.level)
            if prev is not None and items[0] < prev:
                add("order", v, f"first {what[:-1]} {_escape(items[0][:40])!r} is below the "
                    f"last one of the previous level-{info.level} block "
                    f"{_escape(prev[:40])!r}", f"/blocks/@{v}/payload/body")
            last_at_level[info.level] = items[-1]
            blocks[v] = (info.level, items[0], items[-1])
        if progress is not None:
            progress(total, total)

        # pass 2: the tree
        seen: set[int] = set()
        if self.root not in blocks:
            add("root", None, f"root voffset {self.root} is not the start of a block",
                "/header/root_voffset", 12)
        elif blocks[self.root][0] == 0:
            add("root", self.root, "the root is a data block (it must be an index block)",
                "/header/root_voffset", 12)
        else:
            seen.add(self.root)
            stack = [self.root]
            while stack:
                v = stack.pop()
                ib = index.get(v)
                if ib is None:
                    continue  # undecodable, already reported
                level = blocks[v][0]
                for j, (key, child) in enumerate(zip(ib.keys, ib.children, strict=True)):
                    field = f"/blocks/@{v}/payload/body/entries/{j}"
                    if child not in blocks:
                        add("child", v, f"entry {j} points to voffset {child}, which is not "
                            "the start of a block", field + "/child_voffset")
                        continue
                    if child in seen:
                        add("child", v, f"entry {j}: block at voffset {child} is referenced "
                            "more than once", field + "/child_voffset")
                        continue
                    seen.add(child)
                    clevel, cfirst, _ = blocks[child]
                    if clevel != level - 1:
                        add("level", v, f"entry {j}: child at voffset {child} has level "
                            f"{clevel}, expected {level - 1}", field + "/child_voffset")
                        continue
                    if cfirst is not None and key != cfirst:
                        add("index_key", v, f"entry {j}: key {_escape(key[:40])!r} is not the "
                            f"first record under child {child} ({_escape(cfirst[:40])!r})",
                            field + "/key")
                    if clevel > 0:
                        stack.append(child)
        # pass 3: reachability
        for v, (level, _, _) in blocks.items():
            if v not in seen:
                add("unreachable", v, f"level {level} block is not reachable from the root")
        return problems
