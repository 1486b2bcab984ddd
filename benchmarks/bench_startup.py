#!/usr/bin/env python3
"""Cold start: ``import shardkit``, and ``shardkit info`` on the bundled samples of each format.

Each case runs in a fresh interpreter (the one running this script) and is timed wall-clock
from ``subprocess`` start to exit; cases are interleaved (a, b, c, a, b, c...) after one
untimed warm-up round, and the median of ``--runs`` is reported. The files are in the OS page
cache, so this measures import and start-up cost, not disk speed.

Every module runs from compiled bytecode, as after ``pip install`` (which compiles the
package's ``.pyc`` files, as it did numpy's): the children write and read bytecode under a
temporary ``PYTHONPYCACHEPREFIX`` (the warm-up round writes it), whatever
``PYTHONDONTWRITEBYTECODE`` says, and the source tree is left untouched. Without that, an
editable install in an environment that forbids writing bytecode compiles every shardkit
module on every start (about 35 ms for the Amudai reader alone) while numpy's imports read
their installed bytecode.

Targets (PASS/MISS, reported, never enforced):

* ``import shardkit`` <= 40 ms above a bare interpreter (``python -c pass``);
* ``shardkit info FILE`` on each bundled sample <= 2x ``python -c "import numpy"``: by default
  a small sample and the largest one of each format, every readable sample with
  ``--every-sample``;
* the first ``shardkit.open`` of each format in a fresh process, ``import shardkit`` included,
  <= 50 ms (best of ``--runs``, timed inside the child);
* ``shardkit get FILE KEY`` on an SWH shard <= 150 ms from process start (best of ``--runs``).

Then each ``info`` command runs once more with ``-X importtime`` and an import audit hook, and
the script lists the heaviest packages that shardkit code imports itself (ms, with everything
they import) and the line that imports each (``shardkit.formats.swh:23``), so a miss names the
import to move.

Run: ``.venv/bin/python benchmarks/bench_startup.py [--runs N] [--json]``. The exit code is 0
whatever the numbers are; non-zero only when a command fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SAMPLES = {
    "swh": DATA / "swh" / "tiny.shard",
    "mdb": DATA / "mdb" / "real" / "session"
    / "b04ac8152506ea5af6b90a7378a3d35c46cbef373a597241937795e323cea8f1.mdb",
    "zss": DATA / "zss" / "tiny_zlib.zss",
    "amudai": DATA / "amudai" / "single.amudai.shard",
    "neuroglancer": DATA / "neuroglancer" / "cv_identity_raw",
}
IMPORT_BUDGET_MS = 40.0
INFO_FACTOR = 2.0
#: The first ``shardkit.open`` of each format in a fresh process, imports included.
FIRST_OPEN_SAMPLES = {
    **SAMPLES,
    "mosaic": DATA / "mosaic" / "single.mosaic",
    "zs": DATA / "zs" / "made" / "lines-deflate-default.zs",
    "neuroglancer annotations": DATA / "ng_annotations" / "sk_points",
}
FIRST_OPEN_BUDGET_MS = 50.0
GET_BUDGET_MS = 150.0

# Run in the child: time ``import shardkit`` + the first ``open`` (the file's header only).
_FIRST_OPEN = """
import sys, time
t0 = time.perf_counter()
import shardkit
shardkit.open(sys.argv[1])
print((time.perf_counter() - t0) * 1000)
"""


def _cli() -> list[str]:
    """How a user starts the CLI: the console script beside this interpreter, else ``-m``."""
    script = Path(sys.executable).parent / "shardkit"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "shardkit"]


def all_samples() -> dict[str, list[Path]]:
    """Every readable bundled sample, by format (damaged and unfinished files left out)."""
    def size(path: Path) -> int:
        files = path.rglob("*") if path.is_dir() else [path]
        return sum(f.stat().st_size for f in files if f.is_file())

    found = {
        "swh": sorted((DATA / "swh").glob("*.shard")),
        "mdb": sorted((DATA / "mdb").rglob("*.mdb"))
        + sorted((DATA / "mdb").rglob("*.shard")),
        "zss": [p for p in sorted((DATA / "zss").glob("*.zss"))
                if not p.name.startswith(("corrupt_", "incomplete_"))],
        "amudai": sorted((DATA / "amudai").glob("*.amudai.shard")),
        "neuroglancer": sorted(p for p in (DATA / "neuroglancer").iterdir()
                               if (p / "info").is_file()),
    }
    return {fmt: sorted(paths, key=size) for fmt, paths in found.items()}


def cases(every: bool = False) -> dict[str, list[str]]:
    """The commands timed: a bare interpreter, numpy, ``import shardkit``, then ``info`` on
    the representative sample and the largest sample of each format (every sample with
    ``every``)."""
    py = sys.executable
    out = {
        "python -c pass": [py, "-c", "pass"],
        "python -c 'import numpy'": [py, "-c", "import numpy"],
        "import shardkit": [py, "-c", "import shardkit"],
    }
    for fmt, paths in all_samples().items():
        chosen = paths if every else list(dict.fromkeys([SAMPLES[fmt], paths[-1]]))
        for path in chosen:
            name = path.name if len(path.name) <= 28 else path.name[:12] + "..." + path.name[-8:]
            out[f"info {fmt} {name}"] = [*_cli(), "info", str(path)]
    return out


#: The children's environment: bytecode written to and read from a temporary folder.
_ENV: dict[str, str] = {}


def _run(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env or _ENV or None)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr}")
    return elapsed, proc.stderr


def measure(runs: int, every: bool = False) -> dict[str, float]:
    """Median wall time in ms of each case, interleaved, after one warm-up round."""
    todo = cases(every)
    times: dict[str, list[float]] = {name: [] for name in todo}
    for round_ in range(runs + 1):
        for name, argv in todo.items():
            elapsed, _ = _run(argv)
            if round_:
                times[name].append(elapsed * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


# Run in the child: note, for each package imported for the first time by shardkit code itself
# (not by one of its dependencies), the line that imports it (the "import" audit event fires
# before the module is loaded).
_PROBE = """
import json, sys
importers = {}
def hook(event, args):
    if event != "import":
        return
    top = args[0].partition(".")[0]
    if top in sys.modules and top != "shardkit":  # a namespace package (google.protobuf)
        top = ".".join(args[0].split(".")[:2])
    if top in importers or top in sys.modules or top.startswith("shardkit"):
        return
    f = sys._getframe(1)
    while f is not None and (f.f_code.co_filename.startswith("<frozen")
                             or f.f_globals.get("__name__", "").startswith("importlib")):
        f = f.f_back  # the import machinery
    name = f.f_globals.get("__name__", "") if f is not None else ""
    if name.startswith("shardkit"):  # imported by shardkit itself, not by a dependency
        importers[top] = f"{name}:{f.f_lineno}"
    else:
        importers[top] = None
