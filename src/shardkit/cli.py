"""The ``shardkit`` command line.

Exit codes: 0 success; 1 ``verify`` found problems or ``get`` found no such key; 2 bad usage,
or a file that cannot be read (unknown format, truncated, corrupt). Errors print one line on
stderr; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import inspect
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from . import __version__
from .errors import EntryNotFoundError, ShardkitError
from .formats import FORMATS, open_reader
from .render import to_json

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


def _flatten(prefix: str, value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out.append(f"{prefix}: {value}")


def cmd_info(args: argparse.Namespace, reader: Any) -> int:
    summary = reader.summary()
    lines: list[str] = []
    _flatten("", summary, lines)
    _print(args, "\n".join(lines), summary)
    return EXIT_OK


def cmd_ls(args: argparse.Namespace, reader: Any) -> int:
    if args.json:
        sys.stdout.write(to_json([reader.format_key(k) for k in reader.keys()]) + "\n")
        return EXIT_OK
    write = sys.stdout.write
    for key in reader.keys():
        write(reader.format_key(key) + "\n")
    return EXIT_OK


def cmd_get(args: argparse.Namespace, reader: Any) -> int:
    key = reader.parse_key(args.key)
    try:
        value = reader[key]
    except EntryNotFoundError as exc:
        sys.stderr.write(f"shardkit: {exc}\n")
        return EXIT_PROBLEMS
    if args.json:
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


def cmd_verify(args: argparse.Namespace, reader: Any) -> int:
    progress = _Progress("verify", args.progress if args.progress is not None
                         else sys.stderr.isatty())
    kwargs: dict[str, Any] = {"progress": progress}
    params = inspect.signature(reader.verify).parameters
    if args.content_hash:
        if "content_hash" not in params:
            raise ShardkitError(f"--content-hash is not supported for {reader.format_name}")
        kwargs["content_hash"] = args.content_hash
    problems = reader.verify(**kwargs)
    progress.finish()
    data = {"file": reader.source.name, "format": reader.format_id, "ok": not problems,
            "problems": [p.to_dict() for p in problems]}
    if problems:
        human = "\n".join(f"PROBLEM {p}" for p in problems)
        human += f"\n{reader.source.name}: {len(problems)} problem(s) found"
    else:
        human = f"{reader.source.name}: OK ({reader.format_name})"
    _print(args, human, data)
    return EXIT_PROBLEMS if problems else EXIT_OK


def cmd_dump(args: argparse.Namespace, reader: Any) -> int:
    sys.stdout.write(to_json(reader.to_dict(), indent=2 if not args.compact else None) + "\n")
    return EXIT_OK


def cmd_map(args: argparse.Namespace, reader: Any) -> int:
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
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable JSON output")
    common.add_argument("--format", choices=sorted(FORMATS), help="skip detection")
    common.add_argument("--debug", action="store_true", help="show tracebacks")
    parser = argparse.ArgumentParser(
        prog="shardkit",
        description="Read, verify and inspect binary shard files (Software Heritage read "
                    "shards; more formats to come). FILE is a path or an fsspec URL.",
        epilog="exit codes: 0 ok, 1 problems found (verify) or key not found (get), "
               "2 usage error or unreadable file",
    )
    parser.add_argument("--version", action="version", version=f"shardkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, help_text) in COMMANDS.items():
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        p.add_argument("file", metavar="FILE", help="shard file, dataset folder or URL")
        if name == "get":
            p.add_argument("key", metavar="KEY", help="the key (hex for SWH shards)")
            p.add_argument("-o", "--output", metavar="OUT", help="write the value to OUT")
        if name == "verify":
            p.add_argument("--content-hash", metavar="ALGO", choices=["sha256", "sha1",
                           "blake2b", "blake2s", "sha512"],
                           help="also check key == ALGO(value) (SWH: sha256)")
            p.add_argument("--progress", dest="progress", action="store_true", default=None,
                           help="show progress on stderr (default: when stderr is a terminal)")
            p.add_argument("--no-progress", dest="progress", action="store_false")
        if name == "dump":
            p.add_argument("--compact", action="store_true", help="one-line JSON")
    sub.add_parser("formats", parents=[common], help="list the formats shardkit knows")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "formats":
        rows = [{"id": f.id, "name": f.name, "readable": f.opener is not None,
                 "detected_by": f.describe} for f in FORMATS.values()]
        _print(args, "\n".join(f"{r['id']:<14} {r['name']}"
                               + ("" if r["readable"] else "  (detected only)") for r in rows),
               rows)
        return EXIT_OK
    handler = COMMANDS[args.command][0]
    try:
        with open_reader(args.file, args.format) as reader:
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
        msg = str(exc) if isinstance(exc, ShardkitError) else f"{args.file}: {exc}"
        if args.json:
            sys.stdout.write(to_json({"error": type(exc).__name__, "message": msg,
                                      "offset": getattr(exc, "offset", None),
                                      "field": getattr(exc, "field", None)}) + "\n")
        sys.stderr.write(f"shardkit: error: {msg}\n")
        return EXIT_ERROR
    except Exception as exc:  # last line of defence: never a raw traceback
        if args.debug:
            raise
        sys.stderr.write(f"shardkit: internal error: {type(exc).__name__}: {exc} "
                         "(rerun with --debug for the traceback, and please report it)\n")
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
