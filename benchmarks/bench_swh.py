#!/usr/bin/env python3
"""shardkit's SWH read-shard reader, side by side with swh.perfecthash (the reference).

Builds a shard on the fly with the reference ``ShardCreator`` (random 32-byte keys, random
values of 0..512 bytes, seeded) in a temporary directory, measures both readers in the same run
and prints one table (or JSON with ``--json``). The shard is deleted afterwards.

Run: ``.venv/bin/python benchmarks/bench_swh.py [--objects N] [--lookups N] [--seed S] [--json]``

The exit code is 0 whatever the numbers are (benchmarks report, they do not gate CI); it is
non-zero only when something crashes or shardkit returns a value different from the
reference's (then the numbers would mean nothing).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from swh.perfecthash import Shard, ShardCreator

import shardkit
from shardkit.formats.swh import OBJECT_READAHEAD

KEY_LEN = 32
SLOT_SIZE = 40
HEADER_LIMIT = 512  # the objects start at byte 512: opening must read nothing past it
TARGETS = {  # metric -> minimum shardkit/reference ratio
    "lookups_per_s": 1.3,
    "get_many_keys_per_s": 3.0,
}
MEMORY_PHASES = ("lookups", "get_many", "iterate", "verify")


# -- helpers -----------------------------------------------------------------------------------


def _timed(fn: Callable[[], Any]) -> float:
    """Seconds one call of ``fn`` takes, with the garbage collector off (as timeit does)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    finally:
        if enabled:
            gc.enable()


def best_pair(fn_a: Callable[[], Any], fn_b: Callable[[], Any], repeats: int,
              warmup: bool = True) -> tuple[float, float]:
    """Shortest times of ``fn_a`` and ``fn_b``, their runs interleaved (a, b, a, b...).

    Interleaving spreads any slow-down of a busy machine over both sides.
    """
    if warmup:
        fn_a()
        fn_b()
    times_a, times_b = [], []
    for _ in range(repeats):
        times_a.append(_timed(fn_a))
        times_b.append(_timed(fn_b))
    return min(times_a), min(times_b)


def median_of(fn: Callable[[], Any], repeats: int) -> float:
    """Median time of ``repeats`` calls of ``fn`` (no warm-up: ``fn`` measures a cold start)."""
    return statistics.median(_timed(fn) for _ in range(repeats))


def _read_keys(path: Path) -> list[bytes]:
    data = path.read_bytes()
    return [data[i : i + KEY_LEN] for i in range(0, len(data), KEY_LEN)]


def _write_keys(path: Path, keys: Sequence[bytes]) -> None:
    path.write_bytes(b"".join(keys))


# -- the shard ---------------------------------------------------------------------------------


def make_shard(workdir: Path, objects: int, lookups: int, batch: int,
               seed: int) -> dict[str, Any]:
    """Write a shard with the reference writer; return its path and the key samples."""
    rng = random.Random(seed)
    keys: list[bytes] = []
    seen: set[bytes] = set()
    while len(keys) < objects:
        key = rng.randbytes(KEY_LEN)
        if key not in seen:  # the reference refuses duplicate keys
            seen.add(key)
            keys.append(key)
    path = workdir / "bench.shard"
    t0 = time.perf_counter()
    with ShardCreator(str(path), objects) as writer:
        for key in keys:
            writer.write(key, rng.randbytes(rng.randint(0, 512)))
    build_s = time.perf_counter() - t0
    sample = rng.choices(keys, k=lookups)  # uniform, with replacement
    many = rng.sample(keys, min(batch, objects))  # distinct keys
    files = {"keys": workdir / "keys.bin", "sample": workdir / "sample.bin",
             "many": workdir / "many.bin"}
    _write_keys(files["keys"], keys)
    _write_keys(files["sample"], sample)
    _write_keys(files["many"], many)
    return {"path": path, "keys": keys, "sample": sample, "many": many, "files": files,
            "build_s": build_s, "file_size": path.stat().st_size}


