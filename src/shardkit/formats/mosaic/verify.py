"""Every check of :meth:`MosaicFile.verify <shardkit.formats.mosaic.MosaicFile.verify>`.

One pass over the tiles (every CRC-32, every Object's offset and size, EndOfTilesOffset, the
counters and, optionally, each object's hashes), each index's own elements (its CRC-32s, the
map, the conflicts), then the entries, window by window. Memory is bounded by a window of
:data:`WINDOW` Objects, not by the file: for the window, 8 bytes per Object (its offset, to check
that the entries point at Objects), 8 bytes per Object and index kind (the first 8 bytes of its
hash, compared with the first 8 bytes of its key: a mismatch of the 64 bits is reported, one of
the other bits is not looked for) and one byte per Object and index (how many entries point at
it). The tile pass keeps the first window's Objects and where each later window starts; each
later window is read again from its tiles (its objects hashed again). Each index's IdxUnrolled
is read once per window, its entries parsed with numpy where they have the layout every writer
uses (the careful parse for the others), and only the entries whose target lies in the window's
byte range are checked against it; what is checked once per entry (its layout, the map) is
checked in the first window. Besides, at most one tile's objects, the map, the conflicts, the
first :data:`MAX_PROBLEMS_PER_PART` problems of each part and, with content hashes, the Objects
without an entry (16 bytes each, until an Object of the same hash with an entry excuses them) are
held. The problems, and their order, do not depend on the window size.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import LayoutError, Problem, ShardkitError
from . import model as m
from .model import Element, MosaicIndex, content_key, element_at, read_uint

if TYPE_CHECKING:
    from .reader import MosaicFile

__all__ = ["BLOCK", "MAX_PROBLEMS_PER_PART", "WINDOW", "check"]

#: Blocks the file is read in (three kept).
BLOCK = 4 << 20
#: Problems reported per tile walk or per index before the rest are summed up in one.
MAX_PROBLEMS_PER_PART = 50
#: Index entries checked per batch.
BATCH = 8192
#: Objects whose offsets and hash prefixes are held at once; the entries of every index are
#: read once per window of this many Objects.
WINDOW = 1 << 21


class _Blocks:
    """Reads a source in aligned blocks, keeping the last few (sequential passes)."""

    def __init__(self, source: Any, block: int = BLOCK, keep: int = 3) -> None:
        self.source = source
        self.size = source.size
        self.block = block
        self.keep = keep
        self._cache: dict[int, bytes] = {}

    def _get(self, i: int) -> bytes:
        data = self._cache.get(i)
        if data is None:
            lo = i * self.block
            data = self.source.read_range(lo, min(self.size, lo + self.block))
            self._cache[i] = data
            if len(self._cache) > self.keep:
                del self._cache[next(iter(self._cache))]
        return data

    def read(self, start: int, end: int) -> bytes:
        end = min(end, self.size)
        if start >= end:
            return b""
        if end - start > self.block:
            return self.source.read_range(start, end)  # type: ignore[no-any-return]
        first, last = start // self.block, (end - 1) // self.block
        if first == last:
            base = first * self.block
            return self._get(first)[start - base:end - base]
        a, b = self._get(first), self._get(last)
        return a[start - first * self.block:] + b[:end - last * self.block]


class _Part:
    """Problems of one part of the file, capped at :data:`MAX_PROBLEMS_PER_PART`."""

    def __init__(self, out: list[Problem], what: str) -> None:
        self.out = out
        self.what = what
        self.n = 0

    def add(self, check: str, message: str, offset: int | None = None,
            field: str | None = None) -> None:
        self.n += 1
        if self.n <= MAX_PROBLEMS_PER_PART:
            self.out.append(Problem(check, message, offset, field))

    def error(self, check: str, exc: ShardkitError, field: str | None = None) -> None:
        self.add(check, exc.message, exc.offset, exc.field or field)

    def close(self) -> None:
        if self.n > MAX_PROBLEMS_PER_PART:
            self.out.append(Problem("more", f"{self.n - MAX_PROBLEMS_PER_PART} more problems "
                                    f"in {self.what} not listed"))


def _head(src: _Blocks, pos: int, limit: int, field: str) -> Element:
    return element_at(src.read(pos, min(limit, pos + 12)), 0, pos, limit, field)


def _crc_of(src: _Blocks, el: Element, part: Any, field: str) -> int:
    """Check the CRC-32 element that opens master ``el``; return where the rest starts."""
    if el.size == 0:
        part.add("crc32", f"{el.name} is empty: no CRC-32 element", el.start, field)
        return el.data_start
    try:
        first = _head(src, el.data_start, el.end, field + "/CRC-32")
    except ShardkitError as exc:
        part.error("ebml", exc, field)
        return el.end
    if first.id != m.CRC32:
        part.add("crc32", f"{el.name} does not start with a CRC-32 element (found "
                 f"{first.name})", first.start, field)
        return el.data_start
    if first.size != 4:
        part.add("crc32", f"CRC-32 element of {first.size} bytes (4 expected)", first.start,
                 field + "/CRC-32")
        return first.end
    stored = int.from_bytes(src.read(first.data_start, first.end), "little")
    crc = 0
    pos = first.end
    while pos < el.end:
        nxt = min(el.end, pos + BLOCK)
        crc = m.crc32_le(src.read(pos, nxt), crc)
        pos = nxt
    if crc != stored:
        part.add("crc32", f"{el.name} CRC-32 mismatch: stored {stored:08x}, computed "
                 f"{crc:08x} over bytes [{first.end}, {el.end})", first.start,
                 field + "/CRC-32")
    return first.end


def check(r: MosaicFile, content_hash: bool = True,
          progress: Callable[[int, int], None] | None = None,
          window: int | None = None) -> list[Problem]:
    """Every check; the problems found (empty: the file is sound). ``window``: Objects held
    at once (default :data:`WINDOW`)."""
    win = max(1, WINDOW if window is None else window)
    out: list[Problem] = []
    size = r.source.size
    src = _Blocks(r.source)
    part = _Part(out, "the container")
    _check_container(r, size, part)
    kinds: list[str] = []
    if content_hash:
        try:
            kinds = list(dict.fromkeys(r.index_names))
        except ShardkitError:
            kinds = []  # EndOfTilesOffset or the indexes are broken: reported below
    top = _TopWalk(r, src, kinds, win)
    top.walk(part, _Part(out, "the tiles"), progress)
    top.check_counts(part)
    part.close()

    # the indexes: their own parts first, then their entries window by window
    seen_kinds: set[str] = set()
    checks: list[_IndexCheck] = []
    for n, el in enumerate(top.index_els):
        if progress is not None:
            progress(el.start, size)
        checks.append(_IndexCheck(r, src, el, n, kinds, seen_kinds))
    top.check_entries([ic for ic in checks if ic.ok])
    for ic in checks:
        ipart = _Part(out, f"Index {ic.n}")
        ic.report(ipart)
        ipart.close()
    if progress is not None:
        progress(size, size)
    return out


def _check_container(r: MosaicFile, size: int, part: _Part) -> None:
    """The Mosaic element's extent and ContainerMetaData's CRC-32."""
    meta = r.meta
    if meta.root_end != size:
        part.add("ebml", f"the Mosaic element ends at byte {meta.root_end} but the file has "
                 f"{size} bytes", meta.root_start, "/Mosaic")
    if meta.crc_stored is None:
        part.add("crc32", "ContainerMetaData does not start with a CRC-32 element",
                 meta.meta_start, _META)
    elif meta.crc_stored != meta.crc_computed:
        part.add("crc32", f"ContainerMetaData CRC-32 mismatch: stored {meta.crc_stored:08x}, "
                 f"computed {meta.crc_computed:08x}", meta.meta_start, _META + "/CRC-32")


_META = "/Mosaic/ContainerMetaData"


class _TopWalk:
    """The top-level walk (tiles, then indexes) and, after it, the entries of every index
    checked window by window against the Objects the walk found."""

    def __init__(self, r: MosaicFile, src: _Blocks, kinds: list[str], win: int) -> None:
        self.r, self.src, self.kinds, self.win = r, src, kinds, win
        #: the first window's Objects, kept from this pass (handed over once)
        self.first: _Window | None = _Window(kinds)
        self.starts: list[tuple[int, int, int]] = []  # per window: (tile's pos, Objects
        # before, offset)
        self.n_objects = 0
        self.total_size = 0
        self.first_non_tile: int | None = None
        self.index_els: list[Element] = []

    def walk(self, part: _Part, tparts: _Part,
             progress: Callable[[int, int], None] | None) -> None:
        r, src, win, meta = self.r, self.src, self.win, self.r.meta
        size = r.source.size
        n_tiles = 0
        pos = meta.meta_end
        while pos < meta.root_end:
            if progress is not None:
                progress(pos, size)
            try:
                el = _head(src, pos, meta.root_end, "/Mosaic")
            except ShardkitError as exc:
                part.error("ebml", exc, "/Mosaic")
                break
            if el.id == m.TILE:
                field = f"/Mosaic/Tile[{n_tiles}]"
                if self.first_non_tile is not None:
                    tparts.add("tile", "a Tile after an Index", el.start, field)
                n_tiles += 1
                got = _Window(self.kinds)
                self.total_size += _tile(r, src, el, field, got.objects, got.prints, tparts)
                before = self.n_objects
                self.n_objects += len(got.objects)
                for w in range(-(-before // win), -(-self.n_objects // win)):
                    self.starts.append((el.start, before, got.objects[w * win - before]))
                if before < win and self.first is not None:
                    self.first.extend(got, 0, win - before)
            else:
                if self.first_non_tile is None:
                    self.first_non_tile = el.start
                if el.id == m.INDEX:
                    self.index_els.append(el)
                elif el.id != m.VOID:
                    part.add("ebml", f"unexpected {el.name} element in Mosaic", el.start,
                             "/Mosaic")
            pos = el.end
        tparts.close()

    def check_counts(self, part: _Part) -> None:
        """EndOfTilesOffset, ObjectsCounter and ObjectsTotalSize against the walk."""
        meta = self.r.meta
        eot = meta.root_end if self.first_non_tile is None else self.first_non_tile
        if meta.end_of_tiles_offset != eot:
            part.add("end_of_tiles", f"EndOfTilesOffset is {meta.end_of_tiles_offset} but "
                     f"the tiles end at byte {eot}", meta.meta_start,
                     _META + "/EndOfTilesOffset")
        if self.n_objects != meta.objects_counter:
            part.add("count", f"ObjectsCounter is {meta.objects_counter} but the tiles hold "
                     f"{self.n_objects} objects", meta.meta_start, _META + "/ObjectsCounter")
        if self.total_size != meta.objects_total_size:
            part.add("total_size", f"ObjectsTotalSize is {meta.objects_total_size} but the "
                     f"objects take {self.total_size} bytes uncompressed", meta.meta_start,
                     _META + "/ObjectsTotalSize")
        if not self.index_els:
            part.add("index", "the file has no Index", meta.root_end, "/Mosaic/Index")

    def _objects_of(self, w: int) -> _Window:
        if w == 0 and self.first is not None:
            got, self.first = self.first, None  # handed over once: then one window is held
            return got
        if not self.starts:
            return _Window(self.kinds)
        return _rewalk(self.r, self.src, self.r.meta.root_end, self.starts[w], w, self.win,
                       self.kinds)

    def check_entries(self, live: list[_IndexCheck]) -> None:
        """Each window's Objects against every index's entries; then, for an Object without
        entry, whether an Object of the same hash in a later window has one."""
        starts = self.starts
        n_windows = max(1, len(starts))
        bounds = [s[2] for s in starts[1:]] + [None]
        for w in range(n_windows) if live else ():
            got = self._objects_of(w)
            lo = 0 if w == 0 else starts[w][2]
            for ic in live:
                ic.window(got, lo, bounds[w], w, w == 0)
            del got
        self.first = None
        for w in range(n_windows):
            need = [ic for ic in live if ic.pending_before(w + 1)]
            if not need:
                break
            got = self._objects_of(w)
            lo = 0 if w == 0 else starts[w][2]
            for ic in need:
                ic.window(got, lo, bounds[w], w, False, excuse_only=True)
            del got


def _tile(r: MosaicFile, src: _Blocks, tile: Element, field: str, objects: array[int],
          prints: dict[str, array[int]], part: _Part) -> int:
    """Check one tile; append its objects' offsets (and hashes' first 8 bytes); return their
    uncompressed size."""
    fast = _tile_fast(r, src, tile, field, objects, prints, part)
    if fast is not None:
        return fast
    total = 0
    pos = _crc_of(src, tile, part, field)
    zstd = r.meta.compression != "none"
    while pos < tile.end:
        try:
            el = _head(src, pos, tile.end, field + "/Object")
        except ShardkitError as exc:
            part.error("ebml", exc, field)
            break
        if el.id == m.OBJECT:
            objects.append(el.start)
            if prints:
                data = None
                try:
                    data = r.decoder.decode(src.read(el.data_start, el.end), el.start)
                    total += len(data)
                except ShardkitError as exc:
                    part.error("object", exc, field + "/Object")
                for kind, fp in prints.items():
                    fp.append(0xFFFF_FFFF_FFFF_FFFF if data is None else  # "not decoded"
                              int.from_bytes(content_key(kind, data)[:8], "big"))
            elif not zstd:
                total += el.size
            else:
                try:
                    total += _decoded_size(r, src, el)
                except ShardkitError as exc:
                    part.error("object", exc, field + "/Object")
        elif el.id != m.VOID:
            part.add("tile", f"unexpected {el.name} element in a Tile", el.start, field)
        pos = el.end
    return total


def _tile_fast(r: MosaicFile, src: _Blocks, tile: Element, field: str, objects: array[int],
               prints: dict[str, array[int]], part: _Part) -> int | None:
    """:func:`_tile` for a well-formed tile, read whole and walked in one call (C when
    built); None, with nothing reported, when the careful walk must say what is wrong."""
    from .reader import MosaicFile

    buf = src.read(tile.data_start, tile.end)
    offsets: list[int] = []
    found = MosaicFile._tile_objects(tile.data_start, buf, offsets, strict=True)
    if found is None or len(buf) < 6 or buf[0] != m.CRC32 or buf[1] != 0x84:
        return None
    stored = int.from_bytes(buf[2:6], "little")
    crc = m.crc32_le(memoryview(buf)[6:])
    if crc != stored:
        part.add("crc32", f"Tile CRC-32 mismatch: stored {stored:08x}, computed {crc:08x} over "
                 f"bytes [{tile.data_start + 6}, {tile.end})", tile.data_start,
                 field + "/CRC-32")
    objects.extend(offsets)
    total = 0
    decode = r.decoder.decode
    plain = r.meta.compression == "none"
    kinds = list(prints.items())
    for o, raw in zip(offsets, found, strict=True):
        if plain and not kinds:
            total += len(raw)
            continue
        data = None
        try:
            data = decode(raw, o)
            total += len(data)
        except ShardkitError as exc:
            part.error("object", exc, field + "/Object")
        for kind, fp in kinds:
            fp.append(0xFFFF_FFFF_FFFF_FFFF if data is None else  # "not decoded"
                      int.from_bytes(content_key(kind, data)[:8], "big"))
    return total


def _decoded_size(r: MosaicFile, src: _Blocks, el: Element) -> int:
    import zstandard

    head = src.read(el.data_start, min(el.end, el.data_start + 18))
    try:
        n = zstandard.frame_content_size(head)
    except zstandard.ZstdError:
        n = -1
    if 0 <= n <= r.decoder.cap and el.size >= 9:
        return int(n)
    return len(r.decoder.decode(src.read(el.data_start, el.end), el.start))


def _entry(r: MosaicFile, idx: MosaicIndex, rank: int, buf: bytes, base: int,
           conflicts: dict[bytes, list[int]], goto: set[bytes]
           ) -> tuple[bytes, list[int]] | None:
    """An entry as :meth:`MosaicFile._entry` reads it, checked strictly: Key then Offset (or
    GoToConflicts then Void) filling the entry exactly; Void only."""
    start = idx.unrolled_start + rank * idx.entry_size
    end = start + idx.entry_size
    klen = idx.key_len
    p = start - base
    off_len = idx.entry_size - 4 - klen
    if (0 < off_len <= 8 and buf[p] == m.KEY and buf[p + 1] == 0x80 | klen
            and buf[p + 2 + klen] == m.OFFSET and buf[p + 3 + klen] == 0x80 | off_len):
        # Key then Offset filling the entry: the layout every writer uses
        return (bytes(buf[p + 2:p + 2 + klen]),
                [int.from_bytes(buf[p + 4 + klen:p + 4 + klen + off_len], "big")])
    field = f"/IdxUnrolled/entry[{rank}]"
    els = m.children(buf, base, start, end, field)
    ids = [e.id for e in els]
    if all(i == m.VOID for i in ids):
        return None
    if ids[0] != m.KEY:
        raise LayoutError(f"index entry starts with {els[0].name}, not Key", offset=start)
    key = bytes(buf[els[0].data_start - base:els[0].end - base])
    if len(ids) >= 2 and ids[1] == m.OFFSET and all(i == m.VOID for i in ids[2:]):
        o = els[1]
        return key, [read_uint(buf[o.data_start - base:o.end - base], o.start, "Offset")]
    if len(ids) >= 2 and ids[1] == m.GO_TO_CONFLICTS and all(i == m.VOID for i in ids[2:]):
        if els[1].size:
            raise LayoutError(f"GoToConflicts of {els[1].size} bytes (it is empty)",
                                offset=els[1].start)
        goto.add(key)
        offs = conflicts.get(key)
        if not offs:
            raise LayoutError(f"GoToConflicts for key {key.hex()}, which has no Conflict",
                                offset=els[1].start)
        return key, offs
    if all(i == m.VOID for i in ids[1:]):
        return None  # the Offset voided: deleted
    raise LayoutError("index entry is not Key + Offset (or GoToConflicts): "
                        + ", ".join(e.name for e in els), offset=start)


def _conflicts(src: _Blocks, cs: Element, key_len: int, field: str,
               out: dict[bytes, list[int]], part: Any) -> None:
    try:
        buf = src.read(cs.data_start, cs.end)
        for c in m.children(buf, cs.data_start, cs.data_start, cs.end, field):
            if c.id == m.VOID:
                continue
            if c.id != m.CONFLICT:
                part.add("conflict", f"unexpected {c.name} in Conflicts", c.start, field)
                continue
            key = None
            offs: list[int] = []
            for s in m.children(buf, cs.data_start, c.data_start, c.end, field + "/Conflict"):
                data = buf[s.data_start - cs.data_start:s.end - cs.data_start]
                if s.id == m.CONFLICTING_KEY:
                    key = bytes(data)
                elif s.id == m.CONFLICTING_OFFSET:
                    offs.append(read_uint(data, s.start, "ConflictingOffset"))
            if key is None or len(key) != key_len:
                part.add("conflict", "Conflict without a ConflictingKey of "
                         f"{key_len} bytes", c.start, field + "/Conflict")
                continue
            if len(offs) < 2:
                part.add("conflict", f"Conflict for key {key.hex()} lists {len(offs)} offset(s) "
                         "(at least 2)", c.start, field + "/Conflict")
            if key in out:
                part.add("conflict", f"a second Conflict for key {key.hex()}", c.start,
                         field + "/Conflict")
            for o in offs:  # is it an Object? answered window by window
                part.events.append(("member", o, key, c.start,
                                    field + "/Conflict/ConflictingOffset"))
            out[key] = offs
    except ShardkitError as exc:
        part.error("conflict", exc, field)


class _Window:
    """Objects of a run of tiles: their offsets, and the first 8 bytes of their hashes."""

    def __init__(self, kinds: list[str]) -> None:
        self.objects = array("Q")
        self.prints = {k: array("Q") for k in kinds}

    def extend(self, other: _Window, a: int, b: int) -> None:
        self.objects.extend(other.objects[a:b])
        for k, fp in self.prints.items():
            fp.extend(other.prints[k][a:b])


def _rewalk(r: MosaicFile, src: _Blocks, root_end: int, start: tuple[int, int, int], w: int,
            win: int, kinds: list[str]) -> _Window:
    """Window ``w``'s Objects again, walking the tiles from the one where it starts (what is
    wrong with them was said by the first walk)."""
    out = _Window(kinds)
    pos, count = start[0], start[1]
    lo, hi = w * win, (w + 1) * win
    quiet = _Part([], "")
    while pos < root_end and count < hi:
        try:
            el = _head(src, pos, root_end, "/Mosaic")
        except ShardkitError:
            break
        if el.id == m.TILE:
            got = _Window(kinds)
            _tile(r, src, el, "/Mosaic/Tile", got.objects, got.prints, quiet)
            n = len(got.objects)
            out.extend(got, max(0, lo - count), max(0, hi - count))
            count += n
        pos = el.end
    return out


class _Rec:
    """A _Part that records (check, message, offset, field) for later."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def add(self, check: str, message: str, offset: int | None = None,
            field: str | None = None) -> None:
        self.events.append((check, message, offset, field))

    def error(self, check: str, exc: ShardkitError, field: str | None = None) -> None:
        self.add(check, exc.message, exc.offset, exc.field or field)


