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

import contextlib
import glob as _glob
import json
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, cast

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

TASKS = ("verify", "info", "keys")
#: The ``format`` of a target that is a whole Neuroglancer annotation layer (a folder or URL,
#: verified as one: its checks compare its indexes with each other).
LAYER_FORMAT = "neuroglancer-annotations"
_GLOB_CHARS = frozenset("*?[")
#: Result statuses, from best to worst; the exit code is the index of the worst one seen.
STATUSES = ("sound", "unsound", "unreadable")


# -- targets -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One shard to process.

    Attributes:
        name: The target as reported (a path or URL, as given or as a glob expanded it).
        spec: The Neuroglancer sharding spec of a bare ``.shard`` file, if any.
        format: A format id to use instead of detection.
        location: Where workers open it, when that differs from ``name`` (absolute path).
        error: Set when the target could not even be expanded (an ``error`` dict).
    """

    name: str
    spec: Mapping[str, Any] | None = None
    format: str | None = None
    location: str | None = None
    error: Mapping[str, Any] | None = None


def _is_url(text: str) -> bool:
    return "://" in text


def _has_glob(text: str) -> bool:
    return any(c in _GLOB_CHARS for c in text)


def read_target_list(path: str | os.PathLike[str]) -> list[str]:
    """The targets listed in a text file: one per line; blank lines and ``#`` comments skipped."""
    with open(path, encoding="utf-8") as fh:
        lines = [line.strip() for line in fh]
    return [line for line in lines if line and not line.startswith("#")]


def _error(kind: str, message: str, offset: int | None = None,
           field: str | None = None) -> dict[str, Any]:
    return {"type": kind, "message": message, "offset": offset, "field": field}


def _safe_key(key: Any) -> bool:
    """A scale ``key`` from an info file must name a folder below the dataset root."""
    if not isinstance(key, str) or not key or _is_url(key) or key.startswith(("/", "\\")):
        return False
    parts = key.replace("\\", "/").split("/")
    return ".." not in parts and ":" not in parts[0]


class _Where:
    """A folder, local or behind fsspec, with just what expansion needs."""

    def __init__(self, root: str, storage_options: Mapping[str, Any]) -> None:
        self.root = root.rstrip("/") or root
        self.fs: Any = None
        if _is_url(root):
            import fsspec

            self.fs, self.path = fsspec.core.url_to_fs(root, **dict(storage_options))
            self.path = self.path.rstrip("/")

    def join(self, name: str) -> str:
        return f"{self.root}/{name}"

    def read_info(self) -> Any:
        if self.fs is None:
            with open(os.path.join(self.root, "info"), encoding="utf-8") as fh:
                return json.load(fh)
        return json.loads(self.fs.cat_file(f"{self.path}/info"))

    def has_info(self) -> bool:
        if self.fs is None:
            return os.path.isdir(self.root) and os.path.isfile(os.path.join(self.root, "info"))
        try:
            return bool(self.fs.isfile(f"{self.path}/info"))
        except (OSError, ValueError):
            return False

    def shards(self, sub: str | None) -> list[str]:
        """``*.shard`` files directly in the root (or in its folder ``sub``), sorted.

        A scale's folder that does not exist holds no shards: a sharded scale with no chunks
        (an empty scale of ``shardkit ng shard``) has no folder at all.
        """
        if self.fs is None:
            folder = os.path.join(self.root, sub) if sub else self.root
            if sub and not os.path.lexists(folder):
                return []
            return sorted(os.path.join(folder, n) for n in os.listdir(folder)
                          if n.endswith(".shard") and os.path.isfile(os.path.join(folder, n)))
        folder = f"{self.path}/{sub}" if sub else self.path
        found = self.fs.glob(f"{folder}/*.shard")
        base = self.join(sub) if sub else self.root
        return sorted(f"{base}/{p.rsplit('/', 1)[-1]}" for p in found)


def _is_annotation_layer(where: _Where) -> bool:
    info = where.read_info()
    return isinstance(info, dict) and info.get("@type") == "neuroglancer_annotations_v1"


