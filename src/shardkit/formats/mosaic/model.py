"""MOSAIC's constants, EBML framing and plain records (see :mod:`shardkit.formats.mosaic`)."""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass, field
from typing import Any

from ...errors import InvalidKeyError, LayoutError, LimitExceededError, TruncatedError

__all__ = ["EBML_ID", "ELEMENT_NAMES", "KINDS", "Element", "IndexKind", "MosaicIndex",
           "MosaicMeta", "content_key", "crc32_le", "element_at", "read_uint", "read_vint"]

# Element IDs (marker bits kept, as written), from swh-mosaic's schema.ebml.xml / RFC 8794.
EBML_ID = 0x1A45DFA3
EBML_VERSION = 0x4286
EBML_READ_VERSION = 0x42F7
EBML_MAX_ID_LENGTH = 0x42F2
EBML_MAX_SIZE_LENGTH = 0x42F3
DOC_TYPE = 0x4282
DOC_TYPE_VERSION = 0x4287
DOC_TYPE_READ_VERSION = 0x4285
CRC32 = 0xBF
VOID = 0xEC
MOSAIC = 0x1C535748
CONTAINER_META_DATA = 0x1D535748
OBJECTS_COUNTER = 0x5000
OBJECTS_TOTAL_SIZE = 0x5001
COMPRESSION_METHOD = 0x5002
COMPRESSION_DATA = 0x5003
COMMENT = 0x5004
END_OF_TILES_OFFSET = 0x5099
TILE = 0x1E535748
OBJECT = 0xF0
INDEX = 0x1F535748
IDX_DESCRIPTION = 0x6001
IDX_UNROLLED = 0x6002
KEY = 0xA0
OFFSET = 0xA1
GO_TO_CONFLICTS = 0xA2
IDX_UNROLLED_ENTRY_SIZE = 0x6003
MAP_CONTAINER = 0x6004
MAP = 0x6005
CONFLICTS = 0x6010
CONFLICT = 0x6011
CONFLICTING_KEY = 0x6012
CONFLICTING_OFFSET = 0x6013

ELEMENT_NAMES = {
    EBML_ID: "EBML", EBML_VERSION: "EBMLVersion", EBML_READ_VERSION: "EBMLReadVersion",
    EBML_MAX_ID_LENGTH: "EBMLMaxIDLength", EBML_MAX_SIZE_LENGTH: "EBMLMaxSizeLength",
    DOC_TYPE: "DocType", DOC_TYPE_VERSION: "DocTypeVersion",
    DOC_TYPE_READ_VERSION: "DocTypeReadVersion", CRC32: "CRC-32", VOID: "Void",
    MOSAIC: "Mosaic", CONTAINER_META_DATA: "ContainerMetaData",
    OBJECTS_COUNTER: "ObjectsCounter", OBJECTS_TOTAL_SIZE: "ObjectsTotalSize",
    COMPRESSION_METHOD: "CompressionMethod", COMPRESSION_DATA: "CompressionData",
    COMMENT: "Comment", END_OF_TILES_OFFSET: "EndOfTilesOffset", TILE: "Tile", OBJECT: "Object",
    INDEX: "Index", IDX_DESCRIPTION: "IdxDescription", IDX_UNROLLED: "IdxUnrolled", KEY: "Key",
    OFFSET: "Offset", GO_TO_CONFLICTS: "GoToConflicts",
    IDX_UNROLLED_ENTRY_SIZE: "IdxUnrolledEntrySize", MAP_CONTAINER: "MapContainer", MAP: "Map",
    CONFLICTS: "Conflicts", CONFLICT: "Conflict", CONFLICTING_KEY: "ConflictingKey",
    CONFLICTING_OFFSET: "ConflictingOffset",
}
MASTERS = frozenset({EBML_ID, MOSAIC, CONTAINER_META_DATA, TILE, INDEX, IDX_UNROLLED,
                     MAP_CONTAINER, CONFLICTS, CONFLICT})

DOCTYPE = "mosaic"
#: The DocTypeReadVersion this reader implements (swh-mosaic 0.6.1 writes 1).
READ_VERSION = 1
#: A CRC-32 element: ID, size VINT 0x84, 4 bytes.
CRC32_ELEMENT_SIZE = 6
#: Bytes of the file read on open: the EBML header, ContainerMetaData and, for small files,
#: everything (a remote file's first request).
HEAD_READ = 64 << 10
#: Largest decompressed object (a zstd frame claiming more is refused), unless the reader is
#: given ``max_object_size``; swh-mosaic's own limit at its default tile threshold is 268 MB.
MAX_OBJECT_SIZE = 1 << 30
#: Bytes of the description-carrying start of an Index read to list the indexes.
INDEX_INTRO = 512

