"""``shardkit create --format zss OUT INPUT...``: a ZSS file of sorted records.

The records come as ``zs make`` takes them (:func:`shardkit.cli.common.iter_records`):
terminated (``--terminator``, default a newline) or length-prefixed, from files or stdin,
streamed into :class:`shardkit.writers.zss.ZssWriter` under a temporary name.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import ShardkitError
from .common import EXIT_OK, Records, confirm, iter_records, json_object, print_out, progress_bar

__all__ = ["run"]

_TAKES = {"input_format", "terminator", "length_prefixed", "codec", "metadata", "approx_block_size",
          "branching_factor", "level"}
_OVERHEAD = {"u64le": 8, "uleb128": 1}


def metadata_object(text: str | None) -> dict[str, Any]:
    """``--metadata``: a JSON object (text), or ``{}`` when not given."""
    if text is None:
        return {}
    return json_object(text, "--metadata")


def unsorted(records: Records, index: int, record: bytes, previous: bytes,
             fmt: str) -> ShardkitError:
    """The error for the record of overall number ``index``, smaller than the one before."""
    return ShardkitError(f"{records.where(index)} is not sorted: {record[:40]!r} comes after "
                         f"{previous[:40]!r} ({fmt} records must be in byte order: sort them "
                         "first, e.g. LC_ALL=C sort)")


def _checked(records: Records, progress: Callable[[int], None]) -> Iterator[bytes]:
    """The records, refused at the first one smaller than the one before (one line)."""
    prev: bytes | None = None
    for number, record in enumerate(records):
        if prev is not None and record < prev:
            raise unsorted(records, number, record, prev, "ZSS")
        prev = record
        if not number % 4096:
            progress(number)
        yield record


def record_options(args: argparse.Namespace, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` plus the block size, branching factor and per-record overhead that ZSS and
    ZS writers share, from ``args`` (checked)."""
    if getattr(args, "input_format", None) == "dump":
        raise ShardkitError(f"create --format {args.format}: --input-format dump is for swh; "
                            "records come raw, or as hex or json ('shardkit ls --hex|--json')")
    if args.approx_block_size is not None:
        options["approx_block_size"] = args.approx_block_size
    if args.branching_factor is not None:
        if args.branching_factor < 2:
            raise ShardkitError("--branching-factor: must be at least 2")
        options["branching_factor"] = args.branching_factor
    if args.length_prefixed:
        options["record_overhead"] = _OVERHEAD[args.length_prefixed]
    else:
        from .common import terminator_bytes

        options["record_overhead"] = len(terminator_bytes(args.terminator))
    return options


def may_write(args: argparse.Namespace) -> bool:
    """Whether ``args.shard`` may be written: stdin given once, an existing file confirmed
    (else prints that it was skipped)."""
    if args.inputs.count("-") > 1:
        raise ShardkitError("create: '-' (stdin) given more than once")
    if os.path.exists(args.shard) and not confirm(args, f"{args.shard} exists: replace it?"):
        print_out(args, "skipped", {"shard": args.shard, "created": False})
        return False
    return True


def run(args: argparse.Namespace) -> int:
    """Write ``args.shard`` from the records of ``args.inputs``; returns the exit code."""
    from ..writers.zss import CODECS, write_zss
    from .create import refuse_options

    refuse_options(args, _TAKES)
    codec = args.codec or "zlib"
    if codec not in CODECS:
        raise ShardkitError(f"--codec {codec}: not a ZSS codec; known: {', '.join(CODECS)}")
    if args.level is not None and codec == "none+crc32c":
        raise ShardkitError("--level: the codec none+crc32c does not compress")
    if args.level is not None and not 0 <= args.level <= 9:
        raise ShardkitError(f"--level {args.level}: {codec} levels are 0 to 9")
    metadata = metadata_object(args.metadata)
    if not may_write(args):
        return EXIT_OK
    options = record_options(args, {"codec": codec, "metadata": metadata})
    if args.level is not None:
        options["compress_level"] = args.level
    with progress_bar(args, f"create {args.shard}", " records") as progress:
        count = write_zss(args.shard, _checked(iter_records(args), progress), **options)
    size = os.path.getsize(args.shard)
    data = {"shard": args.shard, "format": "zss", "created": True, "records": count,
            "size": size, "codec": codec}
    print_out(args, f"{args.shard}: {count} records ({size} bytes, {codec})", data)
    return EXIT_OK
