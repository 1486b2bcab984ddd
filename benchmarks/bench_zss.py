#!/usr/bin/env python3
"""shardkit's ZSS reader on 1,000,000-record files made by shardkit's writer.

For each codec (zlib, bz2, none+crc32c) the script writes a file in a temporary directory
(sorted "2-gram"-like text records of about 15 bytes, default block size 262144 and branching
factor 1024, seeded: about 63 data blocks of 16,400 records under one root index block) and
measures:

* full iteration: records/s, best of ``--repeats``;
* prefix search latency, median and p90 over 200 prefixes. Each prefix is the shortest prefix
  of a randomly chosen record that matches at most 10 records (so 1 to 10 matches; the median
  count is printed), and one timing is ``list(z.search(prefix=p))``: the index descent, the
  data block read, checked and decoded, and every match copied out. Per prefix the best of
  ``--repeats`` runs is kept. Three cache states:

  - *reference setup*: one ``ZssFile(..., cache_blocks=0)`` for all searches. Index blocks
    stay cached (after one untimed search), the data block of every search is read, checked
    and decoded afresh. The reference reader (njsmith/zss) never caches data blocks: every
    search decompresses its data block and unpacks all of its records; its later versions
    keep an LRU cache of index blocks (``index_block_cache=32``), earlier ones read the index
    path again on every search. Its figures are compared with this row.
  - *cold file*: a fresh ``ZssFile(FileSource(path))`` per search; the open (mapping the file,
    header and its CRC) and the index path are timed too (the case of an uncached index).
  - *warm*: one ``shardkit.open(path)`` after two untimed passes over the prefixes, so every
    block used is cached with its record positions (the default 64-block cache holds all the
    data blocks of a 1,000,000-record file).

  The file is in the OS page cache in all three (it was just written).
* all matches of short prefixes (extra row, not comparable with the reference figure): 200
  prefixes of 1 to 8 bytes of random records, which match a median of a few thousand records
  (p90 about 100,000), all copied out, through one ``shardkit.open(path)``;
* ``verify()`` time, and the peak of Python allocations (tracemalloc) during a full iteration.

The reference figures were measured with the original reader (njsmith/zss, Python 2.7 + its C
extension); the reference cannot run here (Python 2), so they are constants. Targets are >= 1x.
How its prefix-search figure was taken is not recorded with it (no benchmark script or method
was found in njsmith/zss); the reference-setup row reproduces its reader's caching.

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
from shardkit.formats.zss import BODY_CRC32C_IMPL, ZssFile, prefix_successor
from shardkit.sources import FileSource
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


def few_match_prefixes(records: list[bytes], rng: random.Random, n: int,
                       most: int = 10) -> list[bytes]:
    """For ``n`` random records, the shortest prefix matching at most ``most`` records."""
    out = []
    for r in rng.sample(records, n):
        for k in range(1, len(r) + 1):
            p = r[:k]
            lo = bisect_left(records, p)
            succ = prefix_successor(p)
            hi = len(records) if succ is None else bisect_left(records, succ, lo)
            if hi - lo <= most:
                out.append(p)
                break
    return out


def expected_matches(records: list[bytes], p: bytes) -> list[bytes]:
    lo = bisect_left(records, p)
    succ = prefix_successor(p)
    return records[lo:len(records) if succ is None else bisect_left(records, succ, lo)]


def latencies(search: Any, prefixes: list[bytes], repeats: int,
              expected: list[list[bytes]], what: str) -> list[float]:
    """Per prefix, the best of ``repeats`` timings of ``search(p)`` (which returns a list)."""
    out = []
    for p, want in zip(prefixes, expected, strict=True):
        best_t = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            found = search(p)
            best_t = min(best_t, time.perf_counter() - t0)
            if found != want:
                raise SystemExit(f"{what}: search({p!r}) is wrong")
        out.append(best_t)
    return sorted(out)


def stats(lat: list[float]) -> tuple[float, float]:
    return statistics.median(lat), lat[int(0.9 * len(lat))]


def bench_codec(path: Path, records: list[bytes], codec: str, repeats: int,
                few: list[bytes], short: list[bytes]) -> dict[str, Any]:
    out: dict[str, Any] = {"codec": codec, "file_size": path.stat().st_size}
    few_want = [expected_matches(records, p) for p in few]
    short_want = [expected_matches(records, p) for p in short]
    out["few_matches_median"] = statistics.median(map(len, few_want))
    out["short_matches_median"] = statistics.median(map(len, short_want))
    out["short_matches_p90"] = sorted(map(len, short_want))[int(0.9 * len(short_want))]
    with shardkit.open(path) as z:
        got = list(z)
        if got != records:
            raise SystemExit(f"{codec}: iteration differs from the records written")
        t = best(lambda: sum(1 for _ in z), repeats)
        out["iter_records_per_s"] = len(records) / t
    # reference setup: index blocks cached, the data block decoded on every search
    with ZssFile(FileSource(path), cache_blocks=0) as z:
        list(z.search(prefix=few[0]))  # loads the index path
        out["search_ref_s"] = stats(latencies(lambda p: list(z.search(prefix=p)), few, repeats,
                                              few_want, codec))

    def cold(p: bytes) -> list[bytes]:
        with ZssFile(FileSource(path)) as z:
            return list(z.search(prefix=p))

    out["search_cold_s"] = stats(latencies(cold, few, repeats, few_want, codec))
    with shardkit.open(path) as z:
        for _ in range(2):  # the second use of a cached block records its record positions
            for p in few:
                list(z.search(prefix=p))
        out["search_warm_s"] = stats(latencies(lambda p: list(z.search(prefix=p)), few,
                                               repeats, few_want, codec))
    with shardkit.open(path) as z:
        out["search_short_s"] = stats(latencies(lambda p: list(z.search(prefix=p)), short, 1,
                                                short_want, codec))
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
    short = [r[: rng.randint(1, 8)] for r in rng.sample(records, 200)]
    few = few_match_prefixes(records, random.Random(args.seed + 2), 200)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for codec in REFERENCE:
            path = Path(tmp) / f"bench_{codec.replace('+', '_')}.zss"
            t0 = time.perf_counter()
            write_zss(path, records, codec=codec, uuid=bytes(16))
            write_s = time.perf_counter() - t0
            res = bench_codec(path, records, codec, args.repeats, few, short)
            res["write_s"] = write_s
            results.append(res)
            path.unlink()
    meta = {"records": args.records, "python": sys.version.split()[0],
            "none_crc32c_checked_with": BODY_CRC32C_IMPL, "repeats": args.repeats}
    if args.json:
        print(json.dumps({**meta, "results": results}, indent=2))
        return 0
    print(f"ZSS, {args.records:,} records ({sum(map(len, records)) / len(records):.1f} bytes "
          f"avg), Python {meta['python']}, none+crc32c bodies checked with {BODY_CRC32C_IMPL}")
    print("search = list(z.search(prefix=p)) over 200 prefixes of random records, each the "
          "shortest matching <= 10 records;\n  ref setup: index cached, data block read and "
          "decoded per search (the reference reader never caches data blocks);\n  cold file: a "
          "new ZssFile per search; "
          f"warm: every block cached and indexed. Per prefix best of {args.repeats} runs; the "
          "file is in the OS page cache.")
    print(f"{'metric':<40}{'shardkit':>12}{'reference':>12}{'ratio':>8}  target")
    for res in results:
        codec = res["codec"]
        ref_iter, ref_search = REFERENCE[codec]
        r = res["iter_records_per_s"] / ref_iter
        print(f"{codec + ' iteration rec/s':<40}{res['iter_records_per_s']:>12,.0f}"
              f"{ref_iter:>12,.0f}{r:>7.2f}x  {'PASS' if r >= 1 else 'MISS'}")
        med, p90 = res["search_ref_s"]
        if ref_search is not None:
            r = ref_search / med
            print(f"{codec + ' search, ref setup: median ms':<40}{med * 1e3:>12.3f}"
                  f"{ref_search * 1e3:>12.3f}{r:>7.2f}x  {'PASS' if r >= 1 else 'MISS'}")
        else:
            print(f"{codec + ' search, ref setup: median ms':<40}{med * 1e3:>12.3f}{'n/a':>12}")
        print(f"{'  p90 ms':<40}{p90 * 1e3:>12.3f}")
        for key, label in (("search_cold_s", "cold file"), ("search_warm_s", "warm")):
            med, p90 = res[key]
            print(f"{'  ' + label + ': median / p90 ms':<40}{med * 1e3:>12.3f} / {p90 * 1e3:.3f}")
        print(f"{'  matches per prefix, median':<40}{res['few_matches_median']:>12,.0f}")
        med, p90 = res["search_short_s"]
        print(f"{'  all matches of 1-8 byte prefixes ms':<40}{med * 1e3:>12.3f} / {p90 * 1e3:.3f}"
              f"   (median / p90; {res['short_matches_median']:,.0f} / "
              f"{res['short_matches_p90']:,} matches)")
        print(f"{codec + ' verify s':<40}{res['verify_s']:>12.2f}")
        print(f"{codec + ' iteration peak MiB (traced)':<40}{res['iter_peak_mib']:>12.1f}")
        print(f"{codec + ' file MiB / write s':<40}{res['file_size'] / 2**20:>6.1f} / "
              f"{res['write_s']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
