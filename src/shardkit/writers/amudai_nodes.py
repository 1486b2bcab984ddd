"""The Amudai writer's schema tree: fields numbered into nodes (schema ids, parents), values
shredded into one column per node, and the FlatBuffers schema record written from the nodes
(with the raw ``flatbuffers.Builder``; slot numbers from FORMAT_NOTES.md, independent of the
generated reader code). :mod:`.amudai` encodes the columns and writes the file."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

import flatbuffers
import numpy as np

from ..formats.amudai.decimal128 import encode_d128
from ..hashing.amudai import lookup_bucket_count, name_hash
from .amudai_schema import BASIC_TYPES, FieldSpec
from .amudai_stats import _INT_WIDTH
from .amudai_values import _ticks

# --- shredding values into per-node columns ------------------------------------------------


@dataclass
class _Node:
    spec: FieldSpec
    schema_id: int
    parent_id: int
    children: list[_Node] = dc_field(default_factory=list)


def _number(nodes: Sequence[FieldSpec], parent: int, counter: list[int]) -> list[_Node]:
    out = []
    for spec in nodes:
        node = _Node(spec, counter[0], parent)
        counter[0] += 1
        node.children = _number(spec.children, node.schema_id, counter)
        out.append(node)
    return out


def _walk(nodes: Iterable[_Node]) -> Iterable[_Node]:
    for node in nodes:
        yield node
        yield from _walk(node.children)


def _post_order(nodes: Iterable[_Node]) -> Iterable[_Node]:
    for node in nodes:
        yield from _post_order(node.children)
        yield node


def _shred(node: _Node, values: Sequence[Any], out: dict[int, Any]) -> None:
    """Fill ``out[schema_id]`` with each node's position values (composite: None or True;
    an Int or Float64 field given as a 1-D numpy array of its kind: that array, in the
    field's dtype)."""
    spec = node.spec
    t = spec.type
    if isinstance(values, np.ndarray):
        arr = _numeric_array(spec, values)
        if arr is not None:
            out[node.schema_id] = arr
            return
        values = values.tolist()
    if t == "Struct":
        out[node.schema_id] = [None if v is None else True for v in values]
        for child in node.children:
            _shred(child, [None if v is None else v.get(child.spec.name) for v in values], out)
    elif t in ("List", "Map"):
        lengths: list[int | None] = []
        items: list[Any] = []
        for v in values:
            if v is None:
                lengths.append(None)
                continue
            entries = list(v.items()) if t == "Map" and isinstance(v, Mapping) else list(v)
            lengths.append(len(entries))
            items.extend(entries)
        out[node.schema_id] = lengths
        if t == "List":
            _shred(node.children[0], items, out)
        else:
            _shred(node.children[0], [k for k, _ in items], out)
            _shred(node.children[1], [v for _, v in items], out)
    elif t == "FixedSizeList":
        size = spec.fixed_size
        items = []
        for v in values:
            if v is not None and len(v) != size:
                raise ValueError(f"{spec.name}: FixedSizeList({size}) value of length {len(v)}")
            items.extend([None] * size if v is None else v)
        out[node.schema_id] = [None if v is None else True for v in values]
        _shred(node.children[0], items, out)
    else:
        out[node.schema_id] = [None if v is None else _normalize(spec, v) for v in values]


def _numeric_array(spec: FieldSpec, values: np.ndarray) -> np.ndarray | None:
    """An integer field's values given as a 1-D integer numpy array, or a Float64 field's as
    a 1-D float array, in the field's dtype (ValueError for an integer out of its range);
    None for any other field or array, whose values are then taken one by one (a masked
    array with masked entries too: its ``tolist()`` gives None for them, written as nulls)."""
    if values.ndim != 1:
        return None
    if isinstance(values, np.ma.MaskedArray):
        if np.ma.getmaskarray(values).any():
            return None
        values = values.data
    if spec.type == "Float64" and values.dtype.kind == "f":
        return values.astype("<f8", copy=False)
    if spec.type not in _INT_WIDTH or values.dtype.kind not in "iu":
        return None
    dtype = _dtype(spec)
    if values.size and values.dtype != dtype:
        info = np.iinfo(dtype)
        for bad in (values.min(), values.max()):
            if not info.min <= int(bad) <= info.max:
                raise ValueError(f"{spec.name}: {int(bad)!r} is not a "
                                 f"{'' if spec.signed else 'u'}int{_INT_WIDTH[spec.type] * 8}")
    return values.astype(dtype, copy=False)


