"""The modules this package imports on first use, declared once: numpy and the protobuf code
generated from ``schemas/amudai/*.proto``. Opening a shard imports neither (see
:mod:`shardkit._lazy`); each module of the package takes its names from here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np

    from ...generated import amudai_common_pb2 as cpb
    from ...generated import amudai_shard_pb2 as spb
else:
    np = lazy_module("numpy")
    cpb = lazy_module("shardkit.generated.amudai_common_pb2")  # protobuf: on first use
    spb = lazy_module("shardkit.generated.amudai_shard_pb2")

__all__ = ["cpb", "np", "spb"]
