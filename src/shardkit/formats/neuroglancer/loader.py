"""Opening a dataset folder or URL from its ``info`` file: :func:`open_dataset`."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from ...errors import UnsupportedVersionError
from .dataset import NgDataset, NgKeyValueDataset
from .image import NgImageDataset
from .spec import ShardingSpec, SpecError
from .store import _Store

_KV_TYPES = {"neuroglancer_skeletons", "neuroglancer_multilod_draco", "neuroglancer_legacy_mesh"}


def open_dataset(target: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None,
                 **options: Any) -> NgDataset:
    """Open a Neuroglancer precomputed dataset folder or URL holding an ``info`` file.

    Args:
        target: Local folder or fsspec URL (``http``, ``https``, ``gs``, ``s3``, ``memory``,
            ``file``).
        storage_options: Passed to fsspec.
        options: Passed to every :class:`NgShard` (``minishard_cache_size``,
            ``max_decoded_size``).

    Raises:
        SpecError: The ``info`` file or its sharding spec is invalid.
        UnsupportedVersionError: A valid dataset shardkit does not read (unsharded).
    """
    store = _Store(target, storage_options)
    raw = store.read_bytes("info")
    try:
        info = json.loads(raw)
    except ValueError as exc:
        raise SpecError(f"{store.name}/info: not JSON: {exc}", field="/") from exc
    if not isinstance(info, dict):
        raise SpecError(f"{store.name}/info: not a JSON object", field="/")
    kind = info.get("@type")
    if kind == "neuroglancer_multiscale_volume" or (kind is None and "scales" in info):
        return NgImageDataset(store, info, **options)
    if kind == "neuroglancer_annotations_v1":
        by_id = info.get("by_id") or {}
        if not isinstance(by_id, Mapping):
            raise SpecError(f"{store.name}/info: by_id must be an object", field="/by_id")
        if by_id.get("sharding") is None:
            raise UnsupportedVersionError(f"{store.name}: annotations by id are not sharded")
        spec = _spec_at(by_id["sharding"], "/by_id/sharding")
        return NgKeyValueDataset(store, info, spec, str(by_id.get("key", "by_id")), **options)
    if info.get("sharding") is not None:  # null means unsharded (cloud-volume)
        spec = _spec_at(info["sharding"], "/sharding")
        return NgKeyValueDataset(store, info, spec, **options)
    if kind in _KV_TYPES:
        raise UnsupportedVersionError(f"{store.name}: an unsharded {kind} dataset; shardkit "
                                      "reads sharded ones only")
    raise SpecError(f"{store.name}/info: neither an image volume nor a sharded key-value "
                    f"dataset (@type {kind!r})", field="/@type")


def _spec_at(data: Any, where: str) -> ShardingSpec:
    try:
        return ShardingSpec.from_dict(data)
    except SpecError as exc:
        field_ = where + (exc.field or "").removeprefix("/sharding")
        raise SpecError(exc.message, field=field_) from exc
