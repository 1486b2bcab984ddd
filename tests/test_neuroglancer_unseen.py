"""Varied real datasets written by tensorstore and cloud-volume, read back by shardkit.

Every case writes a small dataset with the reference library, then compares every key and
chunk shardkit reads with what the library reads back (or what was written): ``keys()``,
``ds[id]``, ``id in ds``, ``ds.scales``, ``read_chunk`` (array equal to the library's read of
that chunk's region, or for non-raw encodings the stored bytes with the encoding named),
``verify()`` and the CLI.

Neither library writes annotations (tensorstore has no annotation driver; cloud-volume only
reads them), so the annotation case assembles its shards with cloud-volume's shard writer and
checks them with cloud-volume's annotation reader. cloud-volume has no writer for sharded
meshes either (``put`` raises for multi-resolution meshes); those shards are built with its
``synthesize_shard_files`` (``data_offset`` puts fragments before each manifest, as igneous
does) and read back with its mesh reader.
"""

from __future__ import annotations

import gzip
import itertools
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shardkit
from shardkit.cli import main
from shardkit.errors import EntryNotFoundError, UnsupportedVersionError

pytestmark = pytest.mark.interop

MASK64 = (1 << 64) - 1


def sharding(hash_: str = "identity", preshift: int = 0, minishard: int = 1, shard: int = 0,
             index: str = "raw", data: str = "raw") -> dict[str, Any]:
    return {"@type": "neuroglancer_uint64_sharded_v1", "hash": hash_, "preshift_bits": preshift,
            "minishard_bits": minishard, "shard_bits": shard, "minishard_index_encoding": index,
            "data_encoding": data}


def grid(ds: Any, key: str) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(g) for g in ds.scales[key].grid_shape)))


def region(arr: np.ndarray, pos: tuple[int, ...], chunk: tuple[int, ...]) -> np.ndarray:
    return arr[tuple(slice(p * c, p * c + c) for p, c in zip(pos, chunk, strict=True))]


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) of a PNG or baseline/progressive JPEG."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return struct.unpack(">II", data[16:24])
    i = 2
    while i < len(data):
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2 : i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return w, h
        i += 2 + length
    raise AssertionError("no image size found")


def check_cli(path: Path, keys: list[int], first_value: bytes, capsysbinary: Any,
              chunk_count: int | None = None) -> None:
    assert main(["ls", str(path)]) == 0
    assert sorted(int(k) for k in capsysbinary.readouterr().out.split()) == sorted(keys)
    assert main(["get", str(path), str(keys[0])]) == 0
    assert capsysbinary.readouterr().out == first_value
    assert main(["verify", str(path)]) == 0
    capsysbinary.readouterr()
    assert main(["info", "--json", str(path)]) == 0
    assert json.loads(capsysbinary.readouterr().out)["chunk_count"] == (
        len(keys) if chunk_count is None else chunk_count)
    missing = next(k for k in range(1, 1000) if k not in keys)
    assert main(["get", str(path), str(missing)]) == 1
    capsysbinary.readouterr()


def check_kv(path: Path, expect: dict[int, bytes]) -> None:
    with shardkit.open(path) as ds:
        keys = list(ds.keys())
        assert len(keys) == len(set(keys))
        assert sorted(keys) == sorted(expect)
        assert all(ds[k] == v for k, v in expect.items())
        assert all(k in ds for k in expect)
        assert ds.get_many(list(expect)) == list(expect.values())
        others = [k for k in range(1, 200) if k not in expect][:50]
        assert not any(k in ds for k in others)
        assert ds.get(others[0]) is None
        assert ds.verify() == []


# -- tensorstore: the neuroglancer_uint64_sharded kvstore ---------------------------------------

TS_KV = [
    sharding("identity", 0, 0, 0),
    sharding("identity", 9, 2, 8, "gzip", "gzip"),
    sharding("identity", 3, 6, 4, "raw", "gzip"),
    sharding("murmurhash3_x86_128", 0, 0, 8, "gzip", "raw"),
    sharding("murmurhash3_x86_128", 3, 2, 1, "raw", "raw"),
    sharding("murmurhash3_x86_128", 9, 6, 0, "gzip", "gzip"),
    sharding("murmurhash3_x86_128", 0, 4, 4, "raw", "gzip"),
]


