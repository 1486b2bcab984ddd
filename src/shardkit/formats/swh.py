"""Software Heritage read shards (``swh.perfecthash``): lookup, iteration and verification.

Layout: ``schemas/swh_read_shard.ksy`` (generated class :class:`SwhReadShard`). This module adds
the meaning: the cmph CHD_PH function maps a 32-byte key to its index slot; a slot holds a live
entry (key, offset of the object) or a zero key with offset 0 ("empty") or 2**64-1
("tombstone"). What a tombstone means depends on the writer generation, so it is decided from
the header, never from the slot alone:

* swh.perfecthash (<= 1.3) zero-fills the index: unused slots of the function are empty, a
  tombstone is a deleted object;
* swh-shard (>= 2.0) initialises every slot as a tombstone before filling the live ones, so
  unused slots and deleted objects look the same.

Either way ``objects_count`` (never decremented by deletions) gives the split: deleted =
``objects_count - live``, unused = ``slots - objects_count``. ``Shard.delete`` also zeroes the
object's size and data. Deleted keys cannot be read back from the file, so
:meth:`SwhShard.deleted_keys` tells which *candidate* keys land on a tombstone. A file may be
pre-allocated: zeros after the cmph dump, up to the end of the file.

Hot paths (lookups, the index scan) read the mapped bytes directly with ``struct``/numpy; the
tests check them equal to the Kaitai path.
"""

from __future__ import annotations

import hashlib
import struct
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any, NoReturn

import numpy as np

