"""``shardkit create --format ng-annotations --metadata JSON OUT INPUT...``: a Neuroglancer
precomputed annotation layer (a folder) from NDJSON annotations.

Each INPUT line is one annotation, as :func:`shardkit.writers.neuroglancer.write_annotations`
takes it: ``{"id": 1, "point": [x, y, z], "properties": {...}, "relationships": {...}}``
(``point_a``/``point_b``, ``center``/``radii`` or ``points`` for the other types). ``--metadata``
holds the layer's fields with the ``info`` file's shapes: ``annotation_type`` and ``dimensions``
(required), ``properties``, ``relationships``, ``lower_bound``, ``upper_bound``, and the
writer's ``sharded`` (true, false, or a spec per index) and ``limit``. The lines are streamed;
the layer is written in a temporary folder beside OUT and renamed when complete (an existing
OUT, once confirmed, is replaced whole).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import ShardkitError
from .common import EXIT_OK, json_object, print_out, progress_bar
from .create_zss import may_write, metadata_object

__all__ = ["OUT_IS_FOLDER", "run"]

OUT_IS_FOLDER = True
_TAKES = {"metadata"}
_FIELDS = {"annotation_type", "dimensions", "properties", "relationships", "lower_bound",
           "upper_bound", "sharded", "limit", "max_levels"}


def _lines(inputs: list[str], where: list[str], progress: Callable[[int], None]
           ) -> Iterator[dict[str, Any]]:
    n = 0
    for name in inputs:
        fh = sys.stdin if name == "-" else open(name, encoding="utf-8")  # noqa: SIM115
        try:
            for i, line in enumerate(fh, 1):
                where[0] = f"{'stdin' if name == '-' else name}:{i}"
                if not line.strip():
                    continue
                value = json_object(line, where[0], "a JSON object (an annotation)")
                n += 1
                if n % 10000 == 0:
                    progress(n)
                yield value
        finally:
            if fh is not sys.stdin:
                fh.close()


def run(args: argparse.Namespace) -> int:
    """Write the layer ``args.shard`` from the NDJSON ``args.inputs``; returns the exit code."""
    from ..writers.neuroglancer import write_annotations
    from .create import refuse_options

    refuse_options(args, _TAKES)
    meta = metadata_object(args.metadata)
    unknown = sorted(set(meta) - _FIELDS)
    if unknown:
        raise ShardkitError(f"--metadata: unknown field(s) {', '.join(unknown)}; known: "
                            f"{', '.join(sorted(_FIELDS))}")
    for need in ("annotation_type", "dimensions"):
        if need not in meta:
            raise ShardkitError(f"--metadata: {need} is required (the info file's field)")
    if os.path.exists(args.shard) and not os.path.isdir(args.shard):
        raise ShardkitError(f"cannot write {args.shard}: a file is there (OUT is a folder)")
    parent = os.path.dirname(os.path.abspath(args.shard))
    if not os.path.isdir(parent):
        raise ShardkitError(f"cannot write {args.shard}: the folder {parent} does not exist")
    if not may_write(args):
        return EXIT_OK
    where = ["(no line read)"]
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(args.shard))}.tmp-",
                           dir=parent)
    try:
        count = [0]

        def counted(progress: Callable[[int], None]) -> Iterator[dict[str, Any]]:
            for ann in _lines(args.inputs, where, progress):
                count[0] += 1
                yield ann

        with progress_bar(args, f"create {args.shard}", " annotations") as progress:
            try:
                info = write_annotations(tmp, counted(progress), **meta)
            except (ValueError, TypeError) as exc:
                raise ShardkitError(f"{where[0]}: {exc}") from None
        old = None
        if os.path.isdir(args.shard):
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(args.shard)}.old-", dir=parent)
            os.rename(args.shard, os.path.join(old, "layer"))
        os.rename(tmp, args.shard)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    levels = len(info.get("spatial") or [])
    data = {"shard": args.shard, "format": "ng-annotations", "created": True,
            "annotations": count[0], "annotation_type": info["annotation_type"],
            "spatial_levels": levels, "sharded": "sharding" in info["by_id"]}
    print_out(args, f"{args.shard}: {count[0]} annotations ({info['annotation_type']}, "
              f"{levels} spatial levels)", data)
    return EXIT_OK
