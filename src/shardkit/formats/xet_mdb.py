"""Hugging Face Xet MDB shards (xet-core / hf-xet): files, xorbs, lookups and verification.

Layout: ``schemas/xet_mdb_shard.ksy`` (generated class :class:`XetMdbShard`). This module adds
the meaning (FORMAT_NOTES.md of the shared corpus, sections 1-11):

* hashes are :class:`XetHash` values: the 32 stored bytes, shown in display hex (each 8-byte
  group byte-reversed), comparing equal to their display hex;
* a file is its reconstruction terms (xorb, chunk range), one verification (range) hash per term
  when flag bit 31 is set, and the SHA-256 of its bytes when flag bit 30 is set;
* a xorb is its chunks (hash, offset in the xorb's uncompressed data, size, flags);
* the footer (full on-disk shards only) locates three optional lookup tables and holds the
  HMAC key of keyed (global-dedup) chunk hashes, timestamps and totals.

Every variant reads: session and cache shards with lookup tables, server-stored shards without
them, footer-less upload bodies (also those whose header wrongly announces a footer), xorb-only
shards, global-dedup responses (keyed, no files) and empty files.

Hot paths read the mapped bytes directly: the record sections are walked block by block with
``struct`` (every count checked against the bytes that remain before anything is allocated),
then decoded in bulk through numpy structured views over the 48-byte records. Files are built
whole (terms, verification hashes, sha256). A xorb keeps its chunks as a read-only numpy view
of its records (:attr:`XorbInfo.chunk_records`) and builds the :class:`ChunkEntry` tuple the
first time ``xorb.chunks`` is read: a million-chunk shard parses without a million objects.
:meth:`MdbShard.find_chunk` without a chunk table searches a numpy index of the xorb section
(sorted truncated hashes, full-hash check). ``engine="kaitai"`` builds the same objects (chunks
included, eagerly) from the generated parser instead; the tests check both agree.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import functools
import os
import re
import struct
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from .._kaitai import kaitai_errors, parse
from ..errors import (
    EntryNotFoundError,
    InvalidKeyError,
    LayoutError,
    Problem,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from ..generated.xet_mdb_shard import XetMdbShard
from ..hashing import xet as xh
from ..sources import ByteSource, as_stream
from .base import Reader, Section

__all__ = [
    "BOOKEND",
    "CHUNK_DTYPE",
    "CHUNK_FLAG_GLOBAL_DEDUP",
    "FILE_FLAG_METADATA_EXT",
    "FILE_FLAG_VERIFICATION",
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "MDB_TAG",
    "NEVER_EXPIRES",
    "RECORD_DTYPE",
    "RECORD_SIZE",
    "ChunkEntry",
    "ChunkRef",
    "FileInfo",
    "MdbFooter",
    "MdbHeader",
    "MdbShard",
    "Term",
    "XetHash",
    "XorbInfo",
]

MDB_TAG = bytes.fromhex("48465265706f4d6574614461746100556967456a7b815783a5bdd95ccdd14aa9")
LEGACY_TAGS = {  # older shard generations: recognised, not read (FORMAT_NOTES section 9)
    b"HFRepoMetadata\x00": "header v1 (Oct 2024, tag HFRepoMetadata)",
    b"HFMetadataBETA": "the HFMetadataBETA tag (Oct 2024)",
    b"MerkleDB Shard\x00": "the xetdata-era MerkleDB Shard tag",
}
HEADER_VERSION = 2
FOOTER_VERSION = 1
HEADER_SIZE = 48
FOOTER_SIZE = 200
RECORD_SIZE = 48
BOOKEND = b"\xff" * 32 + bytes(16)
_BOOKEND_HASH = BOOKEND[:32]
FILE_FLAG_VERIFICATION = 0x8000_0000
FILE_FLAG_METADATA_EXT = 0x4000_0000
CHUNK_FLAG_GLOBAL_DEDUP = 0x8000_0000
GLOBAL_DEDUP_MODULUS = 1024
NEVER_EXPIRES = 2**64 - 1
_ZERO = bytes(32)

#: One 48-byte record of the file or xorb section: a hash and four u32 words.
RECORD_DTYPE = np.dtype([("hash", "V32"), ("w0", "<u4"), ("w1", "<u4"), ("w2", "<u4"),
                         ("w3", "<u4")])
#: The same record read as a chunk of the xorb section (:attr:`XorbInfo.chunk_records`).
CHUNK_DTYPE = np.dtype([("hash", "V32"), ("offset", "<u4"), ("size", "<u4"), ("flags", "<u4"),
                        ("reserved", "<u4")])
#: Only the first word of a record's hash: the truncated hash, the lookup-table key.
_KEY_DTYPE = np.dtype({"names": ["key"], "formats": ["<u8"], "offsets": [0],
                       "itemsize": RECORD_SIZE})
_LOOKUP_DTYPE = np.dtype([("key", "<u8"), ("index", "<u4")])
_CHUNK_LOOKUP_DTYPE = np.dtype([("key", "<u8"), ("xorb", "<u4"), ("chunk", "<u4")])
_FILE_HEAD = struct.Struct("<32sIIQ")
_XORB_HEAD = struct.Struct("<32sIIII")
_TERM = struct.Struct("<32sIIII")
_U64 = struct.Struct("<Q")
_NAME = re.compile(r"^([0-9a-fA-F]{64})\.mdb$")
_MISSING: Any = object()


# -- values --------------------------------------------------------------------------------------


class XetHash(bytes):
    """A xet hash: its 32 stored bytes, shown as display hex.

    ``str(h)`` is the display hex (Hub, URLs, file names, hf-xet); ``XetHash(text)`` parses it
    back; ``h == "<display hex>"`` is true (any case), as is ``h == <32 stored bytes>``. It
    hashes like its (lowercase) display hex, so ``h in {"<display hex>", ...}`` and dicts keyed
    by hashes looked up with hex text work; a dict keyed by hashes cannot be searched with raw
    bytes (wrap them: ``XetHash(raw)``). ``bytes.hex()`` still gives the stored (raw) order;
    use :attr:`display` or ``str``.
    """

    __slots__ = ()

    def __new__(cls, value: XetHash | bytes | bytearray | memoryview | str) -> XetHash:
        if type(value) is cls:
            return value
        if isinstance(value, str):
            text = value.strip()
            try:
                raw = xh.parse_display_hex(text)
            except ValueError as exc:
                raise InvalidKeyError(f"not a xet hash (64 hex digits): {value!r}") from exc
            return super().__new__(cls, raw)
        try:
            raw = bytes(value)
        except TypeError as exc:
            raise InvalidKeyError(f"not a xet hash: {value!r}") from exc
        if len(raw) != xh.HASH_LEN:
            raise InvalidKeyError(f"a xet hash is {xh.HASH_LEN} bytes, got {len(raw)}")
        return super().__new__(cls, raw)

    @property
    def display(self) -> str:
        """The display hex (what ``str`` gives)."""
        return xh.display_hex(self)

    def __str__(self) -> str:
        return xh.display_hex(self)

    def __repr__(self) -> str:
        return f"XetHash('{xh.display_hex(self)}')"

    def __format__(self, spec: str) -> str:
        return format(xh.display_hex(self), spec)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                return bytes.__eq__(self, xh.parse_display_hex(other.strip()))
            except ValueError:
                return False
        if isinstance(other, (bytes, bytearray, memoryview)):
            return bytes.__eq__(self, bytes(other))
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(xh.display_hex(self))

    @property
    def truncated(self) -> int:
        """Word 0 (stored bytes 0..8, little-endian): the lookup-table key."""
        return int.from_bytes(self[:8], "little")

    @property
    def last_word(self) -> int:
        """Word 3 (stored bytes 24..32): used by the global-dedup and merkle cut rules."""
        return int.from_bytes(self[24:32], "little")

    @property
    def is_zero(self) -> bool:
        """All 32 bytes zero (an empty file's hash, an unkeyed shard's HMAC key)."""
        return bytes.__eq__(self, _ZERO)

    def keyed(self, key: bytes) -> XetHash:
        """This (plain chunk) hash under a shard's HMAC key."""
        return XetHash(xh.keyed_chunk_hash(bytes(key), bytes(self)))


_new_hash = functools.partial(bytes.__new__, XetHash)  # bulk construction from 32 stored bytes


