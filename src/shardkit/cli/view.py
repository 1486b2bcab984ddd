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
    """Open FILE and run the viewer until ``q``; exit code 2 without Textual.

    A local file of a known format is shown at once (its bytes need no reader) and its reader
    opens after the first frame; a URL, a dataset or an unrecognised file is opened first (an
    error is then one line before any screen is drawn).
    """
    try:
        import textual  # noqa: F401  # the view extra
    except ImportError:
        sys.stderr.write(f"shardkit: error: {INSTALL_HINT}\n")
        return EXIT_ERROR
    from .common import run_guarded
    from .read import open_and_run

    def handler(args: argparse.Namespace, reader: Any) -> int:
        from ..view import run

        return run(reader, offset=args.offset)

    early = _early_source(args)
    if early is None:
        return open_and_run(args, handler)
    source, format_name, format_id = early

    def run_early() -> int:
        from ..view import run
        from ..view.app import Opening

        opening = Opening(lambda: _open(args), source.name, format_name, source, format_id)
        return run(opening, offset=args.offset)

    try:
        return run_guarded(args, run_early)
    finally:
        source.close()


def _open(args: argparse.Namespace) -> Any:
    """The reader, as every command opens it (``--format``, ``--spec``, the I/O options)."""
    from ..formats import open_reader
    from .common import io_options, load_spec

    options: dict[str, Any] = {}
    if args.spec is not None:
        options["spec"] = load_spec(args.spec)
    return open_reader(args.file, args.format, io_options=io_options(args), **options)


def _early_source(args: argparse.Namespace) -> tuple[Any, str, str] | None:
    """A local file whose format its first bytes tell (or ``--format`` names): its source
    and format name and id, for the first frame; else None (the reader is opened first)."""
    import os

    path = os.fspath(args.file)
    if "://" in path or args.spec is not None or not os.path.isfile(path):
        return None
    from ..errors import ShardkitError
    from ..formats import FORMATS, detect
    from ..sources import FileSource

    try:
        source = FileSource(path)
    except (ShardkitError, OSError):
        return None  # the reader's open says why, as for every command
    try:
        info = FORMATS[args.format] if args.format else detect(source)
    except ShardkitError:
        info = None
    if info is None or not info.readable or info.id == "neuroglancer":
        source.close()
        return None
    return source, info.name, info.id


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``view``."""
    # declarations, alike in shape to every command's (create.py's _add_create): no shared logic
    help_text = "look inside a shard: the object tree beside a hex view (needs shardkit[view])"
    p = sub.add_parser(
        "view", parents=[common], help=help_text,
        description="A full-screen terminal viewer: the tree of `dump` (opened lazily, large "
                    "arrays a page at a time) beside the file's bytes in hex, linked both ways. "
                    "Keys: g offset, / look a key up, v verify, m map, ? keys, q quit; in the "
                    "hex pane / searches the bytes (n, N), shift+arrows select, e exports, "
                    "b bookmarks, d shows a block decoded; ^p the command palette. Only the "
                    "visible bytes are read (range reads for URLs). A damaged file is shown "
                    "as far as it reads, then its error is printed (exit 2). Needs the view "
                    "extra: pip install 'shardkit[view]'.")
    p.set_defaults(subparser=p, run=run_view)
    p.add_argument("file", metavar="FILE", help="shard file, dataset folder or URL")
    p.add_argument("--offset", metavar="N", type=offset,
                   help="start with the hex cursor at byte N (decimal or 0x... hex)")
