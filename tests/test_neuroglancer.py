"""Neuroglancer sharded datasets: the real corpus (tensorstore and cloud-volume), spec, hashing,
Morton codes, the writer, the Kaitai parser and the CLI."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from shardkit.generated.neuroglancer_uint64_sharded import NeuroglancerUint64Sharded

import shardkit
from shardkit.cli import main
from shardkit.errors import EntryNotFoundError
from shardkit.formats.neuroglancer import (
    NgImageDataset,
    NgKeyValueDataset,
    NgShard,
    ShardingSpec,
    SpecError,
    compressed_morton_code,
    decode_minishard_index,
    morton_decode,
)
from shardkit.hashing.murmur import hash_uint64, hash_uint64_array, murmurhash3_x86_128_low64
from shardkit.sources import CountingSource, FileSource
from shardkit.writers.neuroglancer import build_shard, write_image_volume, write_sharded_dataset

DATA = Path(__file__).parent / "data" / "neuroglancer"
MANIFEST = json.loads((DATA / "manifest.json").read_text())["datasets"]
DATASETS = sorted(MANIFEST)


def spec_dict(**kw: Any) -> dict[str, Any]:
    base = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity", "preshift_bits": 0,
            "minishard_bits": 2, "shard_bits": 1, "minishard_index_encoding": "raw",
            "data_encoding": "raw"}
    return {**base, **kw}


# -- the corpus ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DATASETS)
def test_corpus_every_key_and_value(name: str) -> None:
    meta = MANIFEST[name]
    with shardkit.open(DATA / name) as ds:
        expected = {int(k["decimal"]): k for k in meta["keys"].values()}
        assert len(expected) == meta["key_count"]
        assert sorted(ds.keys()) == sorted(expected)
        assert ds.spec.to_dict() == {**meta["sharding"]}
        agg = hashlib.sha256()
        for key in sorted(expected):
            value = ds[key]
            entry = expected[key]
            assert key in ds
            assert len(value) == entry["length"]
            assert hashlib.sha256(value).hexdigest() == entry["sha256"], key
            loc = ds.spec.locate(key)
            assert ds.spec.shard_name(loc.shard) == entry["shard_file"]
            assert loc.minishard == entry["minishard"]
            agg.update(key.to_bytes(8, "big") + len(value).to_bytes(8, "big") + value)
        assert agg.hexdigest() == meta["aggregate_sha256"]
        # stored lengths (gzip data included) come from the minishard index
        kv = ds.kv
        for key, entry in expected.items():
            ref = kv.shard(ds.spec.locate(key).shard).locate(key)
            assert ref is not None and ref.size == entry["stored_length"]
        assert ds.verify() == []


@pytest.mark.parametrize("name", DATASETS)
def test_corpus_get_many_and_absent_keys(name: str) -> None:
    meta = MANIFEST[name]
    keys = sorted(int(k["decimal"]) for k in meta["keys"].values())
    with shardkit.open(DATA / name) as ds:
        values = ds.get_many(keys)
        assert [hashlib.sha256(v).hexdigest() for v in values] == [
            meta["keys"][f"{k:016x}"]["sha256"] for k in keys]
        present = set(keys)
        absent = next(k for k in range(10**6, 10**6 + 1000) if k not in present)
        assert absent not in ds
        with pytest.raises(EntryNotFoundError):
            ds[absent]
        with pytest.raises(KeyError):
            ds[absent]
        assert ds.get(absent, b"x") == b"x"
        assert "12" not in ds and -1 not in ds and 2**64 not in ds


def test_corpus_kinds() -> None:
    assert isinstance(shardkit.open(DATA / "cv_identity_raw"), NgKeyValueDataset)
    img = shardkit.open(DATA / "ts_image_identity_gzipindex")
    assert isinstance(img, NgImageDataset)
    assert list(img.scales) == ["8_8_40"]
    scale = img.scales["8_8_40"]
    assert scale.spec.minishard_index_encoding == "gzip"
    assert scale.spec.preshift_bits == 3
    assert scale.grid_shape == (7, 6, 3)


def test_image_chunks_match_manifest_and_positions() -> None:
    meta = MANIFEST["ts_image_identity_gzipindex"]
    ds = shardkit.open(DATA / "ts_image_identity_gzipindex")
    scale = ds.scales["8_8_40"]
    for entry in meta["keys"].values():
        pos = tuple(entry["chunk_grid"])
        code = int(entry["decimal"])
        assert scale.morton_code(pos) == code
        assert scale.position(code) == pos
        arr = ds.read_chunk("8_8_40", pos)
        (x0, y0, z0), (x1, y1, z1) = entry["voxel_box"]
        assert arr.shape == (1, z1 - z0, y1 - y0, x1 - x0)
        assert arr.dtype == np.uint8
        assert hashlib.sha256(arr.tobytes()).hexdigest() == entry["sha256"]
        xyzc = ds.read_chunk(0, pos, order="xyzc")
        assert xyzc.shape == (x1 - x0, y1 - y0, z1 - z0, 1)
        assert np.array_equal(xyzc, arr.transpose(3, 2, 1, 0))
        assert hashlib.sha256(scale[code]).hexdigest() == entry["sha256"]
    with pytest.raises(EntryNotFoundError):
        ds.read_chunk("8_8_40", (7, 0, 0))
    with pytest.raises(EntryNotFoundError):
        ds.read_chunk("nope", (0, 0, 0))


def test_bare_shard_with_spec() -> None:
    meta = MANIFEST["cv_identity_raw"]
    spec = meta["sharding"]
    with shardkit.open(DATA / "cv_identity_raw" / "2.shard", spec=spec) as shard:
        assert isinstance(shard, NgShard)
        assert shard.shard_number == 2
        expect = {int(k["decimal"]): k["sha256"] for k in meta["keys"].values()
                  if k["shard_file"] == "2.shard"}
        assert sorted(shard.keys()) == sorted(expect)
        for key, value in shard.items():
            assert hashlib.sha256(value).hexdigest() == expect[key]
        other = next(int(k["decimal"]) for k in meta["keys"].values()
                     if k["shard_file"] != "2.shard")
        assert other not in shard
        assert shard.verify() == []
        sections = shard.sections()
        assert sections[0].name == "/shard_index" and sections[0].end == 128
        assert sum(s.size for s in sections) == shard.source.size  # cv leaves no gaps
        assert shard.summary()["chunk_count"] == len(expect)


def test_cold_lookup_costs_three_reads() -> None:
    meta = MANIFEST["ts_kv_identity_preshift_gzipdata"]
    spec = ShardingSpec.from_dict(meta["sharding"])
    entry = next(k for k in meta["keys"].values() if k["shard_file"] == "3.shard")
    key = int(entry["decimal"])
    src = CountingSource(FileSource(DATA / "ts_kv_identity_preshift_gzipdata" / "3.shard"))
    shard = NgShard(src, spec)
    assert src.stats.reads == 0
    assert hashlib.sha256(shard[key]).hexdigest() == entry["sha256"]
    assert src.stats.reads == 3
    m = spec.locate(key).minishard
    assert src.stats.ranges[0] == (16 * m, 16 * m + 16)
    shard[key]  # the minishard index is cached: only the data is read again
    assert src.stats.reads == 4


def test_numpy_decoder_equals_kaitai_parser() -> None:
    for name in DATASETS:
        for path in sorted((DATA / MANIFEST[name]["shard_dir"]).glob("*.shard")):
            spec = ShardingSpec.from_dict(MANIFEST[name]["sharding"])
            shard = NgShard(FileSource(path), spec)
            ks_index = shard.kaitai_shard_index()
            entries = shard.shard_index()
            assert [(e.ofs_minishard_index, e.ofs_minishard_index_end)
                    for e in ks_index.entries] == [tuple(r) for r in entries.tolist()]
            for m in range(spec.num_minishards):
                if entries[m, 0] == entries[m, 1]:
                    continue
                ks = shard.kaitai_minishard_index(m)
                index = shard.minishard(m)
                assert np.cumsum(np.array(ks.chunk_id_deltas, np.uint64)).tolist() == \
                    index.ids.tolist()
                assert ks.len_data == (index.ends - index.starts).tolist()
            # the Web IDE root infers minishard_bits from the file alone
            root = NeuroglancerUint64Sharded.from_file(str(path))
            assert root.minishard_bits == spec.minishard_bits
            if spec.minishard_index_encoding == "raw":
                got = [c.data for ms in root.minishards for c in (ms.chunks or [])]
                if spec.data_encoding == "gzip":
                    got = [gzip.decompress(d) for d in got]
                assert got == [v for _, v in shard.items()]
            shard.close()


# -- spec, hashing, Morton codes --------------------------------------------------------------


def test_cloud_volume_pinned_example() -> None:
    spec = ShardingSpec.from_dict(spec_dict(hash="murmurhash3_x86_128", minishard_bits=11,
                                            preshift_bits=6, shard_bits=7,
                                            minishard_index_encoding="gzip",
                                            data_encoding="gzip"))
    loc = spec.locate(1822975381)
    assert spec.shard_name(loc.shard) == "42.shard"
    assert loc.minishard == 18
    ident = ShardingSpec.from_dict(spec_dict(preshift_bits=2, minishard_bits=3, shard_bits=3))
    loc = ident.locate(0b10101010)
    assert (loc.shard, loc.minishard) == (0b101, 0b010)
    image = ShardingSpec.from_dict(spec_dict(minishard_bits=6, preshift_bits=9, shard_bits=16))
    grid = np.ceil(np.array([248832, 134144, 7063]) / [128, 128, 16]).astype(int)
    point = np.ceil(np.array([144689, 52487, 2829]) / [128, 128, 16]).astype(int)
    code = compressed_morton_code(point.tolist(), grid.tolist())
    assert image.shard_name(image.locate(code).shard) == "458d.shard"


def test_murmur_known_answers() -> None:
    # MurmurHash3_x86_128, seed 0: low 64 bits (h1 | h2 << 32) of the reference vectors
    assert murmurhash3_x86_128_low64(b"") == 0
    assert murmurhash3_x86_128_low64(b"abc") == 11722877137761191633
    assert murmurhash3_x86_128_low64((5).to_bytes(8, "little")) == hash_uint64(5)
    values = [0, 1, 2**63, 2**64 - 1, 1822975381 >> 6]
    assert hash_uint64_array(values).tolist() == [hash_uint64(v) for v in values]
    assert hash_uint64(1822975381 >> 6) & 0x7FF == 18


def test_morton_codes() -> None:
    for grid, pos, code in [((3, 3, 3), (0, 0, 0), 0), ((3, 3, 3), (1, 0, 0), 0b1),
                            ((3, 3, 3), (2, 0, 0), 0b1000), ((3, 3, 3), (2, 2, 0), 0b11000),
                            ((3, 3, 3), (2, 2, 1), 0b11100), ((2, 3, 1), (1, 2, 0), 0b101),
                            ((4, 4, 1), (3, 3, 0), 0b1111), ((8, 8, 2), (5, 5, 0), 0b1100011)]:
        assert compressed_morton_code(pos, grid) == code
        assert morton_decode(code, grid) == pos
    with pytest.raises(ValueError):
        compressed_morton_code((3, 0, 0), (3, 3, 3))
    with pytest.raises(ValueError):
        morton_decode(1 << 12, (3, 3, 3))


def test_shard_names() -> None:
    assert ShardingSpec.from_dict(spec_dict(shard_bits=0)).shard_name(0) == "0.shard"
    s5 = ShardingSpec.from_dict(spec_dict(shard_bits=5))
    assert s5.shard_name(0xB) == "0b.shard"
    assert s5.parse_shard_name("1f.shard") == 31
    assert s5.parse_shard_name("f.shard") is None
    assert s5.parse_shard_name("0B.shard") is None
    assert ShardingSpec.from_dict(spec_dict(shard_bits=3)).shard_name(7) == "7.shard"


@pytest.mark.parametrize(("change", "field"), [
    ({"@type": "neuroglancer_uint64_sharded_v2"}, "/sharding/@type"),
    ({"hash": "murmurhash3_X86_128"}, "/sharding/hash"),
    ({"preshift_bits": 65}, "/sharding/preshift_bits"),
    ({"preshift_bits": -1}, "/sharding/preshift_bits"),
    ({"preshift_bits": 1.0}, "/sharding/preshift_bits"),
    ({"minishard_bits": True}, "/sharding/minishard_bits"),
    ({"minishard_bits": 40, "shard_bits": 30}, "/sharding/shard_bits"),
    ({"minishard_index_encoding": "zstd"}, "/sharding/minishard_index_encoding"),
    ({"data_encoding": "GZIP"}, "/sharding/data_encoding"),
    ({"extra": 1}, "/sharding/extra"),
])
def test_spec_validation(change: dict[str, Any], field: str) -> None:
    with pytest.raises(SpecError) as info:
        ShardingSpec.from_dict(spec_dict(**change))
    assert info.value.field == field
    assert field.rsplit("/", 1)[1] in str(info.value)


def test_spec_missing_field_and_limits() -> None:
    bad = spec_dict()
    del bad["shard_bits"]
    with pytest.raises(SpecError, match="shard_bits is missing"):
        ShardingSpec.from_dict(bad)
    ShardingSpec.from_dict(spec_dict(minishard_bits=64, shard_bits=0))
    ShardingSpec.from_dict(spec_dict(minishard_bits=0, shard_bits=64, preshift_bits=64))


# -- the writer -----------------------------------------------------------------------------


def _random_items(rng: np.random.Generator, n: int) -> dict[int, bytes]:
    keys = set(rng.integers(0, 2**64, n, dtype=np.uint64).tolist()) | {0, 2**64 - 1}
    return {k: rng.bytes(int(rng.integers(0, 400))) for k in keys}


@pytest.mark.parametrize("hash_", ["identity", "murmurhash3_x86_128"])
@pytest.mark.parametrize("enc", ["raw", "gzip"])
def test_writer_roundtrip(tmp_path: Path, hash_: str, enc: str) -> None:
    rng = np.random.default_rng(len(hash_) + len(enc))
    items = _random_items(rng, 300)
    spec = spec_dict(hash=hash_, preshift_bits=3, minishard_bits=3, shard_bits=3,
                     minishard_index_encoding=enc, data_encoding=enc)
    names = write_sharded_dataset(tmp_path / "ds", items, spec)
    assert names[0] == "info" and len(names) > 2
    with shardkit.open(tmp_path / "ds") as ds:
        assert sorted(ds.keys()) == sorted(items)
        assert all(ds[k] == v for k, v in items.items())
        assert ds.verify() == []
        assert ds.summary()["chunk_count"] == len(items)


def test_writer_builds_deterministic_parsable_shard() -> None:
    spec = ShardingSpec.from_dict(spec_dict(shard_bits=0, minishard_bits=1))
    items = {1: b"one", 2: b"", 3: b"three"}
    data = build_shard(items, spec)
    assert data == build_shard(dict(reversed(items.items())), spec)
    root = NeuroglancerUint64Sharded.from_bytes(data)
    assert root.minishard_bits == 1
    ids = [int(d) for m in root.minishards for d in (m.index.chunk_id_deltas if m.index else [])]
    assert ids == [2, 1, 2]  # minishard 0: id 2; minishard 1: id 1, then 3 (delta 2)
    got = [c.data for m in root.minishards for c in (m.chunks or [])]
    assert got == [items[2], items[1], items[3]]
    with pytest.raises(ValueError):
        build_shard({0: b"", 1: b""}, spec_dict(minishard_bits=0, shard_bits=1))


def test_writer_image_volume_with_clipped_edges(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    vol = rng.integers(0, 2**16, (37, 20, 11, 2), dtype=np.uint16)
    spec = spec_dict(hash="murmurhash3_x86_128", preshift_bits=2, minishard_bits=2,
                     shard_bits=2, minishard_index_encoding="gzip")
    info = write_image_volume(tmp_path / "img", vol, spec, chunk_size=(16, 8, 4),
                              resolution=(4, 4, 40))
    assert info["scales"][0]["key"] == "4_4_40"
    ds = shardkit.open(tmp_path / "img")
    scale = ds.scales["4_4_40"]
    assert scale.grid_shape == (3, 3, 3)
    for gx in range(3):
        for gy in range(3):
            for gz in range(3):
                got = ds.read_chunk("4_4_40", (gx, gy, gz), order="xyzc")
                want = vol[gx * 16 : gx * 16 + 16, gy * 8 : gy * 8 + 8, gz * 4 : gz * 4 + 4]
                assert np.array_equal(got, want)
    assert ds.verify() == []


# -- CLI ----------------------------------------------------------------------------------------


def test_cli_ls_get_info_map_verify(tmp_path: Path, capsysbinary: Any) -> None:
    name = "ts_kv_identity_preshift_gzipdata"
    meta = MANIFEST[name]
    path = str(DATA / name)
    assert main(["ls", path]) == 0
    out = capsysbinary.readouterr().out.decode().split()
    assert sorted(map(int, out)) == sorted(int(k["decimal"]) for k in meta["keys"].values())
    key = next(iter(meta["keys"].values()))
    assert main(["get", path, key["decimal"]]) == 0
    assert hashlib.sha256(capsysbinary.readouterr().out).hexdigest() == key["sha256"]
    assert main(["get", path, "123456789012"]) == 1
    capsysbinary.readouterr()
    assert main(["info", "--json", path]) == 0
    info = json.loads(capsysbinary.readouterr().out)
    assert info["sharding"] == meta["sharding"]
    assert info["num_shards"] == 8 and info["chunk_count"] == 250
    assert main(["verify", path]) == 0
    capsysbinary.readouterr()
    assert main(["map", "--json", path]) == 0
    sections = json.loads(capsysbinary.readouterr().out)
    assert {s["name"].split("/")[0] for s in sections} == {f"{i}.shard" for i in range(8)}
    img = str(DATA / "ts_image_identity_gzipindex")
    assert main(["info", "--json", img]) == 0
    info = json.loads(capsysbinary.readouterr().out)
    assert info["scales"][0]["key"] == "8_8_40" and info["chunk_count"] == 126
    shard = str(DATA / "cv_identity_raw" / "0.shard")
    assert main(["ls", "--spec", json.dumps(meta["sharding"] | {"minishard_bits": 3,
                 "shard_bits": 2, "data_encoding": "raw"}), shard]) == 0
    assert len(capsysbinary.readouterr().out.split()) == sum(
        1 for k in MANIFEST["cv_identity_raw"]["keys"].values() if k["shard_file"] == "0.shard")


def test_cli_verify_reports_corruption(tmp_path: Path, capsys: Any) -> None:
    shutil.copytree(DATA / "cv_identity_raw", tmp_path / "ds")
    # swap two shards: every chunk of both is now in the wrong shard
    a, b = tmp_path / "ds" / "1.shard", tmp_path / "ds" / "2.shard"
    da, db = a.read_bytes(), b.read_bytes()
    a.write_bytes(db)
    b.write_bytes(da)
    assert main(["verify", str(tmp_path / "ds")]) == 1
    out = capsys.readouterr().out
    assert "chunk_hash" in out and "hashes to shard 2.shard, is stored in 1.shard" in out


def test_decode_minishard_index_directly() -> None:
    raw = np.array([[5, 2, 10], [0, 4, 1], [3, 0, 2]], dtype="<u8").tobytes()
    index = decode_minishard_index(raw, 100)
    assert index.ids.tolist() == [5, 7, 17]
    assert index.starts.tolist() == [0, 7, 8]
    assert index.ends.tolist() == [3, 7, 10]
    assert index.lookup[7] == (107, 107)
    assert gzip.decompress(gzip.compress(raw)) == raw


def test_bare_shard_uses_the_info_beside_it(capsys: Any) -> None:
    """``shardkit info DATASET/0.shard`` reads the spec from the dataset's info (and says so)."""
    kv = DATA / "cv_identity_raw"
    assert main(["info", "--json", str(kv / "1.shard")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sharding"] == MANIFEST["cv_identity_raw"]["sharding"]
    assert out["spec_from"] == str(kv / "info") and out["shard_number"] == 1
    assert out["chunk_count"] == sum(1 for k in MANIFEST["cv_identity_raw"]["keys"].values()
                                     if k["shard_file"] == "1.shard")
    # an image scale's shard: the info is in the folder above, the scale key is the folder
    img = DATA / "ts_image_identity_gzipindex"
    assert main(["info", "--json", str(img / "8_8_40" / "2.shard")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["spec_from"] == str(img / "info")
    assert out["sharding"] == MANIFEST["ts_image_identity_gzipindex"]["sharding"]
    assert main(["verify", str(img / "8_8_40" / "2.shard")]) == 0
    capsys.readouterr()
    # the text output says where the spec came from
    assert main(["info", str(kv / "0.shard")]) == 0
    assert f"spec_from: {kv / 'info'}" in capsys.readouterr().out


def test_bare_shard_without_a_usable_info_is_unknown(tmp_path: Path, capsys: Any) -> None:
    shutil.copy(DATA / "cv_identity_raw" / "0.shard", tmp_path / "0.shard")
    assert main(["info", str(tmp_path / "0.shard")]) == 2
    assert "not a shard shardkit knows" in capsys.readouterr().err
    (tmp_path / "info").write_text(json.dumps({"@type": "neuroglancer_skeletons"}))
    assert main(["info", str(tmp_path / "0.shard")]) == 2  # no sharding in it
    capsys.readouterr()
    (tmp_path / "info").write_text("{not json")
    assert main(["info", str(tmp_path / "0.shard")]) == 2
    capsys.readouterr()


def test_bare_remote_shard_uses_the_info_beside_it(range_server: Any) -> None:
    srv = range_server(DATA)
    with shardkit.open(srv.url("cv_identity_raw/2.shard")) as shard:
        assert shard.spec_from == srv.url("cv_identity_raw/info")
        meta = MANIFEST["cv_identity_raw"]
        key = next(k for k in meta["keys"].values() if k["shard_file"] == "2.shard")
        assert hashlib.sha256(shard[int(key["decimal"])]).hexdigest() == key["sha256"]