@pytest.mark.parametrize("spec", TS_KV, ids=[
    f"{s['hash'][:5]}-p{s['preshift_bits']}-m{s['minishard_bits']}-s{s['shard_bits']}-"
    f"{s['minishard_index_encoding']}-{s['data_encoding']}" for s in TS_KV])
def test_tensorstore_kvstore(tmp_path: Path, spec: dict[str, Any]) -> None:
    ts = pytest.importorskip("tensorstore")
    rng = np.random.default_rng(spec["shard_bits"] * 100 + spec["minishard_bits"])
    keys = set(rng.integers(0, 2**64, 150, dtype=np.uint64).tolist())
    keys |= set(range(2**64 - 24, 2**64)) | {0, 2**63, 2**63 - 1, 2**32}
    keys |= set(rng.integers(200, 4000, 60).tolist())
    items = {int(k): rng.bytes(int(rng.integers(0, 300))) for k in keys}
    kv = ts.KvStore.open({"driver": "neuroglancer_uint64_sharded",
                          "base": f"file://{tmp_path}/ds/", "metadata": spec}).result()
    with ts.Transaction() as txn:
        for k, v in items.items():
            kv.with_transaction(txn)[k.to_bytes(8, "big")] = v
    listed = {int.from_bytes(k, "big") for k in kv.list().result()}
    assert listed == set(items)
    (tmp_path / "ds" / "info").write_text(json.dumps({"@type": "neuroglancer_skeletons",
                                                      "sharding": spec}))
    check_kv(tmp_path / "ds", items)


# -- tensorstore: sharded image volumes -----------------------------------------------------------

TS_IMAGES = [
    # data type, channels, encoding, size, chunk, voxel offset, sharding
    ("uint8", 1, "raw", [37, 21, 9], [8, 8, 4], [3, -5, 7], sharding(shard=2)),
    ("uint16", 2, "raw", [45, 33, 19], [16, 16, 8], [0, 0, 0],
     sharding("murmurhash3_x86_128", 2, 2, 2, "gzip", "gzip")),
    ("uint32", 1, "raw", [30, 30, 30], [7, 9, 11], [100, 200, 300], sharding(minishard=0, shard=3)),
    ("uint64", 1, "raw", [20, 17, 13], [5, 4, 3], [0, 0, 0],
     sharding("murmurhash3_x86_128", 0, 3, 1, "raw", "gzip")),
    ("float32", 3, "raw", [25, 25, 6], [10, 10, 2], [-10, 0, 0],
     sharding("identity", 1, 2, 1, "gzip", "raw")),
    ("int16", 1, "raw", [19, 9, 7], [4, 4, 4], [0, 0, 0], sharding("identity", 2, 1, 2)),
    ("uint32", 1, "compressed_segmentation", [40, 30, 20], [16, 16, 8], [1, 2, 3],
     sharding(shard=2)),
    ("uint64", 2, "compressed_segmentation", [40, 30, 20], [16, 16, 8], [0, 0, 0],
     sharding("murmurhash3_x86_128", 0, 2, 2, "gzip", "gzip")),
    ("uint8", 1, "jpeg", [40, 30, 5], [16, 16, 2], [0, 0, 0], sharding(shard=2)),
    ("uint8", 3, "jpeg", [40, 30, 5], [16, 16, 2], [0, 0, 0],
     sharding("murmurhash3_x86_128", 0, 1, 1, "raw", "gzip")),
    ("uint16", 1, "png", [40, 30, 5], [16, 16, 2], [0, 0, 0], sharding(shard=1)),
]


@pytest.mark.parametrize("case", TS_IMAGES,
                         ids=[f"{c[0]}x{c[1]}-{c[2]}-{i}" for i, c in enumerate(TS_IMAGES)])
