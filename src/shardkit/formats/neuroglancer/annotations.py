"""Neuroglancer precomputed annotation layers (``neuroglancer_annotations_v1``).

A layer is an ``info`` file and three kinds of index, each sharded
(``neuroglancer_uint64_sharded_v1``, read by :class:`ShardedKV`) or unsharded (one file per key):

- ``by_id``: annotation id -> one record and its relationships (``ng_annotation_by_id.ksy``);
- one index per relationship: segment id -> the annotations related to it
  (``ng_annotation_cell.ksy``);
- the spatial index, levels from coarse to fine: grid cell -> a subsample of the annotations
  meeting the cell (``ng_annotation_cell.ksy``), keyed ``x_y_z`` unsharded and by the cell's
  compressed Morton code sharded.

:class:`NgAnnotationLayer` reads them (``shardkit.open(folder)``): ``len``, ``layer[id]`` /
``get(id)`` (an :class:`Annotation`), ``related(relationship, segment_id)``,
``query(lower, upper)``, iteration, ``to_arrow()`` / ``to_pandas()``; ``verify()`` runs the
checks of :mod:`.annotation_verify`. The indexes are read through :mod:`.annotation_index`.

What real writers get wrong, and how it is read:

- neuroglancer 2.41.2 pads ``uint32`` properties as if 3-aligned: when a record's size says so,
  records are decoded with that layout (:attr:`NgAnnotationLayer.quirks` says it; verify reports
  it).
- ngsidekick 0.0.20 names unsharded spatial cell files with a Morton code built over the
  reversed axes and decoded over the axes in order: a level whose files follow that naming is
  read through it (found from the folder listing, reported by verify).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ..._lazy import lazy_module
from ...errors import (
    EntryNotFoundError,
    LayoutError,
    Problem,
    ShardkitError,
    TruncatedError,
)
from ..base import Section
from .annotation_index import MAX_VALUE_BYTES as MAX_VALUE_BYTES  # re-exported
from .annotation_index import ShardedIndex as ShardedIndex  # re-exported
from .annotation_index import UnshardedIndex as UnshardedIndex  # re-exported
from .annotation_index import _open_index
from .annotation_layout import AnnotationLayout, quirk_layout
from .dataset import NgDataset
from .decode import compressed_morton_code, morton_decode
from .kv import ShardedKV
from .spec import SpecError
from .store import _Store

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

ANNOTATIONS_TYPE = "neuroglancer_annotations_v1"
_MASK64 = (1 << 64) - 1
MAX_CELL_COUNT = 1 << 32  # Neuroglancer refuses a count of 2**32 or more


# -- one annotation -----------------------------------------------------------------------------


@dataclass
class Annotation:
    """One decoded annotation.

    Attributes:
        id: Its uint64 id.
        type: The layer's annotation type (``point``, ``line``...).
        geometry: float32 array ``(vectors, rank)``: the point; the two points of a line or
            box; the center and radii of an ellipsoid; every point of a polyline.
        properties: Property id -> value (an int, a float, or a tuple for rgb / rgba).
        labels: Property id -> enum label, for enum properties whose value is declared.
        relationships: Relationship id -> related segment ids; ``None`` when the annotation
            was read from a spatial or relationship index (only ``by_id`` holds them).
    """

    id: int
    type: str
    geometry: np.ndarray
    properties: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    relationships: dict[str, list[int]] | None = None

    @property
    def point(self) -> np.ndarray:
        return cast("np.ndarray", self.geometry[0])

    @property
    def point_a(self) -> np.ndarray:
        return cast("np.ndarray", self.geometry[0])

    @property
    def point_b(self) -> np.ndarray:
        return cast("np.ndarray", self.geometry[1])

    @property
    def center(self) -> np.ndarray:
        return cast("np.ndarray", self.geometry[0])

    @property
    def radii(self) -> np.ndarray:
        return cast("np.ndarray", self.geometry[1])

    @property
    def points(self) -> np.ndarray:
        return self.geometry

    def geometry_dict(self) -> dict[str, Any]:
        """The geometry under the writer's names (``point``, ``point_a``/``point_b``...)."""
        g = self.geometry.tolist()
        if self.type == "point":
            return {"point": g[0]}
        if self.type in ("line", "axis_aligned_bounding_box"):
            return {"point_a": g[0], "point_b": g[1]}
        if self.type == "ellipsoid":
            return {"center": g[0], "radii": g[1]}
        return {"points": g}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, in the shape :func:`shardkit.writers.neuroglancer.write_annotations`
        takes (plus ``labels``)."""
        out: dict[str, Any] = {"id": self.id, "type": self.type, **self.geometry_dict(),
                               "properties": {k: list(v) if isinstance(v, tuple) else v
                                              for k, v in self.properties.items()}}
        if self.labels:
            out["labels"] = dict(self.labels)
        if self.relationships is not None:
            out["relationships"] = {k: list(v) for k, v in self.relationships.items()}
        return out


# -- decoding -----------------------------------------------------------------------------------


def _property_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return tuple(int(v) for v in value)
    return value.item() if isinstance(value, np.generic) else value


class RecordDecoder:
    """Decodes records, by-id entries and cells of one layout."""

    def __init__(self, layout: AnnotationLayout) -> None:
        self.layout = layout
        self._names = [p.id for p in layout.properties]
        self._enums = [(p.id, p.enum) for p in layout.properties if p.enum]

    def _props(self, rec: Any) -> tuple[dict[str, Any], dict[str, str]]:
        props = {n: _property_value(rec[n]) for n in self._names}
        labels = {}
        for name, enum in self._enums:
            label = enum.get(props[name])
            if label is not None:
                labels[name] = label
        return props, labels

    def record_end(self, data: bytes | memoryview, pos: int, where: str) -> int:
        """End of the record starting at ``pos`` (checked against the data)."""
        lay = self.layout
        if lay.type != "polyline":
            end = pos + lay.record_bytes
        else:
            if pos + 4 > len(data):
                raise TruncatedError(f"{where}: truncated polyline point count", needed=4,
                                     available=max(0, len(data) - pos), offset=pos,
                                     field="/num_points")
            n = int.from_bytes(data[pos : pos + 4], "little")
            end = pos + 4 + n * 4 * lay.rank + lay.property_bytes
        if end > len(data):
            raise TruncatedError(f"{where}: a record needs bytes up to {end}, the value has "
                                 f"{len(data)}", needed=end - pos,
                                 available=max(0, len(data) - pos), offset=pos,
                                 field="/annotation")
        return end

    def decode_record(self, data: bytes | memoryview, pos: int, end: int, ident: int
                      ) -> Annotation:
        lay = self.layout
        if lay.type != "polyline":
            rec = np.frombuffer(data, lay.dtype, 1, pos)[0]
            geometry = rec["geometry"].copy()
            props, labels = self._props(rec)
        else:
            n = int.from_bytes(data[pos : pos + 4], "little")
            geometry = np.frombuffer(data, "<f4", n * lay.rank, pos + 4).reshape(n, lay.rank)
            geometry = geometry.astype(np.float32)
            rec = np.frombuffer(data, lay.props_dtype, 1, end - lay.property_bytes)[0]
            props, labels = self._props(rec)
        return Annotation(ident, lay.type, geometry, props, labels)

    def decode_by_id(self, ident: int, data: bytes | memoryview, where: str = "by_id"
                     ) -> Annotation:
        """One ``by_id`` value: the record, then each relationship's ids."""
        end = self.record_end(data, 0, where)
        ann = self.decode_record(data, 0, end, ident)
        ann.relationships = {}
        pos = end
        for i, rel in enumerate(self.layout.relationships):
            if pos + 4 > len(data):
                raise TruncatedError(f"{where}/{ident}: relationship {rel!r} count past the "
                                     f"end ({len(data)} bytes)", needed=4,
                                     available=max(0, len(data) - pos), offset=pos,
                                     field=f"/relationships/{i}/count")
            count = int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
            if pos + 8 * count > len(data):
                raise TruncatedError(f"{where}/{ident}: relationship {rel!r} lists {count} ids, "
                                     f"{(len(data) - pos) // 8} fit", needed=8 * count,
                                     available=len(data) - pos, offset=pos,
                                     field=f"/relationships/{i}/ids")
            ann.relationships[rel] = np.frombuffer(data, "<u8", count, pos).tolist()
            pos += 8 * count
        if pos != len(data):
            raise LayoutError(f"{where}/{ident}: {len(data) - pos} bytes after the last "
                              "relationship", offset=pos, field="/relationships")
        return ann

    def cell_bounds(self, data: bytes | memoryview, where: str) -> tuple[int, list[int]]:
        """``(count, record starts + [end of the records])`` of a cell, checked."""
        if len(data) < 8:
            raise TruncatedError(f"{where}: {len(data)} bytes, a count needs 8", needed=8,
                                 available=len(data), offset=0, field="/count")
        count = int.from_bytes(data[:8], "little")
        lay = self.layout
        least = lay.property_bytes + 4 if lay.type == "polyline" else lay.record_bytes
        if count >= MAX_CELL_COUNT or 8 + count * (least + 8) > len(data):
            raise LayoutError(f"{where}: count {count} does not fit in {len(data)} bytes "
                              f"({least + 8} bytes per annotation at least)", offset=0,
                              field="/count")
        if lay.type != "polyline":
            starts = list(range(8, 8 + (count + 1) * lay.record_bytes, lay.record_bytes))
        else:
            starts = [8]
            for _ in range(count):
                starts.append(self.record_end(data, starts[-1], where))
        if starts[-1] + 8 * count != len(data):
            raise LayoutError(f"{where}: {count} annotations and ids take "
                              f"{starts[-1] + 8 * count} bytes, the value has {len(data)}",
                              offset=starts[-1], field="/ids")
        return count, starts

    def decode_cell(self, data: bytes | memoryview, where: str) -> list[Annotation]:
        count, starts = self.cell_bounds(data, where)
        ids = np.frombuffer(data, "<u8", count, starts[-1]).tolist()
        lay = self.layout
        if lay.type != "polyline" and count:
            recs = np.frombuffer(data, lay.dtype, count, 8)
            geoms = recs["geometry"].copy()
            return [Annotation(ids[i], lay.type, geoms[i], *self._props(recs[i]))
                    for i in range(count)]
        return [self.decode_record(data, starts[i], starts[i + 1], ids[i])
                for i in range(count)]

    def cell_arrays(self, data: bytes | memoryview, where: str
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, list[int]]:
        """``(ids, lower corners, upper corners, record starts)`` of a cell: each annotation's
        bounding box (float64), for fast geometry tests; polylines give per-record boxes."""
        count, starts = self.cell_bounds(data, where)
        ids = np.frombuffer(data, "<u8", count, starts[-1])
        lay = self.layout
        if lay.type != "polyline":
            geo = np.frombuffer(data, lay.dtype, count, 8)["geometry"]
            return ids, geo.astype(np.float64), None, starts
        lo = np.empty((count, lay.rank))
        hi = np.empty((count, lay.rank))
        for i in range(count):
            n = int.from_bytes(data[starts[i] : starts[i] + 4], "little")
            pts = np.frombuffer(data, "<f4", n * lay.rank, starts[i] + 4).reshape(n, lay.rank)
            lo[i] = pts.min(axis=0) if n else np.inf
            hi[i] = pts.max(axis=0) if n else -np.inf
        return ids, lo, hi, starts


