"""Skeleton and multi-resolution mesh manifest payloads: Kaitai schemas and numpy decoders.

Samples in tests/data/ng_payloads (see make_samples.py there): skeletons written by
cloud-volume, a mesh manifest written by cloud-volume with Draco fragments from DracoPy.
"""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import numpy as np
import pytest

from shardkit.errors import LayoutError, ShardkitError, TruncatedError
from shardkit.formats.neuroglancer import open_dataset
from shardkit.ng.convert import shard_layer
from shardkit.ng.payloads import (
    decode_mesh_manifest,
    decode_payload,
    decode_skeleton,
    get_decoded,
    mesh_fragments,
)

DATA = Path(__file__).parent / "data" / "ng_payloads"
SKELETONS = DATA / "skeletons"
SKELETON_IDS = [5, 23, 1099511627776]


def _skeleton_bytes(seg: int) -> bytes:
    return gzip.decompress((SKELETONS / f"{seg}.gz").read_bytes())


def _info() -> dict:
    return json.loads((SKELETONS / "info").read_text())


def _encode(vertices, edges, *attrs) -> bytes:
    out = struct.pack("<II", len(vertices), len(edges))
    out += np.asarray(vertices, "<f4").tobytes() + np.asarray(edges, "<u4").tobytes()
    return out + b"".join(np.asarray(a).tobytes() for a in attrs)


def test_skeleton_by_hand():
    vertices = [[1, 2, 3], [4.5, 5, 6], [7, 8, -9]]
    edges = [[0, 1], [1, 2]]
    color = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype="<i2")
    data = _encode(vertices, edges, np.array([0.5, 1.5, 2.5], "<f4"), color)
    info = {"vertex_attributes": [
        {"id": "radius", "data_type": "float32", "num_components": 1},
        {"id": "color", "data_type": "int16", "num_components": 3}]}
    skel = decode_skeleton(data, info)
    assert skel.vertices.dtype == np.float32 and skel.vertices.tolist() == vertices
    assert skel.edges.dtype == np.uint32 and skel.edges.tolist() == edges
    assert skel.attributes["radius"].tolist() == [0.5, 1.5, 2.5]
    assert skel.attributes["color"].shape == (3, 3)
    assert skel.attributes["color"].tolist() == color.tolist()
    assert decode_skeleton(_encode([], [])).vertices.shape == (0, 3)


def test_skeleton_errors_name_offset_and_field():
    data = _encode([[1, 2, 3]], [[0, 0]])
    with pytest.raises(TruncatedError) as exc:
        decode_skeleton(struct.pack("<II", 2**32 - 1, 0) + b"\0" * 20, offset=1000)
    assert exc.value.field == "/vertex_positions" and exc.value.offset == 1008
    with pytest.raises(TruncatedError) as exc:
        decode_skeleton(data[:-3])
    assert exc.value.field == "/edges" and exc.value.offset == 20
    with pytest.raises(TruncatedError) as exc:
        decode_skeleton(data + b"\0\0", {"vertex_attributes": [
            {"id": "radius", "data_type": "float32", "num_components": 1}]})
    assert exc.value.field.startswith("/vertex_attributes/0") and exc.value.offset == 28
    with pytest.raises(LayoutError) as exc:
        decode_skeleton(data + b"\0" * 5)
    assert exc.value.field == "/vertex_attributes" and exc.value.offset == 28
    with pytest.raises(LayoutError, match="data_type"):
        decode_skeleton(data, {"vertex_attributes": [{"id": "x", "data_type": "float64"}]})
    with pytest.raises(LayoutError, match="num_components"):
        decode_skeleton(data, {"vertex_attributes": [
            {"id": "x", "data_type": "uint8", "num_components": 0}]})


def test_bad_vertex_attributes_are_shardkit_errors():
    data = _encode([[1, 2, 3]], [[0, 0]])
    for kind in (["float32"], {"a": 1}, 5, None):
        with pytest.raises(LayoutError, match="data_type") as exc:
            decode_skeleton(data, [{"id": "x", "data_type": kind}])
        assert exc.value.field == "/vertex_attributes/0/data_type"
    empty = struct.pack("<II", 0, 0)  # no vertex: no bytes would check the component count
    for comps in (2**62, 2**33, 2**16 + 1):
        with pytest.raises(ShardkitError, match="num_components") as exc:
            decode_skeleton(empty, [{"id": "r", "data_type": "float32",
                                     "num_components": comps}])
        assert exc.value.field == "/vertex_attributes/0/num_components"
    got = decode_skeleton(empty, [{"id": "r", "data_type": "float32", "num_components": 2**16}])
    assert got.attributes["r"].shape == (0, 2**16)


