"""``shardkit verify``: one shard with every check, or many shards (globs, several FILEs,
dataset folders, ``--from-file``) through :mod:`shardkit.bulk`.

Exit codes: 0 sound; 1 problems found (some shard unsound); 2 usage error or an unreadable
file (some shard unreadable).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import Problem, ShardkitError
from ..formats import open_reader
from .common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    call_with,
    check_out,
    io_options,
    load_spec,
    print_out,
    progress_bar,
    run_guarded,
)

__all__ = ["CLI_OPTIONS", "add_parser", "cli_verify", "group_problems", "wanted"]

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
    """``shardkit verify FILE``: every check; exit 1 when problems are found."""
    others: list[Any] = []
    if args.with_ and reader.format_id != "mdb":
        raise ShardkitError(f"verify: --with is for MDB shards, not {reader.format_name}")
    try:
        for name in args.with_ or ():  # MDB: shards whose xorbs this one's files may use
            others.append(open_reader(name, "mdb", io_options=io_options(args)))
        with progress_bar(args, "verify") as progress:
            problems = call_with(functools.partial(reader.verify, progress=progress), "verify",
                                 reader, content_hash=args.content_hash,
                                 name_check=args.name_check, strict=args.strict,
                                 other_shards=others or None)
    finally:
        for other in others:
            other.close()
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
    print_out(args, human, data)
    return EXIT_PROBLEMS if problems else EXIT_OK


# -- many shards -------------------------------------------------------------------------------

#: ``verify`` options that only make sense for many targets.
CLI_OPTIONS = ("from_file", "jobs", "dask", "report", "resume", "timeout")


def add_bulk_options(parser: argparse.ArgumentParser) -> None:
    """Add the many-shards options to the ``verify`` subcommand's parser."""
    from ..bulk import default_jobs

    group = parser.add_argument_group(
        "many shards", "Several FILEs, globs (quote them: 's3://bucket/*.shard'), dataset "
        "folders expanded to their .shard files, or --from-file: one JSON line per shard "
        "(--json) or one line per shard, then a summary; exit 0 all sound, 1 some unsound, "
        "2 some unreadable.")
    # option declarations, alike in shape to read.py's add_parser: each has options of its own
    group.add_argument("--from-file", metavar="LIST",
                       help="read targets from LIST, one per line ('-' for stdin)")
    group.add_argument("--jobs", "-j", type=int, metavar="N",
                       help=f"local worker processes (default: the core count, {default_jobs()})")
    group.add_argument("--dask", metavar="ADDRESS",
                       help="run on a Dask cluster: tcp://scheduler:8786, or 'local' for a "
                            "LocalCluster of --jobs worker processes")
    group.add_argument("--report", metavar="REPORT.jsonl",
                       help="write one JSON line per shard to REPORT.jsonl as each finishes")
    group.add_argument("--resume", metavar="REPORT.jsonl",
                       help="skip targets this earlier report calls sound (and keep their "
                            "lines); the report defaults to the same file")
    group.add_argument("--timeout", type=float, metavar="SECONDS",
                       help="give up a shard after SECONDS and report it as a timeout")


def wanted(args: Any) -> bool:
    """Whether ``shardkit verify`` takes the many-shards path."""
    from ..bulk import _has_glob, _is_url

    files = list(args.file)
    if len(files) != 1 or any(getattr(args, k, None) is not None for k in CLI_OPTIONS):
        return True
    one = files[0]
    return _has_glob(one) and (_is_url(one) or not os.path.exists(one))


