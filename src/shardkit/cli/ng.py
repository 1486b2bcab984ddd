"""``shardkit ng spec|shard|unshard``: the Neuroglancer conversion commands.

Exit codes as for every shardkit command: 0 success, 2 bad usage or an unreadable layer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..errors import ShardkitError
from ..ng import DEFAULT_MINISHARD_INDEX_BYTES, DEFAULT_SHARD_BYTES, DEFAULT_SHARD_INDEX_BYTES
from ..render import to_json
from .common import (
    EXIT_OK,
    positive_byte_count,
    progress_bar,
    report_error,
    report_internal_error,
)

__all__ = ["add_ng_parser", "add_parser", "run_ng"]


def _size(text: str) -> int:
    """A byte count of at least 1: ``1073741824``, ``512M``, ``1G``, ``64KiB``... (the
    CLI's one parser, :func:`shardkit.cli.common.byte_count`)."""
    return positive_byte_count(text)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable JSON output")
    p.add_argument("--debug", action="store_true", help="show tracebacks")


def _add_targets(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("targets of the parameter chooser")
    g.add_argument("--shard-bytes", type=_size, default=DEFAULT_SHARD_BYTES, metavar="SIZE",
                   help="maximum bytes per shard file (default 1G; image scales count "
                        "uncompressed chunks)")
    g.add_argument("--minishard-index-bytes", type=_size, default=DEFAULT_MINISHARD_INDEX_BYTES,
                   metavar="SIZE", help="maximum minishard index size, 24 bytes per key "
                                        "(default 32K)")
    g.add_argument("--shard-index-bytes", type=_size, default=DEFAULT_SHARD_INDEX_BYTES,
                   metavar="SIZE", help="maximum shard index size, 16 bytes per minishard "
                                        "(default 8K)")


def _add_runner(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", metavar="SRC", help="the layer to read (folder or fsspec URL)")
    p.add_argument("dst", metavar="DST", help="where to write (folder or fsspec URL)")
    p.add_argument("--scale", action="append", metavar="KEY",
                   help="convert only this image scale (repeatable; default all)")
    p.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1), metavar="N",
                   help="local worker processes (default min(4, CPUs))")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="run the tasks on this Dask scheduler (needs dask.distributed)")
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show progress on stderr (default: when stderr is a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false")


def add_parser(sub: Any, common: argparse.ArgumentParser | None = None) -> None:
    """Register ``shardkit ng ...`` (``common`` unused: the actions take their own options)."""
    add_ng_parser(sub)


def add_ng_parser(sub: Any) -> None:
    """Register ``shardkit ng ...`` on the top-level subparsers."""
    ng = sub.add_parser("ng", help="Neuroglancer: choose sharding, shard and unshard layers",
                        description="Neuroglancer precomputed layers: propose sharding "
                                    "parameters, convert unsharded <-> sharded.")
    ng.set_defaults(run=run_ng)
    ngsub = ng.add_subparsers(dest="ng_command", metavar="ACTION", required=True)

    p = ngsub.add_parser(
        "spec", help="propose a sharding spec",
        description="Propose a sharding spec from a volume's geometry (--size, --chunk), a "
                    "number of segment ids (--keys), or an existing unsharded layer (LAYER).",
        epilog="example: shardkit ng spec --size 40960 40960 990 --chunk 128 128 20 --explain")
    _add_common(p)
    p.add_argument("layer", nargs="?", metavar="LAYER",
                   help="an unsharded layer (folder or URL): one proposal per scale")
    p.add_argument("--size", nargs=3, type=int, metavar=("X", "Y", "Z"), help="volume size")
    p.add_argument("--chunk", nargs=3, type=int, metavar=("X", "Y", "Z"), help="chunk size")
    p.add_argument("--data-type", default="uint8", help="voxel type (default uint8)")
    p.add_argument("--channels", type=int, default=1, help="channels (default 1)")
    p.add_argument("--encoding", default="raw",
                   help="chunk encoding: raw, jpeg, png, compressed_segmentation...")
    p.add_argument("--chunk-bytes", type=_size, metavar="SIZE",
                   help="bytes per stored chunk (default: uncompressed)")
    p.add_argument("--keys", type=int, metavar="N", help="number of segment ids (hashed)")
    p.add_argument("--total-bytes", type=_size, metavar="SIZE",
                   help="total bytes of the objects (hashed)")
    p.add_argument("--min-shards", type=int, default=1, metavar="N",
                   help="at least this many shard files (hashed)")
    p.add_argument("--explain", action="store_true", help="say why")
    _add_targets(p)

    p = ngsub.add_parser(
        "shard", help="write the sharded form of an unsharded layer",
        description="Read an unsharded layer (image scales of any encoding, skeletons, or "
                    "multi-resolution meshes, by segment id) and write it sharded, with the "
                    "info updated. Rerun to resume: "
                    "shard files already written are kept (a rerun with another spec is "
                    "refused).")
    _add_common(p)
    _add_runner(p)
    p.add_argument("--spec", default="auto", metavar="auto|JSON",
                   help="'auto' (default: the chooser's proposal per scale), or a sharding "
                        "spec as JSON text or a file (one for every scale, a list, or an object "
                        "by scale key)")
    p.add_argument("--gzip-level", type=int, default=6, choices=range(1, 10), metavar="1-9",
                   help="zlib level of gzip-encoded chunk data (default 6; 1 is about twice "
                        "as fast)")
    _add_targets(p)

    p = ngsub.add_parser(
        "unshard", help="write the unsharded form of a sharded layer",
        description="Read a sharded layer and write one file per chunk (or per segment id), "
                    "with the sharding removed from the info. Rerun to resume.")
    _add_common(p)
    _add_runner(p)


def _load_json(text: str) -> Any:
    from ..formats.neuroglancer.spec import MAX_INFO_BYTES, parse_json

    if text == "auto":
        return text
    try:
        if not text.lstrip().startswith(("{", "[")) and os.path.exists(text):
            with open(text, "rb") as fh:
                return parse_json(fh.read(MAX_INFO_BYTES + 1), f"--spec {text}")
        return parse_json(text, "--spec")
    except OSError as exc:
        raise ShardkitError(f"--spec: not 'auto', JSON or a JSON file: {exc}") from exc
    except ShardkitError as exc:
        raise ShardkitError(f"{exc.message} (give 'auto', JSON or a JSON file)") from exc


def _targets(args: argparse.Namespace) -> dict[str, Any]:
    return {"shard_bytes": args.shard_bytes, "shard_index_bytes": args.shard_index_bytes,
            "minishard_index_bytes": args.minishard_index_bytes}


def _cmd_spec(args: argparse.Namespace) -> int:
    from ..ng.chooser import SpecChoice, choose_hashed_spec, choose_image_spec

    choices: dict[str, SpecChoice]
    try:
        if args.layer is not None:
            from ..ng.convert import plan_spec

            choices = plan_spec(args.layer, **_targets(args))
        elif args.keys is not None:
            choices = {"": choose_hashed_spec(args.keys, total_bytes=args.total_bytes,
                                              min_shards=args.min_shards, **_targets(args))}
        elif args.size and args.chunk:
            choices = {"": choose_image_spec(args.size, args.chunk, data_type=args.data_type,
                                             num_channels=args.channels,
                                             encoding=args.encoding,
                                             chunk_bytes=args.chunk_bytes, **_targets(args))}
        else:
            raise ShardkitError("ng spec: give LAYER, --size and --chunk, or --keys")
    except (ValueError, TypeError) as exc:
        if isinstance(exc, ShardkitError):
            raise
        raise ShardkitError(f"ng spec: {exc}") from exc
    if args.json:
        data = {k: (c.to_dict() if args.explain else c.spec.to_dict())
                for k, c in choices.items()}
        sys.stdout.write(to_json(data[""] if list(data) == [""] else data) + "\n")
        return EXIT_OK
    for key, choice in choices.items():
        if key:
            sys.stdout.write(f"{key}:\n")
        if args.explain:
            sys.stdout.write(choice.explain() + "\n")
        sys.stdout.write(json.dumps(choice.spec.to_dict()) + "\n")
    return EXIT_OK


def _cmd_convert(args: argparse.Namespace) -> int:
    from ..ng.convert import shard_layer, unshard_layer

    if args.jobs < 1:
        raise ShardkitError("--jobs must be at least 1")
    with progress_bar(args, f"ng {args.ng_command}", " tasks") as progress:
        common = {"scales": args.scale, "jobs": args.jobs, "dask": args.dask,
                  "progress": progress}
        if args.ng_command == "shard":
            report = shard_layer(args.src, args.dst, spec=_load_json(args.spec), **common,
                                 gzip_level=args.gzip_level, **_targets(args))
        else:
            report = unshard_layer(args.src, args.dst, **common)
    data = report.to_dict()
    if args.json:
        sys.stdout.write(to_json(data) + "\n")
        return EXIT_OK
    lines = []
    for key, spec in report.specs.items():
        lines.append(f"{key or 'sharding'}: " + json.dumps(spec))
    for key, count in report.shards.items():
        if not count:
            lines.append(f"{key or 'sharding'}: no chunks, so no shard file written "
                         "(an empty scale: readers and verify see 0 shards)")
    lines.append(f"{report.direction}: {report.chunks} chunks, {report.files_in} files in "
                 f"({report.bytes_in} bytes), {report.files_out} files out "
                 f"({report.bytes_out} bytes)"
                 + (f", {report.shards_written} shards written" if args.ng_command == "shard"
                    else "")
                 + (f", {report.shards_skipped} kept from an earlier run"
                    if report.shards_skipped else ""))
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def run_ng(args: argparse.Namespace) -> int:
    """Run ``shardkit ng ...``; returns the exit code."""
    try:
        if args.ng_command == "spec":
            return _cmd_spec(args)
        return _cmd_convert(args)
    except KeyboardInterrupt:
        return 130
    except (ShardkitError, OSError) as exc:
        if args.debug:
            raise
        return report_error(args, exc, str(exc))
    except Exception as exc:  # last line of defence: never a raw traceback
        if args.debug:
            raise
        return report_internal_error(exc)
