"""Encoding the writer's annotation dicts into Neuroglancer annotation records, a batch at a
time: ids checked, the geometry and the properties packed in the layout's stored order, and
each annotation's relationships (its by_id tail and its (segment, row) pairs)."""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..formats.neuroglancer.annotation_layout import PROPERTY_TYPES, AnnotationLayout, stored_order

_MASK64 = (1 << 64) - 1
_F32_MAX = float(np.finfo(np.float32).max)  # past it a coordinate would be stored as inf

_GEOMETRY_FIELDS = {"point": ("point",), "line": ("point_a", "point_b"),
                    "axis_aligned_bounding_box": ("point_a", "point_b"),
                    "ellipsoid": ("center", "radii"), "polyline": ("points",)}
_STRUCT = {"uint8": "B", "int8": "b", "uint16": "H", "int16": "h", "uint32": "I", "int32": "i",
           "float32": "f", "rgb": "3B", "rgba": "4B"}


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
        if len(vec) != self.rank or not all(math.isfinite(v) and abs(v) <= _F32_MAX
                                            for v in vec):
            raise ValueError(f"annotation {ident}: {name} must be {self.rank} finite numbers "
                             f"(within float32), got {value!r}"[:200])
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
                named = isinstance(v, str) and v in labels
                if named:
                    v = labels[v]
                try:
                    v = float(v) if ptype == "float32" else int(v)
                except (TypeError, ValueError) as exc:
                    raise ValueError(f"annotation {ident}: property {pid}: {v!r} is not a "
                                     f"{ptype} value" + (" or label" if labels else "")
                                     ) from exc
                if ptype != "float32":
                    info = np.iinfo(PROPERTY_TYPES[ptype][0])
                    if not info.min <= v <= info.max:
                        raise ValueError(f"annotation {ident}: property {pid} value {v} is "
                                         f"outside {ptype}")
                if labels and not named and v not in labels.values():
                    raise ValueError(f"annotation {ident}: property {pid} value {v!r} is not "
                                     "one of its enum_values or enum_labels"[:200])
                values.append(v)
        return values

    def batch(self, batch: Sequence[Mapping[str, Any]], first: int,
              rel_meta: list[dict[str, Any]]) -> _Encoded:
        return _batch_of(self, batch, first, rel_meta)

    def _ids(self, batch: Sequence[Mapping[str, Any]], first: int) -> np.ndarray:
        ids: list[Any] = [a.get("id") for a in batch]
        if all(type(x) is int for x in ids):  # the usual case: one conversion checks range
            try:
                return np.array(ids, dtype=np.uint64)
            except OverflowError:
                pass
        for i, ident in enumerate(ids):
            if (type(ident) is not int and not isinstance(ident, np.integer)) \
                    or isinstance(ident, bool) or not 0 <= int(ident) <= _MASK64:
                raise ValueError(f"annotation #{first + i}: id must be a uint64, got "
                                 f"{ident!r}"[:200])
        return np.array([int(x) for x in ids], dtype=np.uint64)

    def fast_batch(self, batch: Sequence[Mapping[str, Any]], first: int
                   ) -> tuple[np.ndarray, bytes, np.ndarray, np.ndarray] | None:
        """Records of plain numeric annotations at once, or ``None`` to go one by one."""
        ids = self._ids(batch, first)
        lay = self.layout
        try:
            geo = np.array([[a[f] for f in self.fields] for a in batch], dtype=np.float64)
        except (KeyError, TypeError, ValueError):
            return None
        if geo.shape != (len(batch), self.vectors, self.rank) \
                or not np.all(np.abs(geo) <= _F32_MAX):  # NaN and inf fail too
            return None
        recs = np.zeros(len(batch), lay.dtype)
        recs["geometry"] = geo
        empty: dict[str, Any] = {}
        props = [a.get("properties") or empty for a in batch]
        if any(not self.names.issuperset(p) for p in props):
            return None
        for pid, ptype, _labels, default in self.props:
            values = [p.get(pid, default) for p in props]
            try:  # numbers only: None, labels and colour strings go one by one
                raw = np.array(values)
                if raw.dtype.kind not in "iuf" or (ptype != "float32" and raw.dtype.kind == "f"):
                    return None
                arr = raw.astype(np.float64 if ptype == "float32" else np.int64)
            except (TypeError, ValueError, OverflowError):
                return None
            if ptype in ("rgb", "rgba"):
                if arr.shape != (len(batch), len(ptype)) or arr.min(initial=0) < 0 \
                        or arr.max(initial=0) > 255:
                    return None
            elif arr.shape != (len(batch),):
                return None
            elif ptype == "float32":
                if np.any(np.abs(arr[np.isfinite(arr)]) > _F32_MAX):  # named one by one
                    return None
            else:
                info = np.iinfo(PROPERTY_TYPES[ptype][0])
                if arr.min(initial=0) < info.min or arr.max(initial=0) > info.max:
                    return None
            if _labels and not np.all(np.isin(arr, list(_labels.values()))):
                return None  # named one by one
            recs[pid] = arr
        offsets = np.arange(len(batch) + 1, dtype=np.int64) * lay.record_bytes
        return ids, recs.tobytes(), offsets, geo.astype(np.float32)

    def slow_batch(self, batch: Sequence[Mapping[str, Any]], first: int
                   ) -> tuple[np.ndarray, bytes, np.ndarray, Any]:
        """One by one: every value form, and the first bad one named."""
        ids = self._ids(batch, first)
        parts = []
        offsets = np.zeros(len(batch) + 1, dtype=np.int64)
        geos = []
        for i, (ann, ident) in enumerate(zip(batch, ids.tolist(), strict=True)):
            geometry = self.geometry(ann, ident)
            rec = self.record(geometry, ann.get("properties") or {}, ident)
            parts.append(rec)
            offsets[i + 1] = offsets[i] + len(rec)
            geos.append(geometry)
        if self.layout.type != "polyline":
            geos_arr: Any = (np.stack(geos) if geos
                             else np.zeros((0, self.vectors, self.rank), np.float32))
        else:
            geos_arr = geos
        return ids, b"".join(parts), offsets, geos_arr

    def record(self, geometry: np.ndarray, props: Mapping[str, Any], ident: int) -> bytes:
        try:
            tail = self.prop_struct.pack(*self.prop_values(props, ident))
        except (struct.error, OverflowError) as exc:  # OverflowError: a float32 too large
            raise ValueError(f"annotation {ident}: {exc}") from exc
        if self.layout.type == "polyline":
            return struct.pack("<I", len(geometry)) + geometry.astype("<f4").tobytes() + tail
        return geometry.astype("<f4").tobytes() + tail


