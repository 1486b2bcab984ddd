"""``SwhShard.verify``: every check of an SWH read shard, for both writer generations."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import Problem, ShardkitError
from .model import _U64, HEADER_END, KEY_LEN, SLOT_SIZE, TOMBSTONE

if TYPE_CHECKING:
    from .reader import SwhShard

__all__ = ["MAX_SLOT_PROBLEMS", "OBJECT_CHUNK", "WINDOW", "ZERO_SCAN_CHUNK", "check",
           "first_nonzero", "offset_order", "offset_windows", "window_entries"]

#: ``first_nonzero`` reads this many bytes at a time (a crafted offset never sizes one read).
ZERO_SCAN_CHUNK = 1 << 20
#: The objects are checked in offset order, about this many live entries at a time.
WINDOW = 2 << 20
#: At most this many ``slot`` problems are reported (a wrong function misplaces every key).
MAX_SLOT_PROBLEMS = 100
_BINS = 1 << 14  # the offset histogram that cuts the objects section into windows


def _checked_function(shard: SwhShard, add: Callable[[Problem], None]
                      ) -> Callable[[np.ndarray], np.ndarray] | None:
    """The slots of key rows, from a hash function checked in full; None (and a problem)
    when it is not sound.

    The C accelerator checks every select block in place (nothing of the function's size
    is kept); without it, or when it finds a fault, the Python decoder decodes the whole
    function and names the field at fault.
    """
    try:
        native = shard._native_lookup
    except ShardkitError:
        native = None  # the decoder below reports it
    if native is not None and native.check_all() < 0:
        return shard._slots
    try:
        chd = shard.hash_function
    except ShardkitError as exc:
        add(Problem("hash_function", exc.message, exc.offset, exc.field))
        return None
    return chd.slots


def _bin_of(ofs: np.ndarray, lo: int, span: int) -> np.ndarray:
    """Histogram bin of each offset: 0 below the objects section ``[lo, lo + span)``,
    ``_BINS + 1`` past it, else ``1 + (ofs - lo) * _BINS // span`` (integers: a section is
    far below 2**50 bytes, so the product fits)."""
    rel = ofs.astype(np.uint64) - np.uint64(lo)  # wraps for offsets below lo
    inside = ofs < np.uint64(lo + span)
    inside &= ofs >= np.uint64(lo)
    out = np.full(ofs.shape, _BINS + 1, np.int64)
    out[ofs < np.uint64(lo)] = 0
    out[inside] = (rel[inside] * np.uint64(_BINS) // np.uint64(span)).astype(np.int64) + 1
    return out


def offset_order(offsets: np.ndarray) -> np.ndarray:
    """``np.argsort(offsets, kind="stable")``, in two linear passes when the offsets span
    less than 2**32 bytes (a stable radix sort on 16-bit digits, low digit first)."""
    if not offsets.size:
        return np.zeros(0, np.int64)
    lo = int(offsets.min())
    if int(offsets.max()) - lo >= 1 << 32:
        return np.argsort(offsets, kind="stable")
    rel = offsets - np.uint64(lo)
    first = np.argsort((rel & np.uint64(0xFFFF)).astype(np.uint16), kind="stable")
    high = (rel[first] >> np.uint64(16)).astype(np.uint16)
    return first[np.argsort(high, kind="stable")]


def _edge(b: int, lo: int, span: int) -> int:
    """The smallest offset whose bin is at least ``b`` (``2**64`` past the last bin)."""
    if b <= 0:
        return 0
    if b == 1:
        return lo
    if b > _BINS + 1:
        return 1 << 64
    if b == _BINS + 1:
        return lo + span
    return lo + -(-(b - 1) * span // _BINS)


def _windows(hist: np.ndarray, limit: int) -> list[tuple[int, int, int]]:
    """Consecutive bin ranges ``(lo, hi, entries)`` of at most ``limit`` entries (a fuller bin
    alone): the bins are taken in order and a range is closed before the bin that would take
    a non-empty range past ``limit``. One ``searchsorted`` per range (not a Python step per
    bin: ``verify`` of a small shard used to spend most of its time here)."""
    cum = np.cumsum(hist, dtype=np.int64)
    size = len(hist)
    out: list[tuple[int, int, int]] = []
    lo = 0
    while True:
        base = int(cum[lo - 1]) if lo else 0
        i = int(np.searchsorted(cum, base + limit, side="right"))  # first bin past the limit
        if i >= size:
            out.append((lo, size, int(cum[-1]) - base))
            return out
        before = int(cum[i - 1]) - base if i > lo else 0
        hi = i if before else i + 1  # an empty range takes the fuller bin along
        if hi >= size:
            out.append((lo, size, int(cum[-1]) - base))
            return out
        out.append((lo, hi, int(cum[hi - 1]) - base))
        lo = hi


def offset_windows(shard: SwhShard, limit: int, src: Any = None
                   ) -> list[tuple[int, int, int | None]]:
    """Bin ranges ``(lo, hi, entries)`` of at most about ``limit`` live entries (one pass
    over the index when it has more slots than that; else one window, entries unknown)."""
    if shard.num_slots <= limit:
        return [(0, _BINS + 2, None)]
    lo, span = shard.header.objects_position, _span(shard)
    hist = np.zeros(_BINS + 2, np.int64)
    tomb = np.uint64(TOMBSTONE)
    for _, arr in shard._scan(source=src):
        ofs = arr["ofs"].astype(np.uint64)
        live = ofs[ofs - np.uint64(1) < tomb - np.uint64(1)]  # neither 0 nor 2**64-1
        hist += np.bincount(_bin_of(live, lo, span), minlength=_BINS + 2)
    return list(_windows(hist, limit))


def _span(shard: SwhShard) -> int:
    return max(1, shard.header.index_position - shard.header.objects_position)


def window_entries(shard: SwhShard, src: Any, b_lo: int, b_hi: int, with_keys: bool,
                   count: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Slots, offsets (and keys, rows of 32 bytes) of the live entries whose offsets fall in
    bins [b_lo, b_hi); with ``count`` (from the histogram) filled in place, without copies."""
    lo, span = shard.header.objects_position, _span(shard)
    size = count or 0
    slots = np.empty(size, np.int64)
    offsets = np.empty(size, np.uint64)
    keys = np.empty((size if with_keys else 0, 32), np.uint8)
    at = 0
    whole = b_lo == 0 and b_hi == _BINS + 2
    e_lo, e_hi = _edge(b_lo, lo, span), _edge(b_hi, lo, span)  # bins [b_lo, b_hi) as bytes
    tomb = np.uint64(TOMBSTONE)
    for start, arr in shard._scan(source=src):
        ofs = arr["ofs"].astype(np.uint64)  # native order, contiguous: cheaper to compare
        live = np.nonzero(ofs - np.uint64(1) < tomb - np.uint64(1))[0]  # neither 0 nor 2**64-1
        if not whole and live.size:
            o = ofs[live]
            keep = o >= np.uint64(e_lo)
            if e_hi < 1 << 64:
                keep &= o < np.uint64(e_hi)
            live = live[keep]
        k = live.size
        if not k:
            continue
        if at + k > size:  # unknown count (or the file changed): grow
            size = max(2 * size, at + k, 1 << 16)
            slots = np.resize(slots, size)
            offsets = np.resize(offsets, size)
            if with_keys:
                keys = np.resize(keys, (size, 32))
        slots[at : at + k] = live + start
        offsets[at : at + k] = ofs[live]
        if with_keys:
            keys[at : at + k] = np.frombuffer(arr["key"][live].tobytes(), np.uint8
                                              ).reshape(-1, 32)
        at += k
    return slots[:at], offsets[:at], keys[:at] if with_keys else keys


