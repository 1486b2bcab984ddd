#!/usr/bin/env python3
"""FMPH-GO (MOSAIC maps): shardkit's evaluation and construction, beside swh-mosaic 0.6.1.

Writes a MOSAIC file with the reference ``MosaicCreator`` (one sha256 index, small objects,
seeded) in a temporary directory, then measures in the same run:

* ``fmph.build_with_ranks`` over the file's keys against the whole ``MosaicCreator`` run (the
  map is one part of what the writer does: the MOSAIC writer's target of 0.5x the reference
  leaves the map at most half of the reference's time);
* ``GOFunction.get`` per key against ``MosaicReader.lookup`` per key (a lookup evaluates the
  map and reads the object: the map must take at most half of it for the MOSAIC reader to reach
  1.0x), and ``get_many``;
* ``GOFunction.parse`` (the map's part of opening a file).

The run fails when the reference does not find a sampled object or when the function is not a
bijection onto 0..n-1 (the tests check that it is byte for byte the reference's map). Figures
depend on the machine's load: compare the ratios.

Run: ``.venv/bin/python benchmarks/bench_fmph.py [--objects N] [--lookups N] [--json]``
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swh.mosaic import IdxDescription, MosaicCreator, MosaicReader

from shardkit.hashing import fmph

TARGETS = {  # metric -> (shardkit / reference, at most)
    "build_vs_creator": 0.5,
    "get_vs_lookup": 0.5,
}


def _timed(fn: Callable[[], Any]) -> float:
    gc.disable()
    try:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    finally:
        gc.enable()


def _best(fn: Callable[[], Any], repeat: int = 3) -> float:
    return min(_timed(fn) for _ in range(repeat))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=300_000)
    parser.add_argument("--lookups", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    objects = [b"object %d %d" % (args.seed, i) for i in range(args.objects)]
    keys = [hashlib.sha256(o).digest() for o in objects]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.mosaic"

        def create() -> None:
            with MosaicCreator(path, [IdxDescription.SHA256FMPHGO]) as creator:
                for key, obj in zip(keys, objects, strict=True):
                    creator.add([key], obj)

        creator_s = _timed(create)
        build_s = _best(lambda: fmph.build_with_ranks(keys), 2)
        blob, ranks = fmph.build_with_ranks(keys)
        func = fmph.GOFunction.parse(blob)
        probe = rng.sample(keys, min(args.lookups, len(keys)))
        reader = MosaicReader(path, IdxDescription.SHA256FMPHGO)
        try:
            sample = rng.sample(range(len(keys)), min(2000, len(keys)))
            for i in sample:
                if reader.lookup(keys[i]) != objects[i]:
                    print(f"the reference does not find object {i}", file=sys.stderr)
                    return 1
            lookup = reader.lookup
            lookup_s = _best(lambda: [lookup(k) for k in probe])
        finally:
            reader.close()
        get = func.getter
        get_s = _best(lambda: [get(k) for k in probe])
        get_method_s = _best(lambda: [func.get(k) for k in probe])
        get_many_s = _best(lambda: func.get_many(probe))
        py_probe = probe[:2000]
        get_py_s = _best(lambda: [func._get_py(k) for k in py_probe], 1)
        parse_s = _best(lambda: fmph.GOFunction.parse(blob), 5)
        position = {k: i for i, k in enumerate(keys)}
        want = [int(ranks[position[k]]) for k in probe]
        if sorted(ranks.tolist()) != list(range(len(keys))) or func.get_many(probe) != want \
                or [get(k) for k in probe] != want:
            print("the function is not a bijection onto 0..n-1", file=sys.stderr)
            return 1
    n = max(1, len(probe))
    result = {
        "objects": args.objects,
        "map_bytes": len(blob),
        "bits_per_key": round(len(blob) * 8 / max(1, args.objects), 3),
        "levels": len(func.level_sizes),
        "accelerator": fmph._native is not None,
        "creator_s": round(creator_s, 3),
        "build_s": round(build_s, 3),
        "build_vs_creator": round(build_s / creator_s, 3),
        "lookup_us": round(lookup_s / n * 1e6, 3),
        "get_us": round(get_s / n * 1e6, 3),
        "get_method_us": round(get_method_s / n * 1e6, 3),
        "get_vs_lookup": round(get_s / lookup_s, 3),
        "get_many_us": round(get_many_s / n * 1e6, 3),
        "get_python_us": round(get_py_s / max(1, len(py_probe)) * 1e6, 3),
        "parse_ms": round(parse_s * 1e3, 3),
    }
    result["verdicts"] = {k: ("PASS" if result[k] <= v else "MISS") for k, v in TARGETS.items()}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    width = max(map(len, result))
    for key, value in result.items():
        if key != "verdicts":
            print(f"{key:<{width}}  {value}")
    for key, verdict in result["verdicts"].items():
        print(f"{verdict}  {key} = {result[key]} (target <= {TARGETS[key]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
