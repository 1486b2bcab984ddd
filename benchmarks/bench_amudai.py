"""Amudai benchmark: open cost, int64 and string column decoding (not a test; exits 0).

Prints a table with PASS/MISS against the targets: opening a single-file shard and resolving
its schema reads < 64 KiB; decoding an int64 Plain column runs at >= 500 MB/s (numpy path).

With ``--rust`` (and ``AMUDAI_CMD`` naming a built ``amudai-cmd``), it measures full scans of
a shard the Rust writer made, side by side in one run: ``amudai-cmd consume`` against
shardkit's ``iter_batches`` over every column (record batches, ``arrow=True``, the like of what
consume makes, and the default lists), ``to_arrow()`` and ``verify()``, each in a fresh
process (wall time, best of ``--repeat``; peak RSS from ``getrusage(RUSAGE_CHILDREN)``). The
shard (1.1M rows by default, ``--rust-rows``) and its CSV input are written once into
``--scratch`` by ``tests/amudai_rust_corpus.py``'s ``write_big``, with amudai-cmd. The
children write and use cached bytecode, as an installed package has it. Targets:
``iter_batches`` >= 0.5x consume's throughput; ``to_arrow`` <= 1.5x ``iter_batches``' time,
peak RSS <= 1.5x the table's size (above the baseline of a process that imports pyarrow and
opens the shard); ``verify`` <= 2x ``iter_batches``.

``--rust-copies K`` measures a shard of K copies of that input instead (``amudai-cmd ingest``
given the same CSV K times: one stripe per copy, so 91 copies of 1.1M rows are 100M rows,
1.7 GB, written in about two minutes without a 5 GB input): ``consume``, ``iter_batches``
(Arrow), ``verify``, and the rows per second of each (``to_arrow`` and the list batches are
left out at that size: a 6 GB table).
"""

from __future__ import annotations

import argparse
import os
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


_STEP = r"""
import resource, sys, time
sys.path.insert(0, {src!r})
import shardkit
step, path = sys.argv[1], sys.argv[2]
import numpy  # every step alike: numpy (a dependency) is imported before the clock starts
if "arrow" in step:
    import pyarrow  # imported before the clock starts: the scan, not the import, is timed
t0 = time.perf_counter()
s = shardkit.open(path)
extra = ""
if step == "iter_batches":
    n = 0
    for batch in s.iter_batches():
        n += len(next(iter(batch.values())))
    extra = n
elif step == "iter_batches_arrow":
    n = 0
    for batch in s.iter_batches(arrow=True):
        n += batch.num_rows
    extra = n
elif step == "to_arrow":
    table = s.to_arrow()
    extra = table.nbytes
elif step == "verify":
    assert s.verify() == []
elif step == "open":
    s.schema
elif step == "open_arrow":
    s.schema
print(time.perf_counter() - t0, extra)
"""


def _child(args: list[str]) -> tuple[float, float, str]:
    """Run ``args``; (wall seconds, peak RSS MiB of the child, its stdout)."""
    import ast
    import subprocess

    wrapper = ("import resource, subprocess, sys, time\n"
               "t = time.perf_counter()\n"
               "out = subprocess.run(sys.argv[1:], capture_output=True, text=True, check=True)\n"
               "wall = time.perf_counter() - t\n"
               "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
               "print(wall, rss / 1024, repr(out.stdout))\n")
    # bytecode is cached as in an installed package (PYTHONDONTWRITEBYTECODE would make every
    # fresh process compile the reader's modules again, about 0.1 s of each step)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, "-c", wrapper, *args], capture_output=True,
                          text=True, check=True, env=env)
    wall, rss, out = done.stdout.split(" ", 2)
    return float(wall), float(rss), ast.literal_eval(out)