#: The objects pass reads the objects section this many bytes at a time (one reused buffer).
OBJECT_CHUNK = 1 << 20
_EIGHT = np.arange(8, dtype=np.intp)


class _ChunkReader:
    """The 8-byte size fields of objects, gathered from the blocks of the verify pass.

    Through the pass's block reader (``_Blocks``: for a local file, blocks read with ``pread``
    into reused buffers; for a URL, large cached blocks), each block is looked at in place:
    the size fields inside it are gathered with numpy, a field across two blocks is read on
    its own. Other sources (a buffer in memory) are read in chunks that start at an object.
    The index is read into one reused buffer when the file is local."""

    def __init__(self, src: Any, hi_obj: int) -> None:
        from ...sources import CountingSource
        from .reader import _Blocks

        self._blocks = src if isinstance(src, _Blocks) else None
        raw = src.source if isinstance(src, _Blocks) else src
        base = raw
        while isinstance(base, CountingSource):
            base = base.inner
        self._into = raw if hasattr(base, "readinto") else None
        self._src = src
        self._hi = hi_obj
        self._buf = bytearray(OBJECT_CHUNK) if self._into is not None else None

    def index(self, shard: SwhShard, scan_src: Any) -> Any:
        """``shard._scan``: index slots a chunk at a time; from a local file into one reused
        buffer (each array is used up before the next chunk is read into it)."""
        if self._buf is None:
            yield from shard._scan(source=scan_src)
            return
        from ...sources import readinto
        from .model import INDEX_DTYPE

        per = OBJECT_CHUNK // SLOT_SIZE
        assert self._into is not None and self._buf is not None
        view = memoryview(self._buf)
        for start in range(0, shard.num_slots, per):
            n = min(per, shard.num_slots - start)
            pos = shard._index_pos + start * SLOT_SIZE
            got = readinto(self._into, pos, view[: n * SLOT_SIZE])
            if got < n * SLOT_SIZE:  # the file ends early: the source's own error
                shard.source.read_range(pos, pos + n * SLOT_SIZE)
            yield start, np.frombuffer(self._buf, INDEX_DTYPE, count=n)

    def _chunk(self, start: int) -> tuple[int, np.ndarray]:
        """``(first offset, bytes)`` of a span holding ``start`` (and what follows)."""
        if self._blocks is not None and start < self._blocks.limit:
            base, data = self._blocks.block_at(start)
            return base, np.frombuffer(data, np.uint8)
        end = min(self._hi, start + OBJECT_CHUNK)
        return start, np.frombuffer(self._src.read_range(start, end), np.uint8)

    def sizes(self, offsets: np.ndarray, progress: Callable[[int, int], None] | None,
              done: int, total: int) -> np.ndarray | None:
        """The size field of each object at ``offsets`` (sorted, each at most the section's
        end - 8); None when the file ends early (the object-by-object walk reports it)."""
        out = np.empty(offsets.size, np.uint64)
        i, n = 0, offsets.size
        try:
            while i < n:
                start = int(offsets[i])
                base, arr = self._chunk(start)
                # every object whose size field lies inside this span
                k = int(np.searchsorted(offsets, np.uint64(base + arr.size - 8), side="right"))
                if k <= i:  # a size field across two blocks
                    (out[i],) = _U64.unpack(self._src.read_range(start, start + 8))
                    i += 1
                    continue
                rel = (offsets[i:k] - np.uint64(base)).astype(np.intp)
                out[i:k] = arr[rel[:, None] + _EIGHT].view(">u8").ravel()  # big-endian: _U64
                i = k
                if progress is not None:
                    progress(done + i, total)
        except ShardkitError:
            return None
        return out


