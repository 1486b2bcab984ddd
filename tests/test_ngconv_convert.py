"""Unsharded <-> sharded conversion of Neuroglancer precomputed layers (shardkit alone)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from shardkit import ShardkitError
from shardkit.cli import main
from shardkit.formats.neuroglancer import (
    ShardingSpec,
    SpecError,
    compressed_morton_code,
    open_dataset,
)
from shardkit.ng.convert import (
    LayerStore,
    chunk_name,
    morton_decode_many,
    shard_layer,
    shard_pieces,
    unshard_layer,
)
from shardkit.writers.neuroglancer import build_shard

SIZE = (100, 90, 20)
CHUNK = (32, 32, 8)
OFFSET = (7, -3, 100)


def _volume(channels: int = 1, dtype: str = "uint16") -> np.ndarray:
    rng = np.random.default_rng(5)
    return rng.integers(0, 4000, size=(*SIZE, channels)).astype(dtype)


def _write_unsharded(root: Path, vol: np.ndarray, *, skip: set[tuple[int, int, int]] = frozenset(),
                     gz: set[tuple[int, int, int]] = frozenset(), key: str = "s0",
                     extra_scale: bool = False) -> dict[str, bytes]:
    """An unsharded raw image layer as cloud-volume lays it out; returns name -> chunk bytes."""
    grid = [-(-s // c) for s, c in zip(SIZE, CHUNK, strict=True)]
    files = {}
    (root / key).mkdir(parents=True)
    for x in range(grid[0]):
        for y in range(grid[1]):
            for z in range(grid[2]):
                if (x, y, z) in skip:
                    continue
                lo = [p * c for p, c in zip((x, y, z), CHUNK, strict=True)]
                block = vol[lo[0]:lo[0] + CHUNK[0], lo[1]:lo[1] + CHUNK[1],
                            lo[2]:lo[2] + CHUNK[2], :]
                data = np.ascontiguousarray(block.transpose(3, 2, 1, 0)).tobytes()
                name = chunk_name((x, y, z), SIZE, CHUNK, OFFSET)
                files[name] = data
                if (x, y, z) in gz:
                    (root / key / (name + ".gz")).write_bytes(gzip.compress(data))
                else:
                    (root / key / name).write_bytes(data)
    scales = [{"key": key, "size": list(SIZE), "chunk_sizes": [list(CHUNK)],
               "resolution": [4, 4, 40], "voxel_offset": list(OFFSET), "encoding": "raw"}]
    if extra_scale:
        scales.append({"key": "s1", "size": [50, 45, 20], "chunk_sizes": [list(CHUNK)],
                       "resolution": [8, 8, 40], "voxel_offset": [0, 0, 0], "encoding": "raw"})
    info = {"@type": "neuroglancer_multiscale_volume", "type": "image",
            "data_type": str(vol.dtype), "num_channels": vol.shape[3], "scales": scales}
    (root / "info").write_text(json.dumps(info))
    return files


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_chunk_name_and_morton_decode():
    assert chunk_name((3, 2, 2), SIZE, CHUNK, OFFSET) == "103-107_61-87_116-120"
    grid = (4, 3, 2)
    codes = [compressed_morton_code((x, y, z), grid)
             for x in range(4) for y in range(3) for z in range(2)]
    pos = morton_decode_many(np.array(codes, dtype=np.uint64), grid)
    assert [tuple(p) for p in pos.tolist()] == [(x, y, z) for x in range(4) for y in range(3)
                                                 for z in range(2)]


def test_morton_decode_many_refuses_bits_beyond_the_grid():
    from shardkit.errors import InvalidKeyError

    grid = (7, 6, 3)  # 3 + 3 + 2 = 8 bits
    assert morton_decode_many(np.array([255], dtype=np.uint64), grid).tolist() == [[7, 7, 3]]
    for code in (1 << 8 | 1, 2**63, 2**64 - 1):
        with pytest.raises(InvalidKeyError, match=f"chunk id {code} has bits beyond") as exc:
            morton_decode_many(np.array([0, code], dtype=np.uint64), grid)
        assert exc.value.field == f"/chunks/{code}"
    with pytest.raises(InvalidKeyError):
        morton_decode_many(np.array([1], dtype=np.uint64), (1, 1, 1))  # a grid of one chunk
    assert morton_decode_many(np.array([2**64 - 1], dtype=np.uint64),
                              (2**22, 2**21, 2**21)).tolist() == [[2**22 - 1, 2**21 - 1,
                                                                   2**21 - 1]]


def _with_extra_high_bit_chunk(dst: Path) -> tuple[int, int]:
    """A copy of the tensorstore image sample whose shard also holds a chunk id with a bit
    beyond the grid's: it would decode to the position of the chunk it was made from."""
    import shutil

    shutil.copytree(Path(__file__).parent / "data" / "neuroglancer" /
                    "ts_image_identity_gzipindex", dst)
    ds = open_dataset(dst)
    scale = ds.scales["8_8_40"]
    items = {k: bytes(scale[k]) for k in scale.shard(0).keys()}
    good = sorted(items)[1]
    bad = good | 1 << sum(max(0, g - 1).bit_length() for g in scale.grid_shape)
    assert scale.spec.locate(bad).shard == 0
    items[bad] = b"\xff" * len(items[good])
    spec = scale.spec
    ds.close()
    (dst / "8_8_40" / "0.shard").write_bytes(build_shard(items, spec))
    return good, bad


