"""Decoding the payloads stored in Neuroglancer precomputed layers, as numpy arrays.

Layouts: ``schemas/ng_skeleton.ksy`` (generated :class:`NgSkeleton`) and
``schemas/ng_mesh_manifest.ksy`` (generated :class:`NgMeshManifest`). This module adds what
the bytes do not say (the vertex attributes an ``info`` file declares) and returns arrays:

- :func:`decode_skeleton`: vertices ``[n, 3]`` float32, edges ``[m, 2]`` uint32 and one array
  per vertex attribute (``[n]`` for one component, ``[n, c]`` otherwise).
- :func:`decode_mesh_manifest`: the octree geometry and per level of detail the fragment
  positions ``[k, 3]`` uint32 and sizes ``[k]`` uint32, with
  :meth:`MeshManifest.fragment_ranges` giving each fragment's byte range (in the fragment
  file of an unsharded layer, or in the shard before a sharded manifest).
- :func:`decode_payload`: either, chosen by the layer's ``info``; :func:`get_decoded` for a
  segment id of an open sharded layer, and :func:`mesh_fragments` for the Draco fragments a
  sharded manifest indexes (one more ranged read).

Bad input raises :class:`~shardkit.errors.TruncatedError` or
:class:`~shardkit.errors.LayoutError` naming the byte offset and the schema field; counts are
checked against the bytes present before anything is allocated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from kaitaistruct import BytesIO, KaitaiStream

from .._kaitai import kaitai_errors
from ..errors import (
    EntryNotFoundError,
    LayoutError,
    LimitExceededError,
    ShardkitError,
)
from ..generated.ng_mesh_manifest import NgMeshManifest
from ..generated.ng_skeleton import NgSkeleton

__all__ = [
    "MeshManifest",
    "Skeleton",
    "decode_mesh_manifest",
    "decode_payload",
    "decode_skeleton",
    "get_decoded",
    "mesh_fragments",
]

MAX_COMPONENTS = 1 << 16  # components of one vertex attribute (real layers have 1 to 4)
ATTRIBUTE_TYPES = {"float32": "<f4", "int8": "i1", "uint8": "u1", "int16": "<i2",
                   "uint16": "<u2", "int32": "<i4", "uint32": "<u4"}


@dataclass
class Skeleton:
    """A decoded skeleton.

    Attributes:
        vertices: ``[n, 3]`` float32 positions.
        edges: ``[m, 2]`` uint32 vertex indices.
        attributes: Attribute id -> ``[n]`` (one component) or ``[n, c]`` array, in the
            ``info`` file's order.
    """

    vertices: np.ndarray
    edges: np.ndarray
    attributes: dict[str, np.ndarray] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain lists, for JSON."""
        return {"vertices": self.vertices.tolist(), "edges": self.edges.tolist(),
                "attributes": {k: v.tolist() for k, v in self.attributes.items()}}


def _attribute_list(info: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None
                    ) -> list[tuple[str, np.dtype, int]]:
    if info is None:
        return []
    attrs = info.get("vertex_attributes", []) if isinstance(info, Mapping) else info
    if attrs is None:
        return []
    if not isinstance(attrs, Sequence) or isinstance(attrs, (str, bytes)):
        raise LayoutError("info: vertex_attributes must be a list", field="/vertex_attributes")
    out = []
    for i, attr in enumerate(attrs):
        where = f"/vertex_attributes/{i}"
        if not isinstance(attr, Mapping):
            raise LayoutError("info: a vertex attribute must be an object", field=where)
        kind = attr.get("data_type")
        if not isinstance(kind, str) or kind not in ATTRIBUTE_TYPES:
            raise LayoutError(f"info: vertex attribute data_type {kind!r} is not one of "
                              f"{', '.join(ATTRIBUTE_TYPES)}"[:300], field=f"{where}/data_type")
        comps = attr.get("num_components", 1)
        if type(comps) is not int or comps < 1:
            raise LayoutError(f"info: num_components must be a positive integer, got "
                              f"{comps!r}"[:300], field=f"{where}/num_components")
        if comps > MAX_COMPONENTS:
            raise LimitExceededError(f"info: num_components {comps} is more than "
                                     f"{MAX_COMPONENTS}", field=f"{where}/num_components")
        out.append((str(attr.get("id", f"attribute_{i}")), np.dtype(ATTRIBUTE_TYPES[kind]),
                    comps))
    return out


