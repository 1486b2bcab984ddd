#!/usr/bin/env python3
"""Neuroglancer ``compressed_segmentation`` decoding: shardkit beside tensorstore and the
``compressed-segmentation`` package (the C++ decoder cloud-volume uses), in one run.

Writes a sharded segmentation volume with tensorstore into a temporary folder (256 x 256 x 128
voxels, 64^3 chunks, 8^3 blocks, gzip data; supervoxel-like labels: a few per block, so 0 to
4 bits, as real segmentations are; ``--labels many`` gives 8 to 16 bits instead), then measures
(best of ``--repeat`` runs, one thread each):

- a cutout of the whole volume: ``NgImageDataset.cutout`` against tensorstore's read of the
  same box (``data_copy_concurrency`` 1, no cache). Target: shardkit's time <= 2.5x
  tensorstore's;
- decoding every chunk alone (bytes already in memory): ``decode_compressed_segmentation``
  against ``compressed_segmentation.decompress``. Target: <= 3x the C++ package's time;
- the peak memory (tracemalloc) of decoding one chunk. Target: <= 4x the decoded chunk.

The arrays of the three readers are compared; a mismatch exits 1. Otherwise the exit code is 0
whatever the numbers: the table marks each target PASS or MISS.

Run: ``.venv/bin/python benchmarks/bench_ng_cseg.py [--dtype uint32] [--labels many] [--json]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import shardkit
from shardkit.formats.neuroglancer import decode_compressed_segmentation

SIZE = (256, 256, 128)
CHUNK = [64, 64, 64]
BLOCK = [8, 8, 8]
SPEC = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity", "preshift_bits": 0,
        "minishard_bits": 2, "shard_bits": 1, "minishard_index_encoding": "gzip",
        "data_encoding": "gzip"}


def volume(dtype: str, many: bool, seed: int = 0) -> np.ndarray:
    """``(x, y, z, 1)`` labels: cells of 16 x 16 x 8 voxels with jagged x borders (few labels
    per 8^3 block), or with ``many`` a label per 2 x 2 x 2 voxels (up to 64 per block)."""
    rng = np.random.default_rng(seed)
    cell = (2, 2, 2) if many else (16, 16, 8)
    grid = tuple(n // c + 2 for n, c in zip(SIZE, cell, strict=True))
    high = np.iinfo(dtype).max
    ids = rng.integers(1, high, grid, dtype=dtype, endpoint=True)
    x = (np.arange(SIZE[0])[:, None, None] + rng.integers(0, 3, (SIZE[0], 1, 1))) // cell[0]
    y = np.arange(SIZE[1])[None, :, None] // cell[1]
    z = np.arange(SIZE[2])[None, None, :] // cell[2]
    return np.ascontiguousarray(ids[x, y, z][..., None])


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The shortest wall time of ``repeat`` calls and the last result."""
    out, shortest = None, float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        shortest = min(shortest, time.perf_counter() - t)
    return shortest, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=["uint32", "uint64"], default="uint64")
    parser.add_argument("--labels", choices=["few", "many"], default="few")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    import compressed_segmentation as cseg
    import tensorstore as ts

    tmp = Path(tempfile.mkdtemp(prefix="shardkit-cseg-bench-"))
    try:
        vol = volume(args.dtype, args.labels == "many")
        scale = {"size": list(SIZE), "chunk_size": CHUNK, "resolution": [8, 8, 8],
                 "encoding": "compressed_segmentation",
                 "compressed_segmentation_block_size": BLOCK, "sharding": SPEC}
        store = ts.open({"driver": "neuroglancer_precomputed", "kvstore": f"file://{tmp}/",
                         "create": True, "scale_metadata": scale,
                         "multiscale_metadata": {"type": "segmentation",
                                                 "data_type": args.dtype,
                                                 "num_channels": 1}}).result()
        store[...] = vol
        reader = ts.open({"driver": "neuroglancer_precomputed", "kvstore": f"file://{tmp}/",
                          "context": {"cache_pool": {"total_bytes_limit": 0},
                                      "data_copy_concurrency": {"limit": 1}}}).result()
        ds = shardkit.open(tmp)
        key = next(iter(ds.scales))
        bounds = ds.bounds(key)
        t_ours, ours = best(lambda: ds.cutout(key, bounds), args.repeat)
        t_ts, theirs = best(lambda: np.asarray(reader.read().result()), args.repeat)
        s = ds.scales[key]
        chunks = [(ds.chunk_shape(key, s.position(code)), data) for code, data in s.items()]
        stored = sum(len(d) for _, d in chunks)
        t_dec, decoded = best(lambda: [decode_compressed_segmentation(d, shape, BLOCK, args.dtype)
                                       for shape, d in chunks], args.repeat)
        t_cpp, cpp = best(lambda: [np.asarray(cseg.decompress(d, shape[::-1], np.dtype(args.dtype),
                                                              tuple(BLOCK), order="F"))
                                   for shape, d in chunks], args.repeat)
        same = (np.array_equal(ours, vol) and np.array_equal(theirs, vol)
                and all(np.array_equal(a, b.transpose(3, 2, 1, 0).reshape(a.shape))
                        for a, b in zip(decoded, cpp, strict=True)))
        shape0, data0 = chunks[0]
        tracemalloc.start()
        decode_compressed_segmentation(data0, shape0, BLOCK, args.dtype)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        out_bytes = int(np.prod(shape0)) * np.dtype(args.dtype).itemsize
        ds.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    voxels = int(np.prod(SIZE))
    rows = [
        {"row": "cutout of the whole volume", "shardkit_s": t_ours, "reference": "tensorstore",
         "reference_s": t_ts, "ratio": t_ours / t_ts, "target": "<= 2.5x",
         "ok": t_ours <= 2.5 * t_ts, "shardkit_mvoxels_s": voxels / t_ours / 1e6},
        {"row": f"decode {len(chunks)} chunks", "shardkit_s": t_dec,
         "reference": "compressed_segmentation", "reference_s": t_cpp, "ratio": t_dec / t_cpp,
         "target": "<= 3x", "ok": t_dec <= 3 * t_cpp, "shardkit_mvoxels_s": voxels / t_dec / 1e6},
        {"row": "peak memory, one chunk", "shardkit_bytes": peak, "decoded_bytes": out_bytes,
         "ratio": peak / out_bytes, "target": "<= 4x", "ok": peak <= 4 * out_bytes},
    ]
    report = {"dtype": args.dtype, "labels": args.labels, "size": list(SIZE), "chunk": CHUNK,
              "block": BLOCK, "stored_bytes": stored, "same_arrays": same, "rows": rows}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"{args.dtype}, {args.labels} labels per block, {list(SIZE)} voxels in "
              f"{len(chunks)} chunks of {CHUNK} ({stored} bytes stored), blocks {BLOCK}")
        print(f"{'row':32} {'shardkit':>12} {'reference':>26} {'ratio':>7} {'target':>8}")
        for r in rows:
            if "shardkit_s" in r:
                ours_text = f"{r['shardkit_s'] * 1000:.1f} ms"
                ref_text = f"{r['reference']} {r['reference_s'] * 1000:.1f} ms"
            else:
                ours_text = f"{r['shardkit_bytes'] / 2**20:.1f} MiB"
                ref_text = f"decoded {r['decoded_bytes'] / 2**20:.1f} MiB"
            print(f"{r['row']:32} {ours_text:>12} {ref_text:>26} {r['ratio']:>6.2f}x "
                  f"{r['target']:>8} {'PASS' if r['ok'] else 'MISS'}")
        print("arrays equal:", "yes" if same else "NO")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
