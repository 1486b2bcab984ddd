#!/usr/bin/env python3
"""Bulk verify: local worker processes and a Dask LocalCluster, on many small and a few large
shards.

The script makes two sets in a temporary directory:

* *small*: ``--small`` shards (default 500) of all five formats, a fifth each: SWH read shards
  (copies of the bundled reference-written samples), Xet MDB shards (the bundled real shards
  rebuilt by our writer), ZSS files (our writer, 1 to 300 records, every codec), Neuroglancer
  shards (key-value datasets of 8 shards from our writer, given as dataset folders, so the
  expansion is part of the run) and single-file Amudai shards (our writer).
* *large*: ``--large`` ZSS files (default 20) of ``--records`` records (default 600,000, about
  7 MB each), half zlib and half bz2: copies of two files, so the set costs two writes.

Each row is one ``shardkit.bulk.run(..., task="verify")`` over a set, timed from the call to
its return (target expansion, worker start-up and every shard included), best of ``--repeats``:

* ``local x1`` and ``local x2``: the default engine with 1 and 2 worker processes;
* ``dask x2``: a ``distributed.LocalCluster`` of 2 single-threaded worker processes, started
  before the timing (its start-up is printed separately), through the same task function.

Derived figures: shards/s and MB/s (bytes the tasks read, through ``CountingSource``);
scaling efficiency = speedup / workers; the per-shard overhead of the Dask path vs local =
(wall time of ``dask x2`` minus that of ``local x2`` without its worker start-up) / shards, on
the small set where the verify work itself is a fraction of a millisecond; and the in-process
cost of one small shard (``run_one`` in a loop, no workers) for scale. Local worker start-up
is measured as a run over 2 shards with 2 workers.

Targets (PASS/MISS, reported, never enforced): 2 local workers >= 1.7x one worker on the
large set; Dask per-shard overhead <= 20 ms.

Run: ``.venv/bin/python benchmarks/bench_bulk.py [--small N] [--large N] [--records N]
[--repeats N] [--no-dask] [--json]``. The exit code is 0 whatever the numbers are; non-zero
only on a crash or when a report is incomplete or not all sound (then the numbers would mean
nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import shardkit
from shardkit import bulk
from shardkit.writers.amudai import field, write_amudai
from shardkit.writers.neuroglancer import write_sharded_dataset
from shardkit.writers.xet_mdb import build
from shardkit.writers.zss import write_zss

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
NG_SPEC = {"@type": "neuroglancer_uint64_sharded_v1", "preshift_bits": 0, "hash": "identity",
           "minishard_bits": 1, "shard_bits": 3, "minishard_index_encoding": "raw",
           "data_encoding": "raw"}


def make_small(root: Path, n: int, seed: int) -> tuple[list[str], int]:
    """About ``n`` small sound shards, a fifth of each format; (targets, shard count)."""
    rng = random.Random(seed)
    per = max(1, n // 5)
    targets: list[str] = []
    count = 0
    swh = root / "swh"
    swh.mkdir(parents=True)
    samples = [DATA / "swh" / f"{s}.shard" for s in ("tiny", "single")]
    for i in range(per):
        shutil.copyfile(samples[i % 2], swh / f"{i:04d}.shard")
    mdb = root / "mdb"
    mdb.mkdir()
    real = sorted((DATA / "mdb" / "real").glob("*/*.mdb"))
    built = []
    for src in real:
        with shardkit.open(src) as shard:
            built.append(build(shard))
    for i in range(per):
        (mdb / f"{i:04d}.mdb").write_bytes(built[i % len(built)])
    zss = root / "zss"
    zss.mkdir()
    codecs = ("zlib", "bz2", "none+crc32c")
    for i in range(per):
        recs = sorted(f"rec-{rng.randrange(10**6):07d}".encode()
                      for _ in range(rng.randrange(1, 300)))
        write_zss(zss / f"{i:04d}.zss", recs, codec=codecs[i % 3], approx_block_size=4096)
    am = root / "amudai"
    am.mkdir()
    schema = [field("id", "Int64"), field("name", "String")]
    for i in range(per):
        rows = rng.randrange(1, 50)
        write_amudai(am / f"{i:04d}.amudai.shard", schema,
                     [{"id": list(range(rows)), "name": [f"n{k}" for k in range(rows)]}])
    targets += [f"{swh}/*.shard", f"{mdb}/*.mdb", f"{zss}/*.zss", f"{am}/*.amudai.shard"]
    count += 4 * per
    d = 0
    while count < n:
        ds = root / "ng" / f"ds{d:03d}"
        items = {k: f"segment {k} of {d}".encode() * (1 + k % 5) for k in range(1, 120)}
        bits = min(3, (n - count).bit_length() - 1)  # 8 shards a dataset, fewer at the end
        count += len(write_sharded_dataset(ds, items, {**NG_SPEC, "shard_bits": bits})) - 1
        targets.append(str(ds))
        d += 1
    return targets, count


def make_large(root: Path, n: int, records: int, seed: int) -> list[str]:
    """``n`` large ZSS files: copies of one zlib and one bz2 file."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    recs = sorted(b"%016x-%s" % (rng.getrandbits(64), b"x" * rng.randrange(40))
                  for _ in range(records))
    first = {}
    for codec in ("zlib", "bz2"):
        first[codec] = root / f"0000-{codec}.zss"
        write_zss(first[codec], recs, codec=codec)
    for i in range(2, n):
        codec = ("zlib", "bz2")[i % 2]
        shutil.copyfile(first[codec], root / f"{i:04d}-{codec}.zss")
    return [f"{root}/*.zss"]


