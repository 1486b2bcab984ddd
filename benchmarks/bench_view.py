#!/usr/bin/env python3
"""``shardkit view`` in a real terminal: time to the first frame on a large SWH shard.

Each run starts ``shardkit view FILE`` in a new tmux window of 160x48 (a private tmux server)
and polls ``tmux capture-pane -p`` every 20 ms until the screen shows both the tree's root
(the file's name) and the hex row of offset 0 (``00000000  53 57 48 ...``): that is the first
paint. Polling goes on until the tree's top is filled in (the ``layout`` line, once the reader
is open). Then ``q`` is sent and the exit status is read from the dead pane. Per run it
reports wall time to first paint and to the filled tree, and the viewer's CPU time (user +
system, from ``/proc``) at first paint. One untimed warm-up run comes first (page cache,
bytecode: the children write and read bytecode under a temporary ``PYTHONPYCACHEPREFIX``, as
after ``pip install``). The machine may be shared: the load average is printed with the
numbers.

Target (issue 22; reported as PASS/MISS, never enforced): the median first paint is within
1 s whatever the file's size, and ``q`` exits with status 0 in every run.

The shard: ``--file PATH`` (an SWH shard), else one of ``--objects`` objects (default
2,000,000 of 490..529 bytes: 1.13 GB) is written with ``shardkit.writers.swh`` into a
temporary directory first (about 4 minutes on 2 cores) and deleted afterwards.

Run: ``.venv/bin/python benchmarks/bench_view.py [--file PATH] [--runs N] [--json]``. Exits 0
whatever the numbers are (and when tmux or Textual is missing: it says why it skipped);
non-zero only when the viewer never paints or does not exit.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

TARGET_S = 1.0
POLL_S = 0.02
TIMEOUT_S = 30.0
SIZE = (160, 48)


def make_shard(path: Path, n: int) -> None:
    """``n`` objects of 490..529 bytes under their SHA-256 (the viewer reads none of them)."""
    from shardkit.writers.swh import SwhShardWriter

    rnd = os.urandom(1 << 20)
    with SwhShardWriter(path) as w:
        for i in range(n):
            v = i.to_bytes(8, "little") + rnd[(i * 7919) % 900_000 :][: 490 + i % 40]
            w.write(hashlib.sha256(v).digest(), v)


class Tmux:
    """A private tmux server (its own socket), so nothing else's sessions are touched."""

    def __init__(self) -> None:
        self.socket = f"shardkit-bench-view-{os.getpid()}"

    def __call__(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, "-f", os.devnull, *args],
                              capture_output=True, text=True, check=check)
        return done.stdout

    def kill(self) -> None:
        self("kill-server", check=False)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of process ``pid`` (threads included), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _child(pid: int) -> int:
    """The first child of process ``pid`` (the viewer under its ``sh``), else ``pid``."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return pid
    return int(kids[0]) if kids else pid


def one_run(tmux: Tmux, argv: list[str], env: dict[str, str], root: str, filled: str
            ) -> dict[str, Any]:
    """Start the viewer in a new window; time the first paint and the filled tree; quit.

    The viewer runs under ``sh``, which writes its exit status to a file: tmux's own
    ``pane_dead_status`` is sometimes never set for a pane whose process has exited (seen
    here in about one run of ten), which made a clean exit look like a hang."""
    envs = [f"{k}={v}" for k, v in env.items()]
    fd, status_file = tempfile.mkstemp(prefix="shardkit-bench-view-", suffix=".status")
    os.close(fd)
    os.unlink(status_file)
    inner = " ".join(["env", *map(_quote, envs), *map(_quote, argv)])
    cmd = _quote(f"{inner}; echo $? > {_quote(status_file)}")
    t0 = time.monotonic()
    pane = tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "v", f"sh -c {cmd}").strip()
    pid, size = tmux("display-message", "-p", "-t", pane,
                     "#{pane_pid} #{pane_width}x#{pane_height}").split()
    assert size == f"{SIZE[0]}x{SIZE[1]}", f"the pane is {size}"
    first = filled_at = cpu = None
    screen = ""
    viewer = int(pid)
    while time.monotonic() - t0 < TIMEOUT_S:
        if viewer == int(pid):
            viewer = _child(int(pid))
        screen = tmux("capture-pane", "-p", "-t", pane)
        now = time.monotonic() - t0
        if first is None and root in screen and "00000000  53 57 48 53" in screen:
            first, cpu = now, cpu_seconds(viewer)
        if first is not None and filled in screen:
            filled_at = now
            break
        time.sleep(POLL_S)
    tmux("send-keys", "-t", pane, "q")
    status: int | str | None = None  # the exit status, or None: still running
    deadline = time.monotonic() + TIMEOUT_S
    while status is None and time.monotonic() < deadline:
        try:
            text = Path(status_file).read_text().strip()
        except OSError:
            text = ""
        if text:
            code = int(text)
            status = code if code < 128 else f"signal {code - 128}"
        else:
            time.sleep(0.05)
    if status is None:  # q did not end it: keep what it shows
        screen = tmux("capture-pane", "-p", "-t", pane)
    tmux("kill-pane", "-t", pane, check=False)
    with contextlib.suppress(OSError):
        os.unlink(status_file)
    return {"first_paint_s": first, "tree_filled_s": filled_at, "cpu_at_first_paint_s": cpu,
            "exit_status": status,
            "screen": screen if first is None or status is None else None}


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, help="an SWH shard (else one is written)")
    parser.add_argument("--objects", type=int, default=2_000_000,
                        help="objects in the shard written when --file is not given")
    parser.add_argument("--runs", type=int, default=5, help="timed runs (default 5)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    if shutil.which("tmux") is None:
        print("bench_view: skipped: tmux is not installed (it gives the real terminal)")
        return 0
    try:
        import textual  # noqa: F401
    except ImportError:
        print("bench_view: skipped: Textual (the view extra) is not installed")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file
        if path is None:
            path = Path(tmp) / "big.shard"
            t0 = time.monotonic()
            make_shard(path, args.objects)
            print(f"(writing {args.objects:,} objects took {time.monotonic() - t0:.0f} s)",
                  file=sys.stderr)
        path = path.resolve()
        env = {"PYTHONPATH": str(ROOT / "src"), "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pyc"),
               "PYTHONDONTWRITEBYTECODE": "", "TERM": "xterm-256color"}
        cli = [sys.executable, "-m", "shardkit", "view", str(path)]
        tmux = Tmux()
        # one idle window holds the session; each run is a new window of the same size, kept
        # after its process exits (remain-on-exit) so that its exit status can be read
        tmux("new-session", "-d", "-s", "v", "-x", str(SIZE[0]), "-y", str(SIZE[1]),
             "sleep 3600")
        tmux("set-option", "-g", "remain-on-exit", "on")
        tmux("set-option", "-g", "status", "off")
        try:
            one_run(tmux, cli, env, path.name, "layout:")  # warm-up: bytecode, page cache
            load = os.getloadavg()
            runs = [one_run(tmux, cli, env, path.name, "layout:") for _ in range(args.runs)]
            load_after = os.getloadavg()
        finally:
            tmux.kill()
        size = path.stat().st_size
    return report(path, size, runs, load, load_after, args.json)


def report(path: Path, size: int, runs: list[dict[str, Any]], load: tuple[float, ...],
           load_after: tuple[float, ...], as_json: bool) -> int:
    firsts = [r["first_paint_s"] for r in runs if r["first_paint_s"] is not None]
    fills = [r["tree_filled_s"] for r in runs if r["tree_filled_s"] is not None]
    cpus = [r["cpu_at_first_paint_s"] for r in runs if r["cpu_at_first_paint_s"] is not None]
    painted = len(firsts) == len(runs)
    exits_ok = all(r["exit_status"] == 0 for r in runs)
    median = statistics.median(firsts) if firsts else None
    ok = painted and median is not None and median <= TARGET_S
    result = {"file": str(path), "size": size, "terminal": list(SIZE),
              "load_average_before": load, "load_average_after": load_after,
              "runs": runs, "median_first_paint_s": median,
              "median_tree_filled_s": statistics.median(fills) if fills else None,
              "median_cpu_at_first_paint_s": statistics.median(cpus) if cpus else None,
              "first_paint_pass": ok, "exit_pass": exits_ok}
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        print(f"shardkit view {path.name} ({size:,} bytes), tmux "
              f"{SIZE[0]}x{SIZE[1]}, load average {load[0]:.2f} before, "
              f"{load_after[0]:.2f} after")
        print(f"{'run':>4} {'first paint s':>14} {'tree filled s':>14} {'CPU at paint s':>15} "
              f"{'exit':>5}")
        for i, r in enumerate(runs, 1):
            print(f"{i:>4} {_s(r['first_paint_s']):>14} {_s(r['tree_filled_s']):>14} "
                  f"{_s(r['cpu_at_first_paint_s']):>15} {r['exit_status']!s:>5}")
        print(f"{'median':>6} first paint {_s(median)} s (target <= {TARGET_S:.1f} s): "
              f"{'PASS' if ok else 'MISS'}; tree filled {_s(result['median_tree_filled_s'])} s; "
              f"CPU at first paint {_s(result['median_cpu_at_first_paint_s'])} s")
        print(f"{'':>6} q exits with status 0 in every run: {'PASS' if exits_ok else 'MISS'}")
        for r in runs:
            if r["screen"] is not None:
                print("a run that never painted or did not exit on q; its screen:\n"
                      + r["screen"])
                break
    return 0 if painted and all(r["exit_status"] is not None for r in runs) else 1


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


if __name__ == "__main__":
    sys.exit(main())