# -- geometry -----------------------------------------------------------------------------------


def _segment_meets(a: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Does the segment ``a``-``b`` meet the closed box ``[lo, hi]`` (Liang-Barsky)?"""
    t0, t1 = 0.0, 1.0
    d = b - a
    for k in range(len(a)):
        if d[k] == 0:
            if a[k] < lo[k] or a[k] > hi[k]:
                return False
            continue
        u0 = (lo[k] - a[k]) / d[k]
        u1 = (hi[k] - a[k]) / d[k]
        if u0 > u1:
            u0, u1 = u1, u0
        t0, t1 = max(t0, u0), min(t1, u1)
        if t0 > t1:
            return False
    return True


def meets(ann_type: str, geometry: np.ndarray, lo: Sequence[float] | np.ndarray,
          hi: Sequence[float] | np.ndarray) -> bool:
    """Does an annotation's geometry meet the closed box ``[lo, hi]``?"""
    g = np.asarray(geometry, dtype=np.float64)
    lo_ = np.asarray(lo, dtype=np.float64)
    hi_ = np.asarray(hi, dtype=np.float64)
    if ann_type == "point":
        return bool(np.all(g[0] >= lo_) and np.all(g[0] <= hi_))
    if ann_type == "axis_aligned_bounding_box":
        a, b = np.minimum(g[0], g[1]), np.maximum(g[0], g[1])
        return bool(np.all(a <= hi_) and np.all(b >= lo_))
    if ann_type == "line":
        return _segment_meets(g[0], g[1], lo_, hi_)
    if ann_type == "ellipsoid":
        c, r = g[0], np.abs(g[1])
        q = np.clip(c, lo_, hi_)
        d = q - c
        flat = r == 0
        if np.any(flat & (d != 0)):
            return False
        return bool(np.sum((d[~flat] / r[~flat]) ** 2) <= 1.0)
    if len(g) == 1:
        return bool(np.all(g[0] >= lo_) and np.all(g[0] <= hi_))
    return any(_segment_meets(g[i], g[i + 1], lo_, hi_) for i in range(len(g) - 1))


def box_candidates(ann_type: str, geometries: np.ndarray, lo: np.ndarray, hi: np.ndarray
                   ) -> np.ndarray:
    """For ``geometries`` of shape ``(n, vectors, rank)`` (not polylines), a mask of those
    that may meet the closed box ``[lo, hi]``: for points and boxes exactly :func:`meets`'
    answer; for lines and ellipsoids every one whose bounding box meets it (and any with a
    NaN), so :func:`meets` decides among fewer."""
    g = geometries.astype(np.float64)
    keep: np.ndarray
    if ann_type == "point":
        keep = np.all(g[:, 0] >= lo, axis=1) & np.all(g[:, 0] <= hi, axis=1)
        return keep
    if ann_type == "axis_aligned_bounding_box":
        a, b = np.minimum(g[:, 0], g[:, 1]), np.maximum(g[:, 0], g[:, 1])
        keep = np.all(a <= hi, axis=1) & np.all(b >= lo, axis=1)
        return keep
    if ann_type == "line":
        a, b = np.minimum(g[:, 0], g[:, 1]), np.maximum(g[:, 0], g[:, 1])
    else:  # ellipsoid: center, radii
        r = np.abs(g[:, 1])
        a, b = g[:, 0] - r, g[:, 0] + r
    keep = (np.all(a <= hi, axis=1) & np.all(b >= lo, axis=1)) | np.isnan(g).any(axis=(1, 2))
    return keep


def bounding_box(ann_type: str, geometry: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The axis-aligned box around a geometry (float64)."""
    g = np.asarray(geometry, dtype=np.float64)
    if ann_type == "ellipsoid":
        r = np.abs(g[1])
        return g[0] - r, g[0] + r
    return g.min(axis=0), g.max(axis=0)


@dataclass
class SpatialLevel:
    """One level of the spatial index.

    Attributes:
        level: Its number (0 is the coarsest).
        key: Its folder.
        grid_shape: Cells per dimension.
        chunk_size: Size of a cell per dimension.
        limit: The ``limit`` of the ``info`` file.
        index: Its cells (sharded: keyed by compressed Morton code; unsharded: ``x_y_z``).
        naming: ``"spec"``, or ``"ngsidekick"`` when the unsharded files follow ngsidekick
            0.0.20's transposed naming (decided from the listing on first use).
    """

    level: int
    key: str
    grid_shape: tuple[int, ...]
    chunk_size: tuple[float, ...]
    limit: int
    index: UnshardedIndex | ShardedIndex
    naming: str | None = None

    def cell_key(self, cell: Sequence[int]) -> Any:
        if self.index.sharded:
            return compressed_morton_code(cell, self.grid_shape)
        return tuple(int(c) for c in cell)

    def spec_name(self, cell: Sequence[int]) -> str:
        return "_".join(str(int(c)) for c in cell)

    def ngsidekick_name(self, cell: Sequence[int]) -> str:
        """The name ngsidekick 0.0.20 gives cell ``cell``: the Morton code of the reversed
        position over the reversed grid, decoded over the grid in order."""
        rev = tuple(reversed(self.grid_shape))
        code = compressed_morton_code(tuple(reversed(tuple(cell))), rev)
        return "_".join(str(c) for c in morton_decode(code, self.grid_shape))

    def cell_box(self, origin: np.ndarray, cell: Sequence[int] | np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        c = np.asarray(cell, dtype=np.float64)
        size = np.asarray(self.chunk_size, dtype=np.float64)
        return origin + c * size, origin + (c + 1) * size

    def open_cell_box(self, origin: np.ndarray, cell: Sequence[int] | np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`cell_box`, reaching to infinity on the sides where the cell is at the edge
        of the grid."""
        lo, hi = self.cell_box(origin, cell)
        c = np.asarray(cell)
        lo = np.where(c == 0, -np.inf, lo)
        hi = np.where(c == np.asarray(self.grid_shape) - 1, np.inf, hi)
        return lo, hi


def _level_of(store: _Store, meta: Any, i: int, rank: int, options: dict[str, Any],
              allow_external: bool) -> SpatialLevel:
    where = f"/spatial/{i}"
    key, index = _open_index(store, meta, where, None, options, allow_external,
                             name=lambda cell: "_".join(str(int(c)) for c in cell))
    grid = meta.get("grid_shape")
    chunk = meta.get("chunk_size")
    limit = meta.get("limit")
    if (not isinstance(grid, list) or len(grid) != rank
            or not all(type(g) is int and 0 < g < (1 << 32) for g in grid)):
        raise SpecError(f"{store.name}/info: {where}/grid_shape must be {rank} positive "
                        f"integers, got {grid!r}"[:300], field=f"{where}/grid_shape")
    if sum(max(0, g - 1).bit_length() for g in grid) > 64:
        raise SpecError(f"{store.name}/info: {where}/grid_shape needs more than 64 Morton bits",
                        field=f"{where}/grid_shape")
    if (not isinstance(chunk, list) or len(chunk) != rank
            or not all(isinstance(c, (int, float)) and not isinstance(c, bool)
                       and math.isfinite(c) and c > 0 for c in chunk)):
        raise SpecError(f"{store.name}/info: {where}/chunk_size must be {rank} positive "
                        f"numbers, got {chunk!r}"[:300], field=f"{where}/chunk_size")
    if type(limit) is not int or limit < 0:
        raise SpecError(f"{store.name}/info: {where}/limit must be a non-negative integer, "
                        f"got {limit!r}", field=f"{where}/limit")
    return SpatialLevel(i, key, tuple(grid), tuple(float(c) for c in chunk), limit, index)


def _bounds(info: Mapping[str, Any], name: str, rank: int) -> list[float]:
    value = info.get(name)
    if (not isinstance(value, list) or len(value) != rank
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                       and math.isfinite(v) for v in value)):
        raise SpecError(f"info: {name} must be {rank} finite numbers, got {value!r}"[:300],
                        field=f"/{name}")
    return value


# -- the layer ----------------------------------------------------------------------------------


class NgAnnotationLayer(NgDataset):
    """A ``neuroglancer_annotations_v1`` layer, local or remote, any index sharded or not.

    Example::

        with shardkit.open("gs://bucket/synapses") as layer:
            print(len(layer), layer.get(1234).point)
            for a in layer.query([0, 0, 0], [100, 100, 100]):
                ...
            df = layer.to_pandas()

    Attributes:
        layout: The record layout (:class:`AnnotationLayout`).
        lower_bound, upper_bound: The layer's bounds (float64 arrays).
        by_id: The ``by_id`` index (``None`` if ``info`` has none).
        relationships_index: Relationship id -> its index.
        spatial: The spatial index levels, coarse to fine.
        quirks: What the reader found a reference writer got wrong, as messages.
    """

    format_name = "Neuroglancer precomputed annotation layer"

    def __init__(self, store: _Store, info: dict[str, Any], *, allow_external: bool = False,
                 **options: Any) -> None:
        super().__init__(store, info)
        self.by_id: UnshardedIndex | ShardedIndex | None = None
        self.by_id_key: str | None = None
        if info.get("by_id") is not None:  # first: a key climbing out is refused before all
            self.by_id_key, self.by_id = _open_index(store, info["by_id"], "/by_id", "by_id",
                                                     options, allow_external)
        self.layout = AnnotationLayout(info)
        self._alt = quirk_layout(info, self.layout)
        self._decoder = RecordDecoder(self.layout)
        self._decided = self._alt is None
        rank = self.layout.rank
        self._bounds = (_bounds(info, "lower_bound", rank), _bounds(info, "upper_bound", rank))
        self.quirks: list[str] = []
        self.relationships_index: dict[str, UnshardedIndex | ShardedIndex] = {}
        self.relationship_keys: dict[str, str] = {}
        for i, rel in enumerate(info.get("relationships") or []):
            key, index = _open_index(store, rel, f"/relationships/{i}", None, options,
                                     allow_external)
            self.relationships_index[rel["id"]] = index
            self.relationship_keys[rel["id"]] = key
        spatial = info.get("spatial") or []
        if not isinstance(spatial, list):
            raise SpecError(f"{store.name}/info: spatial must be a list", field="/spatial")
        self.spatial = [_level_of(store, m, i, rank, options, allow_external)
                        for i, m in enumerate(spatial)]

    @functools.cached_property
    def lower_bound(self) -> np.ndarray:
        """The layer's lower bound (a float64 array; made on first use, so that opening a
        layer does not import numpy)."""
        return np.asarray(self._bounds[0], dtype=np.float64)

    @functools.cached_property
    def upper_bound(self) -> np.ndarray:
        """The layer's upper bound (a float64 array)."""
        return np.asarray(self._bounds[1], dtype=np.float64)

    # -- layout decisions ------------------------------------------------------------------

    @property
    def decoder(self) -> RecordDecoder:
        return self._decoder

    def _decide(self, fits: Callable[[RecordDecoder], int]) -> None:
        """Pick the spec layout or neuroglancer 2.41.2's from the values read.

        ``fits(decoder)`` is -1 when a value does not parse with that layout, 0 when it parses
        with non-zero padding, 1 when it parses with zero padding. The first value where the
        two layouts score differently decides; until then the spec's is used.
        """
        if self._decided or self._alt is None:
            return
        alt = RecordDecoder(self._alt)
        ours, theirs = fits(RecordDecoder(AnnotationLayout(self.info))), fits(alt)
        if ours == theirs:
            return  # nothing tells them apart yet
        self._decided = True
        if theirs > ours:
            self._decoder = alt
            self.layout = self._alt
            self.quirks.append(
                "records use neuroglancer 2.41.2's property layout (a uint32 padded as if "
                f"3-aligned, at offset {[p.offset for p in self._alt.properties]} after the "
                "geometry where the spec gives "
                f"{[p.offset for p in AnnotationLayout(self.info).properties]})")

    @staticmethod
    def _zero_padding(dec: RecordDecoder, data: bytes, ends: Iterable[int]) -> bool:
        lay = dec.layout
        pads = lay.padding_ranges()
        for end in ends:
            base = end - lay.property_bytes
            if any(any(data[base + a : base + b]) for a, b in pads):
                return False
        return True

    def _fits_by_id(self, data: bytes) -> Callable[[RecordDecoder], int]:
        def ok(dec: RecordDecoder) -> int:
            try:
                dec.decode_by_id(0, data)
                end = dec.record_end(data, 0, "")
            except ShardkitError:
                return -1
            return int(self._zero_padding(dec, data, [end]))
        return ok

    def _fits_cell(self, data: bytes) -> Callable[[RecordDecoder], int]:
        def ok(dec: RecordDecoder) -> int:
            try:
                _, starts = dec.cell_bounds(data, "")
            except ShardkitError:
                return -1
            return int(self._zero_padding(dec, data, starts[1:]))
        return ok

    # -- by id -------------------------------------------------------------------------------

    def _need_by_id(self) -> UnshardedIndex | ShardedIndex:
        if self.by_id is None:
            raise ShardkitError(f"{self.store.name}: the layer has no by_id index")
        return self.by_id

    def raw(self, ident: int) -> bytes:
        """The stored ``by_id`` value of ``ident``."""
        data = self._need_by_id().get(_as_id(ident))
        if data is None:
            raise EntryNotFoundError(ident, f"annotation {ident} not found")
        return data

    def decode_by_id(self, ident: int, data: bytes) -> Annotation:
        if not self._decided:
            self._decide(self._fits_by_id(data))
        try:
            return self._decoder.decode_by_id(ident, data, f"{self.by_id_key}")
        except ShardkitError as exc:
            exc.message = f"{self.store.name}/{self.by_id_key} {ident}: {exc.message}"
            raise

    def __getitem__(self, ident: int) -> Annotation:  # type: ignore[override]  # a layer yields Annotations, not bytes
        return self.decode_by_id(_as_id(ident), self.raw(ident))

    def get(self, ident: int, default: Any = None, **_: Any) -> Any:  # type: ignore[override]  # ditto: no decode= here
        """The annotation ``ident`` (with its relationships), or ``default``."""
        data = self._need_by_id().get(_as_id(ident))
        return default if data is None else self.decode_by_id(_as_id(ident), data)

    def get_many(self, ids: Iterable[int], default: Any = None) -> list[Any]:
        """Many annotations, reads coalesced per shard."""
        ids = [_as_id(i) for i in ids]
        datas = self._need_by_id().get_many(ids)
        return [default if d is None else self.decode_by_id(i, d)
                for i, d in zip(ids, datas, strict=True)]

    def __contains__(self, ident: object) -> bool:
        try:
            return self._need_by_id().get(_as_id(ident)) is not None
        except (ValueError, TypeError):
            return False

    def keys(self) -> Iterator[int]:
        """Every annotation id (``by_id``: shard by shard, or in folder order)."""
        for k, _ in self._by_id_items():
            yield k

    def _by_id_items(self) -> Iterator[tuple[int, bytes]]:
        return self._need_by_id().items()

    def items(self) -> Iterator[tuple[int, Annotation]]:  # type: ignore[override]  # ditto: (id, Annotation)
        for k, data in self._by_id_items():
            yield k, self.decode_by_id(k, data)

    def __iter__(self) -> Iterator[Annotation]:  # type: ignore[override]  # ditto: Annotations
        """Every annotation, from ``by_id`` (bounded memory: one shard index at a time)."""
        for k, data in self._by_id_items():
            yield self.decode_by_id(k, data)

    def __len__(self) -> int:
        return self._need_by_id().count()

    # -- relationships -----------------------------------------------------------------------

    def decode_cell(self, data: bytes, where: str) -> list[Annotation]:
        if not self._decided:
            self._decide(self._fits_cell(data))
        return self._decoder.decode_cell(data, where)

    def related(self, relationship: str, segment_id: int) -> list[Annotation]:
        """The annotations related to ``segment_id`` through ``relationship`` (from its
        index: geometry and properties; ``relationships`` is ``None``)."""
        if relationship not in self.relationships_index:
            raise KeyError(f"no relationship {relationship!r}; the layer has "
                           f"{list(self.relationships_index)}")
        data = self.relationships_index[relationship].get(_as_id(segment_id))
        if data is None:
            return []
        return self.decode_cell(data, f"{self.relationship_keys[relationship]}/{segment_id}")

    # -- spatial -----------------------------------------------------------------------------

    def _naming(self, lvl: SpatialLevel) -> str:
        """``spec`` or ``ngsidekick`` for an unsharded level (decided from its listing)."""
        if lvl.naming is not None:
            return lvl.naming
        lvl.naming = "spec"
        if lvl.index.sharded or all(g == 1 for g in lvl.grid_shape):
            return lvl.naming
        names = set(lvl.index.names())  # type: ignore[union-attr]  # unsharded, tested above
        for cell in np.ndindex(*lvl.grid_shape):
            spec_name, alt_name = lvl.spec_name(cell), lvl.ngsidekick_name(cell)
            if spec_name == alt_name or (spec_name not in names and alt_name not in names):
                continue
            if spec_name in names and self._cell_fits(lvl, cell, spec_name):
                break
            if alt_name in names and self._cell_fits(lvl, cell, alt_name):
                lvl.naming = "ngsidekick"
                self.quirks.append(
                    f"spatial level {lvl.level} ({lvl.key}): cell files are named as "
                    "ngsidekick 0.0.20 names them (a transposed Morton decode), not x_y_z")
            break
        return lvl.naming

    def _cell_fits(self, lvl: SpatialLevel, cell: Sequence[int], fname: str) -> bool:
        data = lvl.index.read(fname)  # type: ignore[union-attr]  # only for unsharded levels
        if data is None:
            return False
        try:
            anns = self.decode_cell(data, f"{lvl.key}/{fname}")
        except ShardkitError:
            return False
        lo, hi = lvl.open_cell_box(self.lower_bound, cell)
        slack = 1e-4 * np.maximum(1.0, np.asarray(lvl.chunk_size))
        return all(meets(a.type, a.geometry, lo - slack, hi + slack) for a in anns)

    def read_cell(self, level: int, cell: Sequence[int]) -> list[Annotation]:
        """The annotations stored in one cell of a spatial level."""
        lvl = self.spatial[level]
        data = self._cell_bytes(lvl, [tuple(int(c) for c in cell)])[0]
        return [] if data is None else self.decode_cell(
            data, f"{lvl.key}/{lvl.spec_name(cell)}")

    def _cell_bytes(self, lvl: SpatialLevel, cells: list[tuple[int, ...]]) -> list[bytes | None]:
        if lvl.index.sharded:
            return lvl.index.get_many([lvl.cell_key(c) for c in cells])
        name = lvl.ngsidekick_name if self._naming(lvl) == "ngsidekick" else lvl.spec_name
        return [lvl.index.read(name(c)) for c in cells]  # type: ignore[union-attr]  # unsharded here

    def cells_meeting(self, level: int, lower: Sequence[float] | np.ndarray,
                      upper: Sequence[float] | np.ndarray) -> list[tuple[int, ...]]:
        """Grid cells of ``level`` whose closed box meets ``[lower, upper]``.

        The cells at the edges of the grid stand for everything beyond it too (geometry
        outside the bounds, which verify reports, is stored in them), so a box outside the
        grid still reads the edge cells it faces, as Neuroglancer does.
        """
        lvl = self.spatial[level]
        size = np.asarray(lvl.chunk_size)
        if np.any(np.asarray(upper) < np.asarray(lower)):
            return []
        first = np.ceil((np.asarray(lower, dtype=np.float64) - self.lower_bound) / size - 1)
        last = np.floor((np.asarray(upper, dtype=np.float64) - self.lower_bound) / size)
        grid = np.asarray(lvl.grid_shape)
        first = np.clip(first, 0, grid - 1).astype(np.int64)
        last = np.clip(last, 0, grid - 1).astype(np.int64)
        return list(_product([range(int(a), int(b) + 1) for a, b in zip(first, last,
                                                                       strict=True)]))

    def query(self, lower: Sequence[float] | Sequence[Sequence[float]],
              upper: Sequence[float] | None = None, *, level: int | None = None
              ) -> list[Annotation]:
        """Every annotation meeting the closed box ``[lower, upper]``, once each, through the
        spatial index (every level, or only ``level``).

        ``query(((x0, y0, z0), (x1, y1, z1)))`` works too.
        """
        if upper is None:
            lower, upper = cast("Sequence[Sequence[float]]", lower)
        lo = np.asarray(lower, dtype=np.float64)
        hi = np.asarray(upper, dtype=np.float64)
        if lo.shape != (self.layout.rank,) or hi.shape != (self.layout.rank,):
            raise ValueError(f"a box needs two corners of {self.layout.rank} coordinates")
        levels = range(len(self.spatial)) if level is None else [level]
        seen: set[int] = set()
        out = []
        for li in levels:
            lvl = self.spatial[li]
            cells = self.cells_meeting(li, lo, hi)
            for cell, data in zip(cells, self._cell_bytes(lvl, cells), strict=True):
                if data is None:
                    continue
                for a in self._cell_meeting(data, f"{lvl.key}/{lvl.spec_name(cell)}", lo, hi,
                                            seen):
                    seen.add(a.id)
                    out.append(a)
        return out

    def _cell_meeting(self, data: bytes, where: str, lo: np.ndarray, hi: np.ndarray,
                      seen: set[int]) -> list[Annotation]:
        """The annotations of a cell that meet ``[lo, hi]`` and are not in ``seen``: only
        those that :func:`box_candidates` keeps are decoded and tested one by one (what
        :meth:`decode_cell` and :func:`meets` would give, without an object per record)."""
        if not self._decided:
            self._decide(self._fits_cell(data))
        dec = self._decoder
        lay = dec.layout
        if lay.type == "polyline":
            return [a for a in dec.decode_cell(data, where)
                    if a.id not in seen and meets(a.type, a.geometry, lo, hi)]
        count, starts = dec.cell_bounds(data, where)
        if not count:
            return []
        ids = np.frombuffer(data, "<u8", count, starts[-1]).tolist()
        recs = np.frombuffer(data, lay.dtype, count, 8)
        geoms = recs["geometry"]
        keep = box_candidates(lay.type, geoms, lo, hi)
        exact = lay.type in ("point", "axis_aligned_bounding_box")  # the same test as meets
        out = []
        for i in np.flatnonzero(keep).tolist():
            if ids[i] in seen:
                continue
            geometry = geoms[i].copy()
            if exact or meets(lay.type, geometry, lo, hi):
                out.append(Annotation(ids[i], lay.type, geometry, *dec._props(recs[i])))
        return out

    # -- tables ------------------------------------------------------------------------------

    def iter_batches(self, batch_size: int = 65536) -> Iterator[Any]:
        """``pyarrow.RecordBatch`` es of ``batch_size`` annotations (bounded memory)."""
        import pyarrow as pa

        schema = self.arrow_schema()
        batch: list[Annotation] = []
        sent = False
        for ann in self:
            batch.append(ann)
            if len(batch) >= batch_size:
                yield self._to_batch(batch, schema, pa)
                sent = True
                batch = []
        if batch or not sent:
            yield self._to_batch(batch, schema, pa)

    def arrow_schema(self) -> Any:
        """One column per geometry vector coordinate, property (and enum label) and
        relationship (a list of uint64)."""
        import pyarrow as pa

        lay = self.layout
        fields = [pa.field("id", pa.uint64())]
        if lay.type == "polyline":
            fields.append(pa.field("points", pa.list_(pa.list_(pa.float32(), lay.rank))))
        else:
            for vec in _VECTOR_NAMES[lay.type]:
                fields += [pa.field(f"{vec}{d}" if vec else d, pa.float32())
                           for d in lay.dimensions]
        for p in lay.properties:
            if p.type in ("rgb", "rgba"):
                fields.append(pa.field(p.id, pa.list_(pa.uint8(), len(p.type))))
            else:
                fields.append(pa.field(p.id, pa.from_numpy_dtype(p.dtype)))
                if p.enum:
                    fields.append(pa.field(f"{p.id}_label", pa.string()))
        fields += [pa.field(r, pa.list_(pa.uint64())) for r in lay.relationships]
        return pa.schema(fields)

    def _to_batch(self, anns: list[Annotation], schema: Any, pa: Any) -> Any:
        lay = self.layout
        cols: list[Any] = [pa.array([a.id for a in anns], pa.uint64())]
        if lay.type == "polyline":
            cols.append(pa.array([a.geometry.tolist() for a in anns], schema.field(1).type))
        else:
            geo = (np.stack([a.geometry for a in anns]) if anns
                   else np.zeros((0, len(_VECTOR_NAMES[lay.type]), lay.rank), np.float32))
            for v in range(len(_VECTOR_NAMES[lay.type])):
                for d in range(lay.rank):
                    cols.append(pa.array(geo[:, v, d], pa.float32()))
        for p in lay.properties:
            values: list[Any] = [a.properties.get(p.id) for a in anns]
            if p.type in ("rgb", "rgba"):
                cols.append(pa.array([list(v) for v in values],
                                     pa.list_(pa.uint8(), len(p.type))))
            else:
                cols.append(pa.array(np.asarray(values, dtype=p.dtype)))
                if p.enum:
                    cols.append(pa.array([a.labels.get(p.id) for a in anns], pa.string()))
        for r in lay.relationships:
            cols.append(pa.array([(a.relationships or {}).get(r, []) for a in anns],
                                 pa.list_(pa.uint64())))
        return pa.RecordBatch.from_arrays(cols, schema=schema)

    def to_arrow(self, batch_size: int = 65536) -> Any:
        """Every annotation as a ``pyarrow.Table`` (see :meth:`arrow_schema`)."""
        import pyarrow as pa

        return pa.Table.from_batches(list(self.iter_batches(batch_size)), self.arrow_schema())

    def to_pandas(self) -> Any:
        """:meth:`to_arrow` as a pandas DataFrame."""
        return self.to_arrow().to_pandas()

    # -- dataset hooks ------------------------------------------------------------------------

    @property
    def kv(self) -> ShardedKV:
        if isinstance(self.by_id, ShardedIndex):
            return self.by_id.kv
        raise ShardkitError(f"{self.store.name}: by_id is not sharded")

    def _all_kvs(self) -> list[tuple[str, ShardedKV]]:
        out = []
        for prefix, index in self.indexes():
            if isinstance(index, ShardedIndex):
                out.append((f"{prefix}/", index.kv))
        return out

    def indexes(self) -> list[tuple[str, UnshardedIndex | ShardedIndex]]:
        """``(folder, index)`` of every index: by_id, relationships, spatial levels."""
        out: list[tuple[str, UnshardedIndex | ShardedIndex]] = []
        if self.by_id is not None:
            out.append((self.by_id_key or "by_id", self.by_id))
        out += [(self.relationship_keys[r], idx) for r, idx in self.relationships_index.items()]
        out += [(lvl.key, lvl.index) for lvl in self.spatial]
        return out

    def verify(self, progress: Callable[[int, int], None] | None = None, *,
               bucket_bytes: int | None = None, exact: bool = False,
               tmp_dir: str | None = None) -> list[Problem]:
        """Every check of :func:`.annotation_verify.verify_layer` (``bucket_bytes``: the
        memory bound of the comparisons across indexes, 64 MiB by default; past it they spill
        to a temporary folder in ``tmp_dir``; ``exact``: rows rather than digests)."""
        from .annotation_spill import DEFAULT_BUCKET_BYTES
        from .annotation_verify import verify_layer

        return verify_layer(self, progress, bucket_bytes=bucket_bytes or DEFAULT_BUCKET_BYTES,
                            exact=exact, tmp_dir=tmp_dir)

    def summary(self, count_chunks: bool | None = None) -> dict[str, Any]:
        count = self._counting(count_chunks)
        lay = self.layout
        out: dict[str, Any] = {
            "format": self.format_name, "dataset": self.store.name, "type": ANNOTATIONS_TYPE,
            "annotation_type": lay.type, "dimensions": self.info.get("dimensions"),
            "lower_bound": self.lower_bound.tolist(), "upper_bound": self.upper_bound.tolist(),
            "properties": [p.to_json() for p in lay.properties],
            "record_bytes": lay.record_bytes if lay.type != "polyline" else None,
            "relationships": list(lay.relationships),
            "indexes": [],
        }
        for prefix, index in self.indexes():
            entry: dict[str, Any] = {"key": prefix, "sharded": index.sharded}
            if isinstance(index, ShardedIndex):
                entry["sharding"] = index.kv.spec.to_dict()
            if count:
                entry["entries"] = index.count()
            out["indexes"].append(entry)
        out["spatial"] = [{"key": lvl.key, "grid_shape": list(lvl.grid_shape),
                           "chunk_size": list(lvl.chunk_size), "limit": lvl.limit}
                          for lvl in self.spatial]
        out["annotation_count"] = len(self) if count and self.by_id is not None else None
        if self.quirks:
            out["quirks"] = list(self.quirks)
        return out

    def sections(self) -> list[Section]:
        out = []
        for prefix, kv in self._all_kvs():
            out += [Section(f"{prefix}{s.name}", s.start, s.end, s.note) for s in kv.sections()]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format_id, "dataset": self.store.name, "info": self.info,
                "summary": self.summary(count_chunks=not self.store.remote)}

    def close(self) -> None:
        for _, index in self.indexes():
            if isinstance(index, ShardedIndex):
                index.kv.close()


_VECTOR_NAMES = {"point": ("",), "line": ("a_", "b_"), "axis_aligned_bounding_box": ("a_", "b_"),
                 "ellipsoid": ("center_", "radius_")}


def _product(ranges: list[range]) -> Iterator[tuple[int, ...]]:
    import itertools

    return itertools.product(*ranges)


def _as_id(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, str) and value.isdigit():
            value = int(value)
        else:
            raise TypeError(f"an annotation or segment id must be a uint64, got {value!r}")
    value = int(value)
    if not 0 <= value <= _MASK64:
        raise ValueError(f"id {value} is not a uint64")
    return cast(int, value)


def open_annotation_layer(store: _Store, info: dict[str, Any], **options: Any
                          ) -> NgAnnotationLayer:
    """:class:`NgAnnotationLayer` of a store whose ``info`` is ``neuroglancer_annotations_v1``."""
    return NgAnnotationLayer(store, info, **options)


__all__ = ["ANNOTATIONS_TYPE", "Annotation", "NgAnnotationLayer", "RecordDecoder",
           "SpatialLevel", "bounding_box", "meets", "open_annotation_layer"]