def test_chunk_ids_beyond_the_grid_are_refused(tmp_path):
    from shardkit.errors import InvalidKeyError

    good, bad = _with_extra_high_bit_chunk(tmp_path / "src")
    ds = open_dataset(tmp_path / "src")
    scale = ds.scales["8_8_40"]
    assert scale.position(good) == (1, 0, 0)
    with pytest.raises(InvalidKeyError, match=f"chunk id {bad} is not a position"):
        scale.position(bad)
    with pytest.raises(InvalidKeyError):
        scale.position(-1)
    problems = ds.verify()
    assert [(p.check, p.field) for p in problems] == [("chunk_id", "/minishards/0/index")]
    assert f"chunk {bad}: not the id of a position of the grid" in problems[0].message
    ds.close()
    # unsharding refuses the shard before writing any of its chunk files
    with pytest.raises(ShardkitError, match=f"chunk id {bad} has bits beyond") as exc:
        unshard_layer(tmp_path / "src", tmp_path / "back")
    assert exc.value.field == f"/chunks/{bad}"
    assert not list((tmp_path / "back").rglob("*-*_*"))
    assert main(["ng", "unshard", str(tmp_path / "src"), str(tmp_path / "back2"),
                 "--jobs", "2"]) == 2  # other shards may be written, never the bad chunk
    assert all(set(p.read_bytes()) != {0xFF} for p in (tmp_path / "back2").rglob("*-*_*"))


@pytest.mark.parametrize(("hash_", "minishard_bits", "index_encoding"), [
    ("identity", 0, "raw"), ("identity", 3, "gzip"), ("murmurhash3_x86_128", 4, "raw")])
def test_shard_pieces_are_the_writers_bytes(hash_, minishard_bits, index_encoding):
    """The streamed shard is byte for byte what shardkit's writer builds."""
    rng = np.random.default_rng(9)
    spec = ShardingSpec(hash_, 1, minishard_bits, 0, index_encoding, "raw")
    items = {int(k): rng.bytes(int(rng.integers(0, 300)))
             for k in rng.integers(0, 2**40, 200, dtype=np.uint64)}
    assert b"".join(shard_pieces(items, spec)) == build_shard(items, spec)
    assert b"".join(shard_pieces({}, spec)) == build_shard({}, spec)


def test_image_roundtrip_every_chunk_equal(tmp_path):
    vol = _volume(channels=2)
    src, sharded, back = tmp_path / "src", tmp_path / "sharded", tmp_path / "back"
    files = _write_unsharded(src, vol, skip={(1, 1, 1)}, gz={(0, 0, 0), (3, 2, 2)})
    spec = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity", "preshift_bits": 1,
            "minishard_bits": 1, "shard_bits": 3, "minishard_index_encoding": "gzip",
            "data_encoding": "gzip"}
    report = shard_layer(src, sharded, spec=spec)
    assert report.chunks == len(files) == 4 * 3 * 3 - 1
    assert report.bytes_in == sum(len(v) for v in files.values())
    info = json.loads((sharded / "info").read_text())
    assert info["scales"][0]["sharding"] == spec
    ds = open_dataset(sharded)
    assert ds.verify() == []
    scale = ds.scales["s0"]
    assert len(scale) == len(files)
    shard_files = sorted(p.name for p in (sharded / "s0").iterdir())
    assert shard_files == sorted({ShardingSpec.coerce(spec).shard_name(s)
                                  for s in scale.shard_numbers()})
    assert report.shards_written == len(shard_files) and report.files_out == len(shard_files) + 1
    for x in range(4):
        for y in range(3):
            for z in range(3):
                if (x, y, z) == (1, 1, 1):
                    assert scale.morton_code((x, y, z)) not in scale
                    continue
                got = ds.read_chunk("s0", (x, y, z), order="xyzc")
                lo = [p * c for p, c in zip((x, y, z), CHUNK, strict=True)]
                assert np.array_equal(got, vol[lo[0]:lo[0] + 32, lo[1]:lo[1] + 32,
                                               lo[2]:lo[2] + 8])
    ds.close()
    report = unshard_layer(sharded, back)
    assert _files(back / "s0") == files  # byte for byte, plain names (no .gz)
    back_info = json.loads((back / "info").read_text())
    assert "sharding" not in back_info["scales"][0]
    assert back_info["scales"][0]["voxel_offset"] == list(OFFSET)
    assert report.files_out == len(files) + 1 and report.chunks == len(files)


