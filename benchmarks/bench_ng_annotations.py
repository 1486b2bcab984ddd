#!/usr/bin/env python3
"""shardkit's Neuroglancer annotation layers, side by side with neuroglancer 2.41.2 and
ngsidekick 0.0.20.

In one run, with seeded random points (float32 coordinates in a 1000^3 box, a float32 and a
uint32 property, one related segment each):

- writing N points (default 1,000,000) with a 4-level spatial index, sharded: shardkit's
  ``write_annotations`` and ngsidekick's ``write_precomputed_annotations``
  (``num_spatial_levels=4``), each in its own process: wall time and peak RSS (targets:
  shardkit >= 2x faster, <= 0.5x the peak RSS);
- on shardkit's layer: ``get`` of 10,000 random ids, by shardkit (``layer.get``) and by
  neuroglancer's ``AnnotationReader.by_id`` (tensorstore underneath), in CPU time (target
  >= 2x); one box query (a 200^3 box) by both, results compared (target >= 2x);
- ``verify`` of the layer in a fresh process (numpy imported before the clock, as in
  ``bench_amudai.py``): annotations per second of CPU time (target
  >= 1,000,000 annotations/s on one core) and the process's peak RSS; with ``--rss-n M``, the
  same for a second layer of M points written by shardkit, to show that verify's memory does
  not grow with the number of annotations (target: peak RSS at M <= 1.25x the peak at N),
  and the writer's peak RSS at M beside its peak at N;
- ``get`` of one annotation over a local HTTP server: range requests after open (target
  <= 3).

Results read by the readers are compared; a mismatch exits 1. Otherwise the exit code is 0
whatever the numbers: the table marks each target PASS or MISS. Figures depend on the load of
the machine; the ratios are measured side by side in one run.

Run: ``.venv/bin/python benchmarks/bench_ng_annotations.py [--n N] [--rss-n M] [--json]``
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DIMS = {"x": [1, "nm"], "y": [1, "nm"], "z": [1, "nm"]}
PROPS = [{"id": "big", "type": "uint32"}, {"id": "score", "type": "float32"}]

# The peak RSS of a child process is its own VmHWM: ru_maxrss carries the parent's peak
# over fork and exec (Linux), which would count this process's neuroglancer and tensorstore.
PEAK_RSS = r"""
def peak_rss_mb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""

WRITER = PEAK_RSS + r"""
import json, resource, sys, time
import numpy as np
n, which, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
STEP = 65536


def chunk(s):  # points s to s + STEP, seeded per chunk: the input is never whole in
    # memory (in shardkit's run), so the peak RSS is the writer's own
    e = min(n, s + STEP)
    rng = np.random.default_rng([0, s])
    return (rng.uniform(0, 1000, (e - s, 3)).astype(np.float32),
            rng.normal(size=e - s).astype(np.float32),
            rng.integers(0, 2**32, e - s, dtype=np.uint64).astype(np.uint32),
            (np.arange(s, e) % 100_000).astype(np.uint64))


t = time.perf_counter()
if which == "shardkit":
    from shardkit.writers.neuroglancer import write_annotations
    def annotations():  # dicts made a chunk at a time, as a reader of a big input would
        for s in range(0, n, STEP):
            e = min(n, s + STEP)
            pts, sc, bg, sg = (a.tolist() for a in chunk(s))
            for j in range(e - s):
                yield {"id": s + j + 1, "point": pts[j],
                       "properties": {"big": bg[j], "score": sc[j]},
                       "relationships": {"seg": [sg[j]]}}
    anns = annotations()
    write_annotations(out, anns, annotation_type="point",
                      dimensions={"x": [1, "nm"], "y": [1, "nm"], "z": [1, "nm"]},
                      properties=[{"id": "big", "type": "uint32"},
                                  {"id": "score", "type": "float32"}],
                      relationships=["seg"], max_levels=4, limit=n // 500 + 1)
else:
    import pandas as pd
    from ngsidekick.annotations.precomputed import write_precomputed_annotations
    xyz, score, big, seg = (np.concatenate(a) for a in zip(*map(chunk, range(0, n, STEP))))
    df = pd.DataFrame({"x": xyz[:, 0], "y": xyz[:, 1], "z": xyz[:, 2], "big": big,
                       "score": score, "seg": seg},
                      index=pd.Index(np.arange(1, n + 1, dtype=np.uint64), name="id"))
    write_precomputed_annotations(df, ["x", "y", "z"], "point", properties=["big", "score"],
                                  relationships=["seg"], output_dir=out, write_sharded=True,
                                  num_spatial_levels=4, target_chunk_limit=n // 500 + 1)
    print("", file=sys.stderr)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": time.perf_counter() - t,
                  "cpu_seconds": usage.ru_utime + usage.ru_stime,
                  "peak_rss_mb": peak_rss_mb()}))
"""