class _IndexCheck:
    """One index: its own elements checked at once, its entries window by window; the
    problems reported, in the order of a single pass, by :meth:`report`."""

    def __init__(self, r: MosaicFile, src: _Blocks, el: Element, n: int, kinds: list[str],
                 seen: set[str]) -> None:
        self.r, self.src, self.n = r, src, n
        self.ok = False
        self.rec = _Rec()
        self.members: set[int] = set()  # ConflictingOffsets found to be Objects
        self.problems: list[tuple[tuple[int, ...], tuple[Any, ...]]] = []
        self.n_problems = 0
        self.dups: list[int] = []
        self.orphans: list[int] = []
        self.n_orphans = 0
        self.cand: list[Any] = []  # lost Objects: offsets, prints, windows, excused
        self.goto: set[bytes] = set()
        self.conflicts: dict[bytes, list[int]] = {}
        self._setup(el, kinds, seen)

    def _setup(self, el: Element, kinds: list[str], seen: set[str]) -> None:
        src, part = self.src, self.rec
        field = self.field = f"/Mosaic/Index[{self.n}]"
        pos = _crc_of(src, el, part, field)
        kids: dict[int, list[Element]] = {}
        try:
            while pos < el.end:
                child = _head(src, pos, el.end, field)
                kids.setdefault(child.id, []).append(child)
                pos = child.end
        except ShardkitError as exc:
            part.error("ebml", exc, field)
            return
        for need in (m.IDX_DESCRIPTION, m.IDX_UNROLLED, m.IDX_UNROLLED_ENTRY_SIZE,
                     m.MAP_CONTAINER):
            if need not in kids:
                part.add("index", f"Index has no {m.ELEMENT_NAMES[need]}", el.start, field)
                return
            if len(kids[need]) > 1:
                part.add("index", f"Index has {len(kids[need])} {m.ELEMENT_NAMES[need]} "
                         "elements", kids[need][1].start, field)
        d = kids[m.IDX_DESCRIPTION][0]
        description = src.read(d.data_start, d.end).decode("utf-8", "replace").rstrip("\0")
        kind = m.kind_of_description(description)
        if kind is None:
            part.add("index", f"unknown IdxDescription {description!r}", d.start,
                     field + "/IdxDescription")
            return
        if kind.name in seen:
            part.add("index", f"a second {kind.name} index", el.start, field)
        seen.add(kind.name)
        es = kids[m.IDX_UNROLLED_ENTRY_SIZE][0]
        entry_size = read_uint(src.read(es.data_start, es.end), es.start)
        unrolled = kids[m.IDX_UNROLLED][0]
        if entry_size < kind.key_len + 4:
            part.add("index", f"IdxUnrolledEntrySize {entry_size} is too small for "
                     f"{kind.key_len}-byte keys", es.start, field + "/IdxUnrolledEntrySize")
            return
        if unrolled.size % entry_size:
            part.add("index", f"IdxUnrolled of {unrolled.size} bytes is not a multiple of "
                     f"IdxUnrolledEntrySize {entry_size}", unrolled.start,
                     field + "/IdxUnrolled")
            return
        num = unrolled.size // entry_size

        # the map: CRC-32, parse, size
        mc = kids[m.MAP_CONTAINER][0]
        mstart = _crc_of(src, mc, part, field + "/MapContainer")
        func = None
        try:
            mp = _head(src, mstart, mc.end, field + "/MapContainer/Map")
            if mp.id != m.MAP:
                part.add("map", f"MapContainer holds {mp.name}, not Map", mp.start,
                         field + "/MapContainer")
            else:
                from ...hashing import fmph

                func = fmph.GOFunction.parse(src.read(mp.data_start, mp.end),
                                             base_offset=mp.data_start)
                if len(func) != num:
                    part.add("map", f"the map is a function of {len(func)} keys but "
                             f"IdxUnrolled has {num} entries", mp.start,
                             field + "/MapContainer/Map")
        except ShardkitError as exc:
            part.error("map", exc, field + "/MapContainer/Map")
            func = None

        for cs in kids.get(m.CONFLICTS, []):
            _conflicts(src, cs, kind.key_len, field + "/Conflicts", self.conflicts, part)
        self.kind = kind
        self.func = func
        self.num = num
        self.fp_kind = kind.name if kind.name in kinds else None
        self.idx = MosaicIndex(kind.name, description, el.start, el.data_start, el.end,
                               unrolled.data_start, unrolled.size, entry_size)
        self.ok = True

    def _problem(self, key: tuple[int, ...], *args: Any) -> None:
        self.n_problems += 1
        self.problems.append((key, args))
        if len(self.problems) > 8 * MAX_PROBLEMS_PER_PART:
            self.problems.sort(key=lambda p: p[0])
            del self.problems[MAX_PROBLEMS_PER_PART:]

    def pending_before(self, w: int) -> bool:
        """Whether a lost Object of window ``w`` or later is not yet excused."""
        if not self.cand:
            return False
        return bool((~self.cand[3] & (self.cand[2] >= w)).any())

    def window(self, got: _Window, lo: int, hi: int | None, w: int, main: bool,
               excuse_only: bool = False) -> None:
        """The entries whose target is in [lo, hi): the Objects of window ``w``; with
        ``main``, also what is checked once per entry (layout, map, conflicts)."""
        import numpy as np

        objects = np.frombuffer(got.objects, np.uint64) if got.objects \
            else np.zeros(0, np.uint64)
        fp = got.prints.get(self.fp_kind) if self.fp_kind is not None else None
        prints = (np.frombuffer(fp, np.uint64) if fp else np.zeros(0, np.uint64)) \
            if fp is not None else None
        if not excuse_only:
            want = np.fromiter(set(self._member_wanted()), np.uint64)
            if want.size and objects.size:
                self.members.update(want[np.isin(want, objects)].tolist())
        seen = np.zeros(len(objects), np.uint8)  # per Object: 0 no entry, 1 one, 2 several
        for first in range(0, self.num, BATCH):
            batch = self._batch(first, main)
            if main and self.func is not None:
                self._check_map(batch)
            targets = batch.targets(lo, hi)
            if targets is None:
                continue
            ok, at = _mark_seen(objects, seen, targets[0])
            if not excuse_only:
                self._check_targets(batch, targets, ok, at, prints)
        if excuse_only:
            if prints is not None and self.cand:
                nonlost = prints[seen != 0]
                self.cand[3] |= (self.cand[2] > w) & np.isin(self.cand[1], nonlost)
            return
        self._settle(objects, prints, seen, w)

    def _batch(self, first: int, main: bool) -> _Batch:
        """Entries ``first``.. of the next BATCH: the common layout parsed with numpy, the
        others one by one (their layout problems reported with ``main``)."""
        import numpy as np

        idx, kind = self.idx, self.kind
        klen, es = kind.key_len, idx.entry_size
        off_len = es - 4 - klen
        last = min(self.num, first + BATCH)
        a = idx.unrolled_start + first * es
        buf = self.src.read(a, idx.unrolled_start + last * es)
        rows = np.frombuffer(buf, np.uint8).reshape(last - first, es)
        if 0 < off_len <= 8:
            fast = ((rows[:, 0] == m.KEY) & (rows[:, 1] == 0x80 | klen)
                    & (rows[:, 2 + klen] == m.OFFSET)
                    & (rows[:, 3 + klen] == 0x80 | off_len))
        else:
            fast = np.zeros(last - first, bool)
        offsets = np.zeros(last - first, np.uint64)
        for c in range(4 + klen, es) if 0 < off_len <= 8 else ():
            offsets = (offsets << np.uint64(8)) | rows[:, c].astype(np.uint64)
        batch = _Batch(first, last, a, buf, rows, fast, offsets, klen, es)
        for i in np.nonzero(~fast)[0].tolist():
            rank = first + i
            efield = f"{self.field}/IdxUnrolled/entry[{rank}]"
            try:
                found = _entry(self.r, idx, rank, buf, a, self.conflicts, self.goto)
            except ShardkitError as exc:
                if main:
                    self._problem((first, 0, rank, 0), "entry", exc.message, exc.offset,
                                  exc.field or efield)
                continue
            if found is None:
                continue
            if len(found[0]) != klen:
                if main:
                    self._problem((first, 0, rank, 0), "entry",
                                  f"key of {len(found[0])} bytes in a {kind.name} index",
                                  a + i * es, efield)
                continue
            batch.slow[rank] = found
        return batch

    def _check_map(self, batch: _Batch) -> None:
        """Each readable entry's key through the map gives the entry's own rank."""
        assert self.func is not None
        ranks, keys = batch.ranked_keys()
        if not keys:
            return
        es, unrolled = batch.es, self.idx.unrolled_start
        for rank, key, g in zip(ranks, keys, self.func.get_many(keys), strict=True):
            if g != rank:
                self._problem((batch.first, 1, rank, 0), "map",
                              f"key {key.hex()} is entry {rank} but the map gives {g}",
                              unrolled + rank * es, f"{self.field}/IdxUnrolled/entry[{rank}]")

    def _check_targets(self, batch: _Batch, targets: tuple[Any, ...], ok: Any, at: Any,
                       prints: Any) -> None:
        """Entries that point at no Object, and (with content hashes) entries whose key is
        not the hash of the Object they point at."""
        import numpy as np

        t_off, t_rank, t_sub, pref = targets
        kind, first, es = self.kind, batch.first, batch.es
        unrolled, field = self.idx.unrolled_start, f"{self.field}/IdxUnrolled"
        for j in np.nonzero(~ok)[0].tolist():
            rank, o = int(t_rank[j]), int(t_off[j])
            key = batch.key_of(rank)
            self._problem((first, 2, rank, int(t_sub[j])), "entry",
                          f"key {key.hex()} points at byte {o}, which is not an Object",
                          unrolled + rank * es, f"{field}/entry[{rank}]")
        if prints is None:
            return
        good = np.nonzero(ok)[0]
        want = prints[at[good]]
        bad = good[(want != np.uint64(0xFFFF_FFFF_FFFF_FFFF)) & (want != pref[good])]
        for j in bad.tolist():
            rank, o = int(t_rank[j]), int(t_off[j])
            key = batch.key_of(rank)
            self._problem((first, 2, rank, int(t_sub[j])), "content_hash",
                          f"{kind.name} key {key.hex()} but the object at byte {o} hashes to "
                          f"{int(prints[at[j]]):016x}...", o, f"{field}/entry[{rank}]")

    def _settle(self, objects: Any, prints: Any, seen: Any, w: int) -> None:
        """After window ``w``: Objects pointed at twice, and Objects with no entry (with
        content hashes, kept as candidates until a later Object of the same hash excuses
        them)."""
        import numpy as np

        lost = seen == 0
        for o in objects[np.nonzero(seen == 2)[0][:5]].tolist():
            if len(self.dups) < 5:
                self.dups.append(int(o))
        if prints is None:
            self.n_orphans += int(lost.sum())
            for o in objects[lost][:5].tolist():
                if len(self.orphans) < 5:
                    self.orphans.append(int(o))
            return
        nonlost = prints[~lost]
        if self.cand:
            self.cand[3] |= np.isin(self.cand[1], nonlost)
        if lost.any():
            # swh-mosaic stores content added twice twice, its index keeping the last copy: an
            # Object whose hash is that of an Object with an entry is such a copy, not lost
            lost &= ~np.isin(prints, nonlost)
        if lost.any():
            new = [objects[lost], prints[lost], np.full(int(lost.sum()), w, np.int64),
                   np.zeros(int(lost.sum()), bool)]
            self.cand = new if not self.cand else [
                np.concatenate([x, y]) for x, y in zip(self.cand, new, strict=True)]

    def _member_wanted(self) -> list[int]:
        return [e[1] for e in self.rec.events if e[0] == "member"]

    def report(self, part: _Part) -> None:
        for e in self.rec.events:
            if e[0] == "member":
                _, o, key, start, field = e
                if o not in self.members:
                    part.add("conflict", f"ConflictingOffset {o} of key {key.hex()} is not an "
                             "Object", start, field)
            else:
                part.add(*e)
        if not self.ok:
            return
        self.problems.sort(key=lambda p: p[0])
        kept = self.problems[:MAX_PROBLEMS_PER_PART]
        for _, args in kept:
            part.add(*args)
        part.n += self.n_problems - len(kept)
        field = self.field
        kind = self.kind.name
        for key in set(self.conflicts) - self.goto:
            part.add("conflict", f"Conflict for key {key.hex()}, which has no GoToConflicts "
                     "entry", None, field + "/Conflicts")
        for o in self.dups:
            part.add("entry", f"several entries point at the Object at byte {o}", o,
                     field + "/IdxUnrolled")
        if self.fp_kind is not None:
            orphans = self.cand[0][~self.cand[3]].tolist() if self.cand else []
            n_orphans = len(orphans)
        else:
            orphans, n_orphans = self.orphans, self.n_orphans
        for o in orphans[:5]:
            part.add("orphan", f"the Object at byte {o} has no {kind} entry", int(o),
                     field + "/IdxUnrolled")
        if n_orphans > 5:
            part.add("orphan", f"{n_orphans - 5} more Objects have no {kind} entry",
                     None, field + "/IdxUnrolled")


