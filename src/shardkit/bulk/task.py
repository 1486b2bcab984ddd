"""The per-shard task of a bulk run: one shard opened, its task run, one JSON-ready result."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from .targets import LAYER_FORMAT, Target, _error

TASKS = ("verify", "info", "keys")


#: Smallest value of each remote I/O option (what :class:`~shardkit.remote.RemoteSource`
#: accepts), and its command-line spelling.
_IO_MINIMA = {"block_size": (1, "--block-size"), "cache": (0, "--cache"),
              "concurrency": (1, "--concurrency"), "retries": (0, "--retries"),
              "max_whole_read": (0, "--max-whole-read")}


def _check_io_options(io_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``io_options`` checked before any shard is opened (a value RemoteSource would refuse
    fails the whole run once, as it does for one target, not every URL target on its own)."""
    from ..errors import ShardkitError

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
    from ..render import to_json

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

    from ..errors import ShardkitError

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
            from ..remote import whole_read_notice

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
