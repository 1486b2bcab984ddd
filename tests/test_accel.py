"""The optional C accelerators are imported one way (``shardkit._accel.accelerator``): the
module where it is built, None where it is not or where ``SHARDKIT_NO_NATIVE`` asks for the
pure-Python twins (the differential tests compare the two paths)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from shardkit._accel import accelerator

ACCELERATORS = {  # module -> where it is used (the module-level name its users test for)
    "shardkit.formats._records": ("shardkit.formats._sorted_set", "_records"),
    "shardkit.formats.swh._native": ("shardkit.formats.swh.reader", "_native"),
    "shardkit.formats.mosaic._native": ("shardkit.formats.mosaic.reader", "_native"),
    "shardkit.formats.amudai._native": ("shardkit.formats.amudai.blocks", "_native"),
    "shardkit.hashing._fmph": ("shardkit.hashing.fmph", "_native"),
    "shardkit.hashing._murmur": ("shardkit.hashing.murmur", "_native"),
    "shardkit.formats.neuroglancer._native": ("shardkit.formats.neuroglancer.annotation_spill",
                                              "_native"),
}


def test_a_missing_accelerator_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHARDKIT_NO_NATIVE", raising=False)
    assert accelerator("shardkit.formats._no_such_accelerator") is None


def test_no_native_asks_for_the_twins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHARDKIT_NO_NATIVE", "1")
    assert all(accelerator(name) is None for name in ACCELERATORS)


@pytest.mark.parametrize("name", sorted(ACCELERATORS))
def test_each_user_holds_its_accelerator(name: str) -> None:
    """In a fresh interpreter: with the build, each user module holds the extension; with
    SHARDKIT_NO_NATIVE, None (so the tests of the Python twins really run them)."""
    user, attr = ACCELERATORS[name]
    code = (f"import importlib; m = importlib.import_module({user!r}); a = getattr(m, {attr!r}); "
            f"print('none' if a is None else a.__name__)")
    env = {k: v for k, v in os.environ.items() if k != "SHARDKIT_NO_NATIVE"}
    built = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
    twin = subprocess.run([sys.executable, "-c", code], env={**env, "SHARDKIT_NO_NATIVE": "1"},
                          capture_output=True, text=True, check=True).stdout.strip()
    assert twin == "none"
    if os.environ.get("SHARDKIT_REQUIRE_NATIVE"):
        assert built == name  # CI builds every extension
    else:
        assert built in (name, "none")
