#!/usr/bin/env python3
"""shardkit's Xet MDB reader on large shards built by shardkit's own writer.

For each size in ``--sizes`` (files; as many chunk entries, ``--chunks-per-xorb`` per xorb,
each file one term over a whole xorb with verification and sha256 records; seeded random
hashes) it builds the full form (lookup tables) and the server form (none) and measures:

* parse: opening the shard and indexing both record sections (``len(files)``,
  ``len(xorbs)``): the section walk. ``FileInfo``/``XorbInfo`` objects are built on first
  access and decode their terms and chunks on first read, so building *every* file with its
  terms, and every chunk object, are reported separately (the lazy part is not hidden);
* peak Python memory (tracemalloc) of the parse, against the shard's size;
* ``file()`` and ``find_chunk()`` per second through the lookup tables, ``file()`` followed by
  reading ``.terms`` (the decode the lazy object defers), and both without tables; the first
  lookup with tables (which builds the probe table from the lookup table) is timed apart,
  and the probe tables' memory is reported.

The lookup keys are new hash objects made in lookup order from the chosen hashes, as a
caller reading keys from a file or a message has them. Looking up with the objects the
writer was given instead (picked at random from all files) measures where those lie in the
heap: at 10,000 files 10,000 objects that stay in cache, at 1,000,000 up to 200,000 cold
objects spread over hundreds of MB. That alone made a plain dict lookup 3.5x slower per key
from 10,000 to 1,000,000 files. It is reported as its own row, not held to a target.

Times are CPU seconds of this process (``time.process_time``): the code's own cost, whatever
else the machine runs (single-threaded, so equal to wall time on an idle machine).

Targets (issue: MDB table lookups), checked at the largest size, PASS/MISS:
``file()`` and ``find_chunk()`` with tables >= 500,000/s; parse peak memory <= 1.2x the shard;
parse >= 100 MB/s; from the smallest to the largest size, the time per lookup, the parse time
per file and the parse memory per file grow <= 1.3x.

Run: ``.venv/bin/python benchmarks/bench_mdb.py [--sizes 10000,1000000] [--json]``

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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from mdb_inputs import random_inputs

from shardkit.formats.xet_mdb import FileInfo, MdbShard, XetHash, XorbInfo
from shardkit.sources import FileSource
from shardkit.writers.xet_mdb import build_mdb

TARGETS = {"file_per_s_tables": 500_000.0, "find_chunk_per_s_tables": 500_000.0,
           "parse_mb_per_s": 100.0}
MAX_PEAK_RATIO = 1.2
MAX_GROWTH = 1.3


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.disable()
    try:
        t0 = time.process_time()
        out = fn()
        return time.process_time() - t0, out
    finally:
        gc.enable()


def make_inputs(n_files: int, n_chunks: int, per_xorb: int,
                seed: int) -> tuple[list[FileInfo], list[XorbInfo]]:
    """Random (not content-derived) hashes: the reader does not recompute them here. Chunks
    of 8 to 128 KiB; every file one term over a whole xorb, with verification and sha256."""
    return random_inputs(n_files, max(1, n_chunks // per_xorb), per_xorb, seed,
                         chunk_sizes=(8192, 131072))


def parse(path: Path) -> MdbShard:
    """Open and index both record sections (objects are built on access)."""
    s = MdbShard(FileSource(path))
    assert len(s.files) and len(s.xorbs)
    return s


def every_file(s: MdbShard) -> int:
    """Build every FileInfo and decode its terms (what reading them all costs)."""
    return sum(len(f.terms) for f in s.files)


def every_chunk(s: MdbShard) -> int:
    """Build every ChunkEntry object (what reading ``xorb.chunks`` of every xorb does)."""
    return sum(len(x.chunks) for x in s.xorbs)


def rate(fn: Callable[[Any], Any], items: list[Any]) -> float:
    seconds, _ = _timed(lambda: [fn(i) for i in items])
    return len(items) / seconds


def measure(n_files: int, per_xorb: int, n_lookups: int, repeats: int, seed: int,
            tmp: str) -> dict[str, Any]:
    """Every number for one size; raises on a wrong answer."""
    files, xorbs = make_inputs(n_files, n_files, per_xorb, seed)
    r: dict[str, Any] = {"files": n_files, "chunks": len(xorbs) * per_xorb, "xorbs": len(xorbs)}
    full, server = Path(tmp, f"full{n_files}.mdb"), Path(tmp, f"server{n_files}.mdb")
    r["build_s"], data = _timed(lambda: build_mdb(files, xorbs))
    full.write_bytes(data)
    server.write_bytes(build_mdb(files, xorbs, form="server"))
    del data
    size = full.stat().st_size
    r["shard_mb"] = size / 1e6
    r["parse_s"] = min(_timed(lambda: parse(full))[0] for _ in range(repeats))
    r["parse_mb_per_s"] = r["shard_mb"] / r["parse_s"]
    tracemalloc.start()
    s = parse(full)
    r["parse_peak_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    r["parse_peak_ratio"] = r["parse_peak_mb"] * 1e6 / size
    r["every_file_s"], n_terms = _timed(lambda: every_file(s))
    r["every_chunk_s"], n_chunks = _timed(lambda: every_chunk(s))
    if n_terms != n_files or n_chunks != r["chunks"]:
        raise AssertionError("parsed counts differ from what was written")
    for got, want in zip(s.xorbs[:1000], sorted(xorbs, key=lambda x: str(x.hash)),
                         strict=False):
        if got.chunks != want.chunks:
            raise AssertionError("parsed chunks differ from what was written")
    s.close()

    rnd = random.Random(seed + 1)
    want = [rnd.choice(files) for _ in range(n_lookups)]
    own_keys = [w.hash for w in want]  # the writer's objects, scattered over the heap
    keys = [XetHash(bytes(h)) for h in own_keys]  # new objects, in lookup order
    chunk_keys = [XetHash(bytes(rnd.choice(rnd.choice(xorbs).chunks).hash))
                  for _ in range(n_lookups)]
    tables = MdbShard(FileSource(full))
    # the first lookups build the probe tables from the lookup tables: timed, and their memory
    r["first_file_s_tables"], _ = _timed(lambda: tables.file(keys[0]))
    r["first_find_chunk_s_tables"], _ = _timed(lambda: tables.find_chunk(chunk_keys[0]))
    probe = MdbShard(FileSource(full))
    tracemalloc.start()
    probe.file(keys[0])
    probe.find_chunk(chunk_keys[0])
    r["probe_tables_mb"] = tracemalloc.get_traced_memory()[0] / 1e6
    tracemalloc.stop()
    probe.close()
    r["file_per_s_tables"] = max(rate(tables.file, keys) for _ in range(repeats))
    r["file_per_s_tables_own_keys"] = max(rate(tables.file, own_keys) for _ in range(repeats))
    r["file_terms_per_s_tables"] = max(rate(lambda k: tables.file(k).terms, keys)
                                       for _ in range(repeats))
    r["find_chunk_per_s_tables"] = max(rate(tables.find_chunk, chunk_keys)
                                       for _ in range(repeats))
    bare = MdbShard(FileSource(server))
    r["first_file_s_no_tables"], _ = _timed(lambda: bare.file(keys[0]))
    r["file_per_s_no_tables"] = max(rate(bare.file, keys) for _ in range(repeats))
    r["first_find_chunk_s_no_tables"], _ = _timed(lambda: bare.find_chunk(chunk_keys[0]))
    r["find_chunk_per_s_no_tables"] = max(rate(bare.find_chunk, chunk_keys)
                                          for _ in range(repeats))
    for w in want[:1000]:
        if tables.file(w.hash).terms != w.terms or bare.file(w.hash).terms != w.terms:
            raise AssertionError("a lookup returned a wrong file")
    for h in chunk_keys[:1000]:
        if tables.find_chunk(h).chunk.hash != h or bare.find_chunk(h).chunk.hash != h:
            raise AssertionError("find_chunk returned a wrong chunk")
    tables.close()
    bare.close()
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--sizes", default="10000,1000000",
                    help="comma-separated file counts (default 10000,1000000)")
    ap.add_argument("--chunks-per-xorb", type=int, default=10)
    ap.add_argument("--lookups", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sizes = sorted(int(x) for x in args.sizes.split(","))
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            try:
                results.append(measure(n, args.chunks_per_xorb, args.lookups, args.repeats,
                                       args.seed, tmp))
            except AssertionError as exc:
                print(f"bench_mdb: {exc}", file=sys.stderr)
                return 1
    big, small = results[-1], results[0]
    verdicts: dict[str, tuple[float, str]] = {}

    def check(name: str, value: float, ok: bool, target: str) -> None:
        verdicts[name] = (value, f"{'PASS' if ok else 'MISS'} ({target})")

    for key in ("file_per_s_tables", "find_chunk_per_s_tables", "parse_mb_per_s"):
        check(key, big[key], big[key] >= TARGETS[key], f">= {TARGETS[key]:,.0f}")
    check("parse_peak_ratio", big["parse_peak_ratio"],
          big["parse_peak_ratio"] <= MAX_PEAK_RATIO, f"<= {MAX_PEAK_RATIO}x the shard")
    if len(results) > 1:
        for name, per_item in (
                ("growth file() time per lookup", lambda r: 1 / r["file_per_s_tables"]),
                ("growth find_chunk() time per lookup",
                 lambda r: 1 / r["find_chunk_per_s_tables"]),
                ("growth parse time per file", lambda r: r["parse_s"] / r["files"]),
                ("growth parse memory per file", lambda r: r["parse_peak_mb"] / r["files"])):
            g = per_item(big) / per_item(small)
            check(name, g, g <= MAX_GROWTH, f"<= {MAX_GROWTH}x from {small['files']:,} to "
                                            f"{big['files']:,} files")
    if args.json:
        print(json.dumps({"sizes": results,
                          "targets": {k: {"value": v, "verdict": t}
                                      for k, (v, t) in verdicts.items()}}, indent=2))
        return 0
    print(f"Xet MDB shards with {args.chunks_per_xorb} chunks per xorb, as many chunks as files; "
          f"CPU seconds; python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
          f"load {os.getloadavg()[0]:.1f}")
    rows = [("shard size", "shard_mb", "MB"), ("build (writer)", "build_s", "s"),
            ("parse: open + index the sections", "parse_mb_per_s", "MB/s"),
            ("parse time", "parse_s", "s"), ("parse peak Python memory", "parse_peak_mb", "MB"),
            ("parse peak / shard size", "parse_peak_ratio", "x"),
            ("then every FileInfo with its terms", "every_file_s", "s"),
            ("then every chunk object (1 per chunk)", "every_chunk_s", "s"),
            ("file() with lookup tables", "file_per_s_tables", "/s"),
            ("file() with tables, the writer's key objects", "file_per_s_tables_own_keys",
             "/s"),
            ("file() + .terms with lookup tables", "file_terms_per_s_tables", "/s"),
            ("find_chunk() with chunk table", "find_chunk_per_s_tables", "/s"),
            ("first file() with tables (builds probe table)", "first_file_s_tables", "s"),
            ("first find_chunk() with table (builds its own)", "first_find_chunk_s_tables",
             "s"),
            ("probe tables' memory (file + chunk)", "probe_tables_mb", "MB"),
            ("file() without tables (after the first)", "file_per_s_no_tables", "/s"),
            ("first file() without tables (indexes)", "first_file_s_no_tables", "s"),
            ("find_chunk() without tables (after the first)", "find_chunk_per_s_no_tables",
             "/s"),
            ("first find_chunk() without tables", "first_find_chunk_s_no_tables", "s")]
    print(f"{'metric':<48}" + "".join(f"{r['files']:>14,}" for r in results) + "  unit")
    for label, key, unit in rows:
        cells = "".join(f"{r[key]:>14,.0f}" if r[key] >= 100 else f"{r[key]:>14,.3f}"
                        for r in results)
        print(f"{label:<48}{cells}  {unit}")
    print(f"\ntargets at {big['files']:,} files:")
    for name, (value, verdict) in verdicts.items():
        shown = f"{value:,.0f}" if value >= 100 else f"{value:,.3f}"
        print(f"  {name:<46} {shown:>12}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
