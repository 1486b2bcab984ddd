"""Opening a dataset folder or URL from its ``info`` file: :func:`open_dataset`."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from ...errors import UnsupportedVersionError
from .cache import ByteLRU
from .dataset import NgDataset, NgKeyValueDataset
from .image import NgImageDataset
from .spec import DEFAULT_CACHE_BYTES, ShardingSpec, SpecError
from .store import _Store, check_relative

_KV_TYPES = {"neuroglancer_skeletons", "neuroglancer_multilod_draco", "neuroglancer_legacy_mesh"}


def open_dataset(target: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None,
                 *, info: Mapping[str, Any] | bytes | None = None,
                 allow_external: bool = False, cache_bytes: int = DEFAULT_CACHE_BYTES,
                 **options: Any) -> NgDataset:
    """Open a Neuroglancer precomputed dataset folder or URL holding an ``info`` file.

    Args:
        target: Local folder or fsspec URL (``http``, ``https``, ``gs``, ``s3``, ``memory``,
            ``file``).
        storage_options: Passed to fsspec.
        info: The dataset's ``info`` (a dict or its bytes) when the caller has already read
            it; otherwise it is read here (one request).
        allow_external: Follow scale keys with ``..`` that climb out of the dataset folder
            (the precomputed format allows them). Absolute paths and URLs in an ``info``
            are always refused.
        cache_bytes: Budget of the dataset's cache of decoded minishard indices and shard
            indices, shared by every shard and scale (default 64 MiB).
        options: Passed to every :class:`NgShard` (``max_decoded_size``, ``max_index_size``,
            ``block_size``) or :class:`ShardedKV` (``max_open_shards``).

    Raises:
        SpecError: The ``info`` file or its sharding spec is invalid.
        UnsupportedVersionError: A valid dataset shardkit does not read (unsharded).
    """
    store = _Store(target, storage_options)
    if info is None or isinstance(info, (bytes, bytearray)):
        raw = store.read_bytes("info") if info is None else bytes(info)
        try:
            info = json.loads(raw)
        except ValueError as exc:
            raise SpecError(f"{store.name}/info: not JSON: {exc}", field="/") from exc
    if not isinstance(info, dict):
        if not isinstance(info, Mapping):
            raise SpecError(f"{store.name}/info: not a JSON object", field="/")
        info = dict(info)
    options["cache"] = ByteLRU(cache_bytes)
    options["allow_external"] = allow_external
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
        key = check_relative(by_id.get("key", "by_id"), "/by_id/key",
                             allow_external=allow_external)
        options.pop("allow_external")
        return NgKeyValueDataset(store, info, spec, key, **options)
    if info.get("sharding") is not None:  # null means unsharded (cloud-volume)
        spec = _spec_at(info["sharding"], "/sharding")
        options.pop("allow_external")
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
