"""``shardkit create --format mosaic`` and ``shardkit delete`` of a MOSAIC file.

``create --format mosaic OUT FILE...`` stores each file's content as one object (the same
content once), indexed by the hashes ``--index`` names (repeatable; default sha256), plain or
zstd-compressed (``--zstd LEVEL``, ``--zstd-dict FILE``), in tiles of about
``--tile-threshold`` bytes, with ``--comment`` elements. ``delete FILE KEY...`` deletes objects
in place as swh-mosaic's ``MosaicUpdater.delete`` does (``--index`` picks the index of the keys
when their length does not).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import EntryNotFoundError, ShardkitError
from ..render import to_json
from .common import EXIT_OK, EXIT_PROBLEMS, each_file, input_files, keys_to_delete, progress_bar
from .common import confirm as _confirm

__all__ = ["cmd_delete", "run"]


def _out(args: argparse.Namespace, human: str, data: object) -> None:
    sys.stdout.write(to_json(data) + "\n" if args.json else human + "\n")


def run(args: argparse.Namespace) -> int:
    """``shardkit create --format mosaic OUT FILE...``."""
    from ..formats.mosaic import KINDS
    from ..writers.mosaic import write_mosaic_files
    from .create import refuse_options

    refuse_options(args, {"index", "zstd", "zstd_dict", "tile_threshold", "comment"})
    indexes = args.index or ["sha256"]
    bad = [i for i in indexes if i not in KINDS]
    if bad:
        raise ShardkitError(f"--index {bad[0]}: MOSAIC indexes are {', '.join(KINDS)}")
    zdict = None
    if args.zstd_dict is not None:
        if args.zstd is None:
            raise ShardkitError("--zstd-dict needs --zstd LEVEL")
        try:
            zdict = Path(args.zstd_dict).read_bytes()
        except OSError as exc:
            raise ShardkitError(f"{args.zstd_dict}: {exc.strerror or exc}") from exc
    files = input_files(args)
    if os.path.exists(args.shard) and not _confirm(args, f"{args.shard} exists: replace it?"):
        _out(args, "skipped", {"shard": args.shard, "created": False})
        return EXIT_OK
    with progress_bar(args, f"create {args.shard}", " files") as progress:
        write_mosaic_files(args.shard, each_file(files, progress), indexes,
                           zstd_level=args.zstd, zstd_dict=zdict,
                           tile_threshold=args.tile_threshold, comments=args.comment or (),
                           overwrite=True)
    from ..formats.mosaic import MosaicFile
    from ..sources import FileSource

    with MosaicFile(FileSource(args.shard)) as r:
        objects = len(r)
        compression = r.meta.compression
    data = {"shard": args.shard, "created": True, "files": len(files), "objects": objects,
            "size": os.path.getsize(args.shard), "indexes": indexes,
            "compression": compression}
    _out(args, f"{args.shard}: {objects} objects from {len(files)} files, indexes "
         f"{', '.join(indexes)}, {compression} ({data['size']} bytes)", data)
    return EXIT_OK


def cmd_delete(args: argparse.Namespace) -> int:
    """``shardkit delete FILE KEY...`` for a MOSAIC file."""
    from ..formats.mosaic import MosaicFile
    from ..formats.mosaic.model import normalize_key
    from ..sources import FileSource
    from ..writers.mosaic import delete

    wanted = keys_to_delete(args, normalize_key)
    index = getattr(args, "index", None)
    index = index[-1] if isinstance(index, list) and index else None
    with MosaicFile(FileSource(args.shard)) as r:
        missing = [k for k in wanted if r._locate(k, index) is None]
    absent = {}
    if missing and args.ignore_missing:
        absent = {k.hex(): "not in the file" for k in missing}
        wanted = [k for k in wanted if k not in missing]
        missing = []
    if missing:
        msg = (f"{len(missing)} key(s) not in {args.shard}, nothing deleted: "
               f"{missing[0].hex()}")
        if args.json:
            sys.stdout.write(to_json({"shard": args.shard, "error": "EntryNotFoundError",
                                      "missing": [k.hex() for k in missing]}) + "\n")
        sys.stderr.write(f"shardkit: {msg}\n")
        return EXIT_PROBLEMS
    if wanted and not _confirm(args, f"delete {len(wanted)} object(s) from {args.shard}?"):
        _out(args, "skipped", {"shard": args.shard, "deleted": {}})
        return EXIT_OK
    status = dict.fromkeys((k.hex() for k in wanted), "deleted")
    if wanted:
        try:
            delete(args.shard, wanted, index=index)
        except EntryNotFoundError as exc:  # pragma: no cover - checked above
            raise ShardkitError(str(exc)) from exc
    status.update(absent)
    _out(args, "\n".join(f"{k}: {v}" for k, v in status.items()),
         {"shard": args.shard, "deleted": status})
    return EXIT_OK