def _expand_dataset(where: _Where, fmt: str | None) -> list[Target]:
    """The shard files of a Neuroglancer dataset, each with its scale's sharding spec."""
    info = where.read_info()
    if not isinstance(info, dict):
        raise ValueError("the info file is not a JSON object")
    out: list[Target] = []
    if isinstance(info.get("sharding"), dict):  # key-value datasets: meshes, skeletons, ...
        out += [Target(name, spec=info["sharding"], format="neuroglancer")
                for name in where.shards(None)]
    for i, scale in enumerate(info.get("scales") or []):
        if not isinstance(scale, dict) or not isinstance(scale.get("sharding"), dict):
            continue  # unsharded scales hold plain chunk files, not shards
        key = scale.get("key")
        if not _safe_key(key):
            raise ValueError(f"scale {i}: key {key!r} does not name a folder inside the dataset")
        out += [Target(name, spec=scale["sharding"], format="neuroglancer")
                for name in where.shards(key)]
    return out


def _expand_one(item: str, fmt: str | None, spec: Mapping[str, Any] | None,
                storage_options: Mapping[str, Any]) -> list[Target]:
    if _has_glob(item) and not (not _is_url(item) and os.path.exists(item)):
        return _expand_glob(item, fmt, spec, storage_options)
    if fmt in (None, "neuroglancer") and spec is None:
        found = _expand_folder(item, fmt, storage_options)
        if found is not None:
            return found
    return [Target(item, spec=spec, format=fmt)]


def _expand_glob(item: str, fmt: str | None, spec: Mapping[str, Any] | None,
                 storage_options: Mapping[str, Any]) -> list[Target]:
    """The files (and dataset folders) a path or URL glob matches."""
    if _is_url(item):
        import fsspec

        fs, path = fsspec.core.url_to_fs(item, **dict(storage_options))
        hits = fs.glob(path, detail=True)
        files = [p for p, d in hits.items() if d.get("type") != "directory"]
        # filesystems that keep the scheme in their paths (http) need no unstripping
        names = sorted(p if "://" in p else fs.unstrip_protocol(p) for p in files)
    else:
        names = sorted(_glob.glob(item, recursive=True))
    found: list[Target] = []
    for name in names:
        if _is_url(name) or not os.path.isdir(name):
            found.append(Target(name, spec=spec, format=fmt))
        elif fmt in (None, "neuroglancer") and spec is None:  # dataset folders expand
            where = _Where(name, storage_options)
            if where.has_info():
                found += _expand_one(name, fmt, spec, storage_options)
    if not found:
        return [Target(item, error=_error("NoMatch", f"{item}: no file matches"))]
    return found


def _expand_folder(item: str, fmt: str | None,
                   storage_options: Mapping[str, Any]) -> list[Target] | None:
    """The targets of a Neuroglancer dataset or annotation layer (a folder or URL with an
    info file), an error target for a local folder without one; None for anything else."""
    looks_like_file = not _is_url(item) and os.path.isfile(item)
    if _is_url(item):  # ask for an info file only where a folder is plausible
        last = item.rstrip("/").rsplit("/", 1)[-1]
        looks_like_file = "." in last and not item.endswith("/")
    if looks_like_file:
        return None
    where = _Where(item, storage_options)
    if where.has_info():
        try:
            if _is_annotation_layer(where):  # one target: its checks span indexes
                return [Target(item, format=LAYER_FORMAT)]
            found = _expand_dataset(where, fmt)
        except (OSError, ValueError) as exc:
            return [Target(item, error=_error(
                type(exc).__name__, f"{item}: cannot expand the dataset: {exc}"))]
        if not found:
            return [Target(item, error=_error(
                "NoMatch", f"{item}: the dataset has no sharded scale with .shard files"))]
        return found
    if not _is_url(item) and os.path.isdir(item):
        return [Target(item, error=_error(
            "IsADirectoryError", f"{item}: a folder without an info file (give a glob "
            f"such as {item.rstrip('/')}/*)"))]
    return None


