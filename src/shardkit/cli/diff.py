"""``shardkit diff A B``: a semantic diff of two shards or datasets of the same format.

One line per difference as it is found, then a count (``--json``: one JSON object per
difference, then ``{"summary": ...}``). Exit codes: 0 the same, 1 they differ, 2 an error
(unreadable, or not the same format).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import ShardkitError
from .common import EXIT_OK, EXIT_PROBLEMS, io_options, load_spec, run_guarded

__all__ = ["add_parser", "run_diff"]


def _opened(name: str, fmt: str | None, io: Any, options: dict[str, Any]) -> Any:
    """``open_reader(name)``, an error naming ``name`` (diff reads two: say which failed)."""
    from ..formats import open_reader

    try:
        return open_reader(name, fmt, io_options=io, **options)
    except ShardkitError as exc:
        if not exc.message.startswith(name):
            exc.message = f"{name}: {exc.message}"
        raise


def run_diff(args: argparse.Namespace) -> int:
    """Open both, print their differences; 0 same, 1 different."""
    from ..diff import diff

    def run() -> int:
        options: dict[str, Any] = {}
        if args.spec is not None:
            options["spec"] = load_spec(args.spec)
        io = io_options(args)
        count = 0
        shown = args.limit
        with _opened(args.a, args.format, io, options) as a, \
                _opened(args.b, args.format, io, options) as b:
            for d in diff(a, b):  # its errors name the side they come from
                count += 1
                if shown is None or count <= shown:
                    line = json.dumps(d.to_dict(), default=str) if args.json else str(d)
                    sys.stdout.write(line + "\n")
        same = count == 0
        if args.json:
            sys.stdout.write(json.dumps({"summary": {"a": args.a, "b": args.b, "same": same,
                                                     "differences": count}}) + "\n")
        else:
            more = f" ({count - shown} not shown: --limit)" if shown is not None and \
                count > shown else ""
            sys.stdout.write(f"{args.a} and {args.b}: the same\n" if same else
                             f"{count} difference(s){more}\n")
        return EXIT_OK if same else EXIT_PROBLEMS

    return run_guarded(args, run)


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``diff``."""
    text = "compare two shards (or datasets) of the same format; exit 1 if they differ"
    p = sub.add_parser(
        "diff", parents=[common], help=text,
        description=text + ": summary and header fields, then keys added, removed and "
                    "changed (values compared by SHA-256, streamed); Neuroglancer chunks per "
                    "scale, MDB files and xorbs, Amudai schema, row counts and columns.",
        epilog="exit codes: 0 the same, 1 they differ, 2 usage error or unreadable file")
    p.set_defaults(subparser=p, run=run_diff, file=None)
    p.add_argument("a", metavar="A", help="shard file, dataset folder or URL")
    p.add_argument("b", metavar="B", help="the other one, of the same format")
    p.add_argument("--limit", type=int, metavar="N",
                   help="print at most N differences (all are counted)")