_FMPH_PREFIX = " pkg:cargo/ph@0.10.0 swh:1:dir:795095368f036f42adebcb75782a61494940e9b8 "


@dataclass(frozen=True)
class IndexKind:
    """A key kind of MOSAIC indexes (swh-mosaic's ``IdxDescription``).

    Attributes:
        name: SWH ``HashDict`` name (``sha1``, ``sha1_git``, ``sha256``, ``blake2s256``).
        reference: swh-mosaic's enum member (``SHA1FMPHGO``...).
        key_len: Key length in bytes.
        description: The ``IdxDescription`` string swh-mosaic 0.6.1 writes.
    """

    name: str
    reference: str
    key_len: int

    @property
    def description(self) -> str:
        return f"key:{self.name}{_FMPH_PREFIX}ph::fmph::GOFunction"


KINDS: dict[str, IndexKind] = {k.name: k for k in (
    IndexKind("sha1", "SHA1FMPHGO", 20),
    IndexKind("sha1_git", "SHA1GITFMPHGO", 20),
    IndexKind("sha256", "SHA256FMPHGO", 32),
    IndexKind("blake2s256", "BLAKE2FMPHGO", 32),
)}
KIND_OF_DESCRIPTION = {k.description: k for k in KINDS.values()}


def kind_of_description(text: str) -> IndexKind | None:
    """The kind an ``IdxDescription`` names: swh-mosaic's exact strings, or any
    ``key:NAME ... ph::fmph::GOFunction`` naming a known key (the schema's enum spells them
    with other SWHIDs)."""
    kind = KIND_OF_DESCRIPTION.get(text)
    if kind is not None:
        return kind
    head, _, _ = text.partition(" ")
    if head.startswith("key:") and "pkg:cargo/ph@" in text:
        return KINDS.get(head[4:])
    return None


def content_key(kind: str, data: bytes) -> bytes:
    """The key an index of ``kind`` gives ``data`` (git's blob hash for ``sha1_git``)."""
    if kind == "sha1_git":
        h = hashlib.sha1(b"blob %d\x00" % len(data))
        h.update(data)
        return h.digest()
    return hashlib.new(kind, data).digest()


def normalize_key(key: object, key_len: int | None = None) -> bytes:
    """A key as bytes: bytes-like, or hex text; ``InvalidKeyError`` otherwise."""
    if isinstance(key, (bytes, bytearray, memoryview)):
        out = bytes(key)
    elif isinstance(key, str):
        try:
            out = bytes.fromhex(key)
        except ValueError:
            raise InvalidKeyError(f"not a hex key: {key!r}") from None
    else:
        raise InvalidKeyError(f"a MOSAIC key is bytes or hex text, not {type(key).__name__}")
    if key_len is not None and len(out) != key_len:
        raise InvalidKeyError(f"key of {len(out)} bytes; this index's keys are {key_len} bytes")
    return out


