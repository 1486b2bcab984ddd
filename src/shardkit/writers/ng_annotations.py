"""Writing Neuroglancer precomputed annotation layers (``neuroglancer_annotations_v1``).

:func:`write_annotations` streams any iterable of annotations: each is encoded once and
appended to a temporary spill file beside a fixed-size row (id, bounding box, where its bytes
are), both read back memory-mapped, so memory holds one shard (or one cell list) at a time
plus the per-level arrays of the spatial index. Then it writes:

- ``by_id``: id -> record and relationships;
- one index per relationship: segment id -> the related annotations;
- the spatial index, level by level from one cell over the whole bounds, each level halving
  the widest cell sizes (the spec's recommendation): at each level every remaining annotation
  is emitted with probability ``min(1, limit / maxCount)`` (``maxCount`` the fullest cell's
  remaining annotations), chosen by a hash of its id and the level, so the same input gives the
  same layer; an emitted annotation goes in every cell of that level it meets; the rest go on
  to the next level. Levels stop when nothing remains; a cell never holds more than ``limit``
  annotations except at the last level allowed (``max_levels``).

Each index is sharded or not: ``sharded=True`` chooses the sharding as ``shardkit ng spec``
does (``murmurhash3_x86_128`` for ids, the identity hash on Morton codes for spatial levels),
``False`` writes one file per key, and a mapping gives a spec (or ``True``/``False``) per index
(``"by_id"``, a relationship id, ``"spatial"``). The ``info`` lists the properties in their
stored order (size order), so that readers which lay them out in ``info`` order (neuroglancer
2.41.2's Python reader) read them right. ``info`` is written last; every file is atomic.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import struct
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..formats.neuroglancer import ShardingSpec
from ..formats.neuroglancer.annotation_layout import (
    ANNOTATION_TYPES,
    PROPERTY_TYPES,
    AnnotationLayout,
    stored_order,
)
from ..formats.neuroglancer.store import check_relative

__all__ = ["write_annotations"]

_MASK64 = (1 << 64) - 1
DEFAULT_LIMIT = 10_000
MAX_LEVELS = 20
_GEOMETRY_FIELDS = {"point": ("point",), "line": ("point_a", "point_b"),
                    "axis_aligned_bounding_box": ("point_a", "point_b"),
                    "ellipsoid": ("center", "radii"), "polyline": ("points",)}
_STRUCT = {"uint8": "B", "int8": "b", "uint16": "H", "int16": "h", "uint32": "I", "int32": "i",
           "float32": "f", "rgb": "3B", "rgba": "4B"}


def _splitmix(x: np.ndarray) -> np.ndarray:
    """A 64-bit mix of each value (uniform bits from ids)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _uniform(ids: np.ndarray, salt: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        mixed = _splitmix(ids ^ np.uint64((salt * 0x2545F4914F6CDD1D) & _MASK64))
    return (mixed >> np.uint64(11)).astype(np.float64) / float(1 << 53)


class _Encoder:
    """Records of one layout, from the writer's dicts."""

    def __init__(self, layout: AnnotationLayout, properties: list[dict[str, Any]]) -> None:
        self.layout = layout
        self.rank = layout.rank
        order = stored_order([p["type"] for p in properties])
        fmt = "<"
        pos = 0
        self.props = []
        for i in order:
            spec = layout.properties[i]
            if spec.offset > pos:
                fmt += f"{spec.offset - pos}x"
            fmt += _STRUCT[spec.type]
            pos = spec.offset + spec.nbytes
            labels = {v: k for k, v in (spec.enum or {}).items()}
            self.props.append((spec.id, spec.type, labels, properties[i].get("default")))
        if pos < layout.property_bytes:
            fmt += f"{layout.property_bytes - pos}x"
        self.prop_struct = struct.Struct(fmt)
        self.names = {p.id for p in layout.properties}
        kind = layout.type
        self.vectors = 0 if kind == "polyline" else len(_GEOMETRY_FIELDS[kind])
        self.geo_struct = struct.Struct(f"<{self.vectors * self.rank}f")
        self.fields = _GEOMETRY_FIELDS[kind]

    def _vec(self, value: Any, name: str, ident: int) -> list[float]:
        try:
            vec = [float(v) for v in value]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"annotation {ident}: {name} must be {self.rank} numbers") from exc
        if len(vec) != self.rank or not all(math.isfinite(v) for v in vec):
            raise ValueError(f"annotation {ident}: {name} must be {self.rank} finite numbers, "
                             f"got {value!r}"[:200])
        return vec

    def geometry(self, ann: Mapping[str, Any], ident: int) -> np.ndarray:
        if self.layout.type == "polyline":
            pts = ann.get("points")
            if pts is None or len(pts) < 1:
                raise ValueError(f"annotation {ident}: points must list at least one point")
            return np.array([self._vec(p, "points[]", ident) for p in pts], dtype=np.float32)
        out = []
        for name in self.fields:
            if name not in ann:
                raise ValueError(f"annotation {ident}: {name} is missing")
            out.append(self._vec(ann[name], name, ident))
        return np.array(out, dtype=np.float32)

    def prop_values(self, props: Mapping[str, Any], ident: int) -> list[Any]:
        unknown = set(props) - self.names
        if unknown:
            raise ValueError(f"annotation {ident}: unknown property(ies) {sorted(unknown)}")
        values: list[Any] = []
        for pid, ptype, labels, default in self.props:
            v = props.get(pid, default)
            if v is None:
                v = 0 if ptype not in ("rgb", "rgba") else [0] * len(ptype)
            if ptype in ("rgb", "rgba"):
                if isinstance(v, str):
                    h = v.lstrip("#")
                    if len(h) != 2 * len(ptype):
                        raise ValueError(f"annotation {ident}: property {pid}: {v!r} is not "
                                         f"#{'rr' * len(ptype)}"[:200])
                    v = [int(h[i : i + 2], 16) for i in range(0, len(h), 2)]
                v = [int(c) for c in v]
                if len(v) != len(ptype):
                    raise ValueError(f"annotation {ident}: property {pid} needs {len(ptype)} "
                                     "components")
                values += v
            else:
                if isinstance(v, str) and v in labels:
                    v = labels[v]
                if ptype == "float32":
                    v = float(v)
                else:
                    v = int(v)
                    info = np.iinfo(PROPERTY_TYPES[ptype][0])
                    if not info.min <= v <= info.max:
                        raise ValueError(f"annotation {ident}: property {pid} value {v} is "
                                         f"outside {ptype}")
                values.append(v)
        return values

    def record(self, geometry: np.ndarray, props: Mapping[str, Any], ident: int) -> bytes:
        try:
            tail = self.prop_struct.pack(*self.prop_values(props, ident))
        except struct.error as exc:
            raise ValueError(f"annotation {ident}: {exc}") from exc
        if self.layout.type == "polyline":
            return struct.pack("<I", len(geometry)) + geometry.astype("<f4").tobytes() + tail
        return geometry.astype("<f4").tobytes() + tail


