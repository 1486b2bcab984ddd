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

This module walks the tiles and runs the checks; the index checks are in :mod:`.verify_index`,
what both use (block reads, capped problem lists, CRC-32 checks) in :mod:`.verify_base`.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...errors import Problem, ShardkitError
from . import model as m
from .model import Element, content_key
from .verify_base import (
    BLOCK,
    MAX_PROBLEMS_PER_PART,
    _Blocks,
    _crc_of,
    _head,
    _Part,
    _Window,
)
from .verify_index import _IndexCheck

if TYPE_CHECKING:
    from .reader import MosaicFile

__all__ = ["BLOCK", "MAX_PROBLEMS_PER_PART", "WINDOW", "check"]

#: Objects whose offsets and hash prefixes are held at once; the entries of every index are
#: read once per window of this many Objects.
WINDOW = 1 << 21


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