def decode_skeleton(data: bytes, info: Mapping[str, Any] | Sequence[Mapping[str, Any]]
                    | None = None, *, offset: int = 0) -> Skeleton:
    """Decode one encoded skeleton.

    Args:
        data: The stored value (a file of an unsharded layer, or a sharded layer's value).
        info: The skeleton layer's ``info`` (or just its ``vertex_attributes`` list); without
            it, no attributes are read and any bytes after the edges are an error.
        offset: Where ``data`` starts in its file, for error messages.

    Raises:
        TruncatedError: The counts need more bytes than there are.
        LayoutError: Bytes are left over after the declared attributes, or the ``info``'s
            attribute list is invalid.
    """
    attrs = _attribute_list(info)
    data = bytes(data)
    with kaitai_errors(base=offset):
        root = NgSkeleton(KaitaiStream(BytesIO(data)))
    n, m = root.num_vertices, root.num_edges
    vertices = np.frombuffer(root.vertex_positions, dtype="<f4").reshape(n, 3)
    edges = np.frombuffer(root.edges, dtype="<u4").reshape(m, 2)
    start = offset + 8 + 12 * n + 8 * m
    stream = KaitaiStream(BytesIO(root.vertex_attributes))
    values: dict[str, np.ndarray] = {}
    for i, (name, dtype, comps) in enumerate(attrs):
        with kaitai_errors(prefix=f"/vertex_attributes/{i}", base=start):
            attr = NgSkeleton.VertexAttribute(n, comps, dtype.itemsize, stream, root, root)
        arr = np.frombuffer(attr.values, dtype=dtype)
        values[name] = arr if comps == 1 else arr.reshape(n, comps)
    left = stream.size() - stream.pos()
    if left:
        raise LayoutError(f"skeleton: {left} bytes after the "
                          f"{len(attrs)} declared vertex attribute(s)",
                          offset=start + stream.pos(), field="/vertex_attributes")
    return Skeleton(vertices.astype(np.float32), edges.astype(np.uint32), values)


