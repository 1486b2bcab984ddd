#!/usr/bin/env python3
"""Instructions per operation of shardkit's readers, counted by valgrind's callgrind.

Wall-clock time on a shared, loaded machine varies by tens of percent from run to run; the
number of instructions a piece of Python executes does not (with a fixed ``PYTHONHASHSEED``,
the same files and the same interpreter it is the same to a few parts in a million). So this
script compares two versions of shardkit by instructions, not seconds:

1. ``--make DIR`` writes the input files once: fixed-seed ZSS and ZS files made by this
   checkout's writers (20,000 records, small blocks so that lookups cross a three-level
   index), an MDB shard (2,000 files, 200 xorbs of 10 chunks, random hashes from
   ``tests/mdb_inputs.py``, lookup tables), and copies of files from ``tests/data`` (SWH
   ``medium.shard``, the Neuroglancer dataset ``ts_kv_identity_preshift_gzipdata``, Amudai
   ``lz4.amudai.shard``). Both versions then read the same bytes.
2. For each operation, a child interpreter runs under
   ``valgrind --tool=callgrind --collect-atstart=no --toggle-collect=math_fsum``: it opens the
   file, runs the operation once untimed (imports, first-use loading), then runs it K times
   inside ``math.fsum(generator)``, the only call of ``math.fsum`` in the process, so only
   those K runs are counted. The same child with K = 0 counts the wrapper alone; the result is
   ``(Ir(K) - Ir(0)) / K``: instructions per run of the operation. A cyclic garbage
   collection runs (and the heap is frozen) before counting starts.

Operations (one "run" each; ``xN`` says how many calls one run makes):

* SWH: ``open`` (``shardkit.open`` + ``close``), ``get x1000`` (present keys, random order),
  ``get_many 1000``, ``iterate`` (``items()``), ``verify``.
* ZSS and ZS: ``open``, ``lookup x1000`` (``record in f``, present records), ``range x1000``
  (``list(f.iter(a, b))`` spanning about 10 records), ``iterate`` (all records), ``verify``.
* MDB: ``open``, ``file x N`` (every file hash), ``find_chunk x N`` (chunk hashes),
  ``verify``.
* Neuroglancer: ``open`` (``open_dataset``), ``get x N`` (every key, one ``[key]`` each),
  ``get_many`` (all keys), ``verify``.
* Amudai: ``open``, ``iter_batches`` (all columns), ``rows`` (all rows), ``verify``.
* remote: the SWH, ZSS and Neuroglancer files through ``memory://`` fsspec URLs (the remote
  byte source with its block cache, no network): SWH ``open`` and ``get x1000``, ZSS ``open``,
  ``lookup x1000`` and ``iterate``, Neuroglancer ``open_dataset`` + ``get_many`` of every key.

The script runs in whichever Python starts it; ``--python PATH`` runs the children with
another interpreter (another checkout's venv), and ``--compare PATH`` runs both and prints
old, new and their ratio, PASS when new <= 1.05 x old.

Run::

    python benchmarks/instructions.py --make DIR
    python benchmarks/instructions.py --data DIR [--python OTHER/.venv/bin/python] [--json]
    python benchmarks/instructions.py --data DIR --compare OLD/.venv/bin/python [--json]
    python benchmarks/instructions.py --data DIR --only zss,zs

Needs ``valgrind`` on PATH. One full run takes a few minutes per interpreter.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS_DATA = ROOT / "tests" / "data"
COPIES = {
    "swh.shard": TESTS_DATA / "swh" / "medium.shard",
    "ng": TESTS_DATA / "neuroglancer" / "ts_kv_identity_preshift_gzipdata",
    "amudai.shard": TESTS_DATA / "amudai" / "lz4.amudai.shard",
}
RECORDS = 20_000
SEED = 33
TARGET = 1.05
DEFAULT_K = 2


# --- input files ---------------------------------------------------------------------------

def _records() -> list[bytes]:
    rng = random.Random(SEED)
    words = [rng.randbytes(rng.randint(2, 6)).hex().encode() for _ in range(400)]
    out = {b"%s/%s/%08d" % (rng.choice(words), rng.choice(words), rng.randrange(10**8))
           for _ in range(RECORDS)}
    return sorted(out)


def make(data: Path) -> None:
    """Write the input files into ``data`` (fixed seed: the same bytes on every run)."""
    from shardkit.writers.xet_mdb import write_mdb
    from shardkit.writers.zs import write_zs
    from shardkit.writers.zss import write_zss

    data.mkdir(parents=True, exist_ok=True)
    records = _records()
    write_zss(data / "zss.zss", records, codec="zlib", uuid=bytes(range(16)),
              approx_block_size=4096, branching_factor=16)
    write_zs(data / "zs.zs", records, codec="deflate", approx_block_size=4096,
             branching_factor=16, jobs=1)
    sys.path.insert(0, str(ROOT / "tests"))
    from mdb_inputs import random_inputs

    files, xorbs = random_inputs(2000, 200, 10, SEED)
    write_mdb(data / "mdb.shard", files, xorbs)
    for name, src in COPIES.items():
        dst = data / name
        if src.is_dir():
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst)
        else:
            shutil.copyfile(src, dst)


# --- operations (run in the child) ---------------------------------------------------------

Op = Callable[[], Any]


def _sample(items: list[Any], n: int, seed: int = SEED) -> list[Any]:
    rng = random.Random(seed)
    return [items[rng.randrange(len(items))] for _ in range(n)]


def ops_swh(data: Path) -> dict[str, Op]:
    import shardkit

    path = data / "swh.shard"
    s = shardkit.open(path)
    keys = _sample(list(s.keys()), 1000)

    def get() -> None:
        for k in keys:
            s[k]

    return {
        "open": lambda: shardkit.open(path).close(),
        "get x1000": get,
        "get_many 1000": lambda: s.get_many(keys),
        "iterate": lambda: sum(1 for _ in s.items()),
        "verify": lambda: s.verify(),
    }


def _ops_sorted(data: Path, name: str) -> dict[str, Op]:
    import shardkit

    path = data / name
    f = shardkit.open(path)
    records = list(f)
    present = _sample(records, 1000)
    starts = _sample(range(len(records) - 10), 1000, SEED + 1)
    ranges = [(records[i], records[i + 10]) for i in starts]

    def lookup() -> None:
        for r in present:
            r in f  # noqa: B015

    def range_() -> None:
        for a, b in ranges:
            list(f.iter(a, b))

    return {
        "open": lambda: shardkit.open(path).close(),
        "lookup x1000": lookup,
        "range x1000": range_,
        "iterate": lambda: sum(1 for _ in f),
        "verify": lambda: f.verify(),
    }


def ops_zss(data: Path) -> dict[str, Op]:
    return _ops_sorted(data, "zss.zss")


def ops_zs(data: Path) -> dict[str, Op]:
    return _ops_sorted(data, "zs.zs")


def ops_mdb(data: Path) -> dict[str, Op]:
    import shardkit

    path = data / "mdb.shard"
    s = shardkit.open(path)
    files = [f.hash for f in s.files]
    chunks = [c.hash for x in s.xorbs for c in x.chunks][:1000]

    def file() -> None:
        for h in files:
            s.file(h)

    def chunk() -> None:
        for h in chunks:
            s.find_chunk(h)

    return {
        "open": lambda: shardkit.open(path).close(),
        f"file x{len(files)}": file,
        f"find_chunk x{len(chunks)}": chunk,
        "verify": lambda: s.verify(),
    }


def ops_ng(data: Path) -> dict[str, Op]:
    from shardkit.formats.neuroglancer import open_dataset

    path = str(data / "ng")
    d = open_dataset(path)
    keys = sorted(d.keys())

    def get() -> None:
        for k in keys:
            d[k]

    return {
        "open": lambda: open_dataset(path).close(),
        f"get x{len(keys)}": get,
        f"get_many {len(keys)}": lambda: d.get_many(keys),
        "verify": lambda: d.verify(),
    }


def ops_amudai(data: Path) -> dict[str, Op]:
    import shardkit

    path = data / "amudai.shard"
    s = shardkit.open(path)
    return {
        "open": lambda: shardkit.open(path).close(),
        "iter_batches": lambda: sum(1 for _ in s.iter_batches()),
        "rows": lambda: sum(1 for _ in s.rows()),
        "verify": lambda: s.verify(),
    }


def ops_remote(data: Path) -> dict[str, Op]:
    """SWH, ZSS and Neuroglancer through fsspec URLs (``memory://``: the remote byte source,
    its block cache and range coalescing, without a network)."""
    import fsspec

    import shardkit
    from shardkit.formats.neuroglancer import open_dataset

    fs = fsspec.filesystem("memory")
    for name in ("swh.shard", "zss.zss"):
        fs.pipe(f"/ic/{name}", (data / name).read_bytes())
    for p in sorted((data / "ng").iterdir()):
        fs.pipe(f"/ic/ng/{p.name}", p.read_bytes())
    s = shardkit.open("memory://ic/swh.shard")
    keys = _sample(list(s.keys()), 1000)
    z = shardkit.open("memory://ic/zss.zss")
    present = _sample(list(z), 1000)
    ng_keys = sorted(open_dataset("memory://ic/ng").keys())

    def swh_get() -> None:
        for k in keys:
            s[k]

    def zss_lookup() -> None:
        for r in present:
            r in z  # noqa: B015

    def ng_fresh() -> None:
        with open_dataset("memory://ic/ng") as d:
            d.get_many(ng_keys)

    return {
        "swh open": lambda: shardkit.open("memory://ic/swh.shard").close(),
        "swh get x1000": swh_get,
        "zss open": lambda: shardkit.open("memory://ic/zss.zss").close(),
        "zss lookup x1000": zss_lookup,
        "zss iterate": lambda: sum(1 for _ in z),
        f"ng open + get_many {len(ng_keys)}": ng_fresh,
    }


FORMATS: dict[str, Callable[[Path], dict[str, Op]]] = {
    "swh": ops_swh, "zss": ops_zss, "zs": ops_zs, "mdb": ops_mdb, "ng": ops_ng,
    "amudai": ops_amudai, "remote": ops_remote,
}


def child(fmt: str, op: str | None, k: int, data: Path) -> None:
    """Set up ``fmt``; list its operations (``op`` None), or run ``op`` K times in fsum."""
    ops = FORMATS[fmt](data)
    if op is None:
        print(json.dumps(list(ops)))
        return
    fn = ops[op]
    fn()  # imports and first-use loading, outside the count

    def runs() -> Iterator[float]:
        for _ in range(k):
            fn()
        yield 0.0

    gc.collect()
    gc.freeze()
    math.fsum(runs())  # callgrind counts only inside math_fsum (--toggle-collect)


# --- parent ----------------------------------------------------------------------------------

def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)  # each interpreter imports its own checkout's shardkit
    return env


def _child_cmd(python: str, data: Path, fmt: str, op: str | None, k: int) -> list[str]:
    cmd = [python, str(Path(__file__).resolve()), "--child", fmt, "--k", str(k),
           "--data", str(data)]
    return cmd + (["--op", op] if op is not None else [])


def list_ops(python: str, data: Path, fmt: str) -> list[str]:
    out = subprocess.run(_child_cmd(python, data, fmt, None, 0), env=_env(), check=True,
                         capture_output=True, text=True).stdout
    return list(json.loads(out.strip().splitlines()[-1]))


def count(python: str, data: Path, fmt: str, op: str, k: int, keep: Path | None = None) -> int:
    """Instructions callgrind counts inside ``math_fsum`` for K runs of ``op``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
               "--collect-atstart=no", "--toggle-collect=math_fsum",
               *_child_cmd(python, data, fmt, op, k)]
        proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"{fmt} {op}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
        text = out.read_text()
        if keep is not None:
            shutil.copyfile(out, keep)
    m = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
    return int(m.group(1)) if m else 0


