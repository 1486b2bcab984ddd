"""``shardkit view``: the terminal viewer, the object tree beside a hex view of the bytes.

Textual, which the viewer is built on, is the ``view`` extra: it is imported only when the
command runs, and when it is missing the command says what to install (exit code 2).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import EXIT_ERROR

__all__ = ["add_parser", "offset"]

INSTALL_HINT = "shardkit view needs Textual: pip install 'shardkit[view]'"


def offset(text: str) -> int:
    """``--offset``: a byte offset, decimal or ``0x...`` hex (an ``argparse`` type)."""
    t = text.strip().lower().replace("_", "")
    try:
        value = int(t[2:], 16) if t.startswith("0x") else int(t, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an offset: {text!r} (e.g. 4096 or 0x1000)") \
            from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0: {text!r}")
    return value


def run_view(args: argparse.Namespace) -> int:
    """Open FILE and run the viewer until ``q``; exit code 2 without Textual."""
    try:
        import textual  # noqa: F401  # the view extra
    except ImportError:
        sys.stderr.write(f"shardkit: error: {INSTALL_HINT}\n")
        return EXIT_ERROR
    from .read import open_and_run

    def handler(args: argparse.Namespace, reader: Any) -> int:
        from ..view import run

        return run(reader, offset=args.offset)

    return open_and_run(args, handler)


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``view``."""
    help_text = "look inside a shard: the object tree beside a hex view (needs shardkit[view])"
    p = sub.add_parser(
        "view", parents=[common], help=help_text,
        description="A full-screen terminal viewer: the tree of `dump` (opened lazily, large "
                    "arrays a page at a time) beside the file's bytes in hex, linked both ways. "
                    "Keys: g offset, / look a key up, v verify, m map, ? keys, q quit. Only the "
                    "visible bytes are read (range reads for URLs). Needs the view extra: "
                    "pip install 'shardkit[view]'.")
    p.set_defaults(subparser=p, run=run_view)
    p.add_argument("file", metavar="FILE", help="shard file, dataset folder or URL")
    p.add_argument("--offset", metavar="N", type=offset,
                   help="start with the hex cursor at byte N (decimal or 0x... hex)")
