"""Opening a dataset folder or URL from its ``info`` file: :func:`open_dataset`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..._lru import ByteLRU
from ...errors import ShardkitError, UnsupportedVersionError
from ...remote import DEFAULT_MAX_WHOLE_READ, io_errors
from .dataset import NgDataset, NgKeyValueDataset
from .image import NgImageDataset
from .spec import DEFAULT_CACHE_BYTES, MAX_INFO_BYTES, ShardingSpec, SpecError, parse_json
from .store import _Store

_KV_TYPES = {"neuroglancer_skeletons", "neuroglancer_multilod_draco", "neuroglancer_legacy_mesh"}


def open_dataset(target: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None,
                 *, info: Mapping[str, Any] | bytes | None = None,
                 allow_external: bool = False, cache_bytes: int = DEFAULT_CACHE_BYTES,
                 max_whole_read: int | None = None, **options: Any) -> NgDataset:
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
        max_whole_read: Largest file read whole from a server that ignores ``Range``
            (default 16 MiB, :data:`shardkit.remote.DEFAULT_MAX_WHOLE_READ`).
        options: Passed to every :class:`NgShard` (``max_decoded_size``, ``max_index_size``,
            ``block_size``) or :class:`ShardedKV` (``max_open_shards``).

    Raises:
        SpecError: The ``info`` file or its sharding spec is invalid.
        UnsupportedVersionError: A valid dataset shardkit does not read (unsharded).
    """
    store = _Store(target, storage_options, max_whole_read=DEFAULT_MAX_WHOLE_READ
                   if max_whole_read is None else max_whole_read)
    if info is None or isinstance(info, (bytes, bytearray)):
        raw = store.read_bytes("info", MAX_INFO_BYTES) if info is None else bytes(info)
        info = parse_json(raw, f"{store.name}/info")
    if not isinstance(info, dict):
        if not isinstance(info, Mapping):
            raise SpecError(f"{store.name}/info: not a JSON object", field="/")
        info = dict(info)
    options["cache"] = ByteLRU(cache_bytes)
    options["allow_external"] = allow_external
    kind = info.get("@type")
    if kind is not None and not isinstance(kind, str):
        raise SpecError(f"{store.name}/info: @type must be a string, got {kind!r}"[:300],
                        field="/@type")
    if kind == "neuroglancer_multiscale_volume" or (kind is None and "scales" in info):
        return NgImageDataset(store, info, **options)
    if kind == "neuroglancer_annotations_v1":
        from .annotations import NgAnnotationLayer  # on first use: image and mesh layers

        return NgAnnotationLayer(store, info, **options)
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


def sibling_spec(target: Any, storage_options: Mapping[str, Any] | None = None
                 ) -> dict[str, Any] | None:
    """The spec of a bare ``*.shard`` file from its dataset's ``info``, if one is there.

    Looked for in the file's folder (a key-value dataset's ``sharding``) and then in the
    folder above (an image scale, or annotations by id, whose ``key`` is the file's folder).

    Returns:
        ``{"spec": ShardingSpec, "spec_from": "<path of the info file>"}``, or ``None`` when
        ``target`` is not a ``.shard`` path or URL or no such ``info`` says how to read it.
    """
    if not isinstance(target, (str, os.PathLike)):
        return None
    text = os.fspath(target)
    if not text.endswith(".shard"):
        return None
    remote = "://" in text
    folder, _, _ = text.rpartition("/") if remote else (os.path.dirname(text), "", "")
    folder = folder or "."
    candidates: list[tuple[str, str | None]] = [(folder, None)]
    parent, _, name = folder.rstrip("/").rpartition("/") if remote else (
        os.path.dirname(os.path.abspath(folder)), "", os.path.basename(os.path.abspath(folder)))
    if parent:
        candidates.append((parent, name))
    for where, scale_key in candidates:
        info_path = f"{where}/info" if remote else os.path.join(where, "info")
        info = _read_json(info_path, storage_options)
        if not isinstance(info, dict):
            continue
        spec = _spec_for(info, scale_key)
        if spec is not None:
            return {"spec": spec, "spec_from": info_path}
    return None


def _read_json(path: str, storage_options: Mapping[str, Any] | None) -> Any:
    """The JSON of an ``info`` file, or ``None`` when there is none or it is not JSON (the
    caller then reports the shard).

    Raises:
        ShardkitError: The file may be there but cannot be read (no access, an HTTP error
            other than 404, a broken connection): the error says so, its cause chained.
    """
    try:
        if "://" in path:
            import fsspec

            fs, p = fsspec.core.url_to_fs(path, **dict(storage_options or {}))
            raw = fs.cat_file(p)
        else:
            if not os.path.isfile(path):
                return None
            with open(path, "rb") as fh:
                raw = fh.read(1 << 20)
    except FileNotFoundError:
        return None  # no info there
    # ImportError: the URL's fsspec backend (a sum, not a starred tuple, which mypy cannot read)
    except io_errors() + (ImportError,) as exc:  # noqa: RUF005
        raise ShardkitError(f"cannot read {path}: {type(exc).__name__}: {exc}") from exc
    try:
        return parse_json(raw, path, limit=1 << 20)
    except ShardkitError:  # not JSON, too big or too deep: no usable info there
        return None


def _spec_for(info: dict[str, Any], scale_key: str | None) -> ShardingSpec | None:
    try:
        if scale_key is None:
            return ShardingSpec.from_dict(info["sharding"]) if info.get("sharding") else None
        for scale in info.get("scales") or []:
            if (isinstance(scale, Mapping) and scale.get("sharding")
                    and str(scale.get("key", "")).strip("/") == scale_key):
                return ShardingSpec.from_dict(scale["sharding"])
        by_id = info.get("by_id")
        if (isinstance(by_id, Mapping) and by_id.get("sharding")
                and str(by_id.get("key", "by_id")).strip("/") == scale_key):
            return ShardingSpec.from_dict(by_id["sharding"])
    except (SpecError, TypeError, AttributeError):
        return None
    return None
