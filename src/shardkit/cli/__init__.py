"""The ``shardkit`` command line.

One module per command group, each with ``add_parser(sub, common)``: :mod:`.read` (info, ls,
get, dump, map, formats), :mod:`.verify` (one shard or many), :mod:`.diff`, :mod:`.create` (create,
delete, truncate), :mod:`.ng` (Neuroglancer conversion), :mod:`.schema` and :mod:`.view` (the
terminal viewer); what they share is in :mod:`.common`. The library never imports from here.

Exit codes: 0 success; 1 ``verify`` found problems, ``get`` found no such key, ``diff`` found
differences or ``delete`` was given a key not in the shard; 2 bad usage, or a file that cannot
be read (unknown format, truncated, corrupt); 130 interrupted. Errors print one line on
stderr; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from .. import __version__
from .common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_PROBLEMS,
    add_remote_options,
    base_parser,
    byte_count,
    notices,
    report_error,
    report_internal_error,
)

__all__ = [
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_PROBLEMS",
    "MODULES",
    "build_parser",
    "byte_count",
    "main",
    "report_error",
    "report_internal_error",
]

#: The command modules, in the order their commands are listed by ``shardkit --help``.
MODULES = ["read", "verify", "diff", "schema", "ng", "create", "view"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for docs and tests)."""
    from ..formats import FORMATS  # the registry only: no reader is imported

    common = argparse.ArgumentParser(add_help=False, parents=[base_parser()])
    common.add_argument("--format", choices=sorted(FORMATS), help="skip detection")
    common.add_argument("--spec", metavar="JSON",
                        help="Neuroglancer: sharding spec (JSON text or a file) for a bare "
                             ".shard file")
    common.add_argument("--index", metavar="KIND",
                        choices=["sha1", "sha1_git", "sha256", "blake2s256"],
                        help="MOSAIC: the index keys belong to (ls, get...; default: the one "
                             "the key's length picks, or the file's first)")
    add_remote_options(common)
    parser = argparse.ArgumentParser(
        prog="shardkit",
        description="Read, verify, inspect and write binary shard files: Software Heritage read "
                    "shards, Xet MDB shards, ZSS and ZS sorted record files, Neuroglancer sharded "
                    "datasets and Amudai shards. FILE is a path, a dataset folder or an fsspec "
                    "URL.",
        epilog="exit codes: 0 ok, 1 problems found (verify), key not found (get), A and B "
               "differ (diff) or a key to delete is not in the shard (delete), 2 usage error "
               "or unreadable file, 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"shardkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}").add_parser(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    given = sys.argv[1:] if argv is None else list(argv)
    if not given:  # bare `shardkit`: the help
        parser.print_help()
        return EXIT_OK
    if given == ["ng"]:  # bare `shardkit ng`: its help, as bare `shardkit`
        for action in parser._subparsers._group_actions if parser._subparsers else ():
            choices = getattr(action, "choices", None) or {}
            if "ng" in choices:
                choices["ng"].print_help()
                return EXIT_OK
    args, extra = parser.parse_known_args(argv)
    if extra:  # name the command's own usage, not the top-level one
        getattr(args, "subparser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    with notices():
        return int(args.run(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
