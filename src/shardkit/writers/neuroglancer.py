"""Writers of Neuroglancer ``neuroglancer_uint64_sharded_v1`` shards, datasets and image volumes.

Layout of a shard written here (any order is valid: readers follow offsets)::

    shard index     2**minishard_bits x (u64 start, u64 end), relative to its own end
    chunk data      minishard by minishard (ascending), chunks by ascending id,
                    each gzip-compressed when "data_encoding" is "gzip"
    minishard idx   one per non-empty minishard, ascending: 3 x n u64 (id deltas,
                    offset deltas, sizes), gzip-compressed when "minishard_index_encoding" is
                    "gzip"; empty minishards get [0, 0]

The fixed-size shard index goes first because readers find it without knowing anything else;
the variable-size minishard indices go last, once the data offsets they record are known (as
cloud-volume does). Chunk ids are sorted inside a minishard because the index stores them as
unsigned deltas. Gzip output uses ``mtime=0`` so the same input always gives the same bytes.

No file is ever partial under its final name: each file is written to a temporary name in its
folder (``.NAME.tmp-RANDOM``) and renamed when complete (removed if writing fails), and the
``info`` file is written last, so a dataset interrupted while being written has no ``info`` and
is not taken for a complete one. On object stores (``s3://``, ``gs://``, ``memory://``...) an
object is written in one PUT, which is already all-or-nothing.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..formats.neuroglancer import ShardingSpec, SpecError, compressed_morton_code
from ..formats.neuroglancer.spec import ENTRY_WORD
from ..formats.neuroglancer.store import check_relative
from ._atomic import write_bytes_atomic

_compress: Callable[..., bytes] = zlib.compress
try:  # zlib-ng: the same deflate streams at about 2.5x zlib's speed (conversion is gzip-bound)
    from zlib_ng import zlib_ng as _zlib_ng

    _compress = _zlib_ng.compress
except ImportError:  # pragma: no cover - a dependency; the standard library still works
    pass

__all__ = [
    "MAX_SHARD_INDEX_BYTES",
    "build_shard",
    "build_shards",
    "check_writable",
    "shard_pieces",
    "write_annotations",
    "write_image_volume",
    "write_sharded_dataset",
]

_MASK64 = (1 << 64) - 1
MAX_SHARD_INDEX_BYTES = 1 << 30  # largest shard index written: minishard_bits up to 26


def check_writable(spec: ShardingSpec) -> None:
    """Refuse a spec whose shard index (``16 * 2**minishard_bits`` bytes, in every shard
    file) is larger than :data:`MAX_SHARD_INDEX_BYTES`, before anything is allocated.

    Raises:
        SpecError: The shard index is too large (also a ``ValueError``).
    """
    if spec.shard_index_size > MAX_SHARD_INDEX_BYTES:
        raise SpecError(f"sharding spec: minishard_bits {spec.minishard_bits} makes every shard "
                        f"file start with a {spec.shard_index_size}-byte shard index; shardkit "
                        f"writes at most {MAX_SHARD_INDEX_BYTES} bytes (minishard_bits "
                        f"<= {MAX_SHARD_INDEX_BYTES.bit_length() - 5})",
                        field="/sharding/minishard_bits")


def _gzip(data: bytes, level: int = 6) -> bytes:
    """The encoding ``gzip``: one standard gzip member (RFC 1952) with no timestamp, so the
    same input gives the same bytes; written by zlib-ng when installed (its deflate at a level
    is faster than zlib's and a few percent larger; any gzip reader reads it), else by zlib."""
    return _compress(data, level, wbits=31)


def shard_pieces(items: Mapping[int, bytes], spec: ShardingSpec,
                 prefixes: Mapping[int, bytes] | None = None) -> list[bytes]:
    """One shard file as a list of byte strings to write one after the other.

    The layout of :func:`build_shard` (the shard index, the values minishard by minishard and
    by ascending id, the minishard indices last), without joining the values into one string:
    a caller writing a large shard holds its values once, not three times. The values are
    stored as given: ``data_encoding`` is the caller's to apply (``build_shard`` does).
    ``prefixes[key]`` (multi-resolution mesh fragments) is stored just before the value of
    ``key``, outside the range the minishard index gives. The keys are trusted to be uint64s
    of one shard (``build_shard`` checks them).

    Raises:
        SpecError: The spec's shard index is larger than :data:`MAX_SHARD_INDEX_BYTES`.
    """
    check_writable(spec)
    prefixes = prefixes or {}
    by_minishard: dict[int, list[int]] = {}
    if items:
        keys = np.fromiter(items.keys(), dtype=np.uint64, count=len(items))
        _, minis = spec.locate_many(keys)
        order = np.lexsort((keys, minis))
        for key, mini in zip(keys[order].tolist(), minis[order].tolist(), strict=True):
            by_minishard.setdefault(int(mini), []).append(int(key))
    data: list[bytes] = []
    tables: list[tuple[int, bytes]] = []
    pos = 0
    for mini, ids in by_minishard.items():
        sizes = np.array([len(items[k]) for k in ids], dtype=np.uint64)
        # offset deltas: from the end of the previous value to the start of this one
        gaps = np.array([len(prefixes.get(k, b"")) for k in ids], dtype=np.uint64)
        offsets = gaps.copy()
        offsets[0] += np.uint64(pos)
        table = np.stack([np.diff(np.array(ids, dtype=np.uint64), prepend=np.uint64(0)),
                          offsets, sizes]).astype("<u8").tobytes()
        if spec.minishard_index_encoding == "gzip":
            table = _gzip(table)
        tables.append((mini, table))
        for k in ids:
            if k in prefixes:
                data.append(prefixes[k])
            data.append(items[k])
        pos += int(gaps.sum()) + int(sizes.sum())
    entries = np.zeros((spec.num_minishards, 2), dtype=ENTRY_WORD)  # the shard index
    for mini, table in tables:
        entries[mini] = (pos, pos + len(table))
        pos += len(table)
    return [entries.tobytes(), *data, *(t for _, t in tables)]


def build_shard(items: Mapping[int, bytes], spec: ShardingSpec | Mapping[str, Any]) -> bytes:
    """The bytes of one shard file holding ``items`` (which must all belong to one shard).

    Args:
        items: Chunk id -> value (before ``data_encoding``).
        spec: The sharding spec.

    Raises:
        ValueError: A key is not a uint64, or two keys belong to different shards.
        SpecError: The spec's shard index is larger than :data:`MAX_SHARD_INDEX_BYTES`.
    """
    spec = ShardingSpec.coerce(spec)
    check_writable(spec)
    stored: dict[int, bytes] = {}
    shard = None
    for key, value in items.items():
        if isinstance(key, bool) or not 0 <= int(key) <= _MASK64:
            raise ValueError(f"chunk id {key!r} is not a uint64")
        loc = spec.locate(int(key))
        if shard is None:
            shard = loc.shard
        elif loc.shard != shard:
            raise ValueError(f"chunk {key} belongs to shard {loc.shard}, not {shard}")
        value = bytes(value)
        stored[int(key)] = _gzip(value) if spec.data_encoding == "gzip" else value
    return b"".join(shard_pieces(stored, spec))


def build_shards(items: Mapping[int, bytes],
                 spec: ShardingSpec | Mapping[str, Any]) -> dict[str, bytes]:
    """Shard file name -> bytes for every non-empty shard of ``items``."""
    spec = ShardingSpec.coerce(spec)
    check_writable(spec)
    groups: dict[int, dict[int, bytes]] = {}
    for key, value in items.items():
        groups.setdefault(spec.locate(int(key)).shard, {})[int(key)] = value
    return {spec.shard_name(s): build_shard(group, spec) for s, group in sorted(groups.items())}


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to a local ``path`` (its folder made if needed) through a temporary file
    in the same folder and an atomic rename: ``path`` is either absent (or its old content) or
    complete."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, data)


def _writer(dest: str | os.PathLike[str], storage_options: Mapping[str, Any] | None) -> Any:
    text = os.fspath(dest)
    if "://" in text:
        import fsspec

        fs, root = fsspec.core.url_to_fs(text, **dict(storage_options or {}))
        root = root.rstrip("/")
        if "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)):
            text = root  # a local folder given as file://
        else:
            def put(name: str, data: bytes) -> None:
                path = f"{root}/{name}"
                parent = path.rsplit("/", 1)[0]
                fs.makedirs(parent, exist_ok=True)
                fs.pipe_file(path, data)  # one PUT: all or nothing

            return put

    def put_local(name: str, data: bytes) -> None:
        write_atomic(Path(text, name), data)

    return put_local


def write_sharded_dataset(dest: str | os.PathLike[str], items: Mapping[int, bytes],
                          spec: ShardingSpec | Mapping[str, Any], *,
                          info: Mapping[str, Any] | None = None,
                          storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """Write a sharded key-value dataset (skeletons by default): ``info`` plus shard files.

    Args:
        dest: Folder or fsspec URL (created if needed).
        items: Segment id -> value.
        spec: The sharding spec.
        info: Extra ``info`` fields (default ``{"@type": "neuroglancer_skeletons"}``);
            ``sharding`` is set from ``spec``.
        storage_options: For fsspec URLs.

    Returns:
        The names written, ``info`` first (it is written last).
    """
    spec = ShardingSpec.coerce(spec)
    put = _writer(dest, storage_options)
    meta = {"@type": "neuroglancer_skeletons", **dict(info or {}), "sharding": spec.to_dict()}
    names = []
    for name, data in build_shards(items, spec).items():
        put(name, data)
        names.append(name)
    put("info", json.dumps(meta).encode())  # last: a dataset without it is not complete
    return ["info", *names]


def write_image_volume(dest: str | os.PathLike[str], volume: np.ndarray,
                       spec: ShardingSpec | Mapping[str, Any], *,
                       chunk_size: Sequence[int] = (64, 64, 64),
                       resolution: Sequence[float] = (1, 1, 1),
                       voxel_offset: Sequence[int] = (0, 0, 0),
                       scale_key: str | None = None, layer_type: str = "image",
                       skip_zero_chunks: bool = False,
                       storage_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Write a one-scale, sharded, ``raw``-encoded image volume.

    Args:
        dest: Folder or fsspec URL.
        volume: Array indexed ``[x, y, z]`` or ``[x, y, z, channel]`` (cloud-volume's and
            tensorstore's order).
        spec: The scale's sharding spec.
        chunk_size: Chunk size ``(x, y, z)``; edge chunks are clipped to the volume.
        resolution: Voxel size in nanometres.
        voxel_offset: Origin of the volume in voxels.
        scale_key: The scale's folder (default ``"{rx}_{ry}_{rz}"``).
        layer_type: ``image`` or ``segmentation``.
        skip_zero_chunks: Leave out chunks that are all zero (readers fill them).
        storage_options: For fsspec URLs.

    Returns:
        The ``info`` written.
    """
    spec = ShardingSpec.coerce(spec)
    vol = np.asarray(volume)
    if vol.ndim == 3:
        vol = vol[..., np.newaxis]
    if vol.ndim != 4:
        raise ValueError(f"volume must be [x, y, z] or [x, y, z, c], got {vol.ndim} dimensions")
    size = [int(n) for n in vol.shape[:3]]
    chunk = [int(c) for c in chunk_size]
    grid = [-(-s // c) for s, c in zip(size, chunk, strict=True)]
    key = check_relative(scale_key or "_".join(f"{r:g}" for r in resolution), "scale_key")
    dtype = vol.dtype.newbyteorder("<")
    items: dict[int, bytes] = {}
    for gx in range(grid[0]):
        for gy in range(grid[1]):
            for gz in range(grid[2]):
                x0, y0, z0 = gx * chunk[0], gy * chunk[1], gz * chunk[2]
                block = vol[x0 : x0 + chunk[0], y0 : y0 + chunk[1], z0 : z0 + chunk[2], :]
                if skip_zero_chunks and not block.any():
                    continue
                raw = np.ascontiguousarray(block.transpose(3, 2, 1, 0), dtype=dtype).tobytes()
                items[compressed_morton_code((gx, gy, gz), grid)] = raw
    info = {
        "@type": "neuroglancer_multiscale_volume",
        "type": layer_type,
        "data_type": np.dtype(vol.dtype).name,
        "num_channels": int(vol.shape[3]),
        "scales": [{
            "key": key,
            "size": size,
            "chunk_sizes": [chunk],
            "resolution": [float(r) for r in resolution],
            "voxel_offset": [int(v) for v in voxel_offset],
            "encoding": "raw",
            "sharding": spec.to_dict(),
        }],
    }
    put = _writer(dest, storage_options)
    for name, data in build_shards(items, spec).items():
        put(f"{key}/{name}", data)
    put("info", json.dumps(info).encode())  # last: a volume without it is not complete
    return info


from .ng_annotations import write_annotations  # noqa: E402 - its own module, re-exported
