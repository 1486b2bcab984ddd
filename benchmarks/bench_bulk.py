#!/usr/bin/env python3
"""Bulk verify on many cores, measured against a control that reads the same files whole.

For each worker count (1, 2, 4, ... up to the core count, or ``--workers``), the harness times:

* **bulk local**: ``shardkit.bulk.run(targets, task="verify", jobs=N)``, from the call to its
  return (expansion, worker start-up and every shard included);
* **bulk dask**: the same run on a ``distributed.LocalCluster`` of N single-threaded worker
  processes (``bulk.connect("local")``, as ``shardkit verify --dask local`` starts it),
  timed after the cluster has started (its start-up is printed on its own);
* **control**: every file read whole with ``read(1 MiB)`` + ``zlib.crc32`` in a
  ``multiprocessing`` pool of N processes, largest file first: what the machine allows for
  touching the same bytes once, with no format work.

Each row gives the time, the speedup over the same engine at 1 worker, the efficiency
(speedup / workers) and **bulk as a share of the control**: bulk's speedup divided by the
control's at the same worker count. A share of 100% means bulk scales as well as reading the
files does; the rest is what bulk adds (the parent, the results, the format's own use of
shared caches and memory bandwidth).

The shards: any targets given on the command line (paths, globs, URLs, datasets), or, by
default, a set made here like the one of the many-core measurement: ``--zss`` ZSS files of
``--zss-records`` records, half zlib and half bz2, and ``--swh`` SWH read shards of
``--swh-objects`` objects, all written by shardkit (copies of one file per kind, so the set
costs three writes). Every shard is read once before timing, so the runs find them in the page
cache, as the control does.

Besides the table, the harness reports the parent's CPU time per shard in the local runs (what
the parent spends receiving, ordering and reporting results), and, for Dask, the bytes of the
task sent per shard and of the result sent back.

Targets (PASS/MISS, reported, never enforced):

* bulk's speedup >= 90% of the control's at every worker count, local and Dask;
* at 2 workers, local speedup >= 1.9x (on an idle 2-core machine);
* Dask after cluster start within 5% of local at every worker count.

Run: ``.venv/bin/python benchmarks/bench_bulk.py [TARGET ...] [--workers 1,2,4] [--control]
[--no-dask] [--repeats N] [--json]``. Timings need idle cores: the 1-minute load average
before and after is printed. The exit code is 0 whatever the numbers are; non-zero on a crash
or when a shard does not verify (the numbers would mean nothing).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pickle
import random
import resource
import shutil
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from shardkit import bulk
from shardkit.writers.swh import write_swh
from shardkit.writers.zss import write_zss

SHARE_TARGET = 0.90
TWO_WORKER_TARGET = 1.9
DASK_MARGIN = 0.05


# -- the default set --------------------------------------------------------------------------


def make_set(root: Path, zss: int, zss_records: int, swh: int, swh_objects: int,
             seed: int) -> list[str]:
    """ZSS (half zlib, half bz2) and SWH shards under ``root``; the targets (two globs)."""
    rng = random.Random(seed)
    targets = []
    if zss:
        (root / "zss").mkdir(parents=True)
        recs = sorted(b"%016x-%s" % (rng.getrandbits(64), b"x" * rng.randrange(40))
                      for _ in range(zss_records))
        first: dict[str, Path] = {}
        for i in range(zss):
            codec = ("zlib", "bz2")[i % 2]
            path = root / "zss" / f"{i:04d}-{codec}.zss"
            if codec not in first:
                write_zss(path, recs, codec=codec)
                first[codec] = path
            else:
                shutil.copyfile(first[codec], path)
        targets.append(f"{root / 'zss'}/*.zss")
    if swh:
        (root / "swh").mkdir(parents=True)
        items = [(rng.randbytes(32), rng.randbytes(rng.randrange(16, 1024)))
                 for _ in range(swh_objects)]
        one = root / "swh" / "0000.shard"
        write_swh(one, items)
        for i in range(1, swh):
            shutil.copyfile(one, root / "swh" / f"{i:04d}.shard")
        targets.append(f"{root / 'swh'}/*.shard")
    return targets


# -- the control ------------------------------------------------------------------------------


def _crc_file(path: str) -> int:
    """Read ``path`` whole, 1 MiB at a time, into one reused buffer; its CRC-32."""
    crc = 0
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(buf):
            crc = zlib.crc32(view[:n], crc)
    return crc


def control(paths: list[str], workers: int) -> float:
    """Seconds to CRC every file in a pool of ``workers`` processes, largest first (the pool's
    start-up included, as bulk's is)."""
    order = sorted(paths, key=lambda p: -os.path.getsize(p))
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers) as pool:
        for _ in pool.imap_unordered(_crc_file, order, chunksize=1):
            pass
    return time.perf_counter() - t0