def _as_raw(value: XetHash | bytes | bytearray | memoryview | str) -> bytes:
    """32 stored bytes (plain ``bytes``) from a hash object, raw bytes or display hex."""
    if type(value) is bytes and len(value) == 32:
        return value
    return bytes(XetHash(value))


class Term(NamedTuple):
    """One reconstruction term of a file: chunks ``[chunk_start, chunk_end)`` of a xorb.

    Attributes:
        xorb_hash: The xorb holding the chunks.
        flags: ``cas_flags`` (0 in practice).
        unpacked_bytes: Uncompressed bytes of the term (sum of its chunks' sizes).
        chunk_start: First chunk index within the xorb.
        chunk_end: One past the last chunk index.
    """

    xorb_hash: XetHash
    flags: int
    unpacked_bytes: int
    chunk_start: int
    chunk_end: int

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return {"xorb_hash": str(self.xorb_hash), "chunk_start": self.chunk_start,
                "chunk_end": self.chunk_end, "unpacked_bytes": self.unpacked_bytes,
                "flags": self.flags}


class ChunkEntry(NamedTuple):
    """One chunk of a xorb.

    Attributes:
        hash: The stored chunk hash (keyed when the shard has an HMAC key).
        offset: Offset of the chunk in the xorb's concatenated uncompressed data.
        size: Uncompressed size in bytes.
        flags: The flags word; bit 31 marks the chunk eligible for global dedup.
        reserved: The last u32 of the record (0).
    """

    hash: XetHash
    offset: int
    size: int
    flags: int
    reserved: int = 0

    @property
    def global_dedup_flag(self) -> bool:
        """Flag bit 31 is set (a server sets it on file-start chunks)."""
        return bool(self.flags & CHUNK_FLAG_GLOBAL_DEDUP)

    @property
    def global_dedup_eligible(self) -> bool:
        """Flag bit 31, or the hash's last word divisible by 1024 (FORMAT_NOTES 7.8)."""
        return self.global_dedup_flag or self.hash.last_word % GLOBAL_DEDUP_MODULUS == 0

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return {"hash": str(self.hash), "offset": self.offset, "size": self.size,
                "flags": self.flags, "global_dedup_eligible": self.global_dedup_eligible}


# bulk construction of the NamedTuples (tuple.__new__ skips the generated __new__)
_new_term = functools.partial(tuple.__new__, Term)
_new_chunk = functools.partial(tuple.__new__, ChunkEntry)


