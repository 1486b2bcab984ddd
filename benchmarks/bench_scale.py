#!/usr/bin/env python3
"""Memory at production scale: ``verify``, iteration and ``len`` of large shards, every format.

For each format the script makes (once; reused between runs) a small and a large file, then
runs every step on each file in a fresh interpreter and reports its wall time and its peak
RSS. The target (issue 20): the peak of ``verify`` and of iteration does not grow with the
file. Sizes:

============  =================  ===========================  =======================
format        small              large                        made by
============  =================  ===========================  =======================
ZSS           1,000,000 records  20,000,000 records (~1 GB)   ``ZssWriter`` (zlib 1)
ZS            as ZSS, when ``shardkit.formats.zs`` and ``shardkit.writers.zs`` exist
Neuroglancer  500,000 chunks     10,000,000 chunks (~1.1 GB)  see ``make_ng``
Amudai        5,000,000 rows     100,000,000 rows (~1.2 GB)   ``write_amudai``
Xet MDB       10,000 files       125,000 files (the 64 MiB    ``build_mdb``
                                 shard target)
============  =================  ===========================  =======================

The Amudai files are written by the streaming writer from a generator of stripes, and read
by ``iter_batches`` (column batches as numpy arrays, the API of a full scan). With
``$AMUDAI_CMD`` naming the reference's ``amudai-cmd``, each Amudai file is also read by it
(``amudai-cmd consume``, which decodes every record) beside our iteration, measured the same
way, as the other references are (see :func:`reference`).

A Neuroglancer shard of 10 million chunks is written here with numpy (the writer takes a
dict of every value, which at that size would measure the generator, not the reader); the
layout is the writer's, and the script first checks that it writes the same bytes as
``shardkit.writers.neuroglancer.build_shard`` for 2,000 chunks.

How a step is measured: the parent starts a small wrapper interpreter, the wrapper starts the
step's interpreter and waits for it, then reads ``resource.getrusage(RUSAGE_CHILDREN)``: its
``ru_maxrss`` is the peak RSS of that one step (the wrapper has no other child; a fresh
interpreter started from a small one does not inherit a large parent's high-water mark).
Wall time covers the whole child: interpreter start, imports, open, the step. Peak RSS counts
the pages of a memory-mapped file the step has resident, as the operating system does.

Targets, PASS/MISS per format and step: peak RSS of the large file <= 1.25x the small file's
(``--max-growth``). Then, unless ``--only`` leaves ``swh`` out, the table of
``benchmarks/scale_swh.py`` follows (its own targets, its files in ``SCRATCH/swh``; ``--big``
is passed to it).

Run (under ``nice`` on a shared machine; the first run makes the files, several minutes)::

    python benchmarks/bench_scale.py --scratch /path/with/10GB [--big] [--only zss,ng] [--json]

Exit code: the number of MISS rows (0 when every target is met); a step that fails stops
the run with its error.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MAX_GROWTH = 1.25
NG_SPEC = {"@type": "neuroglancer_uint64_sharded_v1", "preshift_bits": 0, "hash": "identity",
           "minishard_bits": 10, "shard_bits": 0, "minishard_index_encoding": "gzip",
           "data_encoding": "gzip"}
SIZES: dict[str, tuple[int, int, str]] = {  # format: (small, large, unit)
    "zss": (1_000_000, 20_000_000, "records"),
    "zs": (1_000_000, 20_000_000, "records"),
    "ng": (500_000, 10_000_000, "chunks"),
    "amudai": (5_000_000, 100_000_000, "rows"),
    "mdb": (10_000, 125_000, "files"),
}
STEPS = ("open", "len", "verify", "iterate")

_WRAPPER = """
import json, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "wall_s": wall, "peak_kib": ru.ru_maxrss,
                  "cpu_s": ru.ru_utime + ru.ru_stime, "out": p.stdout[-4000:],
                  "err": p.stderr[-4000:]}))
