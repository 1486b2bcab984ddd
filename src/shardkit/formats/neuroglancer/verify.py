"""Checks of one shard file (:meth:`NgShard.verify`)."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..._lazy import lazy_module
from ...errors import Problem, ShardkitError
from .spec import _MAX_GAP, DEFAULT_BLOCK_SIZE, ENTRY_SIZE

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

if TYPE_CHECKING:
    from .shard import NgShard

IdCheck = Callable[["np.ndarray"], "tuple[np.ndarray, str]"]
"""``ids -> (mask of the ids the dataset cannot hold, why)`` (see :func:`verify_shard`)."""

_KEEP_LIMIT = 1 << 26  # bytes a verify pass keeps to avoid asking for any byte twice


class _Blocks:
    """The bytes one verify pass has fetched from a shard, so that no byte is asked twice.

    Ranges are coalesced into requests of at most ``block`` bytes (gaps below ``max_gap``
    are read through); what is fetched with ``keep=True`` stays in memory (up to
    ``_KEEP_LIMIT`` bytes) and later ranges inside it are served from there, and a request
    never spans a kept block. A memory-mapped source is simply sliced.
    """

    def __init__(self, source: Any, block: int) -> None:
        self.source = source
        self.block = max(1, block)
        self.local = getattr(source, "view", None) is not None
        self.starts: list[int] = []
        self.kept: list[tuple[int, bytes]] = []
        self.kept_bytes = 0

    def keep(self, start: int, data: bytes) -> None:
        if not data or self.kept_bytes + len(data) > _KEEP_LIMIT:
            return
        i = bisect.bisect_left(self.starts, start)
        self.starts.insert(i, start)
        self.kept.insert(i, (start, data))
        self.kept_bytes += len(data)

    def _pieces(self, s: int, e: int) -> list[tuple[int, int, bytes | None]]:
        """``[s, e)`` cut into kept pieces (with their bytes) and pieces still to fetch."""
        out: list[tuple[int, int, bytes | None]] = []
        pos = s
        i = max(0, bisect.bisect_right(self.starts, s) - 1)
        while pos < e and i < len(self.kept):
            bs, data = self.kept[i]
            be = bs + len(data)
            i += 1
            if be <= pos:
                continue
            if bs >= e:
                break
            if bs > pos:
                out.append((pos, bs, None))
                pos = bs
            stop = min(be, e)
            out.append((pos, stop, data[pos - bs : stop - bs]))
            pos = stop
        if pos < e:
            out.append((pos, e, None))
        return out

    def _kept_between(self, a: int, b: int) -> bool:
        i = bisect.bisect_left(self.starts, a)
        return i < len(self.starts) and self.starts[i] < b

    def fetch(self, ranges: list[tuple[int, int]], *, keep: bool,
              max_gap: int | None = None) -> list[bytes]:
        if self.local:
            return [self.source.read_range(s, e) for s, e in ranges]
        gap = self.block if max_gap is None else max_gap
        pieces = [self._pieces(s, e) for s, e in ranges]
        todo = sorted({(a, b) for ps in pieces for a, b, d in ps if d is None})
        spans: list[tuple[int, int]] = []
        for s, e in todo:
            if spans:
                lo, hi = spans[-1]
                if s <= hi + gap and max(hi, e) - lo <= self.block \
                        and not self._kept_between(hi, s):
                    spans[-1] = (lo, max(hi, e))
                    continue
            spans.append((s, e))
        batched = getattr(self.source, "read_ranges", None)
        if batched is not None and len(spans) > 1:
            datas = list(batched(spans))
        else:
            datas = [self.source.read_range(s, e) for s, e in spans]
        span_starts = [s for s, _ in spans]
        out = []
        for ps in pieces:
            parts = []
            for a, b, d in ps:
                if d is None:
                    j = bisect.bisect_right(span_starts, a) - 1
                    d = datas[j][a - spans[j][0] : b - spans[j][0]]
                parts.append(d)
            out.append(parts[0] if len(parts) == 1 else b"".join(parts))
        if keep:
            for (s, _e), data in zip(spans, datas, strict=True):
                self.keep(s, data)
        return out


_BATCH_INDEX_BYTES = 1 << 22  # stored minishard index bytes read per batch
_BATCH_MINISHARDS = 256
_BATCH_CHUNKS = 1 << 16  # data ranges held for the gzip check before it runs
_MAX_MISPLACED = 1 << 16  # misplaced ids remembered for the duplicate check
_REPORT = 20  # problems of one kind reported per minishard


def _rest(problems: list[Problem], check: str, found: int, what: str, at: int,
          path: str) -> None:
    """The count of the problems of one kind past the first :data:`_REPORT`."""
    if found > _REPORT:
        problems.append(Problem(check, f"... and {found - _REPORT} more {what}", at, path))


def _batches(ranges: list[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    """Minishard index ranges cut into batches of bounded stored size."""
    out: list[list[tuple[int, int, int]]] = []
    size = 0
    for r in ranges:
        if not out or size + r[1] - r[0] > _BATCH_INDEX_BYTES \
                or len(out[-1]) >= _BATCH_MINISHARDS:
            out.append([])
            size = 0
        out[-1].append(r)
        size += r[1] - r[0]
    return out


def verify_shard(reader: NgShard, progress: Callable[[int, int], None] | None = None,
                 check_data: bool = True, block_size: int = DEFAULT_BLOCK_SIZE,
                 id_check: IdCheck | None = None,
                 visit: Callable[[int, Any], None] | None = None) -> list[Problem]:
    """Every check; returns the problems found (``[]`` when sound).

    Checks: the shard index fits; every entry is ordered, inside the file and does not
    overlap another minishard index; every minishard index decodes (gzip included); every
    chunk id hashes to this shard (when its number is known) and to the minishard whose
    index lists it; no id appears twice; every data range lies inside the file and off the
    indices; with ``check_data``, every gzip chunk decompresses; with ``id_check`` (an image
    scale's), every chunk id is one the dataset can hold.

    Memory does not grow with the number of chunks: the minishards are checked in batches
    (up to 4 MiB of stored indices, 256 minishards), each batch's data right after it, with
    numpy over each minishard's arrays (``visit(m, index)``, when given, is then handed each
    decoded minishard index, for a caller that reads the values too: the indices are decoded
    once); what is kept across batches is one entry per
    minishard and the ids found in a minishard they do not hash to (an id listed twice in
    one shard is always in a minishard it does not hash to, or twice in one index). Problems
    of one kind are reported 20 per minishard, then counted.

    A remote shard is read in one pass: the first ``block_size`` bytes (the whole of a small
    shard: one request, no ``HEAD``), then batch by batch the minishard indices and the gzip
    chunk data, in coalesced requests of up to ``block_size`` bytes; no byte is requested
    twice (up to 64 MiB of fetched index bytes are kept for that).
    """
    problems: list[Problem] = []
    source = reader.source
    blocks = _Blocks(source, block_size)
    prefix = b""
    read_prefix = getattr(source, "read_prefix", None)
    if read_prefix is not None:
        prefix = read_prefix(max(block_size, reader.index_size))
        blocks.keep(0, prefix)
    size = source.size
    base = reader.index_size
    if base > size:
        return [Problem("shard_index_bounds", f"the shard index needs {base} "
                        f"bytes, the file has {size}", 0, "/shard_index")]
    if read_prefix is not None:
        reader._set_shard_index(prefix[:base])
    index_ranges = _index_ranges(reader.shard_index(), base, size, problems)
    checker = _MinishardChecks(reader, problems, index_ranges, size, id_check)
    total = len(index_ranges)
    done = 0
    for batch in _batches(sorted(index_ranges, key=lambda r: r[2])):
        raws = blocks.fetch([(lo, hi) for lo, hi, _ in batch], keep=True)
        data_ranges: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        held = 0
        for k, (lo, hi, m) in enumerate(batch):
            raw, raws[k] = raws[k], b""  # decoded one at a time; nothing kept
            done += 1
            try:
                index = reader._decode_minishard(m, lo - base, hi - base, raw)
            except ShardkitError as exc:
                problems.append(Problem("minishard_index", str(exc.message), exc.offset,
                                        exc.field))
                continue
            a, b, cids = checker.check(m, lo, index)
            if visit is not None:
                visit(m, index)
            if check_data and reader._gzip_data:
                data_ranges.append((a, b, cids))
                held += len(a)
                if held >= _BATCH_CHUNKS:
                    _check_gzip(reader, blocks, problems, data_ranges, block_size)
                    data_ranges, held = [], 0
            if progress is not None:
                progress(done, total)
        if data_ranges:
            _check_gzip(reader, blocks, problems, data_ranges, block_size)
    return problems


def _index_ranges(entries: np.ndarray, base: int, size: int,
                  problems: list[Problem]) -> list[tuple[int, int, int]]:
    """The shard index's non-empty minishard index ranges that fit the file, as sorted
    (start, end, minishard) in file offsets; the others, and overlaps, reported."""
    index_ranges: list[tuple[int, int, int]] = []
    for m in range(len(entries)):
        s, e = entries[m].tolist()
        where = m * ENTRY_SIZE
        if s == e:
            continue
        if e < s:
            problems.append(Problem("shard_index_bounds", f"minishard {m}: index range "
                                    f"[{s}, {e}) ends before it starts", where,
                                    f"/shard_index/entries/{m}"))
            continue
        if base + e > size:
            problems.append(Problem("shard_index_bounds", f"minishard {m}: index range "
                                    f"[{base + s}, {base + e}) is "
                                    f"past the end of the file ({size} bytes)", where,
                                    f"/shard_index/entries/{m}"))
            continue
        index_ranges.append((base + s, base + e, m))
    index_ranges.sort()
    for (s1, e1, m1), (s2, _e2, m2) in itertools.pairwise(index_ranges):
        if s2 < e1:
            problems.append(Problem("overlap", f"minishard indices {m1} [{s1}, {e1}) and "
                                    f"{m2} [{s2}, ...) overlap", s2,
                                    f"/shard_index/entries/{m2}"))
    return index_ranges


class _MinishardChecks:
    """The checks of one decoded minishard index at a time, and what is kept across them:
    the indices' extents and the ids found in a minishard they do not hash to."""

    def __init__(self, reader: NgShard, problems: list[Problem],
                 index_ranges: list[tuple[int, int, int]], size: int,
                 id_check: IdCheck | None) -> None:
        self.reader, self.problems, self.size, self.id_check = reader, problems, size, id_check
        # for "data must not overlap an index": sorted starts, and the largest end among the
        # indices starting at or before each
        self.idx_starts = np.array([r[0] for r in index_ranges], np.uint64)
        self.idx_reach = np.maximum.accumulate(
            np.array([r[1] for r in index_ranges], np.uint64)) \
            if index_ranges else np.zeros(0, np.uint64)
        self.idx_owner = [r[2] for r in index_ranges]
        self.misplaced: dict[int, int] = {}  # id -> first minishard listing it, not its own
        self.misplaced_ids = np.zeros(0, np.uint64)

    def check(self, m: int, lo: int, index: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Minishard ``m``'s index (stored at ``lo``): hashes, duplicates, ids and data
        bounds; returns the data ranges inside the file (file offsets) and their ids."""
        path = f"/minishards/{m}/index"
        ids = index.ids
        if len(ids):
            self._check_hashes(m, lo, path, ids)
            if self.id_check is not None:
                mask, why = self.id_check(ids)
                flagged = np.flatnonzero(mask)
                for i in flagged[:_REPORT].tolist():
                    self.problems.append(Problem("chunk_id", f"chunk {int(ids[i])}: {why}", lo,
                                                 path))
                _rest(self.problems, "chunk_id", len(flagged), f"in minishard {m}", lo, path)
        base, size = np.uint64(self.reader.index_size), self.size
        a = index.starts + base
        b = index.ends + base
        past = b > np.uint64(size)
        over = np.flatnonzero(past)
        for i in over[:_REPORT].tolist():
            self.problems.append(Problem("data_bounds", f"chunk {int(ids[i])}: data "
                                         f"[{int(a[i])}, {int(b[i])}) is past the end of the "
                                         f"file ({size} bytes)", int(a[i]),
                                         f"/chunks/{int(ids[i])}"))
        _rest(self.problems, "data_bounds", len(over), f"chunks of minishard {m} past the end "
              "of the file", lo, path)
        inside = ~past
        a, b, cids = a[inside], b[inside], ids[inside]
        _check_index_overlap(self.problems, a, b, cids, self.idx_starts, self.idx_reach,
                             self.idx_owner)
        return a, b, cids

    def _check_hashes(self, m: int, lo: int, path: str, ids: np.ndarray) -> None:
        """Every id hashes to minishard ``m`` and to this shard; none is listed twice."""
        reader, problems, spec = self.reader, self.problems, self.reader.spec
        shard, mini = spec.locate_many(ids)
        bad = np.flatnonzero(mini != np.uint64(m))
        for i in bad[:_REPORT].tolist():
            problems.append(Problem("chunk_hash", f"chunk {int(ids[i])} hashes to "
                                    f"minishard {int(mini[i])}, is listed in {m}", lo, path))
        _rest(problems, "chunk_hash", len(bad), f"in minishard {m}", lo, path)
        if reader.shard_number is not None:
            wrong = np.flatnonzero(shard != np.uint64(reader.shard_number))
            for i in wrong[:_REPORT].tolist():
                problems.append(Problem(
                    "chunk_hash", f"chunk {int(ids[i])} hashes to shard "
                    f"{spec.shard_name(int(shard[i]))}, is stored in "
                    f"{spec.shard_name(reader.shard_number)}", lo, path))
        _check_duplicates(reader, problems, ids, mini, bad, m, lo, path, self.misplaced,
                          self.misplaced_ids)
        if len(bad) and len(self.misplaced) < _MAX_MISPLACED:
            for i in bad.tolist():
                self.misplaced.setdefault(int(ids[i]), m)
            self.misplaced_ids = np.fromiter(self.misplaced, np.uint64, len(self.misplaced))


def _check_duplicates(reader: NgShard, problems: list[Problem], ids: np.ndarray,
                      mini: np.ndarray, bad: np.ndarray, m: int, lo: int, where: str,
                      misplaced: dict[int, int], misplaced_ids: np.ndarray) -> None:
    """Ids listed twice: in this index (ids ascend, so as neighbours), in an earlier index
    they do not hash to, or (when they do not hash to ``m``) in their own minishard's index
    checked earlier."""
    found: list[tuple[int, int]] = []  # (id, the minishard listing it first)
    for i in (np.flatnonzero(ids[1:] == ids[:-1]) + 1)[:_REPORT].tolist():
        found.append((int(ids[i]), m))
    if len(misplaced_ids):
        for cid in ids[np.isin(ids, misplaced_ids)][:_REPORT].tolist():
            found.append((cid, misplaced[cid]))
    for i in bad[:_REPORT].tolist():
        home = int(mini[i])
        cid = int(ids[i])
        if home < m and cid not in misplaced:
            try:
                if cid in reader.minishard(home).lookup:
                    found.append((cid, home))
            except ShardkitError:
                pass  # the home index is reported broken on its own
    for cid, first in found:
        problems.append(Problem("duplicate_id", f"chunk id {cid} appears in minishard "
                                f"{first} and again in {m}", lo, where))


def _check_index_overlap(problems: list[Problem], a: np.ndarray, b: np.ndarray,
                         cids: np.ndarray, idx_starts: np.ndarray, idx_reach: np.ndarray,
                         idx_owner: list[int]) -> None:
    """Data ranges ``[a, b)`` (not empty) that overlap a minishard index."""
    if not len(idx_starts) or not len(a):
        return
    j = np.searchsorted(idx_starts, b, side="left").astype(np.int64) - 1
    hit = (j >= 0) & (b > a)
    hit[hit] = idx_reach[j[hit]] > a[hit]
    for i in np.flatnonzero(hit)[:_REPORT].tolist():
        k = int(j[i])
        problems.append(Problem("overlap", f"chunk {int(cids[i])} [{int(a[i])}, {int(b[i])}) "
                                f"overlaps the minishard {idx_owner[k]} index or one before "
                                "it", int(a[i]), f"/chunks/{int(cids[i])}"))


def _check_gzip(reader: NgShard, blocks: _Blocks, problems: list[Problem],
                data_ranges: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                block_size: int) -> None:
    """Every chunk of a batch (at least :data:`_BATCH_CHUNKS` chunks, or the last) decompresses
    (read in file order)."""
    a = np.concatenate([r[0] for r in data_ranges])
    b = np.concatenate([r[1] for r in data_ranges])
    cids = np.concatenate([r[2] for r in data_ranges])
    order = np.lexsort((b, a))
    a, b, cids = a[order].tolist(), b[order].tolist(), cids[order].tolist()
    lo = 0
    while lo < len(a):
        hi = lo + 1
        while hi < len(a) and b[hi] - a[lo] < 4 * block_size:
            hi += 1
        datas = blocks.fetch(list(zip(a[lo:hi], b[lo:hi], strict=True)), keep=False,
                             max_gap=_MAX_GAP)
        for k, data in enumerate(datas, lo):
            try:
                reader._decode(cids[k], a[k], data)
            except ShardkitError as exc:
                problems.append(Problem("gzip", str(exc.message), a[k], f"/chunks/{cids[k]}"))
        lo = hi
