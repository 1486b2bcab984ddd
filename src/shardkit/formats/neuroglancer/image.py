"""Sharded image volumes: :class:`NgImageDataset`, its scales (:class:`NgScale`) and
bounding-box reads (:meth:`NgImageDataset.cutout`, :class:`NgVolume`)."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..._lazy import lazy_module
from ...errors import EntryNotFoundError, InvalidKeyError, LayoutError, UnsupportedVersionError
from .cseg import LABEL_TYPES, decode_compressed_segmentation
from .dataset import EncodedChunk, NgDataset
from .decode import compressed_morton_code, morton_decode, morton_invalid
from .kv import ShardedKV
from .spec import DEFAULT_MAX_DECODED_SIZE, ShardingSpec, SpecError
from .store import _Store, check_relative

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

_DTYPES = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32",
           "float64"}

_MAX_EXTENT = 1 << 32  # voxels along one axis of a scale or a chunk
DECODED_ENCODINGS = ("raw", "compressed_segmentation")  # what read_chunk and cutout decode


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
        self._info_index = index
        self._block_size = scale.get("compressed_segmentation_block_size")
        if "key" not in scale:
            raise SpecError(f"info: scale {index} lacks 'key'", field=f"{where}/key")
        self.key = check_relative(scale["key"], f"{where}/key", allow_external=allow_external)
        (self.size, self.chunk_size, self.voxel_offset,
         self.grid_shape) = scale_geometry(scale, index)
        try:
            self.encoding = str(scale.get("encoding", "raw"))
            self.resolution = list(scale.get("resolution", [1, 1, 1]))
        except TypeError as exc:
            raise SpecError(f"info: scale {index}: bad resolution: {exc}",
                            field=f"{where}/resolution") from exc
        try:
            spec = ShardingSpec.from_dict(scale["sharding"])
        except SpecError as exc:
            raise SpecError(exc.message, field=f"{where}{exc.field}") from exc
        super().__init__(store.sub(self.key), spec, **shard_options)

    @property
    def block_size(self) -> tuple[int, int, int]:
        """``compressed_segmentation_block_size`` ``(x, y, z)``, for that encoding.

        Raises:
            SpecError: It is missing, not 3 positive integers, or so large that decoding a
                chunk padded to whole blocks would pass ``max_decoded_size``.
        """
        field_ = f"/scales/{self._info_index}/compressed_segmentation_block_size"
        if self._block_size is None:
            raise SpecError(f"info: scale {self.key!r} is compressed_segmentation-encoded but "
                            "has no compressed_segmentation_block_size", field=field_)
        block = _triple(self._block_size, field_, 1)
        # the decoder holds one 8-byte table index per voxel of a chunk padded to whole blocks
        padded = math.prod(-(-c // b) * b for c, b in zip(self.chunk_size, block, strict=True))
        cap = self.max_decoded_size
        if 8 * padded > cap:
            raise SpecError(f"info: blocks of {list(block)} pad a chunk of scale {self.key!r} "
                            f"to {padded} voxels, whose table indices ({8 * padded} bytes) "
                            f"exceed the {cap}-byte cap (max_decoded_size)", field=field_)
        return block

    @property
    def max_decoded_size(self) -> int:
        """The cap on a decoded chunk (``max_decoded_size`` of :func:`open_dataset`)."""
        return int(self._options.get("max_decoded_size", DEFAULT_MAX_DECODED_SIZE))

    def morton_code(self, position: Sequence[int]) -> int:
        """Compressed Morton code (the chunk id) of a chunk grid position ``(x, y, z)``."""
        return compressed_morton_code(position, self.grid_shape)

    def position(self, chunk_id: int) -> tuple[int, ...]:
        """Grid position ``(x, y, z)`` of a chunk id.

        Raises:
            InvalidKeyError: ``chunk_id`` is not the id of a position of the grid (bits
                beyond the grid's, or past its edge).
        """
        return morton_decode(chunk_id, self.grid_shape)

    def _id_check(self, ids: np.ndarray) -> tuple[np.ndarray, str]:
        """For :meth:`verify`: the ids that are not positions of the grid."""
        return (morton_invalid(ids, self.grid_shape),
                f"not the id of a position of the grid {list(self.grid_shape)}")

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


Triple = tuple[int, int, int]


def scale_geometry(scale: Mapping[str, Any], index: int) -> tuple[Triple, Triple, Triple,
                                                                  Triple]:
    """``(size, chunk_size, voxel_offset, grid_shape)`` of scale ``index`` of an ``info``,
    validated as the reader (and the converter, sharded or not) takes it.

    Sizes and chunk sizes are 3 integers from 1 to 2**32, the voxel offset 3 integers, and
    the grid's chunk ids fit 64 bits.

    Raises:
        SpecError: Naming the field.
    """
    where = f"/scales/{index}"
    try:
        size = _triple(scale["size"], f"{where}/size", 1)
        chunk_size = _triple(scale["chunk_sizes"][0], f"{where}/chunk_sizes/0", 1)
        voxel_offset = _triple(scale.get("voxel_offset", [0, 0, 0]), f"{where}/voxel_offset",
                               None)
    except (KeyError, IndexError, TypeError) as exc:
        raise SpecError(f"info: scale {index} lacks {exc}", field=where) from exc
    for name, values in (("size", size), ("chunk_sizes/0", chunk_size)):
        if any(v > _MAX_EXTENT for v in values):
            raise SpecError(f"info: {where}/{name} {list(values)} exceeds 2**32 voxels "
                            "along an axis", field=f"{where}/{name}")
    grid = (-(-size[0] // chunk_size[0]), -(-size[1] // chunk_size[1]),
            -(-size[2] // chunk_size[2]))
    bits = sum(max(0, g - 1).bit_length() for g in grid)
    if bits > 64:
        raise SpecError(f"info: {where}: a grid of {list(grid)} chunks needs {bits}-bit chunk "
                        "ids (at most 64)", field=f"{where}/size")
    return size, chunk_size, voxel_offset, grid


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
        itemsize = int(self.data_type.lstrip("uintfloa")) // 8  # the dtype's, without numpy
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
            chunk_bytes = math.prod(s.chunk_size) * channels * itemsize
            cap = shard_options.get("max_decoded_size", DEFAULT_MAX_DECODED_SIZE)
            if chunk_bytes > cap:
                raise SpecError(f"info: a chunk of scale {s.key!r} would hold {chunk_bytes} "
                                f"bytes ({list(s.chunk_size)} voxels x {channels} channels x "
                                f"{itemsize}), more than the {cap}-byte cap "
                                "(max_decoded_size)", field=f"/scales/{i}/chunk_sizes/0")
            self.scales[s.key] = s
        if not self.scales:
            raise UnsupportedVersionError(f"{store.name}: no scale is sharded; unsharded "
                                          "chunk files are not read by shardkit")

    @functools.cached_property
    def dtype(self) -> np.dtype:
        """The voxel type, little-endian (made on first use, so that opening a volume does not
        import numpy)."""
        return np.dtype(self.data_type).newbyteorder("<")

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
            return self.scales[scale]  # type: ignore[index]  # a bool is refused by the KeyError path
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
            For the ``raw`` and ``compressed_segmentation`` encodings, an array of the
            chunk's voxels, edge chunks clipped (not padded); for other encodings (``jpeg``,
            ``png``...) an :class:`EncodedChunk` naming the encoding.

        Raises:
            EntryNotFoundError: The position is outside the grid, or (without
                ``fill_missing``) the chunk is not stored.
            LayoutError: A raw chunk's size does not match its shape, or a
                ``compressed_segmentation`` chunk's offsets, bit widths or table indices do
                not fit its bytes.
            SpecError: A ``compressed_segmentation`` scale without a valid block size, or of
                a data type other than uint32 and uint64.
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
            if s.encoding not in DECODED_ENCODINGS:
                return EncodedChunk(s.encoding, b"", shape)
            arr = np.zeros(shape, dtype=self.dtype)
            return arr if order == "czyx" else arr.transpose(3, 2, 1, 0)
        if s.encoding not in DECODED_ENCODINGS:
            return EncodedChunk(s.encoding, data, shape)
        arr = self._decode_chunk(s, code, position, shape, data)
        return arr if order == "czyx" else arr.transpose(3, 2, 1, 0)

    def _decode_chunk(self, s: NgScale, code: int, position: Sequence[int],
                      shape: tuple[int, int, int, int], data: bytes) -> np.ndarray:
        """A stored ``raw`` or ``compressed_segmentation`` chunk as a ``czyx`` array."""
        if s.encoding == "compressed_segmentation":
            if self.data_type not in LABEL_TYPES:
                raise SpecError(f"info: scale {s.key!r} is compressed_segmentation-encoded, "
                                f"which holds uint32 or uint64 labels, not {self.data_type}",
                                field="/data_type")
            try:
                return decode_compressed_segmentation(
                    data, shape, s.block_size, self.dtype, field=f"/chunks/{code}",
                    max_padded_voxels=s.max_decoded_size // 8)  # block_size checked that
            except LayoutError as exc:
                raise LayoutError(f"chunk {code} at {tuple(position)} of scale {s.key}: "
                                  f"{exc.message}", offset=exc.offset,
                                  field=exc.field) from exc
        expected = math.prod(shape) * self.dtype.itemsize
        if len(data) != expected:
            raise LayoutError(f"chunk {code} at {tuple(position)} of scale {s.key}: "
                              f"{len(data)} bytes, a raw {shape} {self.data_type} chunk has "
                              f"{expected}", field=f"/chunks/{code}")
        return np.frombuffer(data, dtype=self.dtype).reshape(shape)

    def bounds(self, scale: str | int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """The scale's voxel bounding box ``((x0, y0, z0), (x1, y1, z1))`` in absolute
        coordinates (``voxel_offset`` to ``voxel_offset + size``), as cloud-volume gives it."""
        s = self._scale(scale)
        lo = s.voxel_offset
        hi = (lo[0] + s.size[0], lo[1] + s.size[1], lo[2] + s.size[2])
        return lo, hi

    def cutout(self, scale: str | int, bbox: Sequence[Sequence[int]], *,
               fill_missing: bool = False, order: str = "xyzc") -> np.ndarray:
        """The voxels of a bounding box, across chunks, as one array.

        Args:
            scale: The scale's key or index.
            bbox: ``((x0, y0, z0), (x1, y1, z1))``, half-open, in absolute voxel coordinates
                (``voxel_offset`` included), as ``cloudvolume.CloudVolume[x0:x1, y0:y1,
                z0:z1]`` takes them.
            fill_missing: Zeros for chunks that are not stored, instead of raising.
            order: ``"xyzc"`` (cloud-volume's and tensorstore's axis order, the default; a
                view of a C-ordered ``czyx`` array) or ``"czyx"``.

        Returns:
            An array of shape ``(x1-x0, y1-y0, z1-z0, channels)`` (``xyzc``) or
            ``(channels, z1-z0, y1-y0, x1-x0)`` (``czyx``) of the scale's data type.

        Raises:
            InvalidKeyError: The box is empty, inverted, or outside the volume's bounds.
            EntryNotFoundError: A chunk in the box is not stored (without ``fill_missing``).
            UnsupportedVersionError: The scale's chunks are neither ``raw`` nor
                ``compressed_segmentation`` (``jpeg``, ``png``...).
            LayoutError: A stored chunk does not fit its shape (see :meth:`read_chunk`).
        """
        if order not in ("czyx", "xyzc"):
            raise ValueError(f"order must be 'czyx' or 'xyzc', got {order!r}")
        s = self._scale(scale)
        if s.encoding not in DECODED_ENCODINGS:
            raise UnsupportedVersionError(f"scale {s.key}: cutouts decode raw and "
                                          "compressed_segmentation chunks; its encoding is "
                                          f"{s.encoding!r} (read_chunk gives the encoded "
                                          "bytes)")
        try:
            lo = tuple(int(v) for v in bbox[0])
            hi = tuple(int(v) for v in bbox[1])
        except (TypeError, ValueError, IndexError) as exc:
            raise InvalidKeyError(f"a bounding box is ((x0, y0, z0), (x1, y1, z1)), got "
                                  f"{bbox!r}") from exc
        vlo, vhi = self.bounds(s.key)
        if (len(lo) != 3 or len(hi) != 3 or any(a >= b for a, b in zip(lo, hi, strict=True))
                or any(a < v for a, v in zip(lo, vlo, strict=True))
                or any(b > v for b, v in zip(hi, vhi, strict=True))):
            raise InvalidKeyError(f"bounding box {lo}-{hi} is empty or outside scale "
                                  f"{s.key}'s bounds {vlo}-{vhi}")
        rel_lo = [a - o for a, o in zip(lo, vlo, strict=True)]
        rel_hi = [b - o for b, o in zip(hi, vlo, strict=True)]
        first = [a // c for a, c in zip(rel_lo, s.chunk_size, strict=True)]
        last = [(b - 1) // c for b, c in zip(rel_hi, s.chunk_size, strict=True)]
        positions = list(itertools.product(*(range(f, e + 1) for f, e in
                                             zip(first, last, strict=True))))
        codes = [s.morton_code(p) for p in positions]
        datas = s.get_many(codes, None)
        dx, dy, dz = (b - a for a, b in zip(rel_lo, rel_hi, strict=True))
        out = np.zeros((self.num_channels, dz, dy, dx), dtype=self.dtype)
        for pos, code, data in zip(positions, codes, datas, strict=True):
            (cx0, cy0, cz0), (cx1, cy1, cz1) = s.chunk_box(pos)
            if data is None:
                if not fill_missing:
                    raise EntryNotFoundError(code, f"chunk {code} at {pos} of scale {s.key} "
                                             "is not stored (fill_missing=True gives zeros)")
                continue
            shape = (self.num_channels, cz1 - cz0, cy1 - cy0, cx1 - cx0)
            chunk = self._decode_chunk(s, code, pos, shape, data)
            # the overlap of the chunk and the box, in volume coordinates
            ox0, oy0, oz0 = max(cx0, rel_lo[0]), max(cy0, rel_lo[1]), max(cz0, rel_lo[2])
            ox1, oy1, oz1 = min(cx1, rel_hi[0]), min(cy1, rel_hi[1]), min(cz1, rel_hi[2])
            out[:, oz0 - rel_lo[2] : oz1 - rel_lo[2], oy0 - rel_lo[1] : oy1 - rel_lo[1],
                ox0 - rel_lo[0] : ox1 - rel_lo[0]] = \
                chunk[:, oz0 - cz0 : oz1 - cz0, oy0 - cy0 : oy1 - cy0, ox0 - cx0 : ox1 - cx0]
        return out if order == "czyx" else out.transpose(3, 2, 1, 0)

    def volume(self, scale: str | int = 0, *, fill_missing: bool = False) -> NgVolume:
        """A sliceable view of one scale: ``ds.volume("8_8_40")[0:64, 0:64, 10:20]`` is
        :meth:`cutout` of that box (absolute voxel coordinates; open slice ends mean the
        volume's bounds)."""
        return NgVolume(self, self._scale(scale).key, fill_missing)

    def summary(self, count_chunks: bool | None = None) -> dict[str, Any]:
        """Type, data type, dataset totals (``num_shards``, ``shard_files``, ``chunk_count``
        over every sharded scale), and per scale its geometry, spec, shard and chunk counts
        (counts as in :meth:`NgDataset.summary`: by default for a local dataset only)."""
        count = self._counting(count_chunks)
        scales = []
        for s in self.scales.values():
            scales.append({**s.to_dict(), **self._kv_summary(s, count)})
        # dataset totals at the top, every per-scale value (sharding spec...) in its scale
        out = {"format": self.format_name, "dataset": self.store.name,
               "type": self.info.get("type"), "data_type": self.data_type,
               "num_channels": self.num_channels, "scale_count": len(scales),
               "num_shards": sum(s["num_shards"] for s in scales),
               "shard_files": sum(s["shard_files"] for s in scales) if count else None,
               "chunk_count": sum(s["chunk_count"] for s in scales) if count else None,
               "scales": scales, "unsharded_scales": self.unsharded_scales}
        if not count:
            out["counts"] = "not counted (summary(count_chunks=True) scans every shard)"
        return out


class NgVolume:
    """One scale of an image volume, sliced like a cloud-volume ``CloudVolume``.

    ``vol[x0:x1, y0:y1, z0:z1]`` returns ``(x, y, z, channels)`` voxels (see
    :meth:`NgImageDataset.cutout`); integers select one voxel plane (kept as size 1), steps
    other than 1 are refused.

    Attributes:
        dataset: The image dataset.
        scale: The scale's key.
        bounds: ``((x0, y0, z0), (x1, y1, z1))`` in absolute voxel coordinates.
        shape: ``(x, y, z, channels)`` of the whole scale.
        dtype: The voxel type.
    """

    def __init__(self, dataset: NgImageDataset, scale: str, fill_missing: bool) -> None:
        self.dataset = dataset
        self.scale = scale
        self.fill_missing = fill_missing
        self.bounds = dataset.bounds(scale)
        lo, hi = self.bounds
        self.shape = (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], dataset.num_channels)
        self.dtype = dataset.dtype

    def __getitem__(self, index: Any) -> np.ndarray:
        if not isinstance(index, tuple):
            index = (index,)
        if len(index) > 3:
            raise InvalidKeyError(f"a volume is sliced along x, y, z; got {len(index)} indices")
        index = index + (slice(None),) * (3 - len(index))
        lo, hi = [], []
        for axis, item in enumerate(index):
            a, b = self.bounds[0][axis], self.bounds[1][axis]
            if isinstance(item, slice):
                if item.step not in (None, 1):
                    raise InvalidKeyError("volume slices take no step")
                start = a if item.start is None else int(item.start)
                stop = b if item.stop is None else int(item.stop)
            elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
                start, stop = int(item), int(item) + 1
            else:
                raise InvalidKeyError(f"volume index {item!r}: slices or integers only")
            lo.append(start)
            hi.append(stop)
        return self.dataset.cutout(self.scale, (lo, hi), fill_missing=self.fill_missing)

    def __repr__(self) -> str:
        return f"<NgVolume {self.dataset.store.name!r} scale {self.scale!r} {self.shape}>"