# -- correctness (the numbers only mean something if both readers agree) ------------------------


def check_same_values(path: Path, keys: list[bytes], many: list[bytes]) -> None:
    """Raise AssertionError when shardkit and the reference disagree."""
    step = max(1, len(keys) // 2000)
    probe = keys[::step]
    with shardkit.open(path) as s, Shard(str(path)) as ref:
        for key in probe:
            if s[key] != ref.lookup(key):
                raise AssertionError(f"s[{key.hex()}] differs from the reference")
        if s.get_many(many) != [ref.lookup(k) for k in many]:
            raise AssertionError("get_many differs from the reference")
        if len(s) != len(keys):
            raise AssertionError(f"len(s) is {len(s)}, the shard has {len(keys)} objects")


# -- speed -------------------------------------------------------------------------------------


def measure_speed(shard: dict[str, Any], repeats: int) -> dict[str, dict[str, float | None]]:
    """Every timing, shardkit and reference side by side."""
    path: Path = shard["path"]
    spath = str(path)
    keys: list[bytes] = shard["keys"]
    sample: list[bytes] = shard["sample"]
    many: list[bytes] = shard["many"]
    out: dict[str, dict[str, float | None]] = {}

    # open (the reference loads the hash function here; shardkit reads only the header)
    def open_close_sk() -> None:
        shardkit.open(path).close()

    def open_close_ref() -> None:
        Shard(spath).close()

    def timed_open(opener: Callable[[], Any]) -> float:
        t0 = time.perf_counter()
        obj = opener()
        dt = time.perf_counter() - t0
        obj.close()
        return dt

    open_close_sk()
    open_close_ref()
    out["open_s"] = {
        "shardkit": statistics.median(timed_open(lambda: shardkit.open(path))
                                      for _ in range(25)),
        "reference": statistics.median(timed_open(lambda: Shard(spath)) for _ in range(25)),
    }

    # first lookup on a freshly opened shard (shardkit decodes the hash function here)
    key0 = sample[0]

    def first_lookup(opener: Callable[[], Any], lookup: str) -> tuple[float, float]:
        t0 = time.perf_counter()
        obj = opener()
        t1 = time.perf_counter()
        getattr(obj, lookup)(key0)
        t2 = time.perf_counter()
        obj.close()
        return t2 - t1, t2 - t0

    sk_first = [first_lookup(lambda: shardkit.open(path), "__getitem__") for _ in range(7)]
    ref_first = [first_lookup(lambda: Shard(spath), "lookup") for _ in range(7)]
    out["first_lookup_s"] = {"shardkit": statistics.median(t for t, _ in sk_first),
                             "reference": statistics.median(t for t, _ in ref_first)}
    out["open_plus_first_lookup_s"] = {"shardkit": statistics.median(t for _, t in sk_first),
                                       "reference": statistics.median(t for _, t in ref_first)}

    with shardkit.open(path) as s, Shard(spath) as ref:
        # random lookups: warm-up pass (loads the hash function), then best of `repeats`
        def sk_lookups() -> None:
            for key in sample:
                s[key]

        def ref_lookups() -> None:
            lookup = ref.lookup
            for key in sample:
                lookup(key)

        t_sk, t_ref = best_pair(sk_lookups, ref_lookups, repeats)
        out["lookups_per_s"] = {"shardkit": len(sample) / t_sk, "reference": len(sample) / t_ref}

        # batch: get_many vs the reference looking the same keys up one by one
        def ref_many() -> None:
            lookup = ref.lookup
            [lookup(k) for k in many]

        t_sk, t_ref = best_pair(lambda: s.get_many(many), ref_many, repeats)
        out["get_many_keys_per_s"] = {"shardkit": len(many) / t_sk, "reference": len(many) / t_ref}

        # whole shard: shardkit walks the index; the reference has no iteration, so it looks
        # every key up (it needs the key list from elsewhere)
        def sk_items() -> None:
            for _k, _v in s.items():
                pass

        def ref_all() -> None:
            lookup = ref.lookup
            for key in keys:
                lookup(key)

        t_sk, t_ref = best_pair(sk_items, ref_all, repeats, warmup=False)
        out["iterate_all_s"] = {"shardkit": t_sk, "reference": t_ref}

    # len() and verify() are cached or warm per object: each run gets a freshly opened shard
    def fresh(action: Callable[[Any], Any]) -> Callable[[], None]:
        holder: list[Any] = []

        def run() -> None:
            action(holder[0])

        def timed() -> float:
            holder[:] = [shardkit.open(path)]
            try:
                return _timed(run)
            finally:
                holder[0].close()

        return timed

    len_timed = fresh(len)
    out["len_s"] = {"shardkit": statistics.median(len_timed() for _ in range(7)),
                    "reference": None}
    verify_timed = fresh(lambda s: s.verify())
    out["verify_s"] = {"shardkit": min(verify_timed() for _ in range(repeats)),
                       "reference": None}
    return out


# -- memory: one subprocess per phase ----------------------------------------------------------


def _proc_status_kib(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (``VmHWM``, ``VmRSS``, ``RssFile``...)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _peak_rss_kib() -> int:
    """Peak RSS of this process in KiB.

    ``VmHWM`` rather than ``ru_maxrss``: on Linux ``ru_maxrss`` survives ``fork`` + ``exec``,
    so a child started by a big parent reports the parent's peak and a delta of 0.
    """
    hwm = _proc_status_kib("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_phase(phase: str, lib: str, path: str, keys_file: str) -> dict[str, Any]:
    """Child side: run one phase, return the peak-RSS growth it caused (KiB)."""
    keys = _read_keys(Path(keys_file))
    gc.collect()
    reset = _reset_peak_rss()
    before = _peak_rss_kib()
    file0, anon0 = _proc_status_kib("RssFile"), _proc_status_kib("RssAnon")
    if lib == "shardkit":
        with shardkit.open(path) as s:
            if phase == "lookups":
                for key in keys:
                    s[key]
            elif phase == "get_many":
                s.get_many(keys)
            elif phase == "iterate":
                for _k, _v in s.items():
                    pass
            elif phase == "verify":
                s.verify()
            rss_file, rss_anon = _proc_status_kib("RssFile"), _proc_status_kib("RssAnon")
    else:
        with Shard(path) as ref:
            if phase == "get_many":
                [ref.lookup(k) for k in keys]
            else:  # lookups and iterate: one lookup per key
                for key in keys:
                    ref.lookup(key)
            rss_file, rss_anon = _proc_status_kib("RssFile"), _proc_status_kib("RssAnon")
    after = _peak_rss_kib()
    return {"phase": phase, "lib": lib, "peak_reset": reset, "baseline_kib": before,
            "peak_kib": after, "delta_kib": after - before,
            "rss_file_growth_kib": _sub(rss_file, file0),
            "rss_anon_growth_kib": _sub(rss_anon, anon0)}


def _sub(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a - b


def measure_memory(shard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Peak-RSS growth of each phase, each (phase, library) in a fresh interpreter."""
    files = shard["files"]
    key_file = {"lookups": files["sample"], "get_many": files["many"],
                "iterate": files["keys"], "verify": files["keys"]}
    out: dict[str, dict[str, Any]] = {}
    for phase in MEMORY_PHASES:
        row: dict[str, Any] = {}
        for lib in ("shardkit", "reference"):
            if phase == "verify" and lib == "reference":
                row[lib] = None  # the reference has no verify
                continue
            cmd = [sys.executable, os.path.abspath(__file__), "--_phase", phase, "--_lib", lib,
                   "--_path", str(shard["path"]), "--_keys", str(key_file[phase])]
            res = subprocess.run(cmd, check=True, capture_output=True, text=True)
            row[lib] = json.loads(res.stdout)
        out[phase] = row
    return out


# -- read checks -------------------------------------------------------------------------------


def check_reads(shard: dict[str, Any]) -> dict[str, Any]:
    """What opening and one lookup read, through a CountingSource."""
    path: Path = shard["path"]
    key: bytes = shard["sample"][0]
    inner = shardkit.FileSource(path)
    cs = shardkit.CountingSource(inner)
    s = shardkit.open(cs)
    try:
        stats = cs.stats
        assert stats.ranges is not None
        open_ranges = list(stats.ranges)
        open_bytes = stats.bytes_read
        open_ok = (all(end <= HEADER_LIMIT for _, end in open_ranges)
                   and open_bytes < HEADER_LIMIT)

        h = s.header
        file_size = cs.size
        lookups = []
        for label in ("first lookup (loads the hash function)", "second lookup (same key)"):
            stats.ranges.clear()
            reads_before, bytes_before = stats.reads, stats.bytes_read
            s[key]
            ranges = list(stats.ranges)
            slot = s.slot_of(key)  # the hash function is loaded now: reads nothing
            entry = (h.index_position + slot * SLOT_SIZE, h.index_position + (slot + 1) * SLOT_SIZE)
            ofs = int.from_bytes(inner.read_range(entry[1] - 8, entry[1]), "big")
            size = int.from_bytes(inner.read_range(ofs, ofs + 8), "big")
            obj = (ofs, ofs + 8 + size)
            kinds: list[str] = []
            for lo, hi in ranges:
                if h.hash_position <= lo and hi <= file_size:
                    kinds.append("hash function")
                elif (lo, hi) == entry:
                    kinds.append(f"index entry of slot {slot}")
                elif obj[0] <= lo and hi <= obj[1]:
                    kinds.append("object size field" if (lo, hi) == (ofs, ofs + 8)
                                 else "object data")
                elif lo == ofs and obj[1] <= hi <= max(obj[1], min(h.index_position,
                                                                   ofs + OBJECT_READAHEAD)):
                    kinds.append("object (size, data, read-ahead)")
                else:
                    kinds.append("UNEXPECTED")
            hash_bytes = sum(hi - lo for (lo, hi), k in zip(ranges, kinds, strict=True)
                             if k == "hash function")
            obj_cover = sorted(r for r, k in zip(ranges, kinds, strict=True)
                               if k.startswith("object"))
            obj_ok = bool(obj_cover) and obj_cover[0][0] == obj[0] and all(
                a[1] == b[0] for a, b in itertools.pairwise(obj_cover)
            ) and obj_cover[-1][1] >= obj[1]
            ok = ("UNEXPECTED" not in kinds
                  and kinds.count(f"index entry of slot {slot}") == 1
                  and obj_ok
                  and hash_bytes <= file_size - h.hash_position)
            lookups.append({
                "label": label, "ok": ok, "reads": stats.reads - reads_before,
                "bytes_read": stats.bytes_read - bytes_before,
                "ranges": [[lo, hi, hi - lo, k] for (lo, hi), k in zip(ranges, kinds,
                                                                       strict=True)],
                "hash_section": [h.hash_position, file_size], "object": list(obj),
            })
    finally:
        s.close()
    return {"open": {"ok": open_ok, "reads": len(open_ranges), "bytes_read": open_bytes,
                     "ranges": open_ranges},
            "lookups": lookups}


# -- report ------------------------------------------------------------------------------------

ROWS = [  # key, label, unit, better
    ("lookups_per_s", "random lookups s[key]", "/s", "higher"),
    ("get_many_keys_per_s", "get_many vs lookup loop", "keys/s", "higher"),
    ("first_lookup_s", "first lookup latency", "ms", "lower"),
    ("open_s", "open (median)", "ms", "lower"),
    ("open_plus_first_lookup_s", "open + first lookup", "ms", "lower"),
    ("iterate_all_s", "full iteration", "ms", "lower"),
    ("len_s", "len(s) (first call)", "ms", "lower"),
    ("verify_s", "verify()", "ms", "lower"),
]


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "ms":
        return f"{value * 1e3:,.3f} ms"
    if unit == "MiB":
        return f"{value / 1024:,.1f} MiB"
    return f"{value:,.0f} {unit}"


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0:
        return None
    return a / b


def render(result: dict[str, Any]) -> str:
    cfg = result["config"]
    speed = result["speed"]
    mem = result["memory"]
    lines = [
        f"shardkit {shardkit.__version__} vs swh.perfecthash (reference), "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs",
        f"shard: {cfg['objects']:,} objects, values 0..512 B, {cfg['file_size']:,} bytes, "
        f"seed {cfg['seed']}, built by the reference in {cfg['build_s']:.2f} s (page cache warm)",
        f"rates and iteration: best of {cfg['repeats']} runs, interleaved with the reference, "
        f"after a warm-up; lookups: {cfg['lookups']:,} random keys; get_many: "
        f"{cfg['batch']:,} distinct keys; open/first lookup/len: medians",
        "",
    ]
    table = [("metric", "shardkit", "reference", "ratio", "better")]
    for key, label, unit, better in ROWS:
        row = speed[key]
        r = _ratio(row["shardkit"], row["reference"])
        table.append((label, _fmt(row["shardkit"], unit), _fmt(row["reference"], unit),
                      "n/a" if r is None else f"{r:.2f}x", better))
    for phase in MEMORY_PHASES:
        sk, ref = mem[phase]["shardkit"], mem[phase]["reference"]
        sk_v = sk["delta_kib"] if sk else None
        ref_v = ref["delta_kib"] if ref else None
        r = _ratio(sk_v, ref_v)
        table.append((f"memory {phase}: peak RSS +", _fmt(sk_v, "MiB"), _fmt(ref_v, "MiB"),
                      "n/a" if r is None else f"{r:.2f}x", "lower"))
        sk_a = sk["rss_anon_growth_kib"] if sk else None
        ref_a = ref["rss_anon_growth_kib"] if ref else None
        r = _ratio(sk_a, ref_a)
        table.append((f"memory {phase}: anon RSS + (end)", _fmt(sk_a, "MiB"),
                      _fmt(ref_a, "MiB"), "n/a" if r is None else f"{r:.2f}x", "lower"))
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    for n, row in enumerate(table):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:4], widths[1:4],
                                                                          strict=True)]
        cells.append(row[4].ljust(widths[4]))
        lines.append("| " + " | ".join(cells) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += [
        "",
        "ratio = shardkit / reference. len(s) and verify() have no reference counterpart.",
        "memory: each phase runs in a fresh interpreter per library (same imports, keys loaded",
        "first). 'peak RSS +' = VmHWM after the phase minus RSS before it (the peak is reset",
        "with /proc/self/clear_refs); it counts the pages of the memory-mapped shard shardkit",
        "touches (file-backed page cache, shared and reclaimable), while the reference reads",
        "with stdio into private buffers. 'anon RSS + (end)' = anonymous RSS growth at the",
        "end of the phase (heap: Python objects, numpy arrays, C buffers), not a peak.",
        "",
        "targets:",
    ]
    for key, target in TARGETS.items():
        r = _ratio(speed[key]["shardkit"], speed[key]["reference"])
        status = "PASS" if r is not None and r >= target else "MISS"
        lines.append(f"  {key}: ratio {r:.2f}x, target >= {target:.1f}x  {status}")

    reads = result["reads"]
    op = reads["open"]
    lines += ["", "read checks (CountingSource):",
              f"  open: {op['reads']} reads, {op['bytes_read']} bytes, all below byte "
              f"{HEADER_LIMIT} and < {HEADER_LIMIT} bytes: {'PASS' if op['ok'] else 'FAIL'}",
              f"    ranges: {', '.join(f'[{a}, {b})' for a, b in op['ranges'])}"]
    for lk in reads["lookups"]:
        hs = lk["hash_section"]
        lines.append(f"  {lk['label']}: {lk['reads']} reads, {lk['bytes_read']:,} bytes: "
                     f"{'PASS' if lk['ok'] else 'FAIL'}")
        lines.append(f"    hash section [{hs[0]}, {hs[1]}), object [{lk['object'][0]}, "
                     f"{lk['object'][1]})")
        for lo, hi, size, kind in lk["ranges"]:
            lines.append(f"    [{lo}, {hi})  {size:>7,} B  {kind}")
    return "\n".join(lines)


# -- the targets, with both references (swh.perfecthash 1.3.2 and swh-shard 2.2.1) -----

TARGET_SIZES = (20_000, 200_000)
BIG_SIZE = 2_000_000
_BUILD_CHILD = r"""
import hashlib, random, sys, time, os
n, lib, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
rng = random.Random(n)
pool = rng.randbytes(1 << 20)
sizes = [rng.randint(0, 512) for _ in range(n)]
starts = [rng.randrange(0, (1 << 20) - 512) for _ in range(n)]
# key = sha256(value), as Software Heritage keys are; every value distinct (4-byte suffix)
values = [pool[starts[i] : starts[i] + sizes[i]] + i.to_bytes(4, "little") for i in range(n)]
keys = b"".join(hashlib.sha256(v).digest() for v in values)
del starts, sizes
def hwm(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])
if lib == "shardkit":  # imported before the measure: the build's memory, not the modules'
    from shardkit.writers.swh import SwhShardWriter as W
else:
    mod = __import__(lib, fromlist=["ShardCreator"])
with open("/proc/self/clear_refs", "w") as fh:  # reset VmHWM to the current RSS
    fh.write("5")
base = hwm("VmRSS")
t0 = time.perf_counter()
w = W(path) if lib == "shardkit" else mod.ShardCreator(path, n).__enter__()
for i in range(n):
    w.write(keys[32 * i : 32 * i + 32], values[i])
if lib == "shardkit":
    w.close()
else:
    w.__exit__(None, None, None)
print(time.perf_counter() - t0, (hwm("VmHWM") - base) * 1024)
"""
REFS = {"swh.shard": "swh-shard 2.2.1", "swh.perfecthash": "swh.perfecthash 1.3.2"}


def _build(n: int, lib: str, path: Path) -> tuple[float, int]:
    """Build time (s) and peak RSS growth (bytes) of one writer, in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _BUILD_CHILD, str(n), lib, str(path)],
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1])


def _ref_shard(lib: str, path: Path) -> Any:
    return __import__(lib, fromlist=["Shard"]).Shard(str(path))


def _open_first(opener: Callable[[], Any], lookup: str, key: bytes) -> float:
    t0 = time.perf_counter()
    obj = opener()
    getattr(obj, lookup)(key)
    dt = time.perf_counter() - t0
    obj.close()
    return dt


def measure_targets(sizes: Sequence[int], seed: int, lookups: int, batch: int,
                    repeats: int) -> list[dict[str, Any]]:
    """One row per target: shardkit and both references, in this run."""
    rows: list[dict[str, Any]] = []
    workdir = Path(tempfile.mkdtemp(prefix="shardkit-bench-targets-"))
    try:
        for n in sizes:
            paths = {lib: workdir / f"{lib}-{n}.shard" for lib in ("shardkit", *REFS)}
            built = {lib: _build(n, lib, path) for lib, path in paths.items()}
            if n >= 200_000:
                for what, idx, target, unit in (("build time", 0, 2.0, "s"),
                                                ("build peak memory", 1, 2.0, "B")):
                    for lib, name in REFS.items():
                        rows.append({"metric": f"{what}, {n:,} objects", "vs": name,
                                     "shardkit": built["shardkit"][idx],
                                     "reference": built[lib][idx], "unit": unit,
                                     "target": f"<= {target}x", "ok": built["shardkit"][idx]
                                     <= target * built[lib][idx]})
            path = paths["swh.shard"]  # today's writer's file, read by all three
            rng = random.Random(seed + n)
            with shardkit.open(path) as s:
                keys = list(s.keys())
            key0 = rng.choice(keys)
            def sk_open(path: Path = path) -> Any:
                return shardkit.open(path)

            sk = statistics.median(_open_first(sk_open, "__getitem__", key0) for _ in range(9))
            for lib, name in REFS.items():
                def ref_open(lib: str = lib, path: Path = path) -> Any:
                    return _ref_shard(lib, path)

                ref = statistics.median(_open_first(ref_open, "lookup", key0) for _ in range(9))
                rows.append({"metric": f"open + first lookup, {n:,} objects", "vs": name,
                             "shardkit": sk, "reference": ref, "unit": "s",
                             "target": "<= 1.0x", "ok": sk <= ref})
            if n != 200_000:
                continue
            sample = rng.choices(keys, k=lookups)
            many = rng.sample(keys, min(batch, len(keys)))
            with shardkit.open(path) as s:
                refs = {lib: _ref_shard(lib, path) for lib in REFS}
                try:
                    def sk_lookups(sample: list[bytes] = sample) -> None:
                        for key in sample:
                            s[key]

                    for lib, name in REFS.items():
                        lookup = refs[lib].lookup

                        def ref_lookups(lookup: Callable[[bytes], bytes] = lookup,
                                        sample: list[bytes] = sample) -> None:
                            for key in sample:
                                lookup(key)

                        t_sk, t_ref = best_pair(sk_lookups, ref_lookups, repeats)
                        rows.append({"metric": "random lookups/s, 200,000 objects", "vs": name,
                                     "shardkit": len(sample) / t_sk,
                                     "reference": len(sample) / t_ref, "unit": "/s",
                                     "target": ">= 1.3x", "ok": t_ref >= 1.3 * t_sk})

                        def ref_many(lookup: Callable[[bytes], bytes] = lookup,
                                     many: list[bytes] = many) -> None:
                            [lookup(k) for k in many]

                        def sk_many(many: list[bytes] = many) -> None:
                            s.get_many(many)

                        t_sk, t_ref = best_pair(sk_many, ref_many, repeats)
                        rows.append({"metric": f"get_many ({len(many):,} keys)", "vs": name,
                                     "shardkit": len(many) / t_sk,
                                     "reference": len(many) / t_ref,
                                     "unit": "/s", "target": ">= 3.0x", "ok": t_ref >= 3 * t_sk})
                finally:
                    for r in refs.values():
                        r.close()
            bindir = Path(sys.executable).parent

            def cli(cmd: list[str]) -> float:
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True)
                return time.perf_counter() - t0

            sk_cmd = [str(bindir / "shardkit"), "verify", "--content-hash", "sha256", str(path)]
            ref_cmd = [str(bindir / "swh-shard"), "check", "--with-hash", str(path)]
            t_sk = min(cli(sk_cmd) for _ in range(repeats))
            t_ref = min(cli(ref_cmd) for _ in range(repeats))
            rows.append({"metric": "verify --content-hash sha256 (CLI)", "vs":
                         "swh-shard check --with-hash", "shardkit": t_sk, "reference": t_ref,
                         "unit": "s", "target": "faster", "ok": t_sk < t_ref})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return rows


