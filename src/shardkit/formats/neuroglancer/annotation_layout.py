"""The encoded annotation record of a ``neuroglancer_annotations_v1`` layer, from its ``info``.

Layouts: ``schemas/ng_annotation.ksy`` (one record: geometry, properties, padding),
``schemas/ng_annotation_cell.ksy`` (a spatial cell or relationship entry: a u8 count, the
records, the ids) and ``schemas/ng_annotation_by_id.ksy`` (a record, then each relationship's
u4 count and u8 ids). The record holds nothing that says how it is laid out: the ``info`` file
gives the rank, the annotation type and the properties, and :class:`AnnotationLayout` turns
them into byte offsets (and a numpy dtype, to decode many records at once).

Property order: Neuroglancer's reader (``src/annotation/index.ts``, ``getPropertyOffsets``)
sorts the properties by alignment, stably (4-byte ones, then 2-byte, then 1-byte; ``rgb`` and
``rgba`` are 1-aligned), starts a new group, padded to 4 bytes, when a group would pass 255
bytes, and pads the record to a multiple of 4. :class:`AnnotationLayout` computes the same.

``neuroglancer`` 2.41.2's Python writer (``write_annotations.py``) pads a ``uint32`` as if its
alignment were 3 (and lists the properties in ``info`` in its own sorted order): its records
have other offsets, and often another size. ``AnnotationLayout(..., quirk="ng-uint32")`` is that
layout; the layer reader picks it when the record size says so, and verify reports it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._lazy import lazy_module
from .spec import SpecError

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

ANNOTATION_TYPES = ("point", "line", "axis_aligned_bounding_box", "ellipsoid", "polyline")
# geometry vectors per annotation (polyline: a u4 count, then any number of points)
_VECTORS = {"point": 1, "line": 2, "axis_aligned_bounding_box": 2, "ellipsoid": 2}
# type -> (numpy dtype, count, bytes, alignment, code in ng_annotation.ksy)
PROPERTY_TYPES: dict[str, tuple[str, int, int, int, int]] = {
    "uint8": ("u1", 1, 1, 1, 1), "int8": ("i1", 1, 1, 1, 2),
    "uint16": ("<u2", 1, 2, 2, 3), "int16": ("<i2", 1, 2, 2, 4),
    "uint32": ("<u4", 1, 4, 4, 5), "int32": ("<i4", 1, 4, 4, 6),
    "float32": ("<f4", 1, 4, 4, 7),
    "rgb": ("u1", 3, 3, 1, 8), "rgba": ("u1", 4, 4, 1, 9),
}
_NG_2_41_ALIGNMENT = {"uint32": 3}  # neuroglancer 2.41.2 write_annotations._PROPERTY_DTYPES
_PROPERTY_ID = re.compile(r"^[a-z][a-zA-Z0-9_]*$")
MAX_GROUP_STRIDE = 255  # Neuroglancer's MAX_BUFFER_STRIDE (WebGL)
MAX_RANK = 32


@dataclass(frozen=True)
class PropertySpec:
    """One entry of ``info["properties"]``.

    Attributes:
        id: Its name.
        type: ``uint8`` ... ``float32``, ``rgb`` or ``rgba``.
        offset: Byte offset from the end of the geometry.
        enum: ``value -> label`` when ``enum_values`` and ``enum_labels`` are given.
        description: Its ``description``, if any.
    """

    id: str
    type: str
    offset: int
    enum: dict[Any, str] | None = None
    description: str | None = None

    @property
    def dtype(self) -> np.dtype:
        kind, count, *_ = PROPERTY_TYPES[self.type]
        return np.dtype((kind, (count,))) if count > 1 else np.dtype(kind)

    @property
    def nbytes(self) -> int:
        return PROPERTY_TYPES[self.type][2]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "type": self.type}
        if self.description is not None:
            out["description"] = self.description
        if self.enum is not None:
            out["enum_values"] = list(self.enum)
            out["enum_labels"] = list(self.enum.values())
        return out


def _fail(message: str, field: str) -> SpecError:
    return SpecError(f"info: {message}"[:400], field=field)


def parse_properties(props: Any) -> list[dict[str, Any]]:
    """``info["properties"]`` checked: a list of objects with a valid ``id`` and ``type``."""
    if props is None:
        return []
    if not isinstance(props, list):
        raise _fail("properties must be a list", "/properties")
    seen = set()
    out = []
    for i, p in enumerate(props):
        where = f"/properties/{i}"
        if not isinstance(p, Mapping):
            raise _fail(f"properties[{i}] must be an object", where)
        pid, ptype = p.get("id"), p.get("type")
        if not isinstance(pid, str) or not _PROPERTY_ID.match(pid):
            raise _fail(f"properties[{i}].id must match [a-z][a-zA-Z0-9_]*, got {pid!r}",
                        f"{where}/id")
        if pid in seen:
            raise _fail(f"property id {pid!r} is listed twice", f"{where}/id")
        seen.add(pid)
        if ptype not in PROPERTY_TYPES:
            raise _fail(f"properties[{i}].type must be one of {', '.join(PROPERTY_TYPES)}, "
                        f"got {ptype!r}", f"{where}/type")
        values, labels = p.get("enum_values"), p.get("enum_labels")
        if (values is None) != (labels is None):
            raise _fail(f"property {pid!r}: enum_values and enum_labels go together",
                        f"{where}/enum_values")
        if values is not None:
            if ptype in ("rgb", "rgba"):
                raise _fail(f"property {pid!r}: an {ptype} property cannot be an enum",
                            f"{where}/enum_values")
            if (not isinstance(values, list) or not isinstance(labels, list)
                    or len(values) != len(labels)
                    or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                               for v in values)
                    or not all(isinstance(s, str) for s in labels)):
                raise _fail(f"property {pid!r}: enum_values must be numbers and enum_labels "
                            "strings, as many of each", f"{where}/enum_values")
        out.append(dict(p))
    return out


def stored_order(types: Sequence[str], quirk: str | None = None) -> list[int]:
    """Indices of the properties in the order they are stored (stable, by alignment)."""
    if quirk == "ng-uint32":
        return list(range(len(types)))  # that writer lists them in info in its stored order
    return sorted(range(len(types)), key=lambda i: -PROPERTY_TYPES[types[i]][3])


def property_offsets(types: Sequence[str], first: int, quirk: str | None = None
                     ) -> tuple[list[int], int]:
    """``(offset of each property in the record, record bytes)`` for a geometry of ``first``
    bytes: Neuroglancer's ``getPropertyOffsets`` (or the quirk's layout)."""
    offsets = [0] * len(types)
    if quirk == "ng-uint32":
        pos = first
        for i in range(len(types)):
            align = _NG_2_41_ALIGNMENT.get(types[i], PROPERTY_TYPES[types[i]][3])
            pos += (-(pos - first)) % align  # that writer aligns from the end of the geometry
            offsets[i] = pos
            pos += PROPERTY_TYPES[types[i]][2]
        return offsets, pos + (-pos) % 4
    base = 0
    group = first
    for i in stored_order(types):
        size, align = PROPERTY_TYPES[types[i]][2], PROPERTY_TYPES[types[i]][3]
        start = group + (-group) % align
        end = start + size
        if end + (-end) % 4 <= MAX_GROUP_STRIDE:
            group = start
        else:  # a new property group
            base += group + (-group) % 4
            group = 0
        offsets[i] = base + group
        group += size
    return offsets, base + group + (-group) % 4


class AnnotationLayout:
    """How one annotation of a layer is encoded, from its ``info`` file.

    Attributes:
        rank: Number of dimensions.
        dimensions: Their names, in order.
        type: The annotation type, lower case.
        properties: :class:`PropertySpec` in ``info`` order (offsets filled in).
        relationships: Relationship ids, in ``info`` order.
        geometry_bytes: Bytes of the geometry of a fixed-size record (a polyline's with 2
            points, as Neuroglancer counts it).
        record_bytes: Bytes of a record (a polyline: with 2 points).
        dtype: numpy structured dtype of one fixed-size record (``geometry`` then the
            properties by id); ``None`` for polylines.
        quirk: ``None``, or ``"ng-uint32"`` for neuroglancer 2.41.2's padding.
    """

    def __init__(self, info: Mapping[str, Any], quirk: str | None = None) -> None:
        dims = info.get("dimensions")
        if not isinstance(dims, Mapping) or not dims:
            raise _fail("dimensions must be a non-empty object", "/dimensions")
        self.dimensions = [str(d) for d in dims]
        self.rank = len(self.dimensions)
        if self.rank > MAX_RANK:
            raise _fail(f"{self.rank} dimensions, more than {MAX_RANK}", "/dimensions")
        kind = info.get("annotation_type")
        if not isinstance(kind, str) or kind.lower() not in ANNOTATION_TYPES:
            raise _fail(f"annotation_type must be one of {', '.join(ANNOTATION_TYPES)} "
                        f"(any case), got {kind!r}", "/annotation_type")
        self.type = kind.lower()
        self.quirk = quirk
        raw_props = parse_properties(info.get("properties"))
        rels = info.get("relationships") or []
        if not isinstance(rels, list) or not all(
                isinstance(r, Mapping) and isinstance(r.get("id"), str) for r in rels):
            raise _fail("relationships must be a list of objects with a string id",
                        "/relationships")
        self.relationships = [r["id"] for r in rels]
        r4 = 4 * self.rank
        self.geometry_bytes = (4 + 2 * r4) if self.type == "polyline" else \
            _VECTORS[self.type] * r4
        types = [p["type"] for p in raw_props]
        offsets, self.record_bytes = property_offsets(types, self.geometry_bytes, quirk)
        self.properties = [
            PropertySpec(p["id"], p["type"], off - self.geometry_bytes,
                         dict(zip(p["enum_values"], p["enum_labels"], strict=True))
                         if p.get("enum_values") is not None else None,
                         p.get("description"))
            for p, off in zip(raw_props, offsets, strict=True)]
        self.property_bytes = self.record_bytes - self.geometry_bytes
        self.stored = [self.properties[i] for i in stored_order(types, quirk)]

    @functools.cached_property
    def props_dtype(self) -> np.dtype:
        """The properties of one record as a numpy structured dtype (made on first use, so
        that opening a layer does not import numpy)."""
        return np.dtype({
            "names": [p.id for p in self.properties],
            "formats": [p.dtype for p in self.properties],
            "offsets": [p.offset for p in self.properties],
            "itemsize": self.property_bytes})

    @functools.cached_property
    def dtype(self) -> np.dtype | None:
        """One whole record (geometry, then properties) as a numpy structured dtype; ``None``
        for polylines, whose geometry has a variable length."""
        if self.type == "polyline":
            return None
        return np.dtype({
            "names": ["geometry", *(p.id for p in self.properties)],
            "formats": [np.dtype(("<f4", (_VECTORS[self.type], self.rank))),
                        *(p.dtype for p in self.properties)],
            "offsets": [0, *(p.offset + self.geometry_bytes for p in self.properties)],
            "itemsize": self.record_bytes})

    @property
    def property_codes(self) -> bytes:
        """The ``property_types`` parameter of ``ng_annotation.ksy`` (stored order)."""
        return bytes(PROPERTY_TYPES[p.type][4] for p in self.stored)

    def same_as(self, other: AnnotationLayout) -> bool:
        """True when both layouts put every byte in the same place."""
        return (self.record_bytes == other.record_bytes
                and [p.offset for p in self.properties] == [p.offset for p in other.properties])

    def vectors_of(self, geometry_bytes: int) -> int:
        """Positions in a geometry of ``geometry_bytes`` (polylines)."""
        return geometry_bytes // (4 * self.rank)

    def padding_ranges(self) -> list[tuple[int, int]]:
        """Byte ranges, relative to the end of the geometry, that must be zero."""
        used = sorted((p.offset, p.offset + p.nbytes) for p in self.properties)
        out = []
        pos = 0
        for s, e in used:
            if s > pos:
                out.append((pos, s))
            pos = max(pos, e)
        if pos < self.property_bytes:
            out.append((pos, self.property_bytes))
        return out


def quirk_layout(info: Mapping[str, Any], layout: AnnotationLayout) -> AnnotationLayout | None:
    """neuroglancer 2.41.2's layout of the same ``info``, when it differs from the spec's."""
    other = AnnotationLayout(info, quirk="ng-uint32")
    return None if other.same_as(layout) else other