def first_nonzero(read: Callable[[int, int], bytes], lo: int, hi: int) -> int | None:
    """Offset of the first non-zero byte of ``[lo, hi)``, or ``None`` when all are zeros.

    Args:
        read: ``read(start, end)`` gives the bytes ``[start, end)`` (a source's ``read_range``).
        lo: First offset to look at.
        hi: End of the range (exclusive).

    Reads :data:`ZERO_SCAN_CHUNK` bytes at a time and stops at the first chunk with a non-zero
    byte, so memory stays bounded however large the range.
    """
    for start in range(lo, hi, ZERO_SCAN_CHUNK):
        chunk = read(start, min(hi, start + ZERO_SCAN_CHUNK))
        rest = chunk.lstrip(b"\0")
        if rest:
            return start + len(chunk) - len(rest)
    return None


def check(shard: SwhShard, src: Any, hasher: str | None,
          progress: Callable[[int, int], None] | None) -> list[Problem]:
    """Every check of :meth:`SwhShard.verify`, reading through ``src`` (the file, or blocks of it).

    Returns:
        The problems found (empty: the shard is sound).
    """
    problems: list[Problem] = []
    add = problems.append
    _check_padding(shard, src, add)
    chd = _checked_function(shard, add)
    if chd is None:
        return problems
    _check_preallocated(shard, src, add)
    # one pass over the index, 64k slots at a time: counts, holes' keys, every live key's
    # slot, and a histogram of the objects' offsets (to cut the objects pass into windows)
    scan_src = src if src is not shard.source else None
    chunks = _ChunkReader(src, shard.header.index_position)
    tally = _scan_index(shard, chunks, scan_src, chd, hasher is not None, add)
    _check_counts(shard, tally, add)
    objects = _ObjectsPass(shard, src, chunks, hasher, progress, add, tally.live_n)
    objects.run(shard, scan_src, tally)
    _check_gaps(shard, tally, objects, add)
    return problems