def test_tensorstore_image(tmp_path: Path, case: tuple[Any, ...]) -> None:
    ts = pytest.importorskip("tensorstore")
    dtype, channels, encoding, size, chunk, offset, spec = case
    scale: dict[str, Any] = {"size": size, "chunk_size": chunk, "resolution": [4, 4, 40],
                             "encoding": encoding, "voxel_offset": offset, "sharding": spec}
    if encoding == "compressed_segmentation":
        scale["compressed_segmentation_block_size"] = [8, 8, 8]
    t = ts.open({"driver": "neuroglancer_precomputed", "kvstore": f"file://{tmp_path}/",
                 "create": True, "scale_metadata": scale,
                 "multiscale_metadata": {"type": "image", "data_type": dtype,
                                         "num_channels": channels}}).result()
    rng = np.random.default_rng(len(size) + sum(chunk))
    shape = (*size, channels)
    if dtype == "float32":
        vol = rng.random(shape, dtype=np.float32)
    elif encoding == "compressed_segmentation":
        vol = rng.integers(0, 5, shape).astype(dtype)
    else:
        vol = rng.integers(0, np.iinfo(dtype).max, shape, dtype=dtype)
    vol[: chunk[0], : chunk[1], : chunk[2]] = 0  # one chunk equal to the fill value
    t[...] = vol
    back = np.asarray(t.read().result())
    key = json.loads((tmp_path / "info").read_text())["scales"][0]["key"]
    raw_kv = ts.KvStore.open({"driver": "neuroglancer_uint64_sharded",
                              "base": f"file://{tmp_path}/{key}/", "metadata": spec}).result()
    stored = {int.from_bytes(k, "big") for k in raw_kv.list().result()}
    ds = shardkit.open(tmp_path)
    s = ds.scales[key]
    assert s.voxel_offset == tuple(offset) and s.size == tuple(size) and s.encoding == encoding
    assert set(ds.keys()) == stored
    assert ds.verify() == []
    for pos in grid(ds, key):
        want = region(back, pos, tuple(chunk))
        code = s.morton_code(pos)
        if code not in stored:  # tensorstore skips chunks equal to the fill value
            assert code not in ds
            with pytest.raises(EntryNotFoundError):
                ds.read_chunk(key, pos)
            if encoding in ("raw", "compressed_segmentation"):
                assert np.array_equal(ds.read_chunk(key, pos, order="xyzc", fill_missing=True),
                                      want)
            continue
        got = ds.read_chunk(key, pos, order="xyzc")
        if encoding in ("raw", "compressed_segmentation"):  # decoded by shardkit
            assert got.shape == want.shape and got.dtype == want.dtype
            assert np.array_equal(got, want)
            assert np.array_equal(ds.read_chunk(0, pos), want.transpose(3, 2, 1, 0))
            continue
        assert got.encoding == encoding
        assert got.data == raw_kv.read(code.to_bytes(8, "big")).result().value == ds[code]
        c, dz, dy, dx = got.shape
        assert (dx, dy, dz, c) == want.shape
        assert image_size(got.data) == (dx, dy * dz)


