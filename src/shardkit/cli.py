"""The ``shardkit`` command line.

Exit codes: 0 success; 1 ``verify`` found problems or ``get`` found no such key; 2 bad usage,
or a file that cannot be read (unknown format, truncated, corrupt). Errors print one line on
stderr; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from . import __version__
from .errors import DeletedEntryError, EntryNotFoundError, Problem, ShardkitError
from .formats import FORMATS, open_reader
from .render import to_json, to_text
from .schema_files import add_schema_parser, run_schema

EXIT_OK, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2


class _Progress:
    """Progress on stderr, at most a few updates a second; silent when disabled."""

    def __init__(self, label: str, enabled: bool, stream: TextIO | None = None) -> None:
        self.label = label
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self._last = 0.0
        self._shown = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.25:
            return
        self._last = now
        pct = 100.0 * done / total if total else 100.0
        self.stream.write(f"\r{self.label}: {done}/{total} ({pct:5.1f}%)")
        self.stream.flush()
        self._shown = True

    def finish(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()


def _print(args: argparse.Namespace, human: str, data: Any) -> None:
    sys.stdout.write(to_json(data) + "\n" if args.json else human + ("\n" if human else ""))


def cmd_info(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit info``: the reader's summary as ``key: value`` lines (or as JSON)."""
    summary = _call_with(reader.summary, "info", reader, counts=args.counts or None)
    _print(args, "" if args.json else to_text(summary), summary)
    return EXIT_OK


def _call_with(func: Callable[..., Any], what: str, reader: Any, **given: Any) -> Any:
    """Call ``func`` with the options the user gave; refuse options the format does not take."""
    given = {k: v for k, v in given.items() if v is not None and v is not False}
    params = inspect.signature(func).parameters
    unknown = [k for k in given if k not in params]
    if unknown:
        flags = ", ".join("--" + k.replace("_", "-") for k in unknown)
        raise ShardkitError(f"{what}: {flags} not supported for {reader.format_name}")
    return func(**given)


