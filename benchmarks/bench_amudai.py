"""Amudai benchmark: open cost, int64 and string column decoding (not a test; exits 0).

Prints a table with PASS/MISS against the targets: opening a single-file shard and resolving
its schema reads < 64 KiB; decoding an int64 Plain column runs at >= 500 MB/s (numpy path).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from shardkit.formats.amudai import AmudaiShard  # noqa: E402
from shardkit.sources import CountingSource, FileSource  # noqa: E402
from shardkit.writers.amudai import field, write_amudai  # noqa: E402

INT_ROWS = 10_000_000
STR_ROWS = 1_000_000


def timed(fn, repeat: int = 3):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def peak(fn):
    tracemalloc.start()
    fn()
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def main(argv: list[str] | None = None) -> int:
    global INT_ROWS, STR_ROWS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--int-rows", type=int, default=INT_ROWS, help="int64 column rows")
    parser.add_argument("--str-rows", type=int, default=STR_ROWS, help="string column rows")
    args = parser.parse_args(argv)
    INT_ROWS, STR_ROWS = args.int_rows, args.str_rows
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        ints = Path(tmp) / "ints.amudai.shard"
        strs = Path(tmp) / "strs.amudai.shard"
        t0 = time.perf_counter()
        write_amudai(ints, [field("v", "Int64")], [{"v": np.arange(INT_ROWS).tolist()}])
        write_amudai(strs, [field("s", "String")], [{"s": [f"row-{i:07d}" for i in
                                                           range(STR_ROWS)]}])
        print(f"(writing the two shards took {time.perf_counter() - t0:.1f} s)")

        src = CountingSource(FileSource(ints))
        t_open, shard = timed(lambda: AmudaiShard(src), 1)
        t_schema, _ = timed(lambda: shard.schema, 1)
        read = src.stats.bytes_read
        rows.append(("open + schema (single file)", f"{(t_open + t_schema) * 1e3:.2f} ms, "
                     f"{read} bytes read", "< 64 KiB read", read < 64 * 1024))

        s = AmudaiShard(FileSource(ints))
        t_int, arr = timed(lambda: s.read_array("v"))
        assert arr[-1] == INT_ROWS - 1
        mbps = INT_ROWS * 8 / t_int / 1e6
        mem = peak(lambda: s.read_array("v"))
        rows.append((f"int64 {INT_ROWS:,} rows, read_array",
                     f"{INT_ROWS / t_int / 1e6:.1f} M rows/s, "
                     f"{mbps:.0f} MB/s, peak {mem / 2**20:.0f} MiB", ">= 500 MB/s",
                     mbps >= 500))

        t_list, _ = timed(lambda: s.read_column("v"), 1)
        rows.append((f"int64 {INT_ROWS:,} rows, read_column (list)",
                     f"{INT_ROWS / t_list / 1e6:.1f} M rows/s", "-", None))

        s2 = AmudaiShard(FileSource(strs))
        t_str, svals = timed(lambda: s2.read_column("s"), 2)
        assert svals[-1] == f"row-{STR_ROWS - 1:07d}"
        mem = peak(lambda: s2.read_column("s"))
        rows.append((f"string {STR_ROWS:,} rows, read_column",
                     f"{STR_ROWS / t_str / 1e6:.2f} M rows/s, "
                     f"peak {mem / 2**20:.0f} MiB", "-", None))
    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  {'result':<48}  {'target':<14}  verdict")
    for name, result, target, ok in rows:
        verdict = "-" if ok is None else ("PASS" if ok else "MISS")
        print(f"{name:<{width}}  {result:<48}  {target:<14}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