from .._kaitai import kaitai_errors, parse
from ..errors import (
    DeletedEntryError,
    EntryNotFoundError,
    InvalidKeyError,
    LayoutError,
    Problem,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from ..generated.swh_read_shard import SwhReadShard
from ..hashing.cmph_chd import (
    LAYOUT_PREFIX_SIZE,
    ChdLayout,
    ChdPh,
    CmphError,
    LazyChdPh,
    check_tail,
    parse_layout,
)
from ..sources import ByteSource, as_stream
from .base import Reader, Section

__all__ = ["KEY_LEN", "SLOT_SIZE", "TOMBSTONE", "SwhCounts", "SwhEntry", "SwhHeader", "SwhShard",
           "Tombstone", "normalize_key"]

MAGIC = b"SWHShard\x00"
KEY_LEN = 32
SLOT_SIZE = 40  # 32-byte key + u64 offset
TOMBSTONE = 2**64 - 1
HEADER_END = 32 + 7 * 8  # magic area + seven u64
_ZERO_KEY = bytes(KEY_LEN)
_U64 = struct.Struct(">Q")
_ENTRY = struct.Struct(">32sQ")
INDEX_DTYPE = np.dtype([("key", "V32"), ("ofs", ">u8")])
_MISSING: Any = object()
#: Over a remote source, a hash function section up to this size is fetched in one request
#: (the dump is about 2.1 bits per object: 13 MB for 50M objects).
REMOTE_DUMP_ONE_READ = 32 << 20
#: Block size of the sequential reads of ``verify`` over a remote source.
VERIFY_BLOCK = 8 << 20
#: ``summary()`` counts live/deleted/unused slots by default only for mapped files whose index
#: is at most this large (a scan of it takes a few milliseconds).
SUMMARY_SCAN_LIMIT = 64 << 20
#: Over a remote source, an object is read with this much read-ahead (one request for most).
OBJECT_READAHEAD = 64 << 10
# cmph's names (as CmphError reports them) -> field paths of schemas/common/cmph_chd_ph.ksy
_CMPH_FIELDS = {
    "cs": "compressed_seq",
    "cs.n": "compressed_seq/num_values",
    "cs.rem_r": "compressed_seq/rem_r",
    "cs.total_length": "compressed_seq/total_length",
    "cs.sel_size": "compressed_seq/len_select",
    "cs.sel": "compressed_seq/select",
    "cs.sel.n": "compressed_seq/select/num_ones",
    "cs.sel.m": "compressed_seq/select/num_zeros",
    "cs.sel.bits_vec": "compressed_seq/select/bits_vec",
    "cs.sel.select_table": "compressed_seq/select/select_table",
    "cs.length_rems": "compressed_seq/length_rems",
    "cs.store_table": "compressed_seq/store_table",
    "algo_name": "algo_name",
    "size": "num_keys_total",
    "hl_size": "len_hash_state",
    "hl": "hash_state",
    "hl.name": "hash_state/hash_name",
    "hl.seed": "hash_state/seed",
    "cs_size": "len_compressed_seq",
    "n": "num_keys",
    "nbuckets": "num_buckets",
}


def normalize_key(key: object) -> bytes:
    """A key as 32 bytes: from bytes-like objects, or from 64 hex characters.

    Raises:
        InvalidKeyError: Any other type or length (the message says what was given).
    """
    if type(key) is bytes:
        if len(key) == KEY_LEN:
            return key
    elif isinstance(key, (bytearray, memoryview)):
        data = bytes(key)
        if len(data) == KEY_LEN:
            return data
        key = data
    elif isinstance(key, str):
        text = key.strip()
        if len(text) == 2 * KEY_LEN:
            try:
                return bytes.fromhex(text)
            except ValueError:
                pass
        raise InvalidKeyError(f"SWH keys are {KEY_LEN} bytes or {2 * KEY_LEN} hex digits, got "
                              f"the text {key[:80]!r}")
    else:
        raise InvalidKeyError(f"SWH keys are {KEY_LEN} bytes or {2 * KEY_LEN} hex digits, got "
                              f"{type(key).__name__}")
    raise InvalidKeyError(f"SWH keys are {KEY_LEN} bytes, got {len(key)}")


def _is_key(key: object) -> bool:
    try:
        normalize_key(key)
    except InvalidKeyError:
        return False
    return True


@dataclass(frozen=True)
class SwhHeader:
    """The seven header integers (names as in swh.perfecthash's ``shard_header_t``)."""

    version: int
    objects_count: int
    objects_position: int
    objects_size: int
    index_position: int
    index_size: int
    hash_position: int


@dataclass(frozen=True)
class SwhEntry:
    """A live index entry.

    Attributes:
        slot: Index slot (the key's perfect-hash value).
        key: The 32-byte key.
        offset: Absolute offset of the object's u64 size field.
        size: Length of the object's data (``None`` if not read).
    """

    slot: int
    key: bytes
    offset: int
    size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output (key as hex)."""
        return {"slot": self.slot, "key": self.key.hex(), "offset": self.offset,
                "size": self.size}


@dataclass(frozen=True)
class SwhCounts:
    """What the index holds, told apart with the header's ``objects_count``.

    Attributes:
        live: Live entries (objects that can be read).
        deleted: Objects written then deleted (``objects_count - live``).
        unused: Slots of the hash function no object was written to (``slots - objects_count``).
        tombstone_slots: Slots holding a tombstone (zero key, offset 2**64-1).
        empty_slots: Slots holding zeros (zero key, offset 0).
        index_init: How the writer initialised the index: ``"tombstones"`` (swh-shard >= 2:
            unused slots are tombstones), ``"zeros"`` (swh.perfecthash <= 1.3: unused slots
            are empty) or ``"unknown"`` (no unused slot tells).
    """

    live: int
    deleted: int
    unused: int
    tombstone_slots: int
    empty_slots: int
    index_init: str

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return asdict(self)


@dataclass(frozen=True)
class Tombstone:
    """A deleted entry's slot (its key and object are zeroed in the file)."""

    slot: int
    index_offset: int


class _Blocks:
    """Reads a source in large aligned blocks, keeping the last few (for sequential passes).

    ``verify`` over a remote source reads the index and the objects in order through it, so
    every byte is fetched about once, in ``ceil(size / block)`` requests and a few more.
    """

    def __init__(self, source: ByteSource, block: int = VERIFY_BLOCK, keep: int = 3,
                 limit: int | None = None) -> None:
        self.source = source
        self.name = source.name
        self.block = block
        self.keep = keep
        # blocks end at ``limit`` (the objects' end); ranges past it are read as asked
        self.limit = source.size if limit is None else min(limit, source.size)
        self._cache: OrderedDict[int, bytes] = OrderedDict()

    @property
    def size(self) -> int:
        """Size of the underlying source."""
        return self.source.size

    def _get(self, i: int) -> bytes:
        data = self._cache.get(i)
        if data is None:
            lo = i * self.block
            data = self.source.read_range(lo, min(self.limit, lo + self.block))
            self._cache[i] = data
            if len(self._cache) > self.keep:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(i)
        return data

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)``, from cached blocks where possible."""
        if start >= end or end > self.limit or start < 0:
            return self.source.read_range(start, end)  # past the blocks, empty, or an error
        first, last = start // self.block, (end - 1) // self.block
        if first == last:
            base = first * self.block
            return self._get(first)[start - base : end - base]
        parts = []
        for i in range(first, last + 1):
            base = i * self.block
            parts.append(self._get(i)[max(start, base) - base : min(end, base + self.block)
                                      - base])
        return b"".join(parts)

    def close(self) -> None:
        """Forget the cached blocks (the source stays open)."""
        self._cache.clear()


class SwhShard(Reader):
    """A Software Heritage read shard.

    Opening reads only the 88 header bytes. The first lookup reads the hash function's
    layout and decodes only the select block of the key's bucket (128 buckets); the index is
    scanned only by whole-shard operations (``len``, ``keys``, ``counts``, ``verify``).

    Keys are 32 bytes (``bytes``, ``bytearray``, ``memoryview``) or 64 hex characters;
    anything else raises :class:`~shardkit.errors.InvalidKeyError`.

    One reader may be shared by threads: lookups, iteration and ``verify`` only read.

    Example::

        with shardkit.open("objects.shard") as s:
            data = s[bytes.fromhex("a948...47")]
            data = s["a948...47"]
    """

    format_id = "swh"
    format_name = "Software Heritage read shard"

    def __init__(self, source: ByteSource) -> None:
        super().__init__(source)
        # One buffered read covers the magic and the header (a single request for URLs).
        self._ks = parse(SwhReadShard, as_stream(source, buffer_size=HEADER_END),
                         magic_fields=("/magic",), version_fields=("/header/version",))
        h = self._ks.header
        self.header = SwhHeader(h.version, h.num_objects, h.ofs_objects, h.len_objects,
                                h.ofs_index, h.len_index, h.ofs_hash)
        self._check_header()
        self.num_slots = self.header.index_size // SLOT_SIZE
        self._index_pos = self.header.index_position
        self._obj_lo = self.header.objects_position
        self._obj_hi = self.header.index_position
        # Zero-copy view of the whole file when the source has one (mmap, bytes): lookups then
        # unpack straight from it. Other sources (URLs, counting wrappers) use read_range.
        view = getattr(source, "view", None)
        self._mem: memoryview | None = view(0, source.size) if view is not None else None
        self._getter: Callable[[bytes], bytes] | None = None

    def __enter__(self) -> SwhShard:
        return self

    def close(self) -> None:
        """Release the file mapping."""
        self._getter = None
        self.__dict__.pop("_lookup", None)
        self.__dict__.pop("_dump", None)
        if self._mem is not None:
            self._mem.release()
            self._mem = None
        super().close()

    # -- structure ---------------------------------------------------------------------------

    def _check_header(self) -> None:
        """Raise :class:`LayoutError` when the header's sections cannot be where it says."""
        h, size = self.header, self.source.size
        checks = [
            (h.objects_position >= HEADER_END, "/header/ofs_objects", 48,
             f"objects_position {h.objects_position} lies inside the header"),
            (h.index_position == h.objects_position + h.objects_size, "/header/ofs_index", 64,
             f"index_position {h.index_position} != objects_position + objects_size "
             f"({h.objects_position + h.objects_size})"),
            (h.index_size % SLOT_SIZE == 0, "/header/len_index", 72,
             f"index_size {h.index_size} is not a multiple of {SLOT_SIZE}"),
            (h.hash_position == h.index_position + h.index_size, "/header/ofs_hash", 80,
             f"hash_position {h.hash_position} != index_position + index_size "
             f"({h.index_position + h.index_size})"),
            (h.hash_position <= size, "/header/ofs_hash", 80,
             f"hash_position {h.hash_position} is past the end of the file ({size} bytes)"),
        ]
        for ok, field, offset, message in checks:
            if not ok:
                raise LayoutError(message, offset=offset, field=field)

    def _cmph_error(self, exc: CmphError, what: str = "bad cmph hash function") -> LayoutError:
        """A dump error as a :class:`LayoutError` with the absolute offset and schema path."""
        if exc.field == "hl.name":
            return UnsupportedVersionError(  # type: ignore[return-value]
                f"cmph hash: {exc.args[0]}", offset=self.header.hash_position + exc.offset,
                field="/hash_function/hash_state/hash_name")
        return LayoutError(f"{what}: {exc.args[0]}", offset=self.header.hash_position
                           + exc.offset, field="/hash_function/"
                           + _CMPH_FIELDS.get(exc.field, "compressed_seq"))

    @cached_property
    def layout(self) -> ChdLayout:
        """Where each part of the cmph dump lies (read from its first bytes only)."""
        base, size = self.header.hash_position, self.source.size
        end = min(size, base + LAYOUT_PREFIX_SIZE)
        dump = self.__dict__.get("_dump")
        prefix = (dump[:LAYOUT_PREFIX_SIZE] if dump is not None else
                  self._mem[base:end] if self._mem is not None else
                  self.source.read_range(base, end))
        try:
            layout = parse_layout(prefix)
        except CmphError as exc:
            self._fail(exc, self._cmph_error(exc))
        if base + layout.dump_size > size:
            self._fail(None, TruncatedError(
                f"truncated: the cmph dump needs {layout.dump_size} bytes, {size - base} remain",
                needed=layout.dump_size, available=size - base, offset=base,
                field="/hash_function"))
        if layout.n != self.num_slots:
            raise LayoutError(
                f"hash function has {layout.n} slots, the index {self.num_slots}",
                offset=base + layout.tail, field="/hash_function/num_keys")
        return layout

    @cached_property
    def _dump(self) -> Any:
        """The bytes of the cmph dump: a view of the mapping, or one ranged read."""
        base, size = self.header.hash_position, self.source.size
        if self._mem is not None:
            return self._mem[base:size]
        if size - base <= REMOTE_DUMP_ONE_READ:
            return self.source.read_range(base, size)
        return self.source.read_range(base, base + self.layout.dump_size)

    @cached_property
    def _lookup(self) -> LazyChdPh:
        """The hash function for single lookups: decodes select blocks on demand."""
        dump = self._dump
        layout = self.layout
        try:
            check_tail(layout, bytes(dump[layout.tail : layout.tail + 8]))
        except CmphError as exc:
            self._fail(exc, self._cmph_error(exc))
        return LazyChdPh(layout, dump)

    @cached_property
    def hash_function(self) -> ChdPh:
        """The whole CHD_PH function, decoded and checked (for batches and ``verify``).

        Decodes exactly the dump (never the zeros of a pre-allocated file after it).
        """
        layout = self.layout
        try:
            chd = ChdPh.from_dump(self._dump[: layout.dump_size])
        except CmphError as exc:
            self._fail(exc, self._cmph_error(exc))
        return chd

    def _fail(self, exc: CmphError | None, fallback: ShardkitError) -> NoReturn:
        """Raise the most precise error for a bad dump: the schema's, else ``fallback``."""
        try:
            self._kaitai_hash_function()
        except ShardkitError as precise:
            raise precise from exc
        raise fallback from exc

    def _kaitai_hash_function(self) -> ChdPh:
        """The function read through the Kaitai classes (locates errors by schema field)."""
        base = self.header.hash_position
        with kaitai_errors():
            hf = self._ks.hash_function
            hs = hf.hash_state
        if hs.hash_name != "jenkins":
            raise UnsupportedVersionError(f"cmph hash {hs.hash_name!r} is not supported",
                                          offset=base + len("chd_ph") + 1 + 4 + 4,
                                          field="/hash_function/hash_state/hash_name")
        cs_base = base + len("chd_ph") + 1 + 4 + 4 + hf.len_hash_state + 4
        n_offset = cs_base + hf.len_compressed_seq
        if hf.num_keys != hf.num_keys_total:
            raise LayoutError(f"cmph n {hf.num_keys} != size {hf.num_keys_total}",
                              offset=n_offset, field="/hash_function/num_keys")
        if hf.num_keys != self.num_slots:
            raise LayoutError(
                f"hash function has {hf.num_keys} slots, the index {self.num_slots}",
                offset=n_offset, field="/hash_function/num_keys")
        try:
            chd = ChdPh.from_parts(hf.num_keys, hf.num_buckets, hs.seed, hf._raw_compressed_seq)
        except CmphError as exc:
            raise LayoutError(f"bad cmph compressed sequence: {exc.args[0]}",
                              offset=cs_base + exc.offset, field="/hash_function/"
                              + _CMPH_FIELDS.get(exc.field, "compressed_seq")) from exc
        except ValueError as exc:
            raise LayoutError(f"bad cmph parameters: {exc}", offset=base,
                              field="/hash_function") from exc
        return chd

    def sections(self) -> list[Section]:
        """Byte layout, in file order."""
        h = self.header
        out = [
            Section("/magic", 0, 9, "SWHShard\\0"),
            Section("/reserved", 9, 32, "zero padding"),
            Section("/header", 32, HEADER_END, "7 x u64 big-endian"),
            Section("/header_padding", HEADER_END, h.objects_position, "zero padding"),
            Section("/objects", h.objects_position, h.index_position,
                    f"{h.objects_count} objects (u64 size + data)"),
            Section("/index", h.index_position, h.hash_position,
                    f"{self.num_slots} slots x {SLOT_SIZE} bytes"),
        ]
        end = self.source.size
        try:
            dump_end = h.hash_position + self.layout.dump_size
        except ShardkitError:
            dump_end = end
        out.append(Section("/hash_function", h.hash_position, dump_end, "cmph CHD_PH dump"))
        if dump_end < end:
            out.append(Section("/preallocated", dump_end, end,
                               "zeros after the dump (shardkit truncate removes them)"))
        return out

    @property
    def content_end(self) -> int:
        """End of the cmph dump: the size the file has once truncated."""
        return self.header.hash_position + self.layout.dump_size

    # -- the index -----------------------------------------------------------------------------

    def _index_array(self, start_slot: int = 0, end_slot: int | None = None,
                     source: Any = None) -> np.ndarray:
        """Index slots ``[start_slot, end_slot)`` as a numpy structured array (key, ofs)."""
        end_slot = self.num_slots if end_slot is None else end_slot
        lo = self._index_pos + start_slot * SLOT_SIZE
        hi = self._index_pos + end_slot * SLOT_SIZE
        if source is None and self._mem is not None:
            return np.frombuffer(self._mem[lo:hi], dtype=INDEX_DTYPE)
        raw = (source or self.source).read_range(lo, hi)
        return np.frombuffer(raw, dtype=INDEX_DTYPE)

    def _scan(self, chunk: int = 1 << 16, source: Any = None
              ) -> Iterator[tuple[int, np.ndarray]]:
        if self._mem is None:
            # remote: a few large reads rather than one per 64k slots
            chunk = max(chunk, VERIFY_BLOCK // SLOT_SIZE)
        for start in range(0, self.num_slots, chunk):
            yield start, self._index_array(start, min(start + chunk, self.num_slots), source)

    def _slot_counts(self, source: Any = None) -> tuple[int, int, int]:
        live = tomb = empty = 0
        for _, arr in self._scan(source=source):
            ofs = arr["ofs"]
            t = int(np.count_nonzero(ofs == TOMBSTONE))
            e = int(np.count_nonzero(ofs == 0))
            tomb += t
            empty += e
            live += len(ofs) - t - e
        return live, tomb, empty

    @cached_property
    def _counts(self) -> SwhCounts:
        live, tomb, empty = self._slot_counts()
        count = self.header.objects_count
        if empty:
            init = "zeros"
        elif count < self.num_slots:
            init = "tombstones"
        else:
            init = "unknown"
        return SwhCounts(live, count - live, self.num_slots - count, tomb, empty, init)

    def counts(self) -> SwhCounts:
        """Live, deleted and unused slots (one scan of the index, then cached)."""
        return self._counts

    @property
    def live_count(self) -> int:
        """Number of live objects (scans the index once)."""
        return self._counts.live

    @property
    def deleted_count(self) -> int:
        """Number of deleted objects: ``objects_count`` minus the live entries."""
        return self._counts.deleted

    @property
    def unused_count(self) -> int:
        """Slots of the hash function that never held an object."""
        return self._counts.unused

    def __len__(self) -> int:
        return self._counts.live

    def iter_entries(self, with_sizes: bool = False) -> Iterator[SwhEntry]:
        """Live entries in slot order, read from the index (never a walk of the objects)."""
        for start, arr in self._scan():
            ofs = arr["ofs"]
            (live,) = np.nonzero((ofs != TOMBSTONE) & (ofs != 0))
            keys = arr["key"]
            for i in live.tolist():
                offset = int(ofs[i])
                size = self._object_size(offset, start + i) if with_sizes else None
                yield SwhEntry(start + i, keys[i].tobytes(), offset, size)

    def keys(self) -> Iterator[bytes]:
        """Live keys, in slot order."""
        for entry in self.iter_entries():
            yield entry.key

    __iter__ = keys

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) for every live entry, through the index."""
        for entry in self.iter_entries():
            yield entry.key, self._read_object(entry.offset, entry.slot)

    def tombstones(self) -> list[Tombstone]:
        """Slots holding a tombstone (deleted objects, and with swh-shard >= 2 unused slots)."""
        out = []
        for start, arr in self._scan():
            for i in np.nonzero(arr["ofs"] == TOMBSTONE)[0].tolist():
                out.append(Tombstone(start + i, self._index_pos + (start + i) * SLOT_SIZE))
        return out

    def deleted_keys(self, candidates: Iterable[bytes | str] | None = None) -> list[bytes]:
        """The deleted keys: which of ``candidates`` hash to a tombstone slot.

        A read shard zeroes a deleted entry's key and its object, so the keys themselves cannot
        be read back from the file. Give the keys you expect (for example the shard's original
        key list) to learn which were deleted; a key that was never in the shard can also land
        on a tombstone (with swh-shard >= 2, also on an unused slot). Without candidates, the
        result has one zeroed key per deleted object (``objects_count`` minus the live
        entries), so ``len(s.deleted_keys())`` is the number of deletions.
        """
        if candidates is None:
            return [_ZERO_KEY] * max(0, self.deleted_count)
        cands = [normalize_key(k) for k in candidates if _is_key(k)]
        if not cands:
            return []
        tombs = {t.slot for t in self.tombstones()}
        slots = self.hash_function.slots(cands)
        return [k for k, s in zip(cands, slots.tolist(), strict=True) if s in tombs]

    # -- lookups ------------------------------------------------------------------------------

    def slot_of(self, key: bytes | str) -> int:
        """The index slot the hash function gives ``key`` (whether or not it is present)."""
        key = normalize_key(key)
        try:
            return self._lookup.slot(key)
        except CmphError as exc:
            raise self._cmph_error(exc) from exc

    def _object_size(self, offset: int, slot: int) -> int:
        if not self._obj_lo <= offset <= self._obj_hi - 8:
            raise LayoutError(f"slot {slot} points to {offset}, outside the objects section "
                              f"[{self._obj_lo}, {self._obj_hi})", offset=self._index_pos
                              + slot * SLOT_SIZE + KEY_LEN, field=f"/index/entries/{slot}")
        size: int = _U64.unpack(self.source.read_range(offset, offset + 8))[0]
        if size > self._obj_hi - offset - 8:
            raise LayoutError(f"object of slot {slot} claims {size} bytes, only "
                              f"{self._obj_hi - offset - 8} remain in the objects section",
                              offset=offset, field=f"/index/entries/{slot}/object/len_data")
        return size

    def _read_object(self, offset: int, slot: int) -> bytes:
        if self._mem is None and self._obj_lo <= offset <= self._obj_hi - 8:
            # one request for the size field and (most) values: read ahead, then the rest
            head = self.source.read_range(offset, min(self._obj_hi, offset + OBJECT_READAHEAD))
            (size,) = _U64.unpack_from(head)
            if size > self._obj_hi - offset - 8:
                self._object_size(offset, slot)  # raises the precise error
            if 8 + size <= len(head):
                return head[8 : 8 + size]
            return head[8:] + self.source.read_range(offset + len(head), offset + 8 + size)
        size = self._object_size(offset, slot)
        return self.source.read_range(offset + 8, offset + 8 + size)

    def _entry(self, slot: int) -> tuple[bytes, int]:
        pos = self._index_pos + slot * SLOT_SIZE
        key, ofs = _ENTRY.unpack(self.source.read_range(pos, pos + SLOT_SIZE))
        return key, ofs

    def _resolve(self, key: bytes, slot: int) -> int:
        stored, ofs = self._entry(slot)
        if ofs == TOMBSTONE:
            if self._tombstones_are_deletions():
                raise DeletedEntryError(key, f"key {key.hex()} was deleted (tombstone in slot "
                                        f"{slot})")
            raise DeletedEntryError(key, f"key {key.hex()} is not in the shard: its slot {slot} "
                                    "is a tombstone (a deleted object, or a slot no object used)")
        if stored != key or ofs == 0:  # ofs 0: an empty slot (its zero key can match a query)
            raise EntryNotFoundError(key, f"key not found: {key.hex()}")
        return ofs

    def _tombstones_are_deletions(self) -> bool:
        """Whether a tombstone can only be a deleted object (decided once, from the header).

        True when the function has no unused slot, or the index is zero-initialised
        (swh.perfecthash <= 1.3). Telling the latter needs an index scan: done for mapped
        files (milliseconds per million slots), not over a URL, where a tombstone then reads
        as "deleted, or never used".
        """
        if self.header.objects_count >= self.num_slots:
            return True
        if self._mem is None and "_counts" not in self.__dict__:
            return False
        return self._counts.index_init == "zeros"

    def __getitem__(self, key: bytes | str) -> bytes:
        getter = self._getter
        if getter is None:
            getter = self._getter = self._make_getter()
        return getter(key)  # type: ignore[arg-type]

    def _make_getter(self) -> Callable[[bytes], bytes]:
        """The lookup, as a closure over everything it needs (the hot path of ``s[key]``).

        With a mapped source it unpacks the index entry and the object's size straight from
        the mapping; anything unusual (absent key, tombstone, a bound exceeded, no mapping)
        goes to the ranged-read path, which also raises the precise error.
        """
        slot_of = self._lookup.slot
        # a bytes-like object whose slices are bytes (the mmap itself) copies values fastest
        raw = getattr(self.source, "raw", None)
        mem = raw if raw is not None else self._mem
        index_pos, lo, hi = self._index_pos, self._obj_lo, self._obj_hi
        last = hi - 8
        unpack_entry, unpack_u64 = _ENTRY.unpack_from, _U64.unpack_from
        slow = self._get_ranged
        cmph_error = self._cmph_error

        def getter(key: bytes) -> bytes:
            if type(key) is not bytes or len(key) != KEY_LEN:
                key = normalize_key(key)
            try:
                slot = slot_of(key)
            except CmphError as exc:
                raise cmph_error(exc) from exc
            if mem is not None:
                stored, ofs = unpack_entry(mem, index_pos + slot * SLOT_SIZE)
                if stored == key and lo <= ofs <= last:
                    end = ofs + 8 + unpack_u64(mem, ofs)[0]
                    if end <= hi:
                        value = mem[ofs + 8 : end]
                        return value if type(value) is bytes else bytes(value)
            return slow(key, slot)

        return getter

    def _get_ranged(self, key: bytes, slot: int) -> bytes:
        return self._read_object(self._resolve(key, slot), slot)

    def __contains__(self, key: object) -> bool:
        if not _is_key(key):
            return False
        k = normalize_key(key)
        stored, ofs = self._entry(self.slot_of(k))
        return stored == k and ofs not in (0, TOMBSTONE)

    def get_many(self, keys: Sequence[bytes | str], default: Any = _MISSING) -> list[Any]:
        """Values of many keys at once: hashes all keys in one numpy pass, then reads each.

        Raises :class:`EntryNotFoundError` at the first missing key (and
        :class:`InvalidKeyError` at the first malformed one) unless ``default`` is given, in
        which case those keys give ``default``.
        """
        keys = list(keys)
        rows: np.ndarray | None = None
        if keys and set(map(type, keys)) == {bytes} and set(map(len, keys)) == {KEY_LEN}:
            # the common case, without a Python step per key
            wanted = keys  # type: ignore[assignment]
            good = range(len(keys))
            rows = np.frombuffer(b"".join(wanted), np.uint8).reshape(-1, KEY_LEN)
            out: list[Any] = [default] * len(keys)
        else:
            norm: list[bytes | None] = []
            for k in keys:
                try:
                    norm.append(normalize_key(k))
                except InvalidKeyError:
                    if default is _MISSING:
                        raise
                    norm.append(None)
            good = [i for i, k in enumerate(norm) if k is not None]  # type: ignore[assignment]
            out = [default] * len(norm)
            if not good:
                return out
            wanted = [norm[i] for i in good]  # type: ignore[misc]
        slots = self.hash_function.slots(rows if rows is not None else wanted)
        mem = self._mem
        if mem is None:
            for i, key, slot in zip(good, wanted, slots.tolist(), strict=True):
                try:
                    out[i] = self._read_object(self._resolve(key, slot), slot)
                except EntryNotFoundError:
                    if default is _MISSING:
                        raise
            return out
        # Vectorised: gather the index entries, compare keys, bound-check, read the sizes.
        index = np.frombuffer(mem, INDEX_DTYPE, count=self.num_slots, offset=self._index_pos)
        ent = index[slots]
        want = (rows.view("V32").ravel() if rows is not None
                else np.frombuffer(b"".join(wanted), dtype="V32"))
        ofs = ent["ofs"].astype(np.uint64)
        ok = (ent["key"] == want) & (ofs >= self._obj_lo) & (ofs <= self._obj_hi - 8)
        data = np.frombuffer(mem, np.uint8)
        sizes = np.zeros(len(wanted), np.uint64)
        ok_idx = np.flatnonzero(ok)
        if ok_idx.size:
            pos = ofs[ok_idx].astype(np.int64)[:, None] + np.arange(8)
            sizes[ok_idx] = data[pos].view(">u8").ravel()
        last = np.uint64(self._obj_hi - 8)
        ok &= sizes <= last - np.minimum(ofs, last)  # no uint64 wrap-around in ends below
        ends = ofs + np.uint64(8) + np.where(ok, sizes, np.uint64(0))
        starts_l = (ofs + np.uint64(8)).tolist()
        ends_l = ends.tolist()
        raw = getattr(self.source, "raw", None)  # slices of it are bytes: one copy, no view
        copy = raw if raw is not None else mem
        if rows is not None and raw is not None and bool(ok.all()):
            return [copy[a:b] for a, b in zip(starts_l, ends_l, strict=True)]
        for j, (i, good_entry) in enumerate(zip(good, ok.tolist(), strict=True)):
            if good_entry:
                value = copy[starts_l[j] : ends_l[j]]
                out[i] = value if type(value) is bytes else bytes(value)
                continue
            slot = int(slots[j])
            try:  # the slow path gives the value of an odd-but-valid entry or the exact error
                out[i] = self._read_object(self._resolve(wanted[j], slot), slot)
            except EntryNotFoundError:
                if default is _MISSING:
                    raise
        return out

    # -- verification ------------------------------------------------------------------------

    def verify(self, content_hash: str | None = None,
               progress: Callable[[int, int], None] | None = None) -> list[Problem]:
        """Run every check; return the problems found (empty list: the shard is sound).

        Accepts both writer generations (unused slots empty or tombstones) and pre-allocated
        files (zeros after the dump). Over a remote source the file is read in large
        sequential blocks (:data:`VERIFY_BLOCK`), each byte about once.

        Args:
            content_hash: ``"sha256"`` (or another hashlib name) to also check key == H(value).
            progress: Called as ``progress(done, total)`` while live entries are checked.
        """
        if content_hash is not None:
            try:
                hashlib.new(content_hash)
            except ValueError as exc:
                raise ShardkitError(f"unknown content hash {content_hash!r}") from exc
        src: Any = (self.source if self._mem is not None else
                    _Blocks(self.source, limit=self.header.index_position))
        try:
            return self._verify(src, content_hash, progress)
        finally:
            if src is not self.source:
                src.close()

    def _verify(self, src: Any, hasher: str | None,
                progress: Callable[[int, int], None] | None) -> list[Problem]:
        problems: list[Problem] = []
        add = problems.append
        h = self.header
        for name, lo, hi in (("/reserved", 9, 32), ("/header_padding", HEADER_END,
                                                     h.objects_position)):
            pad = src.read_range(lo, hi)
            if any(pad):
                first = lo + len(pad) - len(pad.lstrip(b"\0"))
                add(Problem("padding", "reserved header bytes are not zero", first, name))
        try:
            chd = self.hash_function
        except ShardkitError as exc:
            add(Problem("hash_function", exc.message, exc.offset, exc.field))
            return problems
        hf_len = self.source.size - h.hash_position
        if chd.dump_size > hf_len:  # pragma: no cover - the decoder needs every byte
            add(Problem("hash_function", f"cmph dump is {chd.dump_size} bytes but only "
                        f"{hf_len} bytes follow hash_position", offset=h.hash_position))
        elif chd.dump_size < hf_len:
            # a pre-allocated file: only zeros may follow the dump
            dump_end = h.hash_position + chd.dump_size
            for lo in range(dump_end, self.source.size, 1 << 20):
                chunk = src.read_range(lo, min(self.source.size, lo + (1 << 20)))
                if any(chunk):
                    first = lo + len(chunk) - len(chunk.lstrip(b"\0"))
                    add(Problem("hash_function", f"cmph dump is {chd.dump_size} bytes but "
                                f"{hf_len} bytes follow hash_position: the bytes after it "
                                f"must be zeros (pre-allocated), byte {first} is not",
                                offset=first, field="/preallocated"))
                    break

        slots_all, keys_all, ofs_all = [], [], []
        tombstones = empty = 0
        for start, arr in self._scan(source=src if src is not self.source else None):
            ofs = arr["ofs"]
            key_bytes = arr["key"]
            is_tomb = ofs == TOMBSTONE
            is_empty = ofs == 0
            tombstones += int(is_tomb.sum())
            empty += int(is_empty.sum())
            holey = np.nonzero(is_tomb | is_empty)[0]
            if holey.size:
                keys_u8 = np.frombuffer(key_bytes[holey].tobytes(), np.uint8).reshape(-1, 32)
                for i in holey[np.any(keys_u8 != 0, axis=1)].tolist():
                    kind = "tombstone" if ofs[i] == TOMBSTONE else "empty slot"
                    add(Problem("index_entry", f"{kind} in slot {start + i} has a non-zero key",
                                self._index_pos + (start + i) * SLOT_SIZE,
                                f"/index/entries/{start + i}/key"))
            live = np.nonzero(~(is_tomb | is_empty))[0]
            slots_all.append(live + start)
            keys_all.append(np.frombuffer(key_bytes[live].tobytes(), np.uint8).reshape(-1, 32))
            ofs_all.append(ofs[live].astype(np.uint64))
        slots = np.concatenate(slots_all) if slots_all else np.zeros(0, np.int64)
        keys = np.concatenate(keys_all) if keys_all else np.zeros((0, 32), np.uint8)
        offsets = np.concatenate(ofs_all) if ofs_all else np.zeros(0, np.uint64)
        live_n = len(slots)

        # every live key hashes to its own slot
        if live_n:
            want = chd.slots(keys)
            for j in np.nonzero(want != slots)[0][:100].tolist():
                s = int(slots[j])
                add(Problem("slot", f"key {keys[j].tobytes().hex()} is in slot {s} but hashes "
                            f"to slot {int(want[j])}", self._index_pos + s * SLOT_SIZE,
                            f"/index/entries/{s}"))

        # counts: objects_count = live + deleted, slots = objects_count + unused
        count = h.objects_count
        deleted = count - live_n
        unused = self.num_slots - count
        if count > self.num_slots:
            add(Problem("count", f"objects_count {count} exceeds the "
                        f"{self.num_slots} index slots", offset=40, field="/header/num_objects"))
        if live_n > count:
            add(Problem("count", f"objects_count is {count} but the index has {live_n} live "
                        "entries", offset=40, field="/header/num_objects"))
        elif empty and count <= self.num_slots and (empty != unused or tombstones != deleted):
            # a zero-initialised index (swh.perfecthash <= 1.3): empty slots are the unused
            # ones, tombstones the deleted objects
            add(Problem("count", f"objects_count is {count}: {live_n} live entries, so "
                        f"{deleted} deleted and {unused} unused slots, but the index has "
                        f"{tombstones} tombstones and {empty} empty slots", offset=40,
                        field="/header/num_objects"))

        # objects inside the objects section, disjoint, one per entry; the gaps between them
        # are deleted objects (zeroed)
        order = np.argsort(offsets, kind="stable")
        prev_end = h.objects_position
        hole_bytes = holes = 0
        total = live_n
        read = src.read_range
        lo_obj, hi_obj = h.objects_position, h.index_position

        def check_hole(lo: int, hi: int) -> None:
            for chunk in range(lo, hi, 1 << 20):
                if any(read(chunk, min(hi, chunk + (1 << 20)))):
                    add(Problem("unreferenced_data", f"bytes [{lo}, {hi}) of the objects "
                                "section belong to no live entry and are not zeroed", lo,
                                "/objects"))
                    return

        for n_done, j in enumerate(order.tolist()):
            s, off = int(slots[j]), int(offsets[j])
            if progress is not None and n_done % 4096 == 0:
                progress(n_done, total)
            if not lo_obj <= off <= hi_obj - 8:
                add(Problem("object_bounds", f"slot {s} points to {off}, outside the objects "
                            f"section [{lo_obj}, {hi_obj})",
                            self._index_pos + s * SLOT_SIZE + KEY_LEN,
                            f"/index/entries/{s}/ofs_object"))
                continue
            if off < prev_end:
                add(Problem("object_overlap", f"object of slot {s} at {off} overlaps the "
                            f"previous object (ends at {prev_end})",
                            self._index_pos + s * SLOT_SIZE + KEY_LEN,
                            f"/index/entries/{s}/ofs_object"))
                continue
            (size,) = _U64.unpack(read(off, off + 8))
            end = off + 8 + size
            if end > hi_obj:
                add(Problem("object_bounds", f"object of slot {s} at {off} claims {size} "
                            f"bytes, past the end of the objects section", off,
                            f"/index/entries/{s}/object/len_data"))
                continue
            if off > prev_end:
                hole_bytes += off - prev_end
                holes += 1
                check_hole(prev_end, off)
            prev_end = end
            if hasher is not None:
                digest = hashlib.new(hasher, read(off + 8, end)).digest()
                key = keys[j].tobytes()
                if digest[:KEY_LEN] != key:
                    add(Problem("content_hash", f"{hasher}(value) of key {key.hex()} is "
                                f"{digest.hex()}", off + 8, f"/index/entries/{s}/object/data"))
        if progress is not None:
            progress(total, total)
        if prev_end < hi_obj:
            hole_bytes += hi_obj - prev_end
            holes += 1
            check_hole(prev_end, hi_obj)

        if live_n > count or count > self.num_slots:
            pass  # the counts are wrong (reported above): the sizes of the gaps tell nothing
        elif deleted == 0 and hole_bytes:
            add(Problem("unreferenced_data", f"{hole_bytes} bytes of the objects section belong "
                        "to no entry, and no object was deleted", h.objects_position,
                        "/objects"))
        elif deleted > 0 and hole_bytes < 8 * deleted:
            add(Problem("count", f"{deleted} deleted objects but only {hole_bytes} bytes of "
                        "deleted objects", h.objects_position, "/objects"))
        elif holes > deleted:
            # every gap between live objects holds at least one deleted object
            add(Problem("count", f"objects_count {count} leaves {deleted} deleted objects, "
                        f"but {holes} separate runs of the objects section hold none live",
                        offset=40, field="/header/num_objects"))
        return problems

    # -- object tree --------------------------------------------------------------------------

    def summary(self, counts: bool | None = None) -> dict[str, Any]:
        """What ``shardkit info`` shows.

        Args:
            counts: Include live/deleted/unused counts (a scan of the whole index). ``None``
                (the default): only when the file is mapped locally and its index is at most
                :data:`SUMMARY_SCAN_LIMIT` bytes; over a URL never unless asked, so an
                ``info`` costs two small requests.
        """
        out: dict[str, Any] = {
            "format": self.format_id,
            "format_name": self.format_name,
            "file": self.source.name,
            "file_size": self.source.size,
            "header": asdict(self.header),
            "slots": self.num_slots,
            "objects_count": self.header.objects_count,
        }
        if counts is None:
            counts = self._mem is not None and self.header.index_size <= SUMMARY_SCAN_LIMIT
        if counts:
            c = self._counts
            out.update(live=c.live, deleted=c.deleted, unused=c.unused,
                       tombstone_slots=c.tombstone_slots, empty_slots=c.empty_slots,
                       index_init=c.index_init)
        lay = self.layout
        out["hash_function"] = {"algorithm": "chd_ph", "hash": "jenkins", "seed": lay.seed,
                                "slots": lay.n, "buckets": lay.nbuckets,
                                "dump_size": lay.dump_size}
        extra = self.source.size - self.header.hash_position - lay.dump_size
        out["preallocated_bytes"] = extra
        return out

    def to_dict(self) -> dict[str, Any]:
        """The whole object tree: summary with counts, every live entry (with sizes), tombstones."""
        out = self.summary(counts=True)
        out["entries"] = [e.to_dict() for e in self.iter_entries(with_sizes=True)]
        out["tombstones"] = [asdict(t) for t in self.tombstones()]
        out["sections"] = [s.to_dict() for s in self.sections()]
        return out

    def parse_key(self, text: str) -> bytes:
        """A key from its hex form (as ``shardkit get`` takes it)."""
        try:
            key = bytes.fromhex(text)
        except ValueError as exc:
            raise InvalidKeyError(f"not a hex key: {text!r}") from exc
        if len(key) != KEY_LEN:
            raise InvalidKeyError(f"SWH keys are {KEY_LEN} bytes ({2 * KEY_LEN} hex digits), "
                                  f"got {len(key)}")
        return key

    def format_key(self, key: bytes) -> str:
        """A key's display form (hex)."""
        return key.hex()
