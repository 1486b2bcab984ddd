"""Interop with the reference writers/readers: tensorstore and cloud-volume, both ways."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import shardkit
from shardkit.writers.neuroglancer import write_image_volume, write_sharded_dataset

pytestmark = pytest.mark.interop

SPECS = [
    {"hash": "identity", "preshift_bits": 0, "minishard_bits": 3, "shard_bits": 2,
     "minishard_index_encoding": "raw", "data_encoding": "raw"},
    {"hash": "murmurhash3_x86_128", "preshift_bits": 2, "minishard_bits": 2, "shard_bits": 3,
     "minishard_index_encoding": "gzip", "data_encoding": "gzip"},
    {"hash": "murmurhash3_x86_128", "preshift_bits": 0, "minishard_bits": 4, "shard_bits": 0,
     "minishard_index_encoding": "raw", "data_encoding": "gzip"},
    {"hash": "identity", "preshift_bits": 5, "minishard_bits": 0, "shard_bits": 5,
     "minishard_index_encoding": "gzip", "data_encoding": "raw"},
]
IDS = ["identity-raw", "murmur-preshift-gzip", "murmur-shardbits0", "identity-minishard0"]


def full(spec: dict[str, Any]) -> dict[str, Any]:
    return {"@type": "neuroglancer_uint64_sharded_v1", **spec}


def random_items(seed: int, n: int = 150) -> dict[int, bytes]:
    rng = np.random.default_rng(seed)
    keys = set(rng.integers(0, 2**64, n, dtype=np.uint64).tolist())
    keys |= set(rng.integers(0, 5000, n // 3).tolist())
    return {int(k): rng.bytes(int(rng.integers(0, 700))) for k in keys}


def cv_reader(path: Path, spec: dict[str, Any]) -> Any:
    sharding = pytest.importorskip("cloudvolume.datasource.precomputed.sharding")
    from cloudvolume.cacheservice import CacheService

    cloudpath = f"file://{path}"
    config = SimpleNamespace(secrets=None, parallel=1, cache_locking=False, green=False)
    cache = CacheService(cloudpath, enabled=False, config=config,
                         meta=SimpleNamespace(cloudpath=cloudpath))
    return sharding.ShardReader(cloudpath, cache,
                                sharding.ShardingSpecification.from_dict(full(spec)))


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_tensorstore_writes_we_read(tmp_path: Path, spec: dict[str, Any]) -> None:
    ts = pytest.importorskip("tensorstore")
    items = random_items(11)
    kv = ts.KvStore.open({"driver": "neuroglancer_uint64_sharded",
                          "base": f"file://{tmp_path}/ds/", "metadata": full(spec)}).result()
    with ts.Transaction() as txn:
        for k, v in items.items():
            kv.with_transaction(txn)[k.to_bytes(8, "big")] = v
    (tmp_path / "ds" / "info").write_text(json.dumps({"@type": "neuroglancer_skeletons",
                                                      "sharding": full(spec)}))
    with shardkit.open(tmp_path / "ds") as ds:
        assert sorted(ds.keys()) == sorted(items)
        assert ds.get_many(list(items)) == list(items.values())
        assert ds.verify() == []


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_cloudvolume_writes_we_read(tmp_path: Path, spec: dict[str, Any]) -> None:
    sharding = pytest.importorskip("cloudvolume.datasource.precomputed.sharding")
    items = random_items(12)
    files = sharding.ShardingSpecification.from_dict(full(spec)).synthesize_shards(items)
    (tmp_path / "ds").mkdir()
    for name, data in files.items():
        (tmp_path / "ds" / name).write_bytes(data)
    (tmp_path / "ds" / "info").write_text(json.dumps({"@type": "neuroglancer_skeletons",
                                                      "sharding": full(spec)}))
    with shardkit.open(tmp_path / "ds") as ds:
        assert sorted(ds.keys()) == sorted(items)
        assert all(ds[k] == v for k, v in items.items())
        assert ds.verify() == []


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_we_write_both_read(tmp_path: Path, spec: dict[str, Any]) -> None:
    ts = pytest.importorskip("tensorstore")
    items = random_items(13)
    write_sharded_dataset(tmp_path / "ds", items, full(spec))
    kv = ts.KvStore.open({"driver": "neuroglancer_uint64_sharded",
                          "base": f"file://{tmp_path}/ds/", "metadata": full(spec)}).result()
    listed = sorted(int.from_bytes(k, "big") for k in kv.list().result())
    assert listed == sorted(items)
    for k, v in items.items():
        assert kv.read(k.to_bytes(8, "big")).result().value == v
    reader = cv_reader(tmp_path / "ds", spec)
    got = reader.get_data(list(items))
    assert {int(k): v for k, v in got.items()} == items


def test_image_volume_both_ways(tmp_path: Path) -> None:
    ts = pytest.importorskip("tensorstore")
    cloudvolume = pytest.importorskip("cloudvolume")
    rng = np.random.default_rng(21)
    vol = rng.integers(0, 2**16, (45, 33, 19, 2), dtype=np.uint16)  # clipped edge chunks
    spec = full({"hash": "murmurhash3_x86_128", "preshift_bits": 3, "minishard_bits": 2,
                 "shard_bits": 2, "minishard_index_encoding": "gzip", "data_encoding": "gzip"})
    write_image_volume(tmp_path / "ours", vol, spec, chunk_size=(16, 16, 8),
                       resolution=(8, 8, 40))
    t = ts.open({"driver": "neuroglancer_precomputed",
                 "kvstore": f"file://{tmp_path}/ours/"}).result()
    assert np.array_equal(t.read().result(), vol)
    cv = cloudvolume.CloudVolume(f"file://{tmp_path}/ours", progress=False)
    assert np.array_equal(np.asarray(cv[:, :, :]), vol)

    # tensorstore writes an image volume, we read every chunk
    ident = full({"hash": "identity", "preshift_bits": 0, "minishard_bits": 1,
                  "shard_bits": 2, "minishard_index_encoding": "raw", "data_encoding": "raw"})
    # tensorstore needs shards aligned to chunk grid cells for a sharded write
    t2 = ts.open({"driver": "neuroglancer_precomputed", "kvstore": f"file://{tmp_path}/ts/",
                  "create": True,
                  "multiscale_metadata": {"type": "image", "data_type": "uint16",
                                          "num_channels": 2},
                  "scale_metadata": {"size": [45, 33, 19], "chunk_size": [16, 16, 8],
                                     "resolution": [8, 8, 40], "encoding": "raw",
                                     "sharding": ident}}).result()
    t2[...] = vol
    ds = shardkit.open(tmp_path / "ts")
    scale = next(iter(ds.scales.values()))
    for gx in range(scale.grid_shape[0]):
        for gy in range(scale.grid_shape[1]):
            for gz in range(scale.grid_shape[2]):
                got = ds.read_chunk(0, (gx, gy, gz), order="xyzc")
                want = vol[gx * 16 : gx * 16 + 16, gy * 16 : gy * 16 + 16, gz * 8 : gz * 8 + 8]
                assert np.array_equal(got, want)
    assert ds.verify() == []


CUTOUT_BOXES = [
    ((100, 200, 30), (145, 233, 49)),  # the whole volume
    ((103, 207, 33), (131, 229, 44)),  # across chunks in every axis
    ((140, 230, 47), (145, 233, 49)),  # the clipped corner chunk only
    ((117, 211, 38), (119, 212, 39)),  # two voxels (cloud-volume fails on one of 2 channels)
]


def test_cutout_equals_cloudvolume(tmp_path: Path) -> None:
    """Bounding-box reads across chunks equal cloud-volume's cutouts of the same data."""
    cloudvolume = pytest.importorskip("cloudvolume")
    size, offset, chunk = (45, 33, 19), (100, 200, 30), (16, 16, 8)
    spec = full({"hash": "murmurhash3_x86_128", "preshift_bits": 2, "minishard_bits": 2,
                 "shard_bits": 0, "minishard_index_encoding": "gzip", "data_encoding": "gzip"})
    info = cloudvolume.CloudVolume.create_new_info(
        num_channels=2, layer_type="image", data_type="uint16", encoding="raw",
        resolution=[8, 8, 40], voxel_offset=offset, volume_size=size, chunk_size=chunk)
    info["scales"][0]["sharding"] = spec
    cv = cloudvolume.CloudVolume(f"file://{tmp_path}", info=info, progress=False)
    cv.commit_info()
    rng = np.random.default_rng(4)
    vol = rng.integers(0, 2**16, (*size, 2), dtype=np.uint16)
    cv[cv.bounds] = vol  # cloud-volume writes the shard
    ds = shardkit.open(tmp_path)
    assert ds.bounds(0) == (offset, tuple(o + s for o, s in zip(offset, size, strict=True)))
    for lo, hi in CUTOUT_BOXES:
        want = np.asarray(cv[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]])
        got = ds.cutout(cv.key, (lo, hi))
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.array_equal(got, want), (lo, hi)
        assert np.array_equal(ds.cutout(0, (lo, hi), order="czyx"), want.transpose(3, 2, 1, 0))
    view = ds.volume(cv.key)
    assert view.shape == (*size, 2)
    assert np.array_equal(view[103:131, 207:229, 33:44],
                          np.asarray(cv[103:131, 207:229, 33:44]))
    assert np.array_equal(view[:, :, 35], np.asarray(cv[:, :, 35]))
