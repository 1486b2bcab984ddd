"""Runs an SWH test module twice: with the C accelerator and with the pure-Python path.

A module opts in with ``from swh_impl import swh_impl`` and
``pytestmark = pytest.mark.usefixtures("swh_impl")``. The ``native`` run is skipped when the
extension was not built (no C compiler); ``SHARDKIT_REQUIRE_NATIVE=1`` makes that a failure
(CI, where it must be built).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from shardkit.formats.swh import reader

_BUILT = reader._native


@pytest.fixture(params=["native", "python"])
def swh_impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``"native"`` or ``"python"``: which lookup path the test runs."""
    if request.param == "native":
        if _BUILT is None:
            if os.environ.get("SHARDKIT_REQUIRE_NATIVE"):
                pytest.fail("the C accelerator shardkit.formats.swh._native is not built")
            pytest.skip("the C accelerator is not built")
        monkeypatch.setattr(reader, "_native", _BUILT)
    else:
        monkeypatch.setattr(reader, "_native", None)
    yield request.param
