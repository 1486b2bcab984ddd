"""Software Heritage read shards (``swh.perfecthash``): lookup, iteration and verification.

Layout: ``schemas/swh_read_shard.ksy`` (generated class :class:`SwhReadShard`). This module adds
the meaning: the cmph CHD_PH function maps a 32-byte key to its index slot; a slot is live,
empty (zero key, offset 0) or a tombstone (zero key, offset 2**64-1, written by
``Shard.delete``, which also zeroes the object's size and data and leaves ``objects_count``
alone). Deleted keys cannot be read back from the file: the key and the object are zeroed, so
:meth:`SwhShard.deleted_keys` tells which *candidate* keys land on a tombstone.

Hot paths (lookups, the index scan) read the mapped bytes directly with ``struct``/numpy; the
tests check them equal to the Kaitai path.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any

import numpy as np

from .._kaitai import kaitai_errors, parse
from ..errors import (
    DeletedEntryError,
    EntryNotFoundError,
    InvalidKeyError,
    LayoutError,
    Problem,
    ShardkitError,
    UnsupportedVersionError,
)
from ..generated.swh_read_shard import SwhReadShard
from ..hashing.cmph_chd import ChdPh, CmphError
from ..sources import ByteSource, as_stream
from .base import Reader, Section

__all__ = ["KEY_LEN", "SLOT_SIZE", "TOMBSTONE", "SwhEntry", "SwhHeader", "SwhShard", "Tombstone"]

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
}


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
class Tombstone:
    """A deleted entry's slot (its key and object are zeroed in the file)."""

    slot: int
    index_offset: int