def test_tensorstore_multiscale(tmp_path: Path, capsysbinary: Any) -> None:
    ts = pytest.importorskip("tensorstore")
    rng = np.random.default_rng(3)
    scales = [([4, 4, 40], [50, 41, 13], [16, 16, 4], [10, 20, 3], sharding(shard=2)),
              ([8, 8, 40], [25, 21, 13], [8, 8, 8], [5, 10, 3],
               sharding("murmurhash3_x86_128", 1, 2, 1, "gzip", "gzip")),
              ([16, 16, 40], [13, 11, 13], [64, 64, 64], [2, 5, 3], sharding(minishard=0)),
              ([32, 32, 80], [7, 6, 7], [4, 4, 4], [1, 2, 1], None)]
    arrays = {}
    for res, size, chunk, offset, spec in scales:
        meta: dict[str, Any] = {"size": size, "chunk_size": chunk, "resolution": res,
                                "encoding": "raw", "voxel_offset": offset}
        if spec:
            meta["sharding"] = spec
        t = ts.open({"driver": "neuroglancer_precomputed", "kvstore": f"file://{tmp_path}/",
                     "create": True, "open": True, "scale_metadata": meta,
                     "multiscale_metadata": {"type": "image", "data_type": "uint16",
                                             "num_channels": 2}}).result()
        t[...] = rng.integers(1, 60000, (*size, 2), dtype=np.uint16)
        arrays["_".join(str(r) for r in res)] = (np.asarray(t.read().result()), tuple(chunk))
    ds = shardkit.open(tmp_path)
    assert list(ds.scales) == ["4_4_40", "8_8_40", "16_16_40"]
    assert ds.unsharded_scales == ["32_32_80"]
    for i, (key, s) in enumerate(ds.scales.items()):
        back, chunk = arrays[key]
        assert len(s) == math_prod(s.grid_shape)
        for pos in grid(ds, key):
            want = region(back, pos, chunk)
            assert np.array_equal(ds.read_chunk(key, pos, order="xyzc"), want)
            assert np.array_equal(ds.read_chunk(i, pos, order="xyzc"), want)
    assert ds.verify() == []
    assert main(["info", "--json", str(tmp_path)]) == 0
    info = json.loads(capsysbinary.readouterr().out)
    assert [s["key"] for s in info["scales"]] == list(ds.scales)
    assert info["unsharded_scales"] == ["32_32_80"]
    keys = list(ds.keys())  # the first scale's; info counts the chunks of every scale
    check_cli(tmp_path, keys, ds[keys[0]], capsysbinary,
              sum(len(s) for s in ds.scales.values()))


def math_prod(values: Any) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


# -- cloud-volume: sharded images -----------------------------------------------------------------

CV_IMAGES = [
    # data type, channels, encoding, size, chunk, voxel offset, sharding
    ("uint8", 1, "raw", [37, 21, 9], [8, 8, 4], [3, 5, 7], sharding()),
    ("uint16", 2, "raw", [45, 33, 19], [16, 16, 8], [0, 0, 0],
     sharding("murmurhash3_x86_128", 0, 2, 0, "gzip", "gzip")),
    ("uint32", 1, "raw", [70, 50, 20], [8, 8, 4], [3, 5, 7],
     sharding("identity", 3, 2, 5, "gzip", "gzip")),  # many shards, written shard by shard
    ("int16", 1, "raw", [33, 17, 9], [4, 4, 4], [-3, 0, 0], sharding("identity", 2, 1, 6)),
    ("uint64", 1, "compressed_segmentation", [40, 30, 20], [16, 16, 8], [0, 0, 0],
     sharding("murmurhash3_x86_128", 6, 3, 0, "gzip", "gzip")),
    ("uint32", 1, "compressed_segmentation", [40, 30, 20], [16, 16, 8], [-4, 0, 8], sharding()),
    ("uint8", 3, "jpeg", [40, 30, 5], [16, 16, 2], [0, 0, 0], sharding()),
]


@pytest.mark.parametrize("case", CV_IMAGES,
                         ids=[f"{c[0]}x{c[1]}-{c[2]}-{i}" for i, c in enumerate(CV_IMAGES)])