"""


# -- making the files ---------------------------------------------------------------------------


def _records(lo: int, m: int, rng: Any) -> list[bytes]:
    """Records ``lo .. lo+m-1``: an 8-byte big-endian counter (sorted) + 48 random bytes."""
    import numpy as np

    rows = np.empty((m, 56), np.uint8)
    rows[:, :8] = np.arange(lo, lo + m, dtype=">u8").view(np.uint8).reshape(m, 8)
    rows[:, 8:] = rng.integers(0, 256, (m, 48), dtype=np.uint8)
    raw = rows.tobytes()
    return [raw[i : i + 56] for i in range(0, len(raw), 56)]


def make_zss(path: Path, n: int) -> None:
    """``n`` sorted 56-byte records, zlib level 1 (random bytes: the file is ~1 byte more per
    record than the records)."""
    import numpy as np

    from shardkit.writers.zss import ZssWriter

    rng = np.random.default_rng(1)
    with open(path, "wb") as fh, ZssWriter(fh, codec="zlib", compress_level=1) as w:
        for lo in range(0, n, 100_000):
            w.add_many(_records(lo, min(100_000, n - lo), rng))


def make_zs(path: Path, n: int) -> None:
    """As :func:`make_zss`, with the ZS writer (``write_zs(path, records, ...)``), deflate
    level 1 (ZS's default, lzma, would take most of an hour on 1 GB of random records)."""
    import numpy as np

    from shardkit.writers import zs  # type: ignore[attr-defined]

    rng = np.random.default_rng(1)

    def gen() -> Any:
        for lo in range(0, n, 100_000):
            yield from _records(lo, min(100_000, n - lo), rng)

    zs.write_zs(path, gen(), codec="deflate", level=1)


def _ng_pieces(n: int, value: bytes, fh: Any) -> None:
    """One shard of chunk ids ``1..n`` under :data:`NG_SPEC`, every value ``value``
    (gzipped), in the writer's layout: shard index, data minishard by minishard in ascending
    id order, then the gzipped minishard indices."""
    import numpy as np

    from shardkit.writers.neuroglancer import _gzip

    stored = _gzip(value)
    m_count = 1 << NG_SPEC["minishard_bits"]
    ids = np.arange(1, n + 1, dtype=np.uint64)
    minis = ids & np.uint64(m_count - 1)
    counts = np.bincount(minis.astype(np.int64), minlength=m_count)
    size = len(stored)
    fh.write(bytes(16 * m_count))
    tables = []
    pos = 0
    for m in range(m_count):
        k = int(counts[m])
        if not k:
            continue
        own = ids[minis == np.uint64(m)]
        offsets = np.zeros(k, np.uint64)
        offsets[0] = pos
        table = np.stack([np.diff(own, prepend=np.uint64(0)), offsets,
                          np.full(k, size, np.uint64)]).astype("<u8").tobytes()
        tables.append((m, _gzip(table)))
        fh.write(stored * k)
        pos += size * k
    entries = np.zeros((m_count, 2), "<u8")
    for m, table in tables:
        entries[m] = (pos, pos + len(table))
        fh.write(table)
        pos += len(table)
    fh.seek(0)
    fh.write(entries.tobytes())


def _ng_value() -> bytes:
    import numpy as np

    return np.random.default_rng(2).integers(0, 256, 96, dtype=np.uint8).tobytes()


def check_ng_generator() -> None:
    """The generator writes the bytes of the library's writer (2,000 chunks)."""
    import io

    from shardkit.writers.neuroglancer import build_shard

    value = _ng_value()
    buf = io.BytesIO()
    _ng_pieces(2000, value, buf)
    want = build_shard({i: value for i in range(1, 2001)}, NG_SPEC)
    if buf.getvalue() != want:
        raise SystemExit("bench_scale: the Neuroglancer generator differs from build_shard")


def make_ng(path: Path, n: int) -> None:
    """A skeleton dataset folder: ``info`` and one shard ``0.shard`` of ``n`` chunks."""
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "0.shard", "wb") as fh:
        _ng_pieces(n, _ng_value(), fh)
    (path / "info").write_text(json.dumps({"@type": "neuroglancer_skeletons",
                                           "sharding": NG_SPEC}))


def make_amudai(path: Path, n: int) -> None:
    """A single-file shard of ``n`` rows in stripes of 10 million: an Int64 and an Int32
    column (small values, Plain: 12 bytes a row), written by the streaming writer from a
    generator of stripes of numpy arrays (one stripe in memory at a time)."""
    import numpy as np

    from shardkit.writers.amudai import field, write_amudai

    per = 10_000_000

    def stripes() -> Any:
        for lo in range(0, n, per):
            col = np.arange(lo, lo + min(per, n - lo), dtype=np.int64) % 251
            yield {"a": col, "b": col}

    write_amudai(path, [field("a", "Int64"), field("b", "Int32")], stripes(),
                 compression="plain")


