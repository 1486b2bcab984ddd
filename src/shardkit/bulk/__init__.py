"""Many shards at once: one per-shard task over many targets, on local processes or Dask.

A *target* is a path, a glob (``shards/*.shard``), an fsspec URL or URL glob
(``s3://bucket/shards/*.shard``), or a Neuroglancer dataset folder or URL, which expands to the
``*.shard`` files of its sharded scales (each opened with that scale's sharding spec).
:func:`run` runs one task on every target and reports each shard as one JSON-ready dict as soon
as it finishes::

    from shardkit import bulk

    summary = bulk.run(["shards/*.shard", "gs://bucket/dataset"], task="verify",
                       jobs=8, report="report.jsonl")
    summary.exit_code        # 0 all sound, 1 some unsound, 2 some unreadable

Tasks: ``"verify"`` (``content_hash=``/``name_check=`` go to the formats that take them),
``"info"`` (the reader's summary) and ``"keys"`` (the key listing), or a picklable callable
``task(reader) -> dict`` whose dict is merged into the result (``ok``/``problems`` included).

Engines: local worker processes by default (``jobs``, default the core count), each shard in a
supervised worker, so a crash or a killed worker costs only the shard it was reading (which is
tried again, up to ``retries`` times, then recorded) and a per-shard ``timeout`` kills and
replaces the worker. With ``client=`` (a ``distributed.Client``) the same task function runs on
a Dask cluster; only target names and results travel through the scheduler, and each worker
reads its shard where it lives.

A report is JSON Lines, one line per target; ``resume=`` keeps the targets an earlier report
called sound and runs the rest, so every target ends up in the report exactly once.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .cluster import _groups as _groups
from .cluster import _largest_first as _largest_first
from .cluster import _run_dask as _run_dask
from .cluster import connect
from .targets import LAYER_FORMAT as LAYER_FORMAT
from .targets import Target, expand_targets, read_target_list
from .targets import _has_glob as _has_glob
from .targets import _is_url as _is_url
from .task import TASKS, run_one, run_one_with_timeout
from .task import _check_io_options as _check_io_options
from .workers import WORKER_MALLOC as WORKER_MALLOC
from .workers import _run_local as _run_local
from .workers import _worker_main as _worker_main
from .workers import default_jobs

__all__ = [
    "STATUSES",
    "TASKS",
    "BulkSummary",
    "Target",
    "connect",
    "default_jobs",
    "expand_targets",
    "format_line",
    "load_report",
    "read_target_list",
    "run",
    "run_one",
    "run_one_with_timeout",
]

#: Result statuses, from best to worst; the exit code is the index of the worst one seen.
STATUSES = ("sound", "unsound", "unreadable")


def load_report(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The last line of each target in a JSON Lines report (unparseable lines are skipped)."""
    out: dict[str, dict[str, Any]] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # e.g. a line cut short when an earlier run was killed
                if isinstance(rec, dict) and isinstance(rec.get("target"), str):
                    out[rec["target"]] = rec
    except FileNotFoundError:
        pass
    return out