def test_cloudvolume_image(tmp_path: Path, case: tuple[Any, ...]) -> None:
    cloudvolume = pytest.importorskip("cloudvolume")
    from cloudfiles import CloudFiles
    from cloudvolume.lib import Bbox

    dtype, channels, encoding, size, chunk, offset, spec = case
    info = cloudvolume.CloudVolume.create_new_info(
        num_channels=channels, layer_type="image", data_type=dtype, encoding=encoding,
        resolution=[4, 4, 40], voxel_offset=offset, volume_size=size, chunk_size=chunk)
    info["scales"][0]["sharding"] = spec
    cv = cloudvolume.CloudVolume(f"file://{tmp_path}", info=info, progress=False)
    cv.commit_info()
    rng = np.random.default_rng(sum(size))
    vol = rng.integers(0, 5 if encoding == "compressed_segmentation" else 250,
                       (*size, channels)).astype(dtype)
    if spec["shard_bits"] == 0:
        cv[cv.bounds] = vol
    else:  # one make_shard per shard, as igneous does
        step = [int(v) for v in cv.image.shard_shape(0)]
        files = CloudFiles(f"file://{tmp_path}/{cv.key}")
        for lo in itertools.product(*(range(0, n, k) for n, k in zip(size, step, strict=True))):
            hi = [min(a + k, n) for a, k, n in zip(lo, step, size, strict=True)]
            box = Bbox(np.add(lo, offset), np.add(hi, offset))
            name, data = cv.image.make_shard(vol[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]], box, 0)
            files.put(name, data, compress=None)
    back = np.asarray(cv[cv.bounds])
    if encoding != "jpeg":
        assert np.array_equal(back, vol)
    ds = shardkit.open(tmp_path)
    assert list(ds.scales) == [cv.key]
    s = ds.scales[cv.key]
    assert len(s) == math_prod(s.grid_shape)
    for pos in grid(ds, cv.key):
        want = region(back, pos, tuple(chunk))
        got = ds.read_chunk(cv.key, pos, order="xyzc")
        if encoding in ("raw", "compressed_segmentation"):  # decoded by shardkit
            assert got.dtype == want.dtype and np.array_equal(got, want)
            if encoding == "compressed_segmentation":  # the other reference decoder agrees
                cseg = pytest.importorskip("compressed_segmentation")
                c, dz, dy, dx = ds.chunk_shape(cv.key, pos)
                decoded = cseg.decompress(ds[s.morton_code(pos)], (dx, dy, dz, c), ds.dtype,
                                          (8, 8, 8), order="F")
                assert np.array_equal(np.asarray(decoded).reshape(want.shape), got)
        else:
            assert got.encoding == encoding
            c, dz, dy, dx = got.shape
            assert (dx, dy, dz, c) == want.shape
            assert image_size(got.data) == (dx, dy * dz)
    assert ds.verify() == []


def test_cloudvolume_compressed_shard_files(tmp_path: Path) -> None:
    """``compress=True`` makes cloud-volume write ``0.shard.gz`` (the whole shard gzipped)."""
    cloudvolume = pytest.importorskip("cloudvolume")
    info = cloudvolume.CloudVolume.create_new_info(
        num_channels=1, layer_type="image", data_type="float32", encoding="raw",
        resolution=[4, 4, 40], voxel_offset=[100, 200, 300], volume_size=[30, 30, 30],
        chunk_size=[7, 9, 11])
    info["scales"][0]["sharding"] = sharding(minishard=3)
    cv = cloudvolume.CloudVolume(f"file://{tmp_path}", info=info, progress=False, compress=True)
    cv.commit_info()
    vol = np.random.default_rng(9).random((30, 30, 30, 1), dtype=np.float32)
    cv[cv.bounds] = vol
    assert [p.name for p in (tmp_path / cv.key).iterdir()] == ["0.shard.gz"]
    ds = shardkit.open(tmp_path)
    assert len(ds) == 5 * 4 * 3
    for pos in grid(ds, cv.key):
        assert np.array_equal(ds.read_chunk(0, pos, order="xyzc"), region(vol, pos, (7, 9, 11)))
    assert ds.verify() == []
    # the same bytes as the uncompressed shard
    (tmp_path / cv.key / "0.shard").write_bytes(
        gzip.decompress((tmp_path / cv.key / "0.shard.gz").read_bytes()))
    (tmp_path / cv.key / "0.shard.gz").unlink()
    plain = shardkit.open(tmp_path)
    assert dict(plain.items()) == dict(ds.items())
    back = np.asarray(cloudvolume.CloudVolume(f"file://{tmp_path}", progress=False)[cv.bounds])
    assert np.array_equal(back, vol)


