"""The SWH read shard reader (see :mod:`shardkit.formats.swh`)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict
from functools import cached_property
from itertools import chain
from typing import Any, NoReturn, cast

from ..._accel import accelerator
from ..._kaitai import kaitai_errors, parse
from ...errors import (
    CorruptShardError,
    DeletedEntryError,
    EntryNotFoundError,
    InvalidKeyError,
    LayoutError,
    Problem,
    ShardkitError,
    TruncatedError,
    UnsupportedVersionError,
)
from ...generated.swh_read_shard import SwhReadShard
from ...hashing.cmph_chd import (
    LAYOUT_PREFIX_SIZE,
    ChdLayout,
    ChdPh,
    CmphError,
    LazyChdPh,
    check_tail,
    parse_layout,
)
from ...hashing.cmph_chd import lazy_numpy as np
from ...sources import ByteSource, FileSource, as_stream
from ..base import Reader, Section
from . import model as _model
from .blocks import _Blocks as _Blocks
from .blocks import _is_local as _is_local
from .blocks import _PreadSource as _PreadSource
from .model import (
    _CMPH_FIELDS,
    _ENTRY,
    _MISSING,
    _U64,
    _ZERO_KEY,
    HEADER_END,
    KEY_LEN,
    OBJECT_READAHEAD,
    REMOTE_DUMP_ONE_READ,
    SLOT_SIZE,
    SUMMARY_SCAN_LIMIT,
    TOMBSTONE,
    VERIFY_BLOCK,
    SwhCounts,
    SwhEntry,
    SwhHeader,
    Tombstone,
    _is_key,
    normalize_key,
)

__all__ = ["ITEMS_CHUNK", "LOCAL_VERIFY_BLOCK", "MAP_LOOKUPS_LIMIT", "SwhShard",
           "native_available"]

#: ``items()`` reads the objects of a local file in sequential windows of this size.
ITEMS_CHUNK = 2 << 20
#: Lookups in a local file whose objects and index take at most this many bytes read them
#: from the mapping (at most this much stays resident); larger files are read with pread.
MAP_LOOKUPS_LIMIT = 64 << 20
#: ``verify`` reads a local file's objects section in blocks of this size (two kept).
LOCAL_VERIFY_BLOCK = 1 << 20

#: The optional C accelerator of lookups and verify (same answers as the Python path).
_native: Any = accelerator("shardkit.formats.swh._native")


def _pairs(keys: np.ndarray, rows: np.ndarray, buf: bytes, firsts: np.ndarray,
           ends: np.ndarray) -> list[tuple[bytes, bytes]]:
    """``[(keys[rows[i]], buf[firsts[i]:ends[i]])...]`` for rows of 32-byte keys (C when
    built)."""
    if _native is not None:
        pairs: list[tuple[bytes, bytes]] = _native.pairs(keys, rows, buf, firsts, ends)
        return pairs
    return list(zip(keys[rows].view("V32").ravel().tolist(),
                    [buf[a:b] for a, b in zip(firsts.tolist(), ends.tolist(), strict=True)],
                    strict=True))


def native_available() -> bool:
    """Whether lookups, iteration and ``verify`` use the C accelerator."""
    return _native is not None


def _digest_size(name: str) -> int | None:
    """The digest size of hashlib's ``name`` (0 for variable-length), ``None`` if unknown."""
    try:
        return int(hashlib.new(name).digest_size)
    except (ValueError, TypeError):
        return None


def _check_content_hash(name: object) -> None:
    """Refuse a ``verify(content_hash=...)`` that cannot give a 32-byte key."""
    size = _digest_size(name) if isinstance(name, str) else None
    if size == KEY_LEN:
        return
    usable = sorted(n for n in hashlib.algorithms_available if _digest_size(n) == KEY_LEN)
    what = (f"unknown content hash {name!r}" if size is None else
            f"content hash {name!r} has a variable-length digest" if size == 0 else
            f"content hash {name!r} gives {size}-byte digests")
    raise ShardkitError(f"{what}; SWH keys are {KEY_LEN} bytes: use one of "
                        f"{', '.join(usable)}")