@pytest.mark.parametrize("seg", SKELETON_IDS)
def test_cloudvolume_skeleton_samples(seg):
    skel = decode_skeleton(_skeleton_bytes(seg), _info())
    assert set(skel.attributes) == {"radius", "vertex_types"}
    n = {5: 1, 23: 240, 1099511627776: 17}[seg]
    assert skel.vertices.shape == (n, 3) and skel.edges.shape == (max(n - 1, 0), 2)
    assert skel.attributes["vertex_types"].dtype == np.uint8
    assert skel.edges[:, 1].tolist() == list(range(1, n))


@pytest.mark.interop
@pytest.mark.parametrize("seg", SKELETON_IDS)
def test_skeleton_equals_cloudvolume(seg):
    cloudvolume = pytest.importorskip("cloudvolume")
    data = _skeleton_bytes(seg)
    attrs = _info()["vertex_attributes"]
    theirs = cloudvolume.Skeleton.from_precomputed(data, segid=seg, vertex_attributes=attrs)
    ours = decode_skeleton(data, _info())
    assert np.array_equal(ours.vertices, theirs.vertices)
    assert np.array_equal(ours.edges, theirs.edges)
    assert np.array_equal(ours.attributes["radius"], theirs.radius)
    assert np.array_equal(ours.attributes["vertex_types"], theirs.vertex_types)


@pytest.mark.interop
def test_sharded_skeletons_decode_equal_to_cloudvolume(tmp_path):
    """The sample layer sharded by shardkit: each value decodes as cloud-volume reads it."""
    cloudvolume = pytest.importorskip("cloudvolume")
    shard_layer(SKELETONS, tmp_path / "skeletons", minishard_index_bytes=48)
    info = cloudvolume.CloudVolume.create_new_info(
        num_channels=1, layer_type="segmentation", data_type="uint64", encoding="raw",
        resolution=[8, 8, 40], voxel_offset=[0, 0, 0], volume_size=[64, 64, 64],
        chunk_size=[64, 64, 64])
    info["skeletons"] = "skeletons"
    (tmp_path / "info").write_text(json.dumps(info))
    cv = cloudvolume.CloudVolume(f"file://{tmp_path}", progress=False)
    ds = open_dataset(tmp_path / "skeletons")
    for seg in SKELETON_IDS:
        ours = decode_payload(ds[seg], ds.info)
        theirs = cv.skeleton.get(seg)
        assert np.array_equal(ours.vertices, theirs.vertices)
        assert np.array_equal(ours.edges, theirs.edges)
        assert np.array_equal(ours.attributes["radius"], theirs.radius)
    ds.close()


def _manifest(num_lods, scales, offsets, counts, positions, sizes, head=None) -> bytes:
    out = struct.pack("<3f3f", *(head or (64, 64, 40, 1, 2, 3)))
    out += struct.pack("<I", num_lods)
    out += struct.pack(f"<{len(scales)}f", *scales)
    out += np.asarray(offsets, "<f4").tobytes()
    out += struct.pack(f"<{len(counts)}I", *counts)
    for pos, size in zip(positions, sizes, strict=True):
        out += np.asarray(pos, "<u4").T.tobytes() + np.asarray(size, "<u4").tobytes()
    return out


