"""Checks of one shard file (:meth:`NgShard.verify`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ...errors import Problem, ShardkitError
from .spec import ENTRY_SIZE

if TYPE_CHECKING:
    from .shard import NgShard


def verify_shard(reader: NgShard, progress: Callable[[int, int], None] | None = None,
                 check_data: bool = True) -> list[Problem]:
    """Every check; returns the problems found (``[]`` when sound).

    Checks: the shard index fits; every entry is ordered, inside the file and does not
    overlap another minishard index; every minishard index decodes (gzip included); every
    chunk id hashes to this shard (when its number is known) and to the minishard whose
    index lists it; no id appears twice; every data range lies inside the file and off the
    indices; with ``check_data``, every gzip chunk decompresses.
    """
    problems: list[Problem] = []
    size = reader.source.size
    spec = reader.spec
    if reader.index_size > size:
        return [Problem("shard_index_bounds", f"the shard index needs {reader.index_size} "
                        f"bytes, the file has {size}", 0, "/shard_index")]
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
    for done, (lo, hi, m) in enumerate(sorted(index_ranges, key=lambda r: r[2]), 1):
        try:
            index = reader._decode_minishard(m, lo - reader.index_size, hi - reader.index_size)
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
        for a, b, cid in data_ranges:
            try:
                reader._read_data(cid, a, b)
            except ShardkitError as exc:
                problems.append(Problem("gzip", str(exc.message), a, f"/chunks/{cid}"))
    return problems