VERIFY = PEAK_RSS + r"""
import json, sys, time
import numpy  # a dependency, imported before the clock: the checks, not the import, are timed
import shardkit
layer = shardkit.open(sys.argv[1])
t, c = time.perf_counter(), time.process_time()
problems = layer.verify()
print(json.dumps({"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - c,
                  "problems": len(problems), "peak_rss_mb": peak_rss_mb()}))
"""


def run_verify(layer: Path) -> dict[str, Any]:
    """``verify`` of a layer in a fresh process (its peak RSS is verify's own)."""
    proc = subprocess.run([sys.executable, "-c", VERIFY, str(layer)], capture_output=True,
                          text=True, check=False, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"verify failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_writer(which: str, n: int, out: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", WRITER, str(n), which, str(out)],
                          capture_output=True, text=True, check=False, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"{which} writer failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cpu_rate(fn: Any, items: list[Any]) -> float:
    t0 = time.process_time()
    for item in items:
        fn(item)
    return len(items) / max(time.process_time() - t0, 1e-9)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="points (default 1,000,000)")
    ap.add_argument("--gets", type=int, default=10_000)
    ap.add_argument("--rss-n", type=int, default=0,
                    help="also verify a layer of this many points, for verify's peak RSS")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import shardkit

    rows: list[tuple[str, str, str, bool | None]] = []
    results: dict[str, Any] = {"n": args.n}
    with tempfile.TemporaryDirectory(prefix="bench-ng-annotations-") as tmp:
        ours_dir, theirs_dir = Path(tmp, "shardkit"), Path(tmp, "ngsidekick")
        ours = run_writer("shardkit", args.n, ours_dir)
        try:
            theirs: dict[str, Any] | None = run_writer("ngsidekick", args.n, theirs_dir)
        except SystemExit as exc:
            print(exc, file=sys.stderr)
            theirs = None
        results["write"] = {"shardkit": ours, "ngsidekick": theirs}
        if theirs is not None:
            speed = theirs["seconds"] / ours["seconds"]
            mem = ours["peak_rss_mb"] / theirs["peak_rss_mb"]
            rows.append(("write N points, 4 levels: time", f"{ours['seconds']:.1f} s vs "
                         f"{theirs['seconds']:.1f} s", f"{speed:.2f}x (>= 2x)", speed >= 2))
            cpu = theirs["cpu_seconds"] / ours["cpu_seconds"]
            rows.append(("write: CPU time (all threads)", f"{ours['cpu_seconds']:.1f} s vs "
                         f"{theirs['cpu_seconds']:.1f} s", f"{cpu:.2f}x", None))
            rows.append(("write: peak RSS", f"{ours['peak_rss_mb']:.0f} MB vs "
                         f"{theirs['peak_rss_mb']:.0f} MB", f"{mem:.2f}x (<= 0.5x)", mem <= 0.5))

        layer = shardkit.open(ours_dir)
        assert len(layer.spatial) == 4, [lv.grid_shape for lv in layer.spatial]
        rng = random.Random(1)
        ids = [rng.randrange(1, args.n + 1) for _ in range(args.gets)]
        from neuroglancer.read_precomputed_annotations import AnnotationReader

        reader = AnnotationReader(f"file://{ours_dir}/")
        for i in ids[:200]:  # the same values
            a, b = layer.get(i), reader.by_id[i]
            if not (np.array_equal(a.point, b.point) and a.properties["big"] == int(b.props[0])
                    and a.relationships["seg"] == [int(s) for s in b.segments[0]]):
                print(f"mismatch at id {i}", file=sys.stderr)
                return 1
        ours_rate = cpu_rate(layer.get, ids)
        theirs_rate = cpu_rate(lambda i: reader.by_id[i], ids)
        ratio = ours_rate / theirs_rate
        results["get"] = {"shardkit_per_s": ours_rate, "neuroglancer_per_s": theirs_rate}
        rows.append((f"get {args.gets} random ids (CPU)", f"{ours_rate:,.0f}/s vs "
                     f"{theirs_rate:,.0f}/s", f"{ratio:.2f}x (>= 2x)", ratio >= 2))

        lo, hi = np.array([100.0, 300, 500]), np.array([300.0, 500, 700])
        t0 = time.process_time()
        mine = sorted(a.id for a in layer.query(lo, hi))
        t_ours = time.process_time() - t0
        t0 = time.process_time()
        got = sorted(int(a.id) for a in reader.get_within_spatial_bounds(lower_bound=lo,
                                                                          upper_bound=hi))
        t_theirs = time.process_time() - t0
        if mine != got:
            print(f"query mismatch: {len(mine)} vs {len(got)}", file=sys.stderr)
            return 1
        ratio = t_theirs / max(t_ours, 1e-9)
        results["query"] = {"annotations": len(mine), "shardkit_s": t_ours,
                            "neuroglancer_s": t_theirs}
        rows.append((f"box query ({len(mine)} annotations, CPU)", f"{t_ours:.3f} s vs "
                     f"{t_theirs:.3f} s", f"{ratio:.2f}x (>= 2x)", ratio >= 2))

        ver = run_verify(ours_dir)
        per_s = args.n / max(ver["cpu_seconds"], 1e-9)
        results["verify"] = {**ver, "annotations_per_s": per_s}
        rows.append(("verify (CPU, one core)", f"{per_s:,.0f} annotations/s, "
                     f"{ver['problems']} problems", ">= 1,000,000/s", per_s >= 1e6))
        rows.append(("verify: peak RSS", f"{ver['peak_rss_mb']:.0f} MB", "", None))
        if ver["problems"]:
            print(f"verify found {ver['problems']} problems in shardkit's layer", file=sys.stderr)
            return 1
        if args.rss_n:
            big_dir = Path(tmp, "shardkit-rss")
            big_write = run_writer("shardkit", args.rss_n, big_dir)
            results["write_rss"] = {"n": args.rss_n, **big_write}
            rows.append((f"write {args.rss_n:,} points: peak RSS",
                         f"{big_write['peak_rss_mb']:.0f} MB vs {ours['peak_rss_mb']:.0f} MB "
                         f"at N ({big_write['seconds']:.1f} s)", "", None))
            big = run_verify(big_dir)
            grow = big["peak_rss_mb"] / ver["peak_rss_mb"]
            big_rate = args.rss_n / max(big["cpu_seconds"], 1e-9)
            results["verify_rss"] = {"n": args.rss_n, **big, "annotations_per_s": big_rate}
            rows.append((f"verify {args.rss_n:,} points: peak RSS",
                         f"{big['peak_rss_mb']:.0f} MB vs {ver['peak_rss_mb']:.0f} MB at N "
                         f"({big_rate:,.0f}/s)", f"{grow:.2f}x (<= 1.25x)", grow <= 1.25))
            shutil_rmtree(big_dir)

        sys.path.insert(0, str(ROOT / "tests"))
        from httpserver import RangeServer

        srv = RangeServer(Path(tmp))
        try:
            remote = shardkit.open(srv.url("shardkit"))
            remote.get(ids[0])  # opens the shard index of one shard
            srv.reset()
            remote.get(ids[1])
            count = srv.count()
        finally:
            srv.close()
        results["remote_get_requests"] = count
        rows.append(("remote get of one annotation", f"{count} range requests", "(<= 3)",
                     count <= 3))
    if args.json:
        print(json.dumps(results, indent=1))
    width = max(len(r[0]) for r in rows)
    print(f"annotation layers, N = {args.n:,} (figures under the machine's current load)")
    for name, value, target, ok in rows:
        mark = "" if ok is None else ("PASS" if ok else "MISS")
        print(f"  {name:<{width}}  {value:<40} {target:<16} {mark}")
    return 0


def shutil_rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
