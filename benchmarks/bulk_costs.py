#!/usr/bin/env python3
"""What one shard's ``verify`` costs per byte, at 1 and at 2 busy workers (issue 34's analysis).

For each shard given, the harness starts fresh worker processes that each run
``shardkit.bulk.run_one(shard)`` (the bulk task: open, verify, result dict) ``--runs`` times on
a warm page cache and report, per run, from ``getrusage(RUSAGE_SELF)`` and ``/proc/self/io``:

* CPU time (user and system) per MB of the file, and wall time per MB;
* minor page faults per MB: every fresh page a run writes (a new ``bytes`` for a block read,
  a decompressed body, numpy temporaries) and every mapped file page it touches costs one;
  a ``readinto`` a reused buffer costs none;
* ``rchar`` (bytes the run copied out of the kernel with ``read``/``pread``) per byte of the
  file: 1.0 means each byte was read once.

With ``--workers 1,2`` the same run happens with one worker alone and with two running at once
(each on its own copy of the list, started together): on an idle 2-core machine, CPU per MB
that grows from 1 to 2 workers is what the workers share (caches, memory bandwidth, kernel
locks), and wall per MB that grows more than CPU per MB is waiting for a core.

It also times what the parent does per shard in ``bulk.run``: turn a result into a JSON line,
write and flush it to a report, and update the progress bar (``tqdm``, drawn to a file).

Run: ``nice .venv/bin/python benchmarks/bulk_costs.py SHARD [SHARD ...] [--runs 5]
[--workers 1,2] [--json]``. The machine's load is printed: other processes inflate wall
times and, through shared caches, CPU times too.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

_CHILD = r"""
import json, os, resource, sys, time
from shardkit import bulk

def io_counters():
    try:
        with open("/proc/self/io") as fh:
            return {k: int(v) for k, v in (line.split(": ") for line in fh)}
    except OSError:
        return {"rchar": 0}

path, runs, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
size = os.path.getsize(path)
bulk.run_one(path)  # imports, first open, page cache
while not os.path.exists(go):  # start together
    time.sleep(0.001)
out = []
for _ in range(runs):
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    i0 = io_counters()
    t0 = time.perf_counter()
    res = bulk.run_one(path)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    i1 = io_counters()
    assert res["status"] == "sound", res
    out.append({"wall": wall, "user": r1.ru_utime - r0.ru_utime,
                "sys": r1.ru_stime - r0.ru_stime, "minflt": r1.ru_minflt - r0.ru_minflt,
                "rchar": i1["rchar"] - i0["rchar"], "size": size})
print(json.dumps(out))
"""


def measure(path: str, workers: int, runs: int) -> list[dict[str, Any]]:
    """Every run of ``workers`` processes verifying ``path`` at the same time."""
    with tempfile.TemporaryDirectory() as tmp:
        go = os.path.join(tmp, "go")
        procs = [subprocess.Popen([sys.executable, "-c", _CHILD, path, str(runs), go],
                                  stdout=subprocess.PIPE, text=True) for _ in range(workers)]
        time.sleep(1.5)
        open(go, "w").close()
        got = []
        for p in procs:
            stdout, _ = p.communicate()
            if p.returncode:
                raise SystemExit(f"worker failed on {path}")
            got += json.loads(stdout)
    return got


def per_mb(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Medians and bests of the runs, per MB of the file."""
    mb = rows[0]["size"] / 1e6
    def med(f: Any) -> float:
        return statistics.median(f(r) for r in rows)
    return {"wall_ms_per_mb": med(lambda r: r["wall"]) / mb * 1e3,
            "best_wall_ms_per_mb": min(r["wall"] for r in rows) / mb * 1e3,
            "cpu_ms_per_mb": med(lambda r: r["user"] + r["sys"]) / mb * 1e3,
            "sys_ms_per_mb": med(lambda r: r["sys"]) / mb * 1e3,
            "faults_per_mb": med(lambda r: r["minflt"]) / mb,
            "read_per_byte": med(lambda r: r["rchar"]) / rows[0]["size"]}


def parent_costs(n: int = 2000) -> dict[str, float]:
    """Microseconds per shard the parent spends on a result: JSON line + write + flush to a
    report file, and a tqdm update (drawn to an in-memory stream)."""
    from tqdm import tqdm

    result = {"target": "/data/shards/0001.shard", "format": "swh", "ok": True,
              "status": "sound", "problems": [], "bytes_read": 60831974, "seconds": 0.2104,
              "error": None}
    with tempfile.TemporaryDirectory() as tmp:
        fh = open(os.path.join(tmp, "r.jsonl"), "a", encoding="utf-8")  # noqa: SIM115
        t0 = time.perf_counter()
        for _ in range(n):
            fh.write(json.dumps(result) + "\n")
            fh.flush()
        report = (time.perf_counter() - t0) / n * 1e6
        fh.close()
    bar = tqdm(total=n, file=io.StringIO(), mininterval=0.25, smoothing=0.1)
    t0 = time.perf_counter()
    for i in range(n):
        bar.set_postfix(sound=i, unsound=0, unreadable=0, refresh=False)
        bar.update(1)
    progress = (time.perf_counter() - t0) / n * 1e6
    bar.close()
    return {"report_us": report, "progress_us": progress}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shards", nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    counts = [int(x) for x in args.workers.split(",")]
    load = os.getloadavg()[0]
    table = []
    for path in args.shards:
        for n in counts:
            table.append({"shard": path, "workers": n, **per_mb(measure(path, n, args.runs))})
    parent = parent_costs()
    if args.json:
        print(json.dumps({"load_before": load, "load_after": os.getloadavg()[0],
                          "rows": table, "parent": parent}, indent=2))
        return 0
    print(f"{os.cpu_count()} cores; 1-minute load {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after")
    print(f"{'shard':<28}{'workers':>8}{'wall ms/MB':>12}{'best':>8}{'CPU ms/MB':>11}"
          f"{'sys':>7}{'faults/MB':>11}{'read/B':>8}")
    for r in table:
        print(f"{os.path.basename(r['shard']):<28}{r['workers']:>8}{r['wall_ms_per_mb']:>12.2f}"
              f"{r['best_wall_ms_per_mb']:>8.2f}{r['cpu_ms_per_mb']:>11.2f}"
              f"{r['sys_ms_per_mb']:>7.2f}{r['faults_per_mb']:>11.1f}{r['read_per_byte']:>8.2f}")
    print(f"parent per shard: report line {parent['report_us']:.1f} us, "
          f"progress bar {parent['progress_us']:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