def _relationship_meta(relationships: Sequence[Any]) -> list[dict[str, Any]]:
    out = []
    for r in relationships:
        meta = {"id": r} if isinstance(r, str) else dict(r)
        if not isinstance(meta.get("id"), str) or not meta["id"]:
            raise ValueError(f"a relationship needs a string id, got {r!r}")
        meta.setdefault("key", f"rel_{meta['id']}")
        check_relative(meta["key"], f"relationships/{meta['id']}/key")
        out.append(meta)
    if len({m["id"] for m in out}) != len(out):
        raise ValueError("relationship ids must be unique")
    return out


class _Spill:
    """Encoded values appended to a temporary file, read back memory-mapped."""

    def __init__(self, folder: str) -> None:
        self.file = tempfile.NamedTemporaryFile(dir=folder, prefix=".annotations-",  # noqa: SIM115
                                                suffix=".spill", delete=False)
        self.pos = 0
        self.mm: np.ndarray | None = None

    def add(self, data: bytes) -> int:
        start = self.pos
        self.file.write(data)
        self.pos += len(data)
        return start

    def close_writing(self) -> None:
        self.file.flush()
        self.file.close()
        if self.pos:
            self.mm = np.memmap(self.file.name, dtype=np.uint8, mode="r")

    def get(self, start: int, end: int) -> bytes:
        assert self.mm is not None
        return self.mm[start:end].tobytes()

    def remove(self) -> None:
        self.mm = None
        with contextlib.suppress(OSError):
            os.unlink(self.file.name)


