#!/usr/bin/env python3
"""SWH read shards at production scale: shardkit side by side with swh-shard 2.2.1.

The issue's "SWH at 10M objects" targets (and 50M with ``--big``), each step in a fresh
process, one after the other, timed and measured for peak RSS:

* open + first lookup <= 5 ms (shardkit; swh-shard shown beside);
* open + 10k random lookups as a whole process (interpreter start and imports included)
  <= 2x swh-shard's, with peak RSS <= 160 MiB (each library twice, alternated, the faster
  run kept: the first run after the writes may read the keys and pages from disk);
* random lookups >= 1.3x swh-shard (at 200k objects and at the big size);
* iterate ``items()`` >= 1M objects/s with peak RSS <= 256 MiB;
* ``verify()`` peak RSS <= 256 MiB and time <= 0.5x ``swh-shard check``;
* the writer <= 1.5x ``ShardCreator``'s time and <= 1.2x its peak RSS;
* swh-shard reads every value of shardkit's shard.

Peak RSS: every step runs as the only child of a small wrapper process, which reports
``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` once the step has exited: the step's whole
peak, interpreter and imports included (as GNU ``time`` reports it).

The objects are 64-byte values (``sha512(seed, i)``) under their sha256 (as Software Heritage
keys are). The inputs (keys and values, 96 bytes per object) and both shards are kept in a
work directory and reused by later runs (``--workdir``, or ``$SHARDKIT_SCALE_DIR``; default a
folder in the system temporary directory): 10M objects take about 3.2 GB of disk there, 50M
about 16 GB. The writers are timed on every run (they rewrite the shards). Sizes below 10M
(200k by default) judge only the targets set at every size (open + first lookup, lookups/s);
their other rows are shown for information.

Run: ``.venv/bin/python benchmarks/scale_swh.py [--big] [--sizes N,N] [--workdir DIR]``.
``run(big)`` returns the number of MISS rows (``benchmarks/bench_scale.py`` calls it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SEED = 20261126
VALUE_LEN = 64
KEY_LEN = 32
SIZES = (200_000, 10_000_000)
BIG_SIZES = (200_000, 10_000_000, 50_000_000)
LOOKUPS = 10_000  # the whole-process lookup step
RATE_LOOKUPS = 200_000  # the lookups/s step
MIB = 1 << 20
_CHUNK = 1 << 16  # objects per read of the input files

# -- inputs ------------------------------------------------------------------------------------


def workdir(given: str | None = None) -> Path:
    """Where inputs and shards are kept between runs."""
    path = Path(given or os.environ.get("SHARDKIT_SCALE_DIR")
                or Path(tempfile.gettempdir()) / "shardkit-scale-swh")
    path.mkdir(parents=True, exist_ok=True)
    return path


def make_inputs(wd: Path, n: int) -> tuple[Path, Path]:
    """``keys-N.bin`` (32 bytes per object) and ``values-N.bin`` (64), made once."""
    keys, values = wd / f"keys-{n}.bin", wd / f"values-{n}.bin"
    if keys.exists() and values.exists() and keys.stat().st_size == KEY_LEN * n \
            and values.stat().st_size == VALUE_LEN * n:
        return keys, values
    tmp_k, tmp_v = keys.with_suffix(".tmp"), values.with_suffix(".tmp")
    prefix = SEED.to_bytes(8, "little")
    sha512, sha256 = hashlib.sha512, hashlib.sha256
    with open(tmp_k, "wb") as fk, open(tmp_v, "wb") as fv:
        for lo in range(0, n, _CHUNK):
            vals = [sha512(prefix + i.to_bytes(8, "little")).digest()
                    for i in range(lo, min(n, lo + _CHUNK))]
            fv.write(b"".join(vals))
            fk.write(b"".join([sha256(v).digest() for v in vals]))
    os.replace(tmp_k, keys)
    os.replace(tmp_v, values)
    return keys, values


# -- steps (each one the body of a fresh process) ----------------------------------------------

_READ_INPUTS = """
def inputs(n, wd):
    with open(f"{wd}/keys-{n}.bin", "rb") as fk, open(f"{wd}/values-{n}.bin", "rb") as fv:
        while True:
            ks, vs = fk.read(32 << 16), fv.read(64 << 16)
            if not ks:
                return
            yield ks, vs
"""

STEPS: dict[str, str] = {
    # build the shard from the inputs (read in 64k-object chunks: the data is not held)
    "write": _READ_INPUTS + """
import sys, time, json
n, wd, lib, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
if lib == "shardkit":
    from shardkit.writers.swh import SwhShardWriter
    w = SwhShardWriter(out, overwrite=True)
