"""The hot paths of :meth:`MdbShard.file` and :meth:`MdbShard.find_chunk` on a mapped shard.

A lookup table's truncated keys go into a :class:`ProbeTable`: an open-addressing table of
(key, value) pairs of u64, twice as many slots as entries or more, each entry at or after its
home slot (the key's top bits) in ascending key order. Truncated hashes are spread evenly, so
a search reads one or two neighbouring pairs: one memory access instead of the bucket starts,
the key and the column of a sorted index. Building it is a few numpy passes over the table
(tens of milliseconds and 32 to 64 bytes per entry at a million entries), done on the first
lookup.

The lookups themselves are closures over everything they read (the mapping, the table, the
bounds, bound methods), as the SWH reader does for ``s[key]``: no attribute lookups and no
copies of the key per call. What they return is built exactly as the reader's other paths
build it, so both compare equal (a file through :class:`~.model._FileInfoSlots`: plain slot
stores, then the class). Anything unusual (a key of all one bits, no mapping) goes to
the reader's general path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..._lazy import lazy_module
from ...hashing import xet as xh
from .model import (
    _FILE_HEAD,
    _TERM,
    _U64,
    FILE_FLAG_METADATA_EXT,
    FILE_FLAG_VERIFICATION,
    HEADER_SIZE,
    RECORD_SIZE,
    ChunkEntry,
    ChunkRef,
    FileInfo,
    XetHash,
    _as_raw,
    _FileInfoSlots,
    _new_hash,
)

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

__all__ = ["ProbeTable", "chunk_lookup", "dict_lookup", "file_lookup"]

_EMPTY = 2**64 - 1  # an empty slot: key and value all ones (no record is that far)
_U32 = 0xFFFF_FFFF


class ProbeTable:
    """Truncated keys and their u64 values in sorted linear-probing order.

    ``slots`` is a flat view of u64 pairs (key, value); empty slots hold all ones in both. A
    search starts at pair ``key >> shift``, skips smaller keys and reads the pairs equal to
    ``key`` (equal keys stay in the order given: of repeated keys the first comes first).
    Keys of all one bits cannot be told from empty slots: their lookups take the general path.
    """

    __slots__ = ("_array", "shift", "slots")

    def __init__(self, keys: np.ndarray, values: np.ndarray) -> None:
        keys = np.ascontiguousarray(keys, np.uint64)
        values = np.ascontiguousarray(values, np.uint64)
        if len(keys) > 1 and not bool(np.all(keys[1:] >= keys[:-1])):
            order = np.argsort(keys, kind="stable")
            keys, values = keys[order], values[order]
        n = len(keys)
        bits = max(2 * n - 1, 1).bit_length()  # at least 2n slots: searches stay short
        self.shift = 64 - bits
        home = (keys >> np.uint64(self.shift)).astype(np.int64)
        ranks = np.arange(n, dtype=np.int64)
        # each entry at max(its home, the previous entry's slot + 1): a running maximum
        where = np.maximum.accumulate(home - ranks) + ranks if n else ranks
        size = max(int(where[-1]) + 2 if n else 1, (1 << bits) + 1)  # an empty pair ends it
        pairs = np.full((size, 2), _EMPTY, np.uint64)
        pairs[where, 0] = keys
        pairs[where, 1] = values
        self._array = pairs
        self.slots = pairs.data.cast("B").cast("Q")  # items are Python ints

    @property
    def nbytes(self) -> int:
        """Memory the table takes."""
        return int(self._array.nbytes)


def file_lookup(table: np.ndarray, mem: Any, slicer: Any, limit: int,
                general: Callable[..., FileInfo | None]) -> Callable[..., FileInfo | None]:
    """``file(h, default=None)`` over the file lookup ``table`` of a mapped shard.

    ``mem`` is the whole file, ``slicer`` the same bytes sliced into ``bytes`` (the mapping),
    ``limit`` the end of the record sections, ``general`` the reader's own path (used for
    keys of all one bits)."""
    probe = ProbeTable(table["key"], HEADER_SIZE + table["index"].astype(np.uint64)
                       * np.uint64(RECORD_SIZE))
    slots, shift = probe.slots, probe.shift
    unpack, key_of, same = _FILE_HEAD.unpack_from, _U64.unpack_from, bytes.__eq__
    new, new_hash, as_raw = object.__new__, _new_hash, _as_raw
    hash_type, info_type, slots_type = XetHash, FileInfo, _FileInfoSlots
    ver, ext, rec, head, empty = (FILE_FLAG_VERIFICATION, FILE_FLAG_METADATA_EXT, RECORD_SIZE,
                                  HEADER_SIZE, _EMPTY)

    def file(h: XetHash | bytes | str, default: FileInfo | None = None) -> FileInfo | None:
        raw = h if type(h) is hash_type or (type(h) is bytes and len(h) == 32) else as_raw(h)
        key = key_of(raw)[0]
        if key == empty:
            return general(h, default)
        j = (key >> shift) << 1
        k = slots[j]
        while k < key:
            j += 2
            k = slots[j]
        while k == key:
            pos = slots[j + 1]
            if pos + rec <= limit:
                fh, flags, nt, reserved = unpack(mem, pos)
                if same(fh, raw):
                    end = pos + (1 + nt + (nt if flags & ver else 0)
                                 + (1 if flags & ext else 0)) * rec
                    if end <= limit:  # else a block that overruns: not a match, as xet-core
                        block = slicer[pos + rec : end]  # the records after the header
                        info = new(slots_type)  # filled as the reader's _new_file does
                        info.hash = raw if type(raw) is hash_type else new_hash(fh)
                        info.flags = flags
                        info._terms = block if type(block) is bytes else bytes(block)
                        info.reserved = reserved
                        info.record_index = (pos - head) // rec
                        info.offset = pos
                        info.__class__ = info_type  # type: ignore[assignment]  # same slots
                        return info  # type: ignore[return-value]  # a FileInfo now
            j += 2
            k = slots[j]
        return default

    return file


def chunk_lookup(keys: np.ndarray, xorbs: np.ndarray, chunks: np.ndarray, base: int,
                 hmac_key: bytes | None, mem: Any, slicer: Any, limit: int,
                 general: Callable[..., ChunkRef | None]) -> Callable[..., ChunkRef | None]:
    """``find_chunk(h, keyed=False)`` over chunk rows (truncated key, xorb record index,
    chunk position) of a mapped shard whose xorb section starts at ``base``.

    ``hmac_key`` is the footer's key when it is not zero (plain hashes are keyed first)."""
    probe = ProbeTable(keys, (xorbs.astype(np.uint64) << np.uint64(32))
                       | chunks.astype(np.uint64))
    slots, shift = probe.slots, probe.shift
    unpack, key_of, same = _TERM.unpack_from, _U64.unpack_from, bytes.__eq__
    new, new_bytes, as_raw, keyed_hash = tuple.__new__, bytes.__new__, _as_raw, xh.keyed_chunk_hash
    hash_type, ref_type, chunk_type = XetHash, ChunkRef, ChunkEntry
    rec, empty, low = RECORD_SIZE, _EMPTY, _U32

    def find_chunk(h: XetHash | bytes | str, *, keyed: bool = False) -> ChunkRef | None:
        raw = h if type(h) is hash_type or (type(h) is bytes and len(h) == 32) else as_raw(h)
        if hmac_key is not None and not keyed:
            raw = keyed_hash(hmac_key, bytes(raw))
        key = key_of(raw)[0]
        if key == empty:
            return general(raw, keyed=True)
        # The probe loop of file() above, written again inline: a shared helper would add a
        # Python call to each lookup, the cost these closures exist to remove.
        j = (key >> shift) << 1
        k = slots[j]
        while k < key:
            j += 2
            k = slots[j]
        while k == key:
            v = slots[j + 1]
            xr, ci = v >> 32, v & low
            pos = base + (xr + 1 + ci) * rec
            if pos + rec <= limit:
                chash, start, size, fl, res = unpack(slicer, pos)  # (a mapping: faster)
                if same(chash, raw):
                    xpos = base + xr * rec
                    return new(ref_type, (
                        new_bytes(hash_type, slicer[xpos : xpos + 32]), xr, ci,
                        new(chunk_type, (raw if type(raw) is hash_type
                                         else new_bytes(hash_type, chash),
                                         start, size, fl, res))))
            j += 2
            k = slots[j]
        return None

    return find_chunk


def dict_lookup(by_hash: dict[bytes, FileInfo]) -> Callable[..., FileInfo | None]:
    """``file(h, default=None)`` over a dict from 32 stored bytes to the file (a shard
    without a file lookup table)."""
    get, as_raw, hash_type = by_hash.get, _as_raw, XetHash

    def file(h: XetHash | bytes | str, default: FileInfo | None = None) -> FileInfo | None:
        if type(h) is bytes and len(h) == 32:
            return get(h, default)
        return get(bytes(h) if type(h) is hash_type else as_raw(h), default)

    return file