def _check_padding(shard: SwhShard, src: Any, add: Callable[[Problem], None]) -> None:
    """The reserved header bytes and the padding before the objects section are zeros."""
    h = shard.header
    for name, lo, hi in (("/reserved", 9, 32), ("/header_padding", HEADER_END,
                                                 h.objects_position)):
        first = first_nonzero(src.read_range, lo, hi)
        if first is not None:
            add(Problem("padding", "reserved header bytes are not zero", first, name))


def _check_preallocated(shard: SwhShard, src: Any, add: Callable[[Problem], None]) -> None:
    """Only zeros follow a hash function dump shorter than the rest of the file."""
    h = shard.header
    hf_len = shard.source.size - h.hash_position
    dump_size = shard.layout.dump_size
    if dump_size < hf_len:
        # a pre-allocated file: only zeros may follow the dump
        dump_end = h.hash_position + dump_size
        first = first_nonzero(src.read_range, dump_end, shard.source.size)
        if first is not None:
            add(Problem("hash_function", f"cmph dump is {dump_size} bytes but "
                        f"{hf_len} bytes follow hash_position: the bytes after it "
                        f"must be zeros (pre-allocated), byte {first} is not",
                        offset=first, field="/preallocated"))


@dataclass
class _IndexTally:
    """What the index pass found: counts of each kind of slot, the histogram of the live
    objects' offsets, and (for an index of at most WINDOW slots) the live entries."""

    hist: np.ndarray  # [below, bins..., above]
    one: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None
    tombstones: int = 0
    empty: int = 0
    live_n: int = 0
    slot_problems: int = 0


def _scan_index(shard: SwhShard, chunks: _ChunkReader, scan_src: Any,
                chd: Callable[[np.ndarray], np.ndarray], with_keys: bool,
                add: Callable[[Problem], None]) -> _IndexTally:
    """The index pass: holes with keys, live keys in the wrong slot, counts, histogram."""
    h = shard.header
    lo_obj, hi_obj = h.objects_position, h.index_position
    span = max(1, hi_obj - lo_obj)
    # an index of at most WINDOW slots is one window: its live entries are kept from this
    # pass (no second pass over the index)
    t = _IndexTally(np.zeros(_BINS + 2, np.int64), [] if shard.num_slots <= WINDOW else None)
    for start, arr in chunks.index(shard, scan_src):
        ofs = arr["ofs"]
        key_bytes = arr["key"]
        is_tomb = ofs == TOMBSTONE
        is_empty = ofs == 0
        t.tombstones += int(is_tomb.sum())
        t.empty += int(is_empty.sum())
        _check_hole_keys(shard, start, ofs, key_bytes, is_tomb | is_empty, add)
        live = np.nonzero(~(is_tomb | is_empty))[0]
        if not live.size:
            continue
        t.live_n += live.size
        keys = np.frombuffer(key_bytes[live].tobytes(), np.uint8).reshape(-1, 32)
        # every live key hashes to its own slot
        t.slot_problems = _check_slots(shard, start, live, keys, chd(keys), t.slot_problems,
                                       add)
        live_ofs = ofs[live].astype(np.uint64)
        t.hist += np.bincount(_bin_of(live_ofs, lo_obj, span), minlength=_BINS + 2)
        if t.one is not None:
            t.one.append((live + start, live_ofs, keys if with_keys else keys[:0]))
    return t


def _check_hole_keys(shard: SwhShard, start: int, ofs: np.ndarray, key_bytes: np.ndarray,
                     is_hole: np.ndarray, add: Callable[[Problem], None]) -> None:
    """Tombstones and empty slots of one index chunk have zero keys."""
    holey = np.nonzero(is_hole)[0]
    if holey.size:
        keys_u8 = np.frombuffer(key_bytes[holey].tobytes(), np.uint8).reshape(-1, 32)
        for i in holey[np.any(keys_u8 != 0, axis=1)].tolist():
            kind = "tombstone" if ofs[i] == TOMBSTONE else "empty slot"
            add(Problem("index_entry", f"{kind} in slot {start + i} has a non-zero key",
                        shard._index_pos + (start + i) * SLOT_SIZE,
                        f"/index/entries/{start + i}/key"))