def measure(python: str, data: Path, formats: list[str], k: int, jobs: int,
            keep: Path | None = None) -> list[dict[str, Any]]:
    """One row per operation: instructions per run, (Ir(K) - Ir(0)) / K."""
    plan = [(fmt, op) for fmt in formats for op in list_ops(python, data, fmt)]

    def one(item: tuple[str, str]) -> dict[str, Any]:
        fmt, op = item
        tag = re.sub(r"[^a-z0-9]+", "_", f"{fmt}_{op}".lower())
        full = count(python, data, fmt, op, k,
                     keep / f"{tag}.callgrind" if keep is not None else None)
        base = count(python, data, fmt, op, 0)
        print(f"  {fmt:7} {op:18} {(full - base) / k:>16,.0f}", file=sys.stderr, flush=True)
        return {"format": fmt, "operation": op, "k": k, "ir_k": full, "ir_0": base,
                "ir_per_op": (full - base) / k}

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, plan))


def _fmt_int(x: float) -> str:
    return f"{x:,.0f}"


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(c.ljust(w) if i < 2 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths, strict=True))) + " |"
             for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def compare(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_key = {(r["format"], r["operation"]): r for r in old}
    out = []
    for r in new:
        o = by_key.get((r["format"], r["operation"]))
        if o is None:
            continue
        ratio = r["ir_per_op"] / o["ir_per_op"] if o["ir_per_op"] else float("inf")
        out.append({"format": r["format"], "operation": r["operation"],
                    "old_ir": o["ir_per_op"], "new_ir": r["ir_per_op"], "ratio": ratio,
                    "result": "PASS" if ratio <= TARGET else "MISS"})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, help="folder of input files (made by --make)")
    p.add_argument("--make", type=Path, metavar="DIR", help="write the input files into DIR")
    p.add_argument("--python", default=sys.executable,
                   help="interpreter (and so shardkit checkout) to measure; default: this one")
    p.add_argument("--compare", metavar="OLD_PYTHON",
                   help="measure OLD_PYTHON too; print old, new (--python), ratio, PASS/MISS")
    p.add_argument("--only", help="comma-separated formats: " + ",".join(FORMATS))
    p.add_argument("--k", type=int, default=DEFAULT_K, help="runs counted per operation")
    p.add_argument("--jobs", type=int, default=2, help="valgrind processes at once")
    p.add_argument("--keep", type=Path, help="keep the callgrind files of the K runs here "
                   "(with --compare: in its new/ and old/ subfolders)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--op", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.make:
        make(args.make)
        print(f"input files written to {args.make}")
        return 0
    if args.data is None:
        p.error("--data DIR is required (make it first with --make DIR)")
    if args.child:
        child(args.child, args.op, args.k, args.data)
        return 0
    if shutil.which("valgrind") is None:
        p.error("valgrind is not on PATH")
    formats = args.only.split(",") if args.only else list(FORMATS)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    keep_new = keep_old = args.keep
    if args.keep is not None and args.compare is not None:
        keep_new, keep_old = args.keep / "new", args.keep / "old"
        keep_new.mkdir(exist_ok=True)
        keep_old.mkdir(exist_ok=True)
    new = measure(args.python, args.data, formats, args.k, args.jobs, keep_new)
    if args.compare is None:
        if args.json:
            print(json.dumps({"python": args.python, "rows": new}, indent=2))
        else:
            print(table([["format", "operation", "instructions per op"]]
                        + [[r["format"], r["operation"], _fmt_int(r["ir_per_op"])]
                           for r in new]))
        return 0
    old = measure(args.compare, args.data, formats, args.k, args.jobs, keep_old)
    rows = compare(old, new)
    if args.json:
        print(json.dumps({"old_python": args.compare, "new_python": args.python,
                          "target": TARGET, "rows": rows}, indent=2))
    else:
        print(table([["format", "operation", "old Ir", "new Ir", "ratio", "<= 1.05"]]
                    + [[r["format"], r["operation"], _fmt_int(r["old_ir"]),
                        _fmt_int(r["new_ir"]), f"{r['ratio']:.3f}", r["result"]]
                       for r in rows]))
    return sum(r["result"] == "MISS" for r in rows)


if __name__ == "__main__":
    sys.exit(main())