def _tails_fast(batch: Sequence[Mapping[str, Any]], ids: np.ndarray,
                rel_meta: list[dict[str, Any]]
                ) -> tuple[bytes, np.ndarray, list[np.ndarray]] | None:
    """The relationship parts of a batch's by_id values at once, when every relationship value
    is a list or tuple of ints (else ``None``: one by one)."""

    n = len(batch)
    empty: dict[str, Any] = {}
    rels = [a.get("relationships") or empty for a in batch]
    names = [m["id"] for m in rel_meta]
    known = set(names)
    if any(r and not known.issuperset(r) for r in rels):
        return None
    lengths = np.full(n, 4 * len(names), dtype=np.int64)
    columns = []
    for name in names:
        lists = [r.get(name) or () for r in rels]
        if not all(type(x) in (list, tuple) for x in lists):
            return None
        counts = np.fromiter(map(len, lists), np.int64, n)
        try:
            flat = np.fromiter(itertools.chain.from_iterable(lists), np.uint64,
                               int(counts.sum()))
        except (TypeError, ValueError, OverflowError):
            return None
        columns.append((counts, flat))
        lengths += 8 * counts
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    out = np.zeros(int(offsets[-1]), dtype=np.uint8)
    pos = offsets[:-1].copy()
    pairs = []
    for counts, flat in columns:
        out[pos[:, None] + np.arange(4)] = counts.astype("<u4").view(np.uint8).reshape(n, 4)
        if len(flat):
            row = np.repeat(np.arange(n), counts)
            within = np.arange(len(flat)) - np.repeat(np.cumsum(counts) - counts, counts)
            at = pos[row] + 4 + 8 * within
            out[at[:, None] + np.arange(8)] = flat.astype("<u8").view(np.uint8).reshape(-1, 8)
            pr = np.stack([flat, row.astype(np.uint64)], axis=1)
            pairs.append(np.unique(pr, axis=0) if len(pr) else pr)
        else:
            pairs.append(np.zeros((0, 2), np.uint64))
        pos += 4 + 8 * counts
    return out.tobytes(), offsets, pairs


