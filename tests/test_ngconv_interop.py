"""Layers written unsharded by cloud-volume and tensorstore, converted to sharded and back.

Every chunk must be equal when tensorstore and cloud-volume read each direction's output, and
shardkit's ``verify`` must pass on the sharded layer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shardkit.formats.neuroglancer import open_dataset
from shardkit.ng.convert import shard_layer, unshard_layer

pytestmark = pytest.mark.interop

SIZE = (150, 130, 35)
CHUNK = (64, 64, 16)
OFFSET = (10, 20, 3)
# small shard target: several shards per scale, several minishards per shard
SHARD_BYTES = 64 * 64 * 16 * 4 * 4
CASES = [("image", "uint8", "raw"), ("image", "uint8", "png"), ("image", "uint8", "jpeg"),
         ("segmentation", "uint32", "compressed_segmentation"),
         ("segmentation", "uint64", "raw")]
IDS = [f"{d}-{e}" for _, d, e in CASES]


def _data(layer_type: str, dtype: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    if layer_type == "segmentation":  # blocky labels, as compressed_segmentation expects
        small = rng.integers(1, 2**31, size=(16, 14, 5)).astype(dtype)
        big = np.repeat(np.repeat(np.repeat(small, 10, 0), 10, 1), 7, 2)
        return big[: SIZE[0], : SIZE[1], : SIZE[2], None]
    if dtype == "uint8":  # smooth enough for jpeg
        x, y, z = np.meshgrid(*(np.arange(s) for s in SIZE), indexing="ij")
        return ((x + 2 * y + 3 * z) % 256).astype(dtype)[..., None]
    return rng.integers(0, 60000, size=(*SIZE, 1)).astype(dtype)


def _cv_write(path: Path, data: np.ndarray, layer_type: str, encoding: str) -> None:
    cloudvolume = pytest.importorskip("cloudvolume")
    info = cloudvolume.CloudVolume.create_new_info(
        num_channels=1, layer_type=layer_type, data_type=str(data.dtype), encoding=encoding,
        resolution=[4, 4, 40], voxel_offset=list(OFFSET), volume_size=list(SIZE),
        chunk_size=list(CHUNK))
    cv = cloudvolume.CloudVolume(f"file://{path}", info=info, progress=False)
    cv.commit_info()
    cv[OFFSET[0]:OFFSET[0] + SIZE[0], OFFSET[1]:OFFSET[1] + SIZE[1],
       OFFSET[2]:OFFSET[2] + SIZE[2]] = data


def _ts_write(path: Path, data: np.ndarray, layer_type: str, encoding: str) -> None:
    ts = pytest.importorskip("tensorstore")
    store = ts.open({
        "driver": "neuroglancer_precomputed", "kvstore": f"file://{path}/",
        "multiscale_metadata": {"type": layer_type, "data_type": str(data.dtype),
                                "num_channels": 1},
        "scale_metadata": {"size": list(SIZE), "encoding": encoding, "chunk_size": list(CHUNK),
                           "resolution": [4, 4, 40], "voxel_offset": list(OFFSET)},
        "create": True}).result()
    store[...] = data


def _ts_read(path: Path) -> np.ndarray:
    ts = pytest.importorskip("tensorstore")
    store = ts.open({"driver": "neuroglancer_precomputed", "kvstore": f"file://{path}/",
                     "scale_index": 0}).result()
    return store.read().result()


def _cv_read(path: Path) -> np.ndarray:
    cloudvolume = pytest.importorskip("cloudvolume")
    cv = cloudvolume.CloudVolume(f"file://{path}", progress=False, fill_missing=False)
    return np.asarray(cv[cv.bounds])


def _check(path: Path, expected: np.ndarray, encoding: str) -> None:
    for got in (_ts_read(path), _cv_read(path)):  # cloud-volume's png codec: pyspng-seunglab
        assert got.shape == expected.shape
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("writer", ["cloudvolume", "tensorstore"])
@pytest.mark.parametrize(("layer_type", "dtype", "encoding"), CASES, ids=IDS)
def test_unsharded_to_sharded_and_back(tmp_path: Path, writer: str, layer_type: str,
                                       dtype: str, encoding: str) -> None:
    data = _data(layer_type, dtype)
    src = tmp_path / "unsharded"
    (_cv_write if writer == "cloudvolume" else _ts_write)(src, data, layer_type, encoding)
    # what the writer reads back from its original (jpeg is lossy: compare decodings);
    # cloud-volume stores local chunks as NAME.gz, which tensorstore does not read
    reference = (_cv_read if writer == "cloudvolume" else _ts_read)(src)
    if encoding != "jpeg":
        assert np.array_equal(reference, data)
    sharded = tmp_path / "sharded"
    report = shard_layer(src, sharded, shard_bytes=SHARD_BYTES, jobs=1)
    spec = report.specs[next(iter(report.specs))]
    assert spec["hash"] == "identity"
    assert spec["data_encoding"] == ("raw" if encoding in ("jpeg", "png") else "gzip")
    assert report.shards_written > 1
    ds = open_dataset(sharded)
    assert ds.verify() == []
    assert len(ds.scales[ds.info["scales"][0]["key"]]) == 3 * 3 * 3
    ds.close()
    _check(sharded, reference, encoding)
    back = tmp_path / "back"
    unshard_layer(sharded, back, jobs=2)
    _check(back, reference, encoding)
    # the unsharded copy holds the very chunk bytes of the original, under plain names
    key = json.loads((src / "info").read_text())["scales"][0]["key"]
    original = {}
    for p in (src / key).iterdir():
        raw = p.read_bytes()
        if p.suffix == ".gz":
            import gzip

            raw = gzip.decompress(raw)
        original[p.name.removesuffix(".gz")] = raw
    assert {p.name: p.read_bytes() for p in (back / key).iterdir()} == original


def _cv_skeletons(path: Path) -> dict[int, Any]:
    cloudvolume = pytest.importorskip("cloudvolume")
    info = cloudvolume.CloudVolume.create_new_info(
        num_channels=1, layer_type="segmentation", data_type="uint64", encoding="raw",
        resolution=[4, 4, 40], voxel_offset=[0, 0, 0], volume_size=[64, 64, 64],
        chunk_size=[64, 64, 64])
    info["skeletons"] = "skeletons"
    cv = cloudvolume.CloudVolume(f"file://{path}", info=info, progress=False)
    cv.commit_info()
    cv.skeleton.meta.info["vertex_attributes"] = [
        {"id": "radius", "data_type": "float32", "num_components": 1}]
    cv.skeleton.meta.commit_info()
    rng = np.random.default_rng(3)
    skeletons = {}
    for _ in range(40):
        seg = int(rng.integers(1, 2**48))
        n = int(rng.integers(2, 60))
        skel = cloudvolume.Skeleton(
            vertices=rng.random((n, 3), dtype=np.float32) * 1000,
            edges=np.stack([np.arange(n - 1), np.arange(1, n)], axis=1).astype(np.uint32),
            radii=rng.random(n, dtype=np.float32), segid=seg,
            extra_attributes=[{"id": "radius", "data_type": "float32", "num_components": 1}])
        cv.skeleton.upload(skel)
        skeletons[seg] = skel
    return skeletons


def test_cloudvolume_skeletons_to_sharded_and_back(tmp_path: Path) -> None:
    cloudvolume = pytest.importorskip("cloudvolume")
    src = tmp_path / "layer"
    skeletons = _cv_skeletons(src)
    dst = tmp_path / "sharded"
    dst.mkdir()
    (dst / "info").write_text((src / "info").read_text())
    report = shard_layer(src / "skeletons", dst / "skeletons", minishard_index_bytes=24 * 4)
    assert report.chunks == len(skeletons)
    assert report.specs[""]["hash"] == "murmurhash3_x86_128"
    ds = open_dataset(dst / "skeletons")
    assert ds.verify() == [] and len(ds) == len(skeletons)
    ds.close()
    back = tmp_path / "back"
    back.mkdir()
    (back / "info").write_text((src / "info").read_text())
    unshard_layer(dst / "skeletons", back / "skeletons")
    for layer in (dst, back):
        cv = cloudvolume.CloudVolume(f"file://{layer}", progress=False)
        for seg, skel in skeletons.items():
            got = cv.skeleton.get(seg)
            assert np.array_equal(got.vertices, skel.vertices)
            assert np.array_equal(got.edges, skel.edges)
            assert np.array_equal(got.radius, skel.radius)


def test_multilod_meshes_read_equal_by_cloudvolume(tmp_path: Path) -> None:
    """A multi-resolution mesh layer (cloud-volume manifest, DracoPy fragments) sharded and
    unsharded again: cloud-volume decodes every level of every object to the same mesh."""
    cloudvolume = pytest.importorskip("cloudvolume")
    pytest.importorskip("DracoPy")
    sample = Path(__file__).parent / "data" / "ng_payloads" / "mesh"
    info = cloudvolume.CloudVolume.create_new_info(
        num_channels=1, layer_type="segmentation", data_type="uint64", encoding="raw",
        resolution=[8, 8, 40], voxel_offset=[0, 0, 0], volume_size=[64, 64, 64],
        chunk_size=[64, 64, 64])
    info["mesh"] = "mesh"
    layers = {name: tmp_path / name for name in ("unsharded", "sharded", "back")}
    for layer in layers.values():
        layer.mkdir()
        (layer / "info").write_text(json.dumps(info))
    src = layers["unsharded"] / "mesh"
    src.mkdir()
    (src / "info").write_bytes((sample / "info").read_bytes())
    ids = [777, 5, 2**45 + 1]
    for seg in ids:
        (src / f"{seg}.index").write_bytes((sample / "777.index").read_bytes())
        (src / str(seg)).write_bytes((sample / "777").read_bytes())
    shard_layer(src, layers["sharded"] / "mesh")
    unshard_layer(layers["sharded"] / "mesh", layers["back"] / "mesh")
    meshes = {}
    for name, layer in layers.items():
        cv = cloudvolume.CloudVolume(f"file://{layer}", progress=False)
        assert ("Sharded" in type(cv.mesh).__name__) == (name == "sharded")
        for seg in ids:
            for lod in (0, 1):
                got = cv.mesh.get(seg, lod=lod)
                got = got[seg] if isinstance(got, dict) else got
                meshes.setdefault((seg, lod), []).append(got)
    for a, b, c in meshes.values():
        assert len(a.vertices) > 0
        for other in (b, c):
            assert np.array_equal(a.vertices, other.vertices)
            assert np.array_equal(a.faces, other.faces)
