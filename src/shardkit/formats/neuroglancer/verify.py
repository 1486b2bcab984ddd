"""Checks of one shard file (:meth:`NgShard.verify`)."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import Problem, ShardkitError
from .spec import _MAX_GAP, DEFAULT_BLOCK_SIZE, ENTRY_SIZE

if TYPE_CHECKING:
    from .shard import NgShard

IdCheck = Callable[[np.ndarray], "tuple[np.ndarray, str]"]
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


def verify_shard(reader: NgShard, progress: Callable[[int, int], None] | None = None,
                 check_data: bool = True, block_size: int = DEFAULT_BLOCK_SIZE,
                 id_check: IdCheck | None = None) -> list[Problem]:
    """Every check; returns the problems found (``[]`` when sound).

    Checks: the shard index fits; every entry is ordered, inside the file and does not
    overlap another minishard index; every minishard index decodes (gzip included); every
    chunk id hashes to this shard (when its number is known) and to the minishard whose
    index lists it; no id appears twice; every data range lies inside the file and off the
    indices; with ``check_data``, every gzip chunk decompresses; with ``id_check`` (an image
    scale's), every chunk id is one the dataset can hold.

    A remote shard is read in one pass: the first ``block_size`` bytes (the whole of a small
    shard: one request, no ``HEAD``), the minishard indices, then the gzip chunk data, each
    phase in coalesced requests of up to ``block_size`` bytes; no byte is requested twice
    (up to 64 MiB of fetched bytes are kept for that).
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
    spec = reader.spec
    if reader.index_size > size:
        return [Problem("shard_index_bounds", f"the shard index needs {reader.index_size} "
                        f"bytes, the file has {size}", 0, "/shard_index")]
    if read_prefix is not None:
        reader._set_shard_index(prefix[: reader.index_size])
    entries = reader.shard_index()
    n = len(entries)
    index_ranges: list[tuple[int, int, int]] = []
    for m in range(n):
        s, e = entries[m].tolist()
        where = m * ENTRY_SIZE
        if s == e:
            continue
        if e < s:
            problems.append(Problem("shard_index_bounds", f"minishard {m}: index range "
                                    f"[{s}, {e}) ends before it starts", where,
                                    f"/shard_index/entries/{m}"))
            continue
        if reader.index_size + e > size:
            problems.append(Problem("shard_index_bounds", f"minishard {m}: index range "
                                    f"[{reader.index_size + s}, {reader.index_size + e}) is "
                                    f"past the end of the file ({size} bytes)", where,
                                    f"/shard_index/entries/{m}"))
            continue
        index_ranges.append((reader.index_size + s, reader.index_size + e, m))
    index_ranges.sort()
    for (s1, e1, m1), (s2, _e2, m2) in itertools.pairwise(index_ranges):
        if s2 < e1:
            problems.append(Problem("overlap", f"minishard indices {m1} [{s1}, {e1}) and "
                                    f"{m2} [{s2}, ...) overlap", s2,
                                    f"/shard_index/entries/{m2}"))
    seen: dict[int, int] = {}
    data_ranges: list[tuple[int, int, int]] = []
    total = len(index_ranges)
    by_minishard = sorted(index_ranges, key=lambda r: r[2])
    raws = blocks.fetch([(lo, hi) for lo, hi, _ in by_minishard], keep=True)
    for done, ((lo, hi, m), raw) in enumerate(zip(by_minishard, raws, strict=True), 1):
        try:
            index = reader._decode_minishard(m, lo - reader.index_size, hi - reader.index_size,
                                             raw)
        except ShardkitError as exc:
            problems.append(Problem("minishard_index", str(exc.message), exc.offset,
                                    exc.field))
            continue
        ids = index.ids
        if len(ids):
            shard, mini = spec.locate_many(ids)
            bad = np.nonzero(mini != np.uint64(m))[0]
            for i in bad[:20].tolist():
                problems.append(Problem("chunk_hash", f"chunk {int(ids[i])} hashes to "
                                        f"minishard {int(mini[i])}, is listed in {m}", lo,
                                        f"/minishards/{m}/index"))
            if len(bad) > 20:
                problems.append(Problem("chunk_hash", f"... and {len(bad) - 20} more in "
                                        f"minishard {m}", lo, f"/minishards/{m}/index"))
            if reader.shard_number is not None:
                bad = np.nonzero(shard != np.uint64(reader.shard_number))[0]
                for i in bad[:20].tolist():
                    problems.append(Problem(
                        "chunk_hash", f"chunk {int(ids[i])} hashes to shard "
                        f"{spec.shard_name(int(shard[i]))}, is stored in "
                        f"{spec.shard_name(reader.shard_number)}", lo,
                        f"/minishards/{m}/index"))
        if id_check is not None and len(ids):
            mask, why = id_check(ids)
            bad = np.flatnonzero(mask)
            for i in bad[:20].tolist():
                problems.append(Problem("chunk_id", f"chunk {int(ids[i])}: {why}", lo,
                                        f"/minishards/{m}/index"))
            if len(bad) > 20:
                problems.append(Problem("chunk_id", f"... and {len(bad) - 20} more in "
                                        f"minishard {m}", lo, f"/minishards/{m}/index"))
        for cid, s, e in zip(ids.tolist(), index.starts.tolist(), index.ends.tolist(),
                             strict=True):
            if cid in seen:
                problems.append(Problem("duplicate_id", f"chunk id {cid} appears in "
                                        f"minishard {seen[cid]} and again in {m}", lo,
                                        f"/minishards/{m}/index"))
            else:
                seen[cid] = m
            a, b = reader.index_size + s, reader.index_size + e
            if b > size:
                problems.append(Problem("data_bounds", f"chunk {cid}: data [{a}, {b}) is "
                                        f"past the end of the file ({size} bytes)", a,
                                        f"/chunks/{cid}"))
                continue
            data_ranges.append((a, b, cid))
        if progress is not None:
            progress(done, total)
    # data must not overlap the minishard indices
    marks = sorted([(s, e, f"minishard {m} index") for s, e, m in index_ranges]
                   + [(s, e, f"chunk {c}") for s, e, c in data_ranges if e > s])
    reach, owner = -1, ""
    for s, e, what in marks:
        if s < reach and ("index" in what or "index" in owner):
            problems.append(Problem("overlap", f"{what} [{s}, {e}) overlaps {owner}", s))
        if e > reach:
            reach, owner = e, what
    if check_data and reader._gzip_data:
        data_ranges.sort()
        batch: list[tuple[int, int, int]] = []
        for i, rng in enumerate(data_ranges):
            batch.append(rng)
            if rng[1] - batch[0][0] < 4 * block_size and i + 1 < len(data_ranges):
                continue
            datas = blocks.fetch([(a, b) for a, b, _ in batch], keep=False, max_gap=_MAX_GAP)
            for (a, _b, cid), data in zip(batch, datas, strict=True):
                try:
                    reader._decode(cid, a, data)
                except ShardkitError as exc:
                    problems.append(Problem("gzip", str(exc.message), a, f"/chunks/{cid}"))
            batch = []
    return problems