def render_targets(rows: list[dict[str, Any]]) -> str:
    """The target table: one line per metric and reference, with PASS/MISS."""
    def fmt(v: float, unit: str) -> str:
        if unit == "s":
            return f"{v * 1000:,.2f} ms" if v < 1 else f"{v:,.2f} s"
        if unit == "B":
            return f"{v / (1 << 20):,.1f} MiB"
        return f"{v:,.0f} {unit}"

    head = ("| target | vs | shardkit | reference | shardkit/reference | target | status |\n"
            "|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        ratio = r["shardkit"] / r["reference"] if r["reference"] else float("nan")
        lines.append(f"| {r['metric']} | {r['vs']} | {fmt(r['shardkit'], r['unit'])} | "
                     f"{fmt(r['reference'], r['unit'])} | {ratio:.2f}x | {r['target']} | "
                     f"{'PASS' if r['ok'] else 'MISS'} |")
    return "\n".join(lines)


# -- main --------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--objects", type=int, default=200_000, help="objects in the shard (200000)")
    p.add_argument("--lookups", type=int, default=50_000, help="random lookups per run (50000)")
    p.add_argument("--batch", type=int, default=10_000, help="keys given to get_many (10000)")
    p.add_argument("--repeats", type=int, default=3, help="timed runs, best kept (3)")
    p.add_argument("--seed", type=int, default=20240501, help="random seed")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument("--no-memory", action="store_true", help="skip the subprocess memory phases")
    p.add_argument("--big", action="store_true",
                   help=f"also measure the targets at {BIG_SIZE:,} objects (minutes)")
    p.add_argument("--no-targets", action="store_true",
                   help="skip the target table (builds with both references)")
    for hidden in ("--_phase", "--_lib", "--_path", "--_keys"):
        p.add_argument(hidden, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.objects < 2 or args.lookups < 1 or args.batch < 1 or args.repeats < 1:
        p.error("--objects must be >= 2, --lookups, --batch and --repeats >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args._phase:  # child process of measure_memory()
        print(json.dumps(run_phase(args._phase, args._lib, args._path, args._keys)))
        return 0

    workdir = Path(tempfile.mkdtemp(prefix="shardkit-bench-"))
    try:
        t0 = time.perf_counter()
        shard = make_shard(workdir, args.objects, args.lookups, args.batch, args.seed)
        check_same_values(shard["path"], shard["keys"], shard["many"])
        result: dict[str, Any] = {
            "config": {"objects": args.objects, "lookups": args.lookups,
                       "batch": len(shard["many"]),
                       "repeats": args.repeats, "seed": args.seed,
                       "file_size": shard["file_size"], "build_s": shard["build_s"],
                       "python": platform.python_version(), "cpus": os.cpu_count()},
            "reads": check_reads(shard),
            "speed": measure_speed(shard, args.repeats),
        }
        if args.no_memory:
            result["memory"] = {p: {"shardkit": None, "reference": None} for p in MEMORY_PHASES}
        else:
            result["memory"] = measure_memory(shard)
        result["targets"] = {
            key: {"target": target,
                  "ratio": _ratio(result["speed"][key]["shardkit"],
                                  result["speed"][key]["reference"])}
            for key, target in TARGETS.items()
        }
        for t in result["targets"].values():
            t["status"] = "PASS" if t["ratio"] is not None and t["ratio"] >= t["target"] else "MISS"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if not args.no_targets:
        sizes = (*TARGET_SIZES, BIG_SIZE) if args.big else TARGET_SIZES
        result["issue_targets"] = measure_targets(sizes, args.seed, args.lookups, args.batch,
                                                  args.repeats)
    result["elapsed_s"] = time.perf_counter() - t0

    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(render(result))
        if "issue_targets" in result:
            print("\ntargets, side by side with swh-shard 2.2.1 and swh.perfecthash 1.3.2 "
                  "(files written by each writer; reads on the swh-shard file):")
            print(render_targets(result["issue_targets"]))
        print(f"\ntotal {result['elapsed_s']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
