#!/usr/bin/env python3
"""shardkit's ZSS reader on 1,000,000-record files made by shardkit's writer.

For each codec (zlib, bz2, none+crc32c) the script writes a file in a temporary directory
(sorted "2-gram"-like text records of about 20 bytes, default block size 262144 and branching
factor 1024, seeded), then measures: full iteration (records/s, best of ``--repeats``), prefix
search latency on 200 random prefixes (median and p90, through the default bounded block cache),
``verify()`` time, and the peak of Python allocations (tracemalloc) during a full iteration.

The reference figures were measured with the original reader (njsmith/zss, Python 2.7 + its C
extension); the reference cannot run here (Python 2), so they are constants. Targets are >= 1x.

Run: ``.venv/bin/python benchmarks/bench_zss.py [--records N] [--seed S] [--json]``. The exit
code is 0 whatever the numbers are; non-zero only on a crash or wrong results.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from bisect import bisect_left
from pathlib import Path
from typing import Any

import shardkit
from shardkit.writers.zss import write_zss

REFERENCE = {  # codec -> (iteration records/s, prefix search median seconds or None)
    "zlib": (3.7e6, 1.26e-3),
    "bz2": (1.9e6, None),
    "none+crc32c": (4.5e6, 0.29e-3),
}
_TEXT = ("the of and to in a is that for it as was with be by on not he i this are or his "
         "from at which but have an they you were her she there one all we can their has "
         "been if more when will would who so no out up into do any time about than then "
         "them its only new some could these two may first like other my over also")
WORDS = [w.encode("ascii") for w in _TEXT.split(" ")]


def make_records(n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out = set()
    while len(out) < n:
        w1, w2 = rng.choice(WORDS), rng.choice(WORDS)
        out.add(b"%s %s\t%d" % (w1 + bytes([97 + rng.randrange(26)]) * rng.randrange(3), w2,
                                rng.randrange(1_000_000)))
    return sorted(out)


def best(fn: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.disable()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        gc.enable()
    return min(times)


def bench_codec(path: Path, records: list[bytes], codec: str, repeats: int,
                prefixes: list[bytes]) -> dict[str, Any]:
    out: dict[str, Any] = {"codec": codec, "file_size": path.stat().st_size}
    with shardkit.open(path) as z:
        got = list(z)
        if got != records:
            raise SystemExit(f"{codec}: iteration differs from the records written")
        t = best(lambda: sum(1 for _ in z), repeats)
        out["iter_records_per_s"] = len(records) / t
        lat = []
        for p in prefixes:
            t0 = time.perf_counter()
            found = list(z.search(prefix=p))
            lat.append(time.perf_counter() - t0)
            lo = bisect_left(records, p)
            if found != [r for r in records[lo:lo + len(found) + 1] if r.startswith(p)]:
                raise SystemExit(f"{codec}: search({p!r}) is wrong")
        lat.sort()
        first = []
        for p in prefixes:  # seek latency: index descent + one data block, no result copying
            t0 = time.perf_counter()
            next(iter(z.search(prefix=p)), None)
            first.append(time.perf_counter() - t0)
        out["search_first_median_s"] = statistics.median(first)
        out["search_matches_median"] = statistics.median(
            sum(1 for _ in z.search(prefix=p)) for p in prefixes)
        out["search_median_s"] = statistics.median(lat)
        out["search_p90_s"] = lat[int(0.9 * len(lat))]
    with shardkit.open(path) as z:
        t0 = time.perf_counter()
        problems = z.verify()
        out["verify_s"] = time.perf_counter() - t0
        if problems:
            raise SystemExit(f"{codec}: verify found {problems[:3]}")
    with shardkit.open(path) as z:
        tracemalloc.start()
        n = sum(1 for _ in z)
        out["iter_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        assert n == len(records)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    records = make_records(args.records, args.seed)
    rng = random.Random(args.seed + 1)
    prefixes = [r[: rng.randint(1, 8)] for r in rng.sample(records, 200)]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for codec in REFERENCE:
            path = Path(tmp) / f"bench_{codec.replace('+', '_')}.zss"
            t0 = time.perf_counter()
            write_zss(path, records, codec=codec, uuid=bytes(16))
            write_s = time.perf_counter() - t0
            res = bench_codec(path, records, codec, args.repeats, prefixes)
            res["write_s"] = write_s
            results.append(res)
            path.unlink()
    if args.json:
        print(json.dumps({"records": args.records, "results": results}, indent=2))
        return 0
    print(f"ZSS, {args.records:,} records ({sum(map(len, records)) / len(records):.1f} bytes "
          f"avg), Python {sys.version.split()[0]}")
    print(f"{'metric':<34}{'shardkit':>14}{'reference':>14}{'ratio':>8}  target")
    for res in results:
        codec = res["codec"]
        ref_iter, ref_search = REFERENCE[codec]
        r = res["iter_records_per_s"] / ref_iter
        print(f"{codec + ' iteration rec/s':<34}{res['iter_records_per_s']:>14,.0f}"
              f"{ref_iter:>14,.0f}{r:>7.2f}x  {'PASS' if r >= 1 else 'MISS'}")
        med = res["search_median_s"] * 1e3
        if ref_search is not None:
            r = ref_search / res["search_median_s"]
            print(f"{codec + ' prefix search median ms':<34}{med:>14.3f}{ref_search * 1e3:>14.3f}"
                  f"{r:>7.2f}x  {'PASS' if r >= 1 else 'MISS'}")
        else:
            print(f"{codec + ' prefix search median ms':<34}{med:>14.3f}{'n/a':>14}")
        print(f"{codec + ' prefix search p90 ms':<34}{res['search_p90_s'] * 1e3:>14.3f}")
        print(f"{codec + ' first match median ms':<34}{res['search_first_median_s'] * 1e3:>14.3f}"
              f"   (median prefix matches {res['search_matches_median']:,.0f} records)")
        print(f"{codec + ' verify s':<34}{res['verify_s']:>14.2f}")
        print(f"{codec + ' iteration peak MiB (traced)':<34}{res['iter_peak_mib']:>14.1f}")
        print(f"{codec + ' file MiB / write s':<34}{res['file_size'] / 2**20:>8.1f} / "
              f"{res['write_s']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
