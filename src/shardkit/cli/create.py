"""``shardkit create``, ``delete`` and ``truncate``: writing shards.

``create [--format FMT] OUT INPUT...`` writes one shard of any format with a writer; SWH is
the default (files, keyed by the sha256 of their content). Each format lives in its own module
``shardkit.cli.create_FMT`` with ``run(args) -> int``, registered in :data:`_FORMATS`; every
option of every format is declared here, once, and a format refuses the options it does not
take (:func:`refuse_options`). Every create is atomic (written under a temporary name and
renamed when complete), shows progress on long inputs (``--progress``), takes ``--json``
and refuses bad input with one line naming the record or field.

``delete`` and ``truncate`` change SWH shards in place; they ask before changing anything when
stdin is a terminal, and ``--yes`` answers for scripts (without a terminal and without
``--yes`` nothing is changed and the exit code is 2).

Exit codes: 0 done; 1 (``delete`` only) a key to delete is not in the shard, nothing deleted;
2 bad usage, bad input, or a file that cannot be read or written; 130 (``create``) interrupted
(^C), nothing written.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from ..errors import ShardkitError
from .common import base_parser, byte_count, check_out, run_guarded

__all__ = ["FORMAT_OPTIONS", "add_parser", "refuse_options", "run_create"]

#: ``--format`` -> the module under ``shardkit.cli`` that writes it (``run(args) -> int``).
_FORMATS: dict[str, str] = {
    "swh": "create_swh",
    "zss": "create_zss",
    "mdb": "create_mdb",
    "amudai": "create_amudai",
    "zs": "create_zs",
    "mosaic": "create_mosaic",
    "ng-annotations": "create_ng_annotations",
}

#: Every format option of ``create`` (its ``dest``) and its flag, for :func:`refuse_options`.
FORMAT_OPTIONS: dict[str, str] = {
    "index_init": "--index-init",
    "input_format": "--input-format",
    "terminator": "--terminator",
    "length_prefixed": "--length-prefixed",
    "codec": "--codec",
    "metadata": "--metadata",
    "approx_block_size": "--approx-block-size",
    "branching_factor": "--branching-factor",
    "level": "--level",
    "jobs": "--jobs",
    "schema": "--schema",
    "schema_file": "--schema-file",
    "layout": "--layout",
    "index": "--index",
    "zstd": "--zstd",
    "zstd_dict": "--zstd-dict",
    "tile_threshold": "--tile-threshold",
    "comment": "--comment",
}


def refuse_options(args: argparse.Namespace, takes: set[str]) -> None:
    """Refuse, in one line, the format options given that ``args.format`` does not take."""
    given = [flag for dest, flag in FORMAT_OPTIONS.items()
             if dest not in takes and getattr(args, dest, None) is not None]
    if given:
        raise ShardkitError(f"create --format {args.format}: {', '.join(given)} not supported "
                            f"for {args.format}")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


#: Formats whose ``-z`` takes lzma's extreme levels (``0e``, ``1e``...) besides numbers.
_EXTREME_LEVELS = {"zs"}


def _level(text: str) -> int | str:
    """``-z``: a number ``N``, or ``Ne`` (lzma's preset N with its extreme flag) as a string."""
    digits = text[:-1] if text.endswith("e") else text
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"not a level (N or, for lzma, Ne): {text!r}")
    return text if digits != text else int(digits)


def run_create(args: argparse.Namespace) -> int:
    """``shardkit create``: the format's module writes OUT from INPUT..."""
    if isinstance(args.level, str) and args.format not in _EXTREME_LEVELS:
        return run_guarded(args, lambda: _refuse_extreme(args))
    module = importlib.import_module(f"{__package__}.{_FORMATS[args.format]}")

    def run() -> int:
        if not getattr(module, "OUT_IS_FOLDER", False):  # a folder OUT checks itself
            check_out(args.shard)
        existed = os.path.exists(args.shard)
        try:
            return int(module.run(args))
        except KeyboardInterrupt:  # said, as verify says it: what is (not) on disk
            what = "is unchanged" if existed else "was not written"
            sys.stderr.write(f"\nshardkit: interrupted: {args.shard} {what} (a shard is "
                             "written under a temporary name, renamed only when complete: "
                             "nothing partial is left); run the command again to create it\n")
            return 130

    return run_guarded(args, run)


