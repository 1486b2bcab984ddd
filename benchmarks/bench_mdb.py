#!/usr/bin/env python3
"""shardkit's Xet MDB reader on a large shard built by shardkit's own writer.

Builds (seeded, random hashes) a shard of ``--files`` files and ``--chunks`` chunk entries
(``--chunks-per-xorb`` per xorb; each file one term over a whole xorb, with verification and
sha256 records) twice: the full form with lookup tables and the server form without. Then it
measures, best of ``--repeats``:

* full parse to objects: opening the shard, walking both record sections, and building every
  ``FileInfo`` (with its ``Term`` objects, verification hashes and sha256) and every
  ``XorbInfo``. A xorb's chunks are decoded into a numpy view of its records
  (``XorbInfo.chunk_records``) but the ``ChunkEntry`` objects are built only when
  ``xorb.chunks`` is first read, so they are NOT part of this number;
* materialising every ``ChunkEntry`` (reading ``chunks`` of every xorb) after that parse, and
  the sum of both ("full parse + every chunk object"), so the lazy part is not hidden;
* ``file()`` lookups per second with and without lookup tables, ``find_chunk()`` per second
  with and without the chunk table, and the first call of each without tables (which indexes
  the sections);
* the peak Python memory (tracemalloc) of the parse, and of the parse plus every chunk object.

Prints a table, or JSON with ``--json``.

Run: ``.venv/bin/python benchmarks/bench_mdb.py [--files N] [--chunks N] [--seed S] [--json]``

Exit code 0 whatever the numbers are (targets are reported PASS/MISS, not enforced); non-zero
only on a crash or when a lookup returns a wrong answer.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shardkit.formats.xet_mdb import (
    FILE_FLAG_METADATA_EXT,
    FILE_FLAG_VERIFICATION,
    ChunkEntry,
    FileInfo,
    MdbShard,
    Term,
    XetHash,
    XorbInfo,
)
from shardkit.sources import FileSource
from shardkit.writers.xet_mdb import build_mdb

TARGETS = {"parse_mb_per_s": 100.0, "file_lookups_per_s_tables": 100_000.0}


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out
    finally:
        gc.enable()


def make_inputs(n_files: int, n_chunks: int, per_xorb: int,
                seed: int) -> tuple[list[FileInfo], list[XorbInfo]]:
    """Random (not content-derived) hashes: the reader does not recompute them here."""
    rnd = random.Random(seed)
    n_xorbs = max(1, n_chunks // per_xorb)
    xorbs = []
    for _ in range(n_xorbs):
        chunks, pos = [], 0
        for _ in range(per_xorb):
            size = rnd.randint(8192, 131072)
            chunks.append(ChunkEntry(XetHash(rnd.randbytes(32)), pos, size, 0))
            pos += size
        xorbs.append(XorbInfo(XetHash(rnd.randbytes(32)), 0, tuple(chunks), pos, 0))
    files = []
    flags = FILE_FLAG_VERIFICATION | FILE_FLAG_METADATA_EXT
    for i in range(n_files):
        x = xorbs[i % n_xorbs]
        files.append(FileInfo(XetHash(rnd.randbytes(32)), flags,
                              (Term(x.hash, 0, x.num_bytes_in_xorb, 0, len(x.chunks)),),
                              (XetHash(rnd.randbytes(32)),), XetHash(rnd.randbytes(32))))
    return files, xorbs


def full_parse(path: Path) -> MdbShard:
    """Every file (terms, verification hashes, sha256) and xorb object; chunks stay records."""
    s = MdbShard(FileSource(path))
    files, xorbs = s.files, s.xorbs
    assert len(files) and len(xorbs)
    return s


def materialise_chunks(s: MdbShard) -> int:
    """Build every ChunkEntry object (what reading ``xorb.chunks`` of every xorb does)."""
    return sum(len(x.chunks) for x in s.xorbs)


def parse_and_chunks(path: Path) -> tuple[float, float]:
    """(parse seconds, chunk materialisation seconds) of one fresh shard."""
    t_parse, s = _timed(lambda: full_parse(path))
    t_chunks, _ = _timed(lambda: materialise_chunks(s))
    s.close()
    return t_parse, t_chunks


def rate(fn: Callable[[Any], Any], items: list[Any]) -> float:
    seconds, _ = _timed(lambda: [fn(i) for i in items])
    return len(items) / seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--chunks-per-xorb", type=int, default=10)
    ap.add_argument("--lookups", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    files, xorbs = make_inputs(args.files, args.chunks, args.chunks_per_xorb, args.seed)
    rows: list[tuple[str, float, str, str]] = []
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        full, server = Path(tmp, "full.mdb"), Path(tmp, "server.mdb")
        t_build, data = _timed(lambda: build_mdb(files, xorbs))
        full.write_bytes(data)
        server.write_bytes(build_mdb(files, xorbs, form="server"))
        del data
        size_mb = full.stat().st_size / 1e6
        results["shard_mb"] = size_mb
        results["build_s"] = t_build

        runs = [parse_and_chunks(full) for _ in range(args.repeats)]
        best = min(p for p, _ in runs)
        best_chunks = min(c for _, c in runs)
        best_total = min(p + c for p, c in runs)
        results["parse_s"] = best
        results["parse_mb_per_s"] = size_mb / best
        results["materialise_chunks_s"] = best_chunks
        results["parse_and_chunks_s"] = best_total
        results["parse_and_chunks_mb_per_s"] = size_mb / best_total
        tracemalloc.start()
        s = full_parse(full)
        results["parse_peak_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
        if any(x.chunks_loaded for x in s.xorbs):
            print("bench_mdb: chunk objects were built during the parse", file=sys.stderr)
            return 1
        n_chunks = materialise_chunks(s)
        results["parse_and_chunks_peak_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        if len(s.files) != args.files or n_chunks != len(xorbs) * args.chunks_per_xorb:
            print("bench_mdb: parsed counts differ from what was written", file=sys.stderr)
            return 1
        for got, want in zip(s.xorbs[:1000], sorted(xorbs, key=lambda x: str(x.hash)),
                             strict=False):
            if got.chunks != want.chunks:
                print("bench_mdb: parsed chunks differ from what was written", file=sys.stderr)
                return 1

        rnd = random.Random(args.seed + 1)
        want = [rnd.choice(files) for _ in range(args.lookups)]
        keys = [w.hash for w in want]
        chunk_keys = [rnd.choice(rnd.choice(xorbs).chunks).hash for _ in range(args.lookups)]

        tables = MdbShard(FileSource(full))
        results["file_lookups_per_s_tables"] = max(
            rate(tables.file, keys) for _ in range(args.repeats))
        results["find_chunk_per_s_tables"] = max(
            rate(tables.find_chunk, chunk_keys) for _ in range(args.repeats))
        bare = MdbShard(FileSource(server))
        results["first_lookup_s_no_tables"], _ = _timed(lambda: bare.file(keys[0]))
        results["file_lookups_per_s_no_tables"] = max(
            rate(bare.file, keys) for _ in range(args.repeats))
        t_first_chunk, _ = _timed(lambda: bare.find_chunk(chunk_keys[0]))
        results["first_find_chunk_s_no_tables"] = t_first_chunk
        results["find_chunk_per_s_no_tables"] = max(
            rate(bare.find_chunk, chunk_keys) for _ in range(args.repeats))
        for w in want[:1000]:
            if tables.file(w.hash).terms != w.terms or bare.file(w.hash).terms != w.terms:
                print("bench_mdb: a lookup returned a wrong file", file=sys.stderr)
                return 1
        for h in chunk_keys[:1000]:
            if tables.find_chunk(h).chunk.hash != h or bare.find_chunk(h).chunk.hash != h:
                print("bench_mdb: find_chunk returned a wrong chunk", file=sys.stderr)
                return 1
        for shard in (s, tables, bare):
            shard.close()

    def add(name: str, value: float, unit: str, target: float | None = None) -> None:
        verdict = "" if target is None else ("PASS" if value >= target else "MISS")
        rows.append((name, value, unit, verdict + (f" (>= {target:,.0f})" if target else "")))

    add("shard size", results["shard_mb"], "MB")
    add("build (writer)", results["build_s"], "s")
    add("full parse to objects (chunks lazy)", results["parse_mb_per_s"], "MB/s",
        TARGETS["parse_mb_per_s"])
    add("full parse time", results["parse_s"], "s")
    add("then every chunk object (1 per chunk)", results["materialise_chunks_s"], "s")
    add("full parse + every chunk object", results["parse_and_chunks_mb_per_s"], "MB/s")
    add("full parse + every chunk object time", results["parse_and_chunks_s"], "s")
    add("full parse peak Python memory", results["parse_peak_mb"], "MB")
    add("... + every chunk object, peak", results["parse_and_chunks_peak_mb"], "MB")
    add("file() with lookup tables", results["file_lookups_per_s_tables"], "lookups/s",
        TARGETS["file_lookups_per_s_tables"])
    add("file() without tables (after the first)", results["file_lookups_per_s_no_tables"],
        "lookups/s")
    add("first file() without tables (walks and indexes)", results["first_lookup_s_no_tables"],
        "s")
    add("find_chunk() with chunk table", results["find_chunk_per_s_tables"], "lookups/s")
    add("find_chunk() without tables (after the first)", results["find_chunk_per_s_no_tables"],
        "lookups/s")
    add("first find_chunk() without tables", results["first_find_chunk_s_no_tables"], "s")
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"Xet MDB shard: {args.files:,} files, {len(xorbs) * args.chunks_per_xorb:,} chunk "
          f"entries in {len(xorbs):,} xorbs; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cpus")
    print(f"{'metric':<50} {'value':>14} {'unit':<10} target")
    for name, value, unit, verdict in rows:
        shown = f"{value:,.0f}" if value >= 100 else f"{value:,.3f}"
        print(f"{name:<50} {shown:>14} {unit:<10} {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