def test_mesh_manifest_by_hand():
    positions = [[[0, 0, 0], [1, 2, 3]], [[4, 5, 6]]]
    sizes = [[10, 0], [7]]
    data = _manifest(2, [1, 2], [[0, 0, 0], [1, 1, 1]], [2, 1], positions, sizes)
    m = decode_mesh_manifest(data)
    assert m.num_lods == 2 and m.lod_scales.tolist() == [1, 2]
    assert m.chunk_shape.tolist() == [64, 64, 40] and m.grid_origin.tolist() == [1, 2, 3]
    assert m.vertex_offsets.tolist() == [[0, 0, 0], [1, 1, 1]]
    assert [p.tolist() for p in m.fragment_positions] == positions
    assert [s.tolist() for s in m.fragment_sizes] == sizes
    assert m.data_size == 17
    assert [r.tolist() for r in m.fragment_ranges()] == [[[0, 10], [10, 10]], [[10, 17]]]
    assert [r.tolist() for r in m.fragment_ranges(1000)] == [[[983, 993], [993, 993]],
                                                               [[993, 1000]]]
    with pytest.raises(LayoutError):
        m.fragment_ranges(5)
    with pytest.raises(TruncatedError) as exc:
        decode_mesh_manifest(data[:-1], offset=50)
    assert exc.value.field.startswith("/lods/1") and exc.value.offset is not None
    with pytest.raises(LayoutError) as exc:
        decode_mesh_manifest(data + b"\0")
    assert exc.value.offset == len(data)
    huge = struct.pack("<3f3fI", 0, 0, 0, 0, 0, 0, 2**32 - 1)
    with pytest.raises(TruncatedError) as exc:
        decode_mesh_manifest(huge)
    assert exc.value.offset == 28
    with pytest.raises(TruncatedError):
        decode_mesh_manifest(b"\0" * 10)


def test_mesh_manifest_counts_are_byte_ranges_of_the_schema():
    """Each per-level array is a sized range of the .ksy: a count the bytes cannot hold fails
    at that array, before anything is read value by value."""
    head = struct.pack("<3f3fI", 0, 0, 0, 0, 0, 0, 3)
    with pytest.raises(TruncatedError) as exc:
        decode_mesh_manifest(head + b"\0" * 12 + b"\0" * 20, offset=100)
    assert (exc.value.field, exc.value.offset) == ("/vertex_offsets", 140)
    with pytest.raises(TruncatedError) as exc:
        decode_mesh_manifest(head + b"\0" * 48 + b"\0" * 8)
    assert (exc.value.field, exc.value.offset) == ("/num_fragments_per_lod", 76)
    with pytest.raises(TruncatedError) as exc:
        decode_mesh_manifest(struct.pack("<3f3fI", 0, 0, 0, 0, 0, 0, 2**32 - 1) + b"\0" * 64)
    assert exc.value.field == "/lod_scales" and exc.value.needed == 4 * (2**32 - 1)
    m = decode_mesh_manifest(head + struct.pack("<3f", 1, 2, 4) + np.arange(9, dtype="<f4")
                             .tobytes() + struct.pack("<3I", 0, 1, 0)
                             + struct.pack("<4I", 7, 8, 9, 5))
    assert m.lod_scales.dtype == np.float32 and m.lod_scales.tolist() == [1, 2, 4]
    assert m.vertex_offsets.shape == (3, 3) and m.vertex_offsets[2].tolist() == [6, 7, 8]
    assert m.num_fragments_per_lod.tolist() == [0, 1, 0]
    assert [p.tolist() for p in m.fragment_positions] == [[], [[7, 8, 9]], []]
    assert [s.tolist() for s in m.fragment_sizes] == [[], [5], []]


def test_mesh_sample_fragments_are_draco():
    data = (DATA / "mesh" / "777.index").read_bytes()
    fragments = (DATA / "mesh" / "777").read_bytes()
    m = decode_mesh_manifest(data)
    assert m.num_fragments_per_lod.tolist() == [3, 1]
    assert m.data_size == len(fragments)
    ranges = m.fragment_ranges()
    assert ranges[0][2].tolist() == [ranges[0][1][1]] * 2  # the empty fragment
    for lod in ranges:
        for start, end in lod.tolist():
            if end > start:
                assert fragments[start:end].startswith(b"DRACO")
    info = json.loads((DATA / "mesh" / "info").read_text())
    assert decode_payload(data, info).data_size == len(fragments)
    with pytest.raises(ShardkitError, match="no payload decoder"):
        decode_payload(data, {"@type": "neuroglancer_legacy_mesh"})