def cmd_ls(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit ls``: every key (or record, or chunk id), one per line."""
    keys = _call_with(reader.keys, "ls", reader, prefix=_arg_bytes(args.prefix),
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
        _print(args, "", data)
    return EXIT_OK


def _not_found(exc: EntryNotFoundError, reader: Any) -> str:
    """The message for an absent key. Keys that are arbitrary bytes shown as escaped text (ZSS
    records) are shown once, in that form, never as a Python repr of it."""
    key = exc.key
    if isinstance(key, bytes) and not isinstance(exc, DeletedEntryError) \
            and "hex" in inspect.signature(reader.format_key).parameters:
        return f"not found: {reader.format_key(key)}"
    return str(exc)


# a number or hex string in a problem message (a slot, an offset, a key, a file's hash name)
_VARYING = re.compile(r"\b(?:0x)?[0-9a-fA-F]*[0-9][0-9a-fA-F]*\b")


def group_problems(problems: Sequence[Problem], shown: int = 3) -> list[str]:
    """``verify``'s findings as text, with near-identical ones folded.

    Problems of the same check whose messages differ only in numbers and hex strings (one
    missing stripe file seen from every column, every slot of a damaged index) print once, in
    full for the first, followed by how many more there are and the first few of their fields
    or offsets. ``verify --all`` and ``--json`` list every problem.
    """
    groups: dict[tuple[str, str], list[Problem]] = {}
    for p in problems:
        groups.setdefault((p.check, _VARYING.sub("#", p.message)), []).append(p)
    lines = []
    for same in groups.values():
        lines.append(f"PROBLEM {same[0]}")
        if len(same) > 1:
            where = [p.field or (f"byte {p.offset}" if p.offset is not None else "")
                     for p in same[1:]]
            where = [w for w in where if w]
            more = f"  ... and {len(same) - 1} more like it"
            if where:
                more += ", at " + ", ".join(where[:shown]) + (", ..." if len(where) > shown
                                                             else "")
            lines.append(more)
    return lines


def cmd_verify(args: argparse.Namespace, reader: Any) -> int:
    """``shardkit verify``: every check; exit 1 when problems are found."""
    progress = _Progress("verify", args.progress if args.progress is not None
                         else sys.stderr.isatty())
    problems = _call_with(functools.partial(reader.verify, progress=progress), "verify", reader,
                          content_hash=args.content_hash, name_check=args.name_check,
                          strict=args.strict)
    progress.finish()
    data = {"file": reader.source.name, "format": reader.format_id, "ok": not problems,
            "problems": [p.to_dict() for p in problems]}
    notes = list(getattr(problems, "notes", ()))  # checks a reader could not make here
    if notes:
        data["notes"] = [n.to_dict() for n in notes]
    if problems:
        human = "\n".join(f"PROBLEM {p}" for p in problems) if args.all else \
            "\n".join(group_problems(problems))
        human += f"\n{reader.source.name}: {len(problems)} problem(s) found"
    else:
        human = f"{reader.source.name}: OK ({reader.format_name})"
        if notes:
            human += f", {len(notes)} kind(s) of check not made (--strict makes them problems)"
    if notes:
        human = "\n".join(f"NOTE {n}" for n in notes) + "\n" + human
    _print(args, human, data)
    return EXIT_PROBLEMS if problems else EXIT_OK


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
    _print(args, "\n".join(rows), [s.to_dict() for s in sections])
    return EXIT_OK


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace, Any], int], str]] = {
    "info": (cmd_info, "summary: format, header, counts"),
    "ls": (cmd_ls, "list keys, one per line"),
    "get": (cmd_get, "write one value to stdout (or -o FILE)"),
    "verify": (cmd_verify, "run every check; exit 1 if problems are found"),
    "dump": (cmd_dump, "the whole object tree as JSON"),
    "map": (cmd_map, "byte layout: every section with start, end and size"),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for docs and tests)."""
    base = argparse.ArgumentParser(add_help=False)
    base.add_argument("--json", action="store_true", help="machine-readable JSON output")
    base.add_argument("--debug", action="store_true", help="show tracebacks")
    common = argparse.ArgumentParser(add_help=False, parents=[base])
    common.add_argument("--format", choices=sorted(FORMATS), help="skip detection")
    common.add_argument("--spec", metavar="JSON",
                        help="Neuroglancer: sharding spec (JSON text or a file) for a bare "
                             ".shard file")
    _add_remote_options(common)
    parser = argparse.ArgumentParser(
        prog="shardkit",
        description="Read, verify, inspect and write binary shard files: Software Heritage read "
                    "shards, Xet MDB shards, ZSS sorted sets, Neuroglancer sharded datasets and "
                    "Amudai shards. FILE is a path, a dataset folder or an fsspec URL.",
        epilog="exit codes: 0 ok, 1 problems found (verify) or key not found (get), "
               "2 usage error or unreadable file",
    )
    parser.add_argument("--version", action="version", version=f"shardkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, help_text) in COMMANDS.items():
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        p.set_defaults(subparser=p)
        if name == "verify":  # several targets, globs and --from-file: shardkit.bulk
            p.add_argument("file", metavar="FILE", nargs="*",
                           help="shard file, dataset folder or URL; several, or globs")
        else:
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
        if name == "verify":
            p.add_argument("--all", action="store_true",
                           help="print every problem (repeats are folded by default)")
            p.add_argument("--content-hash", metavar="ALGO",
                           help="also check key == ALGO(value): a hashlib name with a 32-byte "
                                "digest, like the keys (sha256, sha3_256, blake2s; SWH: "
                                "sha256)")
            p.add_argument("--progress", dest="progress", action="store_true", default=None,
                           help="show progress on stderr (default: when stderr is a terminal)")
            p.add_argument("--no-progress", dest="progress", action="store_false",
                           help="never show progress (e.g. when stderr is a log file)")
            p.add_argument("--name-check", action="store_true",
                           help="also check the file's name against its content hash (MDB)")
            p.add_argument("--strict", action="store_true",
                           help="count checks that cannot be made here (NOTE lines) as "
                                "problems (MDB)")
            from . import bulk

            bulk.add_cli_options(p)
        if name == "dump":
            p.add_argument("--compact", action="store_true", help="one-line JSON")
    p = sub.add_parser("formats", parents=[base], help="list the formats shardkit knows",
                       description="list the formats shardkit knows and how it recognises each")
    p.set_defaults(subparser=p)
    add_schema_parser(sub)  # shardkit schema: the .ksy files for the Kaitai Web IDE
    from .ng.cli import add_ng_parser  # Neuroglancer conversion: shardkit ng spec|shard|unshard

    add_ng_parser(sub)
    from .cli_swh import add_parsers as add_swh_write_parsers  # create, delete, truncate

    add_swh_write_parsers(sub, common)
    return parser


_BYTE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_MAX_BYTE_COUNT = (1 << 63) - 1


def byte_count(text: str, *, positive: bool = False) -> int:
    """A size option: ``65536``, ``64K``, ``1.5G``, ``32MiB``, ``2TB`` (units of 1024).

    The command line's one parser of sizes (an ``argparse`` type through
    :func:`_byte_count` and :func:`_positive_byte_count`). Fractions are rounded down to
    whole bytes before the range is checked: at least 0 bytes, or 1 with ``positive``, and
    below 2**63.

    Raises:
        argparse.ArgumentTypeError: Not a size (``inf`` and ``nan`` included), or out of range.
    """
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1] if t and t[-1] in "KMGT" else ""
    number = t[: len(t) - len(unit)].strip()
    try:
        if number.isdigit():
            value = int(number) * _BYTE_UNITS[unit]
        else:
            value = int(float(number) * _BYTE_UNITS[unit])
    except (ValueError, OverflowError):  # inf: OverflowError; nan: ValueError
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 65536, 64K, 32M, "
                                         "1.5G)") from None
    if value < (1 if positive else 0):
        least = "at least 1 byte" if positive else "at least 0"
        raise argparse.ArgumentTypeError(f"must be {least}: {text!r}")
    if value > _MAX_BYTE_COUNT:
        raise argparse.ArgumentTypeError(f"too large: {text!r} (at most 2**63 - 1 bytes)")
    return value