def expand_targets(items: Iterable[str | Target], *, format: str | None = None,
                   spec: Mapping[str, Any] | None = None,
                   storage_options: Mapping[str, Any] | None = None) -> list[Target]:
    """Expand paths, globs, URLs (and URL globs) and Neuroglancer datasets into shard targets.

    Each target appears once (first occurrence kept). A glob that matches nothing, or a
    dataset whose info cannot be read, becomes a target carrying an ``error``, so it is
    reported rather than silently dropped.
    """
    so = dict(storage_options or {})
    seen: set[str] = set()
    out: list[Target] = []
    for item in items:
        if isinstance(item, Target):
            found = [item]
        else:
            text = os.fspath(item)
            try:
                found = _expand_one(text, format, spec, so)
            except (OSError, ValueError, ImportError) as exc:
                found = [Target(text, error=_error(type(exc).__name__, f"{text}: {exc}"))]
        for t in found:
            if t.name not in seen:
                seen.add(t.name)
                out.append(t)
    return out


# -- the per-shard task ------------------------------------------------------------------------

#: Smallest value of each remote I/O option (what :class:`~shardkit.remote.RemoteSource`
#: accepts), and its command-line spelling.
_IO_MINIMA = {"block_size": (1, "--block-size"), "cache": (0, "--cache"),
              "concurrency": (1, "--concurrency"), "retries": (0, "--retries"),
              "max_whole_read": (0, "--max-whole-read")}


