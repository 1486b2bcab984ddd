"""The documentation's Python examples run, so they stay true.

Every ```python block of docs/**/*.md and README.md runs; the blocks of one page run in order in
one namespace (a page is a tour), in a fresh folder where ``tests/`` is the repository's, so the
examples read the samples in ``tests/data`` by the paths the docs print and write only there. A
block that cannot run here (a cluster, a bucket) says why in an HTML comment on the line above
it, ``<!-- not run: REASON -->``, and is reported as skipped with that reason.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->\s*$")
#: pages whose examples are the point of the page: each must have a block that runs
MUST_RUN = ["README.md", "docs/quickstart.md", "docs/formats/swh.md", "docs/formats/mdb.md",
            "docs/formats/zss.md", "docs/formats/zs.md", "docs/formats/neuroglancer.md",
            "docs/formats/amudai.md", "docs/formats/ng-annotations.md",
            "docs/tasks/write.md", "docs/tasks/bulk-verify.md", "docs/tasks/remote.md",
            "docs/tasks/ng-convert.md"]


def blocks(page: Path) -> list[tuple[int, str, str | None]]:
    """``(line, code, reason not run or None)`` for each python block of ``page``."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = NOT_RUN.search(before)
        out.append((line, m.group(1), skip.group(1) if skip else None))
    return out


def test_pages_are_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert set(MUST_RUN) <= names
    for name in MUST_RUN:
        assert any(reason is None for _, _, reason in blocks(ROOT / name)), \
            f"{name} has no Python example that runs"


def test_extraction() -> None:
    page = "x\n<!-- not run: needs a cluster -->\n```python\na = 1\n```\n\n```python\nb = 2\n```\n"
    tmp = ROOT / ".pytest-docs-extraction.md"
    try:
        tmp.write_text(page)
        assert blocks(tmp) == [(3, "a = 1\n", "needs a cluster"), (7, "b = 2\n", None)]
    finally:
        tmp.unlink()


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    skipped = []
    for line, code, reason in blocks(page):
        if reason is not None:
            skipped.append(f"line {line}: {reason}")
            continue
        # a failure's traceback names the page and the block's line ("docs/x.md:12")
        exec(compile(code, f"{page.relative_to(ROOT).as_posix()}:{line}", "exec"), namespace)
    assert os.getcwd() == str(tmp_path)
    if skipped and len(skipped) == len(blocks(page)):
        pytest.skip("; ".join(skipped))


#: modules the examples use by name, and how a block imports each
_MODULES = {"shardkit": r"import shardkit\b", "np": r"import numpy as np\b",
            "json": r"import json\b", "os": r"import os\b", "hashlib": r"import hashlib\b",
            "fsspec": r"import fsspec\b"}


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_each_block_imports_what_it_uses(page: Path) -> None:
    """A block copied alone into a script runs: the modules it names, it imports (the blocks
    of a page share one namespace when they run, which would hide a missing import)."""
    for line, code, _ in blocks(page):
        for name, imported in _MODULES.items():
            if re.search(rf"(?<![\w.]){name}\.", code):
                assert re.search(rf"^\s*{imported}", code, re.M), \
                    f"{page.relative_to(ROOT).as_posix()}:{line} uses {name} without importing it"
