#!/usr/bin/env python3
"""shardkit's unsharded -> sharded conversion, side by side with tensorstore copying the layer.

Two layers are made in a temporary folder (seeded):

- an unsharded ``raw`` uint8 image scale written by tensorstore (default 256 MiB: 640^3 voxels
  in 64^3 chunks; ``--gib`` for 1 GiB: 1024^3), smooth values plus noise so gzip has work;
- an unsharded skeleton layer of ``--skeletons`` files (default 10,000; the issue's figure is
  100,000), random skeletons of 10..100 vertices with a float32 radius.

Each is converted to the sharded layout with the spec ``shardkit ng spec`` proposes:

- shardkit: ``shard_layer(src, dst, jobs=--jobs)`` (gzip level 6; the image also with
  ``gzip_level=1``);
- tensorstore: image: ``ts.open(sharded spec, create=True).write(ts.open(unsharded))``;
  skeletons: list the ``file`` kvstore and write every value into a
  ``neuroglancer_uint64_sharded`` kvstore in one transaction.

Reported per run: wall time, MB/s of source bytes, files in and out, and peak memory: the
largest sum of RSS over the process and its children (sampled every 20 ms from /proc), in a
fresh interpreter per run. The outputs are checked: tensorstore reads shardkit's sharded image
equal to the source, and shardkit reads the skeletons tensorstore wrote equal to its own.
A mismatch exits 1; otherwise the exit code is 0 and the table marks each target PASS or MISS.

Run: ``.venv/bin/python benchmarks/bench_ngconv.py [--gib] [--skeletons N] [--jobs N] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


# -- the child runs (one conversion per fresh interpreter) ---------------------------------------


def _child(kind: str, who: str, src: str, dst: str, jobs: int) -> dict[str, Any]:
    import tensorstore as ts

    from shardkit.ng.convert import shard_layer

    t0 = time.perf_counter()
    if who.startswith("shardkit"):
        level = 1 if who == "shardkit-level1" else 6
        report = shard_layer(src, dst, jobs=jobs, gzip_level=level)
        spec = next(iter(report.specs.values()))
        out = {"files_out": report.files_out, "spec": spec}
    elif kind == "image":
        source = ts.open({"driver": "neuroglancer_precomputed", "kvstore": f"file://{src}/",
                          "scale_index": 0}).result()
        info = json.loads(Path(src, "info").read_text())
        scale = info["scales"][0]
        spec = json.loads(Path(dst + ".spec").read_text())
        target = ts.open({
            "driver": "neuroglancer_precomputed", "kvstore": f"file://{dst}/",
            "multiscale_metadata": {"type": info["type"], "data_type": info["data_type"],
                                    "num_channels": info["num_channels"]},
            "scale_metadata": {"size": scale["size"], "encoding": "raw",
                               "chunk_size": scale["chunk_sizes"][0],
                               "resolution": scale["resolution"], "sharding": spec},
            "create": True}).result()
        target.write(source).result()
        out = {"files_out": sum(len(f) for _, _, f in os.walk(dst)), "spec": spec}
    else:
        spec = json.loads(Path(dst + ".spec").read_text())
        source = ts.KvStore.open(f"file://{src}/").result()
        target = ts.KvStore.open({"driver": "neuroglancer_uint64_sharded",
                                  "base": f"file://{dst}/", "metadata": spec}).result()
        names = [k for k in source.list().result() if k.isdigit()]
        with ts.Transaction() as txn:
            for name in names:
                key = int(name).to_bytes(8, "big")
                target.with_transaction(txn)[key] = source[name]
        Path(dst, "info").write_text(json.dumps({"@type": "neuroglancer_skeletons",
                                                 "sharding": spec}))
        out = {"files_out": sum(len(f) for _, _, f in os.walk(dst)), "spec": spec}
    out["seconds"] = time.perf_counter() - t0
    return out


def _tree_rss(pid: int) -> int:
    """Bytes of RSS of ``pid`` and all its descendants."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return total


