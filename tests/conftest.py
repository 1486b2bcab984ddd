"""Shared fixtures: the bundled real sample files and their manifests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"
SWH_SAMPLES = ["tiny", "single", "medium", "deleted"]


@pytest.fixture(scope="session")
def swh_manifest() -> dict[str, Any]:
    """The reference generator's manifest of the SWH samples."""
    return json.loads((DATA / "swh" / "manifest.json").read_text())["files"]


def swh_path(name: str) -> Path:
    """Path of a bundled SWH sample."""
    return DATA / "swh" / f"{name}.shard"


def missing_zs_reference(env) -> list[str]:
    """["zs 0.10.0 (ZS_PYTHON)"] when the live ZS interop tests would skip without a stated
    reason: no ``ZS_PYTHON``, no ``zs`` on PATH, and no ``SHARDKIT_NO_ZS_REFERENCE`` (the
    reason .ci/run gives, and prints, when no Python 3.6 was found)."""
    import shutil

    if env.get("ZS_PYTHON") or shutil.which("zs") or env.get("SHARDKIT_NO_ZS_REFERENCE"):
        return []
    return ["zs 0.10.0 (ZS_PYTHON)"]


def pytest_collection_modifyitems(config, items):
    """In CI the reference implementations must be installed: an interop skip is a failure."""
    import os

    if not os.environ.get("CI"):
        return
    import importlib.util

    missing = [name for name in ("swh.perfecthash", "swh.shard", "hf_xet", "tensorstore",
                                 "cloudvolume", "aiohttp", "compressed_segmentation", "DracoPy",
                                 "distributed", "swh.mosaic")
               if importlib.util.find_spec(name) is None]
    missing += missing_zs_reference(os.environ)
    if missing:  # pragma: no cover - only on a broken CI install
        raise pytest.UsageError(
            f"CI is set but {', '.join(missing)} not installed: the interop group cannot run"
        )


@pytest.fixture
def range_server():
    """Factory: ``range_server(folder)`` serves ``folder`` over HTTP with Range and request counts.

    Every server made in a test is shut down after it (see ``tests/httpserver.py``).
    """
    pytest.importorskip("aiohttp", reason="fsspec's HTTP filesystem needs aiohttp")
    from httpserver import RangeServer

    made: list[RangeServer] = []

    def make(folder: str | Path) -> RangeServer:
        srv = RangeServer(folder)
        made.append(srv)
        return srv

    yield make
    for srv in made:
        srv.close()


def pytest_terminal_summary(terminalreporter):
    """Says so at the end when the live ZS interop tests were skipped on purpose, and why."""
    import os

    reason = os.environ.get("SHARDKIT_NO_ZS_REFERENCE")
    if reason and not os.environ.get("ZS_PYTHON"):
        terminalreporter.write_line(f"notice: the live ZS interop tests were skipped: {reason}",
                                    yellow=True)
