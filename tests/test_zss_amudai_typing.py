"""A user's script using the ZSS, Amudai and byte-source APIs passes ``mypy --strict``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_user_script_passes_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is in the dev extra")
    assert (ROOT / "src" / "shardkit" / "py.typed").exists()
    script = Path(__file__).parent / "typecheck" / "zss_amudai_user.py"
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / "cache"), str(script)],
        capture_output=True, text=True, timeout=300,
        env={"MYPYPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no issues found" in out.stdout
