#!/usr/bin/env python3
"""shardkit's MOSAIC reader and writer, side by side with swh-mosaic 0.6.1 (the reference).

One run, both implementations interleaved on the same machine:

- write N objects (seeded random bytes) with ``MosaicCreator`` and with ``write_mosaic``
  (sha256 index, no compression), each in a fresh process: seconds and peak RSS;
- open + first lookup (a fresh open each time, best of several);
- random lookups: ``MosaicReader.lookup`` against ``MosaicFile.get`` on the same keys;
- iterating every value (``values()`` of both, file order);
- ``verify()`` of shardkit's file (content hashes on), in a fresh process: seconds and peak RSS.

Each target prints one PASS or MISS line. The exit code is 0 whatever the numbers are
(benchmarks report, they do not gate CI); it is non-zero only when a value differs from the
reference's.

Run: ``.venv/bin/python benchmarks/bench_mosaic.py [--objects N] [--lookups N] [--big]
[--json]``; ``--big`` is the 10M-object run (64-byte objects: about 1 GB per file, minutes).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TARGETS = {  # metric -> (comparison, bound)
    "lookup_ratio": (">=", 1.0),
    "values_ratio": (">=", 1.0),
    "open_first_lookup_ms": ("<=", 5.0),
    "write_speed_ratio": (">=", 0.5),
    "write_rss_ratio": ("<=", 1.2),
}

_WRITE = r"""
import hashlib, random, resource, sys, time
n, size, seed = (int(a) for a in sys.argv[1:4])
path, which = sys.argv[4:6]
def objects():
    rnd = random.Random(seed)
    for _ in range(n):
        yield rnd.randbytes(rnd.randrange(0, 2 * size + 1))
t0 = time.perf_counter()
if which == "ref":
    from swh.mosaic import IdxDescription, MosaicCreator
    with MosaicCreator(path, [IdxDescription.SHA256FMPHGO]) as c:
        for o in objects():
            c.add([hashlib.sha256(o).digest()], o)
else:
    from shardkit.writers.mosaic import write_mosaic
    write_mosaic(path, objects())
print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


_VERIFY = r"""
import resource, sys, time
import shardkit
with shardkit.open(sys.argv[1]) as r:
    t0 = time.perf_counter()
    n = len(r.verify())
print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n)
"""


def _verify(path: Path) -> tuple[float, float, int]:
    """Seconds, peak RSS (MiB) and problems of ``verify()`` (content hashes on), in a fresh
    process."""
    out = subprocess.run([sys.executable, "-c", _VERIFY, str(path)], capture_output=True,
                         text=True, check=True)
    seconds, rss, n = out.stdout.split()
    return float(seconds), int(rss) / 1024, int(n)


def _write(which: str, n: int, size: int, seed: int, path: Path) -> tuple[float, float]:
    """Seconds and peak RSS (MiB) of one writer, in a fresh process."""
    if path.exists():
        path.unlink()
    out = subprocess.run([sys.executable, "-c", _WRITE, str(n), str(size), str(seed),
                          str(path), which], capture_output=True, text=True, check=True)
    seconds, rss = out.stdout.split()
    return float(seconds), int(rss) / 1024


def _timed(fn: Callable[[], Any]) -> float:
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    finally:
        if enabled:
            gc.enable()