def run(kind: str, who: str, src: Path, dst: Path, jobs: int) -> dict[str, Any]:
    """One conversion in a fresh interpreter; its result plus peak RSS of its process tree."""
    shutil.rmtree(dst, ignore_errors=True)
    cmd = [sys.executable, __file__, "--child", kind, who, str(src), str(dst), str(jobs)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(proc.pid))
            time.sleep(0.02)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    out, _ = proc.communicate()
    done.set()
    thread.join()
    if proc.returncode:
        raise SystemExit(f"{who} {kind} run failed (exit {proc.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_rss"] = peak
    return result


# -- the source layers ----------------------------------------------------------------------------


def make_image(path: Path, side: int, seed: int) -> int:
    import tensorstore as ts

    store = ts.open({
        "driver": "neuroglancer_precomputed", "kvstore": f"file://{path}/",
        "multiscale_metadata": {"type": "image", "data_type": "uint8", "num_channels": 1},
        "scale_metadata": {"size": [side] * 3, "encoding": "raw", "chunk_size": [64, 64, 64],
                           "resolution": [8, 8, 8]},
        "create": True}).result()
    rng = np.random.default_rng(seed)
    x = np.arange(side, dtype=np.uint16)
    for z0 in range(0, side, 64):
        z = np.arange(z0, z0 + 64, dtype=np.uint16)
        slab = (x[:, None, None] + x[None, :, None] // 2 + z[None, None, :] // 3).astype(np.uint8)
        slab += rng.integers(0, 8, slab.shape, dtype=np.uint8)
        store[:, :, z0:z0 + 64, 0] = slab
    return side**3


def make_skeletons(path: Path, count: int, seed: int) -> int:
    path.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    ids = np.unique(rng.integers(1, 2**40, count, dtype=np.uint64))
    total = 0
    for seg in ids.tolist():
        n = int(rng.integers(10, 100))
        data = (np.array([n, n - 1], "<u4").tobytes()
                + (rng.random((n, 3), dtype=np.float32) * 1e4).tobytes()
                + np.stack([np.arange(n - 1), np.arange(1, n)], 1).astype("<u4").tobytes()
                + rng.random(n, dtype=np.float32).tobytes())
        (path / str(seg)).write_bytes(data)
        total += len(data)
    (path / "info").write_text(json.dumps({
        "@type": "neuroglancer_skeletons",
        "vertex_attributes": [{"id": "radius", "data_type": "float32", "num_components": 1}]}))
    return total


def check_image(src: Path, sharded: Path) -> bool:
    import tensorstore as ts

    a = ts.open({"driver": "neuroglancer_precomputed", "kvstore": f"file://{src}/"}).result()
    b = ts.open({"driver": "neuroglancer_precomputed", "kvstore": f"file://{sharded}/"}).result()
    step = 128
    return all(np.array_equal(a[:, :, z:z + step].read().result(),
                              b[:, :, z:z + step].read().result())
               for z in range(0, a.shape[2], step))


def check_skeletons(ours: Path, theirs: Path) -> bool:
    from shardkit.formats.neuroglancer import open_dataset

    a, b = open_dataset(ours), open_dataset(theirs)
    keys = sorted(a.keys())
    return keys == sorted(b.keys()) and all(a[k] == b[k] for k in keys[:: max(1, len(keys)
                                                                               // 2000)])


# -- main -------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", action="store_true", help="a 1 GiB image (default 256 MiB)")
    parser.add_argument("--skeletons", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, who, src, dst, jobs = args.child
        print(json.dumps(_child(kind, who, src, dst, int(jobs))))
        return 0

    from shardkit.ng.convert import plan_spec

    tmp = Path(tempfile.mkdtemp(prefix="bench-ngconv-"))
    results: dict[str, Any] = {"jobs": args.jobs}
    ok = True
    try:
        side = 1024 if args.gib else 640
        image = tmp / "image"
        results["image_bytes"] = make_image(image, side, args.seed)
        results["image_files_in"] = len(os.listdir(image / "8_8_8"))
        spec = plan_spec(image)["8_8_8"].spec.to_dict()
        (tmp / "image-ts.spec").write_text(json.dumps(spec))
        results["image_spec"] = spec
        results["image_shardkit"] = run("image", "shardkit", image, tmp / "image-sk", args.jobs)
        results["image_tensorstore"] = run("image", "tensorstore", image, tmp / "image-ts",
                                           args.jobs)
        results["image_shardkit_level1"] = run("image", "shardkit-level1", image,
                                               tmp / "image-sk1", args.jobs)
        ok &= check_image(image, tmp / "image-sk")
        skel = tmp / "skel"
        results["skeleton_bytes"] = make_skeletons(skel, args.skeletons, args.seed)
        results["skeleton_files_in"] = len(os.listdir(skel)) - 1
        spec = plan_spec(skel)[""].spec.to_dict()
        (tmp / "skel-ts.spec").write_text(json.dumps(spec))
        results["skeleton_spec"] = spec
        results["skeleton_shardkit"] = run("skeleton", "shardkit", skel, tmp / "skel-sk",
                                           args.jobs)
        results["skeleton_tensorstore"] = run("skeleton", "tensorstore", skel, tmp / "skel-ts",
                                              args.jobs)
        ok &= check_skeletons(tmp / "skel-sk", tmp / "skel-ts")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results["outputs_equal"] = ok
    if args.json:
        print(json.dumps(results, indent=1))
        return 0 if ok else 1
    mb = 1 << 20
    rows = []
    for kind, size_key in (("image", "image_bytes"), ("skeleton", "skeleton_bytes")):
        sk, ts_ = results[f"{kind}_shardkit"], results[f"{kind}_tensorstore"]
        sk_rate = results[size_key] / mb / sk["seconds"]
        ts_rate = results[size_key] / mb / ts_["seconds"]
        rows.append((f"{kind}: MB/s", f"{sk_rate:.1f}", f"{ts_rate:.1f}", sk_rate / ts_rate,
                     "PASS" if sk_rate >= ts_rate else "MISS", ">= 1.0x tensorstore"))
        rows.append((f"{kind}: peak RSS MB", f"{sk['peak_rss'] / mb:.0f}",
                     f"{ts_['peak_rss'] / mb:.0f}", sk["peak_rss"] / ts_["peak_rss"],
                     "PASS" if sk["peak_rss"] <= ts_["peak_rss"] else "MISS",
                     "<= 1.0x tensorstore"))
        if kind == "image":
            fast = results[size_key] / mb / results["image_shardkit_level1"]["seconds"]
            rows.append(("image, --gzip-level 1: MB/s", f"{fast:.1f}", f"{ts_rate:.1f}",
                         fast / ts_rate, "PASS" if fast >= ts_rate else "MISS",
                         ">= 1.0x tensorstore"))
        rows.append((f"{kind}: files in -> out",
                     f"{results[f'{kind}_files_in']} -> {sk['files_out']}",
                     f"{results[f'{kind}_files_in']} -> {ts_['files_out']}", None, "", ""))
    print(f"image {results['image_bytes'] / mb:.0f} MiB, spec {results['image_spec']}")
    print(f"skeletons {results['skeleton_files_in']} ({results['skeleton_bytes'] / mb:.1f} MiB), "
          f"spec {results['skeleton_spec']}; jobs {args.jobs}")
    print(f"{'metric':<28} {'shardkit':>14} {'tensorstore':>14} {'ratio':>7}  target")
    for name, a, b, ratio, verdict, target in rows:
        r = f"{ratio:.2f}" if ratio is not None else ""
        print(f"{name:<28} {a:>14} {b:>14} {r:>7}  {verdict} {target}".rstrip())
    print("outputs equal: " + ("yes" if ok else "NO"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