# -- bulk runs --------------------------------------------------------------------------------


def _self_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def bulk_local(targets: list[str], workers: int) -> tuple[float, float, bulk.BulkSummary]:
    """(seconds, parent CPU seconds, summary) of one local run."""
    c0 = _self_cpu()
    t0 = time.perf_counter()
    summary = bulk.run(targets, jobs=workers, progress=False, keep_results=True)
    dt = time.perf_counter() - t0
    return dt, _self_cpu() - c0, summary


def bulk_dask(targets: list[str], client: Any) -> tuple[float, bulk.BulkSummary]:
    t0 = time.perf_counter()
    summary = bulk.run(targets, client=client, progress=False, keep_results=True)
    return time.perf_counter() - t0, summary


def _check(summary: bulk.BulkSummary) -> None:
    if summary.sound != summary.targets:
        bad = [r for r in summary.results if r["status"] != "sound"][:3]
        raise SystemExit(f"not all sound ({summary.to_dict()}): {bad}")


def _best(fn: Any, repeats: int) -> Any:
    """The run with the smallest first element among ``repeats`` runs of ``fn()``."""
    runs = [fn() for _ in range(repeats)]
    return min(runs, key=lambda r: r[0])


def payload_sizes(targets: list[str]) -> tuple[float, float]:
    """Mean pickled bytes of a task's input (its Target) and of its result, per shard."""
    expanded = bulk.expand_targets(targets)
    sent = [len(pickle.dumps(t)) for t in expanded]
    back = [len(pickle.dumps(bulk.run_one(t))) for t in expanded[:16]]
    return sum(sent) / len(sent), sum(back) / len(back)