def _runs(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ranges ``starts[i] .. starts[i] + lengths[i]`` (int64)."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    firsts = np.cumsum(lengths) - lengths
    return np.repeat(starts - firsts, lengths) + np.arange(total, dtype=np.int64)


@dataclass(frozen=True)
class FileInfo:
    """A file block: the file hash and how to rebuild the file from xorb chunks.

    Attributes:
        hash: The file hash ("Xet backed hash"); zero for an empty file.
        flags: ``file_flags`` (bit 31 verification entries, bit 30 metadata ext).
        terms: Reconstruction terms, in file order.
        verification_hashes: One range hash per term (empty without flag bit 31).
        sha256: SHA-256 of the file (display hex = the usual hexdigest), or None.
        reserved: The header's reserved u64 (0 in production).
        record_index: Index of the block's first record in the file section.
        offset: Absolute offset of the block.
    """

    hash: XetHash
    flags: int
    terms: tuple[Term, ...]
    verification_hashes: tuple[XetHash, ...]
    sha256: XetHash | None
    reserved: int = 0
    record_index: int = 0
    offset: int = 0

    @property
    def size(self) -> int:
        """Bytes of the file: the sum of its terms' sizes."""
        return sum(t.unpacked_bytes for t in self.terms)

    @property
    def num_records(self) -> int:
        """48-byte records the block takes."""
        n = len(self.terms)
        return (1 + n + (n if self.flags & FILE_FLAG_VERIFICATION else 0)
                + (1 if self.flags & FILE_FLAG_METADATA_EXT else 0))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output (hashes in display hex)."""
        return {"hash": str(self.hash), "size": self.size, "flags": self.flags,
                "terms": [t.to_dict() for t in self.terms],
                "verification_hashes": [str(h) for h in self.verification_hashes],
                "sha256": None if self.sha256 is None else str(self.sha256),
                "reserved": self.reserved, "record_index": self.record_index,
                "offset": self.offset}


def _chunks_from_records(recs: np.ndarray) -> tuple[ChunkEntry, ...]:
    """ChunkEntry objects from CHUNK_DTYPE records (column-wise: the fastest way found)."""
    return tuple(map(_new_chunk, zip(map(_new_hash, recs["hash"].tolist()),
                                     recs["offset"].tolist(), recs["size"].tolist(),
                                     recs["flags"].tolist(), recs["reserved"].tolist(),
                                     strict=True)))


def _records_from_chunks(chunks: Sequence[ChunkEntry]) -> np.ndarray:
    """CHUNK_DTYPE records of chunk objects (the inverse of :func:`_chunks_from_records`)."""
    out = np.zeros(len(chunks), CHUNK_DTYPE)
    if chunks:
        out["hash"] = np.frombuffer(b"".join(_as_raw(c.hash) for c in chunks), "V32")
        for name in ("offset", "size", "flags", "reserved"):
            out[name] = [getattr(c, name, 0) for c in chunks]
    return out


class _LazyChunks:
    """The ``chunks`` field of :class:`XorbInfo`: a tuple, or chunk records decoded on first
    access (the reader stores a CHUNK_DTYPE view of the xorb's records, not 1 object per chunk).

    Class access raises AttributeError so that ``dataclass`` sees a field without default.
    """

    def __get__(self, obj: Any, owner: type | None = None) -> tuple[ChunkEntry, ...]:
        if obj is None:
            raise AttributeError("chunks")
        d = obj.__dict__
        value = d["_chunks"]
        if type(value) is np.ndarray:
            value = d["_chunks"] = _chunks_from_records(value)
        return value  # type: ignore[no-any-return]

    def __set__(self, obj: Any, value: Any) -> None:  # only the dataclass __init__ gets here
        obj.__dict__["_chunks"] = value


@dataclass(frozen=True, eq=False)
class XorbInfo:
    """A xorb block: the xorb hash and its chunks.

    A xorb read by :class:`MdbShard` keeps its chunks as records (:attr:`chunk_records`, a
    numpy view of the shard) and builds the :class:`ChunkEntry` tuple the first time
    :attr:`chunks` is read; :attr:`num_chunks` and :attr:`chunk_records` never build it.
    Equality, hashing, ``repr`` and ``dataclasses`` helpers behave as if ``chunks`` were the
    tuple all along.

    Attributes:
        hash: The xorb hash (merkle aggregation of its plain chunk hashes).
        flags: ``xorb_flags`` (0).
        chunks: The chunks, in xorb order.
        num_bytes_in_xorb: Sum of the uncompressed chunk sizes.
        num_bytes_on_disk: Serialized xorb length (0: xet-core never fills it in).
        record_index: Index of the block's header record in the xorb section.
        offset: Absolute offset of the block.
    """

    hash: XetHash
    flags: int
    chunks: tuple[ChunkEntry, ...] = _LazyChunks()  # type: ignore[assignment]
    num_bytes_in_xorb: int
    num_bytes_on_disk: int
    record_index: int = 0
    offset: int = 0

    @property
    def num_chunks(self) -> int:
        """Number of chunks (does not build the chunk objects)."""
        return len(self.__dict__["_chunks"])

    @property
    def chunks_loaded(self) -> bool:
        """Whether the :class:`ChunkEntry` objects exist yet."""
        return type(self.__dict__["_chunks"]) is not np.ndarray

    @property
    def chunk_records(self) -> np.ndarray:
        """The chunks as a :data:`CHUNK_DTYPE` array (fields hash, offset, size, flags,
        reserved): a read-only view of the shard for a parsed xorb, built from the objects
        otherwise. For vectorised work over many chunks without one object per chunk."""
        value = self.__dict__["_chunks"]
        if type(value) is np.ndarray:
            return value
        return _records_from_chunks(value)

    def _key(self) -> tuple[Any, ...]:
        return (self.hash, self.flags, self.chunks, self.num_bytes_in_xorb,
                self.num_bytes_on_disk, self.record_index, self.offset)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, XorbInfo)
        a, b = self.__dict__["_chunks"], other.__dict__["_chunks"]
        if type(a) is np.ndarray and type(b) is np.ndarray:  # records equal <=> chunks equal
            return ((self.hash, self.flags, self.num_bytes_in_xorb, self.num_bytes_on_disk,
                     self.record_index, self.offset)
                    == (other.hash, other.flags, other.num_bytes_in_xorb,
                        other.num_bytes_on_disk, other.record_index, other.offset)
                    and len(a) == len(b) and a.tobytes() == b.tobytes())
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return {"hash": str(self.hash), "flags": self.flags, "num_chunks": self.num_chunks,
                "num_bytes_in_xorb": self.num_bytes_in_xorb,
                "num_bytes_on_disk": self.num_bytes_on_disk, "record_index": self.record_index,
                "offset": self.offset, "chunks": [c.to_dict() for c in self.chunks]}


class ChunkRef(NamedTuple):
    """Where :meth:`MdbShard.find_chunk` found a chunk.

    Attributes:
        xorb_hash: The xorb holding it.
        xorb_record_index: Record index of that xorb's block (as in the lookup tables).
        chunk_index: Chunk number within the xorb.
        chunk: The chunk entry (its hash is the stored, possibly keyed, form).
    """

    xorb_hash: XetHash
    xorb_record_index: int
    chunk_index: int
    chunk: ChunkEntry


_new_ref = functools.partial(tuple.__new__, ChunkRef)


@dataclass(frozen=True)
class MdbHeader:
    """The 48-byte header (the tag is checked on open)."""

    version: int
    footer_size: int


@dataclass(frozen=True)
class MdbFooter:
    """The 200-byte footer, every field (names as in xet-core)."""

    version: int
    file_info_offset: int
    xorb_info_offset: int
    file_lookup_offset: int
    file_lookup_num_entry: int
    xorb_lookup_offset: int
    xorb_lookup_num_entry: int
    chunk_lookup_offset: int
    chunk_lookup_num_entry: int
    hmac_key: XetHash
    creation_timestamp: int
    key_expiry: int
    reserved: bytes
    stored_bytes_on_disk: int
    materialized_bytes: int
    stored_bytes: int
    footer_offset: int

    @property
    def is_keyed(self) -> bool:
        """Chunk hashes are HMAC-keyed (the key is not zero)."""
        return not self.hmac_key.is_zero

    def expired(self, now: float | _dt.datetime | None = None) -> bool:
        """Whether the shard must no longer be used for dedup (``now`` > key_expiry).

        Args:
            now: Unix seconds or a ``datetime`` (naive means UTC); the current time when
                omitted.
        """
        if isinstance(now, _dt.datetime):
            if now.tzinfo is None:
                now = now.replace(tzinfo=_dt.UTC)
            now = now.timestamp()
        now = time.time() if now is None else now
        return self.key_expiry != NEVER_EXPIRES and now > self.key_expiry

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return {
            "version": self.version,
            "file_info_offset": self.file_info_offset,
            "xorb_info_offset": self.xorb_info_offset,
            "file_lookup_offset": self.file_lookup_offset,
            "file_lookup_num_entry": self.file_lookup_num_entry,
            "xorb_lookup_offset": self.xorb_lookup_offset,
            "xorb_lookup_num_entry": self.xorb_lookup_num_entry,
            "chunk_lookup_offset": self.chunk_lookup_offset,
            "chunk_lookup_num_entry": self.chunk_lookup_num_entry,
            "hmac_key": str(self.hmac_key),
            "creation_timestamp": self.creation_timestamp,
            "key_expiry": self.key_expiry,
            "reserved": self.reserved.hex(),
            "stored_bytes_on_disk": self.stored_bytes_on_disk,
            "materialized_bytes": self.materialized_bytes,
            "stored_bytes": self.stored_bytes,
            "footer_offset": self.footer_offset,
        }


def _footer_from_ks(f: Any) -> MdbFooter:
    return MdbFooter(
        f.version, f.ofs_file_info, f.ofs_xorb_info, f.ofs_file_lookup, f.num_file_lookup,
        f.ofs_xorb_lookup, f.num_xorb_lookup, f.ofs_chunk_lookup, f.num_chunk_lookup,
        XetHash(f.chunk_hash_hmac_key), f.creation_timestamp, f.key_expiry, bytes(f.reserved),
        f.len_stored_on_disk, f.len_materialized, f.len_stored, f.ofs_footer)


def _iso(ts: int) -> str | None:
    if ts in (0, NEVER_EXPIRES):
        return None
    try:
        return _dt.datetime.fromtimestamp(ts, _dt.UTC).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


@dataclass(frozen=True)
class _Layout:
    """Where the record sections really are (found by walking to the bookends)."""

    file_blocks: list[tuple[int, bytes, int, int, int]]  # offset, hash, flags, n, reserved
    xorb_info_offset: int
    xorb_blocks: list[tuple[int, bytes, int, int, int, int]]  # offset, hash, flags, n, in, disk
    xorb_info_end: int


# -- the reader ----------------------------------------------------------------------------------


class MdbShard(Reader):
    """A Xet MDB shard.

    Opening reads the header and, when the header announces one, the footer. Lookups through
    lookup tables read only the table entry and the records they point at; everything else
    walks the record sections once (cached).

    Example::

        with shardkit.open("b04a...f1.mdb") as s:
            info = s.file("1686ca90c1751860f1a32b3b103bed9f483886112eb26a999a6568a43fd38f1c")
            print([str(t.xorb_hash) for t in info.terms])

    Args:
        source: The shard bytes.
        engine: ``"numpy"`` (bulk decoding of the records, the default) or ``"kaitai"``
            (objects built from the generated parser's tree; slower, same result).
    """

    format_id = "mdb"
    format_name = "Hugging Face Xet MDB shard"

    def __init__(self, source: ByteSource, *, engine: str = "numpy") -> None:
        super().__init__(source)
        if engine not in ("numpy", "kaitai"):
            raise ShardkitError(f"unknown engine {engine!r} (numpy or kaitai)")
        self.engine = engine
        size = source.size
        head = source.read_range(0, min(32, size))
        for tag, what in LEGACY_TAGS.items():
            if head.startswith(tag):
                raise UnsupportedVersionError(
                    f"{source.name}: an MDB shard of {what}; only header v2 is supported",
                    offset=0, field="/header/tag")
        self._mem_data: memoryview | bytes | None = None  # the whole file, on first need
        self._ks = parse(XetMdbShard, as_stream(source, buffer_size=HEADER_SIZE),
                         magic_fields=("/header/tag",), version_fields=("/header/version",))
        self.header = MdbHeader(self._ks.header.version, self._ks.header.len_footer)
        self._footer_note: str | None = None  # why an announced footer was not used
        self.footer: MdbFooter | None = self._read_footer()

    @property
    def _mem(self) -> memoryview | bytes:
        """The whole file: a zero-copy view when the source has one, else one ranged read.

        Opening does not need it (header and footer are read alone); the section walks,
        lookups and hashes use it.
        """
        mem = self._mem_data
        if mem is None:
            view = getattr(self.source, "view", None)
            size = self.source.size
            mem = view(0, size) if view is not None else self.source.read_range(0, size)
            self._mem_data = mem
        return mem

    def close(self) -> None:
        """Release the file mapping."""
        if isinstance(self._mem_data, memoryview):
            self._mem_data.release()
        self._mem_data = b""
        super().close()

    # -- header, footer, layout ---------------------------------------------------------------

    def _ks_at(self, cls: type, pos: int, prefix: str, **mapping: Any) -> Any:
        """Parse generated type ``cls`` at absolute ``pos`` (errors mapped to ours)."""
        stream = as_stream(self.source)
        stream.seek(pos)
        with kaitai_errors(prefix=prefix, **mapping):
            return cls(stream, None, self._ks)

    def _read_footer(self) -> MdbFooter | None:
        size = self.source.size
        if self.header.footer_size != FOOTER_SIZE:
            return None
        pos = size - FOOTER_SIZE
        if pos < HEADER_SIZE + 2 * RECORD_SIZE:
            self._footer_note = (f"the header announces a {FOOTER_SIZE}-byte footer but the "
                                 f"file has only {size} bytes")
            return None
        error: ShardkitError | None = None
        footer: MdbFooter | None = None
        try:
            ks = self._ks_at(XetMdbShard.Footer, pos, "/footer",
                             version_fields=("/footer/version",))
            footer = _footer_from_ks(ks)
        except ShardkitError as exc:
            error = exc
        if footer is not None and footer.footer_offset == pos:
            return footer
        # Not a footer where one should be: a footer-less body whose header lies (the file ends
        # at the xorb bookend, FORMAT_NOTES section 11), or a corrupt footer.
        layout = self._layout
        if pos >= layout.xorb_info_end:
            if error is not None:
                raise error
            assert footer is not None
            raise LayoutError(f"footer_offset {footer.footer_offset} != file length - "
                              f"{FOOTER_SIZE} ({pos})", offset=pos + 192,
                              field="/footer/ofs_footer")
        self._footer_note = ("the header announces a footer but the file ends "
                             f"{size - layout.xorb_info_end} bytes after the xorb bookend")
        return None

    @property
    def _records_limit(self) -> int:
        """Where the record sections must end at the latest."""
        if self.__dict__.get("footer") is not None:
            return self.source.size - FOOTER_SIZE
        return self.source.size

    @cached_property
    def _layout(self) -> _Layout:
        """Walk both record sections to their bookends, checking every count against the bytes
        that remain before anything is read."""
        mem, limit = self._mem, self._records_limit
        files: list[tuple[int, bytes, int, int, int]] = []
        pos, i = HEADER_SIZE, 0
        unpack_file = _FILE_HEAD.unpack_from
        while True:
            if pos + RECORD_SIZE > limit:
                raise TruncatedError(
                    f"the file info section has no bookend: block {i} at {pos} needs "
                    f"{RECORD_SIZE} bytes, {max(0, limit - pos)} remain",
                    needed=RECORD_SIZE, available=max(0, limit - pos), offset=pos,
                    field=f"/file_info/blocks/{i}")
            h, flags, n, reserved = unpack_file(mem, pos)
            if h == _BOOKEND_HASH:
                break
            nrec = (1 + n + (n if flags & FILE_FLAG_VERIFICATION else 0)
                    + (1 if flags & FILE_FLAG_METADATA_EXT else 0))
            end = pos + nrec * RECORD_SIZE
            if end > limit:
                raise TruncatedError(
                    f"file block {i} declares {n} terms ({nrec} records, {nrec * RECORD_SIZE} "
                    f"bytes) but {limit - pos} bytes remain before the end of the sections",
                    needed=nrec * RECORD_SIZE, available=limit - pos, offset=pos + 36,
                    field=f"/file_info/blocks/{i}/num_terms")
            files.append((pos, h, flags, n, reserved))
            pos, i = end, i + 1
        xorb_info_offset = pos = pos + RECORD_SIZE
        xorbs: list[tuple[int, bytes, int, int, int, int]] = []
        unpack_xorb = _XORB_HEAD.unpack_from
        i = 0
        while True:
            if pos + RECORD_SIZE > limit:
                raise TruncatedError(
                    f"the xorb info section has no bookend: block {i} at {pos} needs "
                    f"{RECORD_SIZE} bytes, {max(0, limit - pos)} remain",
                    needed=RECORD_SIZE, available=max(0, limit - pos), offset=pos,
                    field=f"/xorb_info/blocks/{i}")
            h, flags, n, in_xorb, on_disk = unpack_xorb(mem, pos)
            if h == _BOOKEND_HASH:
                break
            end = pos + (1 + n) * RECORD_SIZE
            if end > limit:
                raise TruncatedError(
                    f"xorb block {i} declares {n} chunks ({(1 + n) * RECORD_SIZE} bytes) but "
                    f"{limit - pos} bytes remain before the end of the sections",
                    needed=(1 + n) * RECORD_SIZE, available=limit - pos, offset=pos + 36,
                    field=f"/xorb_info/blocks/{i}/num_chunks")
            xorbs.append((pos, h, flags, n, in_xorb, on_disk))
            pos, i = end, i + 1
        return _Layout(files, xorb_info_offset, xorbs, pos + RECORD_SIZE)

    @property
    def xorb_info_offset(self) -> int:
        """Start of the xorb section (where it really is)."""
        return self._layout.xorb_info_offset

    @property
    def xorb_info_end(self) -> int:
        """The byte after the xorb bookend."""
        return self._layout.xorb_info_end

    def _records(self, start: int, end: int) -> np.ndarray:
        return np.frombuffer(self._mem, RECORD_DTYPE, count=(end - start) // RECORD_SIZE,
                             offset=start)

    # -- bulk decoding ------------------------------------------------------------------------

    @cached_property
    def files(self) -> tuple[FileInfo, ...]:
        """Every file block, in section order (every term, verification hash and sha256 is
        decoded)."""
        if self.engine == "kaitai":
            return self._kaitai_objects[0]
        layout = self._layout
        blocks = layout.file_blocks
        if not blocks:
            return ()
        recs = self._records(HEADER_SIZE, layout.xorb_info_offset)
        ofs_t, _, flags_t, n_t, _ = zip(*blocks, strict=True)
        rec = (np.array(ofs_t, np.int64) - HEADER_SIZE) // RECORD_SIZE
        flags = np.array(flags_t, np.int64)
        n = np.array(n_t, np.int64)
        has_v = (flags & FILE_FLAG_VERIFICATION) != 0
        has_e = (flags & FILE_FLAG_METADATA_EXT) != 0
        nv = np.where(has_v, n, 0)
        tr = recs[_runs(rec + 1, n)]
        terms = list(map(_new_term, zip(map(_new_hash, tr["hash"].tolist()), tr["w0"].tolist(),
                                        tr["w1"].tolist(), tr["w2"].tolist(),
                                        tr["w3"].tolist(), strict=True)))
        ver = list(map(_new_hash, recs["hash"][_runs(rec + 1 + n, nv)].tolist()))
        ext = list(map(_new_hash, recs["hash"][(rec + 1 + n + nv)[has_e]].tolist()))
        # FileInfo is a frozen dataclass: filling __dict__ directly is twice as fast as its
        # __init__, and gives the same object.
        new, set_dict = object.__new__, object.__setattr__
        out = []
        t = v = e = 0
        for pos, h, fl, cnt, reserved in blocks:
            k = cnt if fl & FILE_FLAG_VERIFICATION else 0
            if fl & FILE_FLAG_METADATA_EXT:
                sha: XetHash | None = ext[e]
                e += 1
            else:
                sha = None
            info = new(FileInfo)
            set_dict(info, "__dict__", {
                "hash": _new_hash(h), "flags": fl, "terms": tuple(terms[t : t + cnt]),
                "verification_hashes": tuple(ver[v : v + k]) if k else (), "sha256": sha,
                "reserved": reserved, "record_index": (pos - HEADER_SIZE) // RECORD_SIZE,
                "offset": pos})
            out.append(info)
            t += cnt
            v += k
        return tuple(out)

    @cached_property
    def _xorb_records(self) -> np.ndarray:
        """The xorb section's records (without the bookend) as a read-only CHUNK_DTYPE view."""
        layout = self._layout
        base = layout.xorb_info_offset
        recs = np.frombuffer(self._mem, CHUNK_DTYPE, offset=base,
                             count=(layout.xorb_info_end - RECORD_SIZE - base) // RECORD_SIZE)
        recs.flags.writeable = False
        return recs

    @cached_property
    def xorbs(self) -> tuple[XorbInfo, ...]:
        """Every xorb block, in section order.

        Each xorb's chunks stay records (a view of the shard) until its ``chunks`` attribute is
        read; see :class:`XorbInfo`.
        """
        if self.engine == "kaitai":
            return self._kaitai_objects[1]
        layout = self._layout
        blocks = layout.xorb_blocks
        if not blocks:
            return ()
        base, recs = layout.xorb_info_offset, self._xorb_records
        new, set_dict = object.__new__, object.__setattr__
        out = []
        for pos, h, fl, cnt, in_xorb, on_disk in blocks:
            r = (pos - base) // RECORD_SIZE
            info = new(XorbInfo)  # a frozen dataclass, filled as in `files`
            set_dict(info, "__dict__", {
                "hash": _new_hash(h), "flags": fl, "_chunks": recs[r + 1 : r + 1 + cnt],
                "num_bytes_in_xorb": in_xorb, "num_bytes_on_disk": on_disk,
                "record_index": r, "offset": pos})
            out.append(info)
        return tuple(out)

    @cached_property
    def _kaitai_objects(self) -> tuple[tuple[FileInfo, ...], tuple[XorbInfo, ...]]:
        """Files and xorbs built from the generated parser's tree (``engine="kaitai"``)."""
        _ = self._layout  # precise errors for bad counts come from the walk
        with kaitai_errors():
            root = self._ks
            files = []
            for b in root.file_info.blocks:
                if b.is_bookend:
                    break
                files.append(FileInfo(
                    XetHash(b.file_hash), b.flags,
                    tuple(Term(XetHash(t.xorb_hash), t.flags, t.len_unpacked,
                               t.chunk_index_start, t.chunk_index_end) for t in b.terms),
                    tuple(XetHash(v.range_hash)
                          for v in getattr(b, "verification_entries", None) or ()),
                    XetHash(b.metadata_ext.sha256) if b.has_metadata_ext else None,
                    b.reserved, (b.ofs_block - HEADER_SIZE) // RECORD_SIZE, b.ofs_block))
            xorbs = []
            base = root.ofs_xorb_info
            for b in root.xorb_info.blocks:
                if b.is_bookend:
                    break
                xorbs.append(XorbInfo(
                    XetHash(b.xorb_hash), b.flags,
                    tuple(ChunkEntry(XetHash(c.chunk_hash), c.ofs_unpacked, c.len_unpacked,
                                     c.flags, c.reserved) for c in b.chunks),
                    b.len_unpacked, b.len_on_disk, (b.ofs_block - base) // RECORD_SIZE,
                    b.ofs_block))
        return tuple(files), tuple(xorbs)

    # -- lookup tables ------------------------------------------------------------------------

    def _table(self, name: str, offset: int, count: int, dtype: np.dtype) -> np.ndarray | None:
        if self.footer is None or count == 0:
            return None
        end = offset + count * dtype.itemsize
        limit = self.footer.footer_offset
        if offset < HEADER_SIZE or end > limit:
            raise LayoutError(f"the {name} lookup table [{offset}, {end}) ({count} entries) "
                              f"does not fit before the footer at {limit}",
                              offset=self.footer.footer_offset, field=f"/{name}_lookup")
        return np.frombuffer(self._mem, dtype, count=count, offset=offset)

    @cached_property
    def file_lookup(self) -> np.ndarray | None:
        """The file lookup table (fields ``key``, ``index``), or None when absent."""
        f = self.footer
        return None if f is None else self._table("file", f.file_lookup_offset,
                                                  f.file_lookup_num_entry, _LOOKUP_DTYPE)

    @cached_property
    def xorb_lookup(self) -> np.ndarray | None:
        """The xorb lookup table (fields ``key``, ``index``), or None when absent."""
        f = self.footer
        return None if f is None else self._table("xorb", f.xorb_lookup_offset,
                                                  f.xorb_lookup_num_entry, _LOOKUP_DTYPE)

    @cached_property
    def chunk_lookup(self) -> np.ndarray | None:
        """The chunk lookup table (fields ``key``, ``xorb``, ``chunk``), or None when absent."""
        f = self.footer
        return None if f is None else self._table("chunk", f.chunk_lookup_offset,
                                                  f.chunk_lookup_num_entry,
                                                  _CHUNK_LOOKUP_DTYPE)

    @staticmethod
    def _search_index(table: np.ndarray) -> tuple[list[int], np.ndarray]:
        """Keys in ascending order (as a list, for bisect) and the matching table rows."""
        keys = table["key"]
        if len(keys) > 1 and not bool(np.all(keys[1:] >= keys[:-1])):
            order = np.argsort(keys, kind="stable")
            return keys[order].tolist(), table[order]
        return keys.tolist(), table

    @cached_property
    def _file_search(self) -> tuple[list[int], list[int]] | None:
        t = self.file_lookup
        if t is None:
            return None
        keys, rows = self._search_index(t)
        return keys, rows["index"].tolist()

    @cached_property
    def _xorb_search(self) -> tuple[list[int], list[int]] | None:
        t = self.xorb_lookup
        if t is None:
            return None
        keys, rows = self._search_index(t)
        return keys, rows["index"].tolist()

    @cached_property
    def _chunk_search(self) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """What :meth:`find_chunk` searches: (xorb section offset, truncated keys ascending,
        xorb record index, chunk position), as contiguous numpy arrays.

        From the chunk lookup table when there is one. Otherwise the xorb section is indexed
        with numpy: the truncated hash of every chunk record, stably argsorted (equal keys stay
        in section order, so of repeated chunks the first one is found). No object per chunk.
        """
        t = self.chunk_lookup
        if t is not None:
            f = self.footer
            assert f is not None
            keys = t["key"]
            if len(keys) > 1 and not bool(np.all(keys[1:] >= keys[:-1])):
                t = t[np.argsort(keys, kind="stable")]
            return (f.xorb_info_offset, np.ascontiguousarray(t["key"]),
                    np.ascontiguousarray(t["xorb"]), np.ascontiguousarray(t["chunk"]))
        rows = self._chunk_rows
        order = np.argsort(rows["key"], kind="stable")
        return (self._layout.xorb_info_offset, rows["key"][order], rows["xorb"][order],
                rows["chunk"][order])

    @cached_property
    def _chunk_rows(self) -> np.ndarray:
        """(truncated stored hash, xorb record index, chunk position) of every chunk, in
        section order: the rows a chunk lookup table holds (``_CHUNK_LOOKUP_DTYPE``), from the
        xorb section's bytes, built with numpy."""
        layout = self._layout
        base, blocks = layout.xorb_info_offset, layout.xorb_blocks
        head = (np.array([b[0] for b in blocks], np.int64) - base) // RECORD_SIZE
        n = np.array([b[3] for b in blocks], np.int64)
        chunk_rec = _runs(head + 1, n)
        xorb_rec = np.repeat(head, n)
        out = np.empty(len(chunk_rec), _CHUNK_LOOKUP_DTYPE)
        out["key"] = np.frombuffer(self._mem, _KEY_DTYPE, offset=base,
                                   count=len(self._xorb_records))["key"][chunk_rec]
        out["xorb"] = xorb_rec
        out["chunk"] = chunk_rec - xorb_rec - 1
        return out

    @cached_property
    def _files_by_hash(self) -> dict[bytes, FileInfo]:
        out: dict[bytes, FileInfo] = {}
        for f in self.files:
            out.setdefault(bytes(f.hash), f)  # the first record wins, as in xet-core
        return out

    @cached_property
    def _xorbs_by_hash(self) -> dict[bytes, XorbInfo]:
        out: dict[bytes, XorbInfo] = {}
        for x in self.xorbs:
            out.setdefault(bytes(x.hash), x)
        return out

    def _file_at(self, pos: int, rec: int) -> FileInfo | None:
        """Decode the file block at ``pos`` straight from the bytes (None if out of bounds)."""
        mem, limit = self._mem, self._records_limit
        if pos < HEADER_SIZE or pos + RECORD_SIZE > limit:
            return None
        h, flags, n, reserved = _FILE_HEAD.unpack_from(mem, pos)
        nv = n if flags & FILE_FLAG_VERIFICATION else 0
        ne = 1 if flags & FILE_FLAG_METADATA_EXT else 0
        if pos + (1 + n + nv + ne) * RECORD_SIZE > limit:
            return None
        p = pos + RECORD_SIZE
        terms = []
        for _ in range(n):
            xhash, fl, size, start, end = _TERM.unpack_from(mem, p)
            terms.append(Term(_new_hash(xhash), fl, size, start, end))
            p += RECORD_SIZE
        ver = []
        for _ in range(nv):
            ver.append(_new_hash(bytes(mem[p : p + 32])))
            p += RECORD_SIZE
        sha = _new_hash(bytes(mem[p : p + 32])) if ne else None
        return FileInfo(_new_hash(h), flags, tuple(terms), tuple(ver), sha, reserved, rec, pos)

    def file(self, h: XetHash | bytes | str, default: Any = None) -> FileInfo | None:
        """The file with hash ``h`` (a hash object, 32 stored bytes or display hex).

        Uses the file lookup table when present (binary search on the truncated hash, then the
        full hash is compared at each candidate record); otherwise the file section is walked
        once and indexed. Returns ``default`` (None) when the file is not in the shard.
        """
        raw = _as_raw(h)
        search = self._file_search
        if search is None:
            return self._files_by_hash.get(raw, default)
        keys, index = search
        key = int.from_bytes(raw[:8], "little")
        i = bisect.bisect_left(keys, key)
        mem = self._mem
        while i < len(keys) and keys[i] == key:
            rec = index[i]
            pos = HEADER_SIZE + rec * RECORD_SIZE
            if pos + 32 <= self._records_limit and mem[pos : pos + 32] == raw:
                found = self._file_at(pos, rec)
                if found is not None:
                    return found
            i += 1
        return default

    def xorb(self, h: XetHash | bytes | str, default: Any = None) -> XorbInfo | None:
        """The xorb with hash ``h`` (through the xorb lookup table when present)."""
        raw = _as_raw(h)
        search = self._xorb_search
        if search is None:
            return self._xorbs_by_hash.get(raw, default)
        keys, index = search
        key = int.from_bytes(raw[:8], "little")
        i = bisect.bisect_left(keys, key)
        base, mem = self.footer.xorb_info_offset, self._mem  # type: ignore[union-attr]
        while i < len(keys) and keys[i] == key:
            pos = base + index[i] * RECORD_SIZE
            if pos + RECORD_SIZE <= self._records_limit and mem[pos : pos + 32] == raw:
                h_, fl, n, in_xorb, on_disk = _XORB_HEAD.unpack_from(mem, pos)
                if pos + (1 + n) * RECORD_SIZE <= self._records_limit:
                    recs = np.frombuffer(self._mem, CHUNK_DTYPE, count=n,
                                         offset=pos + RECORD_SIZE)
                    recs.flags.writeable = False
                    info = object.__new__(XorbInfo)  # chunks decoded when read, as in `xorbs`
                    object.__setattr__(info, "__dict__", {
                        "hash": _new_hash(h_), "flags": fl, "_chunks": recs,
                        "num_bytes_in_xorb": in_xorb, "num_bytes_on_disk": on_disk,
                        "record_index": index[i], "offset": pos})
                    return info
            i += 1
        return default

    def find_chunk(self, h: XetHash | bytes | str, *, keyed: bool = False) -> ChunkRef | None:
        """Find a chunk by its plain hash (a hash object, 32 stored bytes or display hex).

        When the footer carries a non-zero HMAC key the hash is keyed first (the shard stores
        keyed hashes), unless ``keyed=True`` says it already is.

        Binary search on the truncated hash, then the full hash is compared at each candidate
        record: in the chunk lookup table when present, otherwise in an index of the xorb
        section built once with numpy. Without a table the first of repeated chunks (in
        section order) is found; the table's order among equal keys is unspecified. Returns
        None when the chunk is not in the shard.
        """
        raw = _as_raw(h)
        f = self.footer
        if not keyed and f is not None and not f.hmac_key.is_zero:
            raw = xh.keyed_chunk_hash(bytes(f.hmac_key), raw)
        base, keys, xorb_idx, chunk_idx = self._chunk_search
        key = int.from_bytes(raw[:8], "little")
        i, n = int(keys.searchsorted(np.uint64(key))), len(keys)
        mem, limit, at = self._mem, self._records_limit, keys.item
        while i < n and at(i) == key:
            xr, ci = xorb_idx.item(i), chunk_idx.item(i)
            pos = base + (xr + 1 + ci) * RECORD_SIZE
            if pos + RECORD_SIZE <= limit and mem[pos : pos + 32] == raw:
                xpos = base + xr * RECORD_SIZE
                chash, start, size, fl, res = _TERM.unpack_from(mem, pos)
                return _new_ref((_new_hash(mem[xpos : xpos + 32]), xr, ci,
                                 _new_chunk((_new_hash(chash), start, size, fl, res))))
            i += 1
        return None

    # -- mapping protocol (CLI `ls` / `get`) --------------------------------------------------

    def __getitem__(self, key: XetHash | bytes | str) -> FileInfo:
        try:
            found = self.file(key)
        except ValueError as exc:
            raise EntryNotFoundError(key, str(exc)) from exc
        if found is None:
            raise EntryNotFoundError(key, f"no file {XetHash(key)} in this shard")
        return found

    def __contains__(self, key: object) -> bool:
        try:
            return self.file(key) is not None  # type: ignore[arg-type]
        except (ValueError, TypeError):
            return False

    def __len__(self) -> int:
        return len(self._layout.file_blocks)

    def keys(self) -> Iterator[XetHash]:
        """File hashes, in section order."""
        for block in self._layout.file_blocks:
            yield _new_hash(block[1])

    __iter__ = keys

    def parse_key(self, text: str) -> XetHash:
        """A file hash from its display hex (as ``shardkit get`` takes it)."""
        return XetHash(text)  # InvalidKeyError (a usage error) when it is not 64 hex digits

    def format_key(self, key: XetHash | bytes) -> str:
        """A file hash's display hex."""
        return str(XetHash(key))

    # -- summaries ----------------------------------------------------------------------------

    @property
    def variant(self) -> str:
        """Which variant of FORMAT_NOTES section 9 the shard looks like."""
        f = self.footer
        if f is None:
            return "upload body (no footer)"
        if f.is_keyed:
            return "keyed global-dedup response"
        tables = f.file_lookup_num_entry or f.xorb_lookup_num_entry or f.chunk_lookup_num_entry
        if tables:
            if not self._layout.file_blocks and f.xorb_lookup_num_entry:
                return "xorb-only shard with lookup tables"
            return "full shard with lookup tables"
        if f.file_lookup_offset == 0 and f.xorb_lookup_offset == 0:
            return "shard without lookup tables (huggingface.js style, table offsets 0)"
        return "server-stored shard without lookup tables"

    def summary(self) -> dict[str, Any]:
        """What ``shardkit info`` shows."""
        f = self.footer
        files, xorbs = self._layout.file_blocks, self._layout.xorb_blocks
        out: dict[str, Any] = {
            "format": self.format_id,
            "format_name": self.format_name,
            "file": self.source.name,
            "file_size": self.source.size,
            "variant": self.variant,
            "header": {"version": self.header.version, "footer_size": self.header.footer_size},
            "footer": f is not None,
            "files": len(files),
            "xorbs": len(xorbs),
            "chunks": sum(b[3] for b in xorbs),
            "terms": sum(b[3] for b in files),
            "lookup_tables": {
                "file": f is not None and f.file_lookup_num_entry > 0,
                "xorb": f is not None and f.xorb_lookup_num_entry > 0,
                "chunk": f is not None and f.chunk_lookup_num_entry > 0,
            },
            "hmac_key_present": f is not None and f.is_keyed,
        }
        if f is not None:
            out["hmac_key"] = str(f.hmac_key) if f.is_keyed else None
            out["creation_timestamp"] = f.creation_timestamp
            out["creation_time"] = _iso(f.creation_timestamp)
            out["key_expiry"] = f.key_expiry
            out["key_expiry_time"] = ("never" if f.key_expiry == NEVER_EXPIRES
                                      else _iso(f.key_expiry))
            out["expired"] = f.expired()
            out["totals"] = {"materialized_bytes": f.materialized_bytes,
                             "stored_bytes": f.stored_bytes,
                             "stored_bytes_on_disk": f.stored_bytes_on_disk}
        else:
            out["totals"] = {
                "materialized_bytes": sum(fi.size for fi in self.files),
                "stored_bytes": sum(b[4] for b in xorbs),
                "stored_bytes_on_disk": sum(b[5] for b in xorbs),
            }
        if self._footer_note:
            out["note"] = self._footer_note
        return out

    def to_dict(self) -> dict[str, Any]:
        """The whole object tree: summary, header, footer, files, xorbs, lookup tables."""
        out = self.summary()
        out["footer"] = None if self.footer is None else self.footer.to_dict()
        out["files"] = [fi.to_dict() for fi in self.files]
        out["xorbs"] = [x.to_dict() for x in self.xorbs]
        tables: dict[str, Any] = {}
        for name, table in (("file", self.file_lookup), ("xorb", self.xorb_lookup)):
            tables[name] = [] if table is None else [
                [k, i] for k, i in zip(table["key"].tolist(), table["index"].tolist(),
                                       strict=True)]
        t = self.chunk_lookup
        tables["chunk"] = [] if t is None else [
            list(row) for row in zip(t["key"].tolist(), t["xorb"].tolist(),
                                     t["chunk"].tolist(), strict=True)]
        out["lookup_tables"] = tables
        out["sections"] = [s.to_dict() for s in self.sections()]
        return out

    def sections(self) -> list[Section]:
        """Byte layout, in file order."""
        lay, f, size = self._layout, self.footer, self.source.size
        out = [
            Section("/header", 0, HEADER_SIZE, f"tag, version {self.header.version}, "
                    f"footer_size {self.header.footer_size}"),
            Section("/file_info", HEADER_SIZE, lay.xorb_info_offset,
                    f"{len(lay.file_blocks)} file blocks + bookend"),
            Section("/xorb_info", lay.xorb_info_offset, lay.xorb_info_end,
                    f"{len(lay.xorb_blocks)} xorb blocks + bookend"),
        ]
        if f is not None:
            for name, ofs, n, width in (
                    ("file", f.file_lookup_offset, f.file_lookup_num_entry, 12),
                    ("xorb", f.xorb_lookup_offset, f.xorb_lookup_num_entry, 12),
                    ("chunk", f.chunk_lookup_offset, f.chunk_lookup_num_entry, 16)):
                if n:
                    out.append(Section(f"/{name}_lookup", ofs, ofs + n * width,
                                       f"{n} entries x {width} bytes"))
            out.append(Section("/footer", size - FOOTER_SIZE, size, "footer v1"))
        elif lay.xorb_info_end < size:
            out.append(Section("/trailing", lay.xorb_info_end, size,
                               "bytes after the xorb bookend"))
        return out

    # -- verification -------------------------------------------------------------------------

    def verify(self, progress: Callable[[int, int], None] | None = None, *,
               name_check: bool = False, other_shards: Iterable[MdbShard] = ()) -> list[Problem]:
        """Run every check; return the problems found (empty list: the shard is sound).

        Besides the frame, totals, tables, sizes and hashes, the order writers guarantee is
        checked (check ``lookup_table`` and ``order``): every lookup table's keys ascend, and
        a shard with lookup tables (xet-core's full writer) has its file and xorb sections
        sorted by hash. Shards without tables carry no order promise and are not checked for
        one.

        Args:
            progress: Called as ``progress(done, total)`` over xorbs and files.
            name_check: Also check the shard's content hash against a ``<hash>.mdb`` file name.
            other_shards: Shards whose xorb sections may describe xorbs this shard's files use
                (their terms and file hashes are then checked too).
        """
        problems: list[Problem] = []
        add = problems.append
        try:
            lay = self._layout
            files, xorbs = self.files, self.xorbs
        except ShardkitError as exc:
            add(Problem("layout", exc.message, exc.offset, exc.field))
            return problems
        size, f = self.source.size, self.footer
        self._verify_frame(lay, f, size, add)
        self._verify_tables(lay, f, add)
        self._verify_order(lay, f, add)
        keyed = f is not None and f.is_keyed
        known: dict[bytes, XorbInfo] = {}
        for other in other_shards:
            for x in other.xorbs:
                known.setdefault(bytes(x.hash), x)
        for x in xorbs:
            known[bytes(x.hash)] = x
        total = len(files) + len(xorbs)
        done = 0
        for x in xorbs:
            self._verify_xorb(x, keyed, add)
            done += 1
            if progress is not None and done % 1024 == 0:
                progress(done, total)
        self._verify_files(files, known, keyed, add, progress, done, total)
        if progress is not None:
            progress(total, total)
        if name_check:
            self._verify_name(add)
        return problems

    def _verify_frame(self, lay: _Layout, f: MdbFooter | None, size: int,
                      add: Callable[[Problem], None]) -> None:
        if self._footer_note:
            add(Problem("footer", self._footer_note, 40, "/header/len_footer"))
        if f is None:
            if lay.xorb_info_end != size:
                add(Problem("layout", f"{size - lay.xorb_info_end} bytes follow the xorb "
                            "bookend in a shard without footer", lay.xorb_info_end,
                            "/xorb_info"))
            return
        fo = size - FOOTER_SIZE
        hfjs = (f.file_lookup_offset == f.xorb_lookup_offset == f.chunk_lookup_offset == 0
                and not (f.file_lookup_num_entry or f.xorb_lookup_num_entry
                         or f.chunk_lookup_num_entry))
        expect = [
            ("ofs_file_info", 8, f.file_info_offset, HEADER_SIZE),
            ("ofs_xorb_info", 16, f.xorb_info_offset, lay.xorb_info_offset),
        ]
        if not hfjs:
            flo = lay.xorb_info_end
            xlo = flo + 12 * f.file_lookup_num_entry
            clo = xlo + 12 * f.xorb_lookup_num_entry
            expect += [
                ("ofs_file_lookup", 24, f.file_lookup_offset, flo),
                ("ofs_xorb_lookup", 40, f.xorb_lookup_offset, xlo),
                ("ofs_chunk_lookup", 56, f.chunk_lookup_offset, clo),
                ("ofs_footer", 192, fo, clo + 16 * f.chunk_lookup_num_entry),
            ]
        elif lay.xorb_info_end != fo:
            add(Problem("layout", f"{fo - lay.xorb_info_end} bytes lie between the xorb "
                        "bookend and the footer, but the footer lists no lookup table",
                        lay.xorb_info_end, "/footer"))
        for field, rel, found, want in expect:
            if found != want:
                add(Problem("footer", f"{field} is {found}, the sections say {want}",
                            fo + rel, f"/footer/{field}"))
        if any(f.reserved):
            add(Problem("footer", "reserved footer words are not zero", fo + 120,
                        "/footer/reserved"))
        if not hfjs:  # huggingface.js writes totals of its own (FORMAT_NOTES section 9)
            for field, rel, found, want in (
                    ("len_stored_on_disk", 168, f.stored_bytes_on_disk,
                     sum(b[5] for b in lay.xorb_blocks)),
                    ("len_materialized", 176, f.materialized_bytes,
                     sum(fi.size for fi in self.files)),
                    ("len_stored", 184, f.stored_bytes, sum(b[4] for b in lay.xorb_blocks))):
                if found != want:
                    add(Problem("totals", f"{field} is {found}, the sections sum to {want}",
                                fo + rel, f"/footer/{field}"))

    def _verify_tables(self, lay: _Layout, f: MdbFooter | None, add: Callable[[Problem], None],
                       ) -> None:
        """Each lookup table against the record sections (FORMAT_NOTES 6.1, 8 item 3), with
        numpy over the layout and the xorb section's bytes (no object per chunk)."""
        if f is None:
            return
        try:
            ft, xt, ct = self.file_lookup, self.xorb_lookup, self.chunk_lookup
        except ShardkitError as exc:
            add(Problem("lookup_table", exc.message, exc.offset, exc.field))
            return
        for name, table, blocks, base in (
                ("file", ft, lay.file_blocks, HEADER_SIZE),
                ("xorb", xt, lay.xorb_blocks, lay.xorb_info_offset)):
            if table is None:
                continue
            want = np.empty(len(blocks), _LOOKUP_DTYPE)
            want["key"] = np.frombuffer(b"".join(b[1][:8] for b in blocks), "<u8")
            want["index"] = [(b[0] - base) // RECORD_SIZE for b in blocks]
            if len(table) != len(want):
                add(Problem("lookup_table", f"the {name} table has {len(table)} entries, the "
                            f"section {len(want)} blocks", None, f"/{name}_lookup"))
                continue
            bad = np.flatnonzero((table["key"] != want["key"])
                                 | (table["index"] != want["index"]))
            at = f.file_lookup_offset if name == "file" else f.xorb_lookup_offset
            for i in bad[:20].tolist():
                add(Problem("lookup_table", f"{name} table entry {i} is "
                            f"({int(table['key'][i])}, {int(table['index'][i])}), expected "
                            f"({int(want['key'][i])}, {int(want['index'][i])})",
                            at + 12 * i, f"/{name}_lookup/entries/{i}"))
            self._verify_ascending(table["key"], f"the {name} table", at, 12, f"/{name}_lookup",
                                   add)
        if ct is not None:
            want_rows = np.sort(self._chunk_rows, order=["key", "xorb", "chunk"])
            if len(ct) != len(want_rows) or not bool(
                    np.array_equal(np.sort(ct, order=["key", "xorb", "chunk"]), want_rows)):
                add(Problem("lookup_table", "the chunk table does not hold exactly the "
                            "(truncated chunk hash, xorb record, chunk) triples of the xorb "
                            f"section ({len(ct)} entries, {len(want_rows)} chunks)",
                            f.chunk_lookup_offset, "/chunk_lookup"))
            self._verify_ascending(ct["key"], "the chunk table", f.chunk_lookup_offset, 16,
                                   "/chunk_lookup", add)

    @staticmethod
    def _verify_ascending(keys: np.ndarray, what: str, at: int, width: int, field: str,
                          add: Callable[[Problem], None]) -> None:
        """A lookup table's keys ascend (equal keys allowed): FORMAT_NOTES 6.1."""
        bad = np.flatnonzero(keys[1:] < keys[:-1]) + 1
        if len(bad):
            i = int(bad[0])
            add(Problem("lookup_table", f"{what} is not sorted by key: entry {i} (key "
                        f"{int(keys[i])}) is below entry {i - 1} (key {int(keys[i - 1])}); "
                        f"{len(bad)} entries are out of order", at + width * i,
                        f"{field}/entries/{i}"))

    def _verify_order(self, lay: _Layout, f: MdbFooter | None,
                      add: Callable[[Problem], None]) -> None:
        """The record order writers guarantee, and only that (FORMAT_NOTES 1, 6.1, 9, 10).

        xet-core's full writer (the only writer of lookup tables) emits the file and the xorb
        section sorted by hash (words 0..3 numerically, i.e. display hex); duplicates of a
        file may follow each other. The notes promise no order for shards without lookup tables
        (upload bodies, server-stored shards, global-dedup responses, huggingface.js uploads),
        nor for the chunks of a xorb (xorb order) or the terms of a file (file order), so those
        are not checked. The tables' own order is checked in ``_verify_tables``.
        """
        if f is None or not (f.file_lookup_num_entry or f.xorb_lookup_num_entry
                             or f.chunk_lookup_num_entry):
            return
        for name, blocks, base in (("file", lay.file_blocks, HEADER_SIZE),
                                   ("xorb", lay.xorb_blocks, lay.xorb_info_offset)):
            if len(blocks) < 2:
                continue
            # big-endian words compare bytewise in the hash order of FORMAT_NOTES section 1
            words = np.frombuffer(b"".join(b[1] for b in blocks), "<u8")
            keys = words.astype(">u8").view("S32")
            bad = np.flatnonzero(keys[1:] < keys[:-1]) + 1
            if not len(bad):
                continue
            i = int(bad[0])
            pos = blocks[i][0]
            add(Problem("order", f"the {name} section is not sorted by hash, although the "
                        "shard has lookup tables (xet-core's full writer sorts it): block "
                        f"{i} ({_new_hash(blocks[i][1])}) comes after block {i - 1} "
                        f"({_new_hash(blocks[i - 1][1])}); {len(bad)} blocks are out of order",
                        pos, f"/{name}_info/blocks/{(pos - base) // RECORD_SIZE}/{name}_hash"))

    def _verify_xorb(self, x: XorbInfo, keyed: bool, add: Callable[[Problem], None]) -> None:
        where = f"/xorb_info/blocks/{x.record_index}"
        pos = 0
        for i, c in enumerate(x.chunks):
            if c.offset != pos:
                add(Problem("xorb", f"xorb {x.hash}: chunk {i} starts at {c.offset}, expected "
                            f"{pos}", x.offset + RECORD_SIZE * (1 + i) + 32,
                            f"{where}/chunks/{i}/ofs_unpacked"))
                break
            pos += c.size
        if pos != x.num_bytes_in_xorb:
            add(Problem("xorb", f"xorb {x.hash}: chunk sizes sum to {pos}, num_bytes_in_xorb "
                        f"is {x.num_bytes_in_xorb}", x.offset + 40, f"{where}/len_unpacked"))
        if not keyed:
            computed = xh.xorb_hash((c.hash, c.size) for c in x.chunks)
            if computed != bytes(x.hash):
                add(Problem("xorb_hash", f"xorb {x.hash}: its chunks aggregate to "
                            f"{xh.display_hex(computed)}", x.offset, f"{where}/xorb_hash"))

    def _verify_files(self, files: Sequence[FileInfo], known: dict[bytes, XorbInfo],
                      keyed: bool, add: Callable[[Problem], None],
                      progress: Callable[[int, int], None] | None, done: int,
                      total: int) -> None:
        with_v = sum(1 for fi in files if fi.flags & FILE_FLAG_VERIFICATION)
        if 0 < with_v < len(files):
            add(Problem("file", f"{with_v} of {len(files)} files have verification entries "
                        "(a shard has them for every file or for none)", HEADER_SIZE,
                        "/file_info"))
        for fi in files:
            done += 1
            if progress is not None and done % 1024 == 0:
                progress(done, total)
            self._verify_file(fi, known, keyed, add)

    def _verify_file(self, fi: FileInfo, known: dict[bytes, XorbInfo], keyed: bool,
                     add: Callable[[Problem], None]) -> None:
        where = f"/file_info/blocks/{fi.record_index}"
        if fi.flags & ~(FILE_FLAG_VERIFICATION | FILE_FLAG_METADATA_EXT):
            add(Problem("file", f"file {fi.hash}: unknown flag bits {fi.flags:#x}",
                        fi.offset + 32, f"{where}/flags"))
        chunks_all: list[tuple[bytes, int]] | None = []
        for i, t in enumerate(fi.terms):
            tpos = fi.offset + RECORD_SIZE * (1 + i)
            if t.chunk_start >= t.chunk_end:
                add(Problem("term", f"file {fi.hash} term {i}: empty or reversed chunk range "
                            f"[{t.chunk_start}, {t.chunk_end})", tpos + 40,
                            f"{where}/terms/{i}"))
                chunks_all = None
                continue
            x = known.get(bytes(t.xorb_hash))
            if x is None:
                chunks_all = None
                continue
            if t.chunk_end > len(x.chunks):
                add(Problem("term", f"file {fi.hash} term {i}: chunks [{t.chunk_start}, "
                            f"{t.chunk_end}) outside xorb {x.hash} ({len(x.chunks)} chunks)",
                            tpos + 44, f"{where}/terms/{i}/chunk_index_end"))
                chunks_all = None
                continue
            sel = x.chunks[t.chunk_start : t.chunk_end]
            size = sum(c.size for c in sel)
            if size != t.unpacked_bytes:
                add(Problem("term", f"file {fi.hash} term {i}: {t.unpacked_bytes} bytes, its "
                            f"chunks sum to {size}", tpos + 36, f"{where}/terms/{i}/len_unpacked"))
            if keyed:
                chunks_all = None
                continue
            if fi.verification_hashes:
                computed = xh.verification_hash(c.hash for c in sel)
                if computed != bytes(fi.verification_hashes[i]):
                    n = len(fi.terms)
                    add(Problem("verification_hash", f"file {fi.hash} term {i}: range hash "
                                f"{fi.verification_hashes[i]}, computed "
                                f"{xh.display_hex(computed)}",
                                fi.offset + RECORD_SIZE * (1 + n + i),
                                f"{where}/verification_entries/{i}/range_hash"))
            if chunks_all is not None:
                chunks_all.extend((c.hash, c.size) for c in sel)
        if chunks_all is not None:
            computed = xh.file_hash(chunks_all)
            if computed != bytes(fi.hash):
                add(Problem("file_hash", f"file {fi.hash}: its chunks hash to "
                            f"{xh.display_hex(computed)}", fi.offset, f"{where}/file_hash"))

    def _verify_name(self, add: Callable[[Problem], None]) -> None:
        m = _NAME.match(os.path.basename(self.source.name))
        if m is None:
            return
        computed = xh.display_hex(xh.shard_hash(self._mem))
        if computed != m.group(1).lower():
            add(Problem("name", f"the file is named {m.group(0)} but its content hash is "
                        f"{computed}", 0, "/"))

    # -- conveniences -------------------------------------------------------------------------

    def content_hash(self) -> XetHash:
        """The shard's content hash (what its ``<hash>.mdb`` file name should be)."""
        return XetHash(xh.shard_hash(self._mem))

    def iter_chunks(self) -> Iterator[tuple[XorbInfo, int, ChunkEntry]]:
        """(xorb, chunk index, chunk) for every chunk, in section order."""
        for x in self.xorbs:
            for i, c in enumerate(x.chunks):
                yield x, i, c


def open_mdb(target: Any) -> MdbShard:
    """Open a path, bytes or ByteSource as an :class:`MdbShard` (no format detection)."""
    from ..sources import open_source

    return MdbShard(open_source(target))
