"""``shardkit create [--format swh]``, ``delete`` and ``truncate``: Software Heritage read shards.

Shaped like ``swh-shard create|delete|truncate``. Each asks before changing anything when
stdin is a terminal; ``--yes`` answers for scripts (without a terminal and without ``--yes``
nothing is changed and the exit code is 2). ``--json`` prints one JSON object.
Exit codes: 0 done; 1 (``delete`` only) a key to delete is not in the shard, nothing
deleted; 2 bad usage or a file that cannot be read or written (``truncate``: or bytes after
the hash function that are not zeros).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, Literal

from ..errors import ShardkitError
from ..render import to_json
from .common import EXIT_OK, EXIT_PROBLEMS, each_file, input_files, keys_to_delete, progress_bar
from .common import confirm as _confirm

__all__ = ["COMMANDS", "run"]


def _out(args: argparse.Namespace, human: str, data: Any) -> None:
    sys.stdout.write(to_json(data) + "\n" if args.json else human + "\n")


def _guarded(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """OS errors (a missing file, permissions) as one-line shardkit errors naming the path."""
    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except OSError as exc:
            where = exc.filename or getattr(args, "shard", None) or "shard"
            raise ShardkitError(f"{where}: {exc.strerror or exc}") from exc

    run.__doc__ = func.__doc__
    return run


def cmd_create(args: argparse.Namespace) -> int:
    """``shardkit create SHARD FILE...``: a shard of the files, keyed by sha256 of content."""
    from ..writers.swh import write_swh_files
    from .create import refuse_options

    refuse_options(args, {"index_init", "input_format"})
    if args.input_format is not None:
        if args.input_format != "dump":
            raise ShardkitError(f"create --format swh: --input-format {args.input_format} is "
                                "for zss and zs; swh takes files, or dump")
        return _from_dump(args)
    if args.index_init is None:
        args.index_init = "tombstones"
    files = input_files(args)
    if os.path.exists(args.shard) and not _confirm(args, f"{args.shard} exists: replace it?"):
        _out(args, "skipped", {"shard": args.shard, "created": False})
        return EXIT_OK
    with progress_bar(args, f"create {args.shard}", " files") as progress:
        added = write_swh_files(args.shard, each_file(files, progress),
                                index_init=args.index_init, overwrite=True)
    data = {"shard": args.shard, "created": True, "files": len(files), "objects": len(added),
            "size": os.path.getsize(args.shard), "index_init": args.index_init}
    _out(args, f"{args.shard}: {len(added)} objects from {len(files)} files "
         f"({data['size']} bytes)", data)
    return EXIT_OK


def _dump_entries(name: str, found: list[str]) -> Iterator[tuple[bytes, bytes]]:
    """``(key, value)`` of each entry of a ``dump --values`` JSON, streamed, checked."""
    import re

    from ..cli.common import iter_json_items

    fh = sys.stdin.buffer if name == "-" else open(name, "rb")  # noqa: SIM115
    shown = "stdin" if name == "-" else name
    try:
        head: list[str] = []
        for i, entry in enumerate(iter_json_items(fh, shown, "entries", head)):
            if i == 0:
                m = re.search(r'"index_init"\s*:\s*"(\w+)"', head[0])
                found.append(m.group(1) if m else "")
            where = f"{shown}: entries[{i}]"
            if not isinstance(entry, dict) or "key" not in entry:
                raise ShardkitError(f"{where}: not an entry with a key")
            if "value" not in entry:
                raise ShardkitError(f"{where}: no value (make the dump with shardkit dump "
                                    "--values)")
            try:
                key, value = bytes.fromhex(entry["key"]), bytes.fromhex(entry["value"])
            except (TypeError, ValueError):
                raise ShardkitError(f"{where}: key and value must be hex strings") from None
            if len(key) != 32:
                raise ShardkitError(f"{where}.key: SWH keys are 32 bytes (64 hex digits), "
                                    f"got {len(key)}")
            if "size" in entry and entry["size"] != len(value):
                raise ShardkitError(f"{where}: size {entry['size']}, but the value has "
                                    f"{len(value)} bytes")
            yield key, value
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


def _from_dump(args: argparse.Namespace) -> int:
    """``create --input-format dump``: the entries of ``dump --values``, keys and values kept
    (in the dump's order; the unused-slot form it names unless ``--index-init`` is given)."""
    from ..writers.swh import SwhShardWriter

    if len(args.inputs) != 1:
        raise ShardkitError("create --input-format dump: give one JSON input (shardkit dump "
                            "--values output; '-' for stdin)")
    name = args.inputs[0]
    if os.path.exists(args.shard) and not _confirm(args, f"{args.shard} exists: replace it?"):
        _out(args, "skipped", {"shard": args.shard, "created": False})
        return EXIT_OK
    found: list[str] = []
    entries = _dump_entries(name, found)
    first = next(entries, None)
    said = args.index_init or (found[0] if found else "")
    init: Literal["tombstones", "zeros"] = "zeros" if said == "zeros" else "tombstones"
    count = 0
    with progress_bar(args, f"create {args.shard}", " objects") as progress, \
            SwhShardWriter(args.shard, index_init=init, overwrite=True) as w:
        for key, value in itertools.chain([first] if first is not None else [], entries):
            w.write(key, value)
            count += 1
            progress(count)
    data = {"shard": args.shard, "created": True, "objects": count,
            "size": os.path.getsize(args.shard), "index_init": init}
    _out(args, f"{args.shard}: {count} objects from {name} ({data['size']} bytes)", data)
    return EXIT_OK


def cmd_delete(args: argparse.Namespace) -> int:
    """``shardkit delete SHARD KEY...``: delete objects in place (zeroed, tombstoned)."""
    from pathlib import Path

    from ..formats.swh import normalize_key
    from ..writers.swh import KeysNotFoundError, _plan_delete, delete

    with open(args.shard, "rb") as fh:
        if fh.read(4) == b"\x1a\x45\xdf\xa3":  # an EBML document: a MOSAIC file
            from .create_mosaic import cmd_delete as delete_mosaic

            return delete_mosaic(args)
    wanted = keys_to_delete(args, normalize_key)
    # As swh-shard delete: a key on a tombstone that may be an unused slot is not in the
    # shard. Every key is checked before asking, and again by delete() itself.
    absent: dict[str, str] = {}
    if args.ignore_missing:  # a retried script: keys gone already are not an error
        try:
            _plan_delete(Path(args.shard), wanted, strict=True)
        except KeysNotFoundError as exc:
            absent = {k.hex(): "not in the shard" for k in exc.missing}
            wanted = [k for k in wanted if k.hex() not in absent]
        if not wanted:
            _out(args, "\n".join(f"{k}: {v}" for k, v in absent.items()),
                 {"shard": args.shard, "deleted": absent})
            return EXIT_OK
    try:
        _plan_delete(Path(args.shard), wanted, strict=True)
        if not _confirm(args, f"delete {len(wanted)} object(s) from {args.shard}?"):
            _out(args, "skipped", {"shard": args.shard, "deleted": {}})
            return EXIT_OK
        status = delete(args.shard, wanted, strict=True)
    except KeysNotFoundError as exc:
        missing = [k.hex() for k in exc.missing]
        msg = f"{len(missing)} key(s) not in {args.shard}, nothing deleted: {missing[0]}"
        if args.json:
            sys.stdout.write(to_json({"shard": args.shard, "error": "EntryNotFoundError",
                                      "missing": missing}) + "\n")
        sys.stderr.write(f"shardkit: {msg}\n")
        return EXIT_PROBLEMS
    status.update(absent)
    _out(args, "\n".join(f"{k}: {v}" for k, v in status.items()),
         {"shard": args.shard, "deleted": status})
    return EXIT_OK


def cmd_truncate(args: argparse.Namespace) -> int:
    """``shardkit truncate SHARD...``: cut pre-allocated shards to their content."""
    from ..formats.swh import SwhShard
    from ..sources import FileSource
    from ..writers.swh import truncate

    results = []
    lines = []
    for path in args.shards:
        with SwhShard(FileSource(path)) as shard:
            end, size = shard.content_end, shard.source.size
        if size <= end:
            results.append({"shard": path, "size": size, "truncated": False})
            lines.append(f"{path}: not pre-allocated ({size} bytes), nothing to do")
            continue
        if not _confirm(args, f"{path} is {size - end} bytes larger than its content: "
                              "truncate it?"):
            results.append({"shard": path, "size": size, "truncated": False})
            lines.append(f"{path}: skipped")
            continue
        before, after = truncate(path)
        results.append({"shard": path, "size_before": before, "size": after, "truncated": True})
        lines.append(f"{path}: truncated from {before} to {after} bytes")
    _out(args, "\n".join(lines), results)
    return EXIT_OK


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
    "delete": (_guarded(cmd_delete), "delete objects from an SWH shard or a MOSAIC file in "
                                      "place (hex keys)"),
    "truncate": (_guarded(cmd_truncate), "cut pre-allocated SWH shards to their content"),
}

#: ``shardkit create --format swh``
run = _guarded(cmd_create)