def crc32_le(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32 (IEEE, zlib's) of ``data``, continuing from ``value``."""
    return zlib.crc32(data, value)


def read_vint(buf: bytes, pos: int, base: int = 0, what: str = "size") -> tuple[int, int]:
    """``(value, length)`` of the VINT at ``buf[pos]`` (marker removed); ``base`` is the file
    offset of ``buf[0]``, for errors.

    All ones is RFC 8794's "unknown size", but swh-mosaic 0.6.1 writes it for a size of
    2**(7n)-1 (an object of 127 bytes has the size ``ff``) and reads it as that number: so
    does this reader."""
    if pos >= len(buf):
        raise TruncatedError(f"truncated: element {what} needs 1 byte, none remain", needed=1,
                             available=0, offset=base + pos)
    b0 = buf[pos]
    if b0 == 0:
        raise LayoutError(f"bad EBML VINT: first byte 0x00 (an element {what} of more than 8 "
                          "bytes)", offset=base + pos)
    n = 9 - b0.bit_length()
    if pos + n > len(buf):
        raise TruncatedError(f"truncated: element {what} needs {n} bytes, "
                             f"{len(buf) - pos} remain", needed=n, available=len(buf) - pos,
                             offset=base + pos)
    value = b0 & (0xFF >> n)
    if n > 1:
        value = (value << (8 * (n - 1))) | int.from_bytes(buf[pos + 1:pos + n], "big")
    return value, n


def read_id(buf: bytes, pos: int, base: int = 0) -> tuple[int, int]:
    """``(id, length)`` of the element ID at ``buf[pos]`` (marker kept; 1 to 4 bytes)."""
    if pos >= len(buf):
        raise TruncatedError("truncated: element ID needs 1 byte, none remain", needed=1,
                             available=0, offset=base + pos)
    b0 = buf[pos]
    if b0 < 0x10:
        raise LayoutError(f"bad EBML element ID: first byte {b0:#04x} (IDs are 1 to 4 bytes)",
                          offset=base + pos)
    n = 9 - b0.bit_length()
    if pos + n > len(buf):
        raise TruncatedError(f"truncated: element ID needs {n} bytes, {len(buf) - pos} remain",
                             needed=n, available=len(buf) - pos, offset=base + pos)
    return int.from_bytes(buf[pos:pos + n], "big"), n


def read_uint(data: bytes, offset: int = 0, name: str = "integer") -> int:
    """An EBML unsigned integer element's data (0 to 8 bytes, big-endian)."""
    if len(data) > 8:
        raise LayoutError(f"{name} of {len(data)} bytes (EBML integers are at most 8)",
                          offset=offset)
    return int.from_bytes(data, "big")


@dataclass(frozen=True)
class Element:
    """One EBML element's framing.

    Attributes:
        id: Element ID (marker kept).
        start: Offset of the ID's first byte.
        data_start: Offset of the data.
        size: Data size in bytes.
    """

    id: int
    start: int
    data_start: int
    size: int

    @property
    def end(self) -> int:
        """One past the data's last byte."""
        return self.data_start + self.size

    @property
    def name(self) -> str:
        """The element's name (``Tile``), or its ID in hex when unknown."""
        return ELEMENT_NAMES.get(self.id, f"0x{self.id:X}")


def element_at(buf: bytes, pos: int, base: int = 0, limit: int | None = None,
               field: str | None = None) -> Element:
    """The element whose ID starts at ``buf[pos]``; its data must end by ``limit`` (an absolute
    offset; ``base + len(buf)`` by default)."""
    eid, n = read_id(buf, pos, base)
    size, m = read_vint(buf, pos + n, base)
    name = ELEMENT_NAMES.get(eid, f"0x{eid:X}")
    data_start = base + pos + n + m
    end = base + len(buf) if limit is None else limit
    if data_start + size > end:
        raise TruncatedError(f"{name} element of {size} bytes at byte {base + pos} ends at "
                             f"{data_start + size}, past its container's end {end}",
                             needed=size, available=max(0, end - data_start),
                             offset=base + pos, field=field)
    return Element(eid, base + pos, data_start, size)


def children(buf: bytes, base: int, start: int, end: int,
             field: str | None = None) -> list[Element]:
    """The elements of ``[start, end)`` (absolute offsets, held in ``buf`` from ``base``)."""
    out = []
    pos = start
    while pos < end:
        el = element_at(buf, pos - base, base, end, field)
        out.append(el)
        pos = el.end
    return out


@dataclass
class MosaicMeta:
    """The EBML header and ``ContainerMetaData``.

    Attributes:
        doc_type_version: DocTypeVersion.
        doc_type_read_version: DocTypeReadVersion.
        root_start: Offset of the ``Mosaic`` root element.
        root_data: Offset of its data.
        root_end: One past its data.
        meta_start: Offset of ``ContainerMetaData``.
        meta_end: One past its data.
        crc_stored: Its CRC-32 as stored.
        crc_computed: Its CRC-32 as computed.
        objects_counter: ObjectsCounter.
        objects_total_size: ObjectsTotalSize (uncompressed bytes).
        end_of_tiles_offset: EndOfTilesOffset.
        compression: CompressionMethod (``none``, ``zstd``, ``zstd.dict``).
        compression_data: CompressionData (the zstd dictionary), if any.
        comments: The Comment elements.
    """

    doc_type_version: int
    doc_type_read_version: int
    root_start: int
    root_data: int
    root_end: int
    meta_start: int
    meta_end: int
    crc_stored: int | None
    crc_computed: int
    objects_counter: int
    objects_total_size: int
    end_of_tiles_offset: int
    compression: str
    compression_data: bytes | None
    comments: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return {"doc_type_version": self.doc_type_version,
                "doc_type_read_version": self.doc_type_read_version,
                "objects_counter": self.objects_counter,
                "objects_total_size": self.objects_total_size,
                "end_of_tiles_offset": self.end_of_tiles_offset,
                "compression": self.compression,
                "compression_data_size": (None if self.compression_data is None
                                          else len(self.compression_data)),
                "comments": list(self.comments)}


@dataclass
class MosaicIndex:
    """One ``Index`` element, as far as it has been read.

    Attributes:
        kind: Key kind (``sha256``...), or None for an unknown description.
        description: The IdxDescription text.
        start: Offset of the Index element.
        data_start: Offset of its data.
        end: One past its data.
        unrolled_start: Offset of the IdxUnrolled data (its first entry).
        unrolled_size: Size of the IdxUnrolled data.
        entry_size: IdxUnrolledEntrySize (0 until the index's tail is read).
        map_start: Offset of the Map data (the serialized FMPH-GO function).
        map_size: Its size.
        conflicts_start: Offset of the Conflicts data, or -1.
        conflicts_size: Its size.
    """

    kind: str | None
    description: str
    start: int
    data_start: int
    end: int
    unrolled_start: int
    unrolled_size: int
    entry_size: int = 0
    map_start: int = -1
    map_size: int = 0
    conflicts_start: int = -1
    conflicts_size: int = 0

    @property
    def key_len(self) -> int:
        """Key length of this index's kind (0 when unknown)."""
        return KINDS[self.kind].key_len if self.kind in KINDS else 0

    @property
    def num_entries(self) -> int:
        """Entries of IdxUnrolled (deleted ones included)."""
        return self.unrolled_size // self.entry_size if self.entry_size else 0

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return {"kind": self.kind, "description": self.description, "start": self.start,
                "end": self.end, "entries": self.num_entries, "entry_size": self.entry_size,
                "map_size": self.map_size,
                "conflicts": self.conflicts_start >= 0}


class Decoder:
    """Decodes stored objects: nothing, zstd, or zstd with the file's dictionary; the output
    of one object is capped at ``cap`` bytes."""

    def __init__(self, method: str, dictionary: bytes | None, cap: int) -> None:
        self.method = method
        self.cap = cap
        self._dctx: Any = None
        if method != "none":
            import zstandard

            self._zstd = zstandard
            zd = (zstandard.ZstdCompressionDict(dictionary) if method == "zstd.dict"
                  and dictionary is not None else None)
            self._dctx = zstandard.ZstdDecompressor(dict_data=zd)

    def decode(self, raw: bytes, offset: int | None = None) -> bytes:
        """The object stored as ``raw`` (at ``offset``, for errors)."""
        if self._dctx is None:
            return raw
        zstandard = self._zstd
        try:
            size = zstandard.frame_content_size(raw)
        except zstandard.ZstdError as exc:
            raise LayoutError(f"bad zstd object ({exc})", offset=offset,
                              field="/Object") from None
        if size > self.cap:
            raise LimitExceededError(f"object declares {size} decompressed bytes, more than "
                                     f"max_object_size {self.cap}", offset=offset,
                                     field="/Object")
        if size >= 0:  # one frame that says its size: the common case
            try:
                # _dctx is held as Any (None until first use); an ignore costs nothing per object
                return self._dctx.decompress(raw, allow_extra_data=False)  # type: ignore[no-any-return]  # see the note above
            except zstandard.ZstdError:
                pass  # several frames, or a bad one: the streaming path says which
        return self._stream(raw, offset)

    def _stream(self, raw: bytes, offset: int | None) -> bytes:
        """Frame after frame, fed 1 KiB at a time so that the output is checked against the cap
        as it grows (a zstd block is at most 128 KiB)."""
        zstandard = self._zstd
        parts: list[bytes] = []
        total = 0
        data = memoryview(raw)
        try:
            while data:
                dobj = self._dctx.decompressobj()
                pos = 0
                while not dobj.eof and pos < len(data):
                    chunk = dobj.decompress(data[pos:pos + 1024])
                    pos += 1024
                    total += len(chunk)
                    if total > self.cap:
                        raise LimitExceededError(
                            f"object decompresses to more than max_object_size {self.cap} "
                            "bytes", offset=offset, field="/Object")
                    parts.append(chunk)
                if not dobj.eof:
                    raise LayoutError(f"truncated zstd frame in an object of {len(raw)} bytes",
                                      offset=offset, field="/Object")
                data = memoryview(dobj.unused_data + bytes(data[pos:]))
        except zstandard.ZstdError as exc:
            raise LayoutError(f"bad zstd object ({exc})", offset=offset,
                              field="/Object") from None
        return b"".join(parts)