def worker_counts(text: str | None) -> list[int]:
    """The worker counts to run: always 1 (the base of every speedup)."""
    if text:
        return sorted({1} | {int(x) for x in text.split(",") if x.strip()})
    top = os.cpu_count() or 1
    counts, n = [], 1
    while n < top:
        counts.append(n)
        n *= 2
    counts.append(top)
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", help="shards to run on (default: a set made here)")
    ap.add_argument("--workers", help="worker counts, comma-separated (default 1, 2, 4, ... "
                    "up to the core count)")
    ap.add_argument("--control", action="store_true",
                    help="also time the control (read + CRC-32 of the same files)")
    ap.add_argument("--no-dask", action="store_true", help="skip the LocalCluster rows")
    ap.add_argument("--repeats", type=int, default=1, help="best of N runs (default 1)")
    ap.add_argument("--zss", type=int, default=8, help="ZSS files of the default set")
    ap.add_argument("--zss-records", type=int, default=300_000)
    ap.add_argument("--swh", type=int, default=8, help="SWH shards of the default set")
    ap.add_argument("--swh-objects", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    args = ap.parse_args()
    counts = worker_counts(args.workers)
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="shardkit-bench-bulk-") as tmp:
        t0 = time.perf_counter()
        targets = args.targets or make_set(Path(tmp), args.zss, args.zss_records, args.swh,
                                           args.swh_objects, args.seed)
        made = time.perf_counter() - t0
        expanded = bulk.expand_targets(targets)
        paths = [t.location or t.name for t in expanded]
        local_files = all(os.path.isfile(p) for p in paths)
        total = sum(os.path.getsize(p) for p in paths) if local_files else 0
        if local_files:
            for p in paths:  # into the page cache, for both sides
                _crc_file(p)
        sent, back = payload_sizes(targets)

        rows: dict[int, dict[str, Any]] = {}
        for n in counts:
            dt, parent, summary = _best(lambda n=n: bulk_local(targets, n), args.repeats)
            _check(summary)
            rows[n] = {"local": dt, "parent_ms_per_shard": parent / summary.targets * 1e3}
            if args.control and local_files:
                rows[n]["control"] = min(control(paths, n) for _ in range(args.repeats))
        cluster_start: dict[int, float] = {}
        if not args.no_dask:
            for n in counts:
                t0 = time.perf_counter()
                # the cluster `shardkit verify --dask local` starts (its workers' malloc
                # settings included)
                client, close = bulk.connect("local", jobs=n)
                try:
                    client.wait_for_workers(n)
                    cluster_start[n] = time.perf_counter() - t0
                    dt, summary = _best(lambda c=client: bulk_dask(targets, c), args.repeats)
                    _check(summary)
                    rows[n]["dask"] = dt
                finally:
                    close()

    base = rows[1]
    for n, r in rows.items():
        for engine in ("local", "dask", "control"):
            if engine in r:
                r[f"{engine}_speedup"] = base[engine] / r[engine]
                r[f"{engine}_efficiency"] = r[f"{engine}_speedup"] / n
        for engine in ("local", "dask"):
            if engine in r and "control" in r:
                r[f"{engine}_share"] = r[f"{engine}_speedup"] / r["control_speedup"]
        if "dask" in r:
            r["dask_vs_local"] = r["dask"] / r["local"] - 1
    verdicts: dict[str, bool] = {}
    shares = [r[k] for r in rows.values() for k in ("local_share", "dask_share") if k in r]
    if shares:
        verdicts["bulk >= 90% of the control at every worker count"] = min(shares) >= SHARE_TARGET
    if 2 in rows:
        verdicts["2 workers >= 1.9x"] = rows[2]["local_speedup"] >= TWO_WORKER_TARGET
    gaps = [r["dask_vs_local"] for r in rows.values() if "dask_vs_local" in r]
    if gaps:
        verdicts["Dask within 5% of local"] = max(gaps) <= DASK_MARGIN
    results = {"cores": os.cpu_count(), "load_before": load_before,
               "load_after": os.getloadavg()[0], "shards": len(paths), "bytes": total,
               "setup_seconds": made, "task_bytes_sent": sent, "result_bytes_back": back,
               "dask_cluster_start_seconds": cluster_start, "rows": rows,
               "verdicts": verdicts}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"bulk verify: {len(paths)} shards, {total / 1e9:.2f} GB; set-up {made:.1f} s; "
          f"{os.cpu_count()} cores, 1-minute load {load_before:.1f} before, "
          f"{results['load_after']:.1f} after (scaling needs idle cores)")
    print(f"per shard: task sent {sent:.0f} B, result back {back:.0f} B (pickled)")
    head = f"{'workers':>7}{'local s':>9}{'speedup':>9}{'eff':>6}{'parent ms':>11}"
    if args.control:
        head += f"{'control s':>11}{'speedup':>9}{'share':>7}"
    if not args.no_dask:
        head += f"{'dask s':>9}{'speedup':>9}{'vs local':>10}"
        if args.control:
            head += f"{'share':>7}"
    print(head)
    for n, r in rows.items():
        line = (f"{n:>7}{r['local']:>9.2f}{r['local_speedup']:>8.2f}x"
                f"{r['local_efficiency']:>6.0%}{r['parent_ms_per_shard']:>11.2f}")
        if "control" in r:
            line += (f"{r['control']:>11.2f}{r['control_speedup']:>8.2f}x"
                     f"{r['local_share']:>7.0%}")
        if "dask" in r:
            line += f"{r['dask']:>9.2f}{r['dask_speedup']:>8.2f}x{r['dask_vs_local']:>+10.0%}"
            if "dask_share" in r:
                line += f"{r['dask_share']:>7.0%}"
        print(line)
    if cluster_start:
        print("Dask cluster start (not in the rows): "
              + ", ".join(f"{n}: {s:.1f} s" for n, s in cluster_start.items()))
    for name, ok in verdicts.items():
        print(f"{'PASS' if ok else 'MISS'}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