def _normalized_keys(given: list[Any], default: Any
                     ) -> tuple[list[bytes], list[int], list[Any]]:
    """``get_many`` keys of any form: the normalized keys, their positions in ``given``, and
    the output list (``default`` everywhere). A malformed key raises unless ``default`` is
    given (then it is left out)."""
    norm: list[bytes | None] = []
    for k in given:
        try:
            norm.append(normalize_key(k))
        except InvalidKeyError:
            if default is _MISSING:
                raise
            norm.append(None)
    wanted = [k for k in norm if k is not None]
    good = [i for i, k in enumerate(norm) if k is not None]
    return wanted, good, [default] * len(norm)


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
        # the C lookup's get (set by the first lookup when the accelerator reads this source)
        self._fast_get: Callable[[bytes], bytes | None] | None = None

    def __enter__(self) -> SwhShard:
        return self

    def close(self) -> None:
        """Release the file mapping."""
        self._getter = None
        self._fast_get = None
        native = self.__dict__.pop("_native_lookup", None)
        if native is not None:
            native.close()  # its buffers are views of the mapping: released first
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
             f"truncated: hash_position {h.hash_position} is past the end of the file "
             f"({size} bytes)"),
        ]
        for ok, field, offset, message in checks:
            if not ok:
                raise LayoutError(message, offset=offset, field=field)

    def _cmph_error(self, exc: CmphError, what: str = "bad cmph hash function"
                    ) -> LayoutError | UnsupportedVersionError:
        """A dump error as a :class:`LayoutError` (an unknown hash: UnsupportedVersionError)
        with the absolute offset and schema path."""
        if exc.field == "hl.name":
            return UnsupportedVersionError(
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

    def _fd(self) -> int:
        """The descriptor of a local file (read with pread), else -1."""
        fh = getattr(self.source, "_fh", None) if isinstance(self.source, FileSource) else None
        return fh.fileno() if fh is not None and not fh.closed else -1

    def _reader(self) -> Any:
        """What whole-file scans read through: pread windows for a local file (bounded
        resident memory), else the source itself."""
        fd = self._fd()
        return _PreadSource(self.source, fd) if fd >= 0 else self.source

    @cached_property
    def _native_lookup(self) -> Any:
        """The C lookup (hash, slot, index probe, value), or None without the accelerator.

        A local file's index and objects are read with pread (nothing of them stays
        resident) unless they take at most :data:`MAP_LOOKUPS_LIMIT` bytes; a buffer in
        memory is read directly; over a URL it only computes slots.
        """
        if _native is None:
            return None
        lay = self._lookup.layout  # reads the dump first, then checks its layout and tail
        fd = self._fd()
        if self.header.hash_position - self._obj_lo <= MAP_LOOKUPS_LIMIT:
            fd = -1  # a small shard: read from the mapping (no system call per lookup)
        file = self._mem if fd < 0 else None
        try:
            return _native.Lookup(self._dump, lay.n, lay.nbuckets, lay.seed, lay.rem_r,
                                  lay.total_length, lay.sel_m, lay.bits_vec, lay.select_table,
                                  lay.length_rems, lay.store_table, lay.dump_size, file, fd,
                                  self._index_pos, self.num_slots, self._obj_lo, self._obj_hi)
        except (ValueError, BufferError):  # pragma: no cover - parse_layout checked them
            return None

    def _slot(self, key: bytes) -> int:
        """``cmph_search``'s slot of a 32-byte key (C when it can; the Python path raises)."""
        native = self._native_lookup
        if native is not None:
            slot: int = native.slot(key)
            if slot >= 0:
                return slot
        return self._lookup.slot(key)

    def _slots(self, rows: np.ndarray) -> np.ndarray:
        """Slots of the keys in the rows of a 2-D ``uint8`` array (32 bytes each).

        A batch answers as the same keys looked up one at a time do, with the accelerator or
        without: from the select blocks the keys land in. A fault elsewhere in the function
        does not stop it; a fault in one of those blocks raises that block's error.
        """
        native = self._native_lookup
        if native is not None and len(rows):
            out = np.empty(len(rows), np.int64)
            if native.slots_into(np.ascontiguousarray(rows), out) == len(rows):
                return out
        try:
            chd = self.hash_function  # the whole function decoded, numpy for the batch
        except CorruptShardError:  # a fault elsewhere: the blocks of these keys decide
            slot_of = self._lookup.slot
            try:
                return np.array([slot_of(bytes(r)) for r in rows], dtype=np.int64)
            except CmphError as exc:
                raise self._cmph_error(exc) from exc
        return chd.slots(rows)

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
            return np.frombuffer(self._mem[lo:hi], dtype=_model.INDEX_DTYPE)
        raw = (source or self.source).read_range(lo, hi)
        return np.frombuffer(raw, dtype=_model.INDEX_DTYPE)

    def _scan(self, chunk: int = 1 << 16, source: Any = None
              ) -> Iterator[tuple[int, np.ndarray]]:
        if self._mem is None:
            # remote: a few large reads rather than one per 64k slots
            chunk = max(chunk, VERIFY_BLOCK // SLOT_SIZE)
        elif source is None and self._fd() >= 0:
            source = self._reader()  # pread windows: the index never stays resident
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
        for _, arr in self._scan():
            ofs = arr["ofs"]
            yield from arr["key"][(ofs != TOMBSTONE) & (ofs != 0)].tolist()

    __iter__ = keys

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) for every live entry, through the index.

        A local file or a buffer is read in file order (offset order): the live entries are
        sorted by offset in windows of about :data:`~shardkit.formats.swh.verify.WINDOW`
        (one pass over the index each), and their objects read in sequential windows of
        :data:`ITEMS_CHUNK` bytes, so memory stays bounded at any size. Over a URL the
        entries come in slot order, each object with read-ahead.
        """
        if self._mem is None:
            return ((e.key, self._read_object(e.offset, e.slot)) for e in self.iter_entries())
        return chain.from_iterable(self._item_batches())  # no Python step per item

    def _item_batches(self) -> Iterator[list[tuple[bytes, bytes]]]:
        """The live entries' (key, value), in offset order, one list per read window."""
        from .verify import WINDOW, offset_order, offset_windows, window_entries

        src = self._reader()
        for b_lo, b_hi, count in offset_windows(self, WINDOW, src):
            slots, offsets, keys = window_entries(self, src, b_lo, b_hi, True, count)
            order = offset_order(offsets)
            offsets = offsets[order]
            yield from self._objects_in_order(src, slots, offsets, keys, order)
            del slots, offsets, keys, order  # before the next window's

    def _objects_in_order(self, src: Any, slots: np.ndarray, offsets: np.ndarray,
                          keys: np.ndarray, order: np.ndarray
                          ) -> Iterator[list[tuple[bytes, bytes]]]:
        """Batches of (key, value) in offset order: ``offsets`` sorted, the entry of
        ``offsets[i]`` being row ``order[i]`` of ``slots`` and ``keys`` (32-byte rows)."""
        lo, hi = self._obj_lo, self._obj_hi
        count, i = len(offsets), 0
        eight = np.arange(8)
        while i < count:
            start = int(offsets[i])
            if not lo <= start <= hi - 8:  # the Python path raises the precise error
                e = int(order[i])
                yield [(keys[e].tobytes(), self._read_object(start, int(slots[e])))]
                i += 1
                continue
            stop = min(hi, start + ITEMS_CHUNK)
            buf = src.read_range(start, stop)
            j = i + int(np.searchsorted(offsets[i:], np.uint64(stop - 8), side="right"))
            rel = (offsets[i:j] - np.uint64(start)).astype(np.int64)
            data = np.frombuffer(buf, np.uint8)
            sizes = data[rel[:, None] + eight].view(">u8").ravel()
            room = np.uint64(len(buf)) - rel.astype(np.uint64) - np.uint64(8)
            fits = sizes <= room  # no wrap-around: room >= 0 as rel + 8 <= len(buf)
            k = int(np.argmin(fits)) if not bool(fits.all()) else j - i
            if k == 0:  # an object larger than a chunk, or one past the section's end
                e = int(order[i])
                yield [(keys[e].tobytes(), self._read_object(start, int(slots[e])))]
                i += 1
                continue
            firsts = rel[:k] + 8
            ends = firsts + sizes[:k].astype(np.int64)
            yield _pairs(keys, order[i : i + k], buf, firsts, ends)
            i += k

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

        Raises:
            LayoutError: Without candidates, when ``objects_count`` exceeds the index slots
                (``verify`` reports it as a ``count`` problem): it cannot size the list.
        """
        if candidates is None:
            count = self.header.objects_count
            if count > self.num_slots:
                raise LayoutError(f"objects_count {count} exceeds the {self.num_slots} index "
                                  "slots", offset=40, field="/header/num_objects")
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
            return self._slot(key)
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
            if self._tombstones_are_deletions(exact=False):
                raise DeletedEntryError(key, f"key {key.hex()} was deleted (tombstone in slot "
                                        f"{slot})")
            raise DeletedEntryError(key, f"key {key.hex()} is not in the shard: its slot {slot} "
                                    "is a tombstone (a deleted object, or a slot no object used)")
        if stored != key or ofs == 0:  # ofs 0: an empty slot (its zero key can match a query)
            raise EntryNotFoundError(key, f"key not found: {key.hex()}")
        return ofs

    def _tombstones_are_deletions(self, exact: bool = True) -> bool:
        """Whether a tombstone can only be a deleted object (decided once, from the header).

        True when the function has no unused slot, or the index is zero-initialised
        (swh.perfecthash <= 1.3: its unused slots are empty). Telling the latter needs an
        index scan: done for mapped files, not over a URL, where a tombstone then reads as
        "deleted, or never used". With ``exact=False`` (a lookup's error message) the scan
        stops after the first 64k slots, so a lookup never costs time in proportion to the
        shard: an empty slot there answers, else the answer is "not known" (False).
        """
        if self.header.objects_count >= self.num_slots:
            return True
        if "_counts" not in self.__dict__:
            if self._mem is None:
                return False
            if not exact:
                return self._empty_slot_early
        return self._counts.index_init == "zeros"

    @cached_property
    def _empty_slot_early(self) -> bool:
        """Whether the first 64k slots hold an empty one (or, for a smaller index, any)."""
        for _, arr in self._scan():
            if self.num_slots <= len(arr):  # the whole index: exact
                return self._counts.index_init == "zeros"
            return bool((arr["ofs"] == 0).any())
        return False  # pragma: no cover - an index has at least one slot

    def __getitem__(self, key: bytes | str) -> bytes:
        fast = self._fast_get
        if fast is not None:
            value = fast(key)  # type: ignore[arg-type]  # None unless 20 bytes
            if value is not None:
                return value
        getter = self._getter
        if getter is None:
            getter = self._getter = self._make_getter()
        return getter(key)  # type: ignore[arg-type]  # it normalizes str keys

    def _make_getter(self) -> Callable[[bytes], bytes]:
        """The lookup, as a closure over everything it needs (the hot path of ``s[key]``).

        With a mapped source it unpacks the index entry and the object's size straight from
        the mapping; anything unusual (absent key, tombstone, a bound exceeded, no mapping)
        goes to the ranged-read path, which also raises the precise error.
        """
        slot_of = self._slot
        native = self._native_lookup
        if native is not None and (self._mem is not None or self._fd() >= 0):
            self._fast_get = native.get  # present keys; the closure below does the rest
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
        given = list(keys)
        wanted: list[bytes]
        good: Sequence[int]
        if given and set(map(type, given)) == {bytes} and set(map(len, given)) == {KEY_LEN}:
            # the common case, without a Python step per key
            wanted = cast("list[bytes]", given)
            good = range(len(given))
            out: list[Any] = [default] * len(given)
            given_rows = True
        else:
            wanted, good, out = _normalized_keys(given, default)
            if not good:
                return out
            given_rows = False
        rows = np.frombuffer(b"".join(wanted), np.uint8).reshape(-1, KEY_LEN)
        slots = self._slots(rows)
        if self._mem is None:
            for i, key, slot in zip(good, wanted, slots.tolist(), strict=True):
                try:
                    out[i] = self._read_object(self._resolve(key, slot), slot)
                except EntryNotFoundError:
                    if default is _MISSING:
                        raise
            return out
        return self._get_many_mapped(self._mem, rows, slots, given_rows, good, wanted, out,
                                     default)

    def _get_many_mapped(self, mem: Any, rows: np.ndarray, slots: np.ndarray, given_rows: bool,
                         good: Sequence[int], wanted: list[bytes], out: list[Any],
                         default: Any) -> list[Any]:
        """``get_many`` over a mapped file. Vectorised: gather the index entries, compare
        keys, bound-check, read the sizes."""
        index = np.frombuffer(mem, _model.INDEX_DTYPE, count=self.num_slots, offset=self._index_pos)
        ent = index[slots]
        want = rows.view("V32").ravel()
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
        if given_rows and raw is not None and bool(ok.all()):
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
            content_hash: ``"sha256"`` (or another hashlib name of a fixed 32-byte digest:
                ``blake2s``, ``sha3_256``...) to also check key == H(value).
            progress: Called as ``progress(done, total)`` while live entries are checked.

        Raises:
            ShardkitError: ``content_hash`` is not a hashlib name, or its digest is not
                32 bytes (a key could never equal it); the message names the usable ones.
        """
        if content_hash is not None:
            _check_content_hash(content_hash)
        # a URL or a local file: large sequential blocks (a file's with pread, so that what
        # verify reads never stays resident); a buffer in memory: read as it is
        reader = self._reader() if self._mem is not None else self.source
        if reader is not self.source or _is_local(self.source):
            # pread into reused buffers is cheap: small blocks, little memory, no new pages
            src: Any = _Blocks(reader, block=LOCAL_VERIFY_BLOCK, keep=2,
                               limit=self.header.index_position, into=True)
        elif self._mem is not None:
            src = self.source
        else:
            src = _Blocks(reader, limit=self.header.index_position)
        try:
            return self._verify(src, content_hash, progress)
        finally:
            if src is not self.source:
                src.close()

    def _verify(self, src: Any, hasher: str | None,
                progress: Callable[[int, int], None] | None) -> list[Problem]:
        from .verify import check

        return check(self, src, hasher, progress)

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