def test_null_sharding_means_unsharded(tmp_path: Path) -> None:
    """cloud-volume treats ``"sharding": null`` as unsharded."""
    spec = sharding(shard=1)
    (tmp_path / "s").mkdir()
    from shardkit.writers.neuroglancer import write_sharded_dataset

    write_sharded_dataset(tmp_path / "s" / "sk", {5: b"five", 2**64 - 1: b"max"}, spec)
    info = json.loads((tmp_path / "s" / "sk" / "info").read_text())
    info["sharding"] = None
    (tmp_path / "s" / "sk" / "info").write_text(json.dumps(info))
    with pytest.raises(UnsupportedVersionError):
        shardkit.open(tmp_path / "s" / "sk")
    vol = {"@type": "neuroglancer_multiscale_volume", "type": "image", "data_type": "uint8",
           "num_channels": 1, "scales": [
               {"key": "a", "size": [4, 4, 4], "chunk_sizes": [[4, 4, 4]], "encoding": "raw",
                "resolution": [1, 1, 1], "voxel_offset": [0, 0, 0], "sharding": None},
               {"key": "b", "size": [4, 4, 4], "chunk_sizes": [[4, 4, 4]], "encoding": "raw",
                "resolution": [2, 2, 2], "voxel_offset": [0, 0, 0], "sharding": spec}]}
    (tmp_path / "v" / "b").mkdir(parents=True)
    (tmp_path / "v" / "info").write_text(json.dumps(vol))
    from shardkit.writers.neuroglancer import build_shards

    for name, data in build_shards({0: bytes(range(64))}, spec).items():
        (tmp_path / "v" / "b" / name).write_bytes(data)
    ds = shardkit.open(tmp_path / "v")
    assert list(ds.scales) == ["b"] and ds.unsharded_scales == ["a"]
    assert ds.read_chunk("b", (0, 0, 0)).tobytes() == bytes(range(64))
    assert ds.verify() == []


# -- cloud-volume: skeletons, meshes, annotations -------------------------------------------------


def segmentation(path: Path) -> Any:
    cloudvolume = pytest.importorskip("cloudvolume")
    info = cloudvolume.CloudVolume.create_new_info(1, "segmentation", "uint64", "raw",
                                                   [4, 4, 40], [0, 0, 0], [64, 64, 64],
                                                   chunk_size=[64, 64, 64])
    info["skeletons"] = "skel"
    info["mesh"] = "mesh"
    cv = cloudvolume.CloudVolume(f"file://{path}", info=info, progress=False)
    cv.commit_info()
    return cv


CV_SKELETONS = [
    sharding("murmurhash3_x86_128", 0, 1, 0, "gzip", "gzip"),  # cloud-volume's upload
    sharding("identity", 0, 2, 0),
    sharding("murmurhash3_x86_128", 2, 3, 3, "gzip", "raw"),
    sharding("identity", 4, 0, 2, "raw", "gzip"),
    sharding("murmurhash3_x86_128", 0, 4, 8, "raw", "gzip"),
]


@pytest.mark.parametrize("spec", CV_SKELETONS, ids=[
    f"{s['hash'][:5]}-p{s['preshift_bits']}-m{s['minishard_bits']}-s{s['shard_bits']}"
    for s in CV_SKELETONS])
def test_cloudvolume_skeletons(tmp_path: Path, spec: dict[str, Any],
                               capsysbinary: Any) -> None:
    cloudvolume = pytest.importorskip("cloudvolume")
    from cloudfiles import CloudFiles
    from cloudvolume.datasource.precomputed.sharding import synthesize_shard_files

    cv = segmentation(tmp_path)
    cv.skeleton.meta.info["sharding"] = spec
    cv.skeleton.meta.commit_info()
    cv = cloudvolume.CloudVolume(f"file://{tmp_path}", progress=False)
    rng = np.random.default_rng(spec["shard_bits"] + 10 * spec["minishard_bits"])
    ids = set(rng.integers(1000, 2**63, 25).tolist()) | {2**64 - 1, 2**64 - 7, 2**63}
    skeletons = []
    for sid in sorted(int(i) for i in ids):
        n = int(rng.integers(2, 12))
        edges = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1).astype(np.uint32)
        skeletons.append(cloudvolume.Skeleton(
            (rng.random((n, 3)) * 100).astype(np.float32), edges,
            radii=rng.random(n).astype(np.float32), vertex_types=np.ones(n, np.uint8),
            segid=sid))
    expect = {s.id: s.to_precomputed() for s in skeletons}
    if spec["shard_bits"] == 0:
        cv.skeleton.upload(skeletons)
    else:  # cloud-volume's upload takes one shard at a time; igneous writes them like this
        files = synthesize_shard_files(cv.skeleton.reader.spec, expect)
        CloudFiles(f"file://{tmp_path}/skel").puts(files.items(), compress=False)
    got = cv.skeleton.reader.get_data(list(expect), cv.skeleton.meta.skeleton_path)
    assert {int(k): v for k, v in got.items()} == expect
    assert len(cv.skeleton.get(list(expect)[:3])) == 3
    check_kv(tmp_path / "skel", expect)
    keys = sorted(expect)
    check_cli(tmp_path / "skel", keys, expect[keys[0]], capsysbinary)