def test_auto_spec_resume_and_no_temp_files(tmp_path):
    vol = _volume()
    src, dst = tmp_path / "src", tmp_path / "dst"
    _write_unsharded(src, vol)
    chunk_bytes = 32 * 32 * 8 * 2
    first = shard_layer(src, dst, shard_bytes=chunk_bytes * 4)
    spec = ShardingSpec.from_dict(first.specs["s0"])
    assert spec.hash == "identity" and spec.preshift_bits + spec.minishard_bits == 2
    assert first.choices["s0"]["estimates"]["shards"] == first.shards_written
    names = sorted(os.listdir(dst / "s0"))
    digests = {n: hashlib.sha256((dst / "s0" / n).read_bytes()).hexdigest() for n in names}
    (dst / "s0" / names[2]).unlink()
    (dst / "info").unlink()
    second = shard_layer(src, dst, shard_bytes=chunk_bytes * 4)
    assert second.shards_written == 1 and second.shards_skipped == len(names) - 1
    assert {n: hashlib.sha256((dst / "s0" / n).read_bytes()).hexdigest()
            for n in os.listdir(dst / "s0")} == digests
    assert not [p for p in dst.rglob("*") if ".tmp-" in p.name]
    # unshard resumes per file: a removed chunk file is the only one written again
    back = tmp_path / "back"
    unshard_layer(dst, back)
    victim = sorted(os.listdir(back / "s0"))[5]
    (back / "s0" / victim).unlink()
    again = unshard_layer(dst, back)
    assert again.files_out == 2  # the chunk file and the info
    assert (back / "s0" / victim).exists()


def test_resume_with_another_spec_is_refused(tmp_path):
    vol = _volume()
    src, dst = tmp_path / "src", tmp_path / "dst"
    _write_unsharded(src, vol)
    spec = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity", "preshift_bits": 1,
            "minishard_bits": 1, "shard_bits": 3}
    other = dict(spec, preshift_bits=0, minishard_bits=2)
    shard_layer(src, dst, spec=spec)
    assert not [p for p in dst.rglob("*") if "shardkit" in p.name]  # the record is gone
    before = {p.name: p.read_bytes() for p in (dst / "s0").iterdir()}
    # a finished run: its info says the spec
    with pytest.raises(ShardkitError, match="another sharding spec") as exc:
        shard_layer(src, dst, spec=other)
    assert exc.value.field == "/sharding"
    # an interrupted run (no info yet): the record in the folder says it
    (dst / "info").unlink()
    (dst / "s0" / ".shardkit-sharding.json").write_text(json.dumps(spec))
    with pytest.raises(ShardkitError, match="another sharding spec"):
        shard_layer(src, dst, spec=other)
    assert main(["ng", "shard", str(src), str(dst), "--spec", json.dumps(other)]) == 2
    assert {p.name: p.read_bytes() for p in (dst / "s0").iterdir()} == {
        **before, ".shardkit-sharding.json": json.dumps(spec).encode()}
    assert not (dst / "info").exists()
    (dst / "s0" / ".shardkit-sharding.json").write_text("[" * 100000)
    with pytest.raises(ShardkitError, match="nested deeper"):
        shard_layer(src, dst, spec=spec)
    (dst / "s0" / ".shardkit-sharding.json").write_text(json.dumps(spec))
    report = shard_layer(src, dst, spec=spec)  # the same spec: resumed
    assert report.shards_written == 0 and report.shards_skipped == len(before)
    assert {p.name: p.read_bytes() for p in (dst / "s0").iterdir()} == before
    ds = open_dataset(dst)
    assert ds.verify() == [] and ds.scales["s0"].spec.to_dict() == \
        ShardingSpec.from_dict(spec).to_dict()
    ds.close()
    # skeletons: the record is in the layer's own folder
    skel = tmp_path / "skel"
    skel.mkdir()
    for seg in range(1, 40):
        (skel / str(seg)).write_bytes(bytes([seg]) * seg)
    (skel / "info").write_text(json.dumps({"@type": "neuroglancer_skeletons"}))
    shard_layer(skel, tmp_path / "skel-sh", minishard_index_bytes=24 * 4)
    with pytest.raises(ShardkitError, match="another sharding spec"):
        shard_layer(skel, tmp_path / "skel-sh", minishard_index_bytes=24 * 64)