else:
    from swh.shard import ShardCreator
    w = ShardCreator(out, n).__enter__()
t0 = time.perf_counter()
for ks, vs in inputs(n, wd):
    for j in range(len(ks) // 32):
        w.write(ks[32 * j : 32 * j + 32], vs[64 * j : 64 * j + 64])
if lib == "shardkit":
    w.close()
else:
    w.__exit__(None, None, None)
print(json.dumps({"s": time.perf_counter() - t0}))
""",
    # open + first lookup, median of 9 fresh opens (imports done before)
    "open_first": """
import sys, time, json, statistics
n, wd, lib, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
with open(f"{wd}/keys-{n}.bin", "rb") as fk:
    keys = [fk.read(32) for _ in range(9)]
if lib == "shardkit":
    import shardkit
    def once(key):
        s = shardkit.open(path); s[key]; s.close()
else:
    from swh.shard import Shard
    def once(key):
        s = Shard(path); s.lookup(key); s.close()
times = []
for key in keys:
    t0 = time.perf_counter(); once(key); times.append(time.perf_counter() - t0)
print(json.dumps({"s": statistics.median(times), "first_s": times[0]}))
""",
    # the whole process is the measure: interpreter, imports, open, 10k random lookups
    "lookups10k": """
import sys, os, random
n, wd, lib, path, count = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
fd = os.open(f"{wd}/keys-{n}.bin", os.O_RDONLY)
rng = random.Random(n)
keys = [os.pread(fd, 32, 32 * rng.randrange(n)) for _ in range(count)]
if lib == "shardkit":
    import shardkit
    s = shardkit.open(path); get = s.__getitem__
else:
    from swh.shard import Shard
    s = Shard(path); get = s.lookup
for k in keys:
    get(k)
s.close()
""",
    # lookups/s over RATE_LOOKUPS random keys, best of 3 (after one warm-up round)
    "rate": """
import sys, os, random, time, json, gc
n, wd, lib, path, count = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
fd = os.open(f"{wd}/keys-{n}.bin", os.O_RDONLY)
rng = random.Random(n + 1)
keys = [os.pread(fd, 32, 32 * rng.randrange(n)) for _ in range(count)]
if lib == "shardkit":
    import shardkit
    s = shardkit.open(path); get = s.__getitem__
else:
    from swh.shard import Shard
    s = Shard(path); get = s.lookup
best = None
gc.disable()
for r in range(4):
    t0 = time.perf_counter()
    for k in keys:
        get(k)
    dt = time.perf_counter() - t0
    if r and (best is None or dt < best):
        best = dt
print(json.dumps({"per_s": count / best}))
""",
    "iterate": """
import sys, time, json
n, wd, lib, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
import shardkit
s = shardkit.open(path)
t0 = time.perf_counter()
count = size = 0
for k, v in s.items():
    count += 1
    size += len(v)
dt = time.perf_counter() - t0
print(json.dumps({"s": dt, "count": count, "bytes": size}))
""",
    "len": """
import sys, time, json
n, wd, lib, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
import shardkit
s = shardkit.open(path)
t0 = time.perf_counter()
count = len(s)
print(json.dumps({"s": time.perf_counter() - t0, "count": count}))
""",
    "verify": """
import sys, time, json, subprocess, os
n, wd, lib, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
t0 = time.perf_counter()
if lib == "shardkit":
    import shardkit
    with shardkit.open(path) as s:
        problems = s.verify()
    ok = not problems
else:  # the reference's own command, in this process (click main, no subprocess)
    from swh.shard.cli import shard_cli_group
    ok = shard_cli_group.main(["check", path], standalone_mode=False) in (0, None)
print(json.dumps({"s": time.perf_counter() - t0, "ok": ok}))
""",
    # swh-shard reads every value of shardkit's shard
    "crossread": _READ_INPUTS + """
import sys, time, json
n, wd, lib, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
from swh.shard import Shard
s = Shard(path)
bad = done = 0
t0 = time.perf_counter()
for ks, vs in inputs(n, wd):
    for j in range(len(ks) // 32):
        done += 1
        if s.lookup(ks[32 * j : 32 * j + 32]) != vs[64 * j : 64 * j + 64]:
            bad += 1
print(json.dumps({"s": time.perf_counter() - t0, "read": done, "mismatches": bad}))
""",
}

# runs one step as its only child; reports the child's wall time, peak RSS and its stdout
_WRAP = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
run = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"rc": run.returncode, "wall_s": wall, "peak": peak,
                  "out": run.stdout, "err": run.stderr[-2000:]}))
"""


# Both libraries run from compiled bytecode, as after ``pip install`` (which compiles it),
# whatever PYTHONDONTWRITEBYTECODE says: written once under a private prefix, then read.
_ENV = {**os.environ, "PYTHONPYCACHEPREFIX": str(Path(tempfile.gettempdir())
                                                  / "shardkit-scale-pycache")}
_ENV.pop("PYTHONDONTWRITEBYTECODE", None)


def step(name: str, n: int, wd: Path, lib: str, path: Path, *extra: str) -> dict[str, Any]:
    """Runs one step in a fresh process; its JSON output plus ``wall_s`` and ``peak`` (bytes)."""
    cmd = [sys.executable, "-c", _WRAP, sys.executable, "-c", STEPS[name], str(n), str(wd), lib,
           str(path), *extra]
    res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True,
                                    env=_ENV).stdout)
    if res["rc"] != 0:
        raise RuntimeError(f"step {name} ({lib}, {n:,}) failed:\n{res['err']}")
    out = res["out"].strip().splitlines()
    data: dict[str, Any] = json.loads(out[-1]) if out and out[-1].startswith("{") else {}
    data.update(wall_s=res["wall_s"], peak=res["peak"])
    return data