def _worker_cpu(client: Any) -> float:
    """CPU seconds used so far: by this process's reaped children (local workers), or by the
    Dask workers of ``client``."""
    if client is None:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime

    def cpu() -> float:
        import psutil  # a dependency of distributed

        t = psutil.Process().cpu_times()
        return t.user + t.system

    return sum(client.run(cpu).values())


def timed_run(targets: list[str], repeats: int, client: Any = None,
              **kw: Any) -> tuple[float, float, bulk.BulkSummary]:
    """Best wall time of ``repeats`` runs, the worker CPU seconds of that run, its summary."""
    best, best_cpu, summary = float("inf"), 0.0, None
    for _ in range(repeats):
        c0 = _worker_cpu(client)
        t0 = time.perf_counter()
        s = bulk.run(targets, progress=False, client=client, **kw)
        dt = time.perf_counter() - t0
        cpu = _worker_cpu(client) - c0
        if s.sound != s.targets:
            bad = [r for r in s.results if r["status"] != "sound"][:3]
            raise SystemExit(f"not all sound ({s.to_dict()}): {bad}")
        if dt < best:
            best, best_cpu, summary = dt, cpu, s
    assert summary is not None
    return best, best_cpu, summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=int, default=500, help="small shards (default 500)")
    ap.add_argument("--large", type=int, default=20, help="large ZSS files (default 20)")
    ap.add_argument("--records", type=int, default=600_000,
                    help="records per large file (default 600,000)")
    ap.add_argument("--repeats", type=int, default=2, help="best of N runs (default 2)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-dask", action="store_true", help="skip the LocalCluster rows")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    args = ap.parse_args()

    rows: dict[str, dict[str, Any]] = {}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="shardkit-bench-bulk-") as tmp:
        t0 = time.perf_counter()
        small, n_small = make_small(Path(tmp) / "small", args.small, args.seed)
        large = make_large(Path(tmp) / "large", args.large, args.records, args.seed)
        made = time.perf_counter() - t0
        expanded = bulk.expand_targets(small)
        assert len(expanded) == n_small, (len(expanded), n_small)
        for t in expanded:  # warm: page cache and this process's imports
            bulk.run_one(t)
        t0 = time.perf_counter()
        for t in expanded:
            bulk.run_one(t)
        inproc = (time.perf_counter() - t0) / n_small
        two = [str(t.name) for t in expanded[:2]]
        startup, _, _ = timed_run(two, args.repeats, jobs=2)

        for name, targets in (("small", small), ("large", large)):
            for jobs in (1, 2):
                dt, cpu, s = timed_run(targets, args.repeats, jobs=jobs)
                rows[f"{name} local x{jobs}"] = {"seconds": dt, "shards": s.targets,
                                                 "bytes": s.bytes_read, "worker_cpu": cpu}
        cluster_start = None
        if not args.no_dask:
            from distributed import Client, LocalCluster

            t0 = time.perf_counter()
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                client.submit(bulk.run_one, bulk.Target(two[0])).result()  # workers warm
                cluster_start = time.perf_counter() - t0
                for name, targets in (("small", small), ("large", large)):
                    dt, cpu, s = timed_run(targets, args.repeats, client=client)
                    rows[f"{name} dask x2"] = {"seconds": dt, "shards": s.targets,
                                               "bytes": s.bytes_read, "worker_cpu": cpu}

    for r in rows.values():
        r["shards_per_s"] = r["shards"] / r["seconds"]
        r["mb_per_s"] = r["bytes"] / r["seconds"] / 1e6
        r["cores_used"] = r["worker_cpu"] / r["seconds"]
    l1, l2 = rows["large local x1"]["seconds"], rows["large local x2"]["seconds"]
    speedup = l1 / l2
    results: dict[str, Any] = {
        "cores": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()[0],
        "small_shards": n_small, "large_shards": rows["large local x1"]["shards"],
        "setup_seconds": made, "in_process_ms_per_small_shard": inproc * 1e3,
        "local_worker_startup_seconds": startup, "rows": rows,
        "large_speedup_local_x2": speedup, "large_efficiency_local_x2": speedup / 2,
        "small_speedup_local_x2": rows["small local x1"]["seconds"]
        / rows["small local x2"]["seconds"],
    }
    if cluster_start is not None:
        d_small = rows["small dask x2"]["seconds"]
        steady_local = max(rows["small local x2"]["seconds"] - startup, 0.0)
        results.update({
            "dask_cluster_startup_seconds": cluster_start,
            "dask_overhead_ms_per_shard": (d_small - steady_local) / n_small * 1e3,
            "large_speedup_dask_x2": l1 / rows["large dask x2"]["seconds"],
        })
        results["large_efficiency_dask_x2"] = results["large_speedup_dask_x2"] / 2
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"bulk verify: {n_small} small shards (5 formats), "
          f"{results['large_shards']} large ZSS files ({args.records:,} records each); "
          f"set-up {made:.1f} s")
    print(f"{os.cpu_count()} cores; 1-minute load average {load_before:.1f} before, "
          f"{results['load_after']:.1f} after (scaling needs idle cores)")
    print(f"{'run':<18}{'seconds':>9}{'shards/s':>11}{'MB/s':>9}{'worker CPU s':>14}"
          f"{'cores used':>12}")
    for name, r in rows.items():
        print(f"{name:<18}{r['seconds']:>9.2f}{r['shards_per_s']:>11.1f}{r['mb_per_s']:>9.1f}"
              f"{r['worker_cpu']:>14.2f}{r['cores_used']:>12.2f}")
    print(f"in-process verify of one small shard: {inproc * 1e3:.2f} ms; local worker "
          f"start-up (2 workers, 2 shards): {startup:.2f} s")
    ok = "PASS" if speedup >= 1.7 else "MISS"
    print(f"large set, 2 local workers vs 1: {speedup:.2f}x (efficiency {speedup / 2:.0%}); "
          f"target >= 1.7x  {ok}")
    if cluster_start is not None:
        ov = results["dask_overhead_ms_per_shard"]
        print(f"large set, Dask 2 workers vs 1 local worker: "
              f"{results['large_speedup_dask_x2']:.2f}x (efficiency "
              f"{results['large_efficiency_dask_x2']:.0%})")
        print(f"Dask cluster start-up: {cluster_start:.2f} s (not in the rows)")
        print(f"Dask per-shard overhead vs local (small set): {ov:.2f} ms; target <= 20 ms  "
              f"{'PASS' if ov <= 20 else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
