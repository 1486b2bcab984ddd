#!/usr/bin/env python3
"""shardkit's ZS reader and writer side by side with the reference ``zs`` 0.10.0, in one run.

The input is ``--records`` (1,500,000) sorted text records of 3-gram-like lines
(``w1 w2 w3 w4<TAB>year<TAB>count``, about 48 MB with their newlines), seeded. Measured, each
side in its own process on the same files, best of ``--repeats``:

* writing: ``zs make -j J --codec C`` on the lines file, against
  ``shardkit.writers.zs.write_zs(..., codec=C, jobs=J)`` fed by the same file read in 1 MiB
  chunks (the time includes reading and splitting the input for both); equal parallelism ``J``
  (``--jobs``, 2: ``zs make``'s default on a 2-CPU machine: J worker processes compress, on
  both sides). Codecs deflate, lzma, none;
* iteration: every record of the deflate and lzma files made by ``zs make`` (real reference
  files): ``for r in ZS(path)`` (its default: one worker process per CPU) against
  ``for r in shardkit.open(path)`` (decompression in threads);
* prefix search: 200 prefixes (the 4-gram of a random record and its tab: an n-gram lookup,
  a few records each), ``list(search(prefix=p))``
  through one reader each: the reference with ``parallelism=0`` (its advice for small reads;
  its worker pool is slower here) and its index cache, shardkit with its defaults.

The ratio is reference time / shardkit time; the target is >= 1.0 (PASS). Every side's record
count (and search result sizes) are compared; a difference is a crash, not a MISS.

The reference needs Python 3.6 (its C extension): pass ``--zs-python`` or set ``ZS_PYTHON`` to
that interpreter (``pip install --no-deps zs==0.10.0`` and its pins, see tests/data/zs/MANIFEST.md).
Without it the script prints shardkit's times only.

Run: ``.venv/bin/python benchmarks/bench_zs.py [--records N] [--jobs J] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import shardkit
from shardkit.hashing import crc64xz
from shardkit.writers.zs import write_zs

_TEXT = ("the of and to in a is that for it as was with be by on not he this are or his from "
         "at which but have an they you were her she there one all we can their has been if "
         "more when will would who so no out up into do any time about than then them its "
         "only new some could these two may first like other over also after people between "
         "through during without government american national")
WORDS = _TEXT.split()

_REF_ITER = """
import sys, time
from zs import ZS
t = time.perf_counter(); n = 0
with ZS(sys.argv[1]) as z:
    for r in z:
        n += 1
print(time.perf_counter() - t, n)
"""
_REF_SEARCH = """
import sys, time
from zs import ZS
prefixes = [bytes.fromhex(h) for h in open(sys.argv[2]).read().split()]
with ZS(sys.argv[1], parallelism=0) as z:
    t = time.perf_counter(); found = 0
    for p in prefixes:
        found += len(list(z.search(prefix=p)))
    print(time.perf_counter() - t, found)
