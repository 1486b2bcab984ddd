"""Xet MDB values: constants, record dtypes, hashes, files, xorbs, chunks, header, footer.

The objects :class:`~shardkit.formats.xet_mdb.MdbShard` returns; see the package docstring for
what they mean.
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast, overload

from ..._layouts import dtype_spec, layouts, struct_of
from ..._lazy import lazy_module
from ...errors import InvalidKeyError
from ...hashing import xet as xh

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

MDB_TAG = bytes.fromhex("48465265706f4d6574614461746100556967456a7b815783a5bdd95ccdd14aa9")
LEGACY_TAGS = {  # older shard generations: recognised, not read (FORMAT_NOTES section 9)
    b"HFRepoMetadata\x00": "header v1 (Oct 2024, tag HFRepoMetadata)",
    b"HFMetadataBETA": "the HFMetadataBETA tag (Oct 2024)",
    b"MerkleDB Shard\x00": "the xetdata-era MerkleDB Shard tag",
}
HEADER_VERSION = 2
FOOTER_VERSION = 1
# The records as schemas/xet_mdb_shard.ksy declares them (generated/layouts.py, made from it by
# make generate): sizes, offsets, byte orders and struct formats all come from there.
_L = layouts
HEADER_SIZE: int = _L.XET_MDB_SHARD__HEADER.size  # 48
FOOTER_SIZE: int = _L.XET_MDB_SHARD__FOOTER.size  # 200
RECORD_SIZE: int = _L.XET_MDB_SHARD__FILE_TERM.size  # 48, every record of the two record sections
#: Where each field of the header and of the footer starts within it, by its name in
#: schemas/xet_mdb_shard.ksy (tests/test_mdb.py parses a header and a footer of distinct field
#: values with the generated types and checks every offset).
_HEADER_AT = {f.path: f.offset for f in _L.XET_MDB_SHARD__HEADER.fields}
_FOOTER_AT = {f.path: f.offset for f in _L.XET_MDB_SHARD__FOOTER.fields}
BOOKEND = b"\xff" * 32 + bytes(16)
_BOOKEND_HASH = BOOKEND[:32]
FILE_FLAG_VERIFICATION = 0x8000_0000
FILE_FLAG_METADATA_EXT = 0x4000_0000
CHUNK_FLAG_GLOBAL_DEDUP = 0x8000_0000
#: Flag bits by their xet-core names (``MDB_FILE_FLAG_WITH_*``, ``MDB_CHUNK_WITH_*``).
FILE_FLAG_NAMES = {FILE_FLAG_VERIFICATION: "with_verification",
                   FILE_FLAG_METADATA_EXT: "with_metadata_ext"}
CHUNK_FLAG_NAMES = {CHUNK_FLAG_GLOBAL_DEDUP: "global_dedup"}


def flag_names(flags: int, names: dict[int, str]) -> list[str]:
    """The set bits of ``flags`` by name (``bit N`` for a bit no name is known for)."""
    out = [name for bit, name in names.items() if flags & bit]
    rest = flags & ~sum(names)
    out += [f"bit {i}" for i in range(32) if rest >> i & 1]
    return out
GLOBAL_DEDUP_MODULUS = 1024
NEVER_EXPIRES = 2**64 - 1
_ZERO = bytes(32)

#: The numpy record layouts, made on first use (module ``__getattr__``), so that opening a shard
#: does not import numpy. ``RECORD_DTYPE``: one 48-byte record of the file or xorb section, a
#: hash and four u32 words. ``CHUNK_DTYPE``: the same record read as a chunk of the xorb section
#: (:attr:`XorbInfo.chunk_records`). ``_KEY_DTYPE``: only the first word of a record's hash, the
#: truncated hash, the lookup-table key.
_DTYPE_SPECS: dict[str, Any] = {
    "RECORD_DTYPE": dtype_spec(_L.XET_MDB_SHARD__FILE_TERM, "hash", "w0", "w1", "w2", "w3"),
    "CHUNK_DTYPE": dtype_spec(_L.XET_MDB_SHARD__CHUNK_ENTRY, "hash", "offset", "size", "flags",
                              "reserved"),
    "_KEY_DTYPE": {"names": ["key"], "formats": [_L.XET_MDB_SHARD__LOOKUP_ENTRY.dtype[0][1]],
                   "offsets": [0], "itemsize": RECORD_SIZE},
    "_LOOKUP_DTYPE": dtype_spec(_L.XET_MDB_SHARD__LOOKUP_ENTRY, "key", "index"),
    "_CHUNK_LOOKUP_DTYPE": dtype_spec(_L.XET_MDB_SHARD__CHUNK_LOOKUP_ENTRY, "key", "xorb",
                                      "chunk"),
}
if TYPE_CHECKING:
    RECORD_DTYPE: np.dtype
    CHUNK_DTYPE: np.dtype
    _KEY_DTYPE: np.dtype
    _LOOKUP_DTYPE: np.dtype
    _CHUNK_LOOKUP_DTYPE: np.dtype


def __getattr__(name: str) -> Any:
    spec = _DTYPE_SPECS.get(name)
    if spec is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = np.dtype(spec)
    return value


_FILE_HEAD = struct_of(_L.XET_MDB_SHARD__FILE_BLOCK__HEAD)  # <32sIIQ
_XORB_HEAD = struct_of(_L.XET_MDB_SHARD__XORB_BLOCK__HEAD)  # <32sIIII
_TERM = struct_of(_L.XET_MDB_SHARD__FILE_TERM)  # <32sIIII
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
        if not isinstance(value, (bytes, bytearray, memoryview)):  # bytes(32) is 32 zeros
            raise InvalidKeyError(f"not a xet hash (32 bytes or 64 hex digits): {value!r}")
        raw = bytes(value)
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
                "flags": self.flags, "flag_names": flag_names(self.flags, CHUNK_FLAG_NAMES),
                "global_dedup_eligible": self.global_dedup_eligible}


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


_UNSET: Any = object()
_SHAPES: dict[tuple[int, int], struct.Struct] = {}


def _block_shape(n: int, hashes: int) -> struct.Struct | None:
    """One ``Struct`` for the records after a file block's header: ``n`` terms, then
    ``hashes`` hash records (verification, sha256); for blocks of up to 16 terms (cached)."""
    if n > 16:
        return None
    shape = _SHAPES.get((n, hashes))
    if shape is None:
        shape = _SHAPES[(n, hashes)] = struct.Struct("<" + _TERM.format[1:] * n + "32s16x" * hashes)
    return shape


def _decode_file_block(info: FileInfo) -> None:
    """Decode the records after a file block's header, which a lookup keeps in the ``_terms``
    slot of a :class:`FileInfo` (one bytes object), into ``_verification_hashes``,
    ``_sha256`` and, last, the terms tuple in ``_terms``. Safe when two threads race: both
    decode the same values, and ``_terms`` stops being bytes only after the other two are
    set."""
    block = _get_terms(info)
    if type(block) is not bytes:  # decoded already (by another thread)
        return
    flags = info.flags
    ne = 1 if flags & FILE_FLAG_METADATA_EXT else 0
    n = (len(block) // RECORD_SIZE - ne) // (2 if flags & FILE_FLAG_VERIFICATION else 1)
    nv = n if flags & FILE_FLAG_VERIFICATION else 0
    new_hash, new_term = _new_hash, _new_term
    shape = _block_shape(n, nv + ne)
    if shape is not None:  # the whole block in one unpack
        vals = shape.unpack_from(block, 0)
        k = 5 * n
        terms = tuple([new_term((new_hash(vals[j]), vals[j + 1], vals[j + 2],
                                 vals[j + 3], vals[j + 4])) for j in range(0, k, 5)])
        ver = tuple(map(new_hash, vals[k : k + nv])) if nv else ()
        sha = new_hash(vals[k + nv]) if ne else None
    else:
        unpack = _TERM.unpack_from
        items = []
        for i in range(n):
            x, fl, size, start, end = unpack(block, RECORD_SIZE * i)
            items.append(new_term((new_hash(x), fl, size, start, end)))
        terms = tuple(items)
        p = RECORD_SIZE * n
        ver = tuple([new_hash(block[q : q + 32])
                     for q in range(p, p + nv * RECORD_SIZE, RECORD_SIZE)])
        p += nv * RECORD_SIZE
        sha = new_hash(block[p : p + 32]) if ne else None
    _set(info, "_verification_hashes", ver)
    _set(info, "_sha256", sha)
    _set(info, "_terms", terms)


_set = object.__setattr__


class _LazyFileField:
    """``terms``, ``verification_hashes`` and ``sha256`` of :class:`FileInfo`: as given to the
    constructor, or decoded on first access from the block's records (a lookup by the reader
    keeps them in the ``_terms`` slot as one bytes object, and builds no term or hash object
    until one is read). Values live in the slot of the same name with a leading underscore.
    Class access raises AttributeError so that ``dataclass`` sees fields without default.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.get = owner.__dict__["_" + name].__get__  # the slot's own accessors
        self.put = owner.__dict__["_" + name].__set__

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            raise AttributeError(self.name)
        if type(_get_terms(obj)) is bytes:
            _decode_file_block(obj)
        return self.get(obj)

    def __set__(self, obj: Any, value: Any) -> None:
        self.put(obj, value)