def _tails_slow(batch: Sequence[Mapping[str, Any]], ids: np.ndarray,
                rel_meta: list[dict[str, Any]]) -> tuple[bytes, np.ndarray, list[np.ndarray]]:
    rel_ids = {m["id"] for m in rel_meta}
    tail_parts: list[bytes] = []
    tail_offsets = np.zeros(len(batch) + 1, dtype=np.int64)
    pair_lists: list[list[tuple[int, int]]] = [[] for _ in rel_meta]
    pos = 0
    names = [m["id"] for m in rel_meta]
    for row, ann in enumerate(batch):
        rels = ann.get("relationships") or {}
        if rels and not rel_ids.issuperset(rels):
            raise ValueError(f"annotation {int(ids[row])}: unknown relationship(s) "
                             f"{sorted(set(rels) - rel_ids)}")
        for i, name in enumerate(names):
            segs = rels.get(name) or ()
            if isinstance(segs, (int, np.integer)):
                segs = (segs,)
            try:
                part = struct.pack(f"<I{len(segs)}Q", len(segs), *segs)
            except (struct.error, TypeError) as exc:
                raise ValueError(f"annotation {int(ids[row])}: a {name} id is not a "
                                 "uint64") from exc
            tail_parts.append(part)
            pos += len(part)
            if segs:
                pair_lists[i] += [(int(sg), row) for sg in dict.fromkeys(segs)]
        tail_offsets[row + 1] = pos
    pairs = [np.array(pl, dtype=np.uint64).reshape(-1, 2) for pl in pair_lists]
    return b"".join(tail_parts), tail_offsets, pairs


def _batch_of(encoder: _Encoder, batch: Sequence[Mapping[str, Any]], first: int,
              rel_meta: list[dict[str, Any]]) -> _Encoded:
    """Encode a batch: vectorised for fixed-size records whose values are plain numbers;
    otherwise (labels, colour strings, polylines, or an error to name) one by one."""
    fast = encoder.fast_batch(batch, first) if encoder.layout.type != "polyline" else None
    if fast is None:
        fast = encoder.slow_batch(batch, first)
    ids, records, rec_offsets, geos = fast
    got = _tails_fast(batch, ids, rel_meta)
    if got is None:
        got = _tails_slow(batch, ids, rel_meta)
    tails, tail_offsets, pairs = got
    if encoder.layout.type == "ellipsoid":
        r = np.abs(geos[:, 1])
        with np.errstate(over="ignore"):  # refused below
            lo, hi = geos[:, 0] - r, geos[:, 0] + r
    elif encoder.layout.type == "polyline":
        lo = np.array([g.min(axis=0) for g in geos], dtype=np.float32).reshape(-1, encoder.rank)
        hi = np.array([g.max(axis=0) for g in geos], dtype=np.float32).reshape(-1, encoder.rank)
    else:
        lo, hi = geos.min(axis=1), geos.max(axis=1)
    lo, hi = np.asarray(lo, np.float32), np.asarray(hi, np.float32)
    overflow = ~(np.isfinite(lo).all(axis=1) & np.isfinite(hi).all(axis=1))
    if overflow.any():  # an ellipsoid's center +- radii past float32
        raise ValueError(f"annotation {int(ids[int(np.argmax(overflow))])}: its bounding box "
                         "is not finite in float32")
    return _Encoded(ids, records, rec_offsets, tails, tail_offsets, lo, hi, pairs)


@dataclass
class _Encoded:
    ids: np.ndarray
    records: bytes
    rec_offsets: np.ndarray  # len + 1, relative to the batch
    tails: bytes
    tail_offsets: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    pairs: list[np.ndarray]  # per relationship: (segment, row in batch)