class _Batch:
    """BATCH entries of an IdxUnrolled: their bytes, which have the common layout (``fast``,
    with their ``offsets`` parsed), and the others parsed one by one (``slow``: rank → key
    and offsets)."""

    def __init__(self, first: int, last: int, start: int, buf: bytes, rows: Any, fast: Any,
                 offsets: Any, klen: int, es: int) -> None:
        self.first, self.last, self.start, self.buf = first, last, start, buf
        self.rows, self.fast, self.offsets = rows, fast, offsets
        self.klen, self.es = klen, es
        self.slow: dict[int, tuple[bytes, list[int]]] = {}

    def key_of(self, rank: int) -> bytes:
        if rank in self.slow:
            return self.slow[rank][0]
        p = (rank - self.first) * self.es
        return bytes(self.buf[p + 2:p + 2 + self.klen])

    def ranked_keys(self) -> tuple[list[int], list[bytes]]:
        """The ranks and keys of the readable entries, in rank order."""
        buf, es, klen, first = self.buf, self.es, self.klen, self.first
        if not self.slow:
            ranks = list(range(first, self.last))
            keys = [buf[p + 2:p + 2 + klen] for p in range(0, len(buf), es)]
            if not self.fast.all():
                flags = self.fast.tolist()
                keys = [k for k, f in zip(keys, flags, strict=True) if f]
                ranks = [rk for rk, f in zip(ranks, flags, strict=True) if f]
            return ranks, keys
        ranks, keys = [], []
        for i, f in enumerate(self.fast.tolist()):
            rank = first + i
            if f:
                ranks.append(rank)
                keys.append(buf[i * es + 2:i * es + 2 + klen])
            elif rank in self.slow:
                ranks.append(rank)
                keys.append(self.slow[rank][0])
        return ranks, keys

    def targets(self, lo: int, hi: int | None) -> tuple[Any, ...] | None:
        """The targets in [lo, hi) as arrays (offset, rank, sub, the key's first 8 bytes as a
        number); None when there is none."""
        import numpy as np

        sh = np.uint64(8)
        fi = np.nonzero(self.fast)[0]
        t_off = self.offsets[fi]
        t_rank = fi.astype(np.int64) + self.first
        t_sub = np.zeros(len(fi), np.int64)
        pref = np.zeros(len(fi), np.uint64)
        for c in range(2, 2 + min(8, self.klen)):
            pref = (pref << sh) | self.rows[fi, c].astype(np.uint64)
        if self.slow:
            so, sr, ss, sp = [], [], [], []
            for rank, (key, offs) in self.slow.items():
                kp = int.from_bytes(key[:8], "big")
                for j, o in enumerate(offs):
                    so.append(o)
                    sr.append(rank)
                    ss.append(j)
                    sp.append(kp)
            t_off = np.concatenate([t_off, np.array(so, np.uint64)])
            t_rank = np.concatenate([t_rank, np.array(sr, np.int64)])
            t_sub = np.concatenate([t_sub, np.array(ss, np.int64)])
            pref = np.concatenate([pref, np.array(sp, np.uint64)])
        sel = t_off >= np.uint64(lo)
        if hi is not None:
            sel &= t_off < np.uint64(hi)
        if not sel.any():
            return None
        return t_off[sel], t_rank[sel], t_sub[sel], pref[sel]


def _mark_seen(objects: Any, seen: Any, t_off: Any) -> tuple[Any, Any]:
    """Count the targets per Object in ``seen`` (1 one, 2 several); returns which targets are
    Objects and the index of the Object each would be."""
    import numpy as np

    at = np.searchsorted(objects, t_off)
    if len(objects):
        ok = (at < len(objects)) & (objects[np.minimum(at, len(objects) - 1)] == t_off)
    else:
        ok = np.zeros(len(t_off), bool)
    hit, count = np.unique(at[ok], return_counts=True)
    seen[hit] = np.where((count > 1) | (seen[hit] > 0), 2, 1)
    return ok, at