@dataclass(frozen=True, init=False, eq=False)
class FileInfo:
    """A file block: the file hash and how to rebuild the file from xorb chunks.

    A frozen dataclass with slots (no per-object ``__dict__``): 96 bytes an object, against
    328 for one with a dict; a file found by a lookup also holds its block's records (48 bytes
    each) until its terms or hashes are first read.

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

    __slots__ = ("_sha256", "_terms", "_verification_hashes", "flags", "hash", "offset",
                 "record_index", "reserved")

    hash: XetHash
    flags: int
    terms: tuple[Term, ...] = _LazyFileField()  # type: ignore[assignment]  # a descriptor
    verification_hashes: tuple[XetHash, ...] = _LazyFileField()  # type: ignore[assignment]  # idem
    sha256: XetHash | None = _LazyFileField()  # type: ignore[assignment]  # a descriptor
    reserved: int  # type: ignore[misc]  # defaults in __init__ (slots have no class default)
    record_index: int  # type: ignore[misc]  # as reserved
    offset: int  # type: ignore[misc]  # as reserved

    def __init__(self, hash: XetHash, flags: int, terms: tuple[Term, ...] | bytes,
                 verification_hashes: tuple[XetHash, ...], sha256: XetHash | None,
                 reserved: int = 0, record_index: int = 0, offset: int = 0) -> None:
        _set(self, "hash", hash)
        _set(self, "flags", flags)
        _set(self, "_verification_hashes", verification_hashes)
        _set(self, "_sha256", sha256)
        _set(self, "_terms", terms if type(terms) is not bytes else tuple(terms))
        _set(self, "reserved", reserved)
        _set(self, "record_index", record_index)
        _set(self, "offset", offset)

    def _key(self) -> tuple[Any, ...]:
        return (self.hash, self.flags, self.terms, self.verification_hashes, self.sha256,
                self.reserved, self.record_index, self.offset)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, FileInfo)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[Any, ...]:  # pickle and copy: through __init__
        return (self.__class__, self._key())

    @property
    def size(self) -> int:
        """Bytes of the file: the sum of its terms' sizes."""
        return sum(t.unpacked_bytes for t in self.terms)

    @property
    def num_records(self) -> int:
        """48-byte records the block takes."""
        block = _get_terms(self)
        if type(block) is bytes:  # not decoded yet: the records after the block's header
            return 1 + len(block) // RECORD_SIZE
        n = len(self.terms)
        return (1 + n + (n if self.flags & FILE_FLAG_VERIFICATION else 0)
                + (1 if self.flags & FILE_FLAG_METADATA_EXT else 0))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output (hashes in display hex)."""
        return {"hash": str(self.hash), "size": self.size, "flags": self.flags,
                "flag_names": flag_names(self.flags, FILE_FLAG_NAMES),
                "terms": [t.to_dict() for t in self.terms],
                "verification_hashes": [str(h) for h in self.verification_hashes],
                "sha256": None if self.sha256 is None else str(self.sha256),
                "reserved": self.reserved, "record_index": self.record_index,
                "offset": self.offset}


_get_terms = FileInfo.__dict__["_terms"].__get__


class _FileInfoSlots:
    """The slots of :class:`FileInfo` without its frozen ``__setattr__``: the reader's hot
    paths fill one with plain attribute stores, which the interpreter specializes (a frozen
    class's stores each go through ``object.__setattr__``, three times slower), then make it
    a :class:`FileInfo` by assigning ``__class__``. Python allows that between classes of the
    same slots; the object is from then on a frozen :class:`FileInfo` like any other.

    Fill ``hash``, ``flags``, ``_terms`` (the block's records after its header, decoded on
    first read), ``reserved``, ``record_index`` and ``offset``, then assign the class.
    """

    __slots__ = FileInfo.__slots__

    hash: XetHash
    flags: int
    _terms: bytes
    reserved: int
    record_index: int
    offset: int


def _new_file(h: XetHash, flags: int, block: bytes, reserved: int, record_index: int,
              offset: int) -> FileInfo:
    """A :class:`FileInfo` whose terms and hashes decode from ``block`` when first read."""
    # plain slot stores, written out again inline in _fast.file_lookup (its hot path)
    info = object.__new__(_FileInfoSlots)
    info.hash = h
    info.flags = flags
    info._terms = block
    info.reserved = reserved
    info.record_index = record_index
    info.offset = offset
    info.__class__ = FileInfo  # type: ignore[assignment]  # same slots, no __init__ run
    return info  # type: ignore[return-value]  # a FileInfo now


def _chunks_from_records(recs: np.ndarray) -> tuple[ChunkEntry, ...]:
    """ChunkEntry objects from CHUNK_DTYPE records (column-wise: the fastest way found)."""
    return tuple(map(_new_chunk, zip(map(_new_hash, recs["hash"].tolist()),
                                     recs["offset"].tolist(), recs["size"].tolist(),
                                     recs["flags"].tolist(), recs["reserved"].tolist(),
                                     strict=True)))


def _records_from_chunks(chunks: Sequence[ChunkEntry]) -> np.ndarray:
    """CHUNK_DTYPE records of chunk objects (the inverse of :func:`_chunks_from_records`)."""
    out = np.zeros(len(chunks), __getattr__("CHUNK_DTYPE"))
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
        return value  # type: ignore[no-any-return]  # the decoded tuple

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
    chunks: tuple[ChunkEntry, ...] = _LazyChunks()  # type: ignore[assignment]  # a descriptor
    num_bytes_in_xorb: int  # type: ignore[misc]  # the descriptor above gives no class default
    num_bytes_on_disk: int  # type: ignore[misc]  # as num_bytes_in_xorb
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


def _iso(ts: int) -> str | None:
    if ts in (0, NEVER_EXPIRES):
        return None
    try:
        return _dt.datetime.fromtimestamp(ts, _dt.UTC).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


class _Layout:
    """Where the record sections really are (found by walking to the bookends): the offset of
    every file and xorb block as int64 arrays (8 bytes a block), and, built on first use from
    the file's bytes, their header fields."""

    def __init__(self, mem: Any, file_pos: np.ndarray, xorb_info_offset: int,
                 xorb_pos: np.ndarray, xorb_info_end: int) -> None:
        self._mem = mem
        self.file_pos = file_pos
        self.xorb_info_offset = xorb_info_offset
        self.xorb_pos = xorb_pos
        self.xorb_info_end = xorb_info_end

    def words(self, pos: np.ndarray, word: int) -> np.ndarray:
        """u32 word ``word`` (0..3, after the hash) of the records at ``pos`` (int64)."""
        if not len(pos):
            return np.zeros(0, np.int64)
        u32 = np.frombuffer(self._mem, "<u4", count=len(self._mem) // 4)
        return cast("np.ndarray", u32[(pos + 32 + 4 * word) // 4].astype(np.int64))

    @functools.cached_property
    def file_terms(self) -> np.ndarray:
        """Number of terms of each file block."""
        return self.words(self.file_pos, 1)

    @functools.cached_property
    def xorb_chunks(self) -> np.ndarray:
        """Number of chunks of each xorb block."""
        return self.words(self.xorb_pos, 1)

    def hash_array(self, pos: np.ndarray) -> np.ndarray:
        """The 32-byte hashes of the records at ``pos`` as an ``(n, 32)`` uint8 array (no
        object per block)."""
        if not len(pos):
            return np.zeros((0, 32), np.uint8)
        raw = np.frombuffer(self._mem, np.uint8, count=len(self._mem))
        return raw[pos[:, None] + np.arange(32)]

    def _hashes(self, pos: np.ndarray) -> list[bytes]:
        mem = self._mem
        return [bytes(mem[p : p + 32]) for p in pos.tolist()]

    @functools.cached_property
    def file_blocks(self) -> list[tuple[int, bytes, int, int, int]]:
        """(offset, hash, flags, terms, reserved) of each file block."""
        pos = self.file_pos
        reserved = self.words(pos, 2) | (self.words(pos, 3) << 32)
        return list(zip(pos.tolist(), self._hashes(pos), self.words(pos, 0).tolist(),
                        self.file_terms.tolist(), reserved.tolist(), strict=True))

    @functools.cached_property
    def xorb_blocks(self) -> list[tuple[int, bytes, int, int, int, int]]:
        """(offset, hash, flags, chunks, bytes in xorb, bytes on disk) of each xorb block."""
        pos = self.xorb_pos
        return list(zip(pos.tolist(), self._hashes(pos), self.words(pos, 0).tolist(),
                        self.xorb_chunks.tolist(), self.words(pos, 2).tolist(),
                        self.words(pos, 3).tolist(), strict=True))


_T = TypeVar("_T")


class _Blocks(Sequence[_T]):
    """The ``files`` or ``xorbs`` of a shard: a sequence whose items are built on first
    access (then kept), so a million-block shard is indexed without a million objects;
    :meth:`walk` and :meth:`peek` build without keeping.

    Compares equal to any sequence of equal items (a tuple of the same objects included).
    """

    __slots__ = ("_items", "_make")

    def __init__(self, count: int, make: Callable[[int], _T]) -> None:
        self._items: list[_T | None] = [None] * count
        self._make = make

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, i: int) -> _T: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[_T, ...]: ...

    def __getitem__(self, i: int | slice) -> _T | tuple[_T, ...]:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self._items))))
        item = self._items[i]
        if item is None:
            n = len(self._items)
            item = self._make(i + n if i < 0 else i)
            self._items[i] = item
        return item

    def __iter__(self) -> Iterator[_T]:
        items, make = self._items, self._make
        for i in range(len(items)):
            item = items[i]
            if item is None:
                item = items[i] = make(i)
            yield item

    def walk(self) -> Iterator[_T]:
        """Every item, as iteration gives them, but those not built yet are built for the
        walk and not kept: a walk over a large shard holds one item at a time."""
        items, make = self._items, self._make
        for i in range(len(items)):
            item = items[i]
            yield make(i) if item is None else item

    def peek(self, i: int) -> _T:
        """Item ``i`` (0 <= i < len), built and not kept when it was not built yet."""
        item = self._items[i]
        return self._make(i) if item is None else item

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (str, bytes, bytearray)) or not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other,
                                                                        strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: Sequence[_T]) -> tuple[_T, ...]:  # as a tuple would
        return (*self, *other)

    def __radd__(self, other: Sequence[_T]) -> tuple[_T, ...]:
        return (*other, *self)

    def __repr__(self) -> str:
        return f"<{len(self)} blocks: {', '.join(map(repr, self[:3]))}{', ...' * (len(self) > 3)}>"
