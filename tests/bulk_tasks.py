"""Per-shard task functions for the bulk tests: they verify, and misbehave on one target.

They take the target name (a suffix) as their first arguments, so tests pass them as
``functools.partial(kill_once, marker, victim)``; the partial pickles to worker processes.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any


def _verify(reader: Any) -> dict[str, Any]:
    return {"problems": [p.to_dict() for p in reader.verify()]}


def kill_once(marker: str, victim: str, reader: Any) -> dict[str, Any]:
    """SIGKILL the worker process the first time ``victim`` is read (``marker`` records it)."""
    if reader.source.name.endswith(victim) and not os.path.exists(marker):
        Path(marker).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return _verify(reader)


def always_kill(victim: str, reader: Any) -> dict[str, Any]:
    """SIGKILL the worker process whenever ``victim`` is read."""
    if reader.source.name.endswith(victim):
        os.kill(os.getpid(), signal.SIGKILL)
    return _verify(reader)


def sleep_on(victim: str, seconds: float, reader: Any) -> dict[str, Any]:
    """Hang for ``seconds`` on ``victim``."""
    if reader.source.name.endswith(victim):
        time.sleep(seconds)
    return _verify(reader)


def malloc_env(reader: Any) -> dict[str, Any]:
    """The malloc settings the worker process runs with."""
    from shardkit.bulk import WORKER_MALLOC

    return {"ok": True, "problems": [], "env": [os.environ.get(k) for k in WORKER_MALLOC]}


def dask_profiling(reader: Any) -> dict[str, Any]:
    """Whether the Dask worker running this task samples its stacks."""
    import dask

    return {"ok": True, "problems": [],
            "profile": dask.config.get("distributed.worker.profile.enabled")}
