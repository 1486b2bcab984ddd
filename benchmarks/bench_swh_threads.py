#!/usr/bin/env python3
"""Threads sharing one SWH reader on a cold shard: 4 threads of lookups against 1.

A large shard (1 GiB by default, written once with shardkit's writer into a temporary
directory) is read with pread by the C accelerator, which lets go of the GIL around its disk
reads, so threads that share the reader wait on the disk together instead of in turn. Before
each measure the shard's pages are dropped from the page cache (``posix_fadvise DONTNEED``), so
every lookup reads the disk. The same random keys are looked up by 1 thread, then by 4 threads
sharing the reader (a quarter each); the table gives lookups per second and the ratio.

Run: ``.venv/bin/python benchmarks/bench_swh_threads.py [--size-mb N] [--lookups N] [--json]``

The exit code is 0 whatever the numbers are; it is non-zero when a value read differs from
the one written (then the numbers would mean nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

import shardkit
from shardkit.formats.swh import reader
from shardkit.writers.swh import write_swh

TARGET = 2.0  # 4 threads / 1 thread, lookups per second on a cold shard
VALUE_SIZES = (1024, 8192)  # each value's size is drawn in this range


def _make(path: Path, size_mb: int, seed: int) -> tuple[dict[bytes, tuple[int, int]], bytes]:
    """Writes a shard of about ``size_mb`` MiB whose values are slices of one random pool;
    returns key -> (start, size) in the pool, and the pool."""
    rng = random.Random(seed)
    pool = rng.randbytes(1 << 20)
    wanted: dict[bytes, tuple[int, int]] = {}
    total = 0
    while total < size_mb << 20:
        size = rng.randint(*VALUE_SIZES)
        start = rng.randrange(len(pool) - size)
        wanted[rng.randbytes(32)] = (start, size)
        total += size
    write_swh(path, ((k, pool[a : a + n]) for k, (a, n) in wanted.items()))
    return wanted, pool


def _drop_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _run(path: Path, keys: list[bytes], threads: int) -> tuple[float, list[bytes]]:
    """Lookups per second of ``threads`` threads sharing one reader, on a cold file."""
    _drop_cache(path)
    with shardkit.open(path) as s:
        s[keys[0]]  # opened (header, hash function) before the clock starts
        out: list[bytes] = [b""] * len(keys)
        parts = [range(i, len(keys), threads) for i in range(threads)]

        def work(part: range) -> None:
            for i in part:
                out[i] = s[keys[i]]

        workers = [threading.Thread(target=work, args=(p,)) for p in parts]
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return len(keys) / (time.perf_counter() - t0), out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--lookups", type=int, default=8000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if reader._native is None:
        print("the C accelerator is not built: nothing to measure", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.shard"
        t0 = time.perf_counter()
        wanted, pool = _make(path, args.size_mb, args.seed)
        build_s = time.perf_counter() - t0
        rng = random.Random(args.seed + 1)
        keys = rng.sample(list(wanted), min(args.lookups, len(wanted)))
        rates = {}
        for threads in (1, 4, 1, 4):  # twice each, alternated; the best of each kept
            rate, got = _run(path, keys, threads)
            for k, v in zip(keys, got, strict=True):
                a, n = wanted[k]
                if v != pool[a : a + n]:
                    print(f"wrong value for {k.hex()}", file=sys.stderr)
                    return 1
            rates[threads] = max(rates.get(threads, 0.0), rate)
        size = path.stat().st_size
    ratio = rates[4] / rates[1]
    result = {"file_bytes": size, "objects": len(wanted), "lookups": len(keys),
              "build_s": round(build_s, 1), "lookups_per_s_1_thread": round(rates[1]),
              "lookups_per_s_4_threads": round(rates[4]), "ratio": round(ratio, 2),
              "target": TARGET, "verdict": "PASS" if ratio >= TARGET else "MISS"}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"SWH shard of {size / 2**20:.0f} MiB, {len(wanted)} objects, {len(keys)} cold lookups "
          f"(page cache dropped before each run; written in {build_s:.1f} s)")
    print(f"  1 thread : {rates[1]:>9,.0f} lookups/s")
    print(f"  4 threads: {rates[4]:>9,.0f} lookups/s  (one reader shared)")
    print(f"  ratio {ratio:.2f} (target >= {TARGET}): {result['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