CV_MESHES = [
    sharding("murmurhash3_x86_128", 0, 1, 0, "gzip", "raw"),
    sharding("identity", 0, 2, 2),
    sharding("murmurhash3_x86_128", 1, 0, 3, "gzip", "raw"),
]


@pytest.mark.parametrize("spec", CV_MESHES, ids=["murmur-1shard", "identity", "murmur-preshift"])
def test_cloudvolume_multilod_draco_meshes(tmp_path: Path, spec: dict[str, Any]) -> None:
    """Fragments sit before each manifest, outside every minishard index."""
    cloudvolume = pytest.importorskip("cloudvolume")
    dracopy = pytest.importorskip("DracoPy")
    from cloudfiles import CloudFiles
    from cloudvolume.datasource.precomputed.mesh.multilod import MultiLevelPrecomputedMeshManifest
    from cloudvolume.datasource.precomputed.sharding import (
        ShardingSpecification,
        synthesize_shard_files,
    )

    cv = segmentation(tmp_path)
    cv.mesh.meta.info.update({"@type": "neuroglancer_multilod_draco",
                              "vertex_quantization_bits": 10, "lod_scale_multiplier": 1.0,
                              "transform": [4, 0, 0, 0, 0, 4, 0, 0, 0, 0, 40, 0],
                              "sharding": spec})
    cv.mesh.meta.commit_info()
    cv = cloudvolume.CloudVolume(f"file://{tmp_path}", progress=False)
    rng = np.random.default_rng(7)
    faces = np.array([[0, 1, 2], [3, 4, 5], [0, 2, 4]], np.uint32)
    data, offsets, manifests = {}, {}, {}
    for sid in [*(int(x) for x in rng.integers(1, 2**40, 20)), 2**64 - 2]:
        lods = [[dracopy.encode((rng.random((6, 3)) * 1000).astype(np.float32), faces,
                                quantization_bits=10)
                 for _ in range(int(rng.integers(1, 4)))] for _ in range(2)]
        manifest = MultiLevelPrecomputedMeshManifest(
            sid, chunk_shape=[64, 64, 64], grid_origin=[0, 0, 0], num_lods=2, lod_scales=[1, 2],
            vertex_offsets=[[0, 0, 0]] * 2, num_fragments_per_lod=[len(f) for f in lods],
            fragment_positions=[[[j, 0, 0] for j in range(len(f))] for f in lods],
            fragment_offsets=[len(x) for f in lods for x in f]).to_binary()
        data[sid] = b"".join(x for f in lods for x in f) + manifest
        offsets[sid] = len(manifest)
        manifests[sid] = manifest
    files = synthesize_shard_files(ShardingSpecification.from_dict(spec), data,
                                   data_offset=offsets)
    CloudFiles(f"file://{tmp_path}/mesh").puts(files.items(), compress=False)
    assert len(cv.mesh.get(list(manifests)[:3], lod=1)) == 3
    got = cv.mesh.reader.get_data(list(manifests), "mesh")
    assert {int(k): v for k, v in got.items()} == manifests
    check_kv(tmp_path / "mesh", manifests)