def _check_io_options(io_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``io_options`` checked before any shard is opened (a value RemoteSource would refuse
    fails the whole run once, as it does for one target, not every URL target on its own)."""
    from .errors import ShardkitError

    out = dict(io_options or {})
    for key, value in out.items():
        if key not in _IO_MINIMA and key != "backoff":
            raise ShardkitError(f"unknown I/O option {key!r}; known: "
                                f"{', '.join([*_IO_MINIMA, 'backoff'])}")
        low, flag = _IO_MINIMA.get(key, (0, key))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low:
            raise ShardkitError(f"{flag} must be at least {low}, not {value!r}")
    return out



def _problem_dicts(problems: Iterable[Any]) -> list[dict[str, Any]]:
    return [p.to_dict() if hasattr(p, "to_dict") else {"message": str(p)} for p in problems]


def _call_supported(func: Callable[..., Any], **given: Any) -> Any:
    """``func`` with the options it takes (mixed formats: each takes what applies to it)."""
    import inspect

    params = inspect.signature(func).parameters
    return func(**{k: v for k, v in given.items()
                   if v is not None and v is not False and k in params})


def _jsonable(value: Any) -> Any:
    from .render import to_json

    return json.loads(to_json(value))


def _do_task(reader: Any, task: str | Callable[[Any], Mapping[str, Any]],
             options: Mapping[str, Any]) -> dict[str, Any]:
    if callable(task):
        out = dict(task(reader))
        out.setdefault("ok", not out.get("problems"))
        out["problems"] = list(out.get("problems") or [])
        return out
    if task == "verify":
        problems = _call_supported(reader.verify, content_hash=options.get("content_hash"),
                                   name_check=options.get("name_check"),
                                   strict=options.get("strict"))
        out = {"ok": not problems, "problems": _problem_dicts(problems)}
        notes = list(getattr(problems, "notes", ()))  # checks a format could not make here
        if notes:
            out["notes"] = _problem_dicts(notes)
        return out
    if task == "info":
        return {"ok": True, "problems": [], "summary": _jsonable(reader.summary())}
    if task == "keys":
        fmt = getattr(reader, "format_key", str)
        keys = [fmt(k) for k in reader.keys()]
        return {"ok": True, "problems": [], "key_count": len(keys), "keys": keys}
    raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")


def run_one(target: Target | str, task: str | Callable[[Any], Mapping[str, Any]] = "verify",
            options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run ``task`` on one shard; never raises for anything the shard or its storage does.

    Returns a JSON-ready dict: ``target``, ``format``, ``ok``, ``status`` (``sound``,
    ``unsound`` or ``unreadable``), ``problems``, ``bytes_read`` (through a
    :class:`~shardkit.sources.CountingSource`), ``seconds``, ``error`` (``None``, or
    ``type``/``message``/``offset``/``field``) and what the task adds (``summary``, ``keys``);
    ``notices`` when a file had to be read whole (a server that ignores ``Range``).
    """
    import shardkit

    from .errors import ShardkitError

    if isinstance(target, str):
        target = Target(target)
    options = dict(options or {})
    t0 = time.perf_counter()
    result: dict[str, Any] = {"target": target.name, "format": target.format, "ok": False,
                              "status": "unreadable", "problems": [], "bytes_read": 0,
                              "seconds": 0.0, "error": None}
    if target.error is not None:
        result["error"] = dict(target.error)
        return result
    counter = None
    try:
        if target.format == LAYER_FORMAT:  # a whole annotation layer (a folder or URL)
            with shardkit.open(target.location or target.name,
                               storage_options=dict(options.get("storage_options") or {})
                               ) as reader:
                result["format"] = "neuroglancer"
                result.update(_do_task(reader, task, options))
            result["status"] = "sound" if result["ok"] else "unsound"
            result["seconds"] = round(time.perf_counter() - t0, 6)
            return result
        source = shardkit.open_source(target.location or target.name,
                                      io_options=dict(options.get("io_options") or {}) or None,
                                      **dict(options.get("storage_options") or {}))
        counter = shardkit.CountingSource(source)
        kwargs: dict[str, Any] = {}
        if target.spec is not None:
            kwargs["spec"] = dict(target.spec)
        with shardkit.open(counter, format=target.format, **kwargs) as reader:
            result["format"] = getattr(reader, "format_id", None) or target.format
            result.update(_do_task(reader, task, options))
        result["status"] = "sound" if result["ok"] else "unsound"
        if getattr(source, "read_whole", False):  # its server ignores Range: read whole
            from .remote import whole_read_notice

            result["notices"] = [str(whole_read_notice(source.name, source.size,
                                                       cast(Any, source).max_whole_read))]
    except ShardkitError as exc:
        result["error"] = _error(type(exc).__name__, str(exc), getattr(exc, "offset", None),
                                 getattr(exc, "field", None))
    except OSError as exc:
        msg = f"{exc.filename}: {exc.strerror or exc}" if getattr(exc, "filename", None) \
            else f"{target.name}: {exc}"
        result["error"] = _error(type(exc).__name__, msg)
    except Exception as exc:  # noqa: BLE001 - a reader bug costs one shard, never the run
        result["error"] = _error(type(exc).__name__, f"internal error: {exc}")
    if result["error"] is not None:
        result["ok"] = False
        result["status"] = "unreadable"
    if counter is not None:
        result["bytes_read"] = counter.stats.bytes_read
    if target.location and target.location != target.name:
        _rename(result, target.location, target.name)
    result["seconds"] = round(time.perf_counter() - t0, 6)
    return result


def _rename(result: dict[str, Any], old: str, new: str) -> None:
    """Messages name the target as the user gave it, wherever a worker opened it."""
    for item in [result.get("error"), *result.get("problems", [])]:
        if isinstance(item, dict) and isinstance(item.get("message"), str):
            item["message"] = item["message"].replace(old, new)


def _timeout_result(target: Target, timeout: float) -> dict[str, Any]:
    return {"target": target.name, "format": target.format, "ok": False,
            "status": "unreadable", "problems": [], "bytes_read": 0, "seconds": float(timeout),
            "error": _error("Timeout", f"{target.name}: no result within {timeout:g} s")}


def _crash_result(target: Target, how: str) -> dict[str, Any]:
    return {"target": target.name, "format": target.format, "ok": False,
            "status": "unreadable", "problems": [], "bytes_read": 0, "seconds": 0.0,
            "error": _error("WorkerCrashed", f"{target.name}: {how}")}


def run_one_with_timeout(target: Target, task: Any, options: Mapping[str, Any],
                         timeout: float | None) -> dict[str, Any]:
    """:func:`run_one` in a thread, given up after ``timeout`` seconds (the Dask task).

    A thread cannot be killed: a shard that hangs keeps its thread until its read returns,
    but the run goes on and the shard is reported as timed out.
    """
    if not timeout:
        return run_one(target, task, options)
    box: list[dict[str, Any]] = []
    thread = threading.Thread(target=lambda: box.append(run_one(target, task, options)),
                              name=f"shardkit-bulk {target.name}", daemon=True)
    thread.start()
    thread.join(timeout)
    return box[0] if box else _timeout_result(target, timeout)


# -- local worker processes --------------------------------------------------------------------


def _worker_main(request_fd: int, result_fd: int) -> None:
    """A worker process: run the tasks read from ``request_fd`` until told to stop.

    The first message is the parent's ``sys.path`` (so a task callable imports as it does
    there), the second the run's ``(task, options)``, sent once; then ``(index, target)``
    pairs, each answered on ``result_fd`` in the order received.
    """
    from multiprocessing.connection import Connection

    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    requests = Connection(request_fd, writable=False)
    results = Connection(result_fd, readable=False)
    try:
        parent = list(requests.recv())
        sys.path[:] = parent + [p for p in sys.path if p not in parent]
        task, options = requests.recv()
        import shardkit.formats  # noqa: F401 - the readers, before the clock of a shard starts

        results.send((_READY, None))
        while True:
            msg = requests.recv()
            if msg is None:
                return
            index, target = msg
            results.send((index, run_one(target, task, options)))
    except (EOFError, OSError, KeyboardInterrupt):
        return  # the parent went away


#: glibc malloc settings of local worker processes and of ``connect("local")``'s: buffers
#: of up to 32 MiB (decompressed blocks, read chunks, numpy temporaries) come from the heap and
#: stay there when freed, instead of being mapped, faulted in and zeroed by the kernel, and
#: unmapped again for every block. Measured on a zlib ZSS file: 260 page faults per MB of the
#: file without them, 15 with them, and 18% less CPU. Other allocators ignore them.
WORKER_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(64 << 20)}