class SwhShard(Reader):
    """A Software Heritage read shard.

    Opening reads only the 88 header bytes; the hash function is loaded on the first lookup,
    the index is scanned only by whole-shard operations (``len``, ``keys``, ``verify``).

    Example::

        with shardkit.open("objects.shard") as s:
            data = s[bytes.fromhex("a948...47")]
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

    def close(self) -> None:
        """Release the file mapping."""
        self._getter = None
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

    @cached_property
    def hash_function(self) -> ChdPh:
        """The CHD_PH function (read and decoded on first use)."""
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
        return [
            Section("/magic", 0, 9, "SWHShard\\0"),
            Section("/reserved", 9, 32, "zero padding"),
            Section("/header", 32, HEADER_END, "7 x u64 big-endian"),
            Section("/header_padding", HEADER_END, h.objects_position, "zero padding"),
            Section("/objects", h.objects_position, h.index_position,
                    f"{h.objects_count} objects (u64 size + data)"),
            Section("/index", h.index_position, h.hash_position,
                    f"{self.num_slots} slots x {SLOT_SIZE} bytes"),
            Section("/hash_function", h.hash_position, self.source.size, "cmph CHD_PH dump"),
        ]

    # -- the index -----------------------------------------------------------------------------

    def _index_array(self, start_slot: int = 0, end_slot: int | None = None) -> np.ndarray:
        """Index slots ``[start_slot, end_slot)`` as a numpy structured array (key, ofs)."""
        end_slot = self.num_slots if end_slot is None else end_slot
        lo = self._index_pos + start_slot * SLOT_SIZE
        hi = self._index_pos + end_slot * SLOT_SIZE
        view = getattr(self.source, "view", None)
        raw = view(lo, hi) if view is not None else self.source.read_range(lo, hi)
        return np.frombuffer(raw, dtype=INDEX_DTYPE)

    def _scan(self, chunk: int = 1 << 16) -> Iterator[tuple[int, np.ndarray]]:
        for start in range(0, self.num_slots, chunk):
            yield start, self._index_array(start, min(start + chunk, self.num_slots))

    @cached_property
    def _counts(self) -> tuple[int, int, int]:
        live = tomb = 0
        for _, arr in self._scan():
            ofs = arr["ofs"]
            tomb += int(np.count_nonzero(ofs == TOMBSTONE))
            live += int(np.count_nonzero((ofs != TOMBSTONE) & (ofs != 0)))
        return live, tomb, self.num_slots - live - tomb

    @property
    def live_count(self) -> int:
        """Number of live objects (scans the index once)."""
        return self._counts[0]

    @property
    def deleted_count(self) -> int:
        """Number of tombstones."""
        return self._counts[1]

    def __len__(self) -> int:
        return self._counts[0]

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
        """Slots whose entry was deleted."""
        out = []
        for start, arr in self._scan():
            for i in np.nonzero(arr["ofs"] == TOMBSTONE)[0].tolist():
                out.append(Tombstone(start + i, self._index_pos + (start + i) * SLOT_SIZE))
        return out

    def deleted_keys(self, candidates: Iterable[bytes] | None = None) -> list[bytes]:
        """The deleted keys: which of ``candidates`` hash to a tombstone slot.

        A read shard zeroes a deleted entry's key and its object, so the keys themselves cannot
        be read back from the file. Give the keys you expect (for example the shard's original
        key list) to learn which were deleted; a key that was never in the shard can also land
        on a tombstone. Without candidates, the result has one entry per tombstone, each the
        zeroed key as stored (so ``len(s.deleted_keys())`` is the number of deletions); see
        :meth:`tombstones` for their slots.
        """
        if candidates is None:
            return [_ZERO_KEY for _ in self.tombstones()]
        cands = [bytes(k) for k in candidates if len(k) == KEY_LEN]
        if not cands:
            return []
        tombs = {t.slot for t in self.tombstones()}
        slots = self.hash_function.slots(cands)
        return [k for k, s in zip(cands, slots.tolist(), strict=True) if s in tombs]

    # -- lookups ------------------------------------------------------------------------------

    def slot_of(self, key: bytes) -> int:
        """The index slot the hash function gives ``key`` (whether or not it is present)."""
        return self.hash_function.slot(key)

    def _object_size(self, offset: int, slot: int) -> int:
        if not self._obj_lo <= offset <= self._obj_hi - 8:
            raise LayoutError(f"slot {slot} points to {offset}, outside the objects section "
                              f"[{self._obj_lo}, {self._obj_hi})", offset=self._index_pos
                              + slot * SLOT_SIZE + KEY_LEN, field=f"/index/entries/{slot}")
        (size,) = _U64.unpack(self.source.read_range(offset, offset + 8))
        if size > self._obj_hi - offset - 8:
            raise LayoutError(f"object of slot {slot} claims {size} bytes, only "
                              f"{self._obj_hi - offset - 8} remain in the objects section",
                              offset=offset, field=f"/index/entries/{slot}/object/len_data")
        return size

    def _read_object(self, offset: int, slot: int) -> bytes:
        size = self._object_size(offset, slot)
        return self.source.read_range(offset + 8, offset + 8 + size)

    def _entry(self, slot: int) -> tuple[bytes, int]:
        pos = self._index_pos + slot * SLOT_SIZE
        key, ofs = _ENTRY.unpack(self.source.read_range(pos, pos + SLOT_SIZE))
        return key, ofs

    def _resolve(self, key: bytes, slot: int) -> int:
        stored, ofs = self._entry(slot)
        if ofs == TOMBSTONE:
            raise DeletedEntryError(key, f"key {key.hex()} was deleted (tombstone in slot {slot})")
        if stored != key or ofs == 0:  # ofs 0: an empty slot (its zero key can match a query)
            raise EntryNotFoundError(key, f"key not found: {key.hex()}")
        return ofs

    def __getitem__(self, key: bytes) -> bytes:
        getter = self._getter
        if getter is None:
            getter = self._getter = self._make_getter()
        return getter(key)

    def _make_getter(self) -> Callable[[bytes], bytes]:
        """The lookup, as a closure over everything it needs (the hot path of ``s[key]``).

        With a mapped source it unpacks the index entry and the object's size straight from
        the mapping; anything unusual (absent key, tombstone, a bound exceeded, no mapping)
        goes to the ranged-read path, which also raises the precise error.
        """
        slot_of = self.hash_function.slot
        # a bytes-like object whose slices are bytes (the mmap itself) copies values fastest
        raw = getattr(self.source, "raw", None)
        mem = raw if raw is not None else self._mem
        index_pos, lo, hi = self._index_pos, self._obj_lo, self._obj_hi
        last = hi - 8
        unpack_entry, unpack_u64 = _ENTRY.unpack_from, _U64.unpack_from
        slow = self._get_ranged

        def getter(key: bytes) -> bytes:
            if type(key) is not bytes:
                key = bytes(key)
            if len(key) != KEY_LEN:
                raise EntryNotFoundError(key, f"SWH keys are {KEY_LEN} bytes, got {len(key)}")
            slot = slot_of(key)
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
        if not isinstance(key, (bytes, bytearray, memoryview)) or len(key) != KEY_LEN:
            return False
        key = bytes(key)
        stored, ofs = self._entry(self.hash_function.slot(key))
        return stored == key and ofs not in (0, TOMBSTONE)

    def get_many(self, keys: Sequence[bytes], default: Any = _MISSING) -> list[Any]:
        """Values of many keys at once: hashes all keys in one numpy pass, then reads each.

        Raises :class:`EntryNotFoundError` at the first missing key unless ``default`` is given,
        in which case missing keys give ``default``.
        """
        keys = [bytes(k) for k in keys]
        good = [i for i, k in enumerate(keys) if len(k) == KEY_LEN]
        out: list[Any] = [default] * len(keys)
        if len(good) != len(keys) and default is _MISSING:
            bad = next(k for k in keys if len(k) != KEY_LEN)
            raise EntryNotFoundError(bad, f"SWH keys are {KEY_LEN} bytes, got {len(bad)}")
        if not good:
            return out
        wanted = [keys[i] for i in good]
        slots = self.hash_function.slots(wanted)
        mem = self._mem
        if mem is None:
            for i, slot in zip(good, slots.tolist(), strict=True):
                try:
                    out[i] = self._read_object(self._resolve(keys[i], slot), slot)
                except EntryNotFoundError:
                    if default is _MISSING:
                        raise
            return out
        # Vectorised: gather the index entries, compare keys, bound-check, read the sizes.
        index = np.frombuffer(mem, INDEX_DTYPE, count=self.num_slots, offset=self._index_pos)
        ent = index[slots]
        want = np.frombuffer(b"".join(wanted), dtype="V32")
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
        for j, (i, good_entry) in enumerate(zip(good, ok.tolist(), strict=True)):
            if good_entry:
                value = copy[starts_l[j] : ends_l[j]]
                out[i] = value if type(value) is bytes else bytes(value)
                continue
            slot = int(slots[j])
            try:  # the slow path gives the value of an odd-but-valid entry or the exact error
                out[i] = self._read_object(self._resolve(keys[i], slot), slot)
            except EntryNotFoundError:
                if default is _MISSING:
                    raise
        return out

    # -- verification ------------------------------------------------------------------------

    def verify(self, content_hash: str | None = None,
               progress: Callable[[int, int], None] | None = None) -> list[Problem]:
        """Run every check; return the problems found (empty list: the shard is sound).

        Args:
            content_hash: ``"sha256"`` (or another hashlib name) to also check key == H(value).
            progress: Called as ``progress(done, total)`` while live entries are checked.
        """
        problems: list[Problem] = []
        add = problems.append
        h = self.header
        for name, lo, hi in (("/reserved", 9, 32), ("/header_padding", HEADER_END,
                                                     h.objects_position)):
            pad = self.source.read_range(lo, hi)
            if any(pad):
                first = lo + len(pad) - len(pad.lstrip(b"\0"))
                add(Problem("padding", "reserved header bytes are not zero", first, name))
        try:
            chd = self.hash_function
        except ShardkitError as exc:
            add(Problem("hash_function", exc.message, exc.offset, exc.field))
            return problems
        hf_len = self.source.size - h.hash_position
        if chd.dump_size != hf_len:
            add(Problem("hash_function", f"cmph dump is {chd.dump_size} bytes but "
                        f"{hf_len} bytes follow hash_position", offset=h.hash_position))

        slots_all, keys_all, ofs_all = [], [], []
        tombstones = empty = 0
        for start, arr in self._scan():
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

        # counts
        if live_n + tombstones != h.objects_count:
            add(Problem("count", f"objects_count is {h.objects_count} but the index has "
                        f"{live_n} live entries and {tombstones} tombstones", offset=40,
                        field="/header/num_objects"))
        if h.objects_count > self.num_slots:
            add(Problem("count", f"objects_count {h.objects_count} exceeds the "
                        f"{self.num_slots} index slots", offset=40, field="/header/num_objects"))

        # objects inside the objects section, disjoint, one per entry
        order = np.argsort(offsets, kind="stable")
        prev_end = h.objects_position
        covered = 0
        hole_ranges: list[tuple[int, int]] = []
        total = live_n
        hasher = content_hash
        if hasher is not None:
            try:
                hashlib.new(hasher)
            except ValueError as exc:
                raise ShardkitError(f"unknown content hash {hasher!r}") from exc
        for n_done, j in enumerate(order.tolist()):
            s, off = int(slots[j]), int(offsets[j])
            where = f"/index/entries/{s}/ofs_object"
            entry_pos = self._index_pos + s * SLOT_SIZE + KEY_LEN
            if progress is not None and n_done % 4096 == 0:
                progress(n_done, total)
            if not h.objects_position <= off <= h.index_position - 8:
                add(Problem("object_bounds", f"slot {s} points to {off}, outside the objects "
                            f"section [{h.objects_position}, {h.index_position})",
                            entry_pos, where))
                continue
            if off < prev_end:
                add(Problem("object_overlap", f"object of slot {s} at {off} overlaps the "
                            f"previous object (ends at {prev_end})", entry_pos, where))
                continue
            (size,) = _U64.unpack(self.source.read_range(off, off + 8))
            end = off + 8 + size
            if end > h.index_position:
                add(Problem("object_bounds", f"object of slot {s} at {off} claims {size} "
                            f"bytes, past the end of the objects section", off,
                            f"/index/entries/{s}/object/len_data"))
                continue
            if off > prev_end:
                hole_ranges.append((prev_end, off))
            covered += end - off
            prev_end = end
            if hasher is not None:
                digest = hashlib.new(hasher, self.source.read_range(off + 8, end)).digest()
                key = keys[j].tobytes()
                if digest[:KEY_LEN] != key:
                    add(Problem("content_hash", f"{hasher}(value) of key {key.hex()} is "
                                f"{digest.hex()}", off + 8, f"/index/entries/{s}/object/data"))
        if progress is not None:
            progress(total, total)
        if prev_end < h.index_position:
            hole_ranges.append((prev_end, h.index_position))

        # gaps between live objects must be deleted (zeroed) objects
        hole_bytes = 0
        for lo, hi in hole_ranges:
            hole_bytes += hi - lo
            for chunk in range(lo, hi, 1 << 20):
                if any(self.source.read_range(chunk, min(hi, chunk + (1 << 20)))):
                    add(Problem("unreferenced_data", f"bytes [{lo}, {hi}) of the objects "
                                "section belong to no live entry and are not zeroed", lo,
                                "/objects"))
                    break
        if hole_bytes and not tombstones:
            add(Problem("unreferenced_data", f"{hole_bytes} bytes of the objects section belong "
                        "to no entry, and there are no tombstones", h.objects_position,
                        "/objects"))
        if tombstones and hole_bytes < 8 * tombstones:
            add(Problem("count", f"{tombstones} tombstones but only {hole_bytes} bytes of "
                        "deleted objects", h.objects_position, "/objects"))
        return problems

    # -- object tree --------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """What ``shardkit info`` shows."""
        out: dict[str, Any] = {
            "format": self.format_id,
            "format_name": self.format_name,
            "file": self.source.name,
            "file_size": self.source.size,
            "header": asdict(self.header),
            "slots": self.num_slots,
            "live": self.live_count,
            "deleted": self.deleted_count,
            "empty_slots": self.num_slots - self.live_count - self.deleted_count,
        }
        chd = self.hash_function
        out["hash_function"] = {"algorithm": "chd_ph", "hash": "jenkins", "seed": chd.seed,
                                "slots": chd.n, "buckets": chd.nbuckets,
                                "dump_size": chd.dump_size}
        return out

    def to_dict(self) -> dict[str, Any]:
        """The whole object tree: summary, every live entry (with sizes), tombstones."""
        out = self.summary()
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
