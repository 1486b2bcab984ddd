"""The reading commands: ``info``, ``ls``, ``get``, ``dump``, ``map`` (and ``formats``).

Each opens FILE (a shard, a dataset folder or an fsspec URL) with the format detected or
given by ``--format``, and prints what the reader gives.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

from ..errors import DeletedEntryError, EntryNotFoundError, ShardkitError
from ..render import to_json, to_text
from .common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    base_parser,
    call_with,
    io_options,
    load_spec,
    print_out,
    run_guarded,
)

__all__ = ["add_parser", "open_and_run"]


def cmd_info(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit info``: the reader's summary as ``key: value`` lines (or as JSON)."""
    summary = call_with(reader.summary, "info", reader, counts=args.counts or None)
    print_out(args, "" if args.json else to_text(summary), summary)
    return EXIT_OK


def cmd_ls(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit ls``: every key (or record, or chunk id), one per line."""
    keys = call_with(reader.keys, "ls", reader, prefix=_arg_bytes(args.prefix),
                     start=_arg_bytes(args.start), stop=_arg_bytes(args.stop))
    fmt = reader.format_key
    if args.hex:
        if "hex" not in inspect.signature(fmt).parameters:
            raise ShardkitError(f"ls: --hex not supported for {reader.format_name}")
        fmt = functools.partial(fmt, hex=True)
    if args.json:
        # records are arbitrary bytes: JSON gets their exact bytes as hex (lossless), the
        # rule `dump` follows for all bytes; the text form stays escaped text
        if "hex" in inspect.signature(reader.format_key).parameters:
            fmt = functools.partial(reader.format_key, hex=True)
        sys.stdout.write(to_json([fmt(k) for k in keys]) + "\n")
        return EXIT_OK
    write = sys.stdout.write
    for key in keys:
        write(fmt(key) + "\n")
    return EXIT_OK


def _arg_bytes(text: str | None) -> bytes | None:
    """A --prefix/--start/--stop value: ``hex:...`` for hex, otherwise UTF-8 text."""
    if text is None:
        return None
    if text.startswith("hex:"):
        try:
            return bytes.fromhex(text[4:])
        except ValueError as exc:
            raise ShardkitError(f"not hex: {text!r}") from exc
    return text.encode("utf-8")


def cmd_get(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit get``: one value, raw to stdout or ``-o``; structured values as JSON."""
    try:
        key = reader.parse_key(args.key)
        value = reader[key]
    except EntryNotFoundError as exc:
        message = _not_found(exc, reader)
        if args.json:
            sys.stdout.write(to_json({"error": type(exc).__name__, "message": message,
                                      "key": args.key}) + "\n")
        sys.stderr.write(f"shardkit: {message}\n")
        return EXIT_PROBLEMS
    if not isinstance(value, (bytes, bytearray, memoryview)):
        # structured values (a file's reconstruction, a column's values) print as JSON
        text = to_json(value) + "\n"
        if args.output is not None:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
            if args.json:
                sys.stdout.write(to_json({"key": args.key, "written_to": args.output}) + "\n")
        else:
            sys.stdout.write(text)
        return EXIT_OK
    value = bytes(value)
    if args.json:
        import base64
        import hashlib

        data: dict[str, Any] = {"key": reader.format_key(key), "size": len(value),
                                "sha256": hashlib.sha256(value).hexdigest()}
        if args.output is None:
            data["value_base64"] = base64.b64encode(value).decode("ascii")
        else:
            data["written_to"] = args.output
    if args.output is not None:
        with open(args.output, "wb") as fh:
            fh.write(value)
    elif not args.json:
        sys.stdout.buffer.write(value)
        sys.stdout.flush()
    if args.json:
        print_out(args, "", data)
    return EXIT_OK


def _not_found(exc: EntryNotFoundError, reader: Any) -> str:
    """The message for an absent key. Keys that are arbitrary bytes shown as escaped text (ZSS
    records) are shown once, in that form, never as a Python repr of it."""
    key = exc.key
    if isinstance(key, bytes) and not isinstance(exc, DeletedEntryError) \
            and "hex" in inspect.signature(reader.format_key).parameters:
        return f"not found: {reader.format_key(key)}"
    return str(exc)


def cmd_dump(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit dump``: the whole object tree as JSON."""
    sys.stdout.write(to_json(reader.to_dict(), indent=2 if not args.compact else None) + "\n")
    return EXIT_OK


def cmd_map(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit map``: every section of the file with start, end and size."""
    sections = reader.sections()
    rows = [f"{'start':>12} {'end':>12} {'size':>12}  name"]
    rows += [f"{s.start:>12} {s.end:>12} {s.size:>12}  {s.name}" + (f"  ({s.note})" if s.note
                                                                      else "")
             for s in sections]
    print_out(args, "\n".join(rows), [s.to_dict() for s in sections])
    return EXIT_OK


def cmd_formats(args: argparse.Namespace) -> int:
    """``shardkit formats``: the formats shardkit knows and how each is recognised."""
    import textwrap

    from ..formats import FORMATS

    rows = [{"id": f.id, "name": f.name, "readable": f.readable,
             "detected_by": f.describe} for f in FORMATS.values()]
    print_out(args, "\n".join(f"{r['id']:<14} {r['name']}"
                              + ("" if r["readable"] else "  (detected only)") + "\n"
                              + textwrap.fill(f"detected by: {r['detected_by']}", 92,
                                              initial_indent=" " * 15,
                                              subsequent_indent=" " * 17) for r in rows),
              rows)
    return EXIT_OK


def open_and_run(args: argparse.Namespace,
                 handler: Callable[[argparse.Namespace, Any], int]) -> int:
    """Open ``args.file`` (``--format``, ``--spec``, the I/O options) and run ``handler`` on
    the reader, with the command line's error handling."""
    from ..formats import open_reader

    def run() -> int:
        options: dict[str, Any] = {}
        if args.spec is not None:
            options["spec"] = load_spec(args.spec)
        with open_reader(args.file, args.format, io_options=io_options(args),
                         **options) as reader:
            return handler(args, reader)

    return run_guarded(args, run)


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace, Any], int], str]] = {
    "info": (cmd_info, "summary: format, header, counts"),
    "ls": (cmd_ls, "list keys, one per line"),
    "get": (cmd_get, "write one value to stdout (or -o FILE)"),
    "dump": (cmd_dump, "the whole object tree as JSON"),
    "map": (cmd_map, "byte layout: every section with start, end and size"),
}


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``info``, ``ls``, ``get``, ``dump``, ``map`` and ``formats``."""
    for name, (handler, help_text) in COMMANDS.items():
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        p.set_defaults(subparser=p, run=functools.partial(open_and_run, handler=handler))
        p.add_argument("file", metavar="FILE", help="shard file, dataset folder or URL")
        if name == "info":
            p.add_argument("--counts", action="store_true",
                           help="also counts that need a full scan: ZSS records and blocks; "
                                "SWH live/deleted/unused entries (by default for local SWH "
                                "files of modest size)")
        if name == "ls":
            p.add_argument("--hex", action="store_true", help="print keys as hex (ZSS)")
            for opt, what in (("prefix", "records starting with P"),
                              ("start", "records >= P"), ("stop", "records < P")):
                p.add_argument(f"--{opt}", metavar="P",
                               help=f"only {what} (ZSS; text, or hex:... for bytes)")
        if name == "get":
            p.add_argument("key", metavar="KEY",
                           help="the key: hex (SWH), display hex (MDB), escaped text or hex:... "
                                "(ZSS), a decimal chunk id (Neuroglancer), a column path (Amudai)")
            p.add_argument("-o", "--output", metavar="OUT", help="write the value to OUT")
        if name == "dump":
            p.add_argument("--compact", action="store_true", help="one-line JSON")
    p = sub.add_parser("formats", parents=[base_parser()], help="list the formats shardkit knows",
                       description="list the formats shardkit knows and how it recognises each")
    p.set_defaults(subparser=p, run=cmd_formats)