def _worker_env() -> dict[str, str]:
    # set, not defaulted: a Dask cluster started earlier in this process leaves its nanny's
    # MALLOC_TRIM_THRESHOLD_ (64 KiB) in os.environ
    return {**os.environ, **WORKER_MALLOC}


_WORKER_CODE = ("import sys; from shardkit.bulk import _worker_main; "
                "_worker_main(int(sys.argv[1]), int(sys.argv[2]))")


_READY = -1  # a worker's first answer: started, imports done (shard timeouts count from here)

#: Shards sent ahead to each local worker: it starts the next one as soon as it answers, without
#: waiting for the parent to read the answer and send more (the parent is never in the way).
_DEPTH = 2


class _Worker:
    """One worker: a fresh interpreter (no fork of a threaded parent, no re-import of the
    caller's ``__main__``) talking over two pipes; its death shows up as end of file. It gets
    the task and options once, then up to :data:`_DEPTH` shards at a time (``jobs``, oldest
    first: the first is the one it is reading)."""

    def __init__(self, task: Any = None, options: Any = None) -> None:
        import subprocess  # here, not at import: `shardkit verify FILE` never starts one
        from multiprocessing.connection import Connection

        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER_CODE, str(req_r), str(res_w)],
                pass_fds=(req_r, res_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                env=_worker_env())
        except BaseException:
            for fd in (req_r, req_w, res_r, res_w):
                os.close(fd)
            raise
        os.close(req_r)
        os.close(res_w)
        self.requests = Connection(req_w, readable=False)
        self.conn = Connection(res_r, writable=False)
        self.jobs: deque[tuple[int, Target, int]] = deque()
        self.ready = False  # it said it started (until then no shard's clock runs)
        #: When the first of ``jobs`` started, as far as the parent knows (before ``ready``:
        #: when the process was started).
        self.started = time.monotonic()
        with contextlib.suppress(OSError):  # a worker that cannot start shows up on first use
            self.requests.send(list(sys.path))
            self.requests.send((task, options))

    @property
    def job(self) -> tuple[int, Target, int] | None:
        """The shard it is reading, if any."""
        return self.jobs[0] if self.jobs else None

    def send(self, job: tuple[int, Target, int]) -> None:
        if not self.jobs and self.ready:
            self.started = time.monotonic()
        self.jobs.append(job)
        self.requests.send((job[0], job[1]))

    def done(self) -> tuple[int, Target, int]:
        """The first job answered: the next one started now."""
        self.started = time.monotonic()
        return self.jobs.popleft()

    def stop(self, kill: bool = False) -> int | None:
        """Stop the process (politely unless ``kill``); its exit code."""
        if kill:
            with contextlib.suppress(OSError):
                self.proc.kill()
        else:
            with contextlib.suppress(OSError, ValueError):
                self.requests.send(None)
        import subprocess

        try:
            code = self.proc.wait(2.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.requests.close()
        self.conn.close()
        return code


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
    return f"exit code {code}"


_START_GRACE = 60.0  # seconds a worker may take to start before its first shard's clock runs


def _limit(w: _Worker, timeout: float) -> float:
    """Seconds from ``w.started`` until its first shard is given up."""
    return timeout if w.ready else timeout + _START_GRACE


def _run_local(jobs: list[tuple[int, Target]], task: Any, options: Mapping[str, Any],
               workers: int, timeout: float | None, retries: int,
               emit: Callable[[int, dict[str, Any]], None]) -> None:
    local = _LocalPool(jobs, task, options, workers, timeout, retries, emit)
    try:
        while local.pending or any(w.jobs for w in local.pool):
            local.feed()
            local.step()
    finally:
        for w in local.pool:
            w.stop(kill=bool(w.jobs))


class _LocalPool:
    """The local workers of one run and the shards not yet sent to them."""

    def __init__(self, jobs: list[tuple[int, Target]], task: Any, options: Mapping[str, Any],
                 workers: int, timeout: float | None, retries: int,
                 emit: Callable[[int, dict[str, Any]], None]) -> None:
        self.task, self.options = task, options
        self.timeout, self.retries, self.emit = timeout, retries, emit
        self.pending: deque[tuple[int, Target, int]] = deque((i, t, 0) for i, t in jobs)
        self.pool = [_Worker(task, options)
                     for _ in range(max(1, min(workers, len(self.pending))))]

    def lost(self, w: _Worker, kill: bool) -> int | None:
        """Replace a dead (or hopeless) worker; the exit code of the old one. The shards sent
        to it after the one it was reading go back to the front of the queue."""
        code = w.stop(kill=kill)
        w.jobs.popleft()
        self.pending.extendleft(reversed(w.jobs))
        w.jobs.clear()
        self.pool[self.pool.index(w)] = _Worker(self.task, self.options)
        return code

    def died(self, w: _Worker) -> None:
        """The worker died reading its first shard: try it again, or report it."""
        index, target, attempt = w.jobs[0]
        code = self.lost(w, kill=True)
        if attempt < self.retries:
            self.pending.appendleft((index, target, attempt + 1))
        else:
            self.emit(index, _crash_result(
                target, f"the worker process died ({_exit_text(code)}) while reading this "
                        f"shard, {attempt + 1} time(s)"))

    def feed(self) -> None:
        """Send each worker shards up to its depth."""
        pending, pool = self.pending, self.pool
        # shards wait in a worker's pipe only while there are more than workers: at the
        # end each goes to a worker that is free, none waits behind another's last shard
        depth = _DEPTH if len(pending) > len(pool) else 1
        for w in list(pool):
            while len(w.jobs) < depth and pending:
                try:
                    w.send(pending.popleft())
                except (OSError, ValueError):  # it is gone (or never started)
                    self.died(w)
                    break

    def step(self) -> None:
        """Wait for answers (at most a second, or until the next shard's time is up); take
        them, and replace the workers that died or ran out of time."""
        from multiprocessing.connection import wait as wait_ready

        timeout = self.timeout
        busy = [w for w in self.pool if w.jobs]
        wait_for = 1.0
        if timeout:
            now = time.monotonic()
            wait_for = max(0.0, min([wait_for] + [w.started + _limit(w, timeout) - now
                                                  for w in busy]))
        ready = set(wait_ready([w.conn for w in busy], wait_for))
        for w in busy:
            if w.conn in ready:
                self.answers(w)
            elif timeout and time.monotonic() - w.started >= _limit(w, timeout):
                index, target, _ = w.jobs[0]
                self.lost(w, kill=True)
                self.emit(index, _timeout_result(target, timeout))

    def answers(self, w: _Worker) -> None:
        """Every answer of ``w`` already there."""
        try:
            while w.jobs:
                got_index, result = w.conn.recv()
                if got_index == _READY:
                    w.ready, w.started = True, time.monotonic()
                else:
                    w.done()
                    self.emit(got_index, result)
                if not w.conn.poll():
                    break
        except (EOFError, OSError):  # end of file: the worker died
            self.died(w)


# -- Dask --------------------------------------------------------------------------------------


def _run_many(targets: list[Target], task: Any, options: Mapping[str, Any],
              timeout: float | None) -> list[dict[str, Any]]:
    """The Dask task: :func:`run_one_with_timeout` on each of a group of small shards."""
    return [run_one_with_timeout(t, task, options, timeout) for t in targets]


def _groups(jobs: list[tuple[int, Target]], sizes: Mapping[int, int],
            threads: int) -> list[list[tuple[int, Target]]]:
    """Jobs (largest first) cut into Dask tasks: a shard of a known size below a
    ``1 / (8 * threads)`` share of the known bytes joins a group of its like (up to that
    share, 64 shards, and a ``1 / (4 * threads)`` share of the small shards), so scheduler
    overhead (a millisecond or more per task) is paid per group, not per small shard; large
    shards, and shards of unknown size, are tasks of their own. Every thread still gets
    several tasks to balance with, even where small files cost more than their bytes say
    (a bz2 ZSS file takes longer per byte than an SWH shard takes)."""
    known = sum(v for v in sizes.values() if v > 0)
    share = known / (8 * max(1, threads)) if known else 0
    small = sum(1 for job in jobs if 0 <= sizes.get(job[0], -1) < share)
    most = max(1, min(64, -(-small // (4 * max(1, threads)))))
    out: list[list[tuple[int, Target]]] = []
    group: list[tuple[int, Target]] = []
    held = 0
    for job in jobs:
        size = sizes.get(job[0], -1)
        if size < 0 or size >= share:
            out.append([job])
            continue
        if group and (held + size > share or len(group) >= most):
            out.append(group)
            group, held = [], 0
        group.append(job)
        held += size
    if group:
        out.append(group)
    return out


def _run_dask(client: Any, jobs: list[tuple[int, Target]], task: Any,
              options: Mapping[str, Any], timeout: float | None,
              emit: Callable[[int, dict[str, Any]], None], window: int | None = None,
              sizes: Mapping[int, int] | None = None) -> None:
    from distributed import as_completed

    try:
        from distributed import KilledWorker
    except ImportError:  # pragma: no cover - older distributed
        from distributed.scheduler import KilledWorker

    try:
        threads = sum(client.nthreads().values())
    except Exception:  # noqa: BLE001 - an unreachable scheduler shows up below
        threads = 1
    if window is None:
        window = max(256, 16 * threads)
    import uuid

    run_id = uuid.uuid4().hex[:12]
    todo: deque[list[tuple[int, Target]]] = deque(_groups(jobs, sizes or {}, threads))
    where: dict[Any, list[tuple[int, Target]]] = {}

    def submit() -> Any | None:
        if not todo:
            return None
        group = todo.popleft()
        key = f"shardkit-bulk-{run_id}-{group[0][0]}" + (f"-{len(group)}" if len(group) > 1
                                                         else "")
        if len(group) == 1:
            fut = client.submit(run_one_with_timeout, group[0][1], task, dict(options), timeout,
                                key=key, pure=False)
        else:
            fut = client.submit(_run_many, [t for _, t in group], task, dict(options), timeout,
                                key=key, pure=False)
        where[fut] = group
        return fut

    first = [f for f in (submit() for _ in range(window)) if f is not None]
    queue = as_completed(first)
    for fut in queue:
        group = where.pop(fut)
        try:
            got = fut.result()
            results = got if len(group) > 1 else [got]
        except Exception as exc:  # noqa: BLE001 - recorded for this shard, the run goes on
            if len(group) > 1:  # try each shard of the group on its own: one is to blame
                fut.release()
                todo.extendleft([job] for job in reversed(group))
                for _ in range(len(group)):
                    nxt = submit()
                    if nxt is not None:
                        queue.add(nxt)
                continue
            if isinstance(exc, KilledWorker):
                results = [_crash_result(group[0][1], "Dask workers died while reading this "
                                                      f"shard: {exc}")]
            else:
                results = [_crash_result(group[0][1], f"{type(exc).__name__}: {exc}")]
        fut.release()
        for (index, _), result in zip(group, results, strict=True):
            emit(index, result)
        nxt = submit()
        if nxt is not None:
            queue.add(nxt)


def _largest_first(jobs: list[tuple[int, Target]]) -> tuple[list[tuple[int, Target]],
                                                              dict[int, int]]:
    """Jobs ordered for many workers: local files by size, largest first (the longest shards
    start first, so no worker is left with one at the end while the others idle); URLs and
    files whose size cannot be read (-1) keep their order ahead of them. Also the sizes."""
    sizes: dict[int, int] = {}
    for i, t in jobs:
        where = t.location or t.name
        size = -1
        if not _is_url(where):
            with contextlib.suppress(OSError, ValueError):
                size = os.stat(where).st_size
        sizes[i] = size
    order = sorted(range(len(jobs)), key=lambda k: (-1 if sizes[jobs[k][0]] < 0 else 0,
                                                    -sizes[jobs[k][0]], k))
    if sizes and all(v < 0 for v in sizes.values()):
        return jobs, sizes
    return [jobs[k] for k in order], sizes


# -- reports, resume, progress -----------------------------------------------------------------


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
    from .writers._atomic import atomic_file

    with atomic_file(path) as fh:
        for line in lines:
            fh.write(line.encode("utf-8"))


def _progress_bar(total: int, enabled: bool, stream: TextIO) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, disable=not enabled, file=stream, unit="shard", dynamic_ncols=True,
                smoothing=0.1, mininterval=0.25)


def default_jobs() -> int:
    """The number of cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


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


def connect(address: str, jobs: int | None = None) -> tuple[Any, Callable[[], None]]:
    """A Dask client for ``address`` (``tcp://host:port``, or ``local`` for a LocalCluster of
    ``jobs`` single-threaded worker processes) and a function that closes what was opened."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        from .errors import ShardkitError

        raise ShardkitError("--dask needs Dask's distributed package: "
                            "pip install 'shardkit[dask]'") from exc
    if address == "local":
        import dask

        # the workers' malloc as local workers have it (Dask's nanny sets a trim threshold
        # of 64 KiB by default: every block's buffers would be unmapped and faulted in again).
        # A nanny takes these from its config, where os.environ overrides it, and keeps them
        # for every worker it starts.
        saved = {k: os.environ.get(k) for k in WORKER_MALLOC}
        os.environ.update(WORKER_MALLOC)
        try:
            with dask.config.set({f"distributed.nanny.pre-spawn-environ.{k}": v
                                  for k, v in WORKER_MALLOC.items()}):
                cluster = LocalCluster(n_workers=jobs or default_jobs(), threads_per_worker=1,
                                       processes=True, dashboard_address=None)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        client = Client(cluster)

        def close() -> None:
            client.close()
            cluster.close()

        return client, close
    client = Client(address, timeout=30)
    return client, client.close


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
    from .errors import Problem

    return str(Problem(str(problem.get("check") or "problem"), str(problem.get("message", "")),
                       problem.get("offset"), problem.get("field")))
