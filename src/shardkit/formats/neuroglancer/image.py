"""Sharded image volumes: :class:`NgImageDataset` and its scales (:class:`NgScale`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import EntryNotFoundError, LayoutError, UnsupportedVersionError
from .dataset import EncodedChunk, NgDataset
from .decode import compressed_morton_code, morton_decode
from .kv import ShardedKV
from .spec import DEFAULT_MAX_DECODED_SIZE, ShardingSpec, SpecError
from .store import _Store, check_relative

_DTYPES = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32",
           "float64"}

_MAX_EXTENT = 1 << 32  # voxels along one axis of a scale or a chunk


class NgScale(ShardedKV):
    """One sharded scale of an image volume: a mapping compressed Morton code -> chunk bytes.

    Attributes:
        key: The scale's key (its folder).
        size: Volume size in voxels ``(x, y, z)``.
        chunk_size: Chunk size ``(x, y, z)``.
        voxel_offset: Voxel coordinates of the volume's origin.
        encoding: ``raw``, ``jpeg``, ``compressed_segmentation``...
        grid_shape: Chunks along ``(x, y, z)``.
    """

    def __init__(self, store: _Store, scale: Mapping[str, Any], index: int, *,
                 allow_external: bool = False, **shard_options: Any) -> None:
        where = f"/scales/{index}"
        if "key" not in scale:
            raise SpecError(f"info: scale {index} lacks 'key'", field=f"{where}/key")
        try:
            self.key = check_relative(scale["key"], f"{where}/key",
                                      allow_external=allow_external)
            self.size = _triple(scale["size"], f"{where}/size", 1)
            sizes = scale["chunk_sizes"]
            self.chunk_size = _triple(sizes[0], f"{where}/chunk_sizes/0", 1)
            self.voxel_offset = _triple(scale.get("voxel_offset", [0, 0, 0]),
                                        f"{where}/voxel_offset", None)
            self.encoding = str(scale.get("encoding", "raw"))
            self.resolution = list(scale.get("resolution", [1, 1, 1]))
        except (KeyError, IndexError, TypeError) as exc:
            raise SpecError(f"info: scale {index} lacks {exc}", field=where) from exc
        try:
            spec = ShardingSpec.from_dict(scale["sharding"])
        except SpecError as exc:
            raise SpecError(exc.message, field=f"{where}{exc.field}") from exc
        for name, values in (("size", self.size), ("chunk_sizes/0", self.chunk_size)):
            if any(v > _MAX_EXTENT for v in values):
                raise SpecError(f"info: {where}/{name} {list(values)} exceeds 2**32 voxels "
                                "along an axis", field=f"{where}/{name}")
        self.grid_shape = tuple(-(-s // c) for s, c in zip(self.size, self.chunk_size,
                                                           strict=True))
        bits = sum(max(0, g - 1).bit_length() for g in self.grid_shape)
        if bits > 64:
            raise SpecError(f"info: {where}: a grid of {list(self.grid_shape)} chunks needs "
                            f"{bits}-bit chunk ids (at most 64)", field=f"{where}/size")
        super().__init__(store.sub(self.key), spec, **shard_options)

    def morton_code(self, position: Sequence[int]) -> int:
        """Compressed Morton code (the chunk id) of a chunk grid position ``(x, y, z)``."""
        return compressed_morton_code(position, self.grid_shape)

    def position(self, chunk_id: int) -> tuple[int, ...]:
        """Grid position ``(x, y, z)`` of a chunk id."""
        return morton_decode(chunk_id, self.grid_shape)

    def chunk_box(self, position: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Voxel box ``(start, stop)`` (x, y, z; relative to ``voxel_offset``), edge-clipped."""
        start = tuple(p * c for p, c in zip(position, self.chunk_size, strict=True))
        stop = tuple(min(s + c, v) for s, c, v in zip(start, self.chunk_size, self.size,
                                                      strict=True))
        return start, stop

    def to_dict(self) -> dict[str, Any]:
        """The scale's geometry and spec."""
        return {"key": self.key, "size": list(self.size), "chunk_size": list(self.chunk_size),
                "voxel_offset": list(self.voxel_offset), "resolution": self.resolution,
                "encoding": self.encoding, "grid_shape": list(self.grid_shape),
                "sharding": self.spec.to_dict()}