def best_pair(a: Callable[[], Any], b: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Shortest times of ``a`` and ``b``, their runs interleaved (a slow-down of a busy
    machine falls on both)."""
    a()
    b()
    ta, tb = [], []
    for _ in range(repeats):
        ta.append(_timed(a))
        tb.append(_timed(b))
    return min(ta), min(tb)


def run(n: int, lookups: int, size: int, seed: int, repeats: int) -> dict[str, Any]:
    from swh.mosaic import IdxDescription, MosaicReader

    import shardkit

    out: dict[str, Any] = {"objects": n, "lookups": lookups, "mean_object_size": size,
                           "load_average": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        ref_path, our_path = Path(tmp) / "ref.mosaic", Path(tmp) / "ours.mosaic"
        # write: fresh processes, one after the other
        ref_s, ref_rss = _write("ref", n, size, seed, ref_path)
        our_s, our_rss = _write("ours", n, size, seed, our_path)
        out.update(write_s={"ref": ref_s, "ours": our_s}, write_rss_mib={"ref": ref_rss,
                                                                          "ours": our_rss},
                   file_bytes={"ref": ref_path.stat().st_size,
                               "ours": our_path.stat().st_size})
        out["write_speed_ratio"] = ref_s / our_s
        out["write_rss_ratio"] = our_rss / ref_rss
        # reads: both readers on the reference's file
        ref = MosaicReader(str(ref_path), IdxDescription.SHA256FMPHGO)
        keys = list(ref.keys())
        rnd = random.Random(seed + 1)
        sample = [keys[rnd.randrange(len(keys))] for _ in range(lookups)]
        ours = shardkit.open(ref_path)
        for k in sample[:2000]:
            if ours.get(k) != ref.lookup(k):
                raise SystemExit(f"value of {k.hex()} differs from the reference's")

        def open_first_ours() -> None:
            with shardkit.open(ref_path) as r:
                r.get(sample[0])

        def open_first_ref() -> None:
            MosaicReader(str(ref_path), IdxDescription.SHA256FMPHGO).lookup(sample[0])

        t_ours, t_ref = best_pair(open_first_ours, open_first_ref, 9)
        out["open_first_lookup_ms"] = t_ours * 1000
        out["open_first_lookup_ms_ref"] = t_ref * 1000
        get, look = ours.get, ref.lookup
        t_ours, t_ref = best_pair(lambda: [get(k) for k in sample],
                                  lambda: [look(k) for k in sample], repeats)
        out["lookups_per_s"] = {"ours": lookups / t_ours, "ref": lookups / t_ref}
        out["lookup_ratio"] = t_ref / t_ours
        t_ours, t_ref = best_pair(lambda: sum(1 for _ in ours.values()),
                                  lambda: sum(1 for _ in ref.values()), max(1, repeats // 2))
        out["values_per_s"] = {"ours": n / t_ours, "ref": n / t_ref}
        out["values_ratio"] = t_ref / t_ours
        ours.close()
        # the reference reads ours (a spot check)
        theirs = MosaicReader(str(our_path), IdxDescription.SHA256FMPHGO)
        mine = shardkit.open(our_path)
        for k in list(theirs.keys())[:1000]:
            if theirs.lookup(k) != mine.get(k) or hashlib.sha256(mine.get(k)).digest() != k:
                raise SystemExit("the reference reads another value from shardkit's file")
        mine.close()
        # verify, in a fresh process: its memory is bounded by a window of objects, not by n
        seconds, rss, problems = _verify(our_path)
        if problems:
            raise SystemExit(f"verify finds {problems} problems in shardkit's file")
        out.update(verify_s=seconds, verify_rss_mib=rss)
    return out


def verdicts(out: dict[str, Any]) -> list[str]:
    lines = []
    for metric, (op, bound) in TARGETS.items():
        value = out[metric]
        ok = value >= bound if op == ">=" else value <= bound
        lines.append(f"{'PASS' if ok else 'MISS'} {metric} = {value:.2f} (target {op} {bound})")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--objects", type=int, default=300_000)
    p.add_argument("--lookups", type=int, default=100_000)
    p.add_argument("--size", type=int, default=128, help="mean object size in bytes")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--big", action="store_true", help="10M objects of about 64 bytes")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if args.big:
        args.objects, args.size, args.repeats = 10_000_000, 32, 3
    out = run(args.objects, args.lookups, args.size, args.seed, args.repeats)
    if args.json:
        print(json.dumps({**out, "verdicts": verdicts(out)}, indent=1))
        return 0
    print(f"MOSAIC, {out['objects']} objects (mean {out['mean_object_size']} bytes), "
          f"load average {out['load_average'][0]:.1f}")
    print(f"  write        shardkit {out['write_s']['ours']:.2f} s "
          f"{out['write_rss_mib']['ours']:.0f} MiB   swh-mosaic {out['write_s']['ref']:.2f} s "
          f"{out['write_rss_mib']['ref']:.0f} MiB")
    print(f"  open+lookup  shardkit {out['open_first_lookup_ms']:.2f} ms   swh-mosaic "
          f"{out['open_first_lookup_ms_ref']:.2f} ms")
    print(f"  lookups/s    shardkit {out['lookups_per_s']['ours']:,.0f}   swh-mosaic "
          f"{out['lookups_per_s']['ref']:,.0f}")
    print(f"  values/s     shardkit {out['values_per_s']['ours']:,.0f}   swh-mosaic "
          f"{out['values_per_s']['ref']:,.0f}")
    print(f"  verify       shardkit {out['verify_s']:.2f} s {out['verify_rss_mib']:.0f} MiB")
    print("\n".join(verdicts(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