def cli_verify(args: Any, spec: Mapping[str, Any] | None) -> int:
    """``shardkit verify`` over many targets; returns the exit code."""
    from tqdm import tqdm

    from ..bulk import (
        _check_io_options,
        _has_glob,
        _problem_text,
        connect,
        expand_targets,
        format_line,
    )
    from ..bulk import run as bulk_run

    items = _targets_given(args)
    if args.jobs is not None and args.jobs < 1:
        raise ShardkitError("--jobs must be at least 1")
    if args.timeout is not None and args.timeout <= 0:
        raise ShardkitError("--timeout must be positive")
    io = _check_io_options(io_options(args))
    show_all = getattr(args, "all", False)
    report = args.report or args.resume
    if report is not None:  # named as given, before any shard is read
        check_out(report)
    # a glob that matches nothing is a mistake in the command, not an unreadable shard
    targets = expand_targets(items, format=args.format, spec=spec)
    unmatched = [t.name for t in targets if t.error is not None and
                 t.error.get("type") == "NoMatch" and _has_glob(t.name)]
    if unmatched:
        raise ShardkitError(f"{', '.join(unmatched)}: no file matched (nothing verified)")

    done = [0]

    noticed: list[str] = []

    def show(result: dict[str, Any]) -> None:
        done[0] += 1
        if result.get("notices") and not noticed:  # said once a run
            noticed.append(result["notices"][0])
            tqdm.write(f"shardkit: note: {noticed[0]}", file=sys.stderr)
        line = json.dumps(result) if args.json else format_line(result)
        if show_all and not args.json and result.get("status") == "unsound":
            line += "".join(f"\n  PROBLEM {_problem_text(p)}" for p in result["problems"])
        tqdm.write(line, file=sys.stdout)
        sys.stdout.flush()

    close: Callable[[], None] = lambda: None  # noqa: E731
    client = None
    if args.dask is not None:
        client, close = connect(args.dask, args.jobs)
    try:
        summary = bulk_run(targets, "verify", jobs=args.jobs, client=client,
                           report=report, resume=args.resume,
                           timeout=args.timeout, content_hash=args.content_hash,
                           name_check=args.name_check, strict=getattr(args, "strict", False),
                           format=args.format, spec=spec, io_options=io,
                           progress=args.progress, on_result=show, keep_results=False)
    except KeyboardInterrupt:
        if report is not None:
            how = (f"{report} holds their results: rerun the same command with --resume "
                   f"{report} to check only the rest")
        else:
            how = ("nothing was saved: run with --report r.jsonl, then after an interruption "
                   "rerun with --resume r.jsonl to check only the rest")
        sys.stderr.write(f"\nshardkit: interrupted after {done[0]} shard(s); {how}\n")
        return 130
    finally:
        close()
    data = summary.to_dict()
    if args.json:
        sys.stdout.write(json.dumps({"summary": data}) + "\n")
    else:
        carried = f" ({summary.resumed} sound in {args.resume})" if summary.resumed else ""
        sys.stdout.write(
            f"{summary.targets} shard(s): {summary.sound} sound{carried}, {summary.unsound} "
            f"unsound, {summary.unreadable} unreadable; {summary.bytes_read / 1e6:.1f} MB read "
            f"in {summary.seconds:.1f} s ({data['shards_per_s']} shards/s, {summary.engine})\n")
    return summary.exit_code


def _targets_given(args: Any) -> list[str]:
    """The FILEs and globs of ``shardkit verify``, then those of ``--from-file`` (``-``:
    stdin), one a line, blank lines and ``#`` comments skipped; at least one."""
    from ..bulk import read_target_list

    items: list[str] = list(args.file)
    if args.from_file is not None:
        try:
            if args.from_file == "-":
                items += [ln.strip() for ln in sys.stdin
                          if ln.strip() and not ln.lstrip().startswith("#")]
            else:
                items += read_target_list(args.from_file)
        except (OSError, UnicodeDecodeError) as exc:
            raise ShardkitError(f"--from-file {args.from_file}: {exc}") from exc
    if not items:
        raise ShardkitError("verify: no targets (give FILEs, globs or --from-file LIST)")
    return items


def run_verify(args: argparse.Namespace) -> int:
    """``shardkit verify``: one target opened here, or many through :mod:`shardkit.bulk`."""
    if wanted(args):
        if args.with_:
            return run_guarded(args, lambda: _refuse(
                "verify: --with takes one MDB shard to verify, named before it (shardkit "
                "verify A.mdb --with B.mdb C.mdb), not several, globs or a list"))
        def many() -> int:
            spec = load_spec(args.spec) if args.spec is not None else None
            return cli_verify(args, spec)

        return run_guarded(args, many)
    from .read import open_and_run

    args.file = args.file[0]
    return open_and_run(args, cmd_verify)


def _refuse(message: str) -> int:
    raise ShardkitError(message)


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``verify``."""
    help_text = "run every check; exit 1 if problems are found"
    p = sub.add_parser("verify", parents=[common], help=help_text, description=help_text,
                       epilog="exit codes: 0 sound (every shard), 1 problems found (some shard "
                              "unsound), 2 usage error or an unreadable file (some shard "
                              "unreadable); 130 interrupted (the report so far is kept)")
    p.set_defaults(subparser=p, run=run_verify)
    p.add_argument("file", metavar="FILE", nargs="*",
                   help="shard file, dataset folder or URL; several, or globs")
    p.add_argument("--all", action="store_true",
                   help="print every problem (repeats are folded by default)")
    p.add_argument("--content-hash", metavar="ALGO",
                   help="also check key == ALGO(value): a hashlib name with a 32-byte "
                        "digest, like the keys (sha256, sha3_256, blake2s; SWH: sha256)")
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show progress on stderr (default: when stderr is a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false",
                   help="never show progress (e.g. when stderr is a log file)")
    p.add_argument("--name-check", action="store_true",
                   help="also check the file's name against its content hash (MDB)")
    p.add_argument("--strict", action="store_true",
                   help="count checks that cannot be made here (NOTE lines) as problems (MDB)")
    p.add_argument("--with", dest="with_", metavar="OTHER.mdb", nargs="+",
                   help="MDB: other shards whose xorbs the files' terms may use (their terms "
                        "and file hashes are then checked too)")
    add_bulk_options(p)