def _triple(value: Any, field_: str, minimum: int | None) -> tuple[int, int, int]:
    if (not isinstance(value, (list, tuple)) or len(value) != 3
            or not all(type(v) is int for v in value)
            or (minimum is not None and any(v < minimum for v in value))):
        raise SpecError(f"info: {field_} must be 3 integers"
                        + (f" >= {minimum}" if minimum is not None else "") + f", got {value!r}",
                        field=field_)
    return (value[0], value[1], value[2])


class NgImageDataset(NgDataset):
    """A sharded ``neuroglancer_multiscale_volume``: one :class:`NgScale` per scale.

    ``ds[key]`` and ``ds.keys()`` act on the first (finest) scale; ``ds.scales[key]`` on any.
    """

    format_name = "Neuroglancer precomputed sharded image volume"

    def __init__(self, store: _Store, info: dict[str, Any], **shard_options: Any) -> None:
        super().__init__(store, info)
        self.data_type = str(info.get("data_type", ""))
        if self.data_type not in _DTYPES:
            raise SpecError(f"info: data_type {self.data_type!r} is not one of "
                            f"{', '.join(sorted(_DTYPES))}", field="/data_type")
        channels = info.get("num_channels", 1)
        if type(channels) is not int or channels < 1:
            raise SpecError(f"info: num_channels must be a positive integer, got {channels!r}",
                            field="/num_channels")
        self.num_channels = channels
        self.dtype = np.dtype(self.data_type).newbyteorder("<")
        scales = info.get("scales")
        if not isinstance(scales, list) or not scales:
            raise SpecError("info: scales must be a non-empty list", field="/scales")
        self.scales: dict[str, NgScale] = {}
        self.unsharded_scales: list[str] = []
        for i, scale in enumerate(scales):
            if not isinstance(scale, Mapping):
                raise SpecError(f"info: scale {i} is not an object", field=f"/scales/{i}")
            if scale.get("sharding") is None:  # absent, or null (cloud-volume: unsharded)
                self.unsharded_scales.append(str(scale.get("key", i)))
                continue
            s = NgScale(store, scale, i, **shard_options)
            chunk_bytes = math.prod(s.chunk_size) * channels * self.dtype.itemsize
            cap = shard_options.get("max_decoded_size", DEFAULT_MAX_DECODED_SIZE)
            if chunk_bytes > cap:
                raise SpecError(f"info: a chunk of scale {s.key!r} would hold {chunk_bytes} "
                                f"bytes ({list(s.chunk_size)} voxels x {channels} channels x "
                                f"{self.dtype.itemsize}), more than the {cap}-byte cap "
                                "(max_decoded_size)", field=f"/scales/{i}/chunk_sizes/0")
            self.scales[s.key] = s
        if not self.scales:
            raise UnsupportedVersionError(f"{store.name}: no scale is sharded; unsharded "
                                          "chunk files are not read by shardkit")

    @property
    def kv(self) -> ShardedKV:
        return next(iter(self.scales.values()))

    def _scale(self, scale: str | int) -> NgScale:
        if isinstance(scale, int) and not isinstance(scale, bool):
            keys = list(self.scales)
            if not 0 <= scale < len(keys):
                raise EntryNotFoundError(scale, f"no scale number {scale}")
            return self.scales[keys[scale]]
        try:
            return self.scales[scale]
        except KeyError:
            raise EntryNotFoundError(scale, f"no sharded scale {scale!r}; scales: "
                                     f"{', '.join(self.scales)}") from None

    def _all_kvs(self) -> list[tuple[str, ShardedKV]]:
        return [(f"{k}/" if len(self.scales) > 1 else "", s) for k, s in self.scales.items()]

    def chunk_shape(self, scale: str | int, position: Sequence[int]) -> tuple[int, int, int, int]:
        """``(channels, z, y, x)`` shape of a chunk, clipped at the volume's edge."""
        s = self._scale(scale)
        start, stop = s.chunk_box(position)
        dx, dy, dz = (b - a for a, b in zip(start, stop, strict=True))
        return (self.num_channels, dz, dy, dx)

    def read_chunk(self, scale: str | int, position: Sequence[int], *, order: str = "czyx",
                   fill_missing: bool = False) -> np.ndarray | EncodedChunk:
        """The chunk at grid position ``(x, y, z)`` of a scale.

        Args:
            scale: The scale's key (``"8_8_40"``) or index.
            position: Chunk grid position ``(x, y, z)``.
            order: ``"czyx"`` (the stored order; ``arr.tobytes()`` gives the raw chunk) or
                ``"xyzc"`` (cloud-volume's and tensorstore's axis order, a view).
            fill_missing: Return zeros for a chunk that is not stored (writers skip chunks
                equal to the fill value) instead of raising.

        Returns:
            For the ``raw`` encoding, an array of the chunk, edge chunks clipped (not padded);
            for other encodings an :class:`EncodedChunk` naming the encoding.

        Raises:
            EntryNotFoundError: The position is outside the grid, or (without
                ``fill_missing``) the chunk is not stored.
            LayoutError: A raw chunk's size does not match its shape.
        """
        if order not in ("czyx", "xyzc"):
            raise ValueError(f"order must be 'czyx' or 'xyzc', got {order!r}")
        s = self._scale(scale)
        position = tuple(int(p) for p in position)
        if len(position) != 3:
            raise EntryNotFoundError(position, f"a chunk position is (x, y, z), got {position}")
        try:
            code = s.morton_code(position)
        except ValueError as exc:
            raise EntryNotFoundError(position, str(exc)) from exc
        shape = self.chunk_shape(scale, position)
        try:
            data = s[code]
        except EntryNotFoundError:
            if not fill_missing:
                raise
            if s.encoding != "raw":
                return EncodedChunk(s.encoding, b"", shape)
            arr = np.zeros(shape, dtype=self.dtype)
            return arr if order == "czyx" else arr.transpose(3, 2, 1, 0)
        if s.encoding != "raw":
            return EncodedChunk(s.encoding, data, shape)
        expected = math.prod(shape) * self.dtype.itemsize
        if len(data) != expected:
            raise LayoutError(f"chunk {code} at {position} of scale {s.key}: {len(data)} bytes, "
                              f"a raw {shape} {self.data_type} chunk has {expected}",
                              field=f"/chunks/{code}")
        arr = np.frombuffer(data, dtype=self.dtype).reshape(shape)
        return arr if order == "czyx" else arr.transpose(3, 2, 1, 0)

    def summary(self, count_chunks: bool | None = None) -> dict[str, Any]:
        """Type, data type, and per scale its geometry, spec, shard and chunk counts (counts
        as in :meth:`NgDataset.summary`: by default for a local dataset only)."""
        count = self._counting(count_chunks)
        scales = []
        for s in self.scales.values():
            scales.append({**s.to_dict(), **self._kv_summary(s, count)})
        first = scales[0]
        out = {"format": self.format_name, "dataset": self.store.name,
               "type": self.info.get("type"), "data_type": self.data_type,
               "num_channels": self.num_channels, "sharding": first["sharding"],
               "num_shards": first["num_shards"],
               "chunk_count": sum(s["chunk_count"] for s in scales) if count else None,
               "scales": scales, "unsharded_scales": self.unsharded_scales}
        if not count:
            out["counts"] = "not counted (summary(count_chunks=True) scans every shard)"
        return out
