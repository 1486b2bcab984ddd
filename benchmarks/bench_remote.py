#!/usr/bin/env python3
"""What reading a shard over HTTP costs: requests, bytes and wall time, per format and operation.

One run serves a temporary folder on 127.0.0.1 with a real HTTP server that honours ``Range``
and counts every request and body byte (``tests/httpserver.py``), and measures, through each
reader's public API only (``shardkit.open``, ``summary``, ``[]``, ``verify``):

- **info**: ``shardkit.open(url)`` then ``summary()``;
- **lookup**: one ``reader[key]`` on a freshly opened reader (the open is not counted);
- **verify**: ``verify()`` on a freshly opened reader (the open is not counted).

Files: the bundled SWH ``medium`` shard; an MDB shard of 20,000 files with lookup tables (random
hashes, so its verify finds problems: the same ones as a local verify); a ZSS file (40,000
records, zlib, 64 KiB blocks) and an Amudai shard (60,000 rows, three columns) made by
shardkit's writers; a Neuroglancer dataset (2,000 chunks, murmurhash, gzip minishard indices,
four shards) made by shardkit's writer, also read over the same HTTP server by tensorstore
(``KvStore.read``) and cloud-volume (``ShardReader.get_data``) when they are installed.

Budgets, marked PASS or MISS: info <= 3 requests; a lookup <= the format's minimum (SWH 3,
Neuroglancer 3, MDB 3, ZSS the index levels + 1, Amudai 1 + 2 per column); verify reads no
byte twice, sends <= ceil(size / 64 KiB) + 3 requests per file and finds what a local verify
finds. The exit code is 0 whatever
the numbers; non-zero only on a crash or a wrong value.

Run: ``.venv/bin/python benchmarks/bench_remote.py [--json]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import shardkit  # noqa: E402
from shardkit.remote import DEFAULT_BLOCK_SIZE  # noqa: E402

SPEC = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "murmurhash3_x86_128",
        "preshift_bits": 0, "minishard_bits": 4, "shard_bits": 2,
        "minishard_index_encoding": "gzip", "data_encoding": "raw"}


def _big_mdb(n_files: int = 20_000, n_chunks: int = 16_000, per_xorb: int = 8) -> bytes:
    """A full MDB shard (footer and lookup tables) of ``n_files`` files, by shardkit's writer,
    from ``bench_mdb``'s generator."""
    from bench_mdb import make_inputs

    from shardkit.writers.xet_mdb import build_mdb

    files, xorbs = make_inputs(n_files, n_chunks, per_xorb, seed=5)
    return build_mdb(files, xorbs)