def _refuse_extreme(args: argparse.Namespace) -> int:
    raise ShardkitError(f"--level {args.level}: extreme levels (Ne) are lzma's (--format zs); "
                        f"{args.format} takes a number")


_EPILOGS = {
    "create": "exit codes: 0 done (or skipped when answered no), 2 usage error, bad input (one "
              "line naming the record or field) or a file that cannot be read or written, 130 "
              "interrupted (^C: OUT not written, or left as it was)",
    "delete": "exit codes: 0 done (or skipped when answered no; with --ignore-missing, also "
              "when keys are not in the shard), 1 a key to delete is not in the shard (nothing "
              "deleted), 2 usage error or a file that cannot be read or "
              "written",
    "truncate": "exit codes: 0 done (or nothing to cut, or skipped when answered no), 2 usage "
                "error, a file that cannot be read or written, or bytes after the hash "
                "function that are not zeros (not truncated)",
}


def _add_create(sub: Any, own: argparse.ArgumentParser) -> None:
    text = "write a shard: SWH of files (default), ZSS of records, ..."
    p = sub.add_parser(
        "create", parents=[own], help=text,
        description="Write one shard OUT from INPUT... in the format --format names (default "
                    "swh). swh: INPUTs are files, stored under the sha256 of their content "
                    "('-': file names from stdin), or the JSON of 'shardkit dump --values' "
                    "(--input-format dump). zss, zs: INPUTs hold sorted records, as 'zs make' "
                    "takes them ('-': stdin), or in hex or JSON as 'shardkit ls --hex|--json' "
                    "prints them (--input-format hex|json). mdb: INPUT is the JSON 'shardkit dump' "
                    "prints for an MDB shard. amudai: INPUTs are NDJSON or CSV files, one stripe "
                    "each, as 'amudai-cmd ingest' takes them. mosaic: INPUTs are files, one "
                    "object each, indexed by their hashes. ng-annotations: OUT is a "
                    "Neuroglancer annotation layer (a folder), INPUTs NDJSON annotations, "
                    "--metadata the layer's info fields. OUT is written under a "
                    "temporary name and renamed when complete.",
        epilog=_EPILOGS["create"])
    p.set_defaults(subparser=p, run=run_create, file=None, spec=None)
    p.add_argument("--format", choices=sorted(_FORMATS), default="swh",
                   help="the format to write (default swh)")
    p.add_argument("shard", metavar="OUT", help="the shard to write")
    p.add_argument("inputs", metavar="INPUT", nargs="+",
                   help="what to store: files (swh), record files (zss), a dump's JSON "
                        "(mdb), NDJSON or CSV (amudai); '-' for stdin")
    p.add_argument("--yes", "-y", action="store_true",
                   help="replace OUT without asking (for scripts)")
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show progress on stderr (default: when stderr is a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false",
                   help="never show progress")
    g = p.add_argument_group("swh")
    g.add_argument("--index-init", choices=["tombstones", "zeros"],
                   help="unused index slots: tombstones (swh-shard >= 2, default) or "
                        "zeros (swh.perfecthash <= 1.3)")
    g.add_argument("--input-format", choices=["hex", "json", "dump"],
                   help="swh: dump: INPUT is the JSON 'shardkit dump --values' prints (keys and "
                        "values kept); zss, zs: hex: one record a line in hex ('ls --hex'), "
                        "json: a JSON list or JSON lines of hex strings ('ls --json')")
    g = p.add_argument_group("records (zss, zs), as 'zs make' takes them")
    g.add_argument("--terminator", metavar="BYTES",
                   help="the byte string after each record (default a newline; backslash "
                        "escapes: '\\0', '\\x1e')")
    g.add_argument("--length-prefixed", choices=["uleb128", "u64le"],
                   help="records are each preceded by their length instead")
    g = p.add_argument_group("format options (each format says which it takes)")
    g.add_argument("--codec", metavar="NAME",
                   help="block compression (zss: zlib, bz2, none+crc32c; default zlib; "
                        "zs: lzma, deflate, none; default lzma)")
    g.add_argument("--metadata", metavar="JSON", help="a JSON object stored in the header "
                   "(ng-annotations: the layer's annotation_type, dimensions, properties...)")
    g.add_argument("--approx-block-size", metavar="BYTES", type=lambda t: byte_count(t,
                   positive=True), help="raw bytes of records per data block (zss default 256K, "
                                         "zs 384K)")
    g.add_argument("--branching-factor", metavar="N", type=_positive_int,
                   help="most entries per index block (zss default 1024)")
    g.add_argument("-z", "--level", metavar="N", type=_level,
                   help="compression level of the codec (zss: 0-9; zs: deflate 0-9, lzma 0, 1, "
                        "0e or 1e, the e for lzma's extreme mode; zs default 0e)")
    g.add_argument("--jobs", metavar="N", type=_positive_int,
                   help="worker processes for compression")
    g = p.add_argument_group("amudai")
    g.add_argument("--schema", metavar="TEXT", help="the table schema, as text")
    g.add_argument("--schema-file", metavar="F", help="the table schema, from a file")
    g.add_argument("--layout", choices=["single", "twolevel"], help="the shard's layout")
    g = p.add_argument_group("mosaic (INPUTs are files, one object each)")
    g.add_argument("--index", action="append", metavar="KIND",
                   choices=["sha1", "sha1_git", "sha256", "blake2s256"],
                   help="an index of the objects' hashes (repeatable, in file order; "
                        "default sha256)")
    g.add_argument("--zstd", metavar="LEVEL", type=int,
                   help="compress each object with zstd at this level")
    g.add_argument("--zstd-dict", metavar="FILE",
                   help="a zstd dictionary, stored in the file (with --zstd)")
    g.add_argument("--tile-threshold", metavar="BYTES", type=lambda t: byte_count(
                   t, positive=True), help="bytes per tile (default 32000000)")
    g.add_argument("--comment", action="append", metavar="TEXT",
                   help="a Comment element (repeatable)")