def rust_rows(args: argparse.Namespace) -> list[tuple[str, str, str, bool | None]]:
    """Full scans of a Rust-written shard, shardkit against ``amudai-cmd consume``."""
    import os
    import shutil

    sys.path.insert(0, str(ROOT / "tests"))
    from amudai_rust_corpus import write_big

    exe = os.environ.get("AMUDAI_CMD")
    if not exe or not shutil.which(exe):
        print("--rust needs AMUDAI_CMD naming a built amudai-cmd")
        return []
    scratch = Path(args.scratch)
    copies = args.rust_copies
    shard = scratch / ("big.amudai.shard" if copies == 1 else f"big-x{copies}.amudai.shard")
    stamp = scratch / f"rows-{args.rust_rows}x{copies}"
    if not shard.exists() or not stamp.exists():
        t0 = time.perf_counter()
        write_big(exe, scratch, args.rust_rows, copies)
        for old in scratch.glob(f"rows-*x{copies}"):
            old.unlink()
        stamp.touch()
        print(f"(amudai-cmd wrote {shard} in {time.perf_counter() - t0:.1f} s)")
    code = _STEP.format(src=str(ROOT / "src"))
    best: dict[str, tuple[float, float, str]] = {}
    steps = ("consume", "open_arrow", "iter_batches", "iter_batches_arrow", "to_arrow",
             "verify") if copies == 1 else ("consume", "iter_batches_arrow", "verify")
    for _ in range(args.repeat):  # the steps alternate, so load shifts hit each alike
        for step in steps:
            cmd = [exe, "consume", str(shard)] if step == "consume" else \
                [sys.executable, "-c", code, step, str(shard)]
            wall, rss, out = _child(cmd)
            if step != "consume":
                wall = float(out.split()[0])  # the step itself, not the interpreter start
            if step not in best or wall < best[step][0]:
                best[step] = (wall, rss, out)
    records = args.rust_rows * copies
    if copies > 1:
        return _rust_rows_at_scale(best, records, shard.stat().st_size / 2**20)
    consume, base = best["consume"], best["open_arrow"]
    lists, iters = best["iter_batches"], best["iter_batches_arrow"]
    arrow, verify = best["to_arrow"], best["verify"]
    table_mib = int(arrow[2].split()[1]) / 2**20
    size = shard.stat().st_size / 2**20
    rows = [(f"amudai-cmd consume ({args.rust_rows:,} rows, {size:.1f} MiB shard)",
             f"{consume[0]:.3f} s, {consume[1]:.0f} MiB, {records / consume[0] / 1e6:.1f} M "
             "rows/s", "-", None)]
    ratio = consume[0] / iters[0]
    rows.append(("iter_batches(arrow=True), every column",
                 f"{iters[0]:.3f} s, {iters[1]:.0f} MiB, {records / iters[0] / 1e6:.1f} M "
                 f"rows/s: {ratio:.2f}x consume's throughput", ">= 0.5x consume",
                 ratio >= 0.5))
    rows.append(("iter_batches (lists of str for text)",
                 f"{lists[0]:.3f} s, {lists[1]:.0f} MiB: {consume[0] / lists[0]:.2f}x consume",
                 "-", None))
    ratio = arrow[0] / iters[0]
    rows.append(("to_arrow()", f"{arrow[0]:.3f} s ({ratio:.2f}x iter_batches)",
                 "<= 1.5x iter_batches", ratio <= 1.5))
    grown = arrow[1] - base[1]
    rows.append(("to_arrow() peak RSS", f"{arrow[1]:.0f} MiB ({base[1]:.0f} MiB opening; "
                 f"table {table_mib:.0f} MiB: {grown / table_mib:.2f}x)", "<= 1.5x table",
                 grown <= 1.5 * table_mib))
    ratio = verify[0] / iters[0]
    rows.append(("verify()", f"{verify[0]:.3f} s, {verify[1]:.0f} MiB ({ratio:.2f}x "
                 "iter_batches)", "<= 2x iter_batches", ratio <= 2))
    return rows


def _rust_rows_at_scale(best: dict[str, tuple[float, float, str]], records: int,
                        size: float) -> list[tuple[str, str, str, bool | None]]:
    """The rows of a ``--rust-copies`` run: consume, iter_batches (Arrow) and verify."""
    consume, iters, verify = best["consume"], best["iter_batches_arrow"], best["verify"]
    if int(iters[2].split()[1]) != records:
        raise SystemExit(f"iter_batches gave {iters[2].split()[1]} rows, not {records}")
    ratio = consume[0] / iters[0]
    return [
        (f"amudai-cmd consume ({records:,} rows, {size:,.0f} MiB shard)",
         f"{consume[0]:.2f} s, {consume[1]:.0f} MiB, {records / consume[0] / 1e6:.1f} M rows/s",
         "-", None),
        ("iter_batches(arrow=True), every column",
         f"{iters[0]:.2f} s, {iters[1]:.0f} MiB, {records / iters[0] / 1e6:.1f} M rows/s: "
         f"{ratio:.2f}x consume's throughput", ">= 0.5x consume", ratio >= 0.5),
        ("verify()", f"{verify[0]:.2f} s, {verify[1]:.0f} MiB ({verify[0] / iters[0]:.2f}x "
         "iter_batches)", "<= 2x iter_batches", verify[0] <= 2 * iters[0]),
    ]


def main(argv: list[str] | None = None) -> int:
    global INT_ROWS, STR_ROWS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--int-rows", type=int, default=INT_ROWS, help="int64 column rows")
    parser.add_argument("--str-rows", type=int, default=STR_ROWS, help="string column rows")
    parser.add_argument("--rust", action="store_true",
                        help="full scans of a Rust-written shard against amudai-cmd consume")
    parser.add_argument("--rust-only", action="store_true", help="--rust, nothing else")
    parser.add_argument("--rust-rows", type=int, default=1_100_000)
    parser.add_argument("--rust-copies", type=int, default=1,
                        help="measure a shard of this many copies of the input (91: 100M rows)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scratch", default=str(Path(tempfile.gettempdir()) /
                                                 "shardkit-amudai-bench"))
    args = parser.parse_args(argv)
    INT_ROWS, STR_ROWS = args.int_rows, args.str_rows
    if args.rust_only:
        _print(rust_rows(args))
        return 0
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
    if args.rust:
        rows += rust_rows(args)
    _print(rows)
    return 0


def _print(rows: list[tuple[str, str, str, bool | None]]) -> None:
    if not rows:
        return
    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  {'result':<48}  {'target':<20}  verdict")
    for name, result, target, ok in rows:
        verdict = "-" if ok is None else ("PASS" if ok else "MISS")
        print(f"{name:<{width}}  {result:<48}  {target:<20}  {verdict}")


if __name__ == "__main__":
    sys.exit(main())
