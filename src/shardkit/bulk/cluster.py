"""The Dask engine of a bulk run: shards (small ones in groups) as tasks of a cluster."""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from .targets import Target, _is_url
from .task import _crash_result, run_one_with_timeout
from .workers import WORKER_MALLOC, default_jobs


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


#: Dask settings of ``connect("local")``'s workers (a nanny hands its config to each worker it
#: starts). Dask's statistical profiler samples every worker's stack each 10 ms, for a
#: dashboard this cluster does not start: measured on 60 shards at 2 workers, it cost the
#: workers 7-10% more CPU than a run without it.
LOCAL_CLUSTER_CONFIG: dict[str, Any] = {"distributed.worker.profile.enabled": False}


def connect(address: str, jobs: int | None = None) -> tuple[Any, Callable[[], None]]:
    """A Dask client for ``address`` (``tcp://host:port``, or ``local`` for a LocalCluster of
    ``jobs`` single-threaded worker processes) and a function that closes what was opened."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        from ..errors import ShardkitError

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
            with dask.config.set({**{f"distributed.nanny.pre-spawn-environ.{k}": v
                                     for k, v in WORKER_MALLOC.items()},
                                  **LOCAL_CLUSTER_CONFIG}):
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