def make_files(tmp: Path) -> dict[str, dict[str, Any]]:
    """The files of the run: {format: {"path", "key", "lookup_budget"}}."""
    from shardkit.writers.amudai import field, write_amudai
    from shardkit.writers.neuroglancer import write_sharded_dataset
    from shardkit.writers.zss import write_zss

    files: dict[str, dict[str, Any]] = {}
    shutil.copy(ROOT / "tests" / "data" / "swh" / "medium.shard", tmp / "medium.shard")
    files["swh"] = {"name": "medium.shard", "budget": 3}
    (tmp / "big.mdb").write_bytes(_big_mdb())
    files["mdb"] = {"name": "big.mdb", "budget": 3}
    rng = random.Random(3)
    records = sorted(b"%08d-%s" % (i, rng.randbytes(24).hex().encode()) for i in range(40_000))
    write_zss(tmp / "big.zss", records, codec="zlib", approx_block_size=64 * 1024)
    with shardkit.open(tmp / "big.zss") as z:
        levels = z.summary()["levels"]
    files["zss"] = {"name": "big.zss", "budget": levels + 1, "key": records[23_456]}
    rows = 60_000
    write_amudai(tmp / "stress.amudai.shard",
                 [field("id", "Int64"), field("name", "String"), field("score", "Float64")],
                 [{"id": list(range(rows)), "name": [f"name-{i * 7919 % 100003}"
                                                     for i in range(rows)],
                   "score": [i * 0.5 for i in range(rows)]}])
    files["amudai"] = {"name": "stress.amudai.shard", "budget": 1 + 2 * 3, "key": 31_234}
    items = {rng.randrange(1, 1 << 40): rng.randbytes(rng.randrange(0, 2048))
             for _ in range(2_000)}
    write_sharded_dataset(tmp / "ngds", items, SPEC)
    key = sorted(items)[len(items) // 2]
    files["neuroglancer"] = {"name": "ngds/", "budget": 3, "key": key, "value": items[key],
                             "items": items}
    return files


def measure(srv: Any, fn: Any) -> dict[str, Any]:
    srv.reset()
    t0 = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    reqs = [r for r in srv.requests]
    return {"requests": len(reqs), "bytes": sum(r.body_bytes for r in reqs),
            "seconds": wall, "log": reqs, "result": out}


def read_once(log: list[Any]) -> bool:
    """No byte of any file was sent twice."""
    by_path: dict[str, list[tuple[int, int]]] = {}
    for r in log:
        if r.range and r.status == 206:
            lo = int(r.range.removeprefix("bytes=").split("-")[0])
            by_path.setdefault(r.path, []).append((lo, lo + r.body_bytes))
        elif r.body_bytes:
            by_path.setdefault(r.path, []).append((0, r.body_bytes))
    for spans in by_path.values():
        spans.sort()
        if any(a[1] > b[0] for a, b in itertools.pairwise(spans)):
            return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    from httpserver import RangeServer

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        files = make_files(tmp)
        srv = RangeServer(tmp)
        try:
            for fmt, f in files.items():
                url = srv.url(f["name"])
                if fmt == "neuroglancer":
                    sizes = {p.name: p.stat().st_size for p in (tmp / "ngds").glob("*.shard")}
                else:
                    sizes = {f["name"]: (tmp / f["name"]).stat().st_size}
                with shardkit.open(tmp / f["name"]) as local:
                    key = f.get("key")
                    if key is None:
                        key = next(iter(local.keys()))
                    expected = local[key]

                def info(url: str = url) -> Any:
                    with shardkit.open(url) as r:
                        return r.summary()

                m = measure(srv, info)
                rows.append({"format": fmt, "op": "info", **m, "budget": 3,
                             "ok": m["requests"] <= 3})
                with shardkit.open(url) as r:
                    m = measure(srv, lambda r=r, key=key: r[key])
                if m["result"] != expected:
                    print(f"{fmt}: remote lookup differs from the local one", file=sys.stderr)
                    return 1
                rows.append({"format": fmt, "op": "lookup", **m, "budget": f["budget"],
                             "ok": m["requests"] <= f["budget"]})
                with shardkit.open(url) as r:
                    m = measure(srv, r.verify)
                with shardkit.open(tmp / f["name"]) as r:  # the same findings as a local file
                    same = list(m["result"]) == list(r.verify())
                limit = sum(math.ceil(s / DEFAULT_BLOCK_SIZE) + 3 for s in sizes.values())
                once = read_once(m["log"])
                rows.append({"format": fmt, "op": "verify", **m, "budget": limit,
                             "ok": m["requests"] <= limit and once and same,
                             "read_once": once, "size": sum(sizes.values())})
            rows += references(srv, files.get("neuroglancer"))
        finally:
            srv.close()
    for r in rows:
        r.pop("log", None)
        r.pop("result", None)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'format':<13} {'operation':<22} {'requests':>9} {'budget':>7} {'bytes':>11} "
          f"{'wall ms':>9}  verdict")
    for r in rows:
        extra = ""
        if r["op"] == "verify" and "size" in r:
            extra = f" ({100 * r['bytes'] / r['size']:.0f}% of {r['size']:,} B" + \
                    (", each byte once)" if r.get("read_once") else ", some bytes twice)")
        verdict = "" if r.get("ok") is None else ("PASS" if r["ok"] else "MISS")
        print(f"{r['format']:<13} {r['op']:<22} {r['requests']:>9} {r['budget']!s:>7} "
              f"{r['bytes']:>11,} {1e3 * r['seconds']:>9.1f}  {verdict}{extra}")
    return 0


def references(srv: Any, ng: dict[str, Any] | None) -> list[dict[str, Any]]:
    """tensorstore and cloud-volume reading the Neuroglancer dataset over the same server."""
    if ng is None:
        return []
    out: list[dict[str, Any]] = []
    base = srv.url("ngds/")
    key, value = ng["key"], ng["value"]
    try:
        import tensorstore as ts

        def ts_lookup() -> bytes:
            kv = ts.KvStore.open({"driver": "neuroglancer_uint64_sharded",
                                  "base": {"driver": "http", "base_url": base},
                                  "metadata": SPEC}).result()
            return kv.read(key.to_bytes(8, "big")).result().value

        m = measure(srv, ts_lookup)
        out.append({"format": "neuroglancer", "op": "lookup: tensorstore", **m, "budget": "-",
                    "ok": None})
        if m["result"] != value:
            out[-1]["op"] += " (WRONG VALUE)"
    except Exception as exc:  # noqa: BLE001 - a reference that cannot run is reported, not fatal
        print(f"tensorstore over HTTP: {type(exc).__name__}: {exc}", file=sys.stderr)
    try:
        from types import SimpleNamespace

        from cloudvolume.cacheservice import CacheService
        from cloudvolume.datasource.precomputed.sharding import (
            ShardingSpecification,
            ShardReader,
        )

        def cv_lookup() -> bytes:
            path = base.rstrip("/")
            config = SimpleNamespace(secrets=None, parallel=1, cache_locking=False, green=False)
            cache = CacheService(path, enabled=False, config=config,
                                 meta=SimpleNamespace(cloudpath=path))
            reader = ShardReader(path, cache, ShardingSpecification.from_dict(SPEC))
            return reader.get_data(key)

        m = measure(srv, cv_lookup)
        out.append({"format": "neuroglancer", "op": "lookup: cloud-volume", **m, "budget": "-",
                    "ok": None})
        if m["result"] != value:
            out[-1]["op"] += " (WRONG VALUE)"
    except Exception as exc:  # noqa: BLE001 - a reference that cannot run is reported, not fatal
        print(f"cloud-volume over HTTP: {type(exc).__name__}: {exc}", file=sys.stderr)
    return out


if __name__ == "__main__":
    sys.exit(main())