sys.addaudithook(hook)
from shardkit.cli import main
try:
    code = main(sys.argv[1:])
finally:
    sys.stderr.write("\\nIMPORTERS " + json.dumps(importers) + "\\n")
sys.exit(code)
"""


def heaviest_imports(argv: list[str], top: int = 5) -> list[dict[str, Any]]:
    """The ``top`` heaviest packages a command imports after start-up, and who imports each.

    Times come from ``-X importtime`` (a package's outermost import lines, summed); the
    importer is the line of shardkit code that first imported the package.
    """
    env = dict(_ENV or os.environ, PYTHONPROFILEIMPORTTIME="1")
    _, err = _run([sys.executable, "-c", _PROBE, *argv], env)
    importers: dict[str, str | None] = {}
    rows: list[tuple[int, str, float]] = []  # (depth, module, cumulative ms), in print order
    for line in err.splitlines():
        if line.startswith("IMPORTERS "):
            importers = json.loads(line[len("IMPORTERS "):])
            continue
        parts = line.split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[1].strip().isdigit():
            depth = (len(parts[2]) - len(parts[2].lstrip(" ")) - 1) // 2
            rows.append((depth, parts[2].strip(), int(parts[1]) / 1000))

    def within(name: str, package: str) -> bool:
        return name == package or name.startswith(package + ".")

    def cost(package: str) -> float:
        """Cumulative ms of ``package``: its outermost import lines, summed."""
        total = 0.0
        for i, (depth, name, ms) in enumerate(rows):
            if within(name, package):
                parent = next((n for d, n, _ in rows[i + 1:] if d < depth), "")
                if not within(parent, package):
                    total += ms
        return total

    heavy = [{"module": name, "ms": round(cost(name), 1), "imported_by": where}
             for name, where in importers.items() if where is not None]
    heavy.sort(key=lambda r: -r["ms"])
    return heavy[:top]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=9, help="timed runs per case (default 9)")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("--every-sample", action="store_true",
                    help="time info on every bundled sample, not one small and the largest "
                         "of each format")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="shardkit-pycache-") as cache:
        _ENV.update(os.environ, PYTHONPYCACHEPREFIX=cache)
        _ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        return report(args)


def first_opens(runs: int) -> dict[str, float]:
    """Best of ``runs`` of the first open of each format (ms, measured inside a fresh
    interpreter from before ``import shardkit`` to after ``open``), and ``shardkit get`` on
    an SWH shard, wall time from process start."""
    out: dict[str, float] = {}
    for fmt, path in FIRST_OPEN_SAMPLES.items():
        argv = [sys.executable, "-c", _FIRST_OPEN, str(path)]
        _run(argv)  # writes the bytecode
        out[f"first open {fmt}"] = min(float(subprocess.run(
            argv, capture_output=True, text=True, env=_ENV, check=True).stdout)
            for _ in range(runs))
    swh = SAMPLES["swh"]
    import shardkit

    with shardkit.open(swh) as shard:
        key = next(iter(shard.keys())).hex()
    argv = [*_cli(), "get", str(swh), key]
    _run(argv)
    out["shardkit get (swh)"] = min(_run(argv)[0] * 1000 for _ in range(runs))
    return out


def report(args: argparse.Namespace) -> int:
    """Measure, then print the table (or JSON)."""
    ms = measure(args.runs, args.every_sample)
    ms.update(first_opens(args.runs))
    bare, numpy_ms = ms["python -c pass"], ms["python -c 'import numpy'"]
    rows = []
    for name, value in ms.items():
        target = verdict = None
        if name == "import shardkit":
            target = bare + IMPORT_BUDGET_MS
            label = f"<= {target:.0f} (bare + {IMPORT_BUDGET_MS:.0f})"
        elif name.startswith("first open "):
            target = FIRST_OPEN_BUDGET_MS
            label = f"<= {target:.0f} (best of {args.runs})"
        elif name.startswith("shardkit get"):
            target = GET_BUDGET_MS
            label = f"<= {target:.0f} (best of {args.runs})"
        elif name.startswith("info "):
            target = INFO_FACTOR * numpy_ms
            label = f"<= {target:.0f} ({INFO_FACTOR:g}x numpy)"
        else:
            label = ""
        if target is not None:
            verdict = "PASS" if value <= target else "MISS"
        rows.append({"case": name, "ms": round(value, 1), "target_ms": target and round(target, 1),
                     "target": label, "result": verdict})
    imports = {f"info ({fmt})": heaviest_imports(["info", str(path)])
               for fmt, path in SAMPLES.items()}

    if args.json:
        print(json.dumps({"runs": args.runs, "rows": rows, "heaviest_imports": imports},
                         indent=2))
        return 0
    print(f"cold start, wall time, median of {args.runs} runs (ms)")
    print(f"{'case':<44} {'ms':>8}  {'target':<26} result")
    for r in rows:
        print(f"{r['case']:<44} {r['ms']:>8.1f}  {r['target']:<26} {r['result'] or ''}")
    print("\nheaviest packages each command imports (cumulative ms, -X importtime) and the "
          "shardkit line that imports each:")
    for name, heavy in imports.items():
        text = ", ".join(f"{h['module']} {h['ms']:.0f} ({h['imported_by']})" for h in heavy)
        print(f"  {name}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