@dataclass
class BulkSummary:
    """What a bulk run found.

    Attributes:
        targets: Targets in the run (resumed ones included).
        sound: Results with no problem.
        unsound: Shards read to the end with problems.
        unreadable: Shards that could not be read (errors, crashes, timeouts).
        resumed: Sound results carried over from ``resume``.
        bytes_read: Bytes read by the tasks of this run.
        seconds: Wall time of this run.
        engine: ``local:N`` or ``dask:ADDRESS``.
        results: Every result of this run in completion order (carried-over ones first).
    """

    # counters, alike in shape to ng/convert.py ConversionReport's: fields, no logic to share
    targets: int = 0
    sound: int = 0
    unsound: int = 0
    unreadable: int = 0
    resumed: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    engine: str = ""
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 every shard sound, 1 some unsound, 2 some unreadable."""
        return 2 if self.unreadable else 1 if self.unsound else 0

    def to_dict(self) -> dict[str, Any]:
        """The summary without the results, JSON-ready."""
        ran = self.targets - self.resumed
        secs = self.seconds or 1e-9
        return {"targets": self.targets, "sound": self.sound, "unsound": self.unsound,
                "unreadable": self.unreadable, "resumed": self.resumed,
                "bytes_read": self.bytes_read, "seconds": round(self.seconds, 3),
                "shards_per_s": round(ran / secs, 2),
                "mb_per_s": round(self.bytes_read / secs / 1e6, 3), "engine": self.engine,
                "exit_code": self.exit_code}

    def add(self, result: Mapping[str, Any]) -> None:
        status = result.get("status")
        if status == "sound":
            self.sound += 1
        elif status == "unsound":
            self.unsound += 1
        else:
            self.unreadable += 1
        self.bytes_read += int(result.get("bytes_read") or 0)


def _write_atomic(path: Path, lines: Iterable[str]) -> None:
    from ..writers._atomic import atomic_file

    with atomic_file(path) as fh:
        for line in lines:
            fh.write(line.encode("utf-8"))


def _progress_bar(total: int, enabled: bool, stream: TextIO) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, disable=not enabled, file=stream, unit="shard", dynamic_ncols=True,
                smoothing=0.1, mininterval=0.25)


def run(targets: Iterable[str | Target], task: str | Callable[[Any], Mapping[str, Any]] = "verify",
        *, jobs: int | None = None, client: Any = None, report: str | os.PathLike[str] | None
        = None, resume: str | os.PathLike[str] | None = None, timeout: float | None = None,
        retries: int = 2, content_hash: str | None = None, name_check: bool = False,
        strict: bool = False, format: str | None = None, spec: Mapping[str, Any] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        io_options: Mapping[str, Any] | None = None, progress: bool | None = None,
        on_result: Callable[[dict[str, Any]], None] | None = None,
        keep_results: bool = True) -> BulkSummary:
    """Run ``task`` over every shard of ``targets`` (see the module doc).

    Args:
        targets: Paths, globs, URLs, URL globs, Neuroglancer datasets, or :class:`Target`s.
        task: ``"verify"``, ``"info"``, ``"keys"``, or a picklable ``callable(reader) -> dict``.
        jobs: Local worker processes (default: the core count). Ignored with ``client``.
        client: A ``distributed.Client``: run on its cluster instead.
        report: JSON Lines file, one line per target, written as each shard finishes.
        resume: An earlier report: targets it calls sound are carried over, the rest run.
            The report is rewritten in place unless ``report`` names another file.
        timeout: Seconds per shard before it is given up and reported as a timeout.
        retries: Local engine: how often a shard whose worker died is tried again before it is
            reported as a crash (on Dask the scheduler's ``allowed-failures`` decides).
        content_hash: ``verify`` option (SWH): also check key == this hash of the value.
        name_check: ``verify`` option (Xet MDB): compare a ``<hash>.mdb`` name with the content.
        strict: ``verify`` option (Xet MDB): count what cannot be checked as problems.
        format: Force a format id instead of detecting each file's.
        spec: The sharding spec of bare Neuroglancer shards.
        storage_options: For fsspec URLs (expansion and reading).
        io_options: How URLs are read (``block_size``, ``cache``, ``concurrency``,
            ``retries``; see :class:`~shardkit.remote.RemoteSource`); ShardkitError when one
            is out of range.
        progress: A progress bar on stderr (default: when stderr is a terminal).
        on_result: Called with each result dict as it arrives (carried-over ones excluded).
        keep_results: Keep every result in the returned summary.
    """
    if not callable(task) and task not in TASKS:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    io = _check_io_options(io_options)
    t0 = time.perf_counter()
    so = dict(storage_options or {})
    items = expand_targets(targets, format=format, spec=spec, storage_options=so)
    summary = BulkSummary(targets=len(items))
    carried, todo = _carry_over(items, resume, summary, keep_results)
    out = _open_report(report if report is not None else resume, carried)
    bar = _progress_bar(len(items), sys.stderr.isatty() if progress is None else progress,
                        sys.stderr)
    bar.update(len(carried))
    emit = _Emitter(summary, keep_results, out, on_result, bar)
    options = {"content_hash": content_hash, "name_check": name_check, "strict": strict,
               "storage_options": so, "io_options": io}
    # errors found while expanding need no worker
    ready = [(i, t) for i, t in todo if t.error is not None]
    todo, sizes = _largest_first([(i, t) for i, t in todo if t.error is None])
    try:
        for i, t in ready:
            emit(i, run_one(t, task, options))
        todo = _run_engine(summary, todo, sizes, task, options, jobs=jobs, client=client,
                           timeout=timeout, retries=retries, emit=emit)
    finally:
        bar.close()
        if out is not None:
            out.close()
    missing = [t for i, t in todo if i not in emit.reported]
    if missing:  # cannot happen by construction; refuse to return a short report silently
        raise RuntimeError(f"{len(missing)} target(s) got no result, e.g. {missing[0].name}")
    summary.seconds = time.perf_counter() - t0
    return summary


def _carry_over(items: list[Target], resume: str | os.PathLike[str] | None,
                summary: BulkSummary, keep_results: bool
                ) -> tuple[list[dict[str, Any]], list[tuple[int, Target]]]:
    """The results of an earlier report that called a target sound (counted in ``summary``),
    and the targets left to run (with their places in ``items``)."""
    previous = load_report(resume) if resume is not None else {}
    carried = [previous[t.name] for t in items
               if previous.get(t.name, {}).get("status") == "sound"]
    done = {r["target"] for r in carried}
    todo = [(i, t) for i, t in enumerate(items) if t.name not in done]
    summary.resumed = len(carried)
    for rec in carried:
        summary.add(rec)
        if keep_results:
            summary.results.append(rec)
    summary.bytes_read = 0  # bytes of this run only
    return carried, todo


def _open_report(report: str | os.PathLike[str] | None,
                 carried: list[dict[str, Any]]) -> TextIO | None:
    """The report, rewritten with the carried-over results and open to append to."""
    if report is None:
        return None
    path = Path(report)
    _write_atomic(path, (json.dumps(r) + "\n" for r in carried))
    return open(path, "a", encoding="utf-8")  # closed by run


class _Emitter:
    """``emit(index, result)``: each result counted, kept, written and shown once."""

    def __init__(self, summary: BulkSummary, keep_results: bool, out: TextIO | None,
                 on_result: Callable[[dict[str, Any]], None] | None, bar: Any) -> None:
        self.summary, self.keep_results, self.out = summary, keep_results, out
        self.on_result, self.bar = on_result, bar
        self.reported: set[int] = set()

    def __call__(self, index: int, result: dict[str, Any]) -> None:
        if index in self.reported:  # never twice, whatever an engine does
            return
        self.reported.add(index)
        summary = self.summary
        summary.add(result)
        if self.keep_results:
            summary.results.append(result)
        if self.out is not None:
            self.out.write(json.dumps(result) + "\n")
            self.out.flush()
        if self.on_result is not None:
            self.on_result(result)
        self.bar.set_postfix(sound=summary.sound, unsound=summary.unsound,
                             unreadable=summary.unreadable, refresh=False)
        self.bar.update(1)


def _run_engine(summary: BulkSummary, todo: list[tuple[int, Target]], sizes: Mapping[int, int],
                task: Any, options: Mapping[str, Any], *, jobs: int | None, client: Any,
                timeout: float | None, retries: int,
                emit: Callable[[int, dict[str, Any]], None]) -> list[tuple[int, Target]]:
    """Run ``todo`` on Dask (``client``) or local workers; the jobs as given to the engine."""
    if client is not None:
        summary.engine = f"dask:{getattr(client.scheduler, 'address', client)}"
        # workers may run elsewhere: give them absolute paths for local files
        todo = [(i, t if _is_url(t.name) or os.path.isabs(t.name) else
                 Target(t.name, t.spec, t.format, os.path.abspath(t.name)))
                for i, t in todo]
        _run_dask(client, todo, task, options, timeout, emit, sizes=sizes)
    elif todo:
        n = jobs or default_jobs()
        summary.engine = f"local:{n}"
        _run_local(todo, task, options, n, timeout, retries, emit)
    else:
        summary.engine = f"local:{jobs or default_jobs()}"
    return todo


def format_line(result: Mapping[str, Any]) -> str:
    """One human line for a result: ``OK``, ``UNSOUND`` or ``ERROR``."""
    name = result.get("target")
    if result.get("status") == "sound":
        return f"OK {name} ({result.get('format')})"
    if result.get("status") == "unsound":
        problems: Sequence[Mapping[str, Any]] = result.get("problems") or []
        first = problems[0].get("message", "") if problems else ""
        return f"UNSOUND {name}: {len(problems)} problem(s); first: {first}"
    err = result.get("error") or {}
    return f"ERROR {name}: {err.get('type')}: {err.get('message')}"


def _problem_text(problem: Mapping[str, Any]) -> str:
    """A problem dict as ``shardkit verify --all`` prints a Problem."""
    from ..errors import Problem

    return str(Problem(str(problem.get("check") or "problem"), str(problem.get("message", "")),
                       problem.get("offset"), problem.get("field")))