def make_mdb(path: Path, n: int) -> None:
    """``n`` files of 1 or 2 terms over ``n // 2`` xorbs of 1 to 16 small chunks, every hash
    real (the test inputs' ``hashed_inputs``): a shard ``verify`` finds sound."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from mdb_inputs import hashed_inputs

    from shardkit.writers.xet_mdb import build_mdb

    files, xorbs, _ = hashed_inputs(1, max(1, n // 2), n, max_piece=64, max_pieces=16,
                                    max_terms=2)
    path.write_bytes(build_mdb(files, xorbs))


MAKERS: dict[str, Callable[[Path, int], None]] = {
    "zss": make_zss, "zs": make_zs, "ng": make_ng, "amudai": make_amudai, "mdb": make_mdb}
SUFFIX = {"zss": ".zss", "zs": ".zs", "ng": "", "amudai": ".amudai.shard", "mdb": ".mdb"}


def target_path(scratch: Path, fmt: str, n: int) -> Path:
    return scratch / f"{fmt}-{n}{SUFFIX[fmt]}"


def size_of(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir())
    return path.stat().st_size


# -- the steps (run in the child) ----------------------------------------------------------------


def run_step(fmt: str, step: str, path: str) -> dict[str, Any]:
    """One step on one file; returns what it found (counts, problems)."""
    import shardkit

    s = shardkit.open(path)
    out: dict[str, Any] = {}
    if step == "open":
        out["opened"] = type(s).__name__
    elif step == "len":
        out["len"] = len(s)
    elif step == "verify":
        problems = s.verify()
        out["problems"] = len(problems)
        out["first"] = [str(p) for p in problems[:2]]
    elif step == "iterate":
        count = total = 0
        if fmt == "ng":
            for _k, v in s.items():
                count += 1
                total += len(v)
        elif fmt in ("zss", "zs"):
            for rec in s:
                count += 1
                total += len(rec)
        elif fmt == "mdb":
            for _h, f in s.items():
                count += 1
                total += len(f.terms)
        elif fmt == "amudai":  # the full scan's API: column batches, numpy for numbers
            for batch in s.iter_batches(batch_size=1 << 16):
                count += len(batch["a"])
                total += int(batch["a"].sum())
        out["count"], out["total"] = count, total
    s.close()
    return out


# -- the references (each in its own interpreter, measured as ours are) ----------------------

#: tensorstore's ``neuroglancer_uint64_sharded`` kvstore over the layer: ``len`` lists every
#: key; ``iterate`` lists them and reads every value, 4,096 reads in flight at a time.
_TS_SCRIPT = """
import json, sys
import tensorstore as ts
step, path = sys.argv[1], sys.argv[2]
with open(path + "/info") as fh:
    spec = json.load(fh)["sharding"]
kv = ts.KvStore.open({"driver": "neuroglancer_uint64_sharded", "base": "file://" + path + "/",
                      "metadata": spec}).result()
keys = kv.list().result()
out = {"len": len(keys)}
if step == "iterate":
    count = total = 0
    for lo in range(0, len(keys), 4096):
        for f in [kv.read(k) for k in keys[lo : lo + 4096]]:
            count += 1
            total += len(f.result().value)
    out = {"count": count, "total": total}