# -- the table ---------------------------------------------------------------------------------


def _fmt_s(v: float) -> str:
    return f"{v * 1000:,.2f} ms" if v < 1 else f"{v:,.2f} s"


#: below this size only the targets the issue sets at every size (open + first lookup,
#: lookups/s) are judged; the other rows are shown for information
SCALE_TARGETS_FROM = 10_000_000
_EVERY_SIZE = ("open + first lookup", "random lookups/s")


def _row(rows: list[dict[str, Any]], n: int, what: str, sk: str, ref: str, sk_peak: int | None,
         ref_peak: int | None, target: str, ok: bool | None) -> None:
    if n < SCALE_TARGETS_FROM and not what.startswith(_EVERY_SIZE):
        target, ok = f"({target} at 10M)" if target else "", None
    rows.append({"objects": n, "step": what, "shardkit": sk, "swh-shard": ref,
                 "shardkit peak RSS": f"{sk_peak / MIB:,.0f} MiB" if sk_peak else "",
                 "swh-shard peak RSS": f"{ref_peak / MIB:,.0f} MiB" if ref_peak else "",
                 "target": target, "status": "" if ok is None else ("PASS" if ok else "MISS")})


def _faster_of_two(name: str, n: int, wd: Path, path: Path, *extra: str
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``step(name)`` for shardkit and swh-shard in turn, twice; the faster run of each."""
    runs: dict[str, list[dict[str, Any]]] = {"shardkit": [], "swh.shard": []}
    for _ in range(2):
        for lib in runs:
            runs[lib].append(step(name, n, wd, lib, path, *extra))
    sk, ref = (min(runs[lib], key=lambda r: r["wall_s"]) for lib in runs)
    return sk, ref


def measure(n: int, wd: Path, log: Any = None) -> list[dict[str, Any]]:
    """Every step at ``n`` objects; one row per target (and a few informative rows)."""
    def say(msg: str) -> None:
        if log is not None:
            print(f"  [{n:,}] {msg}", file=log, flush=True)

    rows: list[dict[str, Any]] = []
    say("inputs")
    make_inputs(wd, n)
    ref, ours = wd / f"ref-{n}.shard", wd / f"shardkit-{n}.shard"
    say("write: swh-shard ShardCreator")
    w_ref = step("write", n, wd, "swh.shard", ref)
    say("write: shardkit")
    w_sk = step("write", n, wd, "shardkit", ours)
    size = ref.stat().st_size
    _row(rows, n, f"write {n:,} objects ({size / 1e9:.2f} GB)", _fmt_s(w_sk["s"]),
         _fmt_s(w_ref["s"]), w_sk["peak"], w_ref["peak"], "<= 1.5x time, <= 1.2x RSS",
         w_sk["s"] <= 1.5 * w_ref["s"] and w_sk["peak"] <= 1.2 * w_ref["peak"])
    say("open + first lookup")
    for lib in ("shardkit", "swh.shard"):  # warm-up: bytecode written, file in the page cache
        step("open_first", n, wd, lib, ref)
    o_sk = step("open_first", n, wd, "shardkit", ref)
    o_ref = step("open_first", n, wd, "swh.shard", ref)
    _row(rows, n, "open + first lookup (median of 9)", _fmt_s(o_sk["s"]), _fmt_s(o_ref["s"]),
         None, None, "<= 5 ms", o_sk["s"] <= 0.005)
    say("open + 10k lookups, whole process")
    # Alternated, twice each, the faster run of each kept: whichever runs first would also pay
    # for reading the keys and the shard's pages from disk when the page cache has dropped
    # them (at 50M objects the inputs and the two shards outgrow it).
    l_sk, l_ref = _faster_of_two("lookups10k", n, wd, ref, str(LOOKUPS))
    _row(rows, n, f"open + {LOOKUPS:,} random lookups (whole process)", _fmt_s(l_sk["wall_s"]),
         _fmt_s(l_ref["wall_s"]), l_sk["peak"], l_ref["peak"], "<= 2x time, <= 160 MiB",
         l_sk["wall_s"] <= 2 * l_ref["wall_s"] and l_sk["peak"] <= 160 * MIB)
    say("lookups/s")
    r_sk = step("rate", n, wd, "shardkit", ref, str(RATE_LOOKUPS))
    r_ref = step("rate", n, wd, "swh.shard", ref, str(RATE_LOOKUPS))
    _row(rows, n, f"random lookups/s ({RATE_LOOKUPS:,}, best of 3)",
         f"{r_sk['per_s']:,.0f}/s ({r_sk['per_s'] / r_ref['per_s']:.2f}x)",
         f"{r_ref['per_s']:,.0f}/s", r_sk["peak"], r_ref["peak"], ">= 1.3x",
         r_sk["per_s"] >= 1.3 * r_ref["per_s"])
    say("iterate")
    it = step("iterate", n, wd, "shardkit", ref)
    rate = it["count"] / it["s"]
    _row(rows, n, "iterate items()", f"{_fmt_s(it['s'])} ({rate / 1e6:.2f}M objects/s)",
         "(cannot iterate)", it["peak"], None, ">= 1M/s, <= 256 MiB",
         rate >= 1e6 and it["peak"] <= 256 * MIB and it["count"] == n)
    say("len")
    ln = step("len", n, wd, "shardkit", ref)
    _row(rows, n, "len()", _fmt_s(ln["s"]), "", ln["peak"], None, "", None)
    say("verify")
    v_sk = step("verify", n, wd, "shardkit", ref)
    v_ref = step("verify", n, wd, "swh.shard", ref)
    _row(rows, n, "verify() vs swh-shard check", _fmt_s(v_sk["s"]) + ("" if v_sk["ok"] else
                                                                       " (problems!)"),
         _fmt_s(v_ref["s"]) + ("" if v_ref["ok"] else " (failed!)"), v_sk["peak"], v_ref["peak"],
         "<= 0.5x time, <= 256 MiB",
         v_sk["ok"] and v_sk["s"] <= 0.5 * v_ref["s"] and v_sk["peak"] <= 256 * MIB)
    say("swh-shard reads shardkit's shard")
    cr = step("crossread", n, wd, "swh.shard", ours)
    _row(rows, n, "swh-shard reads every value of shardkit's shard",
         f"{cr['read']:,} read, {cr['mismatches']} mismatches", _fmt_s(cr["s"]), None,
         cr["peak"], "0 mismatches", cr["read"] == n and cr["mismatches"] == 0)
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    cols = ["objects", "step", "shardkit", "swh-shard", "shardkit peak RSS",
            "swh-shard peak RSS", "target", "status"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[c]:,}" if isinstance(r[c], int) else str(r[c])
                                       for c in cols) + " |")
    return "\n".join(lines)


def run(big: bool = False, sizes: tuple[int, ...] | None = None, wd: str | None = None,
        out: Any = None) -> int:
    """Measures every size, prints the table; returns the number of MISS rows."""
    out = out or sys.stdout
    where = workdir(wd)
    rows: list[dict[str, Any]] = []
    for n in sizes or (BIG_SIZES if big else SIZES):
        rows.extend(measure(n, where, log=sys.stderr))
    print(f"SWH at scale, shardkit vs swh-shard 2.2.1 (64-byte values; {os.cpu_count()} CPUs; "
          "each step a fresh process; peak RSS of the whole process)", file=out)
    print(render(rows), file=out)
    return sum(r["status"] == "MISS" for r in rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--big", action="store_true", help="also 50M objects (about 16 GB of disk)")
    p.add_argument("--sizes", help="comma-separated object counts instead (e.g. 200000)")
    p.add_argument("--workdir", help="where inputs and shards are kept (reused)")
    args = p.parse_args(argv)
    sizes = tuple(int(x) for x in args.sizes.split(",")) if args.sizes else None
    misses = run(args.big, sizes, args.workdir)
    print(f"{misses} MISS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