def _check_slots(shard: SwhShard, start: int, live: np.ndarray, keys: np.ndarray,
                 want: np.ndarray, slot_problems: int, add: Callable[[Problem], None]) -> int:
    """Each live key of one index chunk is in the slot it hashes to (at most
    MAX_SLOT_PROBLEMS reported in all); the number reported so far."""
    for j in np.nonzero(want != live + start)[0].tolist():
        if slot_problems >= MAX_SLOT_PROBLEMS:
            break
        slot_problems += 1
        s = start + int(live[j])
        add(Problem("slot", f"key {keys[j].tobytes().hex()} is in slot {s} but hashes "
                    f"to slot {int(want[j])}", shard._index_pos + s * SLOT_SIZE,
                    f"/index/entries/{s}"))
    return slot_problems


def _check_counts(shard: SwhShard, t: _IndexTally, add: Callable[[Problem], None]) -> None:
    """objects_count = live + deleted, slots = objects_count + unused."""
    count = shard.header.objects_count
    live_n, empty, tombstones = t.live_n, t.empty, t.tombstones
    deleted = count - live_n
    unused = shard.num_slots - count
    if count > shard.num_slots:
        add(Problem("count", f"objects_count {count} exceeds the "
                    f"{shard.num_slots} index slots", offset=40, field="/header/num_objects"))
    if live_n > count:
        add(Problem("count", f"objects_count is {count} but the index has {live_n} live "
                    "entries", offset=40, field="/header/num_objects"))
    elif empty and count <= shard.num_slots and (empty != unused or tombstones != deleted):
        # a zero-initialised index (swh.perfecthash <= 1.3): empty slots are the unused
        # ones, tombstones the deleted objects
        add(Problem("count", f"objects_count is {count}: {live_n} live entries, so "
                    f"{deleted} deleted and {unused} unused slots, but the index has "
                    f"{tombstones} tombstones and {empty} empty slots", offset=40,
                    field="/header/num_objects"))