def _level_grids(lower: np.ndarray, upper: np.ndarray, scales: np.ndarray, levels: int
                 ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(grid_shape, chunk_size)`` per level: each level halves the widest cell sizes
    (those within 1.5x of half the widest, in physical units)."""
    size = np.maximum(upper - lower, 1e-30) * scales
    grid = np.ones(len(size), dtype=np.int64)
    out = [(grid.copy(), size / scales)]
    for _ in range(1, levels):
        target = size.max() / 2
        split = (size == size.max()) | (size / target > 1.5)
        size = np.where(split, size / 2, size)
        grid = np.where(split, grid * 2, grid)
        out.append((grid.copy(), size / scales))
    return out


def write_annotations(path: str | os.PathLike[str], annotations: Iterable[Mapping[str, Any]], *,
                      annotation_type: str, dimensions: Mapping[str, Sequence[Any]],
                      properties: Sequence[Mapping[str, Any]] = (),
                      relationships: Sequence[str | Mapping[str, Any]] = (),
                      lower_bound: Sequence[float] | None = None,
                      upper_bound: Sequence[float] | None = None,
                      sharded: bool | Mapping[str, Any] = True,
                      limit: int = DEFAULT_LIMIT, max_levels: int = MAX_LEVELS,
                      storage_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Write a Neuroglancer precomputed annotation layer.

    Args:
        path: Output folder or fsspec URL.
        annotations: Dicts: ``id`` (uint64), the geometry (``point``; ``point_a`` and
            ``point_b``; ``center`` and ``radii``; ``points``), ``properties`` (property id ->
            value; an enum label is taken for its value, ``rgb``/``rgba`` as a list or
            ``#rrggbb[aa]``) and ``relationships`` (relationship id -> segment ids).
        annotation_type: ``point``, ``line``, ``axis_aligned_bounding_box``, ``ellipsoid`` or
            ``polyline`` (any case).
        dimensions: ``{name: [scale, unit]}`` as in ``info``.
        properties: ``info`` property objects (``id``, ``type``, optional ``description``,
            ``enum_values``/``enum_labels``, and ``default`` for annotations without a value).
        relationships: Relationship ids (or ``info`` objects with ``id`` and ``key``).
        lower_bound, upper_bound: The layer's bounds; by default the annotations' (the upper
            bound nudged up so that it is exclusive).
        sharded: ``True``, ``False``, or ``{"by_id" | relationship id | "spatial": spec, True
            or False}``.
        limit: Most annotations per spatial cell.
        max_levels: Most spatial index levels.
        storage_options: For fsspec URLs.

    Returns:
        The ``info`` written.

    Raises:
        ValueError: An annotation or an argument is invalid (nothing is left under ``path``
            but complete files; ``info`` is written last).
    """
    from ..ng.chooser import choose_hashed_spec, choose_spatial_spec
    from .neuroglancer import _writer, build_shards

    kind = str(annotation_type).lower()
    if kind not in ANNOTATION_TYPES:
        raise ValueError(f"annotation_type must be one of {', '.join(ANNOTATION_TYPES)}")
    if type(limit) is not int or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    dims = {str(k): list(v) for k, v in dict(dimensions).items()}
    rank = len(dims)
    rel_meta = _relationship_meta(relationships)
    props = [dict(p) for p in properties]
    order = stored_order([p.get("type", "") for p in props]) if all(
        p.get("type") in PROPERTY_TYPES for p in props) else list(range(len(props)))
    props = [props[i] for i in order]  # info lists them in stored order
    info_props = [{k: v for k, v in p.items() if k != "default"} for p in props]
    base_info: dict[str, Any] = {
        "@type": "neuroglancer_annotations_v1", "dimensions": dims,
        "annotation_type": kind, "properties": info_props,
        "relationships": [{"id": m["id"], "key": m["key"]} for m in rel_meta],
    }
    layout = AnnotationLayout(base_info)
    encoder = _Encoder(layout, props)
    scales = np.array([float(v[0]) for v in dims.values()], dtype=np.float64)
    if not np.all(np.isfinite(scales) & (scales > 0)):
        raise ValueError("every dimension needs a positive scale: {name: [scale, unit]}")

    def want(name: str, group: str) -> ShardingSpec | bool:
        if isinstance(sharded, Mapping):
            value = sharded.get(name, sharded.get(group, True))
        else:
            value = sharded
        if isinstance(value, bool):
            return value
        return ShardingSpec.coerce(value)

    dest = os.fspath(path)
    folder = dest if "://" not in dest else None
    if folder is not None:
        os.makedirs(folder, exist_ok=True)
    put = _writer(dest, storage_options)
    spill = _Spill(folder or tempfile.gettempdir())
    rows = tempfile.TemporaryFile()  # noqa: SIM115 - fixed-size rows, memory-mapped later
    pairs = [tempfile.TemporaryFile() for _ in rel_meta]  # noqa: SIM115 - (segment, row)
    row_dtype = np.dtype([("id", "<u8"), ("start", "<u8"), ("rec_end", "<u8"), ("end", "<u8"),
                          ("lo", "<f4", (rank,)), ("hi", "<f4", (rank,))])
    try:
        n = 0
        buf: list[tuple[Any, ...]] = []
        pair_bufs: list[list[tuple[int, int]]] = [[] for _ in rel_meta]
        seen_max = np.full(rank, -np.inf)
        seen_min = np.full(rank, np.inf)
        for ann in annotations:
            ident = ann.get("id")
            if isinstance(ident, bool) or not isinstance(ident, (int, np.integer)) \
                    or not 0 <= int(ident) <= _MASK64:
                raise ValueError(f"annotation #{n}: id must be a uint64, got {ident!r}"[:200])
            ident = int(ident)
            geometry = encoder.geometry(ann, ident)
            rec = encoder.record(geometry, ann.get("properties") or {}, ident)
            rels = ann.get("relationships") or {}
            unknown = set(rels) - {m["id"] for m in rel_meta}
            if unknown:
                raise ValueError(f"annotation {ident}: unknown relationship(s) {sorted(unknown)}")
            tail = []
            for i, m in enumerate(rel_meta):
                segs = rels.get(m["id"]) or []
                if isinstance(segs, (int, np.integer)):
                    segs = [segs]
                segs = [int(s) for s in segs]
                if any(not 0 <= s <= _MASK64 for s in segs):
                    raise ValueError(f"annotation {ident}: a {m['id']} id is not a uint64")
                tail.append(struct.pack(f"<I{len(segs)}Q", len(segs), *segs))
                pair_bufs[i] += [(s, n) for s in dict.fromkeys(segs)]
            start = spill.add(rec)
            spill.add(b"".join(tail))
            if kind == "ellipsoid":
                r = np.abs(geometry[1])
                lo, hi = geometry[0] - r, geometry[0] + r
            else:
                lo, hi = geometry.min(axis=0), geometry.max(axis=0)
            seen_min = np.minimum(seen_min, lo)
            seen_max = np.maximum(seen_max, hi)
            buf.append((ident, start, start + len(rec), spill.pos, lo, hi))
            n += 1
            if len(buf) >= 65536:
                rows.write(np.array(buf, dtype=row_dtype).tobytes())
                buf = []
                for f, pb in zip(pairs, pair_bufs, strict=True):
                    f.write(np.array(pb, dtype="<u8").reshape(-1, 2).tobytes())
                    pb.clear()
        if buf:
            rows.write(np.array(buf, dtype=row_dtype).tobytes())
        for f, pb in zip(pairs, pair_bufs, strict=True):
            f.write(np.array(pb, dtype="<u8").reshape(-1, 2).tobytes())
        spill.close_writing()
        rows.flush()
        table = (np.memmap(rows, dtype=row_dtype, mode="r", shape=(n,)) if n
                 else np.zeros(0, row_dtype))
        ids = np.asarray(table["id"])
        if n and len(np.unique(ids)) != n:
            raise ValueError("annotation ids must be unique")
        lower = np.asarray(lower_bound if lower_bound is not None else
                           (seen_min if n else np.zeros(rank)), dtype=np.float64)
        if upper_bound is not None:
            upper = np.asarray(upper_bound, dtype=np.float64)
        elif n:
            upper = np.nextafter(seen_max.astype(np.float32), np.float32(np.inf)
                                 ).astype(np.float64)
            upper = np.maximum(upper, lower + 1e-6)
        else:
            upper = lower + 1
        if lower.shape != (rank,) or upper.shape != (rank,) or np.any(upper <= lower):
            raise ValueError(f"lower_bound and upper_bound must be {rank} numbers each, "
                             "upper above lower")

        def value_of(row: int) -> bytes:
            return spill.get(int(table["start"][row]), int(table["end"][row]))

        def record_of(row: int) -> bytes:
            return spill.get(int(table["start"][row]), int(table["rec_end"][row]))

        def list_value(rows_: np.ndarray) -> bytes:
            recs = b"".join(record_of(int(r)) for r in rows_)
            return (struct.pack("<Q", len(rows_)) + recs
                    + np.asarray(table["id"][rows_], dtype="<u8").tobytes())

        info: dict[str, Any] = {**base_info, "lower_bound": lower.tolist(),
                                "upper_bound": upper.tolist()}

        def write_uint64_index(key: str, name: str, group: str, keys: np.ndarray,
                               value_for: Any, total_bytes: int) -> dict[str, Any]:
            meta: dict[str, Any] = {"key": key}
            choice = want(name, group)
            if choice is False:
                for k, idx in zip(keys.tolist(), range(len(keys)), strict=True):
                    put(f"{key}/{k}", value_for(idx))
                return meta
            spec = choice if isinstance(choice, ShardingSpec) else choose_hashed_spec(
                len(keys), total_bytes=total_bytes).spec
            meta["sharding"] = spec.to_dict()
            if len(keys):
                shards, _ = spec.locate_many(keys)
                order = np.argsort(shards, kind="stable")
                bounds = np.flatnonzero(np.diff(shards[order])) + 1
                for group_rows in np.split(order, bounds):
                    items = {int(keys[i]): value_for(int(i)) for i in group_rows}
                    for fname, data in build_shards(items, spec).items():
                        put(f"{key}/{fname}", data)
            return meta

        total = int(spill.pos)
        info["by_id"] = write_uint64_index("by_id", "by_id", "by_id", ids, value_of, total)
        rel_info = []
        for i, (m, f) in enumerate(zip(rel_meta, pairs, strict=True)):
            f.flush()
            f.seek(0)
            pr = np.frombuffer(f.read(), dtype="<u8").reshape(-1, 2)
            order = np.lexsort((pr[:, 1], pr[:, 0]))
            pr = pr[order]
            segs, starts = np.unique(pr[:, 0], return_index=True)
            ends = np.append(starts[1:], len(pr))

            def rel_value(j: int, pr: np.ndarray = pr, starts: np.ndarray = starts,
                          ends: np.ndarray = ends) -> bytes:
                return list_value(pr[starts[j] : ends[j], 1])

            meta = write_uint64_index(m["key"], m["id"], "relationships", segs, rel_value,
                                      len(pr) * (layout.record_bytes + 8))
            rel_info.append({"id": m["id"], **meta})
            del i
        info["relationships"] = rel_info
        info["spatial"] = _write_spatial(put, table, kind, lower, upper, scales, limit,
                                         max_levels, list_value, want, choose_spatial_spec,
                                         layout, encoder, spill)
        put("info", json.dumps(info).encode())  # last: a layer without it is not complete
        return info
    finally:
        spill.remove()
        rows.close()
        for f in pairs:
            f.close()


def _cells_of(kind: str, lo: np.ndarray, hi: np.ndarray, origin: np.ndarray,
              size: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lowest and highest cell per annotation (bounding boxes; points: half-open cells)."""
    if kind == "point":
        c = np.floor((lo - origin) / size).astype(np.int64)
        c = np.clip(c, 0, grid - 1)
        return c, c
    a = np.clip(np.floor((lo - origin) / size).astype(np.int64), 0, grid - 1)
    b = np.clip(np.floor((hi - origin) / size).astype(np.int64), 0, grid - 1)
    return a, b


def _write_spatial(put: Any, table: np.ndarray, kind: str, lower: np.ndarray,
                   upper: np.ndarray, scales: np.ndarray, limit: int, max_levels: int,
                   list_value: Any, want: Any, choose_spatial_spec: Any,
                   layout: AnnotationLayout, encoder: _Encoder, spill: _Spill
                   ) -> list[dict[str, Any]]:
    from ..formats.neuroglancer.annotations import meets
    from .neuroglancer import build_shards

    n = len(table)
    ids = np.asarray(table["id"])
    lo_all = np.asarray(table["lo"], dtype=np.float64)
    hi_all = np.asarray(table["hi"], dtype=np.float64)
    grids = _level_grids(lower, upper, scales, max_levels)
    remaining = np.arange(n)
    out: list[dict[str, Any]] = []
    need_exact = kind in ("line", "ellipsoid", "polyline")
    for level, (grid, size) in enumerate(grids):
        if level and not len(remaining):
            break
        # (row, cell code) pairs of the remaining annotations at this level
        a, b = _cells_of(kind, lo_all[remaining], hi_all[remaining], lower, size, grid)
        if kind == "point" or np.all(a == b):
            pair_rows = remaining
            pair_cells = a
        else:
            spans = np.prod(b - a + 1, axis=1)
            pair_rows = np.repeat(remaining, spans)
            base = np.repeat(a, spans, axis=0)
            ext = np.repeat(b - a + 1, spans, axis=0)
            offs = np.arange(len(pair_rows)) - np.repeat(np.cumsum(spans) - spans, spans)
            step = np.zeros_like(base)
            for d in range(base.shape[1]):
                step[:, d] = offs % ext[:, d]
                offs = offs // ext[:, d]
            pair_cells = base + step
            if need_exact:
                keep = np.ones(len(pair_rows), dtype=bool)
                for j in range(len(pair_rows)):
                    r = int(pair_rows[j])
                    clo = lower + pair_cells[j] * size
                    geo = _geometry_of(r, table, layout, spill)
                    keep[j] = meets(kind, geo, clo, clo + size)
                pair_rows, pair_cells = pair_rows[keep], pair_cells[keep]
        codes = _codes(pair_cells, grid)
        counts = np.unique(codes, return_counts=True)[1]
        max_count = int(counts.max()) if len(counts) else 0
        last = level == len(grids) - 1
        p = 1.0 if (max_count <= limit or last) else limit / max_count
        if p < 1:
            # chosen with probability p, and never more than limit in a cell: within a cell
            # the first limit by the same uniform draw; an annotation is emitted at this level
            # only where every cell it meets keeps it (so it is in all of them or none)
            u = _uniform(ids[pair_rows], level)
            by_cell = np.lexsort((u, codes))
            first = np.searchsorted(codes[by_cell], codes[by_cell], side="left")
            rank_in_cell = np.empty(len(codes), dtype=np.int64)
            rank_in_cell[by_cell] = np.arange(len(codes)) - first
            ok = (u < p) & (rank_in_cell < limit)
            bad_rows = np.unique(pair_rows[~ok])
            emitted_rows = np.setdiff1d(np.unique(pair_rows), bad_rows, assume_unique=True)
        else:
            emitted_rows = np.unique(pair_rows)
        em_mask = np.isin(pair_rows, emitted_rows)
        rows_l, codes_l = pair_rows[em_mask], codes[em_mask]
        # cells in a pseudo-random order of the ids
        order = np.lexsort((_uniform(ids[rows_l], 1 << 20), codes_l))
        rows_l, codes_l = rows_l[order], codes_l[order]
        key = f"spatial{level}"
        meta: dict[str, Any] = {"key": key, "grid_shape": [int(g) for g in grid],
                                "chunk_size": [float(s) for s in size], "limit": limit}
        choice = want("spatial", "spatial")
        cells, starts = np.unique(codes_l, return_index=True)
        ends = np.append(starts[1:], len(codes_l))
        if choice is False:
            for c, s, e in zip(cells.tolist(), starts.tolist(), ends.tolist(), strict=True):
                pos = _decode_code(c, grid)
                put(f"{key}/{'_'.join(map(str, pos))}", list_value(rows_l[s:e]))
        else:
            mean = (len(rows_l) * (layout.record_bytes + 8) / max(1, len(cells))) + 8
            spec = choice if isinstance(choice, ShardingSpec) else choose_spatial_spec(
                grid.tolist(), cell_bytes=mean, num_cells=len(cells)).spec
            meta["sharding"] = spec.to_dict()
            if len(cells):
                shards, _ = spec.locate_many(cells.astype(np.uint64))
                order = np.argsort(shards, kind="stable")
                bounds = np.flatnonzero(np.diff(shards[order])) + 1
                for group in np.split(order, bounds):
                    items = {int(cells[j]): list_value(rows_l[starts[j] : ends[j]])
                             for j in group}
                    for fname, data in build_shards(items, spec).items():
                        put(f"{key}/{fname}", data)
        out.append(meta)
        remaining = np.setdiff1d(remaining, emitted_rows, assume_unique=True)
    return out


def _geometry_of(row: int, table: np.ndarray, layout: AnnotationLayout, spill: _Spill
                 ) -> np.ndarray:
    rec = spill.get(int(table["start"][row]), int(table["rec_end"][row]))
    if layout.type == "polyline":
        k = int.from_bytes(rec[:4], "little")
        return np.frombuffer(rec, "<f4", k * layout.rank, 4).reshape(k, layout.rank)
    return np.frombuffer(rec, "<f4", layout.geometry_bytes // 4).reshape(-1, layout.rank)


def _codes(cells: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Compressed Morton codes of many cells (vectorised)."""
    bits = [max(0, int(g) - 1).bit_length() for g in grid]
    code = np.zeros(len(cells), dtype=np.uint64)
    j = 0
    c = cells.astype(np.uint64)
    for i in range(max(bits, default=0)):
        for d in range(len(bits)):
            if i < bits[d]:
                code |= ((c[:, d] >> np.uint64(i)) & np.uint64(1)) << np.uint64(j)
                j += 1
    return code


def _decode_code(code: int, grid: np.ndarray) -> tuple[int, ...]:
    from ..formats.neuroglancer.decode import morton_decode

    return morton_decode(int(code), [int(g) for g in grid])