def _normalize(spec: FieldSpec, v: Any) -> Any:
    t = spec.type
    if t in _INT_WIDTH:
        bits = _INT_WIDTH[t] * 8
        lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1)) if spec.signed else (0, 2**bits)
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v < hi:
            raise ValueError(f"{spec.name}: {v!r} is not a {'' if spec.signed else 'u'}int{bits}")
        return v
    if t == "DateTime":
        return _ticks(v) if isinstance(v, datetime) else int(v)
    if t in ("Float32", "Float64"):
        return float(v)
    if t == "Boolean":
        return bool(v)
    if t == "String":
        return v.encode("utf-8")
    if t == "Guid" and isinstance(v, uuid.UUID):
        return v.bytes
    if isinstance(v, Decimal) and spec.extended_type == "KustoDecimal":
        return encode_d128(v)
    v = bytes(v)
    if t in ("FixedSizeBinary", "Guid") and len(v) != spec.fixed_size:
        raise ValueError(f"{spec.name}: value of {len(v)} bytes, expected {spec.fixed_size}")
    return v


def _dtype(spec: FieldSpec) -> np.dtype:
    t = spec.type
    if t in _INT_WIDTH:
        return np.dtype(f"<{'i' if spec.signed else 'u'}{_INT_WIDTH[t]}")
    return np.dtype({"Float32": "<f4", "Float64": "<f8", "DateTime": "<u8"}[t])


# --- FlatBuffers schema -------------------------------------------------------------------


def _fb_vector(b: flatbuffers.Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return cast(int, b.EndVector())


def _fb_u32_vector(b: flatbuffers.Builder, items: list[int]) -> int:
    b.StartVector(4, len(items), 4)
    for x in reversed(items):
        b.PrependUint32(x)
    return cast(int, b.EndVector())


def _fb_lookup(b: flatbuffers.Builder, names: list[str]) -> int:
    nb = lookup_bucket_count(len(names))
    groups: list[list[int]] = [[] for _ in range(nb)]
    for i, name in enumerate(names):
        groups[name_hash(name) & (nb - 1)].append(i)
    buckets = [0]
    for g in groups:
        buckets.append(buckets[-1] + len(g))
    entries = [i for g in groups for i in g]
    bv = _fb_u32_vector(b, buckets)
    ev = _fb_u32_vector(b, entries)
    b.StartObject(2)
    b.PrependUOffsetTRelativeSlot(0, bv, 0)
    b.PrependUOffsetTRelativeSlot(1, ev, 0)
    return cast(int, b.EndObject())


def _fb_data_type(b: flatbuffers.Builder, node: _Node) -> int:
    spec = node.spec
    kids = _fb_vector(b, [_fb_data_type(b, c) for c in node.children])
    name = b.CreateString(spec.name)
    lookup = None
    if spec.type == "Struct" and len(node.children) >= 10:
        lookup = _fb_lookup(b, [c.spec.name for c in node.children])
    ext = None
    if spec.extended_type:
        label = b.CreateString(spec.extended_type)
        props = _fb_vector(b, [])
        b.StartObject(2)
        b.PrependUOffsetTRelativeSlot(0, label, 0)
        b.PrependUOffsetTRelativeSlot(1, props, 0)
        ext = b.EndObject()
    b.StartObject(10)
    b.PrependUint8Slot(0, BASIC_TYPES[spec.type], 0)
    b.PrependUint32Slot(1, node.schema_id, 0)
    b.PrependUint32Slot(2, node.parent_id, 0)
    b.PrependUOffsetTRelativeSlot(3, name, 0)
    b.PrependUOffsetTRelativeSlot(5, kids, 0)
    b.PrependBoolSlot(6, spec.signed and spec.type in _INT_WIDTH, False)
    b.PrependUint64Slot(7, spec.fixed_size, 0)
    if ext is not None:
        b.PrependUOffsetTRelativeSlot(8, ext, 0)
    if lookup is not None:
        b.PrependUOffsetTRelativeSlot(9, lookup, 0)
    return cast(int, b.EndObject())


def _fb_schema(nodes: list[_Node], id_count: int) -> bytes:
    b = flatbuffers.Builder(1024)
    fields = []
    for node in nodes:
        dt = _fb_data_type(b, node)
        b.StartObject(2)
        b.PrependUOffsetTRelativeSlot(0, dt, 0)
        fields.append(b.EndObject())
    fv = _fb_vector(b, fields)
    lookup = _fb_lookup(b, [n.spec.name for n in nodes])
    b.StartObject(3)
    b.PrependUOffsetTRelativeSlot(0, fv, 0)
    b.PrependUint32Slot(1, id_count, 0)
    b.PrependUOffsetTRelativeSlot(2, lookup, 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())
