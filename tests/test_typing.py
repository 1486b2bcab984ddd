"""The typed API: ``py.typed`` ships, ``shardkit.open`` says what it returns, a user's script
passes ``mypy --strict``.

mypy reads the package the way it reads any installed library (PEP 561): from a folder on the
path holding ``shardkit/`` with its ``py.typed`` marker. The editable install's import hook is
invisible to mypy, so the test copies the imported package (and its generated parsers) into a
temporary folder laid out as the wheel lays it out, and points mypy there. Errors inside
shardkit itself are then not reported (as for any installed library); only the user's code is
checked, against shardkit's annotations.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import shardkit.generated

import shardkit

HERE = Path(__file__).parent
SCRIPT = HERE / "typing_user_script.py"

PROBE = """\
from pathlib import Path
import shardkit
from shardkit import MdbShard

p = Path("x")
reveal_type(shardkit.open(p, format="swh"))
reveal_type(shardkit.open(p, format="zss"))
reveal_type(shardkit.open(p, format="amudai"))
reveal_type(shardkit.open(p, format=MdbShard))
reveal_type(shardkit.open(p, spec={"@type": "neuroglancer_uint64_sharded_v1"}))
reveal_type(shardkit.open_dataset(p))
shardkit.open(p, format="zss").no_such_method()
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the imported shardkit package as the wheel installs it."""
    root = tmp_path_factory.mktemp("site")
    pkg = Path(shardkit.__file__).parent
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "js")
    shutil.copytree(pkg, root / "shardkit", ignore=ignore)
    generated = Path(shardkit.generated.__file__).parent
    if generated != pkg / "generated":  # editable install: mapped from another folder
        shutil.copytree(generated, root / "shardkit" / "generated", ignore=ignore)
    return root


def run_mypy(installed: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(installed))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--hide-error-context",
         "--cache-dir", str(installed.parent / "mypy-cache"), *map(str, files)],
        capture_output=True, text=True, env=env, cwd=installed.parent, check=False)


def test_py_typed_ships_with_the_package() -> None:
    assert (Path(shardkit.__file__).parent / "py.typed").is_file()


def test_user_script_runs() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), str(HERE / "data")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["detected"] == "swh"
    assert len(out["counts"]) == 5 and all(n > 0 for n in out["counts"])


def test_user_script_passes_mypy_strict(installed: Path, tmp_path: Path) -> None:
    """Every reader through ``shardkit.open``/``open_dataset``, checked with ``--strict``."""
    script = tmp_path / "user_script.py"
    shutil.copy(SCRIPT, script)
    proc = run_mypy(installed, script)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_open_is_typed_by_format_and_by_reader(installed: Path, tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    proc = run_mypy(installed, probe)
    revealed = re.findall(r'Revealed type is "([^"]+)"', proc.stdout)
    names = [r.rsplit(".", 1)[-1] for r in revealed]
    assert names == ["SwhShard", "ZssFile", "AmudaiShard", "MdbShard", "NgShard", "NgDataset"], \
        proc.stdout
    assert all(r.startswith("shardkit.formats.") for r in revealed), proc.stdout
    # a typo on a reader is caught: open() does not return Any
    assert re.search(r'probe\.py:12: error: "ZssFile" has no attribute "no_such_method"',
                     proc.stdout), proc.stdout
    assert proc.returncode == 1


def test_public_entry_points_pass_mypy_strict(installed: Path) -> None:
    """The modules behind ``import shardkit`` and the CLI are fully annotated themselves."""
    own = ["__init__.py", "render.py", "errors.py", "_kaitai.py",
           *sorted(f"cli/{p.name}" for p in (installed / "shardkit" / "cli").glob("*.py"))]
    env = dict(os.environ, PYTHONPATH=str(installed))
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--cache-dir", str(installed.parent / "mypy-cache"),
         *[f"shardkit/{name}" for name in own]],
        capture_output=True, text=True, env=env, cwd=installed, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_finds_shardkit_in_the_dev_venv(tmp_path: Path) -> None:
    """A user's script outside the repository, checked with ``mypy --strict`` by the venv's
    mypy, with no path given: shardkit is found as an installed, typed package (the editable
    install's import hook is invisible to mypy; ``make install`` links the sources where
    mypy looks, ``tools/dev_typing.py``)."""
    script = tmp_path / "user_script.py"
    shutil.copy(SCRIPT, script)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
         "--cache-dir", str(tmp_path / "mypy-cache"), script.name],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr + "\n(a venv made before "
                                  "tools/dev_typing.py existed: run make install again)")
    assert proc.stdout == ""
