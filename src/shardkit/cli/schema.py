"""``shardkit schema``: write a format's Kaitai Struct schemas for the Kaitai Web IDE.

Exit codes: 0 ok; 2 unknown schema, missing ``-o`` or an unwritable folder.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import ShardkitError
from ..render import to_json
from ..schema_files import _hint, resolve, schemas, write_upload_files

__all__ = ["UsageError", "add_parser", "add_schema_parser", "run_schema"]


def add_parser(sub: Any, common: argparse.ArgumentParser | None = None) -> None:
    """Register ``schema`` (``common`` unused: it reads no shard)."""
    add_schema_parser(sub).set_defaults(run=run_schema)


def add_schema_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``shardkit schema`` to the subcommands ``sub`` of the main parser."""
    text = "write a format's Kaitai Struct schemas for the Kaitai Web IDE"
    p: argparse.ArgumentParser = sub.add_parser(
        "schema", help=text,
        description=text + ": the schema and every schema it imports, side by side in DIR, "
                    "exactly the files to upload (the IDE finds an imported schema by its base "
                    "name among the uploaded files)",
        epilog="exit codes: 0 ok, 2 unknown schema, missing -o or unwritable DIR")
    p.add_argument("name", metavar="FORMAT", nargs="?",
                   help="a format id (swh, mdb, zss, zs, neuroglancer, amudai) or a schema id")
    p.add_argument("-o", "--output", metavar="DIR", help="folder to write the files into")
    p.add_argument("--list", action="store_true", help="list the shipped schemas")
    p.add_argument("--json", action="store_true", help="machine-readable JSON output")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def run_schema(args: argparse.Namespace) -> int:
    """``shardkit schema``: returns the exit code."""
    try:
        if args.list:
            rows = [info.to_dict() for info in schemas().values()]
            if args.json:
                sys.stdout.write(to_json(rows) + "\n")
            else:
                index = schemas()
                imported = {name for info in index.values() for name in info.upload[1:]}
                for info in index.values():
                    label = info.format or (
                        "(imported)" if info.filename in imported else "(payload)")
                    extra = f"  (+ {', '.join(info.upload[1:])})" if len(info.upload) > 1 else ""
                    sys.stdout.write(f"{label:<14} {info.filename:<34} {info.title}{extra}\n")
            return 0
        if not args.name or not args.output:
            raise UsageError("give FORMAT and -o DIR (or --list)")
        info = resolve(args.name)
        written = write_upload_files(info.id, args.output)
        if args.json:
            sys.stdout.write(to_json({"schema": info.id, "format": info.format,
                                      "files": [str(p) for p in written],
                                      "hint": _hint(info)}) + "\n")
        else:
            sys.stdout.write("".join(f"{p}\n" for p in written))
            sys.stderr.write(_hint(info) + "\n")
        return 0
    except (ShardkitError, OSError, UsageError) as exc:
        if args.debug:
            raise
        msg = str(exc) if not isinstance(exc, OSError) else f"{exc.filename}: {exc.strerror}"
        if args.json:
            sys.stdout.write(to_json({"error": type(exc).__name__, "message": msg}) + "\n")
        sys.stderr.write(f"shardkit: error: {msg}\n")
        return 2


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""