"""


def make_lines(n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out = set()
    while len(out) < n:
        out.add(b"%s %s %s %s\t%d\t%d" % (
            rng.choice(WORDS).encode(), rng.choice(WORDS).encode(), rng.choice(WORDS).encode(),
            rng.choice(WORDS).encode(), rng.randrange(1800, 2010), rng.randrange(1, 9999999)))
    return sorted(out)


def iter_lines(path: Path, chunk: int = 1 << 20) -> Iterator[bytes]:
    """Newline-terminated records of a file, read in chunks."""
    with open(path, "rb") as fh:
        rest = b""
        while block := fh.read(chunk):
            parts = (rest + block).split(b"\n")
            rest = parts.pop()
            yield from parts
        if rest:
            raise ValueError("input does not end with a newline")


def best(fn: Any, repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def reference_cmd(args: argparse.Namespace) -> list[str] | None:
    exe = args.zs_python or os.environ.get("ZS_PYTHON")
    return [exe] if exe else None


def run_ref(py: list[str], code: str, *argv: str) -> tuple[float, int]:
    out = subprocess.run([*py, "-c", code, *argv], capture_output=True, check=True, text=True)
    t, n = out.stdout.split()
    return float(t), int(n)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_500_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--zs-python", help="Python 3.6 with zs 0.10.0 (default: $ZS_PYTHON)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    py = reference_cmd(args)
    rows: list[dict[str, Any]] = []

    def row(what: str, ref: float | None, ours: float) -> None:
        ratio = None if ref is None else ref / ours
        rows.append({"what": what, "reference_s": ref, "shardkit_s": ours, "ratio": ratio,
                     "verdict": "n/a" if ratio is None else "PASS" if ratio >= 1.0 else "MISS"})
        if not args.json:
            r = "-" if ref is None else f"{ref:8.3f}"
            v = "-" if ratio is None else f"{ratio:5.2f}x {rows[-1]['verdict']}"
            print(f"{what:44s} ref {r} s  shardkit {ours:8.3f} s  {v}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        lines = make_lines(args.records, args.seed)
        src = d / "lines.txt"
        src.write_bytes(b"".join(r + b"\n" for r in lines))
        if not args.json:
            print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
                  f"CRC-64-xz by {crc64xz.BACKEND}")
            print(f"{len(lines)} records, {src.stat().st_size / 1e6:.1f} MB of lines, "
                  f"jobs {args.jobs}, reference: {py[0] if py else 'not installed'}")
        for codec in ("deflate", "lzma", "none"):
            ref_t = None
            if py:
                zs_cmd = [*py, "-m", "zs", "make", "--no-spinner", "-j", str(args.jobs),
                          f"--codec={codec}", "{}", str(src)]

                def ref_make(c: str = codec, cmd: list[str] = zs_cmd) -> None:
                    out = d / f"ref-{c}.zs"
                    out.unlink(missing_ok=True)
                    subprocess.run([*cmd, str(out)], check=True, capture_output=True)

                ref_t, _ = best(ref_make, args.repeats)

            def ours_make(c: str = codec) -> int:
                return write_zs(d / f"ours-{c}.zs", iter_lines(src), codec=c, jobs=args.jobs,
                                record_overhead=1)

            t, n = best(ours_make, args.repeats)
            assert n == len(lines)
            row(f"write {codec} (jobs {args.jobs})", ref_t, t)

        for codec in ("deflate", "lzma"):
            path = d / (f"ref-{codec}.zs" if py else f"ours-{codec}.zs")
            ref_t = None
            if py:
                times = [run_ref(py, _REF_ITER, str(path)) for _ in range(args.repeats)]
                assert all(n == len(lines) for _, n in times)
                ref_t = min(t for t, _ in times)

            def ours_iter(p: Path = path) -> int:
                n = 0
                with shardkit.open(p) as z:
                    for _ in z:
                        n += 1
                return n

            t, n = best(ours_iter, args.repeats)
            assert n == len(lines)
            row(f"iterate {len(lines)} records, {codec}", ref_t, t)

        rng = random.Random(args.seed + 1)
        prefixes = [rng.choice(lines).split(b"\t")[0] + b"\t" for _ in range(200)]
        pfile = d / "prefixes.txt"
        pfile.write_text("\n".join(p.hex() for p in prefixes))
        for codec in ("deflate", "lzma"):
            path = d / (f"ref-{codec}.zs" if py else f"ours-{codec}.zs")
            ref_t = None
            expect = None
            if py:
                times = [run_ref(py, _REF_SEARCH, str(path), str(pfile))
                         for _ in range(args.repeats)]
                ref_t = min(t for t, _ in times)
                expect = times[0][1]

            def ours_search(p: Path = path) -> int:
                with shardkit.open(p) as z:
                    t0 = time.perf_counter()
                    found = sum(len(list(z.search(prefix=x))) for x in prefixes)
                    return found, time.perf_counter() - t0

            results = [ours_search() for _ in range(args.repeats)]
            found = results[0][0]
            assert expect is None or found == expect, (found, expect)
            row(f"200 prefix searches, {codec} ({found} hits)", ref_t,
                min(t for _, t in results))

    if args.json:
        print(json.dumps({"records": args.records, "jobs": args.jobs, "rows": rows,
                          "load_average": os.getloadavg(), "crc64xz": crc64xz.BACKEND},
                         indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
