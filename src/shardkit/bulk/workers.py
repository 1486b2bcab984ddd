"""The local engine of a bulk run: supervised worker processes, each reading one shard at a
time (a crash or a timeout costs only that shard)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from .targets import Target
from .task import _crash_result, _timeout_result, run_one


def default_jobs() -> int:
    """The number of cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


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
