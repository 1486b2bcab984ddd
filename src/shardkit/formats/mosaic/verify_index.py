"""The index checks of MOSAIC verification (see :mod:`.verify`): each index's own elements
(its CRC-32s, the map, the conflicts), then its entries, window by window, against the
Objects of the window (parsed with numpy where they have the layout every writer uses)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import LayoutError, ShardkitError
from . import model as m
from .model import Element, MosaicIndex, read_uint
from .verify_base import MAX_PROBLEMS_PER_PART, _Blocks, _crc_of, _head, _Part, _Window

if TYPE_CHECKING:
    from .reader import MosaicFile

#: Index entries checked per batch.
BATCH = 8192


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
