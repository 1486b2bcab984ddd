"""Xet MDB verification: frame, totals, lookup tables, order, sizes and recomputed hashes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from dataclasses import field as _field
from typing import TYPE_CHECKING, Any, TypeVar

from ..._lazy import lazy_module
from ...errors import Problem, ShardkitError
from ...hashing import xet as xh
from . import model as _model
from .model import (
    _FOOTER_AT,
    _HEADER_AT,
    _NAME,
    CHUNK_FLAG_GLOBAL_DEDUP,
    FILE_FLAG_METADATA_EXT,
    FILE_FLAG_VERIFICATION,
    FOOTER_SIZE,
    HEADER_SIZE,
    RECORD_SIZE,
    FileInfo,
    MdbFooter,
    XorbInfo,
    _Blocks,
    _Layout,
    _new_hash,
    _runs,
)

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

if TYPE_CHECKING:
    from .reader import MdbShard

_ZERO16 = bytes(16)
_I = TypeVar("_I")



class VerifyReport(list[Problem]):
    """What :meth:`MdbShard.verify` returns: the problems found (a list, empty when the shard
    is sound) and, in :attr:`notes`, the checks that could not be made here.

    Attributes:
        notes: One :class:`~shardkit.errors.Problem` per kind of check not made, with counts:
            files whose xorbs are in other shards, hashes that HMAC-keyed chunk hashes keep
            from being recomputed, a file name the name check could not use. With
            ``strict=True`` these are problems instead (and ``notes`` is empty).
    """

    def __init__(self, problems: Iterable[Problem] = (), notes: Iterable[Problem] = ()) -> None:
        super().__init__(problems)
        self.notes: list[Problem] = list(notes)


class _Known:
    """The xorbs a file's terms may use, found by hash: for each shard, its xorbs' truncated
    hashes (8 bytes) sorted, with their indices (16 bytes a xorb, no object or dict entry per
    xorb), searched by bisection and confirmed on the full hash; the last
    :data:`_KNOWN_CACHE` xorbs found are kept (files of one shard mostly use its own few xorbs
    in turn). The shard itself comes first (of its repeated xorbs the last one), then the
    other shards in order (the first of repeated xorbs)."""

    def __init__(self) -> None:
        # (xorbs, sorted keys, their indices, full hash of index i, prefer the last)
        self._sources: list[tuple[Sequence[XorbInfo], np.ndarray, np.ndarray,
                                  Callable[[int], bytes], bool]] = []
        # not a ByteLRU: it holds XorbInfo records, not bytes, and is read once per term
        self._cache: dict[bytes, XorbInfo] = {}

    def add(self, shard: MdbShard, *, replace: bool) -> None:
        """Add ``shard``'s xorbs: first in the search when ``replace`` (then of repeated
        hashes the last wins), else after those added before (the first wins)."""
        xorbs = shard.xorbs
        if isinstance(xorbs, _Blocks):
            lay = shard._layout
            mem = shard._mem
            pos = lay.xorb_pos
            keys = np.empty(len(pos), np.uint64)
            words = _u64(mem)
            for lo in range(0, len(pos), _WINDOW):
                keys[lo : lo + _WINDOW] = words[pos[lo : lo + _WINDOW] // 8]
                shard._drop_pages()

            def full(i: int) -> bytes:
                p = int(pos[i])
                return bytes(mem[p : p + 32])
        else:
            keys = np.fromiter((int.from_bytes(bytes(x.hash)[:8], "little")
                                for x in _walk(xorbs)), np.uint64, len(xorbs))

            def full(i: int) -> bytes:
                return bytes(xorbs[i].hash)
        order = np.argsort(keys, kind="stable")
        entry = (xorbs, keys[order], order, full, replace)
        if replace:
            self._sources.insert(0, entry)
        else:
            self._sources.append(entry)

    def get(self, h: bytes) -> XorbInfo | None:
        x = self._cache.get(h)
        if x is not None:
            return x
        key = np.uint64(int.from_bytes(h[:8], "little"))
        for seq, keys, order, full, last in self._sources:
            lo = int(np.searchsorted(keys, key, "left"))
            hi = int(np.searchsorted(keys, key, "right"))
            found = None
            for j in (range(hi - 1, lo - 1, -1) if last else range(lo, hi)):
                i = int(order[j])
                if full(i) == h:
                    found = i
                    break
            if found is None:
                continue
            x = seq.peek(found) if isinstance(seq, _Blocks) else seq[found]
            if len(self._cache) >= _KNOWN_CACHE:
                del self._cache[next(iter(self._cache))]
            self._cache[h] = x
            return x
        return None


def _u64(mem: Any) -> np.ndarray:
    """The file as little-endian u64 words (records start at multiples of 16 bytes, so a
    record's first 8 hash bytes, its truncated key, are word ``pos // 8``)."""
    return np.frombuffer(mem, "<u8", count=len(mem) // 8)


#: Blocks or table entries each windowed check handles at a time (bounded memory).
_WINDOW = 1 << 11


_KNOWN_CACHE = 1024


def _walk(items: Sequence[_I], shard: MdbShard | None = None, every: int = 4096
          ) -> Iterable[_I]:
    """The items of ``files`` or ``xorbs`` without keeping the ones built for the walk (and
    dropping ``shard``'s mapped pages every ``every`` items)."""
    walk = items.walk() if isinstance(items, _Blocks) else items
    if shard is None:
        return walk
    return _dropping(walk, shard, every)


def _dropping(walk: Iterable[_I], shard: MdbShard, every: int) -> Iterable[_I]:
    for i, item in enumerate(walk, 1):
        yield item
        if not i % every:
            shard._drop_pages()


#: Files checked between two drops of the mapped pages: their terms read xorbs anywhere in
#: the xorb section, so the pages they touch are dropped more often than a sequential walk's.
_FILES_EVERY = 32


def _word_sum(shard: MdbShard, lay: _Layout, pos: np.ndarray, word: int,
              mask: int | None = None) -> int:
    """The sum of u32 word ``word`` of the records at ``pos`` (with ``mask``: the count of
    those with a bit of ``mask`` set), in windows, dropping the mapped pages after each."""
    total = 0
    for lo in range(0, len(pos), _WINDOW):
        w = lay.words(pos[lo : lo + _WINDOW], word)
        total += int(np.count_nonzero(w & mask)) if mask is not None else int(w.sum())
        shard._drop_pages()
    return total


@dataclass
class _Unchecked:
    """Tally of what verify could not check."""

    files: int = 0  # files with a term whose xorb is not at hand
    terms: int = 0
    xorbs: set[bytes] = _field(default_factory=set)
    first_file: int | None = None
    keyed_files: int = 0  # files whose hashes keyed chunk hashes hide
    keyed_xorbs: int = 0


def verify(shard: MdbShard, progress: Callable[[int, int], None] | None = None, *,
           name_check: bool = False, other_shards: Iterable[MdbShard] = (),
           strict: bool = False) -> VerifyReport:
    """Run every check; return the problems found and the checks not made (see
    :meth:`MdbShard.verify`)."""
    problems = VerifyReport()
    add, note = problems.append, problems.notes.append
    try:
        lay = shard._layout
        files, xorbs = shard.files, shard.xorbs
    except ShardkitError as exc:
        add(Problem("layout", exc.message, exc.offset, exc.field))
        return problems
    size, f = shard.source.size, shard.footer
    _verify_frame(shard, lay, f, size, add)
    shard._drop_pages()  # each phase reads the whole shard: no phase keeps it mapped
    _verify_tables(shard, lay, f, add)
    shard._drop_pages()
    _verify_order(shard, lay, f, add)
    shard._drop_pages()
    _verify_bookends(shard, lay, add)
    keyed = f is not None and f.is_keyed
    known = _Known()
    for other in other_shards:
        known.add(other, replace=False)
    known.add(shard, replace=True)
    total = len(files) + len(xorbs)
    done = 0
    unchecked = _Unchecked()
    for x in _walk(xorbs, shard):
        _verify_xorb(shard, x, keyed, add)
        done += 1
        if progress is not None and done % 1024 == 0:
            progress(done, total)
    if keyed:
        unchecked.keyed_xorbs = len(xorbs)
    _verify_files(shard, files, known, keyed, add, progress, done, total, unchecked)
    if progress is not None:
        progress(total, total)
    _report_unchecked(unchecked, f, note)
    if name_check:
        _verify_name(shard, add, note)
    if strict:
        problems.extend(problems.notes)
        problems.notes.clear()
    return problems


def _report_unchecked(u: _Unchecked, f: MdbFooter | None,
                      note: Callable[[Problem], None]) -> None:
    if u.files:
        note(Problem("unverifiable_files", f"{u.files} file(s) not verifiable here: their "
                     f"xorbs are in other shards ({u.terms} term(s) use {len(u.xorbs)} xorb(s) "
                     "this shard does not describe), so their term sizes, verification hashes "
                     "and file hashes were not checked", u.first_file, "/file_info"))
    if u.keyed_xorbs or u.keyed_files:
        what = f"the hashes of {u.keyed_xorbs} xorb(s)"
        if u.keyed_files:
            what += f" and the verification and file hashes of {u.keyed_files} file(s)"
        note(Problem("keyed_hashes", f"chunk hashes are HMAC-keyed (the footer's key is set): "
                     f"{what} cannot be recomputed from them and were not checked",
                     None if f is None else f.footer_offset + _FOOTER_AT["chunk_hash_hmac_key"],
                     "/footer/chunk_hash_hmac_key"))


def _verify_frame(shard: MdbShard, lay: _Layout, f: MdbFooter | None, size: int,
                  add: Callable[[Problem], None]) -> None:
    if shard._footer_note:
        add(Problem("footer", shard._footer_note, _HEADER_AT["len_footer"],
                    "/header/len_footer"))
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
        ("ofs_file_info", f.file_info_offset, HEADER_SIZE),
        ("ofs_xorb_info", f.xorb_info_offset, lay.xorb_info_offset),
    ]
    if not hfjs:
        flo = lay.xorb_info_end
        xlo = flo + _model._LOOKUP_DTYPE.itemsize * f.file_lookup_num_entry
        clo = xlo + _model._LOOKUP_DTYPE.itemsize * f.xorb_lookup_num_entry
        expect += [
            ("ofs_file_lookup", f.file_lookup_offset, flo),
            ("ofs_xorb_lookup", f.xorb_lookup_offset, xlo),
            ("ofs_chunk_lookup", f.chunk_lookup_offset, clo),
            ("ofs_footer", fo,
             clo + _model._CHUNK_LOOKUP_DTYPE.itemsize * f.chunk_lookup_num_entry),
        ]
    elif lay.xorb_info_end != fo:
        add(Problem("layout", f"{fo - lay.xorb_info_end} bytes lie between the xorb "
                    "bookend and the footer, but the footer lists no lookup table",
                    lay.xorb_info_end, "/footer"))
    for field, found, want in expect:
        if found != want:
            add(Problem("footer", f"{field} is {found}, the sections say {want}",
                        fo + _FOOTER_AT[field], f"/footer/{field}"))
    if any(f.reserved):
        add(Problem("footer", "reserved footer words are not zero", fo + _FOOTER_AT["reserved"],
                    "/footer/reserved"))
    if not hfjs:  # huggingface.js writes totals of its own (FORMAT_NOTES section 9)
        for field, found, want in (
                ("len_stored_on_disk", f.stored_bytes_on_disk,
                 _word_sum(shard, lay, lay.xorb_pos, 3)),
                ("len_materialized", f.materialized_bytes,
                 sum(fi.size for fi in _walk(shard.files, shard))),
                ("len_stored", f.stored_bytes, _word_sum(shard, lay, lay.xorb_pos, 2))):
            if found != want:
                add(Problem("totals", f"{field} is {found}, the sections sum to {want}",
                            fo + _FOOTER_AT[field], f"/footer/{field}"))


def _verify_tables(shard: MdbShard, lay: _Layout, f: MdbFooter | None,
                   add: Callable[[Problem], None]) -> None:
    """Each lookup table against the record sections (FORMAT_NOTES 6.1, 8 item 3), with
    numpy over windows of the layout, the tables and the xorb section's bytes (no object per
    chunk, no copy of a table or a section: memory does not grow with the shard)."""
    if f is None:
        return
    try:
        ft, xt, ct = shard.file_lookup, shard.xorb_lookup, shard.chunk_lookup
    except ShardkitError as exc:
        add(Problem("lookup_table", exc.message, exc.offset, exc.field))
        return
    words = _u64(shard._mem)
    for name, table, positions, base in (
            ("file", ft, lay.file_pos, HEADER_SIZE),
            ("xorb", xt, lay.xorb_pos, lay.xorb_info_offset)):
        if table is None:
            continue
        if len(table) != len(positions):
            add(Problem("lookup_table", f"the {name} table has {len(table)} entries, the "
                        f"section {len(positions)} blocks", None, f"/{name}_lookup"))
            continue
        at, width = (f.file_lookup_offset if name == "file" else f.xorb_lookup_offset,
                     _model._LOOKUP_DTYPE.itemsize)
        shown = 0
        for lo in range(0, len(positions), _WINDOW):
            pos = positions[lo : lo + _WINDOW]
            want_key, want_index = words[pos // 8], (pos - base) // RECORD_SIZE
            part = table[lo : lo + _WINDOW]
            bad = np.flatnonzero((part["key"] != want_key) | (part["index"] != want_index))
            for j in bad[: 20 - shown].tolist():
                i = lo + j
                add(Problem("lookup_table", f"{name} table entry {i} is "
                            f"({int(table['key'][i])}, {int(table['index'][i])}), expected "
                            f"({int(want_key[j])}, {int(want_index[j])})",
                            at + width * i, f"/{name}_lookup/entries/{i}"))
            shown += min(len(bad), 20 - shown)
            shard._drop_pages()
        _verify_ascending(table["key"], f"the {name} table", at, width, f"/{name}_lookup",
                          add)
        shard._drop_pages()
    if ct is not None:
        sorted_ok = _verify_ascending(ct["key"], "the chunk table", f.chunk_lookup_offset,
                                      _model._CHUNK_LOOKUP_DTYPE.itemsize, "/chunk_lookup", add)
        total = _word_sum(shard, lay, lay.xorb_pos, 1)
        same = len(ct) == total and _chunk_table_holds(shard, lay, ct, words, sorted_ok)
        if not same:
            add(Problem("lookup_table", "the chunk table does not hold exactly the "
                        "(truncated chunk hash, xorb record, chunk) triples of the xorb "
                        f"section ({len(ct)} entries, {total} chunks)",
                        f.chunk_lookup_offset, "/chunk_lookup"))
        shard._drop_pages()


#: Entries of one key in the chunk table searched one by one; a larger group (or an unsorted
#: table) is compared by sorting both sides instead.
_GROUP_MAX = 64


def _chunk_table_holds(shard: MdbShard, lay: _Layout, ct: np.ndarray, words: np.ndarray,
                       sorted_ok: bool) -> bool:
    """Whether the chunk table (as long as the xorb section has chunks) holds exactly the
    section's (key, xorb record, chunk) triples.

    The section's triples are distinct (one per chunk record), so with equal counts it is
    enough that each is in the table: each is searched among the table's sorted keys, in
    windows of xorbs (no copy of the table; see :func:`_search_sorted_table`). Only a table
    not sorted by key, or one with more than :data:`_GROUP_MAX` entries of one key, is
    checked by sorting copies of both sides (memory of the table's size: such a table is
    already reported or very unusual).
    """
    if not sorted_ok:
        return _chunk_table_sorted_equal(shard, ct)
    txorb, tchunk = ct["xorb"], ct["chunk"]
    base = lay.xorb_info_offset
    xpos = lay.xorb_pos
    for lo in range(0, len(xpos), _WINDOW):
        head = (xpos[lo : lo + _WINDOW] - base) // RECORD_SIZE
        cnt = lay.words(xpos[lo : lo + _WINDOW], 1)
        chunk_rec = _runs(head + 1, cnt)
        if not len(chunk_rec):
            continue
        xorb_rec = np.repeat(head, cnt)
        chunk_no = chunk_rec - xorb_rec - 1
        want = words[(base + chunk_rec * RECORD_SIZE) // 8]
        first, end, at_first = _search_sorted_table(shard, ct, want, ("xorb", "chunk"))
        span = end - first
        if bool(np.any(span == 0)):
            return False
        if bool(np.any(span > _GROUP_MAX)):
            return _chunk_table_sorted_equal(shard, ct)
        one = np.flatnonzero(span == 1)
        if not bool(np.array_equal(at_first["xorb"][one], xorb_rec[one])
                    and np.array_equal(at_first["chunk"][one], chunk_no[one])):
            return False
        for j in np.flatnonzero(span > 1).tolist():
            xr, ci = int(xorb_rec[j]), int(chunk_no[j])
            if not any(int(txorb[k]) == xr and int(tchunk[k]) == ci
                       for k in range(int(first[j]), int(end[j]))):
                return False
        shard._drop_pages()
    return True


def _chunk_table_sorted_equal(shard: MdbShard, ct: np.ndarray) -> bool:
    """The chunk table and the section's chunk rows as multisets, by sorting copies."""
    want_rows = np.sort(shard._chunk_rows, order=["key", "xorb", "chunk"])
    return len(ct) == len(want_rows) and bool(
        np.array_equal(np.sort(ct, order=["key", "xorb", "chunk"]), want_rows))


#: Entries of a lookup table read at a time when searching it (1 MiB of keys).
_SLAB = 1 << 15


def _search_sorted_table(shard: MdbShard, table: np.ndarray, want: np.ndarray,
                         fields: tuple[str, ...] = ()
                         ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """``np.searchsorted(table["key"], want)``, left and right, for a table sorted by key in
    the mapping, plus the ``fields`` of the entry at each left answer (where it is < n): the
    table is read once, in order, a slab at a time, dropping the mapped pages after each slab.

    A bisection of each key reads the table at random: the pages it maps (64 KiB around each
    touched page) soon cover the whole table, and resident memory grows with the shard. Here
    the wanted keys are sorted instead, and each slab answers the keys that fall inside it,
    from a contiguous copy of its keys (no copy of the table).
    """
    n, m = len(table), len(want)
    order = np.argsort(want, kind="stable")
    ws = want[order]
    first = np.full(m, n, np.int64)
    end = np.full(m, n, np.int64)
    got = {name: np.zeros(m, table.dtype[name]) for name in fields}
    jl = jr = 0
    for a in range(0, n, _SLAB):
        if jl >= m and jr >= m:
            break
        part = np.ascontiguousarray(table["key"][a : a + _SLAB])
        top = part[-1]
        # the first key >= w lies in this slab for each w <= top not answered before
        kl = int(np.searchsorted(ws, top, "right"))
        if kl > jl:
            idx = np.searchsorted(part, ws[jl:kl], "left")
            first[order[jl:kl]] = a + idx
            for name in fields:
                got[name][order[jl:kl]] = table[name][a : a + _SLAB][idx]
            jl = kl
        # the first key > w lies in this slab for each w < top not answered before
        kr = int(np.searchsorted(ws, top, "left"))
        if kr > jr:
            end[order[jr:kr]] = a + np.searchsorted(part, ws[jr:kr], "right")
            jr = kr
        shard._drop_pages()
    return first, end, got


def _verify_ascending(keys: np.ndarray, what: str, at: int, width: int, field: str,
                      add: Callable[[Problem], None]) -> bool:
    """A lookup table's keys ascend (equal keys allowed): FORMAT_NOTES 6.1. Windowed;
    returns whether they do."""
    first, count = -1, 0
    for lo in range(0, max(len(keys) - 1, 0), _WINDOW):
        part = keys[lo : lo + _WINDOW + 1]
        bad = np.flatnonzero(part[1:] < part[:-1])
        if len(bad) and first < 0:
            first = lo + 1 + int(bad[0])
        count += len(bad)
    if count:
        i = first
        add(Problem("lookup_table", f"{what} is not sorted by key: entry {i} (key "
                    f"{int(keys[i])}) is below entry {i - 1} (key {int(keys[i - 1])}); "
                    f"{count} entries are out of order", at + width * i,
                    f"{field}/entries/{i}"))
    return not count


def _verify_order(shard: MdbShard, lay: _Layout, f: MdbFooter | None,
                  add: Callable[[Problem], None]) -> None:
    """The record order writers guarantee, and only that (FORMAT_NOTES 1, 6.1, 9, 10).

    xet-core's full writer (the only writer of lookup tables) emits the file and the xorb
    section sorted by hash (words 0..3 numerically, i.e. display hex); duplicates of a
    file may follow each other. The notes promise no order for shards without lookup tables
    (upload bodies, server-stored shards, global-dedup responses, huggingface.js uploads),
    nor for the chunks of a xorb (xorb order) or the terms of a file (file order), so those
    are not checked. The tables' own order is checked in ``_verify_tables``. Windowed.
    """
    if f is None or not (f.file_lookup_num_entry or f.xorb_lookup_num_entry
                         or f.chunk_lookup_num_entry):
        return
    words = _u64(shard._mem)
    pos: np.ndarray | int
    for name, positions, base in (("file", lay.file_pos, HEADER_SIZE),
                                  ("xorb", lay.xorb_pos, lay.xorb_info_offset)):
        first, count = -1, 0
        for lo in range(0, max(len(positions) - 1, 0), _WINDOW):
            pos = positions[lo : lo + _WINDOW + 1] // 8
            # big-endian words compare bytewise in the hash order of FORMAT_NOTES section 1
            keys = np.stack([words[pos + k] for k in range(4)], axis=1).astype(">u8") \
                .view("S32").ravel()
            bad = np.flatnonzero(keys[1:] < keys[:-1])
            if len(bad) and first < 0:
                first = lo + 1 + int(bad[0])
            count += len(bad)
            shard._drop_pages()
        if not count:
            continue
        i = first
        pos = int(positions[i])
        hashes = lay.hash_array(positions[i - 1 : i + 1])
        add(Problem("order", f"the {name} section is not sorted by hash, although the "
                    "shard has lookup tables (xet-core's full writer sorts it): block "
                    f"{i} ({_new_hash(hashes[1].tobytes())}) comes after block {i - 1} "
                    f"({_new_hash(hashes[0].tobytes())}); {count} blocks are out of "
                    "order", pos,
                    f"/{name}_info/blocks/{(pos - base) // RECORD_SIZE}/{name}_hash"))


def _verify_padding(shard: MdbShard, fi: FileInfo, where: str,
                    add: Callable[[Problem], None]) -> None:
    """The unused last 16 bytes of verification and metadata records are zero (xet-core)."""
    n = len(fi.terms)
    nv = len(fi.verification_hashes)
    mem = shard._mem
    for k in range(nv + (fi.sha256 is not None)):
        p = fi.offset + RECORD_SIZE * (1 + n + k) + 32
        if bytes(mem[p : p + 16]) != _ZERO16:
            what = (f"verification_entries/{k}" if k < nv else "metadata_ext")
            add(Problem("reserved", f"file {fi.hash}: the unused bytes of its {what} record "
                        "are not zero", p, f"{where}/{what}"))


def _verify_bookends(shard: MdbShard, lay: _Layout, add: Callable[[Problem], None]) -> None:
    """A bookend is 32 bytes 0xff then 16 zero bytes (the walk only needs the first 32)."""
    mem = shard._mem
    for name, end in (("file_info", lay.xorb_info_offset), ("xorb_info", lay.xorb_info_end)):
        p = end - 16
        if bytes(mem[p:end]) != _ZERO16:
            add(Problem("reserved", f"the {name} bookend's last 16 bytes are not zero", p,
                        f"/{name}/bookend"))


def _verify_xorb(shard: MdbShard, x: XorbInfo, keyed: bool,
                 add: Callable[[Problem], None]) -> None:
    where = f"/xorb_info/blocks/{x.record_index}"
    if x.flags:
        add(Problem("xorb", f"xorb {x.hash}: unknown xorb_flags {x.flags:#x}", x.offset + 32,
                    f"{where}/flags"))
    recs = x.chunk_records
    bad = np.flatnonzero((recs["flags"] & ~np.uint32(CHUNK_FLAG_GLOBAL_DEDUP)) != 0)
    if len(bad):
        i = int(bad[0])
        add(Problem("xorb", f"xorb {x.hash}: chunk {i} has unknown flag bits "
                    f"{int(recs['flags'][i]):#x} ({len(bad)} chunk(s) in all)",
                    x.offset + RECORD_SIZE * (1 + i) + 40, f"{where}/chunks/{i}/flags"))
    bad = np.flatnonzero(recs["reserved"] != 0)
    if len(bad):
        i = int(bad[0])
        add(Problem("reserved", f"xorb {x.hash}: chunk {i}'s unused word is "
                    f"{int(recs['reserved'][i]):#x}, not 0 ({len(bad)} chunk(s) in all)",
                    x.offset + RECORD_SIZE * (1 + i) + 44, f"{where}/chunks/{i}/reserved"))
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


def _verify_files(shard: MdbShard, files: Sequence[FileInfo], known: _Known,
                  keyed: bool, add: Callable[[Problem], None],
                  progress: Callable[[int, int], None] | None, done: int,
                  total: int, unchecked: _Unchecked) -> None:
    lay = shard._layout
    with_v = _word_sum(shard, lay, lay.file_pos, 0, FILE_FLAG_VERIFICATION)
    if 0 < with_v < len(files):
        add(Problem("file", f"{with_v} of {len(files)} files have verification entries "
                    "(a shard has them for every file or for none)", HEADER_SIZE,
                    "/file_info"))
    for fi in _walk(files, shard, _FILES_EVERY):
        done += 1
        if progress is not None and done % 1024 == 0:
            progress(done, total)
        _verify_file(shard, fi, known, keyed, add, unchecked)


def _verify_file(shard: MdbShard, fi: FileInfo, known: _Known, keyed: bool,
                 add: Callable[[Problem], None], unchecked: _Unchecked) -> None:
    where = f"/file_info/blocks/{fi.record_index}"
    if fi.flags & ~(FILE_FLAG_VERIFICATION | FILE_FLAG_METADATA_EXT):
        add(Problem("file", f"file {fi.hash}: unknown flag bits {fi.flags:#x}",
                    fi.offset + 32, f"{where}/flags"))
    if fi.reserved:
        add(Problem("reserved", f"file {fi.hash}: reserved header word is {fi.reserved:#x}, "
                    "not 0", fi.offset + 40, f"{where}/reserved"))
    _verify_padding(shard, fi, where, add)
    missing = 0
    chunks_all: list[tuple[bytes, int]] | None = []
    for i, t in enumerate(fi.terms):
        sel = _verify_term(fi, i, t, known, add, where)
        if sel is None or sel is _MISSING or keyed:
            if sel is _MISSING:
                missing += 1
                unchecked.xorbs.add(bytes(t.xorb_hash))
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
    if missing:
        unchecked.files += 1
        unchecked.terms += missing
        if unchecked.first_file is None:
            unchecked.first_file = fi.offset
    elif keyed and fi.terms:
        unchecked.keyed_files += 1
    if chunks_all is not None:
        computed = xh.file_hash(chunks_all)
        if computed != bytes(fi.hash):
            add(Problem("file_hash", f"file {fi.hash}: its chunks hash to "
                        f"{xh.display_hex(computed)}", fi.offset, f"{where}/file_hash"))


#: What :func:`_verify_term` returns for a term whose xorb is not in the shard.
_MISSING: list[Any] = []


def _verify_term(fi: FileInfo, i: int, t: Any, known: _Known, add: Callable[[Problem], None],
                 where: str) -> Sequence[Any] | None:
    """File ``fi``'s term ``i``: its flags, its chunk range within its xorb and its unpacked
    size; returns the term's chunks, :data:`_MISSING` when its xorb is not in the shard, or
    None when the range cannot be used."""
    tpos = fi.offset + RECORD_SIZE * (1 + i)
    if t.flags:
        add(Problem("term", f"file {fi.hash} term {i}: unknown cas_flags {t.flags:#x}",
                    tpos + 32, f"{where}/terms/{i}/flags"))
    if t.chunk_start >= t.chunk_end:
        add(Problem("term", f"file {fi.hash} term {i}: empty or reversed chunk range "
                    f"[{t.chunk_start}, {t.chunk_end})", tpos + 40, f"{where}/terms/{i}"))
        return None
    x = known.get(bytes(t.xorb_hash))
    if x is None:
        return _MISSING
    if t.chunk_end > len(x.chunks):
        add(Problem("term", f"file {fi.hash} term {i}: chunks [{t.chunk_start}, "
                    f"{t.chunk_end}) outside xorb {x.hash} ({len(x.chunks)} chunks)",
                    tpos + 44, f"{where}/terms/{i}/chunk_index_end"))
        return None
    sel = x.chunks[t.chunk_start : t.chunk_end]
    size = sum(c.size for c in sel)
    if size != t.unpacked_bytes:
        add(Problem("term", f"file {fi.hash} term {i}: {t.unpacked_bytes} bytes, its "
                    f"chunks sum to {size}", tpos + 36, f"{where}/terms/{i}/len_unpacked"))
    return sel


def _verify_name(shard: MdbShard, add: Callable[[Problem], None],
                 note: Callable[[Problem], None]) -> None:
    name = os.path.basename(shard.source.name.rstrip("/")) or shard.source.name
    m = _NAME.match(name)
    if m is None:
        note(Problem("name", f"name check skipped: the file name {name!r} is not "
                     "<64 hex digits>.mdb, so there is no content hash to compare", None, "/"))
        return
    computed = xh.display_hex(xh.shard_hash(shard._mem))
    if computed != m.group(1).lower():
        add(Problem("name", f"the file is named {m.group(0)} but its content hash is "
                    f"{computed}", 0, "/"))