def test_cloudvolume_legacy_mesh_sharded(tmp_path: Path) -> None:
    cloudvolume = pytest.importorskip("cloudvolume")
    from cloudfiles import CloudFiles
    from cloudvolume.datasource.precomputed.sharding import (
        ShardingSpecification,
        ShardReader,
        synthesize_shard_files,
    )

    cv = segmentation(tmp_path)
    spec = sharding("murmurhash3_x86_128", 0, 2, 1, "gzip", "gzip")
    cv.mesh.meta.info["sharding"] = spec
    cv.mesh.meta.commit_info()
    rng = np.random.default_rng(8)
    faces = np.array([[0, 1, 2], [2, 3, 4]], np.uint32)
    expect = {sid: cloudvolume.Mesh(rng.random((5, 3)).astype(np.float32), faces, None,
                                    segid=sid).to_precomputed() for sid in range(1, 30)}
    spec_obj = ShardingSpecification.from_dict(spec)
    CloudFiles(f"file://{tmp_path}/mesh").puts(synthesize_shard_files(spec_obj, expect).items(),
                                               compress=False)
    got = ShardReader(cv.meta.cloudpath, cv.cache, spec_obj).get_data(list(expect), "mesh")
    assert {int(k): v for k, v in got.items()} == expect
    check_kv(tmp_path / "mesh", expect)


@pytest.mark.parametrize("spec", [sharding("murmurhash3_x86_128", 0, 2, 2, "gzip", "gzip"),
                                  sharding("identity", 1, 0, 0)], ids=["murmur", "identity"])
def test_cloudvolume_annotations_by_id(tmp_path: Path, spec: dict[str, Any]) -> None:
    pytest.importorskip("cloudvolume")
    from cloudfiles import CloudFiles
    from cloudvolume.cloudvolume import from_cloudpath
    from cloudvolume.datasource.precomputed.sharding import (
        ShardingSpecification,
        synthesize_shard_files,
    )

    info = {"@type": "neuroglancer_annotations_v1",
            "dimensions": {"x": [4e-9, "m"], "y": [4e-9, "m"], "z": [4e-8, "m"]},
            "lower_bound": [0, 0, 0], "upper_bound": [100, 100, 100], "annotation_type": "POINT",
            "properties": [{"id": "score", "type": "float32"}, {"id": "kind", "type": "uint8"}],
            "relationships": [{"id": "seg", "key": "rel_seg"}],
            "by_id": {"key": "by_id", "sharding": spec},
            "spatial": [{"key": "spatial0", "grid_shape": [1, 1, 1],
                         "chunk_size": [100, 100, 100], "limit": 1000}]}
    (tmp_path / "info").write_text(json.dumps(info))
    rng = np.random.default_rng(6)
    expect = {}
    for aid in set(rng.integers(0, 2**64, 40, dtype=np.uint64).tolist()) | {MASK64}:
        segs = rng.integers(0, 2**64, int(rng.integers(0, 3)), dtype=np.uint64)
        value = rng.random(4).astype("<f4").tobytes() + bytes([int(rng.integers(0, 5))])
        value += b"\0" * (-len(value) % 4)
        expect[int(aid)] = value + len(segs).to_bytes(4, "little") + segs.astype("<u8").tobytes()
    files = synthesize_shard_files(ShardingSpecification.from_dict(spec), expect)
    CloudFiles(f"file://{tmp_path}/by_id").puts(files.items(), compress=False)
    annotations = from_cloudpath(f"precomputed://file://{tmp_path}")
    assert len(annotations.get_by_id(list(expect))) == len(expect)  # cloud-volume decodes all
    with shardkit.open(tmp_path) as layer:  # an annotation layer: values come back decoded
        assert sorted(layer.keys()) == sorted(expect)
        for aid, value in expect.items():
            assert layer.raw(aid) == value
            ann = layer[aid]
            assert ann.geometry.tobytes() == value[:12]
            assert ann.properties["score"] == np.frombuffer(value, "<f4", 1, 12)[0]
            assert ann.properties["kind"] == value[16]
            count = int.from_bytes(value[20:24], "little")
            assert ann.relationships["seg"] == np.frombuffer(value, "<u8", count, 24).tolist()
        assert [a.id for a in layer.get_many(list(expect))] == list(expect)
        assert layer.get(1) is None
        # by_id only: the spatial and relationship indexes the info declares hold none
        problems = layer.verify()
        pairs = sum(int.from_bytes(v[20:24], "little") for v in expect.values())
        assert sorted(p.check for p in problems) == (["relationship"] * pairs
                                                     + ["spatial_missing"] * len(expect))