@pytest.mark.interop
def test_mesh_manifest_equals_cloudvolume():
    multilod = pytest.importorskip("cloudvolume.datasource.precomputed.mesh.multilod")
    data = (DATA / "mesh" / "777.index").read_bytes()
    theirs = multilod.MultiLevelPrecomputedMeshManifest.from_binary(data, 777)
    ours = decode_mesh_manifest(data)
    assert np.array_equal(ours.chunk_shape, theirs.chunk_shape)
    assert np.array_equal(ours.grid_origin, theirs.grid_origin)
    assert np.array_equal(ours.lod_scales, theirs.lod_scales)
    assert np.array_equal(ours.vertex_offsets, theirs.vertex_offsets)
    assert np.array_equal(ours.num_fragments_per_lod, theirs.num_fragments_per_lod)
    for a, b in zip(ours.fragment_positions, theirs.fragment_positions, strict=True):
        assert np.array_equal(a, b)
    for a, b in zip(ours.fragment_sizes, theirs.fragment_offsets, strict=True):
        assert np.array_equal(a, b)
    draco = pytest.importorskip("DracoPy")
    fragments = (DATA / "mesh" / "777").read_bytes()
    decoded = [draco.decode(fragments[s:e]) for lod in ours.fragment_ranges()
               for s, e in lod.tolist() if e > s]
    # every non-empty range is one whole Draco mesh (degenerate random faces are dropped)
    assert len(decoded) == 3 and all(len(d.faces) > 0 and len(d.points) > 0 for d in decoded)


@pytest.mark.node
def test_web_ide_parsers_read_the_samples(tmp_path):
    """The JavaScript parsers (what the Web IDE runs) read the samples as Python does."""
    parity = pytest.importorskip("test_webide_parity")
    import shutil

    if shutil.which("node") is None or not parity.JS_RUNTIME.exists():
        pytest.skip("node or the kaitai-struct runtime is missing")
    for seg in SKELETON_IDS:
        (tmp_path / f"{seg}.skel").write_bytes(_skeleton_bytes(seg))
    cases = [
        (parity.Format("NgSkeleton", "shardkit.generated.ng_skeleton", "NgSkeleton", ""),
         sorted(tmp_path.glob("*.skel"))),
        (parity.Format("NgMeshManifest", "shardkit.generated.ng_mesh_manifest",
                       "NgMeshManifest", ""), [DATA / "mesh" / "777.index"]),
    ]
    for fmt, files in cases:
        js = parity.run_js_dump(fmt.js_class, files)
        for file in files:
            py = parity.py_dump(fmt, file)
            tree = js[str(file)]
            assert parity.diff(py, tree) == []
            assert "vertices" in tree or "lods" in tree


def test_decoded_values_and_fragments_of_sharded_layers(tmp_path):
    shard_layer(SKELETONS, tmp_path / "skel")
    ds = open_dataset(tmp_path / "skel")
    for seg in SKELETON_IDS:
        got = get_decoded(ds, seg)
        want = decode_skeleton(_skeleton_bytes(seg), _info())
        assert np.array_equal(got.vertices, want.vertices)
        assert np.array_equal(got.attributes["radius"], want.attributes["radius"])
        same = ds.get(seg, decode=True)  # the reader's own door to the same decoder
        assert np.array_equal(same.vertices, want.vertices)
        assert np.array_equal(same.edges, want.edges)
        assert ds.get(seg) == ds[seg] and isinstance(ds.get(seg), bytes)
    assert ds.get(6, "absent", decode=True) == "absent"
    with pytest.raises(KeyError):
        get_decoded(ds, 6)
    ds.close()
    mesh = tmp_path / "mesh"
    mesh.mkdir()
    for name in ("info", "777.index", "777"):
        (mesh / name).write_bytes((DATA / "mesh" / name).read_bytes())
    shard_layer(mesh, tmp_path / "mesh-sharded")
    ds = open_dataset(tmp_path / "mesh-sharded")
    manifest = get_decoded(ds, 777)
    assert manifest.num_fragments_per_lod.tolist() == [3, 1]
    assert ds.get(777, decode=True).num_fragments_per_lod.tolist() == [3, 1]
    fragments = mesh_fragments(ds, 777)
    assert [len(lod) for lod in fragments] == [3, 1] and fragments[0][2] == b""
    assert b"".join(b"".join(lod) for lod in fragments) == (DATA / "mesh" / "777").read_bytes()
    with pytest.raises(KeyError):
        mesh_fragments(ds, 778)
    ds.close()