def add_parser(sub: Any, common: argparse.ArgumentParser | None = None) -> None:
    """Register ``create``, ``delete`` and ``truncate``.

    ``common`` is accepted for symmetry with the reading commands; these take only
    ``--json`` and ``--debug`` (no ``--spec``, nor ``--format`` on delete and truncate: they
    change SWH shards).
    """
    from . import create_swh

    own = base_parser()
    _add_create(sub, own)
    for name in ("delete", "truncate"):
        func, help_text = create_swh.COMMANDS[name]
        p = sub.add_parser(name, parents=[own], help=help_text, description=help_text,
                           epilog=_EPILOGS[name])
        p.set_defaults(subparser=p, file=None, spec=None,
                       run=lambda args, func=func: run_guarded(args, lambda: func(args)))
        p.add_argument("--yes", "-y", action="store_true",
                       help="do not ask for confirmation (for scripts)")
        if name == "delete":
            p.add_argument("shard", metavar="SHARD", help="the shard to change in place")
            p.add_argument("keys", metavar="KEY", nargs="+",
                           help="hex keys ('-': read keys from stdin, implies --yes)")
            p.add_argument("--ignore-missing", action="store_true",
                           help="keys not in the shard are not an error: delete the others "
                                "and exit 0 (for scripts that may run twice)")
            p.add_argument("--index", action="append", metavar="KIND",
                           choices=["sha1", "sha1_git", "sha256", "blake2s256"],
                           help="MOSAIC: the index the keys belong to (default: picked "
                                "from their length)")
        else:
            p.add_argument("shards", metavar="SHARD", nargs="+", help="shards to truncate")
