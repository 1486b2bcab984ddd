"""Every third-party module the tests import comes from a distribution that pyproject.toml
declares (a dependency or the dev extra), not only through another package's dependencies."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _name(requirement: str) -> str:
    """The normalised project name of a requirement string."""
    return re.sub(r"[-_.]+", "-", re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0]).lower()


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    return {_name(r) for r in reqs}


def _imported_by_tests() -> dict[str, str]:
    """Top-level module -> a test file importing it (``import``, ``from``, ``importorskip``)."""
    local = {p.stem for p in (ROOT / "tests").glob("*.py")} | {"shardkit", "mutators",
                                                                "targets", "make_seeds"}
    out: dict[str, str] = {}
    for path in sorted((ROOT / "tests").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip"
                  and node.args and isinstance(node.args[0], ast.Constant)):
                names = [str(node.args[0].value)]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in local:
                    out.setdefault(top, path.name)
    return out


def test_every_module_the_tests_import_is_declared() -> None:
    declared = _declared()
    dists = packages_distributions()
    undeclared = {}
    for module, where in _imported_by_tests().items():
        names = {_name(d) for d in dists.get(module, [])}
        if names and not names & declared:
            undeclared[module] = (sorted(names), where)
    assert undeclared == {}
