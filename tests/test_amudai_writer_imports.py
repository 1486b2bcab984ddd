"""The Amudai writer modules load in any order: no import cycle between the writer and the
NDJSON/CSV ingest, and no module-name aliases left over from older layouts."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import shardkit.writers

WRITERS = Path(shardkit.writers.__file__).parent
MODULES = sorted(p.stem for p in WRITERS.glob("amudai*.py"))


def _module_level_imports(name: str) -> set[str]:
    """The sibling ``amudai*`` modules that ``writers/<name>.py`` imports while it loads
    (imports inside functions and under ``if TYPE_CHECKING:`` do not run then)."""
    tree = ast.parse((WRITERS / f"{name}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 1:
            found.update(a.name for a in node.names)
    return {m for m in found if m in MODULES}


def test_amudai_writer_import_graph_has_no_cycle() -> None:
    graph = {m: _module_level_imports(m) for m in MODULES}
    assert "amudai_ingest" not in graph["amudai"]
    assert "amudai" not in graph["amudai_schema"] and "amudai_ingest" not in graph["amudai_schema"]
    assert graph["amudai_ingest"] >= {"amudai_schema"}
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(m: str, path: list[str]) -> None:
        assert state.get(m) != 1, f"import cycle: {' -> '.join([*path, m])}"
        if state.get(m) == 2:
            return
        state[m] = 1
        for dep in sorted(graph[m]):
            visit(dep, [*path, m])
        state[m] = 2

    for m in MODULES:
        visit(m, [])


@pytest.mark.parametrize("first", ["amudai", "amudai_ingest", "amudai_schema"])
def test_each_amudai_writer_module_imports_first(first: str) -> None:
    code = (f"import sys, shardkit.writers.{first}\n"
            "print(sorted(m for m in sys.modules if m.startswith('shardkit.writers.amudai')))\n"
            "from shardkit.writers.amudai import ingest\n"
            "from shardkit.writers.amudai_ingest import ingest as direct\n"
            "assert ingest is direct\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    loaded = eval(done.stdout)  # the list printed above
    if first == "amudai":  # the writer alone does not load the ingest
        assert "shardkit.writers.amudai_ingest" not in loaded
    if first == "amudai_schema":
        assert loaded == ["shardkit.writers.amudai_schema"]


def test_schema_names_are_one_object_everywhere() -> None:
    amudai = importlib.import_module("shardkit.writers.amudai")
    ingest = importlib.import_module("shardkit.writers.amudai_ingest")
    schema = importlib.import_module("shardkit.writers.amudai_schema")
    assert amudai.FieldSpec is schema.FieldSpec is ingest.FieldSpec
    assert amudai.field is schema.field and amudai.BASIC_TYPES is schema.BASIC_TYPES
    assert amudai.field("g", "Guid") == schema.FieldSpec("g", "Guid", (), fixed_size=16)
    with pytest.raises(AttributeError):
        amudai.no_such_name  # noqa: B018 - the module's __getattr__ answers only ingest


def test_old_block_module_alias_is_gone() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("shardkit.formats._amudai_blocks")
    blocks = importlib.import_module("shardkit.formats.amudai.blocks")
    assert blocks.__name__ == "shardkit.formats.amudai.blocks"