@dataclass
class MeshManifest:
    """A decoded multi-resolution mesh manifest.

    Attributes:
        chunk_shape: ``[3]`` float32: the level-0 octree cell size.
        grid_origin: ``[3]`` float32.
        lod_scales: ``[num_lods]`` float32.
        vertex_offsets: ``[num_lods, 3]`` float32.
        num_fragments_per_lod: ``[num_lods]`` uint32.
        fragment_positions: Per level, ``[k, 3]`` uint32 grid positions.
        fragment_sizes: Per level, ``[k]`` uint32 byte sizes (the format's
            ``fragment_offsets``).
    """

    chunk_shape: np.ndarray
    grid_origin: np.ndarray
    lod_scales: np.ndarray
    vertex_offsets: np.ndarray
    num_fragments_per_lod: np.ndarray
    fragment_positions: list[np.ndarray]
    fragment_sizes: list[np.ndarray]

    @property
    def num_lods(self) -> int:
        """Levels of detail."""
        return len(self.lod_scales)

    @property
    def data_size(self) -> int:
        """Bytes of all fragments together."""
        return int(sum(int(s.sum(dtype=np.uint64)) for s in self.fragment_sizes))

    def fragment_ranges(self, manifest_offset: int | None = None) -> list[np.ndarray]:
        """Per level, ``[k, 2]`` byte ranges ``[start, end)`` of its fragments.

        Args:
            manifest_offset: Where the manifest starts in its shard file (sharded layers: the
                fragments end there); ``None`` for the fragment file of an unsharded layer.

        Raises:
            LayoutError: The fragments would start before the start of the shard.
        """
        base = 0
        if manifest_offset is not None:
            base = int(manifest_offset) - self.data_size
            if base < 0:
                raise LayoutError(f"mesh manifest at byte {manifest_offset}: its fragments "
                                  f"({self.data_size} bytes) would start before the file",
                                  offset=manifest_offset, field="/lods")
        out = []
        for sizes in self.fragment_sizes:
            ends = base + np.cumsum(sizes, dtype=np.int64)
            out.append(np.stack([ends - sizes, ends], axis=1))
            base = int(ends[-1]) if len(ends) else base
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain lists, for JSON."""
        return {"chunk_shape": self.chunk_shape.tolist(), "grid_origin": self.grid_origin.tolist(),
                "lod_scales": self.lod_scales.tolist(),
                "vertex_offsets": self.vertex_offsets.tolist(),
                "num_fragments_per_lod": self.num_fragments_per_lod.tolist(),
                "fragment_positions": [p.tolist() for p in self.fragment_positions],
                "fragment_sizes": [s.tolist() for s in self.fragment_sizes]}


def _vec(v: Any) -> list[float]:
    return [v.x, v.y, v.z]


def decode_mesh_manifest(data: bytes, *, offset: int = 0) -> MeshManifest:
    """Decode one multi-resolution mesh manifest (``<id>.index``, or a sharded value).

    Raises:
        TruncatedError: A count needs more bytes than there are.
        LayoutError: Bytes are left over after the last level of detail.
    """
    data = bytes(data)
    with kaitai_errors(base=offset):
        root = NgMeshManifest(KaitaiStream(BytesIO(data)))
    end = root._io.pos()
    if end != len(data):
        raise LayoutError(f"mesh manifest: {len(data) - end} bytes after the last level of "
                          "detail", offset=offset + end, field="/lods")
    positions, sizes = [], []
    for lod in root.lods:
        k = lod.num_fragments
        positions.append(np.frombuffer(lod._raw_fragment_positions, dtype="<u4")
                         .reshape(3, k).T.astype(np.uint32))
        sizes.append(np.frombuffer(lod._raw_fragment_sizes, dtype="<u4").astype(np.uint32))
    return MeshManifest(
        chunk_shape=np.array(_vec(root.chunk_shape), dtype=np.float32),
        grid_origin=np.array(_vec(root.grid_origin), dtype=np.float32),
        lod_scales=np.frombuffer(root._raw_lod_scales, dtype="<f4").astype(np.float32),
        vertex_offsets=np.frombuffer(root._raw_vertex_offsets, dtype="<f4")
        .reshape(-1, 3).astype(np.float32),
        num_fragments_per_lod=np.frombuffer(root._raw_num_fragments_per_lod, dtype="<u4")
        .astype(np.uint32),
        fragment_positions=positions, fragment_sizes=sizes)


def decode_payload(data: bytes, info: Mapping[str, Any]) -> Skeleton | MeshManifest:
    """Decode a value of a key-value layer by the layer's ``@type``.

    Raises:
        ShardkitError: The layer's type has no decoder here (legacy meshes, annotations).
    """
    kind = info.get("@type") if isinstance(info, Mapping) else None
    if kind == "neuroglancer_skeletons":
        return decode_skeleton(data, info)
    if kind == "neuroglancer_multilod_draco":
        return decode_mesh_manifest(data)
    raise ShardkitError(f"no payload decoder for layers of @type {kind!r}")


def get_decoded(ds: Any, segment_id: int) -> Skeleton | MeshManifest:
    """The value of ``segment_id`` in an open sharded layer (``open_dataset``), decoded.

    Raises:
        EntryNotFoundError: No such segment id.
        ShardkitError: The layer's type has no decoder, or the value does not decode.
    """
    return decode_payload(ds[segment_id], ds.info)


def mesh_fragments(ds: Any, segment_id: int) -> list[list[bytes]]:
    """The Draco fragments of a sharded multi-resolution mesh: per level, per fragment.

    They lie in the shard just before the manifest (one ranged read); empty fragments are
    ``b""``.

    Raises:
        EntryNotFoundError: No such segment id.
        LayoutError: The manifest's fragments would start inside the shard index.
    """
    kv = ds.kv
    spec = kv.spec
    shard = kv.shard(spec.locate(int(segment_id)).shard)
    ref = shard.locate(int(segment_id)) if shard is not None else None
    if ref is None:
        raise EntryNotFoundError(segment_id, f"no segment {segment_id} in {kv.name}")
    if spec.data_encoding != "raw":
        raise LayoutError("multi-resolution meshes need data_encoding raw",
                          field="/sharding/data_encoding")
    manifest = decode_mesh_manifest(shard.source.read_range(ref.start, ref.end),
                                    offset=ref.start)
    ranges = manifest.fragment_ranges(ref.start)
    first = ref.start - manifest.data_size
    if first < spec.shard_index_size:
        raise LayoutError(f"mesh {segment_id}: its fragments would start inside the shard "
                          "index", offset=first, field=f"/chunks/{segment_id}")
    data = shard.source.read_range(first, ref.start)
    return [[data[s - first : e - first] for s, e in lod.tolist()] for lod in ranges]