class _ObjectsPass:
    """Objects inside the objects section, disjoint, one per entry; the gaps between them
    are deleted objects (zeroed).

    In offset order, one window of at most about WINDOW entries at a time (one more pass over
    the index each), so memory stays bounded. A window is first checked whole with numpy (its
    size fields gathered from chunks of the objects section read into one reused buffer); a
    window where any check fails, or a content hash is asked for, is walked object by object,
    which names each fault."""

    def __init__(self, shard: SwhShard, src: Any, chunks: _ChunkReader, hasher: str | None,
                 progress: Callable[[int, int], None] | None,
                 add: Callable[[Problem], None], total: int) -> None:
        h = shard.header
        self.index_pos = shard._index_pos
        self.lo_obj, self.hi_obj = h.objects_position, h.index_position
        self.prev_end = h.objects_position
        self.hole_bytes = self.holes = 0
        self.total = total
        self.read = src.read_range
        self.n_done = 0
        self.chunks = chunks
        self.hasher = hasher
        self.progress = progress
        self.add = add

    def check_hole(self, lo: int, hi: int) -> None:
        if first_nonzero(self.read, lo, hi) is not None:
            self.add(Problem("unreferenced_data", f"bytes [{lo}, {hi}) of the objects "
                             "section belong to no live entry and are not zeroed", lo,
                             "/objects"))

    def run(self, shard: SwhShard, scan_src: Any, t: _IndexTally) -> None:
        """Every window in offset order, then the gap after the last object."""
        hasher = self.hasher
        one = t.one
        for b_lo, b_hi, entries in _windows(t.hist, WINDOW) if one is None else [(0, 0, None)]:
            if one is None:
                slots, offsets, keys = window_entries(shard, scan_src, b_lo, b_hi,
                                                      hasher is not None, entries)
            else:
                slots = np.concatenate([a for a, _, _ in one] or [np.zeros(0, np.int64)])
                offsets = np.concatenate([b for _, b, _ in one] or [np.zeros(0, np.uint64)])
                keys = np.concatenate([c for _, _, c in one] or [np.zeros((0, 32), np.uint8)])
                one = t.one = []
            order = offset_order(offsets)
            offsets = offsets[order]
            if hasher is not None or not self.sound_window(offsets):
                self.walk(slots[order], offsets, keys[order] if hasher is not None else keys)
            del slots, offsets, keys, order
        if self.progress is not None:
            self.progress(self.total, self.total)
        if self.prev_end < self.hi_obj:
            self.hole_bytes += self.hi_obj - self.prev_end
            self.holes += 1
            self.check_hole(self.prev_end, self.hi_obj)

    def walk(self, slots: np.ndarray, offsets: np.ndarray, keys: np.ndarray) -> None:
        """Each object in offset order (the arrays sorted by offset), one at a time."""
        add, read, progress, hasher = self.add, self.read, self.progress, self.hasher
        lo_obj, hi_obj, index_pos, total = self.lo_obj, self.hi_obj, self.index_pos, self.total
        for j in range(len(offsets)):
            s, off = int(slots[j]), int(offsets[j])
            if progress is not None and self.n_done % 4096 == 0:
                progress(self.n_done, total)
            self.n_done += 1
            if not lo_obj <= off <= hi_obj - 8:
                add(Problem("object_bounds", f"slot {s} points to {off}, outside the objects "
                            f"section [{lo_obj}, {hi_obj})",
                            index_pos + s * SLOT_SIZE + KEY_LEN,
                            f"/index/entries/{s}/ofs_object"))
                continue
            if off < self.prev_end:
                add(Problem("object_overlap", f"object of slot {s} at {off} overlaps the "
                            f"previous object (ends at {self.prev_end})",
                            index_pos + s * SLOT_SIZE + KEY_LEN,
                            f"/index/entries/{s}/ofs_object"))
                continue
            (size,) = _U64.unpack(read(off, off + 8))
            end = off + 8 + size
            if end > hi_obj:
                add(Problem("object_bounds", f"object of slot {s} at {off} claims {size} "
                            f"bytes, past the end of the objects section", off,
                            f"/index/entries/{s}/object/len_data"))
                continue
            if off > self.prev_end:
                self.hole_bytes += off - self.prev_end
                self.holes += 1
                self.check_hole(self.prev_end, off)
            self.prev_end = end
            if hasher is not None:
                digest = hashlib.new(hasher, read(off + 8, end)).digest()
                key = keys[j].tobytes()
                if digest[:KEY_LEN] != key:
                    add(Problem("content_hash", f"{hasher}(value) of key {key.hex()} is "
                                f"{digest.hex()}", off + 8, f"/index/entries/{s}/object/data"))

    def sound_window(self, offsets: np.ndarray) -> bool:
        """Check a window (sorted offsets) whole; False, with nothing recorded, when some
        object is out of bounds or overlaps another (then it is walked one by one)."""
        lo_obj, hi_obj = self.lo_obj, self.hi_obj
        if not offsets.size:
            return True
        if int(offsets[0]) < max(lo_obj, self.prev_end) or int(offsets[-1]) > hi_obj - 8:
            return False
        sizes = self.chunks.sizes(offsets, self.progress, self.n_done, self.total)
        if sizes is None:
            return False
        # end of each object, past the section's end (or wrapping) when its size is too big
        if bool(np.any(sizes > np.uint64(hi_obj - 8) - offsets)):
            return False
        ends = offsets + np.uint64(8) + sizes
        if offsets.size > 1 and bool(np.any(offsets[1:] < ends[:-1])):
            return False
        gaps = np.nonzero(offsets[1:] > ends[:-1])[0] if offsets.size > 1 else ()
        first = int(offsets[0])
        if first > self.prev_end:
            self.hole_bytes += first - self.prev_end
            self.holes += 1
            self.check_hole(self.prev_end, first)
        for g in np.asarray(gaps).tolist():
            lo, hi = int(ends[g]), int(offsets[g + 1])
            self.hole_bytes += hi - lo
            self.holes += 1
            self.check_hole(lo, hi)
        self.prev_end = int(ends[-1])
        self.n_done += offsets.size
        return True


def _check_gaps(shard: SwhShard, t: _IndexTally, objects: _ObjectsPass,
                add: Callable[[Problem], None]) -> None:
    """The gaps between live objects agree with the number of deleted objects."""
    h = shard.header
    count = h.objects_count
    live_n = t.live_n
    deleted = count - live_n
    hole_bytes, holes = objects.hole_bytes, objects.holes
    if live_n > count or count > shard.num_slots:
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
