"""``shardkit create --format zs OUT INPUT...``: a ZS file (``zs`` 0.10) of sorted records.

The records come as ``zs make`` takes them (:func:`shardkit.cli.common.iter_records`):
terminated (``--terminator``, default a newline) or length-prefixed (``--length-prefixed
uleb128|u64le``), from files or stdin (``-``), streamed into
:func:`shardkit.writers.zs.write_zs` under a temporary name. Defaults are ``zs make``'s: codec
lzma (preset 0, extreme: ``-z 0e``; ``-z`` takes 0, 1, 0e or 1e for lzma, 0 to 9 for
deflate), blocks of about 393216 bytes, 1024 entries per index block; ``--jobs N`` compresses
the data blocks in N worker processes.
"""

from __future__ import annotations

import argparse
import os

from ..errors import ShardkitError
from .common import EXIT_OK, iter_records, print_out, progress_bar
from .create_zss import may_write, metadata_object, record_options, unsorted

__all__ = ["run"]

_TAKES = {"input_format", "terminator", "length_prefixed", "codec", "metadata", "approx_block_size",
          "branching_factor", "level", "jobs"}
_LEVELS: dict[str, tuple[int | str, ...]] = {"deflate": tuple(range(10)),
                                             "lzma": (0, 1, "0e", "1e")}


def run(args: argparse.Namespace) -> int:
    """Write ``args.shard`` from the records of ``args.inputs``; returns the exit code."""
    from ..writers.zs import CODECS, UnsortedInputError, write_zs
    from .create import refuse_options

    refuse_options(args, _TAKES)
    codec = args.codec or "lzma"
    if codec not in CODECS:
        raise ShardkitError(f"--codec {codec}: not a ZS codec; known: {', '.join(CODECS)}")
    if args.level is not None:
        if codec == "none":
            raise ShardkitError("--level: the codec none does not compress")
        if args.level not in _LEVELS[codec]:
            known = "0 to 9" if codec == "deflate" else "0, 1, 0e or 1e (e: extreme)"
            raise ShardkitError(f"--level {args.level}: {codec} levels are {known}")
    metadata = metadata_object(args.metadata)
    if not may_write(args):
        return EXIT_OK
    options = record_options(args, {"codec": codec, "metadata": metadata, "jobs": args.jobs or 1})
    if args.level is not None:
        options["level"] = args.level
    records = iter_records(args)
    try:
        with progress_bar(args, f"create {args.shard}", " records") as progress:
            count = write_zs(args.shard, records, progress=progress, **options)
    except UnsortedInputError as exc:
        raise unsorted(records, exc.index, exc.record, exc.previous, "ZS") from None
    except ValueError as exc:  # no records
        raise ShardkitError(f"create --format zs: {exc}") from None
    size = os.path.getsize(args.shard)
    data = {"shard": args.shard, "format": "zs", "created": True, "records": count,
            "size": size, "codec": codec, "jobs": options["jobs"]}
    print_out(args, f"{args.shard}: {count} records ({size} bytes, {codec})", data)
    return EXIT_OK