def test_scales_selected_and_jobs(tmp_path):
    vol = _volume()
    src = tmp_path / "src"
    _write_unsharded(src, vol, extra_scale=True)
    small = vol[::2, ::2]
    grid = [-(-s // c) for s, c in zip((50, 45, 20), CHUNK, strict=True)]
    (src / "s1").mkdir()
    for x in range(grid[0]):
        for y in range(grid[1]):
            for z in range(grid[2]):
                block = small[x * 32:x * 32 + 32, y * 32:y * 32 + 32, z * 8:z * 8 + 8, :]
                (src / "s1" / chunk_name((x, y, z), (50, 45, 20), CHUNK, (0, 0, 0))).write_bytes(
                    np.ascontiguousarray(block.transpose(3, 2, 1, 0)).tobytes())
    one = shard_layer(src, tmp_path / "one", scales=["s1"])
    assert [s["key"] for s in json.loads((tmp_path / "one" / "info").read_text())["scales"]] \
        == ["s1"]
    assert one.chunks == grid[0] * grid[1] * grid[2]
    serial = shard_layer(src, tmp_path / "serial", shard_bytes=32 * 32 * 8 * 2 * 2)
    fast = shard_layer(src, tmp_path / "fast", shard_bytes=32 * 32 * 8 * 2 * 2, gzip_level=1)
    assert fast.chunks == serial.chunks and fast.bytes_out != serial.bytes_out
    ds = open_dataset(tmp_path / "fast")
    assert ds.verify() == [] and np.array_equal(ds.read_chunk("s0", (1, 2, 0), order="xyzc"),
                                                vol[32:64, 64:90, 0:8])
    ds.close()
    with pytest.raises(ShardkitError, match="gzip level"):
        shard_layer(src, tmp_path / "bad-level", gzip_level=0)
    parallel = shard_layer(src, tmp_path / "parallel", shard_bytes=32 * 32 * 8 * 2 * 2, jobs=2)
    assert serial.specs == parallel.specs and serial.chunks == parallel.chunks
    for key in ("s0", "s1"):
        assert _files(tmp_path / "serial" / key) == _files(tmp_path / "parallel" / key)
    with pytest.raises(ShardkitError, match="no scale s9"):
        shard_layer(src, tmp_path / "x", scales=["s9"])
    # a layer with one sharded and one unsharded scale: unshard writes (and lists) the first
    mixed = tmp_path / "mixed"
    shard_layer(src, mixed, scales=["s0"])
    info = json.loads((mixed / "info").read_text())
    info["scales"].append(json.loads((src / "info").read_text())["scales"][1])
    (mixed / "info").write_text(json.dumps(info))
    unshard_layer(mixed, tmp_path / "mixed-back")
    back = json.loads((tmp_path / "mixed-back" / "info").read_text())
    assert [s["key"] for s in back["scales"]] == ["s0"] and "sharding" not in back["scales"][0]
    with pytest.raises(ShardkitError, match="not sharded"):
        unshard_layer(mixed, tmp_path / "mixed-back2", scales=["s1"])


def test_hashed_image_spec(tmp_path):
    vol = _volume()
    src = tmp_path / "src"
    files = _write_unsharded(src, vol)
    spec = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "murmurhash3_x86_128",
            "preshift_bits": 0, "minishard_bits": 1, "shard_bits": 2}
    shard_layer(src, tmp_path / "sh", spec=spec)
    ds = open_dataset(tmp_path / "sh")
    assert len(ds.scales["s0"]) == len(files) and ds.verify() == []
    ds.close()
    unshard_layer(tmp_path / "sh", tmp_path / "back")
    assert _files(tmp_path / "back" / "s0") == files


def test_skeleton_layer_roundtrip(tmp_path):
    rng = np.random.default_rng(1)
    src = tmp_path / "skel"
    src.mkdir()
    objects = {}
    for i in range(300):
        seg = int(rng.integers(1, 2**40))
        objects[seg] = rng.bytes(int(rng.integers(10, 200)))
        name = str(seg)
        if i % 7 == 0:
            (src / (name + ".gz")).write_bytes(gzip.compress(objects[seg]))
        else:
            (src / name).write_bytes(objects[seg])
    (src / "info").write_text(json.dumps({"@type": "neuroglancer_skeletons",
                                          "vertex_attributes": [], "sharding": None}))
    report = shard_layer(src, tmp_path / "sharded", minishard_index_bytes=24 * 16)
    spec = ShardingSpec.from_dict(report.specs[""])
    assert spec.hash == "murmurhash3_x86_128" and spec.minishard_bits + spec.shard_bits == 5
    ds = open_dataset(tmp_path / "sharded")
    assert {k: ds[k] for k in ds.keys()} == objects
    assert ds.verify() == []
    ds.close()
    unshard_layer(tmp_path / "sharded", tmp_path / "back")
    assert _files(tmp_path / "back") == {**{str(k): v for k, v in objects.items()},
                                         "info": (tmp_path / "back" / "info").read_bytes()}
    assert json.loads((tmp_path / "back" / "info").read_text()) == {
        "@type": "neuroglancer_skeletons", "vertex_attributes": []}


MESH = Path(__file__).parent / "data" / "ng_payloads" / "mesh"


def _mesh_layer(root: Path, ids: list[int]) -> dict[str, bytes]:
    """A multi-resolution mesh layer: the sample object (cloud-volume manifest, DracoPy
    fragments) under several ids, the second one's fragment file gzipped."""
    root.mkdir()
    (root / "info").write_bytes((MESH / "info").read_bytes())
    files = {}
    for i, seg in enumerate(ids):
        files[f"{seg}.index"] = (MESH / "777.index").read_bytes()
        files[str(seg)] = (MESH / "777").read_bytes()
        (root / f"{seg}.index").write_bytes(files[f"{seg}.index"])
        if i == 1:
            (root / f"{seg}.gz").write_bytes(gzip.compress(files[str(seg)]))
        else:
            (root / str(seg)).write_bytes(files[str(seg)])
    return files


def test_multilod_meshes_fragments_before_manifest(tmp_path):
    from shardkit.ng.payloads import decode_mesh_manifest

    ids = [777, 12, 99, 2**50 + 3, 4096]
    files = _mesh_layer(tmp_path / "mesh", ids)
    report = shard_layer(tmp_path / "mesh", tmp_path / "sharded",
                         minishard_index_bytes=24)  # one id per minishard
    spec = ShardingSpec.from_dict(report.specs[""])
    assert spec.data_encoding == "raw" and spec.hash == "murmurhash3_x86_128"
    assert report.chunks == len(ids)
    fragments = (MESH / "777").read_bytes()
    ds = open_dataset(tmp_path / "sharded")
    assert sorted(ds.keys()) == sorted(ids)
    for seg in ds.keys():
        shard = ds.kv.shard(spec.locate(seg).shard)
        ref = shard.locate(seg)
        manifest = shard.source.read_range(ref.start, ref.end)
        assert manifest == files[f"{seg}.index"] == ds[seg]
        m = decode_mesh_manifest(manifest)
        assert shard.source.read_range(ref.start - m.data_size, ref.start) == fragments
    assert ds.verify() == []
    ds.close()
    unshard_layer(tmp_path / "sharded", tmp_path / "back")
    back = _files(tmp_path / "back")
    assert json.loads(back.pop("info")) == json.loads((MESH / "info").read_text())
    assert back == files
    bad = tmp_path / "bad"
    _mesh_layer(bad, [1, 2, 3])
    (bad / "1").write_bytes(fragments[:-1])
    with pytest.raises(ShardkitError, match=r"lists \d+ bytes of fragments"):
        shard_layer(bad, tmp_path / "bad-out")
    with pytest.raises(ShardkitError, match="data_encoding raw"):
        shard_layer(tmp_path / "mesh", tmp_path / "gz-out", spec={
            "@type": "neuroglancer_uint64_sharded_v1", "hash": "murmurhash3_x86_128",
            "preshift_bits": 0, "minishard_bits": 0, "shard_bits": 0, "data_encoding": "gzip"})


def test_fsspec_memory_urls(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    vol = _volume()
    files = _write_unsharded(tmp_path / "src", vol)
    fs = fsspec.filesystem("memory")
    fs.put(str(tmp_path / "src"), "/ngconv-src", recursive=True)
    try:
        report = shard_layer("memory://ngconv-src", "memory://ngconv-dst",
                             shard_bytes=32 * 32 * 8 * 2 * 8)
        assert report.chunks == len(files)
        ds = open_dataset("memory://ngconv-dst")
        assert ds.verify() == [] and len(ds.scales["s0"]) == len(files)
        ds.close()
        unshard_layer("memory://ngconv-dst", "memory://ngconv-back")
        got = {p.rsplit("/", 1)[1]: fs.cat_file(p) for p in fs.ls("/ngconv-back/s0",
                                                                   detail=False)}
        assert got == files
    finally:
        for root in ("/ngconv-src", "/ngconv-dst", "/ngconv-back"):
            if fs.exists(root):
                fs.rm(root, recursive=True)


def test_refusals(tmp_path):
    vol = _volume()
    src = tmp_path / "src"
    _write_unsharded(src, vol)
    info = json.loads((src / "info").read_text())
    info["scales"][0]["key"] = "../outside"
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil" / "info").write_text(json.dumps(info))
    with pytest.raises(ShardkitError, match="leave the layer"):
        shard_layer(tmp_path / "evil", tmp_path / "out")
    shard_layer(src, tmp_path / "sh")
    with pytest.raises(ShardkitError, match="sharded already"):
        shard_layer(tmp_path / "sh", tmp_path / "out2")
    mesh = tmp_path / "mesh"
    mesh.mkdir()
    (mesh / "info").write_text(json.dumps({"@type": "neuroglancer_legacy_mesh"}))
    with pytest.raises(ShardkitError, match="no sharded form"):
        shard_layer(mesh, tmp_path / "out3")
    with pytest.raises(ShardkitError):
        LayerStore(tmp_path).path("a/../../b")
    with pytest.raises(ShardkitError, match="for more scales"):
        shard_layer(src, tmp_path / "out5", spec=[])
    with pytest.raises(ShardkitError, match="no sharding spec given for scale 's0'"):
        shard_layer(src, tmp_path / "out6", spec={"s1": {}})
    with pytest.raises(ShardkitError, match="not JSON"):
        shard_layer(src, tmp_path / "out7", spec="{")
    info = json.loads((src / "info").read_text())
    info["data_type"] = "uint3"
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "info").write_text(json.dumps(info))
    with pytest.raises(ShardkitError, match="scale s0") as exc:
        shard_layer(tmp_path / "odd", tmp_path / "out8")
    assert exc.value.field == "/scales/0"
    skel = tmp_path / "skel"
    skel.mkdir()
    (skel / "info").write_text(json.dumps({"@type": "neuroglancer_skeletons"}))
    (skel / str(2**64)).write_bytes(b"")
    with pytest.raises(ShardkitError, match="not a uint64"):
        shard_layer(skel, tmp_path / "out9")
    (skel / str(2**64)).unlink()
    (skel / "5.gz").write_bytes(b"not gzip")
    with pytest.raises(ShardkitError, match="gzip"):
        shard_layer(skel, tmp_path / "out10")
    assert not any((tmp_path / f"out{i}").exists() for i in range(5, 11))


def test_bad_info_json_is_a_shardkit_error(tmp_path, capsys):
    from shardkit.errors import LimitExceededError

    src = tmp_path / "src"
    src.mkdir()
    for text in ("[" * 100000 + "]" * 100000, "[" * 100 + "]" * 100):
        (src / "info").write_text(text)
        with pytest.raises(SpecError, match="nested") as exc:
            shard_layer(src, tmp_path / "out")
        assert exc.value.field == "/"
        assert main(["ng", "shard", str(src), str(tmp_path / "out")]) == 2
        assert "nested" in capsys.readouterr().err
    (src / "info").write_bytes(b" " * (1 << 24) + b"{}")
    with pytest.raises(LimitExceededError, match="cap of an info file"):
        shard_layer(src, tmp_path / "out")
    (src / "info").unlink()
    (src / "info.gz").write_bytes(gzip.compress(b" " * (1 << 24) + b"{}"))
    with pytest.raises(LimitExceededError):
        shard_layer(src, tmp_path / "out")
    (src / "info.gz").unlink()
    (src / "info").write_text(json.dumps({"@type": ["x"]}))
    with pytest.raises(ShardkitError, match="@type"):
        shard_layer(src, tmp_path / "out")
    spec_file = tmp_path / "spec.json"
    spec_file.write_text("[" * 100000)
    _write_unsharded(tmp_path / "img", _volume())
    for given in (str(spec_file), "[" * 100000):
        assert main(["ng", "shard", str(tmp_path / "img"), str(tmp_path / "out"),
                     "--spec", given]) == 2
        err = capsys.readouterr().err
        assert "--spec" in err and "nested" in err and "internal error" not in err
    with pytest.raises(ShardkitError, match="nested"):
        shard_layer(tmp_path / "img", tmp_path / "out", spec="[" * 100000)
    assert not (tmp_path / "out").exists()


def test_dask_missing_is_a_clear_error(tmp_path, monkeypatch):
    import sys

    for name in ("dask", "dask.distributed", "distributed"):  # as if not installed
        monkeypatch.setitem(sys.modules, name, None)
    src = tmp_path / "src"
    _write_unsharded(src, _volume())
    with pytest.raises(ShardkitError, match=r"dask\.distributed"):
        shard_layer(src, tmp_path / "out", dask="tcp://127.0.0.1:1")
    assert not (tmp_path / "out" / "info").exists()


def test_dask_cluster(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    vol = _volume()
    files = _write_unsharded(tmp_path / "src", vol)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        report = shard_layer(tmp_path / "src", tmp_path / "dst", dask=cluster.scheduler_address,
                             shard_bytes=32 * 32 * 8 * 2 * 8)
    assert report.chunks == len(files)
    ds = open_dataset(tmp_path / "dst")
    assert ds.verify() == []
    ds.close()


def test_cli_spec_shard_unshard(tmp_path, capsys):
    vol = _volume()
    src = tmp_path / "src"
    files = _write_unsharded(src, vol)
    assert main(["ng", "spec", "--size", "40960", "40960", "990", "--chunk", "128", "128", "20",
                 "--shard-bytes", "3.5G", "--minishard-index-bytes", "40000",
                 "--explain"]) == 0
    out = capsys.readouterr().out
    assert "9+9+6 = 24 bits" in out
    last = json.loads(out.strip().splitlines()[-1])
    assert (last["preshift_bits"], last["minishard_bits"], last["shard_bits"]) == (10, 3, 11)
    assert main(["ng", "spec", "--keys", "10000000", "--json"]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert (spec["shard_bits"], spec["minishard_bits"], spec["hash"]) == \
        (4, 9, "murmurhash3_x86_128")
    assert main(["ng", "spec", str(src), "--json", "--explain"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["s0"]["estimates"]["chunks"] == len(files)
    assert main(["ng", "shard", str(src), str(tmp_path / "sh"), "--json", "--jobs", "1",
                 "--shard-bytes", "64K"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["chunks"] == len(files) and report["specs"]["s0"]["hash"] == "identity"
    assert main(["verify", str(tmp_path / "sh")]) == 0
    capsys.readouterr()
    assert main(["ng", "unshard", str(tmp_path / "sh"), str(tmp_path / "back"),
                 "--progress"]) == 0
    captured = capsys.readouterr()
    assert f"{len(files)} chunks" in captured.out
    assert "ng unshard: 100%|" in captured.err and " tasks/s]" in captured.err
    assert _files(tmp_path / "back" / "s0") == files
    assert main(["ng", "shard", str(tmp_path / "nothing"), str(tmp_path / "x")]) == 2
    assert "info: not found" in capsys.readouterr().err
    assert main(["ng", "shard", str(src), str(tmp_path / "y"), "--spec", "{nope"]) == 2
    assert "--spec" in capsys.readouterr().err
    assert main(["ng", "spec"]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["ng", "spec", "--shard-bytes", "-3"])
    assert exc.value.code == 2


def test_http_source_one_request_per_stored_chunk(tmp_path, range_server):
    """An unsharded layer served over HTTP: every chunk file is fetched once, and a missing
    chunk costs its two probes (NAME, then NAME.gz); nothing else is requested."""
    vol = _volume()
    files = _write_unsharded(tmp_path / "src", vol, skip={(0, 0, 0), (2, 1, 1)})
    srv = range_server(tmp_path / "src")
    report = shard_layer(srv.url(""), tmp_path / "dst", shard_bytes=32 * 32 * 8 * 2 * 8)
    assert report.chunks == len(files)
    gets = [r for r in srv.requests if r.method == "GET"]
    chunk_gets = [r for r in gets if r.path.startswith("/s0/")]
    assert len(chunk_gets) == len(files) + 2 * 2
    assert sum(r.status == 404 for r in chunk_gets) == 4
    assert len(gets) == len(chunk_gets) + 1  # and the info
    assert srv.bytes_sent == sum(len(v) for v in files.values()) + len(
        (tmp_path / "src" / "info").read_bytes())
    ds = open_dataset(tmp_path / "dst")
    assert ds.verify() == [] and len(ds.scales["s0"]) == len(files)
    ds.close()


def test_shard_index_too_large_to_write_is_refused_before_allocating(tmp_path):
    from shardkit.writers.neuroglancer import (
        MAX_SHARD_INDEX_BYTES,
        build_shards,
        write_sharded_dataset,
    )

    def spec(bits):
        return ShardingSpec("identity", 0, bits, 0, "raw", "raw")

    assert spec(26).shard_index_size == MAX_SHARD_INDEX_BYTES
    for bits in (27, 40, 64):
        with pytest.raises(SpecError, match="shard index") as exc:
            build_shard({1: b"x"}, spec(bits))
        assert exc.value.field == "/sharding/minishard_bits"
        with pytest.raises(SpecError, match="shard index"):
            shard_pieces({1: b"x"}, spec(bits))
        with pytest.raises(SpecError, match="shard index"):
            build_shards({}, spec(bits))
        with pytest.raises(SpecError, match="shard index"):
            write_sharded_dataset(tmp_path / f"kv{bits}", {1: b"x"}, spec(bits))
        assert not (tmp_path / f"kv{bits}").exists()
    src = tmp_path / "src"
    _write_unsharded(src, _volume())
    big = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity", "preshift_bits": 0,
           "minishard_bits": 60, "shard_bits": 0}
    with pytest.raises(SpecError, match="shard index"):
        shard_layer(src, tmp_path / "out", spec=big)
    assert main(["ng", "shard", str(src), str(tmp_path / "out"), "--spec",
                 json.dumps(big)]) == 2
    assert not (tmp_path / "out").exists()


def test_shard_help_names_every_layer_kind_converted(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["ng", "shard", "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")  # argparse wraps
    assert "image scales of any encoding" in text and "skeletons" in text
    assert "multi-resolution meshes" in text


def test_one_shard_builder_and_atomic_local_writes(tmp_path, monkeypatch):
    import shardkit.writers._atomic as atomic
    import shardkit.writers.neuroglancer as writer

    assert shard_pieces is writer.shard_pieces  # ng.convert uses the writer's builder
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    store = LayerStore(tmp_path / "layer")
    store.write("s0/0.shard", [b"ab", b"cd"])
    assert (tmp_path / "layer" / "s0" / "0.shard").read_bytes() == b"abcd" and synced

    def failing():
        yield b"new"
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        store.write("s0/0.shard", failing())
    assert (tmp_path / "layer" / "s0" / "0.shard").read_bytes() == b"abcd"
    assert os.listdir(tmp_path / "layer" / "s0") == ["0.shard"]


@pytest.mark.parametrize("key", ["./s0", "s0/", "s0"])
def test_scale_keys_are_read_as_the_reader_reads_them(tmp_path, key):
    src = tmp_path / "src"
    files = _write_unsharded(src, _volume())
    info = json.loads((src / "info").read_text())
    info["scales"][0]["key"] = key
    (src / "info").write_text(json.dumps(info))
    report = shard_layer(src, tmp_path / "sh", scales=[key])
    assert list(report.specs) == ["s0"] and report.chunks == len(files)
    ds = open_dataset(tmp_path / "sh")
    assert len(ds.scales["s0"]) == len(files) and ds.verify() == []
    ds.close()
    assert json.loads((tmp_path / "sh" / "info").read_text())["scales"][0]["key"] == key
    unshard_layer(tmp_path / "sh", tmp_path / "back")
    assert _files(tmp_path / "back" / "s0") == files


def test_converter_refuses_what_the_reader_refuses(tmp_path):
    from shardkit.errors import LimitExceededError

    src = tmp_path / "src"
    _write_unsharded(src, _volume())
    base = json.loads((src / "info").read_text())
    for change, field in [
            (lambda s: s.update(size=[100.0, 90, 20]), "/scales/0/size"),
            (lambda s: s.update(size=["100", 90, 20]), "/scales/0/size"),
            (lambda s: s.update(chunk_sizes=[[32, True, 8]]), "/scales/0/chunk_sizes/0"),
            (lambda s: s.update(voxel_offset=[0, "x", 0]), "/scales/0/voxel_offset"),
            (lambda s: s.update(size=[2**40, 16, 8]), "/scales/0/size"),
            (lambda s: s.update(size=[2**32, 2**32, 2**32], chunk_sizes=[[1, 1, 1]]),
             "/scales/0/size"),
            (lambda s: s.update(key="/abs"), "/scales/0/key"),
            (lambda s: s.update(key="s0\x00"), "/scales/0/key")]:
        info = json.loads(json.dumps(base))
        change(info["scales"][0])
        (src / "info").write_text(json.dumps(info))
        with pytest.raises(SpecError) as exc:
            shard_layer(src, tmp_path / "out")
        assert exc.value.field == field
        sharded = json.loads(json.dumps(info))
        sharded["scales"][0]["sharding"] = {"@type": "neuroglancer_uint64_sharded_v1",
                                            "hash": "identity", "preshift_bits": 0,
                                            "minishard_bits": 0, "shard_bits": 0}
        (src / "info").write_text(json.dumps(sharded))
        with pytest.raises(SpecError) as exc:
            open_dataset(src)
        assert exc.value.field == field
    # a grid of 2**40 chunks: refused before its chunk ids are listed
    info = json.loads(json.dumps(base))
    info["scales"][0].update(size=[2**14, 2**13, 2**13], chunk_sizes=[[1, 1, 1]])
    (src / "info").write_text(json.dumps(info))
    for hash_ in ("identity", "murmurhash3_x86_128"):
        with pytest.raises(LimitExceededError, match="at most 16777216") as exc:
            shard_layer(src, tmp_path / "out", spec={
                "@type": "neuroglancer_uint64_sharded_v1", "hash": hash_,
                "preshift_bits": 0, "minishard_bits": 0, "shard_bits": 0})
        assert exc.value.field == "/scales/0/sharding"
    with pytest.raises(LimitExceededError):
        shard_layer(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()