def _byte_count(text: str) -> int:
    """``--cache``-style sizes: 0 or more bytes."""
    return byte_count(text)


def _positive_byte_count(text: str) -> int:
    """Sizes that must be at least one byte."""
    return byte_count(text, positive=True)


def _add_remote_options(parser: argparse.ArgumentParser) -> None:
    """Options for URLs (see shardkit.remote.RemoteSource); unset means the default."""
    group = parser.add_argument_group("remote files (URLs)")
    group.add_argument("--cache", metavar="BYTES", type=_byte_count,
                       help="bytes of remote blocks kept in memory (default 32M; 0: none)")
    group.add_argument("--block-size", metavar="BYTES", type=_positive_byte_count,
                       help="alignment and smallest remote request (default 64K)")
    group.add_argument("--concurrency", metavar="N", type=int,
                       help="remote requests in flight at once (default 8)")
    group.add_argument("--retries", metavar="N", type=int,
                       help="retries after a transient network failure (default 3)")


def _io_options(args: argparse.Namespace) -> dict[str, Any] | None:
    given = {k: getattr(args, k, None) for k in ("cache", "block_size", "concurrency", "retries")}
    return {k: v for k, v in given.items() if v is not None} or None


def _load_spec(text: str) -> Any:
    """--spec: JSON text, or the path of a JSON file."""
    try:
        if not text.lstrip().startswith("{") and os.path.exists(text):
            with open(text, encoding="utf-8") as fh:
                return json.load(fh)
        return json.loads(text)
    except (OSError, ValueError) as exc:
        raise ShardkitError(f"--spec: not a JSON object or file: {exc}") from exc


def report_error(args: argparse.Namespace, exc: BaseException, msg: str) -> int:
    """One line on stderr (and the error as JSON on stdout with ``--json``); exit code 2."""
    if args.json:
        sys.stdout.write(to_json({"error": type(exc).__name__, "message": msg,
                                  "offset": getattr(exc, "offset", None),
                                  "field": getattr(exc, "field", None)}) + "\n")
    sys.stderr.write(f"shardkit: error: {msg}\n")
    return EXIT_ERROR


def report_internal_error(exc: BaseException) -> int:
    """A bug of ours, said in one line instead of a traceback; exit code 2."""
    sys.stderr.write(f"shardkit: internal error: {type(exc).__name__}: {exc} "
                     "(rerun with --debug for the traceback, and please report it)\n")
    return EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # name the command's own usage, not the top-level one
        getattr(args, "subparser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "ng":
        from .ng.cli import run_ng

        return run_ng(args)
    if args.command == "formats":
        rows = [{"id": f.id, "name": f.name, "readable": f.readable,
                 "detected_by": f.describe} for f in FORMATS.values()]
        import textwrap

        _print(args, "\n".join(f"{r['id']:<14} {r['name']}"
                               + ("" if r["readable"] else "  (detected only)") + "\n"
                               + textwrap.fill(f"detected by: {r['detected_by']}", 92,
                                               initial_indent=" " * 15,
                                               subsequent_indent=" " * 17) for r in rows),
               rows)
        return EXIT_OK
    if args.command == "schema":
        return run_schema(args)
    from .cli_swh import COMMANDS as SWH_WRITE_COMMANDS

    handler = COMMANDS[args.command][0] if args.command in COMMANDS else None
    many = False
    if args.command == "verify":
        from . import bulk

        many = bulk.wanted(args)
        if not many:
            args.file = args.file[0]
    try:
        if handler is None:  # create, delete, truncate: they take paths, not an open reader
            return SWH_WRITE_COMMANDS[args.command][0](args)
        options: dict[str, Any] = {}
        if args.spec is not None:
            options["spec"] = _load_spec(args.spec)
        if many:
            return bulk.cli_verify(args, options.get("spec"))
        with open_reader(args.file, args.format, io_options=_io_options(args),
                         **options) as reader:
            return handler(args, reader)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except (ShardkitError, OSError) as exc:
        if args.debug:
            raise
        if isinstance(exc, ShardkitError):
            msg = str(exc)
        elif getattr(exc, "filename", None):
            msg = f"{exc.filename}: {exc.strerror or exc}"
        else:
            msg = f"{args.file}: {exc}"
        return report_error(args, exc, msg)
    except Exception as exc:  # last line of defence: never a raw traceback
        if args.debug:
            raise
        return report_internal_error(exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