print(json.dumps(out))
"""


def zs_reference() -> list[str] | None:
    """The ``zs`` 0.10.0 command (``$ZS_PYTHON -m zs``, or ``zs`` on PATH), or None."""
    exe = os.environ.get("ZS_PYTHON")
    if exe:
        return [exe, "-m", "zs"]
    found = shutil.which("zs")
    return [found] if found else None


def reference(fmt: str, step: str, path: Path) -> tuple[str, list[str] | None, str]:
    """The reference's name, its command for ``step`` on ``path`` (None: no such step
    there), and why not."""
    if fmt == "zs":
        zs = zs_reference()
        cmds = {"verify": ["validate", "-j", "1", str(path)],
                "iterate": ["dump", "-o", os.devnull, str(path)]}
        if zs is None:
            return "zs 0.10.0", None, "not installed (set ZS_PYTHON)"
        return ("zs 0.10.0", [*zs, *cmds[step]] if step in cmds else None,
                "no such command")
    if fmt == "ng":
        if importlib.util.find_spec("tensorstore") is None:
            return "tensorstore", None, "not installed"
        if step not in ("len", "iterate"):
            return "tensorstore", None, "the kvstore has no such step"
        return "tensorstore", [sys.executable, "-c", _TS_SCRIPT, step, str(path)], ""
    if fmt == "amudai":  # consume: the subcommand that decodes every record
        cmd = os.environ.get("AMUDAI_CMD")
        if not cmd or not os.access(cmd, os.X_OK):
            return "amudai-cmd", None, "not installed (set AMUDAI_CMD to its path)"
        return ("amudai-cmd", [cmd, "consume", str(path)] if step == "iterate" else None,
                "only iteration (consume)")
    if fmt == "mdb":
        return "hf-xet", None, "hf-xet has no Python API that reads a shard"
    if fmt == "zss":
        return "zss (draft)", None, "the draft's reader is not released"
    return "", None, "no reference"


# -- the parent ----------------------------------------------------------------------------------


def measure(fmt: str, step: str, path: Path, command: list[str] | None = None
            ) -> dict[str, Any]:
    """One step in a fresh interpreter (ours, or ``command``: a reference's) under the
    wrapper: wall time, CPU time, peak RSS and what it printed last."""
    child = command or [sys.executable, __file__, "--child", fmt, step, str(path)]
    cmd = [sys.executable, "-c", _WRAPPER, *child]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE.parent / "src"),
                                                    env.get("PYTHONPATH", "")) if p)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if p.returncode:
        raise RuntimeError(f"wrapper failed: {p.stderr[-2000:]}")
    r = json.loads(p.stdout)
    if r["rc"]:
        raise RuntimeError(f"{fmt} {step} {path.name}: exit {r['rc']}: {r['err']}")
    last = (r.pop("out").strip().splitlines() or [""])[-1]
    r["result"] = json.loads(last) if last.startswith("{") else {"said": last[:60]}
    r.pop("err")
    r["peak_mib"] = r.pop("peak_kib") / 1024
    return r


def ensure(scratch: Path, fmt: str, n: int, log: Callable[[str], None]) -> Path:
    path = target_path(scratch, fmt, n)
    if path.exists():
        return path
    log(f"making {path.name} ...")
    t = time.perf_counter()
    tmp = path.with_name(path.name + ".part")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE.parent / "src"),
                                                    env.get("PYTHONPATH", "")) if p)
    subprocess.run([sys.executable, __file__, "--make", fmt, str(n), str(tmp)], check=True,
                   env=env)
    tmp.rename(path)
    log(f"  {size_of(path) / 2**20:,.0f} MiB in {time.perf_counter() - t:.0f} s")
    return path


def available(fmt: str) -> str | None:
    """Why ``fmt`` cannot be measured here, or None."""
    if fmt == "zs":
        if importlib.util.find_spec("shardkit.formats.zs") is None:
            return "shardkit.formats.zs does not exist on this branch"
        if importlib.util.find_spec("shardkit.writers.zs") is None:
            return "no ZS writer (shardkit.writers.zs.write_zs)"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scratch", type=Path,
                    default=Path(os.environ.get("SHARDKIT_SCALE_DIR",
                                                Path(tempfile.gettempdir(), "shardkit-scale"))),
                    help="folder for the generated files, reused between runs (about 5 GB; "
                         "default $SHARDKIT_SCALE_DIR or <tmp>/shardkit-scale)")
    ap.add_argument("--only", default="zss,zs,ng,amudai,mdb,swh",
                    help="comma-separated formats (zss, zs, ng, amudai, mdb, swh: the last "
                         "runs benchmarks/scale_swh.py, its inputs and shards in SCRATCH/swh)")
    ap.add_argument("--steps", default=",".join(STEPS), help="comma-separated steps")
    ap.add_argument("--small-only", action="store_true",
                    help="the small files only (a quick check of the script)")
    ap.add_argument("--big", action="store_true", help="passed to scale_swh.run (50M objects)")
    ap.add_argument("--max-growth", type=float, default=MAX_GROWTH)
    ap.add_argument("--no-references", action="store_true",
                    help="do not run the references (zs validate/dump, tensorstore, "
                         "amudai-cmd consume) beside ours")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", nargs=3, metavar=("FMT", "STEP", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--make", nargs=3, metavar=("FMT", "N", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(run_step(*args.child)))
        return 0
    if args.make:
        fmt, n, path = args.make
        MAKERS[fmt](Path(path), int(n))
        return 0

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    args.scratch.mkdir(parents=True, exist_ok=True)
    check_ng_generator()
    steps = [s for s in args.steps.split(",") if s]
    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    only = [f for f in args.only.split(",") if f]
    for fmt in [f for f in only if f != "swh"]:
        why = available(fmt)
        if why:
            skipped[fmt] = why
            continue
        small, large, unit = SIZES[fmt]
        for label, n in (("small", small), ("large", large))[: 1 if args.small_only else 2]:
            path = ensure(args.scratch, fmt, n, log)
            for step in steps:
                log(f"{fmt} {label} {step} ...")
                r = measure(fmt, step, path)
                rows.append({"format": fmt, "file": label, "n": n, "unit": unit, "by": "shardkit",
                             "mib": size_of(path) / 2**20, "step": step, **r})
                if args.no_references:
                    continue
                name, command, why = reference(fmt, step, path)
                if command is None:
                    if step in ("verify", "iterate"):  # the steps a reader is judged by
                        skipped[f"{fmt} {step} reference"] = f"{name}: {why}" if name else why
                    continue
                log(f"{fmt} {label} {step} ({name}) ...")
                r = measure(fmt, step, path, command)
                rows.append({"format": fmt, "file": label, "n": n, "unit": unit, "by": name,
                             "mib": size_of(path) / 2**20, "step": step, **r})
    verdicts = []
    for fmt in {r["format"] for r in rows}:
        for step in steps:
            got = {r["file"]: r for r in rows
                   if r["format"] == fmt and r["step"] == step and r["by"] == "shardkit"}
            if "small" in got and "large" in got:
                g = got["large"]["peak_mib"] / got["small"]["peak_mib"]
                ref = [r for r in rows if r["format"] == fmt and r["step"] == step
                       and r["by"] != "shardkit" and r["file"] == "large"]
                verdicts.append({"format": fmt, "step": step,
                                 "small_mib": got["small"]["peak_mib"],
                                 "large_mib": got["large"]["peak_mib"], "growth": g,
                                 "status": "PASS" if g <= args.max_growth else "MISS",
                                 "reference": (f"{ref[0]['by']}: {ref[0]['peak_mib']:,.0f} MiB, "
                                               f"{ref[0]['wall_s']:,.1f} s (ours "
                                               f"{got['large']['wall_s']:,.1f} s)")
                                 if ref else ""})
    order = {f: i for i, f in enumerate(SIZES)}
    verdicts.sort(key=lambda v: (order[v["format"]], steps.index(v["step"])))
    misses = sum(v["status"] == "MISS" for v in verdicts)
    if args.json:
        print(json.dumps({"rows": rows, "targets": verdicts, "skipped": skipped}, indent=2))
    else:
        print(f"shardkit at scale: each step in a fresh interpreter; python "
              f"{sys.version.split()[0]}, {os.cpu_count()} cpus, load "
              f"{os.getloadavg()[0]:.1f}")
        print(f"{'format':<8}{'file':<7}{'size':>14} {'unit':<8}{'MiB':>8}  {'step':<8}"
              f"{'by':<12}{'wall s':>8}{'CPU s':>8}{'peak RSS MiB':>14}  result")
        for r in rows:
            res = ", ".join(f"{k}={v}" for k, v in r["result"].items() if k != "first")
            print(f"{r['format']:<8}{r['file']:<7}{r['n']:>14,} {r['unit']:<8}{r['mib']:>8,.0f}"
                  f"  {r['step']:<8}{r['by']:<12}{r['wall_s']:>8.1f}{r['cpu_s']:>8.1f}"
                  f"{r['peak_mib']:>14,.1f}  {res}")
        print(f"\ntargets: peak RSS of the large file <= {args.max_growth}x the small file's")
        print(f"{'format':<8}{'step':<9}{'small MiB':>10}{'large MiB':>10}{'growth':>8}  "
              "status  reference on the large file")
        for v in verdicts:
            print(f"{v['format']:<8}{v['step']:<9}{v['small_mib']:>10,.1f}"
                  f"{v['large_mib']:>10,.1f}{v['growth']:>7.2f}x  {v['status']:<6}  "
                  f"{v['reference']}")
        for fmt, why in skipped.items():
            print(f"{fmt}: skipped: {why}")
    if "swh" in only and (HERE / "scale_swh.py").exists():
        sys.path.insert(0, str(HERE))
        import scale_swh  # type: ignore[import-not-found]

        # with --json, stdout stays one JSON document: the SWH table goes to stderr
        misses += int(scale_swh.run(args.big, wd=str(args.scratch / "swh"),
                                    out=sys.stderr if args.json else None))
    return misses


if __name__ == "__main__":
    sys.exit(main())
